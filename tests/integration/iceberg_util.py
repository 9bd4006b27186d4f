"""iceberg_util.py - what the Iceberg export and REST catalog tests share
(test_iceberg_export.py, test_iceberg_rest.py, test_iceberg_icebird.py).

- The tests' own Iceberg reader (iceberg_read.mjs: rows, check, avro-dump) run
  as node processes, alone or two at a time.
- A table with a primary key and a column of each type (boolean, int, long,
  double, string, timestamp), and rows of it whose values reach the types'
  edges (2^63-1, -2^31, -0.0, 5e-324, timestamps before 1970, non-ASCII text).
- Rows as strike's /scan answers them and as the reader reads them, turned into
  one form compared exactly: longs as ints, doubles by their bits (float.hex),
  timestamps as microseconds since the epoch.
- The blob store the table lives in, as a local folder: the local store as it
  is; an S3 prefix (moto_server of the s3 fixture) downloaded with boto3 into a
  temp folder, with the --map that turns its s3:// URIs into paths there.
"""
import calendar
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

import harness as h

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "iceberg_read.mjs")
OPENAPI = os.path.join(HERE, "iceberg_openapi.mjs")
BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
BUCKET = "strike-test"

# The only note `check` may make on strike's export: file_format in upper case
# (PARQUET, PUFFIN), as Iceberg Java writes it (a deliberate choice).
ALLOWED_NOTES = {"entry.file-format"}


def require_peers(*names):
    mods = os.path.join(BUILD_DIR, "peers", "node_modules")
    for p in names:
        if not os.path.isdir(os.path.join(mods, p)):
            raise AssertionError(f"npm {p} is not in {mods}: run scripts/test-peers.sh BUILD_DIR")


# --- the reader ---

