"""Compaction and erasure through the real striked, over HTTP and gRPC (issue 14).

- A row with a unique marker string lives through a long history (several
  versions, deletes, a compaction, many snapshots); after its erasure no
  Parquet file under the data directory decodes to the marker (each file read
  with `strike parquet cat`), no catalog table holds it (pg_dump of the
  catalog database), the server log does not contain it, reading a snapshot
  from before the purge is a 404, and the receipt is as docs/API.md says:
  201, Location, no erased value, every check passed; GET by id and the list
  return it, and the same Idempotency-Key replays it.
- The same over gRPC (Compact, Erase by key and by filter, GetErasure).
- Malformed requests get a precise 400 and change nothing.
- kill -9 of striked during a compaction and during an erasure: restarted on
  the same catalog and data, `strike fsck` is clean, nothing acknowledged is
  lost, and the erasure retried with its Idempotency-Key ends in a verified
  receipt.
"""
import hashlib
import json
import os
import random
import re
import signal
import struct
import subprocess
import threading
import time
import unittest

import grpc

import harness as h
import http_util as u
import grpc_client as gc
from grpc_client import pb

MARKER = "Z9-erase-me-4411"
PEOPLE = {
    "columns": [{"name": "id", "type": "long", "required": True},
                {"name": "name", "type": "string"},
                {"name": "email", "type": "string"}],
    "primary_key": ["id"],
}


def create(s, name, spec=PEOPLE):
    r = s.req("POST", "/v1/tables", dict(spec, name=name))
    assert r.status == 201, r


def upsert(s, table, rows, **extra):
    r = u.changes(s, table, [{"op": "upsert", "row": row} for row in rows], **extra)
    assert r.status == 200, r
    return r.json()


def person(i, marker=False, version=0):
    if marker:
        return {"id": i, "name": f"{MARKER} v{version}", "email": f"{MARKER.lower()}@example.org"}
    return {"id": i, "name": f"person {i}", "email": f"p{i}@example.org"}


def parquet_files(root):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".parquet"):
                yield os.path.join(d, f)


def files_holding(root, needle):
    """(files read, files whose decoded rows contain needle)."""
    n, hits = 0, []
    for p in parquet_files(root):
        out = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "parquet", "cat", p],
                             capture_output=True, text=True)
        assert out.returncode == 0, f"strike parquet cat {p}: {out.stderr}"
        n += 1
        if needle in out.stdout:
            hits.append(p)
    return n, hits


def pg_dump(db):
    pg = os.path.dirname(h.psql_path())
    out = subprocess.run([os.path.join(pg, "pg_dump"), "-h", h.PG_HOST, "-U", "postgres", "-d", db],
                         capture_output=True, text=True, check=True)
    return out.stdout


def fsck(tc, url, data_dir):
    p = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "fsck", "--catalog", url, "--data", data_dir],
                       capture_output=True, text=True)
    tc.assertEqual(p.returncode, 0, f"strike fsck: exit {p.returncode}\n{p.stdout}\n{p.stderr}")


RECEIPT_KEYS = {"id", "table", "status", "key_digest", "keys", "rows_erased", "delete_seq", "rewrite_seq",
                "expired_snapshots", "files_rewritten", "files_deleted", "bytes_deleted", "checks",
                "verified_at", "row_versions_purged"}


