"""gRPC front end (issue 7), driven by a client that is not ours: python grpcio.

- every RPC of strike.v1.Strike, and grpc.health.v1.Health/Check;
- each status mapping, with the engine's detail text as the message;
- scans larger than one message, bounded batches, cancellation, deadlines;
- idempotent replays and producer duplicates;
- parity with HTTP: the same operations on two tables give the same scans,
  plans (same shape) and DV bytes, and the same error details;
- the message limit, SIGTERM with a stream in flight, and a sanitizer-clean exit.
"""
import datetime
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request
import zlib

import grpc

import harness as h
import grpc_client as gc
import http_roaring as hr
from grpc_client import pb
from s3_front import S3Front

S = None   # the shared striked
C = None   # its gRPC client


def setUpModule():
    global S, C
    S = h.Striked(catalog=h.create_db("grpc_main"), env={"STRIKE_LOG_LEVEL": "debug"})
    C = gc.Client(S.grpc_port)


def tearDownModule():
    C.close()
    took = S.close_clean()
    if took > 7:  # nothing was in flight: no grace period should be needed
        raise AssertionError(f"SIGTERM took {took:.1f} s with no call in flight")


_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}_{_n[0]}"


ORDERS = [("id", "long", True), ("user_id", "long", True), ("amount", "double"),
          ("status", "string"), ("at", "timestamp")]


def rpc_error(test, code, fn, *a, **kw):
    """Call fn, expect a grpc.RpcError with `code`; return its details."""
    with test.assertRaises(grpc.RpcError) as cm:
        r = fn(*a, **kw)
        if hasattr(r, "__iter__") and not isinstance(r, (bytes, str)):
            list(r)
    e = cm.exception
    test.assertEqual(e.code(), code, e.details())
    return e.details()


def rows_of(table, n, start=0):
    return [gc.change("upsert", row={"id": i, "user_id": i % 7, "amount": i * 0.5,
                                     "status": f"s{i}", "at": gc.value(1_700_000_000_000_000 + i, ts=True)})
            for i in range(start, start + n)]