def node(*args, stdin=None, timeout=300):
    """(exit code, stdout, stderr) of `node iceberg_read.mjs ARGS`."""
    r = subprocess.run(["node", READER, *args], capture_output=True, text=True, input=stdin, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def node_start(*args):
    return subprocess.Popen(["node", READER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def node_wait(p, timeout=300):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def rows_and_check(tc, metadata, maps, snapshot=None):
    """`rows` and `check` of one metadata file, run side by side: (rows per snapshot id
    (int), the check's report). Fails the test when either does not run."""
    extra = ["--snapshot", str(snapshot)] if snapshot is not None else []
    pr = node_start("rows", metadata, *maps, *extra)
    pc = node_start("check", metadata, *maps, *extra)
    rc, out, err = node_wait(pr)
    crc, cout, cerr = node_wait(pc)
    tc.assertEqual(rc, 0, f"rows {metadata}: {err}")
    tc.assertIn(crc, (0, 1), f"check {metadata}: {cerr}")
    rep = json.loads(cout)
    tc.assertEqual(crc == 0, rep["ok"], cerr)
    return {int(k): v for k, v in json.loads(out)["snapshots"].items()}, rep


def rows_of(tc, metadata, maps, snapshot=None):
    extra = ["--snapshot", str(snapshot)] if snapshot is not None else []
    rc, out, err = node("rows", metadata, *maps, *extra)
    tc.assertEqual(rc, 0, f"rows {metadata}: {err}")
    return {int(k): v for k, v in json.loads(out)["snapshots"].items()}


def assert_check_clean(tc, rep, what):
    """No failure, and no note but the upper-case file format."""
    tc.assertTrue(rep["ok"], f"{what}: {json.dumps(rep['failures'], indent=1)[:6000]}")
    tc.assertEqual(rep["failures"], [])
    notes = {n["check"] for n in rep["notes"]}
    tc.assertLessEqual(notes, ALLOWED_NOTES, f"{what}: {json.dumps(rep['notes'], indent=1)[:3000]}")


def avro_dump(tc, paths):
    """avro-dump of several files: {path: document}."""
    paths = list(paths)
    if not paths:
        return {}
    out = {}
    # a few hundred paths per process (the command line's length)
    for i in range(0, len(paths), 200):
        part = paths[i:i + 200]
        rc, text, err = node("avro-dump", *part)
        tc.assertEqual(rc, 0, err)
        docs = [json.loads(line) for line in text.splitlines() if line]
        tc.assertEqual(len(docs), len(part))
        out.update(zip(part, docs))
    return out


# --- the table and its rows ---

ALL_TYPES = {
    "name": "every_type",
    "columns": [{"name": "id", "type": "long", "required": True},
                {"name": "b", "type": "boolean"},
                {"name": "i", "type": "int"},
                {"name": "l", "type": "long"},
                {"name": "d", "type": "double"},
                {"name": "s", "type": "string"},
                {"name": "ts", "type": "timestamp"}],
    "primary_key": ["id"],
}
COLUMNS = [c["name"] for c in ALL_TYPES["columns"]]
TYPES = {c["name"]: c["type"] for c in ALL_TYPES["columns"]}

# (no double beyond 2^63: the catalog's jsonb prints those as integer digits, which the export's
# JSON parser refuses, and the file then has no column statistics: test_iceberg_export's Statistics)
DOUBLES = [0.1, -0.0, 5e-324, 9.2e18, -1 / 3, 2.5e-7, 1e16 + 2, -123456.789, 0.0, 3.0]
INTS = [-2 ** 31, 2 ** 31 - 1, 0, -1, 7]
LONGS = [2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1, -(2 ** 53) - 3, 1]


def table_def(name):
    d = json.loads(json.dumps(ALL_TYPES))
    d["name"] = name
    return d


def mkrow(k, v=0):
    """Row k of version v: every column set from k and v, with nulls here and there."""
    j = (k + v) % 5
    return {
        "id": k,
        "b": None if k % 7 == 3 else (k + v) % 2 == 0,
        "i": None if k % 11 == 5 else (INTS[j] if j < 2 else (k * 1000 + v) * (-1 if k % 2 else 1)),
        "l": None if k % 13 == 6 else (LONGS[j] - k if j == 0 else LONGS[j] + k if j == 1 else LONGS[j] + k * (v + 1)),
        "d": None if k % 9 == 4 else DOUBLES[(k + v) % len(DOUBLES)] * (1 if k % 4 else -1),
        "s": None if k % 10 == 7 else ("" if k % 17 == 8 else f"row {k} v{v} \u00fc\u20ac\U0001F600 \"q\""),
        # microseconds; negative ones are before 1970
        "ts": None if k % 8 == 5 else (k - 20) * 86_400_000_001 + v * 1_000_003,
    }


_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z$")


def micros(text):
    """RFC 3339 (strike's output: microseconds and Z) to microseconds since the epoch."""
    m = _TS.match(text)
    if not m:
        raise AssertionError(f"not an RFC 3339 UTC timestamp: {text!r}")
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    frac = (m.group(7) or "").ljust(6, "0")
    if len(frac) > 6:
        raise AssertionError(f"more than microseconds: {text!r}")
    return calendar.timegm((y, mo, d, hh, mm, ss, 0, 0, 0)) * 1_000_000 + int(frac)


def _value(t, v):
    if v is None:
        return None
    if t in ("long", "int"):
        return int(v)
    if t == "double":
        return float(v).hex()  # exact, -0.0 included ("NaN", "-0.0"... from the reader too)
    if t in ("timestamp", "timestamptz"):
        return int(v) if not isinstance(v, str) or not v.endswith("Z") else micros(v)
    if t == "boolean":
        if not isinstance(v, bool):
            raise AssertionError(f"not a boolean: {v!r}")
        return v
    if t == "string":
        return str(v)
    raise AssertionError(f"type {t}")


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r))


def norm_scan(rows, columns=COLUMNS, types=TYPES):
    """/scan's NDJSON rows (dicts) in the compared form, sorted."""
    out = []
    for r in rows:
        if set(r) != set(columns):
            raise AssertionError(f"scan row with columns {sorted(r)}, expected {columns}")
        out.append([_value(types[c], r[c]) for c in columns])
    return _sorted(out)


def norm_reader(snap, columns=COLUMNS, types=TYPES):
    """One snapshot of the reader's `rows` in the compared form, sorted; its
    columns and types must be the table's (Iceberg names: timestamptz)."""
    iceberg = {"timestamp": "timestamptz"}
    if snap["columns"] != list(columns):
        raise AssertionError(f"reader columns {snap['columns']}, expected {columns}")
    want = [iceberg.get(types[c], types[c]) for c in columns]
    if snap["types"] != want:
        raise AssertionError(f"reader types {snap['types']}, expected {want}")
    return _sorted([[_value(t, v) for t, v in zip(snap["types"], r)] for r in snap["rows"]])


def scan_at(tc, s, table, seq, body=None):
    b = {"snapshot": seq}
    b.update(body or {})
    r = s.req("POST", f"/v1/tables/{table}/scan", b)
    tc.assertEqual(r.status, 200, r)
    tc.assertEqual(r.header("Strike-Snapshot"), str(seq))
    return r.ndjson()


def retained(tc, s, table):
    r = s.req("GET", f"/v1/tables/{table}/snapshots?limit=1000")
    tc.assertEqual(r.status, 200, r)
    doc = r.json()
    tc.assertIsNone(doc["next"])
    return [x["seq"] for x in doc["snapshots"]]


# --- Iceberg single-value encodings (format/spec.md Appendix D), for column bounds ---

def encode_long(v):
    return struct.pack("<q", v).hex()


def encode_double(v):
    return struct.pack("<d", v).hex()


def encode_string(v):
    return v.encode().hex()


def bounds_of(doc):
    """Every (field id, hex value) of lower_bounds/upper_bounds in an avro-dump of a
    manifest, whatever form the map takes (Iceberg writes int-keyed maps as arrays of
    {key, value} records)."""
    out = []

    def walk(x, inside=False):
        if isinstance(x, dict):
            if inside and set(x) >= {"key", "value"}:
                out.append((x["key"], x["value"]))
                return
            for k, v in x.items():
                walk(v, inside or k in ("lower_bounds", "upper_bounds"))
        elif isinstance(x, list):
            for v in x:
                walk(v, inside)
    walk(doc.get("records", []))
    return out


# --- the blob store as a local folder ---

class Store:
    """Where striked `s` keeps its blobs, readable as local files.

    local(): the blob store root on disk; maps(): the reader's --map arguments for
    the table's URIs. On S3, refresh() downloads the server's prefix anew."""

    def __init__(self, s):
        self.s = s
        self.s3 = s.data_dir.startswith("s3://")
        self.tmp = None
        if self.s3:
            rest = s.data_dir[len("s3://"):]
            bucket, _, self.prefix = rest.partition("/")
            assert bucket == BUCKET, s.data_dir
            self.tmp = h.tmpdir("strike-iceberg-s3-")

    def refresh(self):
        if not self.s3:
            return
        dst = os.path.join(self.tmp, "copy")
        os.makedirs(dst, exist_ok=True)
        download_prefix(self.prefix.rstrip("/") + "/", dst)

    def root(self):
        """The blob store root as a local folder."""
        if self.s3:
            return os.path.join(self.tmp, "copy", self.prefix)
        return self.s.data_dir

    def maps(self):
        if self.s3:
            return ["--map", f"s3://{BUCKET}/={os.path.join(self.tmp, 'copy')}/"]
        return []

    def uri_root(self):
        """The blob store root's URI, as the table's paths start."""
        if self.s3:
            return f"s3://{BUCKET}/{self.prefix}"
        return "file://" + os.path.realpath(self.s.data_dir)

    def local(self, uri):
        """The local path of one of the store's URIs."""
        root = self.uri_root()
        if not uri.startswith(root + "/"):
            raise AssertionError(f"{uri} is not under {root}")
        return os.path.join(self.root(), uri[len(root) + 1:])

    def close(self):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


# The folder mirrors the prefix: objects are downloaded when new or changed (their ETag,
# remembered in DST/.etags.json), local files no longer in the bucket are removed.
_DOWNLOAD = r"""
import json, os, sys
import boto3
endpoint, bucket, prefix, dst = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
memo = os.path.join(dst, ".etags.json")
try:
    with open(memo) as f:
        etags = json.load(f)
except OSError:
    etags = {}
seen, n = {}, 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
    for o in page.get("Contents", []):
        k = o["Key"]
        seen[k] = o["ETag"]
        p = os.path.join(dst, k)
        if etags.get(k) == o["ETag"] and os.path.exists(p):
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        s3.download_file(bucket, k, p)
        n += 1
for k in set(etags) - set(seen):
    try:
        os.unlink(os.path.join(dst, k))
    except FileNotFoundError:
        pass
with open(memo, "w") as f:
    json.dump(seen, f)
print(n)
"""

_UPLOAD = r"""
import sys
import boto3
endpoint, bucket, key, src = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
s3.upload_file(src, bucket, key)
"""


def boto_python():
    """The python3 with boto3: the one the s3 fixture runs moto_server with (moto needs
    boto3), not necessarily the tests' /usr/bin/python3."""
    p = shutil.which("python3")
    if not p:
        raise AssertionError("no python3 on PATH (the s3 fixture's)")
    return p


def download_prefix(prefix, dst):
    r = subprocess.run([boto_python(), "-c", _DOWNLOAD, h.s3_endpoint(), BUCKET, prefix, dst],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"boto3 download of s3://{BUCKET}/{prefix}: {r.stderr[-3000:]}")
    return int(r.stdout.strip() or 0)


def upload(key, src):
    r = subprocess.run([boto_python(), "-c", _UPLOAD, h.s3_endpoint(), BUCKET, key, src],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"boto3 upload of s3://{BUCKET}/{key}: {r.stderr[-3000:]}")


def db_name(base, argv):
    """A database of its own for each part of a test file ctest runs (its class names in
    argv), so that two parts may run at once."""
    parts = [a.lower() for a in argv[1:] if a.isidentifier()]
    return "_".join([base] + parts)


def table_files(root, uuid, kind):
    """The names of the table's blobs of one kind (data, dv, metadata) in a local folder."""
    d = os.path.join(root, "tables", uuid, kind)
    if not os.path.isdir(d):
        return set()
    return {f for f in os.listdir(d) if ".tmp." not in f}


# --- Puffin (format/puffin-spec.md) ---

PUFFIN_MAGIC = b"PFA1"


def puffin_footer(data):
    """The footer payload (JSON) of a Puffin file's bytes."""
    if data[:4] != PUFFIN_MAGIC or data[-4:] != PUFFIN_MAGIC:
        raise AssertionError("not a Puffin file (magic)")
    size = struct.unpack("<i", data[-12:-8])[0]
    flags = data[-8:-4]
    if flags[0] & 1:
        raise AssertionError("compressed Puffin footer")
    start = len(data) - 12 - size
    if data[start - 4:start] != PUFFIN_MAGIC:
        raise AssertionError("Puffin footer magic")
    return json.loads(data[start:start + size])


def puffin_write(blobs):
    """A Puffin file of blobs [(bytes, metadata dict without offset/length)], uncompressed."""
    out = bytearray(PUFFIN_MAGIC)
    metas = []
    for data, meta in blobs:
        m = dict(meta)
        m["offset"], m["length"] = len(out), len(data)
        metas.append(m)
        out += data
    payload = json.dumps({"blobs": metas, "properties": {"created-by": "strike tests (legacy Puffin)"}}).encode()
    out += PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\0\0\0\0" + PUFFIN_MAGIC
    return bytes(out)


def tmp_file(data, suffix):
    fd, p = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return p