class Erasure(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = "erasure_http"
        cls.url = h.create_db(cls.db)
        cls.s = h.Striked(catalog=cls.url, env={"STRIKE_LOG_LEVEL": "debug"})
        cls.g = gc.Client(cls.s.grpc_port)

    @classmethod
    def tearDownClass(cls):
        cls.g.close()
        cls.s.close_clean()

    def history(self, table):
        """A long history for person 1234: versions, deletes, a compaction, many snapshots."""
        create(self.s, table)
        for b in range(4):
            upsert(self.s, table, [person(i, marker=(i == 1234)) for i in range(b * 500, b * 500 + 500)])
        upsert(self.s, table, [person(1234, True, 2)])
        r = u.changes(self.s, table, [{"op": "delete", "key": {"id": i}} for i in range(0, 400)])
        self.assertEqual(r.status, 200, r)
        r = self.s.req("POST", f"/v1/tables/{table}/compact", {"min_deleted_fraction": 0.1})
        self.assertEqual(r.status, 200, r)
        c = r.json()
        self.assertEqual(set(c), {"seq", "rewritten_files", "written_files", "rows_moved", "rows_dropped"})
        self.assertGreaterEqual(c["rewritten_files"], 1)
        self.assertEqual(c["rows_dropped"], 400)  # the first file (80% deleted); not the marker's file
        upsert(self.s, table, [person(1234, True, 3), {"id": 7777, "name": "bystander", "email": None}])
        return self.s.req("GET", f"/v1/tables/{table}").json()["seq"]

    def test_marker_gone_everywhere(self):
        seq_before = self.history("people")
        n, hits = files_holding(self.s.data_dir, MARKER)
        self.assertGreaterEqual(len(hits), 3)  # three versions on disk before the erasure

        hdr = {"Idempotency-Key": "gdpr-ticket-1"}
        r = self.s.req("POST", "/v1/tables/people/erasures", {"keys": [{"id": 1234}]}, headers=hdr)
        self.assertEqual(r.status, 201, r)
        rec = r.json()
        self.assertEqual(set(rec), RECEIPT_KEYS)
        self.assertEqual(r.header("Location"), f"/v1/tables/people/erasures/{rec['id']}")
        self.assertEqual(rec["status"], "verified")
        self.assertEqual(rec["table"], "people")
        self.assertRegex(rec["key_digest"], r"^hmac-sha256:[0-9a-f]{64}$")
        self.assertEqual(rec["rows_erased"], 1)
        self.assertEqual(rec["row_versions_purged"], 3)  # v0 and v2 (deleted before), v3
        self.assertEqual(rec["delete_seq"], seq_before + 1)
        self.assertGreater(rec["rewrite_seq"], rec["delete_seq"])
        self.assertGreaterEqual(rec["files_rewritten"], 1)
        self.assertGreaterEqual(rec["expired_snapshots"], seq_before)
        self.assertGreater(rec["files_deleted"], 0)
        self.assertGreater(rec["bytes_deleted"], 0)
        self.assertRegex(rec["verified_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        self.assertEqual({c["check"] for c in rec["checks"]},
                         {"data_files", "key_index", "column_statistics", "orphan_blobs",
                          "bucket_versioning", "iceberg_metadata"})
        self.assertTrue(all(c["passed"] for c in rec["checks"]), rec["checks"])
        self.assertNotIn(MARKER, r.body.decode())
        self.assertNotIn("1234", json.dumps({k: v for k, v in rec.items() if k not in ("id", "key_digest")}))

        # no file under the data directory decodes to the marker; the bystander is still there
        n, hits = files_holding(self.s.data_dir, MARKER)
        self.assertGreater(n, 0)
        self.assertEqual(hits, [])
        self.assertEqual(len(files_holding(self.s.data_dir, "bystander")[1]), 1)
        # no catalog table holds it, and the log never had it
        self.assertNotIn(MARKER, pg_dump(self.db))
        self.assertNotIn(MARKER.encode(), open(self.s.log_path, "rb").read())

        # the history before the purge is gone
        u.assert_problem(self, self.s.req("POST", "/v1/tables/people/scan", {"snapshot": seq_before}), 404)
        rows = u.scan_rows(self, self.s, "people")
        self.assertNotIn(1234, [x["id"] for x in rows])
        self.assertEqual(len(rows), 2000 - 400 - 1 + 1)

        # the receipt by id, in the list, and replayed by its Idempotency-Key
        g = self.s.req("GET", r.header("Location"))
        self.assertEqual(g.status, 200, g)
        self.assertEqual(g.json(), rec)
        lst = self.s.req("GET", "/v1/tables/people/erasures").json()
        self.assertEqual([x["id"] for x in lst["erasures"]], [rec["id"]])
        self.assertIsNone(lst["next"])
        again = self.s.req("POST", "/v1/tables/people/erasures", {"keys": [{"id": 1234}]}, headers=hdr)
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.json(), rec)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/people/erasures", {"keys": [{"id": 1}]},
                                          headers=hdr), 422)

        # the same key again: the same digest, nothing left to erase
        r2 = self.s.req("POST", "/v1/tables/people/erasures", {"keys": [{"id": 1234}]})
        self.assertEqual(r2.status, 201, r2)
        self.assertEqual(r2.json()["key_digest"], rec["key_digest"])
        self.assertEqual(r2.json()["rows_erased"], 0)
        self.assertEqual(r2.json()["row_versions_purged"], 0)
        # an upsert of the key after the erasure is a new row
        self.assertEqual(upsert(self.s, "people", [person(1234)])["inserted"], 1)
        # pages of the list
        p1 = self.s.req("GET", "/v1/tables/people/erasures?limit=1").json()
        self.assertEqual(len(p1["erasures"]), 1)
        self.assertEqual(p1["next"], rec["id"])
        p2 = self.s.req("GET", f"/v1/tables/people/erasures?limit=1&after={p1['next']}").json()
        self.assertEqual([x["id"] for x in p2["erasures"]], [r2.json()["id"]])

    def test_old_version_by_filter(self):
        """Issue 28 item 1: the filter names an old version of a key that has a newer live one."""
        spec = {"columns": [{"name": "id", "type": "long", "required": True},
                            {"name": "email", "type": "string"}],
                "primary_key": ["id"]}
        create(self.s, "users2", spec)
        upsert(self.s, "users2", [{"id": 1, "email": "old@x"}, {"id": 2, "email": "two@x"}])
        upsert(self.s, "users2", [{"id": 1, "email": "new@x"}])
        self.assertEqual(len(files_holding(self.s.data_dir, "old@x")[1]), 1)
        r = self.s.req("POST", "/v1/tables/users2/erasures",
                       {"filter": {"type": "eq", "term": "email", "value": "old@x"}})
        self.assertEqual(r.status, 201, r)
        rec = r.json()
        self.assertEqual(rec["status"], "verified")
        self.assertTrue(all(c["passed"] for c in rec["checks"]), rec["checks"])
        self.assertEqual(rec["rows_erased"], 0)  # the old version was no longer live
        self.assertEqual(rec["row_versions_purged"], 1)
        self.assertEqual(rec["keys"], 1)
        self.assertEqual(files_holding(self.s.data_dir, "old@x")[1], [])
        rows = sorted(u.scan_rows(self, self.s, "users2"), key=lambda x: x["id"])
        self.assertEqual(rows, [{"id": 1, "email": "new@x"}, {"id": 2, "email": "two@x"}])
        self.assertEqual(self.s.req("GET", r.header("Location")).json(), rec)

    def test_digest_is_keyed_and_checked(self):
        """Issue 28 item 2: the key digest is an HMAC keyed per catalog; admins check keys."""
        create(self.s, "subjects")
        upsert(self.s, "subjects", [person(i) for i in range(10)])
        r = self.s.req("POST", "/v1/tables/subjects/erasures", {"keys": [{"id": 5}]})
        self.assertEqual(r.status, 201, r)
        rec = r.json()
        self.assertRegex(rec["key_digest"], r"^hmac-sha256:[0-9a-f]{64}$")
        # not the SHA-256 anyone could compute from a guessed id (its length, then its encoding)
        plain = hashlib.sha256(struct.pack(">IQ", 8, 5 ^ (1 << 63))).hexdigest()
        self.assertNotIn(plain, r.body.decode())
        # the same erasure on another catalog: another secret, another digest
        other = h.Striked(catalog=h.create_db("erasure_other_catalog"))
        try:
            create(other, "subjects")
            upsert(other, "subjects", [person(i) for i in range(10)])
            r2 = other.req("POST", "/v1/tables/subjects/erasures", {"keys": [{"id": 5}]})
            self.assertEqual(r2.status, 201, r2)
            self.assertRegex(r2.json()["key_digest"], r"^hmac-sha256:[0-9a-f]{64}$")
            self.assertNotEqual(r2.json()["key_digest"], rec["key_digest"])
            self.assertEqual(other.stop()[0], 0)
        finally:
            other.close()
        # the admin's check: exactly the erased keys
        path = f"/v1/tables/subjects/erasures/{rec['id']}/check"
        for keys, want in (([{"id": 5}], True), ([{"id": 5}, {"id": 5}], True), ([{"id": 6}], False),
                           ([{"id": 5}, {"id": 6}], False)):
            c = self.s.req("POST", path, {"keys": keys})
            self.assertEqual(c.status, 200, c)
            self.assertEqual(c.json(), {"match": want}, keys)
        for body, needle in (({}, "keys"), ({"keys": []}, "keys"), ({"keys": [{"id": "x"}]}, "keys[0]"),
                             ({"keys": [{"id": 5}], "filter": True}, "filter"), ({"keys": 5}, "keys")):
            u.assert_problem(self, self.s.req("POST", path, body), 400, needle)
        u.assert_problem(self, self.s.req(
            "POST", "/v1/tables/subjects/erasures/01a23000-0000-7000-8000-000000000000/check",
            {"keys": [{"id": 5}]}), 404)
        u.assert_problem(self, self.s.req("GET", path), 405)
        # gRPC CheckErasure
        m = self.g.call("CheckErasure", table="subjects", id=rec["id"],
                        keys=[pb.KeyValues(key={"id": gc.value(5)})])
        self.assertTrue(m.match)
        m = self.g.call("CheckErasure", table="subjects", id=rec["id"],
                        keys=[pb.KeyValues(key={"id": gc.value(4)})])
        self.assertFalse(m.match)
        rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, self.g.call, "CheckErasure",
                  table="subjects", id=rec["id"])
        # nothing logged the secret: no 64-hex-digit value but the digests and ids of receipts
        log = open(self.s.log_path, "rb").read().decode()
        secret = h.sql(self.db, "SELECT encode(secret, 'hex') FROM strike.secrets")[0][0]
        self.assertNotIn(secret, log)
        self.assertNotIn(secret, r.body.decode())

    def test_temp_files_are_examined(self):
        """Issue 28 item 3: a temp file a crash left (a full copy of a data file) holds rows no
        listing of Parquet files shows: the erasure deletes it, and so does `strike gc`."""
        create(self.s, "temps")
        upsert(self.s, "temps", [person(i, marker=(i == 3)) for i in range(10)])
        uuid = self.s.req("GET", "/v1/tables/temps").json()["uuid"]
        data = os.path.join(self.s.data_dir, "tables", uuid, "data")
        (src,) = [os.path.join(data, f) for f in os.listdir(data) if f.endswith(".parquet")]
        tmp = src + ".tmp.00000000deadbeef"
        with open(src, "rb") as a, open(tmp, "wb") as b:
            b.write(a.read())
        old = time.time() - 180  # past ENGINE_COMMIT_MAX_AGE_S: no write in flight that old
        os.utime(tmp, (old, old))
        r = self.s.req("POST", "/v1/tables/temps/erasures", {"keys": [{"id": 3}]})
        self.assertEqual(r.status, 201, r)
        orphans = next(c for c in r.json()["checks"] if c["check"] == "orphan_blobs")
        self.assertEqual((orphans["orphans_examined"], orphans["orphans_deleted"], orphans["passed"]),
                         (1, 1, True), orphans)
        self.assertFalse(os.path.exists(tmp))
        # the collector: temp files older than its grace go, a young one stays
        (src,) = [os.path.join(data, f) for f in os.listdir(data) if f.endswith(".parquet")]
        tmp, young = src + ".tmp.00000000000000aa", src + ".tmp.00000000000000bb"
        for p, age in ((tmp, 7200), (young, 0)):
            with open(src, "rb") as a, open(p, "wb") as b:
                b.write(a.read())
            os.utime(p, (time.time() - age, time.time() - age))
        g = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "gc", "--catalog", self.url, "--data",
                            self.s.data_dir, "--grace", "1h"], capture_output=True, text=True)
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertFalse(os.path.exists(tmp))
        self.assertTrue(os.path.exists(young))
        os.unlink(young)

    def test_excluded_by_statistics(self):
        """Issue 31 (row i14c): verification decodes only the files whose own footer statistics
        could hold an erased key. Four files of disjoint id ranges: erasing a key of the third
        decodes its rewrite (its range still covers the key) and excludes the other three. A
        leftover Parquet file holding the key (a failed commit's, long dead) is still examined
        and deleted: leftovers are never excluded."""
        create(self.s, "ranges")
        for b in range(4):
            upsert(self.s, "ranges", [person(i, marker=(i == 2345)) for i in range(b * 1000, b * 1000 + 500)])
        uuid = self.s.req("GET", "/v1/tables/ranges").json()["uuid"]
        data = os.path.join(self.s.data_dir, "tables", uuid, "data")
        (src,) = files_holding(data, MARKER)[1]
        left = os.path.join(data, "01a23d1d-0000-7000-8000-0000000031c1.parquet")
        with open(src, "rb") as a, open(left, "wb") as b:
            b.write(a.read())
        old = time.time() - 900  # past the collector's shortest grace: no commit can take it
        os.utime(left, (old, old))
        r = self.s.req("POST", "/v1/tables/ranges/erasures", {"keys": [{"id": 2345}]})
        self.assertEqual(r.status, 201, r)
        rec = r.json()
        self.assertEqual(rec["status"], "verified")
        self.assertTrue(all(c["passed"] for c in rec["checks"]), rec["checks"])
        self.assertEqual((rec["rows_erased"], rec["row_versions_purged"], rec["files_rewritten"]), (1, 1, 1))
        files = next(c for c in rec["checks"] if c["check"] == "data_files")
        self.assertEqual(list(files), ["files_decoded", "files_holding_erased", "rows_written_after_delete",
                                       "files_excluded_by_statistics", "check", "passed"])
        self.assertEqual((files["files_decoded"], files["files_excluded_by_statistics"]), (1, 3), files)
        orphans = next(c for c in rec["checks"] if c["check"] == "orphan_blobs")
        self.assertEqual((orphans["orphans_examined"], orphans["orphans_deleted"]), (1, 1), orphans)
        self.assertFalse(os.path.exists(left))
        self.assertEqual(files_holding(self.s.data_dir, MARKER)[1], [])
        self.assertEqual(self.s.req("GET", r.header("Location")).json(), rec)  # as stored

    def test_grpc(self):
        create(self.s, "grpc_people")
        upsert(self.s, "grpc_people", [person(i, marker=(i == 5)) for i in range(100)])
        upsert(self.s, "grpc_people", [person(i) for i in range(10, 20)])
        c = self.g.call("Compact", table="grpc_people", min_deleted_fraction=0.05)
        self.assertEqual(c.rewritten_files, 1)
        self.assertEqual(c.rows_dropped, 10)
        self.assertEqual(c.rows_moved, 90)
        e = self.g.call("Erase", table="grpc_people", keys=[pb.KeyValues(key={"id": gc.value(5)})])
        self.assertEqual(e.status, "verified")
        self.assertEqual(e.rows_erased, 1)
        self.assertEqual(e.row_versions_purged, 2)  # the compaction copied it: two files
        self.assertEqual(e.table, "grpc_people")
        self.assertTrue(e.key_digest.startswith("hmac-sha256:"))
        self.assertEqual(json.loads(e.receipt_json)["id"], e.id)
        got = self.g.call("GetErasure", table="grpc_people", id=e.id)
        self.assertEqual(got.receipt_json, e.receipt_json)
        f = self.g.call("Erase", table="grpc_people",
                        filter=json.dumps({"type": "lt", "term": "id", "value": 3}))
        self.assertEqual(f.rows_erased, 3)
        self.assertEqual(len(u.scan_rows(self, self.s, "grpc_people")), 96)
        d = rpc_error(self, grpc.StatusCode.NOT_FOUND, self.g.call, "GetErasure", table="grpc_people",
                      id="01a23000-0000-7000-8000-000000000000")
        self.assertIn("no erasure", d)
        rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, self.g.call, "Erase", table="grpc_people")
        rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, self.g.call, "Compact", table="grpc_people",
                  min_deleted_fraction=1.5)

    def test_bad_requests_change_nothing(self):
        create(self.s, "bad")
        upsert(self.s, "bad", [person(i) for i in range(10)])
        seq = self.s.req("GET", "/v1/tables/bad").json()["seq"]
        path = "/v1/tables/bad/erasures"
        cases = [
            (path, {"keys": [{"id": 1}], "filter": True}, "either"),
            (path, {}, "either"),
            (path, {"keys": {"id": 1}}, "keys: expected an array"),
            (path, {"keys": [1]}, "keys[0]: expected an object"),
            (path, {"keys": [{"name": "x"}]}, "keys[0]"),
            (path, {"keys": [{"id": "one"}]}, "id"),
            (path, {"keys": [{"id": 1}], "why": "gdpr"}, "why"),
            (path, {"filter": {"type": "eq", "term": "nope", "value": 1}}, "nope"),
            ("/v1/tables/bad/compact", {"min_deleted_fraction": "x"}, "min_deleted_fraction"),
            ("/v1/tables/bad/compact", {"min_deleted_fraction": 2}, "min_deleted_fraction"),
            ("/v1/tables/bad/compact", {"target_file_rows": 0}, "target_file_rows"),
            ("/v1/tables/bad/compact", {"target": 5}, "target"),
        ]
        for p, body, needle in cases:
            u.assert_problem(self, self.s.req("POST", p, body), 400, needle)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/nope/erasures", {"keys": [{"id": 1}]}), 404)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/nope/compact", {}), 404)
        u.assert_problem(self, self.s.req("GET", f"{path}?after=zzz"), 400, "after")
        u.assert_problem(self, self.s.req("GET", f"{path}?limit=0"), 400, "limit")
        u.assert_problem(self, self.s.req("GET", f"{path}/not-an-id"), 404)
        u.assert_problem(self, self.s.req("POST", path, b"{}", headers={"Content-Type": "text/plain"}), 415)
        self.assertEqual(self.s.req("GET", "/v1/tables/bad").json()["seq"], seq)
        self.assertEqual(self.s.req("GET", path).json(), {"erasures": [], "next": None})