def server_log(s, method, status, timeout=10):
    """Wait for the debug line of a finished RPC; return it or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rec in s.log_records():
            if rec.get("msg") == "rpc" and rec.get("method") == method and rec.get("status") == status:
                return rec
        time.sleep(0.05)
    return None


class Tables(unittest.TestCase):
    def test_create_get_list_drop(self):
        name = fresh("tables")
        t = C.create(name, ORDERS + [("ok", "boolean"), ("n", "int"), ("v", "long")],
                     primary_key=["id"], version_column="v")
        self.assertEqual(t.name, name)
        self.assertEqual([(c.name, c.type, c.required) for c in t.columns],
                         [("id", "long", True), ("user_id", "long", True), ("amount", "double", False),
                          ("status", "string", False), ("at", "timestamp", False), ("ok", "boolean", False),
                          ("n", "int", False), ("v", "long", False)])
        self.assertEqual(list(t.primary_key), ["id"])
        self.assertEqual(t.version_column, "v")
        self.assertEqual(t.seq, 0)
        self.assertEqual(len(t.uuid), 36)
        self.assertTrue(t.created_at.endswith("Z"))
        self.assertFalse(t.HasField("stats"))

        g = C.call("GetTable", name=name)
        self.assertEqual(g.uuid, t.uuid)
        self.assertTrue(g.HasField("stats"))
        self.assertEqual((g.stats.data_files, g.stats.rows, g.stats.deleted_rows, g.stats.live_rows,
                          g.stats.dv_files), (0, 0, 0, 0, 0))
        self.assertIn(name, [x.name for x in C.call("ListTables").tables])

        d = rpc_error(self, grpc.StatusCode.ALREADY_EXISTS, C.create, name, ORDERS, ["id"])
        self.assertEqual(d, f'table "{name}" already exists')

        self.assertEqual(C.call("DropTable", name=name), pb.DropTableResponse())
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "GetTable", name=name)
        self.assertEqual(d, f'no table named "{name}"')
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "DropTable", name=name)
        self.assertNotIn(name, [x.name for x in C.call("ListTables").tables])

    def test_create_invalid(self):
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.create, "1bad", ORDERS, ["id"])
        self.assertTrue(d.startswith('name: "1bad" is not a valid table name'), d)
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.create, fresh("bad"),
                      [("id", "long", True), ("x", "decimal")], ["id"])
        self.assertEqual(d, 'columns[1].type: unknown type "decimal" (use boolean, int, long, double, '
                            'string or timestamp)')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.create, fresh("bad"),
                      [("id", "long")], ["id"])
        self.assertEqual(d, 'primary_key: column "id" must be required ("required":true)')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.create, fresh("bad"),
                      [("id", "long", True), ("x", "long")], ["id"], version_column="nope")
        self.assertEqual(d, 'version_column: unknown column "nope"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.create, "", ORDERS, ["id"])
        self.assertEqual(d, "name: required")


class Changes(unittest.TestCase):
    def setUp(self):
        self.t = fresh("changes")
        C.create(self.t, ORDERS, ["id"])

    def scan(self, **kw):
        return C.scan(self.t, **kw)[2]

    def test_types_roundtrip(self):
        t = fresh("types")
        C.create(t, [("id", "long", True), ("b", "boolean"), ("i", "int"), ("l", "long"), ("d", "double"),
                     ("s", "string"), ("ts", "timestamp")], ["id"])
        C.apply(t, [
            gc.change("upsert", row={"id": 1, "b": True, "i": pb.Value(int_value=-5), "l": -(2 ** 63),
                                     "d": 0.1, "s": "héllo ✓", "ts": gc.value(1_700_000_000_123_456, ts=True)}),
            gc.change("upsert", row={"id": 2, "b": False, "i": 2 ** 31 - 1, "l": 2 ** 63 - 1, "d": -1e300,
                                     "s": "", "ts": 1_700_000_000_000_001}),           # a timestamp as long_value
            gc.change("upsert", row={"id": 3, "b": None, "i": None, "l": None, "d": None, "s": None,
                                     "ts": "2023-11-14T22:13:20.5Z"}),                 # a timestamp as RFC 3339
            gc.change("upsert", row={"id": 4}),                                       # missing columns: null
        ])
        it = C.scan_stream(table=t)
        batches = list(it)
        self.assertEqual(len(batches), 1)
        b = batches[0]
        self.assertEqual(list(b.columns), ["id", "b", "i", "l", "d", "s", "ts"])
        kinds = [[v.WhichOneof("kind") for v in r.values] for r in b.rows]
        self.assertEqual(kinds[0], ["long_value", "bool_value", "int_value", "long_value", "double_value",
                                    "string_value", "timestamp_value"])
        self.assertEqual(kinds[3], ["long_value"] + ["null_value"] * 6)
        rows = [tuple(gc.unvalue(v) for v in r.values) for r in b.rows]
        self.assertEqual(rows, [
            (1, True, -5, -(2 ** 63), 0.1, "héllo ✓", 1_700_000_000_123_456),
            (2, False, 2 ** 31 - 1, 2 ** 63 - 1, -1e300, "", 1_700_000_000_000_001),
            (3, None, None, None, None, None, 1_700_000_000_500_000),
            (4, None, None, None, None, None, None),
        ])

    def test_counts_and_debezium(self):
        r = C.apply(self.t, rows_of(self.t, 5))
        self.assertEqual((r.seq, r.inserted, r.updated, r.deleted, r.missing, r.stale, r.duplicate),
                         (1, 5, 0, 0, 0, 0, False))
        r = C.apply(self.t, [
            gc.change("upsert", row={"id": 1, "user_id": 9, "amount": 1.0}),  # update
            gc.change("delete", key={"id": 2}),
            gc.change("delete", key={"id": 99}),                               # missing
            gc.change("c", after={"id": 10, "user_id": 1}),
            gc.change("u", before={"id": 3, "user_id": 3}, after={"id": 30, "user_id": 3}),  # key change
            gc.change("d", before={"id": 4, "user_id": 4, "status": "x"}),
            gc.change("r", after={"id": 11, "user_id": 1}),
            gc.change("upsert", row={"id": 12, "user_id": 1}),
            gc.change("delete", key={"id": 12}),                               # inserted then deleted
        ])
        self.assertEqual((r.seq, r.inserted, r.updated, r.deleted, r.missing),
                         (2, 4, 1, 4, 1))
        self.assertEqual(sorted(x[0] for x in self.scan()), [0, 1, 10, 11, 30])
        r = C.apply(self.t, [])
        self.assertEqual((r.seq, r.inserted), (2, 0))

    def test_version_column(self):
        t = fresh("versions")
        C.create(t, [("id", "long", True), ("v", "timestamp"), ("x", "string")], ["id"], version_column="v")
        C.apply(t, [gc.change("upsert", row={"id": 1, "v": gc.value(5, ts=True), "x": "a"})])
        r = C.apply(t, [gc.change("upsert", row={"id": 1, "v": gc.value(3, ts=True), "x": "old"})])
        self.assertEqual((r.seq, r.updated, r.stale), (1, 0, 1))
        r = C.apply(t, [gc.change("upsert", row={"id": 1, "v": "1970-01-01T00:00:00.000007Z", "x": "new"})])
        self.assertEqual((r.updated, r.stale), (1, 0))
        self.assertEqual(C.scan(t)[2], [(1, 7, "new")])

    def test_errors(self):
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t,
                      [gc.change("upsert", row={"id": 1, "user_id": 1}),
                       gc.change("upsert", row={"id": 2, "user_id": 1, "amount": "x"})])
        self.assertEqual(d, 'row 1: column "amount": expected double, got string')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t,
                      [gc.change("upsert", row={"id": 1, "user_id": 1, "nope": 1})])
        self.assertEqual(d, 'row 0: unknown column "nope"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t,
                      [gc.change("upsert", row={"id": 1})])
        self.assertEqual(d, 'row 0: column "user_id" is required')
        c = pb.Change(op="upsert")
        c.row["id"].CopyFrom(pb.Value())
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [c])
        self.assertTrue(d.startswith('row 0: column "id": no value set'), d)
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [gc.change("merge")])
        self.assertEqual(d, 'row 0: op must be upsert, delete, c, r, u or d, not "merge"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t,
                      [gc.change("upsert", row={"id": 1, "user_id": 1, "status": "a\x00b"})])
        self.assertEqual(d, "Value.string_value: string contains U+0000")
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t,
                      [gc.change("upsert", row={"id": 2 ** 40, "user_id": 1, "at": "yesterday"})])
        self.assertTrue(d.startswith('row 0: column "at": not an RFC 3339 timestamp'), d)
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.apply, "no_such_table", [])
        self.assertEqual(d, 'no table named "no_such_table"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, gc.SERVICE + "ApplyChanges",
                      b"\xff\xff\xff\xff")
        self.assertEqual(d, "the request is not a valid strike.v1.ApplyChangesRequest message")
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [], offset=3)
        self.assertEqual(d, 'producer: required with "offset"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [], expected_seq=-1)
        self.assertEqual(d, "expected_seq: must be >= 0, got -1")
        # nothing of the above changed the table
        self.assertEqual(C.call("GetTable", name=self.t).seq, 0)

    def test_invalid_utf8_in_string_fields(self):
        """protobuf-c does not check UTF-8 in `string` fields; PostgreSQL refuses it in a text
        parameter, which failed the whole group commit. It is refused at the wire, naming the field."""
        good = pb.ApplyChangesRequest(table=self.t, producer="abcQ", offset=1,
                                      changes=[gc.change("upsert", row={"id": 1, "user_id": 1})])
        wire = good.SerializeToString()
        self.assertEqual(wire.count(b"abcQ"), 1)
        for bad, at in ((b"abc\xff", 3), (b"ab\xc0\xaf", 2), (b"\xed\xa0\x80Q", 0), (b"abc\xe2", 3)):
            d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, gc.SERVICE + "ApplyChanges",
                          wire.replace(b"abcQ", bad))
            self.assertEqual(d, f"ApplyChangesRequest.producer: invalid UTF-8 at byte {at}")
        # any string field, at any depth: a value, a map key (column name), the table name
        wire = pb.ApplyChangesRequest(table=self.t, changes=[
            gc.change("upsert", row={"id": 1, "user_id": 1, "status": "okQ"})]).SerializeToString()
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, gc.SERVICE + "ApplyChanges",
                      wire.replace(b"okQ", b"ok\xff"))
        self.assertEqual(d, "Value.string_value: invalid UTF-8 at byte 2")
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, gc.SERVICE + "ApplyChanges",
                      wire.replace(b"user_id", b"user\xffid"))
        self.assertTrue(d.endswith(".key: invalid UTF-8 at byte 4"), d)
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, gc.SERVICE + "GetTable",
                      pb.GetTableRequest(name="tQ").SerializeToString().replace(b"tQ", b"t\x80"))
        self.assertEqual(d, "GetTableRequest.name: invalid UTF-8 at byte 1")
        # nothing changed, and the same request with a valid producer commits
        self.assertEqual(C.call("GetTable", name=self.t).seq, 0)
        r = C.raw(gc.SERVICE + "ApplyChanges", good.SerializeToString().replace(b"abcQ", "abé".encode()))
        self.assertEqual(pb.ApplyChangesResponse.FromString(r).seq, 1)

    def test_expected_seq(self):
        C.apply(self.t, rows_of(self.t, 2))
        r = C.apply(self.t, rows_of(self.t, 1, 10), expected_seq=1)
        self.assertEqual(r.seq, 2)
        d = rpc_error(self, grpc.StatusCode.ABORTED, C.apply, self.t, rows_of(self.t, 1, 20), expected_seq=1)
        self.assertEqual(d, f'expected_seq 1, but table "{self.t}" is at seq 2')
        d = rpc_error(self, grpc.StatusCode.ABORTED, C.call, "DeleteWhere", table=self.t,
                      filter="true", expected_seq=0)
        self.assertEqual(d, f'expected_seq 0, but table "{self.t}" is at seq 2')

    def test_producer_duplicate(self):
        r = C.apply(self.t, rows_of(self.t, 3), producer="pg-cdc", offset=5)
        self.assertEqual((r.seq, r.inserted, r.duplicate), (1, 3, False))
        for off in (5, 4):
            r = C.apply(self.t, rows_of(self.t, 3, 100), producer="pg-cdc", offset=off)
            self.assertEqual((r.seq, r.inserted, r.updated, r.deleted, r.duplicate), (1, 0, 0, 0, True))
        r = C.apply(self.t, rows_of(self.t, 1, 200), producer="pg-cdc", offset=6)
        self.assertEqual((r.seq, r.inserted, r.duplicate), (2, 1, False))
        r = C.apply(self.t, rows_of(self.t, 1, 300), producer="other", offset=1)
        self.assertEqual((r.seq, r.duplicate), (3, False))
        self.assertEqual(sorted(x[0] for x in self.scan()), [0, 1, 2, 200, 300])

    def test_idempotency(self):
        md = [("idempotency-key", "key-1")]
        r1 = C.apply(self.t, rows_of(self.t, 4), metadata=md)
        r2 = C.apply(self.t, rows_of(self.t, 4), metadata=md)
        self.assertEqual(r1, r2)
        self.assertEqual(C.call("GetTable", name=self.t).seq, r1.seq)
        self.assertEqual(len(C.call("ListSnapshots", table=self.t).snapshots), 2)
        page = C.call("ListSnapshots", table=self.t, limit=1)
        self.assertEqual(([s.seq for s in page.snapshots], page.WhichOneof("next_present"), page.next),
                         ([0], "next", 0))
        page = C.call("ListSnapshots", table=self.t, limit=1, after=page.next)
        self.assertEqual(([s.seq for s in page.snapshots], page.WhichOneof("next_present")), ([1], None))
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "ListSnapshots", table=self.t,
                      limit=0)
        self.assertEqual(d, "limit: must be >= 1, got 0")
        d = rpc_error(self, grpc.StatusCode.FAILED_PRECONDITION, C.apply, self.t, rows_of(self.t, 5),
                      metadata=md)
        self.assertEqual(d, 'Idempotency-Key "key-1" was already used with a different request')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [],
                      metadata=[("idempotency-key", "x" * 256)])
        self.assertEqual(d, "idempotency-key: 1 to 255 visible ASCII characters")
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.apply, self.t, [], producer="p" * 256,
                      offset=1)
        self.assertEqual(d, "producer: 1 to 255 characters")
        self.assertEqual(C.call("GetTable", name=self.t).seq, r1.seq)

        md = [("idempotency-key", "del-1")]
        d1 = C.call("DeleteWhere", table=self.t, filter='{"type":"lt","term":"id","value":2}', metadata=md)
        d2 = C.call("DeleteWhere", table=self.t, filter='{"type":"lt","term":"id","value":2}', metadata=md)
        self.assertEqual((d1.seq, d1.deleted), (2, 2))
        self.assertEqual(d1, d2)

        name = fresh("idem")
        md = [("idempotency-key", "create-1")]
        t1 = C.create(name, ORDERS, ["id"], metadata=md)
        t2 = C.create(name, ORDERS, ["id"], metadata=md)  # a replay, not ALREADY_EXISTS
        self.assertEqual(t1, t2)
        md = [("idempotency-key", "drop-1")]
        C.call("DropTable", name=name, metadata=md)
        C.call("DropTable", name=name, metadata=md)

    def test_delete_where(self):
        C.apply(self.t, rows_of(self.t, 10))
        r = C.call("DeleteWhere", table=self.t,
                   filter='{"type":"and","left":{"type":"gt-eq","term":"id","value":3},'
                          '"right":{"type":"not-eq","term":"status","value":"s5"}}')
        self.assertEqual((r.seq, r.deleted), (2, 6))
        self.assertEqual([x[0] for x in self.scan()], [0, 1, 2, 5])
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "DeleteWhere", table=self.t, filter="")
        self.assertTrue(d.startswith("filter: required"), d)
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "DeleteWhere", table=self.t,
                      filter="{nope")
        self.assertTrue(d.startswith("filter: invalid JSON at line 1"), d)
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "DeleteWhere", table=self.t,
                      filter='{"type":"eq","term":"ghost","value":1}')
        self.assertIn('"ghost"', d)
        r = C.call("DeleteWhere", table=self.t, filter="true")
        self.assertEqual(r.deleted, 4)
        self.assertEqual(self.scan(), [])


def post_raw(path, text, key):
    """POST a JSON text as it is (key order, whitespace) with an Idempotency-Key."""
    return S.req("POST", path, text.encode(), {"Idempotency-Key": key,
                                               "Content-Type": "application/json"})


class IdempotencyAcrossWires(unittest.TestCase):
    """Issue 28 item 10: the request hash is the service's, over the decoded request
    (svc_idem_*), so a key first used over HTTP replays over gRPC and the reverse, for
    every operation that takes one; a different request under the key is refused on both
    wires, and the same JSON with its keys in another order (and other whitespace) is
    the same request."""

    def setUp(self):
        self.t = fresh("xwire")
        C.create(self.t, ORDERS, ["id"])
        C.apply(self.t, rows_of(self.t, 10))

    def seq(self):
        return C.call("GetTable", name=self.t).seq

    def refused_both(self, key, http_call, grpc_call):
        seq = self.seq()
        r = http_call()
        self.assertEqual(r.status, 422, r)
        self.assertRegex(r.json()["detail"],
                         f'^Idempotency-Key "{key}" was (already used with a different|used for '
                         'another erasure) request$')
        d = rpc_error(self, grpc.StatusCode.FAILED_PRECONDITION, grpc_call)
        self.assertEqual(d, r.json()["detail"])
        self.assertEqual(self.seq(), seq)

    def test_changes(self):
        path = f"/v1/tables/{self.t}/changes"
        row = {"id": 70, "user_id": 1, "amount": 1.5, "status": "s", "at": 1_700_000_000_000_000}
        grow = [gc.change("upsert", row={**row, "at": gc.value(row["at"], ts=True)}),
                gc.change("delete", key={"id": 3})]
        text = json.dumps({"changes": [{"op": "upsert", "row": row},
                                       {"op": "delete", "key": {"id": 3}}],
                           "expected_seq": self.seq()})
        # the same members in reverse order, other whitespace
        rev = dict(reversed(list(row.items())))
        text2 = json.dumps({"expected_seq": self.seq(),
                            "changes": [{"row": rev, "op": "upsert"},
                                        {"key": {"id": 3}, "op": "delete"}]}, indent=3)
        self.assertNotEqual(text, text2)
        # HTTP first, then a retry over gRPC, and over HTTP in another key order
        h1 = post_raw(path, text, "xc-1")
        self.assertEqual((h1.status, h1.header("Idempotent-Replayed")), (200, None), h1)
        seq = self.seq()
        g = C.apply(self.t, grow, metadata=[("idempotency-key", "xc-1")],
                    expected_seq=h1.json()["seq"] - 1)
        self.assertEqual({k: getattr(g, k) for k in h1.json()}, h1.json())
        h2 = post_raw(path, text2, "xc-1")
        self.assertEqual((h2.status, h2.json(), h2.header("Idempotent-Replayed")),
                         (200, h1.json(), "true"))
        self.assertEqual(self.seq(), seq)
        # another request under the key: refused on both wires
        self.refused_both("xc-1", lambda: post_raw(path, text.replace("1.5", "2.5"), "xc-1"),
                          lambda: C.apply(self.t, grow[:1], metadata=[("idempotency-key", "xc-1")],
                                          expected_seq=h1.json()["seq"] - 1))
        # gRPC first, then HTTP
        row2 = {**row, "id": 71}
        g1 = C.apply(self.t, [gc.change("upsert", row={**row2, "at": gc.value(row["at"])})],
                     metadata=[("idempotency-key", "xc-2")], producer="p", offset=9)
        h3 = post_raw(path, json.dumps({"offset": 9, "producer": "p",
                                        "changes": [{"row": row2, "op": "upsert"}]}), "xc-2")
        self.assertEqual((h3.status, h3.header("Idempotent-Replayed")), (200, "true"), h3)
        self.assertEqual(h3.json(), {k: getattr(g1, k) for k in h3.json()})
        self.assertEqual(self.seq(), g1.seq)
        self.refused_both(
            "xc-2", lambda: post_raw(path, json.dumps({"offset": 10, "producer": "p",
                                                       "changes": [{"op": "upsert", "row": row2}]}),
                                     "xc-2"),
            lambda: C.apply(self.t, [gc.change("upsert", row=row2)],
                            metadata=[("idempotency-key", "xc-2")], producer="q", offset=9))

    def test_delete(self):
        path = f"/v1/tables/{self.t}/delete"
        h1 = post_raw(path, '{"filter":{"type":"lt","term":"id","value":2}}', "xd-1")
        self.assertEqual((h1.status, h1.json()["deleted"]), (200, 2), h1)
        g = C.call("DeleteWhere", table=self.t, filter='{"value": 2, "term": "id", "type": "lt"}',
                   metadata=[("idempotency-key", "xd-1")])
        self.assertEqual((g.seq, g.deleted), (h1.json()["seq"], 2))
        h2 = post_raw(path, '{ "filter" : { "term":"id", "value":2, "type":"lt" } }', "xd-1")
        self.assertEqual((h2.status, h2.json(), h2.header("Idempotent-Replayed")),
                         (200, h1.json(), "true"))
        self.refused_both("xd-1",
                          lambda: post_raw(path, '{"filter":{"type":"lt","term":"id","value":3}}',
                                           "xd-1"),
                          lambda: C.call("DeleteWhere", table=self.t,
                                         filter='{"type":"lt","term":"id","value":5}',
                                         metadata=[("idempotency-key", "xd-1")]))
        g1 = C.call("DeleteWhere", table=self.t,
                    filter='{"type":"and","left":{"type":"gt","term":"id","value":7},'
                           '"right":{"type":"not-null","term":"status"}}',
                    metadata=[("idempotency-key", "xd-2")])
        self.assertEqual(g1.deleted, 2)
        h3 = post_raw(path, '{"filter":{"right":{"term":"status","type":"not-null"},"type":"and",'
                            '"left":{"value":7,"term":"id","type":"gt"}}}', "xd-2")
        self.assertEqual((h3.status, h3.json(), h3.header("Idempotent-Replayed")),
                         (200, {"seq": g1.seq, "deleted": 2}, "true"), h3)
        self.assertEqual(self.seq(), g1.seq)

    def test_create_and_drop(self):
        cols = [{"name": "id", "type": "long", "required": True}, {"name": "v", "type": "string"}]
        name = fresh("xcreate")
        text = json.dumps({"name": name, "columns": cols, "primary_key": ["id"]})
        h1 = post_raw("/v1/tables", text, "xt-1")
        self.assertEqual(h1.status, 201, h1)
        g = C.create(name, [("id", "long", True), ("v", "string")], ["id"],
                     metadata=[("idempotency-key", "xt-1")])  # a replay, not ALREADY_EXISTS
        self.assertEqual((g.name, g.uuid), (name, h1.json()["uuid"]))
        text2 = json.dumps({"primary_key": ["id"],
                            "columns": [{"type": "long", "required": True, "name": "id"},
                                        {"type": "string", "name": "v", "required": False}],
                            "name": name})
        h2 = post_raw("/v1/tables", text2, "xt-1")
        self.assertEqual((h2.status, h2.json()["uuid"], h2.header("Idempotent-Replayed")),
                         (201, h1.json()["uuid"], "true"))
        seq = C.call("GetTable", name=name).seq
        r = post_raw("/v1/tables", text.replace('"string"', '"long"'), "xt-1")
        self.assertEqual(r.status, 422, r)
        rpc_error(self, grpc.StatusCode.FAILED_PRECONDITION, C.create, name,
                  [("id", "long", True)], ["id"], metadata=[("idempotency-key", "xt-1")])
        self.assertEqual(C.call("GetTable", name=name).seq, seq)
        # gRPC first, then HTTP
        name2 = fresh("xcreate")
        g2 = C.create(name2, [("id", "long", True)], ["id"], metadata=[("idempotency-key", "xt-2")])
        h3 = post_raw("/v1/tables", json.dumps({"columns": [{"name": "id", "type": "long",
                                                             "required": True}],
                                                "name": name2, "primary_key": ["id"]}), "xt-2")
        self.assertEqual((h3.status, h3.json()["uuid"], h3.header("Idempotent-Replayed")),
                         (201, g2.uuid, "true"))
        # drop over HTTP, retried over gRPC (the table is gone: a replay, not NOT_FOUND)
        x1 = S.req("DELETE", f"/v1/tables/{name}", headers={"Idempotency-Key": "xx-1"})
        self.assertEqual(x1.status, 204)
        C.call("DropTable", name=name, metadata=[("idempotency-key", "xx-1")])
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "DropTable", name=name)
        # drop over gRPC, retried over HTTP
        C.call("DropTable", name=name2, metadata=[("idempotency-key", "xx-2")])
        x2 = S.req("DELETE", f"/v1/tables/{name2}", headers={"Idempotency-Key": "xx-2"})
        self.assertEqual((x2.status, x2.header("Idempotent-Replayed")), (204, "true"))
        self.assertEqual(S.req("DELETE", f"/v1/tables/{name2}").status, 404)

    def test_erase(self):
        path = f"/v1/tables/{self.t}/erasures"
        key = lambda i: pb.KeyValues(key={"id": gc.value(i)})
        h1 = post_raw(path, '{"keys":[{"id":1},{"id":3}]}', "xe-1")
        self.assertEqual(h1.status, 201, h1)
        g = C.call("Erase", table=self.t, keys=[key(1), key(3)],
                   metadata=[("idempotency-key", "xe-1")])
        self.assertEqual((g.id, json.loads(g.receipt_json)), (h1.json()["id"], h1.json()))
        self.refused_both("xe-1", lambda: post_raw(path, '{"keys":[{"id":1},{"id":4}]}', "xe-1"),
                          lambda: C.call("Erase", table=self.t, keys=[key(1)],
                                         metadata=[("idempotency-key", "xe-1")]))
        g1 = C.call("Erase", table=self.t, filter='{"type":"eq","term":"status","value":"s5"}',
                    metadata=[("idempotency-key", "xe-2")])
        h2 = post_raw(path, '{"filter": {"value": "s5", "type": "eq", "term": "status"}}', "xe-2")
        self.assertEqual((h2.status, h2.json()["id"], h2.header("Idempotent-Replayed")),
                         (201, g1.id, "true"), h2)
        self.assertEqual(h2.json(), json.loads(g1.receipt_json))
        self.assertEqual(len(S.req("GET", path).json()["erasures"]), 2)


class Scans(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = fresh("scans")
        C.create(cls.t, ORDERS, ["id"])
        C.apply(cls.t, rows_of(cls.t, 6))                       # seq 1
        C.apply(cls.t, [gc.change("delete", key={"id": 0})])   # seq 2
        # A big table: ~3.5 MB of rows in one file, several row groups' worth of messages.
        cls.big = fresh("bigscan")
        C.create(cls.big, [("id", "long", True), ("pad", "string"), ("n", "int")], ["id"])
        pad = "p" * 240
        for start in range(0, 14000, 7000):
            C.apply(cls.big, [gc.change("upsert", row={"id": i, "pad": f"{i:08d}{pad}", "n": pb.Value(int_value=i)})
                              for i in range(start, start + 7000)])

    def test_columns_filter_limit_snapshot(self):
        snap, cols, rows, n = C.scan(self.t)
        self.assertEqual((snap, cols, n), (2, ["id", "user_id", "amount", "status", "at"], 1))
        self.assertEqual([r[0] for r in rows], [1, 2, 3, 4, 5])
        snap, cols, rows, _ = C.scan(self.t, columns=["status", "id"])
        self.assertEqual(cols, ["status", "id"])
        self.assertEqual(rows[0], ("s1", 1))
        _, _, rows, _ = C.scan(self.t, filter='{"type":"in","term":"id","values":[2,4,99]}')
        self.assertEqual([r[0] for r in rows], [2, 4])
        _, _, rows, n = C.scan(self.t, limit=0)
        self.assertEqual((rows, n), ([], 1))
        _, _, rows, _ = C.scan(self.t, limit=2)
        self.assertEqual([r[0] for r in rows], [1, 2])
        snap, _, rows, _ = C.scan(self.t, snapshot=1)                   # time travel
        self.assertEqual((snap, [r[0] for r in rows]), (1, [0, 1, 2, 3, 4, 5]))
        snap, _, rows, n = C.scan(self.t, snapshot=0)
        self.assertEqual((snap, rows, n), (0, [], 1))

        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.scan, self.t, columns=["id", "nope"])
        self.assertEqual(d, 'columns[1]: unknown column "nope"')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.scan, self.t, columns=["id", "id"])
        self.assertEqual(d, 'columns[1]: column "id" is listed twice')
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.scan, self.t, snapshot=99)
        self.assertEqual(d, f'snapshot 99 of table "{self.t}" does not exist (the current snapshot is 2)')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.scan, self.t, snapshot=-1)
        self.assertEqual(d, "snapshot: must be >= 0, got -1")
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.scan, self.t, limit=-3)
        self.assertEqual(d, "limit: must be >= 0, got -3")
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.scan, "ghost_table")
        self.assertEqual(d, 'no table named "ghost_table"')

    def test_metadata(self):
        it = C.scan_stream(table=self.t, metadata=[("x-request-id", "req-scan-42")])
        rows = sum(len(b.rows) for b in it)
        self.assertEqual(rows, 5)
        self.assertIn(("strike-snapshot", "2"), list(it.initial_metadata()))
        self.assertIn(("x-request-id", "req-scan-42"), list(it.trailing_metadata()))
        r, call = C.call("GetTable", name=self.t, metadata=[("x-request-id", "req-get-7")], with_call=True)
        self.assertIn(("x-request-id", "req-get-7"), list(call.trailing_metadata()))
        rec = server_log(S, "/strike.v1.Strike/GetTable", "OK")
        self.assertIsNotNone(rec)
        self.assertTrue(any(x.get("rid") == "req-get-7" for x in S.log_records()))
        # errors carry it too, and a generated one when the client sent none
        try:
            C.call("GetTable", name="ghost_table", metadata=[("x-request-id", "req-err-1")])
        except grpc.RpcError as e:
            self.assertIn(("x-request-id", "req-err-1"), list(e.trailing_metadata()))
        _, call = C.call("GetTable", name=self.t, with_call=True)
        self.assertTrue(dict(call.trailing_metadata()).get("x-request-id"))

    def test_big_scan_in_bounded_batches(self):
        it = C.scan_stream(table=self.big)
        ids, n = [], 0
        for b in it:
            n += 1
            self.assertLessEqual(len(b.rows), 4096)
            self.assertLessEqual(b.ByteSize(), (1 << 20) + 4096)
            self.assertEqual(list(b.columns), ["id", "pad", "n"])
            for r in b.rows:
                ids.append(r.values[0].long_value)
                self.assertEqual(r.values[2].int_value, r.values[0].long_value)
                self.assertEqual(r.values[1].string_value[:8], f"{r.values[0].long_value:08d}")
        self.assertGreater(n, 3)
        self.assertEqual(sorted(ids), list(range(14000)))
        self.assertEqual(len(set(ids)), 14000)
        # the order is stable: the same scan twice gives the same sequence
        self.assertEqual([r[0] for r in C.scan(self.big, columns=["id"])[2]], ids)
        _, _, rows, _ = C.scan(self.big, columns=["id"], limit=5000)
        self.assertEqual([r[0] for r in rows], ids[:5000])

    def test_cancel(self):
        # 64 KiB client windows (no BDP probing): the server cannot run ahead of the reader.
        slow = gc.Client(S.grpc_port, options=[("grpc.http2.bdp_probe", 0)])
        try:
            it = slow.scan_stream(table=self.big, metadata=[("x-request-id", "cancel-me-1")])
            first = next(it)
            self.assertGreater(len(first.rows), 0)
            it.cancel()
            with self.assertRaises(grpc.RpcError) as cm:
                for _ in it:
                    pass
            self.assertEqual(cm.exception.code(), grpc.StatusCode.CANCELLED)
        finally:
            slow.close()
        rec = server_log(S, "/strike.v1.Strike/Scan", "CANCELLED")
        self.assertIsNotNone(rec, "the server should stop the cancelled scan")
        self.assertTrue(any(r.get("msg") == "rpc" and r.get("rid") == "cancel-me-1" and
                            r.get("status") == "CANCELLED" for r in S.log_records()))
        # the server keeps serving, scans included
        self.assertEqual(C.call("GetTable", name=self.t).name, self.t)
        self.assertEqual(len(C.scan(self.t)[2]), 5)

    def test_deadline(self):
        # A deadline already past. (Not a tiny one: gRPC rounds deadlines up to the millisecond,
        # and a GetTable on a quiet machine can finish within 1 ms, as one CI run showed.)
        d = rpc_error(self, grpc.StatusCode.DEADLINE_EXCEEDED, C.call, "GetTable", name=self.t,
                      timeout=-1)
        self.assertTrue(d)
        # A reader too slow for its deadline. Without BDP probing the client's window stays
        # at 64 KiB, so the server's 1 MiB message cannot leave before the client reads:
        # the server must end the call at the deadline, not run on.
        slow = gc.Client(S.grpc_port, options=[("grpc.http2.bdp_probe", 0)])
        try:
            it = slow.scan_stream(table=self.big, timeout=1.0, metadata=[("x-request-id", "slow-reader-1")])
            with self.assertRaises(grpc.RpcError) as cm:
                for _ in it:
                    time.sleep(0.8)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        finally:
            slow.close()
        seen = None
        deadline = time.monotonic() + 10
        while seen is None and time.monotonic() < deadline:
            seen = next((r for r in S.log_records() if r.get("msg") == "rpc" and
                         r.get("rid") == "slow-reader-1"), None)
            time.sleep(0.05)
        self.assertIsNotNone(seen)
        # The client resets the stream at its deadline, usually a moment before the server's
        # own timer (which started when the request arrived) fires: either way, not OK.
        self.assertIn(seen["status"], ("DEADLINE_EXCEEDED", "CANCELLED"), seen)
        self.assertEqual(len(C.scan(self.t)[2]), 5)


class PlansAndDVs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = fresh("plans")
        C.create(cls.t, ORDERS, ["id"])
        C.apply(cls.t, rows_of(cls.t, 100))             # seq 1: file A
        C.apply(cls.t, rows_of(cls.t, 50, 1000))        # seq 2: file B
        C.apply(cls.t, rows_of(cls.t, 10, 5000))        # seq 3: file C, never deleted from
        C.apply(cls.t, [gc.change("delete", key={"id": i}) for i in (3, 4, 5, 6, 7, 50, 1001)])  # seq 4
        C.call("DeleteWhere", table=cls.t,
               filter='{"type":"and","left":{"type":"gt-eq","term":"id","value":1040},'
                      '"right":{"type":"lt","term":"id","value":5000}}')  # seq 5

    def test_plan(self):
        p = C.call("PlanScan", table=self.t)
        self.assertEqual(p.seq, 5)
        self.assertEqual([f.record_count for f in p.files], [100, 50, 10])
        self.assertEqual([f.data_seq for f in p.files], [1, 2, 3])
        self.assertEqual([f.deleted_count for f in p.files], [6, 11, 0])
        for f in p.files:
            self.assertEqual(f.format, "parquet")
            self.assertEqual(f.url, f"/v1/tables/{self.t}/files/{f.id}")
            self.assertTrue(f.path.startswith("tables/") and f.path.endswith(".parquet"), f.path)
            self.assertTrue(h.blob_exists(S.data_dir, f.path))
            self.assertGreater(f.file_size, 0)
        a, b, c = p.files
        self.assertFalse(c.HasField("dv"))
        for f in (a, b):
            self.assertEqual(f.dv.cardinality, f.deleted_count)
            self.assertEqual(f.dv.url, f"/v1/tables/{self.t}/files/{f.id}/dv?snapshot=5")
            self.assertTrue(f.dv.path.endswith(".puffin"))
            self.assertGreater(f.dv.length, 0)
        old = C.call("PlanScan", table=self.t, snapshot=3)
        self.assertEqual((old.seq, [f.deleted_count for f in old.files]), (3, [0, 0, 0]))
        filtered = C.call("PlanScan", table=self.t, filter='{"type":"gt-eq","term":"id","value":5000}')
        self.assertEqual([f.id for f in filtered.files], [c.id])
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "PlanScan", table=self.t, snapshot=42)
        self.assertIn("snapshot 42", d)

    def test_deletion_vectors(self):
        p = C.call("PlanScan", table=self.t)
        a, b, c = p.files
        for f, card in ((a, 6), (b, 11), (c, 0)):
            r64 = C.call("GetDeletionVector", table=self.t, file_id=f.id)
            self.assertEqual((r64.cardinality, r64.format, r64.snapshot), (card, "roaring64", 5))
            ice = C.call("GetDeletionVector", table=self.t, file_id=f.id, format="iceberg-dv")
            dlt = C.call("GetDeletionVector", table=self.t, file_id=f.id, format="delta-dv")
            self.assertEqual((ice.format, dlt.format), ("iceberg-dv", "delta-dv"))
            # iceberg-dv: BE length | D1 D3 39 64 | roaring64 vector | BE CRC-32(magic + vector)
            (ln,) = struct.unpack(">I", ice.data[:4])
            self.assertEqual(ln, len(ice.data) - 8)
            self.assertEqual(ice.data[4:8], bytes([0xD1, 0xD3, 0x39, 0x64]))
            self.assertEqual(ice.data[8:-4], r64.data)
            self.assertEqual(struct.unpack(">I", ice.data[-4:])[0], zlib.crc32(ice.data[4:-4]))
            self.assertEqual(dlt.data, b"\x01" + ice.data)
            self.assertTrue(r64.etag.startswith('"') and r64.etag.endswith('"'))
            # an explicit snapshot: the second answer comes from the cache (fast path), same bytes
            s1 = C.call("GetDeletionVector", table=self.t, file_id=f.id, snapshot=5)
            s2 = C.call("GetDeletionVector", table=self.t, file_id=f.id, snapshot=5)
            self.assertEqual(s1, r64)
            self.assertEqual(s2, r64)
        old = C.call("GetDeletionVector", table=self.t, file_id=b.id, snapshot=4)
        self.assertEqual((old.cardinality, old.snapshot), (1, 4))
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "GetDeletionVector", table=self.t,
                      file_id=a.id, format="paimon-dv")
        self.assertEqual(d, 'format: unknown format "paimon-dv" (use roaring64, iceberg-dv or delta-dv)')
        d = rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "GetDeletionVector", table=self.t,
                      file_id=0)
        self.assertEqual(d, "file_id: expected a positive integer, got 0")
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "GetDeletionVector", table=self.t, file_id=99999)
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "GetDeletionVector", table=self.t,
                  file_id=a.id, snapshot=999)
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "GetDeletionVector", table=self.t,
                  file_id=c.id, snapshot=2)  # not live yet at 2

    def test_dv_reply_bytes(self):
        """The DV goes out without a copy (its bytes, then the other fields packed): the reply must be
        the one canonical encoding, also for a DV whose length takes a 2-byte varint, cached or not."""
        t = fresh("dvbytes")
        C.create(t, [("id", "long", True)], ["id"])
        C.apply(t, [gc.change("upsert", row={"id": i}) for i in range(10_000)])
        C.apply(t, [gc.change("delete", key={"id": i}) for i in range(0, 10_000, 2)])
        p = C.call("PlanScan", table=t)
        f = p.files[0]
        raw = C.channel.unary_unary(gc.SERVICE + "GetDeletionVector",
                                    request_serializer=pb.GetDeletionVectorRequest.SerializeToString,
                                    response_deserializer=None)
        for fmt in ("roaring64", "iceberg-dv", "delta-dv"):
            hr = S.req("GET", f"/v1/tables/{t}/files/{f.id}/dv?format={fmt}&snapshot={p.seq}")
            self.assertEqual(hr.status, 200, hr)
            self.assertGreater(len(hr.body), 4096)  # a bitmap container: 8 KiB
            replies = [raw(pb.GetDeletionVectorRequest(table=t, file_id=f.id, format=fmt, **kw), timeout=30)
                       for kw in ({}, {"snapshot": p.seq}, {"snapshot": p.seq})]  # worker, then cached
            for b in replies:
                m = pb.DeletionVector.FromString(b)
                self.assertEqual(b, m.SerializeToString(deterministic=True), fmt)
                self.assertEqual((m.data, m.cardinality, m.format, m.snapshot, m.etag),
                                 (hr.body, 5000, fmt, p.seq, hr.header("ETag")))
                # field 1, then its length as a 2-byte varint
                n = len(hr.body)
                self.assertEqual(b[:3], bytes([0x0A, 0x80 | (n & 0x7F), n >> 7]))

    def test_snapshots(self):
        s = C.call("ListSnapshots", table=self.t).snapshots
        self.assertEqual([x.seq for x in s], [0, 1, 2, 3, 4, 5])
        self.assertEqual(s[0].operation, "create")
        for x in s:
            self.assertTrue(x.committed_at.endswith("Z"))
            self.assertIsInstance(json.loads(x.summary), dict)
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "ListSnapshots", table="ghost_table")


class PlanPresign(unittest.TestCase):
    """PlanScan's presign and expires_in, the fields of POST /plan (docs/API.md "Plan"), by
    store: on S3 every file and DV carries a presigned GET URL that plain HTTP fetches (the
    file's bytes; the DV's Puffin blob by Range), valid for expires_in, and an expired one is
    refused by the store; on a local store presign is refused exactly as HTTP refuses it. The
    S3 run's striked signs for an S3Front (s3_front.py) before moto: moto itself takes an
    expired URL, S3 and the front do not."""

    def plan_both(self, s, c, table, grpc_kw, http_body):
        """The same plan request over gRPC (c) and HTTP (s): (PlanScanResponse or RpcError,
        HTTP response)."""
        try:
            g = c.call("PlanScan", table=table, **grpc_kw)
        except grpc.RpcError as e:
            g = e
        return g, s.req("POST", f"/v1/tables/{table}/plan", http_body)

    def assert_refused_alike(self, s, c, table, grpc_kw, http_body, needle):
        g, r = self.plan_both(s, c, table, grpc_kw, http_body)
        self.assertIsInstance(g, grpc.RpcError, (grpc_kw, g))
        self.assertEqual(g.code(), grpc.StatusCode.INVALID_ARGUMENT, g.details())
        self.assertEqual(r.status, 400, r)
        self.assertEqual(g.details(), r.json()["detail"], grpc_kw)
        self.assertIn(needle, g.details())

    def fill(self, s, c, table):
        c.create(table, ORDERS, ["id"])
        c.apply(table, rows_of(table, 60))                                       # file 1
        c.apply(table, rows_of(table, 20, 100))                                  # file 2
        c.apply(table, [gc.change("delete", key={"id": i}) for i in (1, 2, 3, 59, 100)])

    def test_presign(self):
        if h.s3_endpoint() is None:
            self.local_store()
        else:
            self.object_store()

    def local_store(self):
        t = fresh("presign_local")
        self.fill(S, C, t)
        for kw in ({"presign": True}, {"presign": True, "expires_in": 60}):
            self.assert_refused_alike(S, C, t, kw, kw, "presign: the blob store is a local directory")
        for kw, needle in (({"expires_in": 60}, "expires_in: only with"),
                           ({"presign": True, "expires_in": 0}, "expires_in: from 1 to 604800"),
                           ({"presign": True, "expires_in": 604801}, "expires_in: from 1 to 604800")):
            self.assert_refused_alike(S, C, t, kw, kw, needle)
        # presign false is a plain plan, over both wires: no URL, no expiry
        g, r = self.plan_both(S, C, t, {"presign": False}, {"presign": False})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([f.id for f in g.files], [f["id"] for f in r.json()["files"]])
        self.assertTrue(any(f.HasField("dv") for f in g.files))
        for f in g.files:
            self.assertEqual((f.presigned_url, f.expires_at), ("", ""))
            self.assertEqual((f.dv.presigned_url, f.dv.expires_at), ("", ""))
        for f in r.json()["files"]:
            self.assertNotIn("presigned_url", f)

    def object_store(self):
        front = S3Front(h.s3_endpoint(), os.environ["AWS_SECRET_ACCESS_KEY"])
        s = h.Striked(data_dir=h.s3_data_url(), catalog=h.create_db("grpc_presign"),
                      extra_args=["--s3-endpoint", front.endpoint, "--s3-path-style"])
        c = gc.Client(s.grpc_port)
        try:
            t = fresh("presign_s3")
            self.fill(s, c, t)
            t0 = int(time.time())
            p = c.call("PlanScan", table=t, presign=True, expires_in=600)
            t1 = int(time.time())
            self.assertEqual(len(p.files), 2)
            self.assertTrue(any(f.HasField("dv") for f in p.files))
            for f in p.files:
                self.assertIn("X-Amz-Signature=", f.presigned_url)
                self.assertIn("X-Amz-Expires=600&", f.presigned_url)
                self.assertTrue(f.presigned_url.startswith(front.endpoint + "/strike-test/"), f.presigned_url)
                exp = datetime.datetime.fromisoformat(f.expires_at.replace("Z", "+00:00")).timestamp()
                self.assertTrue(t0 + 600 <= exp <= t1 + 600, (f.expires_at, t0, t1))
                # the file's bytes, straight from the store, as the plan's HTTP url serves them
                with urllib.request.urlopen(f.presigned_url, timeout=30) as g:
                    got = g.read()
                self.assertEqual(len(got), f.file_size)
                self.assertEqual(got, s.req("GET", f.url).body)
                if not f.HasField("dv"):
                    self.assertEqual(f.deleted_count, 0)
                    continue
                self.assertEqual(f.dv.expires_at, f.expires_at)
                self.assertIn("X-Amz-Expires=600&", f.dv.presigned_url)
                rq = urllib.request.Request(f.dv.presigned_url, headers={
                    "Range": f"bytes={f.dv.offset}-{f.dv.offset + f.dv.length - 1}"})
                with urllib.request.urlopen(rq, timeout=30) as g:
                    self.assertEqual(g.status, 206)
                    blob = g.read()
                positions = hr.decode_iceberg_dv(blob)
                self.assertEqual(len(positions), f.deleted_count)
                r64 = c.call("GetDeletionVector", table=t, file_id=f.id, snapshot=p.seq)
                self.assertEqual(positions, hr.decode_roaring64(r64.data))
            self.assertGreaterEqual(front.presigned_ok, 3)
            self.assertEqual(front.refused, [])
            # the same plan over HTTP: the same files and objects, URLs signed alike
            hp = s.req("POST", f"/v1/tables/{t}/plan", {"presign": True, "expires_in": 600}).json()
            self.assertEqual([(f["id"], f["path"]) for f in hp["files"]], [(f.id, f.path) for f in p.files])
            for hf, gf in zip(hp["files"], p.files):
                self.assertEqual(hf["presigned_url"].split("?")[0], gf.presigned_url.split("?")[0])
                self.assertEqual(hf["dv"] is None, not gf.HasField("dv"))
            # the default validity: an hour
            d = c.call("PlanScan", table=t, presign=True)
            self.assertTrue(all("X-Amz-Expires=3600&" in f.presigned_url for f in d.files))
            # a URL past its expires_in is refused by the store, and so is a forged one
            short = c.call("PlanScan", table=t, presign=True, expires_in=1)
            url = short.files[0].presigned_url
            with urllib.request.urlopen(url, timeout=30) as g:
                self.assertEqual(g.status, 200)  # within its second (or two: the date is whole seconds)
            exp = datetime.datetime.fromisoformat(short.files[0].expires_at.replace("Z", "+00:00")).timestamp()
            time.sleep(max(0.0, exp - time.time()) + 1.1)
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(url, timeout=30)
            self.assertEqual(cm.exception.code, 403)
            self.assertIn(b"Request has expired", cm.exception.read())
            forged = d.files[0].presigned_url.replace("X-Amz-Expires=3600", "X-Amz-Expires=7200")
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(forged, timeout=30)
            self.assertEqual(cm.exception.code, 403)
            self.assertIn(b"SignatureDoesNotMatch", cm.exception.read())
            # the refusals of HTTP, with HTTP's details
            for kw, needle in (({"expires_in": 60}, "expires_in: only with"),
                               ({"presign": True, "expires_in": 0}, "expires_in: from 1 to 604800"),
                               ({"presign": True, "expires_in": 604801}, "expires_in: from 1 to 604800")):
                self.assert_refused_alike(s, c, t, kw, kw, needle)
            c.close()
            c = None
            s.close_clean()
        finally:
            if c is not None:
                c.close()
            s.close()
            front.close()


class Service(unittest.TestCase):
    def test_unimplemented(self):
        d = rpc_error(self, grpc.StatusCode.UNIMPLEMENTED, C.raw, "/strike.v1.Strike/Nope", b"")
        self.assertIn("/strike.v1.Strike/Nope", d)
        rpc_error(self, grpc.StatusCode.UNIMPLEMENTED, C.raw, "/other.v9.Thing/Do", b"\x08\x01")
        for m, extra in (("Compact", {}), ("Expire", {}), ("Erase", {"filter": "true"}),
                         ("GetErasure", {}), ("TableHealth", {})):  # implemented: the table is looked up
            d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, m, table="x", **extra)
            self.assertIn('"x"', d)
        self.assertIsInstance(C.call("ListTables"), pb.ListTablesResponse)  # still serving

    def test_health(self):
        path = "/grpc.health.v1.Health/Check"
        self.assertEqual(C.raw(path, b""), b"\x08\x01")          # SERVING
        svc = b"strike.v1.Strike"
        self.assertEqual(C.raw(path, b"\x0a" + bytes([len(svc)]) + svc), b"\x08\x01")
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, C.raw, path, b"\x0a\x04nope")
        self.assertEqual(d, 'unknown service "nope"')
        rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.raw, path, b"\x0a\x09ab")

    def test_concurrent_calls(self):
        name = fresh("conc")
        C.create(name, ORDERS, ["id"])
        errors = []

        def worker(k):
            try:
                for i in range(5):
                    C.apply(name, rows_of(name, 1, k * 100 + i))
                    C.call("GetTable", name=name)
                    C.scan(name, limit=3)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(C.scan(name)[2]), 40)


def rfc3339(us):
    return (datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) +
            datetime.timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Parity(unittest.TestCase):
    """The same operations over HTTP (table A) and gRPC (table B)."""

    OPS = [
        ("changes", [{"op": "upsert", "row": {"id": i, "user_id": i % 5, "amount": i / 3,
                                                "status": f"n{i}", "at": 1_700_000_000_000_000 + i * 7}}
                     for i in range(300)]),
        ("changes", [{"op": "delete", "key": {"id": i}} for i in range(0, 300, 7)] +
                    [{"op": "upsert", "row": {"id": 5, "user_id": 1, "amount": None, "status": "five",
                                              "at": "2024-02-29T12:00:00.25Z"}}]),
        ("changes", [{"op": "u", "before": {"id": 10, "user_id": 0}, "after": {"id": 1010, "user_id": 0,
                                                                                "amount": 1e-7}},
                     {"op": "d", "before": {"id": 11}},
                     {"op": "c", "after": {"id": 2000, "user_id": 4, "status": "é"}}]),
        ("delete", '{"type":"and","left":{"type":"eq","term":"user_id","value":3},'
                   '"right":{"type":"lt","term":"id","value":150}}'),
        ("changes", [{"op": "upsert", "row": {"id": i, "user_id": 2, "amount": -0.5}} for i in range(290, 320)]),
    ]

    @classmethod
    def setUpClass(cls):
        cls.a, cls.b = fresh("par_http"), fresh("par_grpc")
        cols = [{"name": n, "type": t, "required": bool(r[0]) if r else False} for n, t, *r in ORDERS]
        r = S.req("POST", "/v1/tables", {"name": cls.a, "columns": cols, "primary_key": ["id"]})
        assert r.status == 201, r
        C.create(cls.b, ORDERS, ["id"])
        for kind, body in cls.OPS:
            if kind == "changes":
                r = S.req("POST", f"/v1/tables/{cls.a}/changes", {"changes": body})
                assert r.status == 200, r
                http_res = r.json()
                g = C.apply(cls.b, [cls.to_change(c) for c in body])
                grpc_res = {"seq": g.seq, "inserted": g.inserted, "updated": g.updated, "deleted": g.deleted,
                            "missing": g.missing, "stale": g.stale, "duplicate": g.duplicate}
            else:
                r = S.req("POST", f"/v1/tables/{cls.a}/delete", {"filter": json.loads(body)})
                assert r.status == 200, r
                http_res = r.json()
                g = C.call("DeleteWhere", table=cls.b, filter=body)
                grpc_res = {"seq": g.seq, "deleted": g.deleted}
            assert http_res == grpc_res, (http_res, grpc_res)

    @staticmethod
    def to_change(c):
        objs = {k: v for k, v in c.items() if k != "op"}
        ch = pb.Change(op=c["op"])
        for k, obj in objs.items():
            for col, x in obj.items():
                getattr(ch, k)[col].CopyFrom(gc.value(x))
        return ch

    def test_scans(self):
        for req in ({}, {"columns": ["status", "id", "at"]}, {"filter": {"type": "lt", "term": "amount", "value": 20}},
                    {"limit": 17}, {"snapshot": 2}):
            r = S.req("POST", f"/v1/tables/{self.a}/scan", req)
            self.assertEqual(r.status, 200, r)
            http_rows = r.ndjson()
            kw = dict(req)
            if "filter" in kw:
                kw["filter"] = json.dumps(kw["filter"])
            snap, cols, rows, _ = C.scan(self.b, **kw)
            self.assertEqual(str(snap), r.header("Strike-Snapshot"))
            grpc_rows = []
            for row in rows:
                d = dict(zip(cols, row))
                if d.get("at") is not None:
                    d["at"] = rfc3339(d["at"])
                grpc_rows.append(d)
            self.assertEqual(len(http_rows), len(grpc_rows), req)
            self.assertEqual(http_rows, grpc_rows, req)          # same rows, same order
            if "columns" in req:
                self.assertEqual(list(http_rows[0].keys()), req["columns"])

    def test_plans_and_dvs(self):
        r = S.req("POST", f"/v1/tables/{self.a}/plan", {})
        self.assertEqual(r.status, 200, r)
        hp = r.json()
        gp = C.call("PlanScan", table=self.b)
        self.assertEqual(hp["seq"], gp.seq)
        self.assertEqual(len(hp["files"]), len(gp.files))
        for hf, gf in zip(hp["files"], gp.files):
            for k in ("record_count", "data_seq", "deleted_count", "format"):
                self.assertEqual(hf[k], getattr(gf, k), k)
            self.assertEqual(hf["url"].replace(self.a, "T").replace(str(hf["id"]), "F"),
                             gf.url.replace(self.b, "T").replace(str(gf.id), "F"))
            self.assertEqual(hf["dv"] is None, not gf.HasField("dv"))
            if hf["dv"] is not None:
                for k in ("cardinality", "length", "offset"):
                    self.assertEqual(hf["dv"][k], getattr(gf.dv, k), k)
            for fmt in ("roaring64", "iceberg-dv", "delta-dv"):
                # the same bitmap content over both protocols, across the two tables...
                hr = S.req("GET", f"/v1/tables/{self.a}/files/{hf['id']}/dv?format={fmt}")
                self.assertEqual(hr.status, 200, hr)
                gd = C.call("GetDeletionVector", table=self.b, file_id=gf.id, format=fmt)
                self.assertEqual(hr.body, gd.data, fmt)
                self.assertEqual(int(hr.header("Strike-Cardinality")), gd.cardinality)
                self.assertEqual(hr.header("ETag"), gd.etag)
                # ...and the very same DV of one table over both
                hb = S.req("GET", f"/v1/tables/{self.b}/files/{gf.id}/dv?format={fmt}&snapshot={gp.seq}")
                gb = C.call("GetDeletionVector", table=self.b, file_id=gf.id, format=fmt, snapshot=gp.seq)
                self.assertEqual(hb.body, gb.data)

    def test_tables_and_snapshots(self):
        ht = S.req("GET", f"/v1/tables/{self.a}").json()
        gt = C.call("GetTable", name=self.b)
        self.assertEqual(ht["seq"], gt.seq)
        self.assertEqual(ht["stats"], {"data_files": gt.stats.data_files, "rows": gt.stats.rows,
                                       "deleted_rows": gt.stats.deleted_rows, "live_rows": gt.stats.live_rows,
                                       "dv_files": gt.stats.dv_files, "inline_dvs": gt.stats.inline_dvs})
        self.assertEqual(ht["columns"], [{"name": c.name, "type": c.type, "required": c.required}
                                         for c in gt.columns])
        hs = S.req("GET", f"/v1/tables/{self.a}/snapshots").json()["snapshots"]
        gs = C.call("ListSnapshots", table=self.b).snapshots
        self.assertEqual([(x["seq"], x["operation"]) for x in hs], [(x.seq, x.operation) for x in gs])

    def test_error_details(self):
        """The gRPC status message is the HTTP problem's detail."""
        cases = [
            (("POST", f"/v1/tables/{self.a}/changes",
              {"changes": [{"op": "upsert", "row": {"id": 1, "user_id": "x"}}]}),
             lambda: C.apply(self.b, [gc.change("upsert", row={"id": 1, "user_id": "x"})]),
             400, grpc.StatusCode.INVALID_ARGUMENT),
            (("POST", f"/v1/tables/{self.a}/changes", {"changes": [{"op": "upsert", "row": {"id": 1}}]}),
             lambda: C.apply(self.b, [gc.change("upsert", row={"id": 1})]),
             400, grpc.StatusCode.INVALID_ARGUMENT),
            (("POST", f"/v1/tables/{self.a}/scan", {"columns": ["id", "ghost"]}),
             lambda: C.scan(self.b, columns=["id", "ghost"]), 400, grpc.StatusCode.INVALID_ARGUMENT),
            (("POST", f"/v1/tables/{self.a}/scan", {"snapshot": 999}),
             lambda: C.scan(self.b, snapshot=999), 404, grpc.StatusCode.NOT_FOUND),
            (("POST", f"/v1/tables/{self.a}/delete", {"filter": {"type": "eq", "term": "ghost", "value": 1}}),
             lambda: C.call("DeleteWhere", table=self.b, filter='{"type":"eq","term":"ghost","value":1}'),
             400, grpc.StatusCode.INVALID_ARGUMENT),
            (("POST", f"/v1/tables/{self.a}/delete", {"filter": True, "expected_seq": 1}),
             lambda: C.call("DeleteWhere", table=self.b, filter="true", expected_seq=1),
             409, grpc.StatusCode.ABORTED),
            (("POST", f"/v1/tables/{self.a}/changes", {"changes": [], "producer": "p"}),
             lambda: C.apply(self.b, [], producer="p"), 400, grpc.StatusCode.INVALID_ARGUMENT),
            (("GET", f"/v1/tables/{self.a}/files/99999/dv", None),
             lambda: C.call("GetDeletionVector", table=self.b, file_id=99999), 404, grpc.StatusCode.NOT_FOUND),
            (("GET", "/v1/tables/no_such_tbl", None),
             lambda: C.call("GetTable", name="no_such_tbl"), 404, grpc.StatusCode.NOT_FOUND),
        ]
        for (method, path, body), call, status, code in cases:
            r = S.req(method, path, body)
            self.assertEqual(r.status, status, r)
            detail = r.json()["detail"].replace(self.a, "T")
            with self.assertRaises(grpc.RpcError) as cm:
                call()
            self.assertEqual(cm.exception.code(), code)
            self.assertEqual(cm.exception.details().replace(self.b, "T"), detail, path)


