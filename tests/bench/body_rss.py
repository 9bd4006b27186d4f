#!/usr/bin/python3
"""body_rss.py - striked's peak memory per request, by the shape of its body
(issue 13 item 9, issue 28 item 5).

    tests/bench/body_rss.py --build build/release [--shapes a,b,...] [--clients 32]
                            [--body-mib 64] [--wide-mib 8] [--erase-keys N]
                            [-- STRIKED_ARGS...]

Starts a throw-away PostgreSQL (tests/lib/pgfixture.sh) and, for each shape,
a fresh striked on it (so that its VmHWM belongs to the shape alone), posts
the shape's body and reads striked's peak: VmRSS sampled every 10 ms from
/proc/PID/status and VmHWM at the end. Printed per shape: the body's bytes,
the RSS before the post (after the tables exist), the peak, the growth
(peak - before) and the growth per body byte ("x body"; the admission
budget charges each route's body a factor of its size: server/admit.h).

The shapes (--shapes, default every one but `many`):

  changes          one maximal /changes body (--body-mib, less a few bytes) of
                   upserts of rows with a 64-byte string key and four columns
                   (long, double, string, timestamp): a CDC producer batching
                   a wide-keyed table
  many             the same body from --clients clients at once (a table each)
  changes_tiny     /changes, --body-mib of the smallest upserts, {"id":N} into
                   a table of one long key (2 million changes in 64 MiB)
  changes_del_wide /changes, --wide-mib of deletes by key on a table of 1,000
                   columns
  json_zeros       /changes, {"changes":[0,0,...]}: the most JSON values a body
                   holds (every JSON route parses its body whole first: jdoc's
                   worst), refused (400) once parsed
  cdc_null         /v1/cdc/debezium, NDJSON of 100,000 `null` lines (tombstones;
                   100,000 is the most events a body may hold)
  cdc_null_1mib    the same with 1 MiB of `null` lines: refused (413) at event
                   100,000, the body of the issue that found it
  cdc_tiny         /v1/cdc/debezium, NDJSON of 100,000 tiny creates
                   {"op":"c","after":{"id":N}} (?table=)
  cdc_del_wide     /v1/cdc/debezium, NDJSON of 100,000 deletes
                   {"op":"d","before":{"id":N}} on the table of 1,000 columns
  cdc_schema       /v1/cdc/debezium, a JSON array of Debezium events with their
                   schema (schemas.enable=true), --body-mib or 100,000 events
  cdc_zeros        /v1/cdc/debezium, [0,0,...]: json_zeros on the CDC endpoint
  grpc_tiny        gRPC ApplyChanges, the body of changes_tiny as protobuf
  grpc_del_wide    gRPC ApplyChanges, the deletes of changes_del_wide
  grpc_empty       gRPC ApplyChanges of empty Change messages (2 bytes each: the
                   most messages a body holds), refused while it is unpacked
                   (RESOURCE_EXHAUSTED: server/grpc_conv.h GCONV_UNPACK_MAX_X)
  grpc_cdc_null    gRPC ApplyDebezium, the body of cdc_null
  grpc_unknown     gRPC GetTable with --body-mib of unknown fields (2 bytes each:
                   protobuf-c keeps each one, as any method would), refused
                   while it is unpacked (as grpc_empty)
  grpc_erase_keys  gRPC Erase of 100,000 keys named (not in the table)
  erase_keys       POST /erasures {"keys"} of 100,000 keys (the most one erasure
                   names) that are not in the table
  delete_in        POST /delete, a filter filling --body-mib: a balanced "or" of
                   in-lists of 100,000 ids each (the filter of delete, scan,
                   plan and erasures at its largest)
  erase_filter     POST /erasures {"filter"} matching --erase-keys rows: a table
                   (id, v = id % 10) loaded by another striked first, in
                   /changes bodies under 64 MiB, and the filter v < 9 (9 rows
                   of every file of 10: a filter matching whole files would
                   remove them with no key to collect); the body is tiny, the
                   growth is per key erased

The gRPC shapes use Debian's python3-grpcio (skipped when it is missing);
their messages are encoded here (no generated code). Anything after `--`
goes to striked (e.g. `-- --max-inflight 1G`). A client refused with 503
waits for its Retry-After and posts again; the refusals are counted.
Nothing is asserted: this is a measurement. `make bench` runs every shape
but `many` through run_shape() (bench.py, row i28; docs/BENCH.md).
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20
CDC_EVENTS_MAX = 100000  # server/cdc.h
ERASE_KEYS_MAX = 100000  # storage/engine/erase.c
WIDE_COLUMNS = 1000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def req(port, method, path, body=None, headers=None, timeout=3600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    if body is not None:
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def post_close(port, path, body, content_type="application/json", timeout=3600):
    """POST with Connection: close on a raw socket: a reply that comes before
    the whole body was sent (a 503 from Content-Length) is still read."""
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n" % (path, content_type, len(body))).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        try:
            c.sendall(head)
            view = memoryview(body)
            for off in range(0, len(body), MIB):
                c.sendall(view[off:off + MIB])
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered early: read what came
        resp = b""
        try:
            while True:
                d = c.recv(1 << 16)
                if not d:
                    break
                resp += d
        except ConnectionResetError:
            pass
    if not resp:
        raise OSError("no reply")
    hdr, _, data = resp.partition(b"\r\n\r\n")
    lines = hdr.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return status, hdrs, data


# ---- tables ------------------------------------------------------------------------

def table_def(name):
    """The table of `changes` and `many`: a 64-byte string key and four columns."""
    return {
        "name": name,
        "columns": [
            {"name": "id", "type": "string", "required": True},
            {"name": "user_id", "type": "long"},
            {"name": "amount", "type": "double"},
            {"name": "status", "type": "string"},
            {"name": "updated_at", "type": "timestamp"},
        ],
        "primary_key": ["id"],
    }


def narrow_def(name):
    return {"name": name, "columns": [{"name": "id", "type": "long", "required": True}], "primary_key": ["id"]}


def era_def(name):
    return {"name": name, "columns": [{"name": "id", "type": "long", "required": True},
                                      {"name": "v", "type": "long"}], "primary_key": ["id"]}


def wide_def(name):
    cols = [{"name": "id", "type": "long", "required": True}]
    cols += [{"name": "c%d" % i, "type": "long"} for i in range(1, WIDE_COLUMNS)]
    return {"name": name, "columns": cols, "primary_key": ["id"]}


def customers_def(name):
    return {"name": name, "columns": [
        {"name": "id", "type": "long", "required": True}, {"name": "first_name", "type": "string"},
        {"name": "last_name", "type": "string"}, {"name": "email", "type": "string"},
        {"name": "updated_at", "type": "timestamp"}], "primary_key": ["id"]}


# ---- bodies ------------------------------------------------------------------------

def fill(limit, head, tail, item, sep=b",", max_items=None):
    """head + items joined by sep + tail, as many items (item(i) -> bytes) as fit in
    `limit` bytes (and at most max_items); returns (bytes, items)."""
    parts = []
    size = len(head) + len(tail)
    i = 0
    while max_items is None or i < max_items:
        x = item(i)
        add = len(x) + (len(sep) if parts else 0)
        if size + add > limit:
            break
        parts.append(x)
        size += add
        i += 1
    body = head + sep.join(parts) + tail
    assert len(body) == size <= limit
    return body, i


def make_body(limit):
    """As many upserts as fit in `limit` bytes; returns (bytes, rows)."""
    def row(i):
        key = "customer-%010d-" % i
        key += "k" * (64 - len(key))
        return ('{"op":"upsert","row":{"id":"%s","user_id":%d,"amount":%d.25,'
                '"status":"%s","updated_at":"2026-11-29T10:%02d:%02d.123456Z"}}'
                % (key, i * 7919 % 1000003, i % 10000, ("NEW", "PAID", "SHIPPED")[i % 3],
                   i // 60 % 60, i % 60)).encode()
    return fill(limit, b'{"changes":[', b"]}", row)


def tiny_upserts(limit):
    return fill(limit, b'{"changes":[', b"]}", lambda i: b'{"op":"upsert","row":{"id":%d}}' % i)


def key_deletes(limit):
    return fill(limit, b'{"changes":[', b"]}", lambda i: b'{"op":"delete","key":{"id":%d}}' % i)


def in_filter(limit):
    """{"filter": a balanced "or" of in-lists of FILTER_MAX_VALUES ids each} filling `limit`
    bytes (the filter of delete, scan, plan and erasures at its largest); (bytes, values)."""
    per = 100000  # FILTER_MAX_VALUES (storage/expr/filter.h)
    lists, size, k = [], 20, 0
    while True:
        vals = b",".join(b"%d" % (k * per + i) for i in range(per))
        leaf = b'{"type":"in","term":"id","values":[' + vals + b"]}"
        if size + len(leaf) + 40 > limit:
            break
        lists.append(leaf)
        size += len(leaf) + 40
        k += 1
    if not lists:  # a body too small for one whole list: a shorter one
        n = max(1, (limit - 60) // 8)
        lists = [b'{"type":"in","term":"id","values":[' + b",".join(b"%d" % i for i in range(n)) + b"]}"]

    def tree(xs):
        if len(xs) == 1:
            return xs[0]
        m = len(xs) // 2
        return b'{"type":"or","left":' + tree(xs[:m]) + b',"right":' + tree(xs[m:]) + b"}"
    body = b'{"filter":' + tree(lists) + b"}"
    assert len(body) <= limit
    return body, body.count(b",") + 1


def ndjson(limit, line, max_items=CDC_EVENTS_MAX):
    body, n = fill(limit, b"", b"\n", line, sep=b"\n", max_items=max_items)
    return body, n


DBZ_SCHEMA = json.dumps({
    "type": "struct", "name": "dbserver1.inventory.customers.Envelope", "optional": False, "fields": [
        {"type": "struct", "name": "dbserver1.inventory.customers.Value", "optional": True, "field": f, "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "string", "optional": False, "field": "first_name"},
            {"type": "string", "optional": False, "field": "last_name"},
            {"type": "string", "optional": False, "field": "email"},
            {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1,
             "field": "updated_at"}]} for f in ("before", "after")] + [
        {"type": "struct", "name": "io.debezium.connector.postgresql.Source", "optional": False,
         "field": "source", "fields": [
             {"type": "string", "optional": False, "field": "version"},
             {"type": "string", "optional": False, "field": "connector"},
             {"type": "string", "optional": False, "field": "name"},
             {"type": "int64", "optional": False, "field": "ts_ms"},
             {"type": "string", "optional": False, "field": "db"},
             {"type": "string", "optional": False, "field": "schema"},
             {"type": "string", "optional": False, "field": "table"},
             {"type": "int64", "optional": True, "field": "lsn"}]},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"}]}, separators=(",", ":"))


def dbz_event(i):
    payload = {"before": None,
               "after": {"id": i, "first_name": "Anne-%d" % i, "last_name": "Kretchmar",
                         "email": "annek%d@noanswer.org" % i, "updated_at": 1764000000000000 + i},
               "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "dbserver1",
                          "ts_ms": 1764000000000, "db": "inventory", "schema": "inventory",
                          "table": "customers", "lsn": 1000 + 8 * i},
               "op": "c", "ts_ms": 1764000000001}
    return b'{"schema":' + DBZ_SCHEMA.encode() + b',"payload":' + json.dumps(payload, separators=(",", ":")).encode() + b"}"


# ---- protobuf, by hand (strike.v1: ApplyChangesRequest, Change, Value, ApplyDebeziumRequest)

def pb_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_len(field, data):
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_long_map(field, name, v):
    """A map<string, Value> entry {name: long_value v} of field `field`."""
    value = pb_varint(4 << 3 | 0) + pb_varint(v)  # Value.long_value = 4
    return pb_len(field, pb_len(1, name) + pb_len(2, value))


def grpc_changes(limit, table, op, field):
    """ApplyChangesRequest{table, changes} of as many changes {op, field: {id: i}} as fit."""
    head = pb_len(1, table.encode())
    opb = pb_len(1, op)
    parts, size, i = [], len(head), 0
    while True:
        ch = pb_len(2, opb + pb_long_map(field, b"id", i))
        if size + len(ch) > limit:
            break
        parts.append(ch)
        size += len(ch)
        i += 1
    return head + b"".join(parts), i


def grpc_debezium(body, content_type, table):
    return pb_len(1, body) + pb_len(2, content_type.encode()) + pb_len(3, table.encode()), None


# ---- processes ---------------------------------------------------------------------

def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 1 << 40


class Sampler(threading.Thread):
    """VmRSS every 10 ms; kills striked if the machine runs short of memory
    (MemAvailable under --floor-mib): the measure is then a lower bound."""

    def __init__(self, pid, floor_kib):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop_ev = pid, 0, threading.Event()
        self.floor_kib, self.killed = floor_kib, False

    def run(self):
        while not self.stop_ev.is_set():
            try:
                self.peak = max(self.peak, status_kib(self.pid, "VmRSS"))
            except OSError:
                return
            if mem_available_kib() < self.floor_kib:
                self.killed = True
                os.kill(self.pid, 9)
                return
            time.sleep(0.01)


def start_striked(build, catalog, data, extra, log, pidfile=None):
    hport, gport = free_port(), free_port()
    args = [os.path.join(build, "bin", "striked"), "--catalog", catalog,
            "--data", data, "--http", f"127.0.0.1:{hport}", "--grpc", f"127.0.0.1:{gport}",
            "--log-level", "warn", "--compact-interval", "0"] + list(extra)
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(f"{p.pid}\n")
    for _ in range(600):
        try:
            if req(hport, "GET", "/readyz", timeout=2)[0] == 200:
                return p, hport, gport
        except OSError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise RuntimeError("body_rss: striked did not become ready (see its log)")


def stop(p, pidfile=None):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if pidfile and os.path.exists(pidfile):
        os.remove(pidfile)


def have_grpc():
    try:
        import grpc  # noqa: F401
        return True
    except ImportError:
        return False


def grpc_call(gport, method, data, timeout=3600):
    """(status name, detail) of one unary call with raw request bytes."""
    import grpc
    opts = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", 64 << 20)]
    with grpc.insecure_channel(f"127.0.0.1:{gport}", options=opts) as ch:
        f = ch.unary_unary("/strike.v1.Strike/" + method, request_serializer=lambda b: b,
                           response_deserializer=lambda b: b)
        try:
            f(data, timeout=timeout)
            return "OK", ""
        except grpc.RpcError as e:
            return e.code().name, e.details() or ""


# ---- shapes ------------------------------------------------------------------------

class Shape:
    """One request body and what it is posted to. `tables`: table definitions to create;
    `load`: (table, rows) to fill through another striked first; `expect`: the status
    that counts as done (HTTP code, or a gRPC status name)."""

    def __init__(self, name, path, body, units, unit, tables=(), content_type="application/json",
                 expect=200, grpc=None, load=None):
        self.name, self.path, self.body, self.units, self.unit = name, path, body, units, unit
        self.tables, self.content_type, self.expect = list(tables), content_type, expect
        self.grpc, self.load = grpc, load


def make_shape(name, body_mib=64, wide_mib=8, erase_keys=10_000_000, table_suffix=None):
    """The Shape called `name` (see the module's doc) at these sizes; its tables' names end
    with table_suffix (default: "_" and the shape's name, so that shapes share a catalog)."""
    limit = int(body_mib * MIB) - 1024
    wide_limit = int(wide_mib * MIB) - 1024
    sfx = "_" + name if table_suffix is None else table_suffix
    if name in ("changes", "many"):
        body, n = make_body(limit)
        return Shape(name, "/v1/tables/{table}/changes", body, n, "upserts", [table_def])
    if name == "changes_tiny":
        body, n = tiny_upserts(limit)
        return Shape(name, "/v1/tables/narrow%s/changes" % sfx, body, n, "upserts", [narrow_def("narrow" + sfx)])
    if name == "changes_del_wide":
        body, n = key_deletes(wide_limit)
        return Shape(name, "/v1/tables/wide%s/changes" % sfx, body, n, "deletes", [wide_def("wide" + sfx)])
    if name == "cdc_null":
        body, n = ndjson(limit, lambda i: b"null")
        return Shape(name, "/v1/cdc/debezium", body, n, "events", content_type="application/x-ndjson",
                     expect=204)
    if name == "cdc_null_1mib":
        body, n = ndjson(MIB, lambda i: b"null", max_items=None)
        return Shape(name, "/v1/cdc/debezium", body, n, "events", content_type="application/x-ndjson",
                     expect=413)
    if name == "cdc_tiny":
        body, n = ndjson(limit, lambda i: b'{"op":"c","after":{"id":%d}}' % i)
        return Shape(name, "/v1/cdc/debezium?table=narrow" + sfx, body, n, "events", [narrow_def("narrow" + sfx)],
                     content_type="application/x-ndjson")
    if name == "cdc_del_wide":
        body, n = ndjson(limit, lambda i: b'{"op":"d","before":{"id":%d}}' % i)
        return Shape(name, "/v1/cdc/debezium?table=wide" + sfx, body, n, "events", [wide_def("wide" + sfx)],
                     content_type="application/x-ndjson")
    if name == "cdc_schema":
        body, n = fill(limit, b"[", b"]", dbz_event, max_items=CDC_EVENTS_MAX)
        return Shape(name, "/v1/cdc/debezium?table=customers" + sfx, body, n, "events",
                     [customers_def("customers" + sfx)])
    if name == "grpc_tiny":
        body, n = grpc_changes(limit, "narrow" + sfx, b"upsert", 2)
        return Shape(name, None, body, n, "upserts", [narrow_def("narrow" + sfx)], expect="OK",
                     grpc="ApplyChanges")
    if name == "grpc_del_wide":
        body, n = grpc_changes(wide_limit, "wide" + sfx, b"delete", 3)
        return Shape(name, None, body, n, "deletes", [wide_def("wide" + sfx)], expect="OK", grpc="ApplyChanges")
    if name == "grpc_cdc_null":
        nd, n = ndjson(limit, lambda i: b"null")
        body, _ = grpc_debezium(nd, "application/x-ndjson", "")
        return Shape(name, None, body, n, "events", expect="OK", grpc="ApplyDebezium")
    if name == "json_zeros":
        body, n = fill(limit, b'{"changes":[', b"]}", lambda i: b"0")
        return Shape(name, "/v1/tables/narrow%s/changes" % sfx, body, n, "values", [narrow_def("narrow" + sfx)],
                     expect=400)
    if name == "cdc_zeros":
        body, n = fill(limit, b"[", b"]", lambda i: b"0")
        return Shape(name, "/v1/cdc/debezium?table=narrow" + sfx, body, n, "values", [narrow_def("narrow" + sfx)],
                     expect=400)
    if name == "grpc_empty":
        head = pb_len(1, ("narrow" + sfx).encode())
        n = (limit - len(head)) // 2
        return Shape(name, None, head + b"\x12\x00" * n, n, "empty changes", [narrow_def("narrow" + sfx)],
                     expect="RESOURCE_EXHAUSTED", grpc="ApplyChanges")
    if name == "grpc_unknown":
        head = pb_len(1, ("narrow" + sfx).encode())
        n = (limit - len(head)) // 2
        return Shape(name, None, head + b"\x78\x00" * n, n, "unknown fields", [narrow_def("narrow" + sfx)],
                     expect="RESOURCE_EXHAUSTED", grpc="GetTable")
    if name == "grpc_erase_keys":
        head = pb_len(1, ("narrow" + sfx).encode())
        body = head + b"".join(pb_len(2, pb_long_map(1, b"id", i)) for i in range(ERASE_KEYS_MAX))
        return Shape(name, None, body, ERASE_KEYS_MAX, "keys", [narrow_def("narrow" + sfx)], expect="OK",
                     grpc="Erase")
    if name == "erase_keys":
        body, n = fill(limit, b'{"keys":[', b"]}", lambda i: b'{"id":%d}' % i, max_items=ERASE_KEYS_MAX)
        return Shape(name, "/v1/tables/narrow%s/erasures" % sfx, body, n, "keys", [narrow_def("narrow" + sfx)],
                     expect=201)
    if name == "delete_in":
        body, n = in_filter(limit)
        return Shape(name, "/v1/tables/narrow%s/delete" % sfx, body, n, "values", [narrow_def("narrow" + sfx)])
    if name == "erase_filter":
        # v = id % 10 and the filter v < 9: 9 rows of every 10 of every file (a filter matching
        # whole files would remove them without a key to collect)
        body = json.dumps({"filter": {"type": "lt", "term": "v", "value": 9}}).encode()
        rows = (erase_keys + 8) // 9 * 10
        keys = rows // 10 * 9
        return Shape(name, "/v1/tables/era%s/erasures" % sfx, body, keys, "keys",
                     [era_def("era" + sfx)], expect=201, load=("era" + sfx, rows))
    raise ValueError("unknown shape " + name)


SHAPES = ["changes", "changes_tiny", "changes_del_wide", "json_zeros", "cdc_null", "cdc_null_1mib", "cdc_tiny",
          "cdc_del_wide", "cdc_schema", "cdc_zeros", "grpc_tiny", "grpc_del_wide", "grpc_empty", "grpc_cdc_null",
          "grpc_unknown", "grpc_erase_keys", "erase_keys", "delete_in", "erase_filter", "many"]


def load_rows(port, table, rows, log=None):
    """Fill `table` (era_def) with ids 0..rows-1, v = id % 10, in /changes bodies under 64 MiB."""
    at, per = 0, 1_500_000
    while at < rows:
        n = min(per, rows - at)
        body = b'{"changes":[' + b",".join(b'{"op":"upsert","row":{"id":%d,"v":%d}}' % (i, i % 10)
                                           for i in range(at, at + n)) + b"]}"
        st, _, d = req(port, "POST", "/v1/tables/%s/changes" % table, body)
        if st != 200:
            raise RuntimeError("loading %s: HTTP %d %s" % (table, st, d[:300]))
        at += n
        if log:
            log("  loaded %d of %d rows" % (at, rows))


def run_shape(build, catalog, work, shape, extra=(), clients=1, floor_mib=3072, log=None, pidfile=None):
    """Post `shape` from `clients` clients at once to a fresh striked on `catalog`; the
    measure as a dict (peak and growth in KiB, their ratio to the body bytes in flight)."""
    data = os.path.join(work, "data-" + shape.name)
    logpath = os.path.join(work, "striked-%s.log" % shape.name)
    with open(logpath, "ab") as logf:
        if shape.load is not None:  # the rows come from another striked: this one starts clean
            p, port, _ = start_striked(build, catalog, data, extra, logf, pidfile)
            try:
                for mk in shape.tables:
                    st, _, d = req(port, "POST", "/v1/tables", mk)
                    assert st == 201, (st, d)
                load_rows(port, shape.load[0], shape.load[1], log)
            finally:
                stop(p, pidfile)
        p, port, gport = start_striked(build, catalog, data, extra, logf, pidfile)
        try:
            tables = []
            if shape.load is None:
                for k in range(clients):
                    for mk in shape.tables:
                        d = mk("rss_%s_%d" % (shape.name, k)) if mk is table_def else mk
                        st, _, out = req(port, "POST", "/v1/tables", d)
                        assert st == 201, (st, out)
                        tables.append(d["name"])
            time.sleep(0.5)
            base = status_kib(p.pid, "VmRSS")
            base_hwm = status_kib(p.pid, "VmHWM")
            sampler = Sampler(p.pid, floor_mib * 1024)
            sampler.start()
            results = [None] * clients
            refused = [0] * clients

            def client(k):
                while True:
                    try:
                        if shape.grpc is not None:
                            st, detail = grpc_call(gport, shape.grpc, shape.body)
                            hdrs, d = {"retry-after": "1"}, detail.encode()
                            if st == "UNAVAILABLE" and "in-flight" in detail:
                                st = 503
                        else:
                            path = shape.path.replace("{table}", tables[k] if tables else "")
                            st, hdrs, d = post_close(port, path, shape.body, shape.content_type)
                    except OSError as e:
                        results[k] = (0, str(e).encode())
                        return
                    if st == 503 and "retry-after" in hdrs:
                        refused[k] += 1
                        time.sleep(float(hdrs["retry-after"]))
                        continue
                    results[k] = (st, d)
                    return

            t0 = time.monotonic()
            ths = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            secs = time.monotonic() - t0
            sampler.stop_ev.set()
            sampler.join()
            hwm = after = 0
            if not sampler.killed:
                hwm = status_kib(p.pid, "VmHWM")
                after = status_kib(p.pid, "VmRSS")
        finally:
            stop(p, pidfile)
    bad = [r for r in results if r is None or r[0] != shape.expect]
    answer = results[0][1][:2000].decode(errors="replace") if results and results[0] else ""
    peak = max(hwm, sampler.peak)
    delta = peak - base
    inflight = len(shape.body) * clients
    return {
        "shape": shape.name, "clients": clients, "body_bytes": len(shape.body), "units": shape.units,
        "unit": shape.unit, "seconds": round(secs, 1),
        "rss_before_kib": base, "hwm_before_kib": base_hwm, "peak_kib": peak, "sampled_peak_kib": sampler.peak,
        "rss_after_kib": after, "delta_kib": delta,
        "expansion": round(delta * 1024 / inflight, 2),
        "bytes_per_unit": round(delta * 1024 / max(shape.units * clients, 1), 1),
        "refused_503": sum(refused), "killed_low_memory": sampler.killed,
        "failed": [(r[0], r[1][:300].decode(errors="replace")) if r else None for r in bad],
        "answer": answer,
    }


class Postgres:
    """A throw-away PostgreSQL (tests/lib/pgfixture.sh) with a database `strike`."""

    def __init__(self, work):
        self.dir = os.path.join(work, "pg")
        self.fixture = os.path.join(SRC, "tests", "lib", "pgfixture.sh")
        psql = sorted(p for p in (os.path.join("/usr/lib/postgresql", v, "bin", "psql")
                                  for v in os.listdir("/usr/lib/postgresql")) if os.path.exists(p))[0]
        subprocess.run([self.fixture, "start", self.dir], check=True, stdout=sys.stderr)
        subprocess.run([psql, "-h", self.dir, "-U", "postgres", "-qc", "CREATE DATABASE strike"], check=True)
        self.catalog = f"postgresql://postgres@/strike?host={self.dir}"

    def stop(self):
        subprocess.run([self.fixture, "stop", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="a build directory with bin/striked (Release)")
    ap.add_argument("--shapes", help="comma-separated shapes [every one but many]; 'all' adds many")
    ap.add_argument("--only", choices=("one", "many"), help="the shapes of issue 13: changes (one) or many")
    ap.add_argument("--clients", type=int, default=32, help="clients of the shape `many` [32]")
    ap.add_argument("--body-mib", type=float, default=64, help="size of the maximal bodies [64]")
    ap.add_argument("--wide-mib", type=float, default=8, help="size of the delete bodies on 1,000 columns [8]")
    ap.add_argument("--erase-keys", type=int, default=10_000_000, help="rows erase_filter erases [10,000,000]")
    ap.add_argument("--floor-mib", type=int, default=3072,
                    help="kill striked when the machine's MemAvailable falls under this [3072]")
    ap.add_argument("--json", help="write the results to this file too")
    ap.add_argument("striked_args", nargs="*", help="after --: more striked options")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if a.only:
        names = ["changes" if a.only == "one" else "many"]
    elif a.shapes in (None, ""):
        names = [s for s in SHAPES if s != "many"]
    elif a.shapes == "all":
        names = list(SHAPES)
    else:
        names = a.shapes.split(",")
    for n in names:
        if n not in SHAPES:
            raise SystemExit("body_rss: unknown shape %s (one of %s)" % (n, ", ".join(SHAPES)))
    if not have_grpc() and any(n.startswith("grpc") for n in names):
        print("body_rss: python3-grpcio is missing: the grpc shapes are skipped", file=sys.stderr)
        names = [n for n in names if not n.startswith("grpc")]
    work = tempfile.mkdtemp(prefix="strike-body-rss-")
    os.chmod(work, 0o755)
    pg = Postgres(work)
    out = []
    try:
        for n in names:
            shape = make_shape(n, a.body_mib, a.wide_mib, a.erase_keys)
            print("body_rss: %s: a body of %d bytes (%.2f MiB), %d %s" % (
                n, len(shape.body), len(shape.body) / MIB, shape.units, shape.unit), file=sys.stderr)
            r = run_shape(build, pg.catalog, work, shape, a.striked_args, a.clients if n == "many" else 1,
                          a.floor_mib, log=lambda m: print("body_rss: " + m, file=sys.stderr))
            out.append(r)
            print(json.dumps(r), file=sys.stderr)
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print("| shape | clients | body | units | RSS before MiB | peak RSS MiB | growth MiB | growth / body bytes "
          "| growth per unit | 503s | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in out:
        size = r["body_bytes"]
        print("| %s | %d | %s | %d %s | %.1f | %.1f | %.1f | %.2fx | %.0f B | %d | %.1f |" % (
            r["shape"], r["clients"], "%.2f MiB" % (size / MIB) if size >= MIB else "%d B" % size, r["units"],
            r["unit"], r["rss_before_kib"] / 1024, r["peak_kib"] / 1024, r["delta_kib"] / 1024, r["expansion"],
            r["bytes_per_unit"], r["refused_503"], r["seconds"]))
    print("striked args: %s" % (" ".join(a.striked_args) or "(defaults)"))
    for r in out:
        if r["killed_low_memory"]:
            print("shape %s: striked was killed when the machine ran short of memory: "
                  "its peak is a lower bound" % r["shape"])
        if r["failed"]:
            kinds = {}
            for f in r["failed"]:
                kinds[str(f)] = kinds.get(str(f), 0) + 1
            print("failed requests in shape %s: %s" % (r["shape"], kinds))
    return 1 if any(r["failed"] for r in out) else 0


if __name__ == "__main__":
    sys.exit(main())