def rpc_error(tc, code, fn, *args, **kw):
    with tc.assertRaises(grpc.RpcError) as cm:
        fn(*args, **kw)
    tc.assertEqual(cm.exception.code(), code, cm.exception.details())
    return cm.exception.details()


class Crashes(unittest.TestCase):
    """kill -9 in the middle of a compaction and of an erasure, then restart."""

    def setUp(self):
        self.db = "erasure_crash_" + str(os.getpid())
        self.url = h.create_db(self.db)
        self.first = h.Striked(catalog=self.url)  # owns the data directory
        self.s = self.first

    def tearDown(self):
        if self.s is not self.first:
            self.s.close()
        self.first.close()

    def restart(self):
        self.s.stop(signal.SIGKILL)
        if self.s is not self.first:
            self.s.close()
        self.s = h.Striked(data_dir=self.first.data_dir, catalog=self.url)

    def load(self, table, n):
        create(self.s, table)
        for b in range(0, n, 5000):
            upsert(self.s, table, [person(i, marker=(i == 4242)) for i in range(b, min(n, b + 5000))])
        r = u.changes(self.s, table, [{"op": "delete", "key": {"id": i}} for i in range(0, n, 3)])
        self.assertEqual(r.status, 200, r)
        return {i for i in range(n) if i % 3 != 0}

    def in_background(self, method, path, body, headers=None):
        out = {}

        def run():
            try:
                out["r"] = self.s.req(method, path, body, headers=headers, timeout=120)
            except OSError as e:
                out["exc"] = e
        t = threading.Thread(target=run)
        t.start()
        return t, out

    def test_kill_during_compaction(self):
        want = self.load("big", 40000)
        rng = random.Random(14)
        t, out = self.in_background("POST", "/v1/tables/big/compact", {"min_deleted_fraction": 0.1})
        time.sleep(rng.uniform(0.05, 0.6))
        self.restart()
        t.join()
        fsck(self, self.url, self.s.data_dir)
        self.assertEqual({x["id"] for x in u.scan_rows(self, self.s, "big")}, want)
        # the killed server's catalog session (and its rewrite lock) lives until PostgreSQL
        # notices it is gone: until then another compaction is refused with 409
        for _ in range(120):
            r = self.s.req("POST", "/v1/tables/big/compact", {"min_deleted_fraction": 0.1})
            if r.status != 409:
                break
            self.assertIn("is running", r.json()["detail"])
            time.sleep(0.5)
        self.assertEqual(r.status, 200, r)
        self.assertEqual({x["id"] for x in u.scan_rows(self, self.s, "big")}, want)
        fsck(self, self.url, self.s.data_dir)
        # keys still find their rows after the move
        r = u.changes(self.s, "big", [{"op": "delete", "key": {"id": i}} for i in sorted(want)[:100]])
        self.assertEqual(r.json()["deleted"], 100)

    def failed_receipt(self, r, table):
        """An erasure's answer, and when it did not verify its receipt (which check failed) and
        the tail of the server's log: what a failure under load needs to be understood."""
        m = re.search(r"erasure ([0-9a-f-]{36}) did not verify", r.body.decode(errors="replace"))
        if m is None:
            return r
        got = self.s.req("GET", f"/v1/tables/{table}/erasures/{m.group(1)}")
        log = ""
        if getattr(self.s, "log_path", None) and os.path.exists(self.s.log_path):
            with open(self.s.log_path, errors="replace") as f:
                log = "".join(f.readlines()[-40:])
        return f"{r}\nreceipt: {got.body.decode(errors='replace')}\nlog:\n{log}"

    def test_kill_during_erasure(self):
        want = self.load("big", 40000)
        hdr = {"Idempotency-Key": "ticket-77"}
        body = {"keys": [{"id": 4242}]}
        rng = random.Random(15)
        t, out = self.in_background("POST", "/v1/tables/big/erasures", body, hdr)
        time.sleep(rng.uniform(0.05, 0.6))
        self.restart()
        t.join()
        # the erasure waits up to a minute for the killed server's rewrite lock (its catalog
        # session lives until PostgreSQL notices it is gone); on a loaded machine, ask again
        for _ in range(5):
            r = self.s.req("POST", "/v1/tables/big/erasures", body, headers=hdr, timeout=300)
            if r.status != 409:
                break
        self.assertEqual(r.status, 201, self.failed_receipt(r, "big"))
        rec = r.json()
        self.assertEqual(rec["status"], "verified")
        self.assertIn(rec["rows_erased"], (0, 1))  # 0: the first attempt's delete had committed
        fsck(self, self.url, self.s.data_dir)
        self.assertEqual({x["id"] for x in u.scan_rows(self, self.s, "big")}, want - {4242})
        self.assertEqual(files_holding(self.s.data_dir, MARKER)[1], [])


if __name__ == "__main__":
    unittest.main()