class MessageLimit(unittest.TestCase):
    def test_over_the_limit(self):
        s = h.Striked(catalog=h.create_db("grpc_limit"), extra_args=["--max-body", "256K"])
        try:
            c = gc.Client(s.grpc_port)
            c.create("lim", [("id", "long", True), ("s", "string")], ["id"])
            r = c.apply("lim", [gc.change("upsert", row={"id": 1, "s": "x" * 100_000})])
            self.assertEqual(r.inserted, 1)
            d = rpc_error(self, grpc.StatusCode.RESOURCE_EXHAUSTED, c.apply, "lim",
                          [gc.change("upsert", row={"id": 2, "s": "y" * 300_000})])
            self.assertTrue(d)
            # the connection and the server go on
            self.assertEqual(len(c.scan("lim")[2]), 1)
            c.close()
            code, _ = s.stop()
            self.assertEqual(code, 0)
            logs = s.logs()
            for m in h.SANITIZER_MARKS:
                self.assertNotIn(m, logs)
        finally:
            s.close()


class InflightBudget(unittest.TestCase):
    """--max-inflight counts gRPC messages with HTTP bodies, in one budget (each by its
    route's factor, server/admit.h: ApplyChanges 42x, an HTTP /changes body 20x)."""

    def test_unavailable_beyond_the_budget(self):
        s = h.Striked(catalog=h.create_db("grpc_inflight"),
                      extra_args=["--max-body", "2M", "--max-inflight", "25M"])
        try:
            c = gc.Client(s.grpc_port)
            c.create("inf", [("id", "long", True), ("s", "string")], ["id"])
            # an HTTP body of 1,000,000 bytes held mid-way: 20,000,000 of the 25 MiB taken
            held = socket.create_connection(("127.0.0.1", s.http_port), timeout=30)
            held.sendall(b"POST /v1/tables/inf/changes HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
            time.sleep(0.2)
            big = [gc.change("upsert", row={"id": 1, "s": "x" * 400_000})]
            d = rpc_error(self, grpc.StatusCode.UNAVAILABLE, c.apply, "inf", big)
            self.assertIn("in-flight limit", d)
            self.assertIn("--max-inflight 26214400", d)
            # a small message fits
            self.assertEqual(c.apply("inf", [gc.change("upsert", row={"id": 2, "s": "y"})]).inserted, 1)
            held.close()  # the HTTP client goes away: its share comes back
            deadline = time.monotonic() + 20
            while True:
                try:
                    r = c.apply("inf", big)
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self.assertEqual(r.inserted, 1)
            # alone, a message over the budget (1.6 MB counts 67 MB) is admitted
            r = c.apply("inf", [gc.change("upsert", row={"id": 10 + k, "s": "z" * 400_000})
                                for k in range(4)])
            self.assertEqual(r.inserted, 4)
            c.close()
            code, _ = s.stop()
            self.assertEqual(code, 0)
        finally:
            s.close()


class Startup(unittest.TestCase):
    def test_port_in_use(self):
        """SO_REUSEPORT is off: a second striked on the same gRPC port fails instead of sharing it."""
        d = h.tmpdir()
        try:
            p = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--data", os.path.join(d, "data"),
                                "--catalog", h.create_db("grpc_busy"), "--http", f"127.0.0.1:{h.free_port()}",
                                "--grpc", f"127.0.0.1:{S.grpc_port}"], capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr[-3000:])
            self.assertIn(f"striked: grpc: cannot listen on 127.0.0.1:{S.grpc_port}", p.stderr)
            for m in h.SANITIZER_MARKS:
                self.assertNotIn(m, p.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(C.raw("/grpc.health.v1.Health/Check", b""), b"\x08\x01")


class Shutdown(unittest.TestCase):
    def test_sigterm_with_a_stream_in_flight(self):
        s = h.Striked(catalog=h.create_db("grpc_stop"))
        try:
            c = gc.Client(s.grpc_port, options=[("grpc.http2.bdp_probe", 0)])
            c.create("big", [("id", "long", True), ("pad", "string")], ["id"])
            c.apply("big", [gc.change("upsert", row={"id": i, "pad": "z" * 500}) for i in range(8000)])
            it = c.scan_stream(table="big", timeout=120)
            next(it)                                   # a stream in flight, its reader stalled
            self.assertEqual(c.raw("/grpc.health.v1.Health/Check", b""), b"\x08\x01")
            code, took = s.stop(signal.SIGTERM, timeout=60)
            self.assertEqual(code, 0, s.logs()[-4000:])
            self.assertLess(took, 30)
            with self.assertRaises(grpc.RpcError) as cm:
                for _ in it:
                    pass
            self.assertIn(cm.exception.code(), (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED))
            c.close()
            logs = s.logs()
            for m in h.SANITIZER_MARKS:
                self.assertNotIn(m, logs)
            self.assertTrue(any(r.get("msg") == "stopped" for r in s.log_records()))
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
