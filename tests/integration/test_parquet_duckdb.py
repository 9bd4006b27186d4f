"""Parquet interop with a real engine: DuckDB 1.5 (the npm peer) and strike.

- DuckDB reads files strike writes (`strike parquet write`), with
  read_parquet(f, file_row_number=true): every value and every position equals
  what we wrote; every type with nulls, extreme values, 0 rows, 1 row, several
  row groups, strings up to 1 MiB, both codecs, with and without dictionaries;
  DuckDB also sees our statistics and key/value metadata.
- strike reads files DuckDB writes (the peers' table from tests/peers/lib/gen.mjs
  and one with every type and nulls, as Parquet v1 and v2, ZSTD, SNAPPY and
  uncompressed) and the arrow-rs fixtures (class ParquetInterop), and the
  Spark/Databricks files of the Delta tables in STRIKE_TESTDATA_DIR (class
  SparkFiles): `strike parquet cat` prints what DuckDB reads, row for row.
- Types strike does not read are listed by `meta` and refused by `cat` by name.

Needs STRIKE_BIN_DIR, STRIKE_BUILD_DIR (DuckDB in BUILD_DIR/peers: scripts/test-peers.sh)
and, for SparkFiles, STRIKE_TESTDATA_DIR (../shared/testdata by default), all set by
ctest; without them the test fails. ctest runs the classes as two tests:
test_parquet_duckdb (ParquetInterop) and test_parquet_duckdb_spark (SparkFiles, label
`fixtures`: not run when STRIKE_TESTDATA_DIR is absent).
"""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import unittest

BIN_DIR = os.environ.get("STRIKE_BIN_DIR", "")
BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
TESTDATA_DIR = os.environ.get("STRIKE_TESTDATA_DIR", "")
SOURCE_DIR = os.environ.get("STRIKE_SOURCE_DIR", "")
HERE = os.path.dirname(os.path.abspath(__file__))
NODE_HELPER = os.path.join(HERE, "parquet_duckdb.mjs")
STRIKE = os.path.join(BIN_DIR, "strike")


def require_env():
    for name, val in (("STRIKE_BIN_DIR", BIN_DIR), ("STRIKE_BUILD_DIR", BUILD_DIR)):
        if not val:
            raise RuntimeError(f"{name} is not set: run this test through ctest")
    if not os.path.exists(STRIKE):
        raise RuntimeError(f"no strike binary at {STRIKE}")
    if not os.path.isdir(os.path.join(BUILD_DIR, "peers", "node_modules", "@duckdb", "node-api")):
        raise RuntimeError(f"DuckDB is not installed: run scripts/test-peers.sh {BUILD_DIR}")


def node(*args, timeout=600):
    r = subprocess.run(["node", NODE_HELPER, *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"node {args[0]} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def strike(*args, stdin=None, check=True):
    r = subprocess.run([STRIKE, "parquet", *args], input=stdin, capture_output=True, text=True,
                       timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"strike parquet {args[0]} failed ({r.returncode}): {r.stderr}")
    return r


# ---- values ----

def days_from_civil(y, m, d):
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def rfc3339_us(s):
    m = re.fullmatch(r"([+-]?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{6})Z", s)
    if not m:
        raise AssertionError(f"not an RFC 3339 timestamp with microseconds: {s!r}")
    y, mo, d, hh, mi, ss, frac = (int(x) for x in m.groups())
    return ((days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss) * 1000000) + frac


def norm(kind, v):
    """A comparable form of a value of a DuckDB type."""
    if v is None:
        return None
    if kind in ("DOUBLE", "FLOAT"):
        f = float(v)  # "NaN", "Infinity", "-Infinity", "-0.0" included
        return ("nan",) if math.isnan(f) else (f, math.copysign(1.0, f))
    if kind.startswith("TIMESTAMP"):
        return rfc3339_us(v) if isinstance(v, str) else int(v)
    if kind in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UINTEGER", "USMALLINT", "UTINYINT"):
        return int(v)
    if kind == "BOOLEAN":
        assert isinstance(v, bool), v
        return v
    if kind == "VARCHAR":
        assert isinstance(v, str), v
        return v
    raise AssertionError(f"no comparison for DuckDB type {kind}")


def parse_int(s):
    return -0.0 if s == "-0" else int(s)  # "-0" is a double (%g of -0.0)


def duck_read(path):
    lines = node("read", path).splitlines()
    cols = json.loads(lines[0])["columns"]
    rows = [json.loads(line) for line in lines[1:]]
    return cols, rows


def strike_cat(path, columns=None):
    args = ["cat", path] + (["--columns", ",".join(columns)] if columns else [])
    out = strike(*args).stdout
    return [json.loads(line, parse_int=parse_int) for line in out.splitlines()]


class DuckDBCompare(unittest.TestCase):
    """What both test classes share: a scratch folder, and a file read by both."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="strike-pq-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    # -- comparing a file as DuckDB and strike read it --

    def assert_same_as_duckdb(self, path, expect_rows=None):
        cols, drows = duck_read(path)
        names = [c[0] for c in cols]
        kinds = [c[1] for c in cols]
        srows = strike_cat(path)
        self.assertEqual(len(srows), len(drows), path)
        if expect_rows is not None:
            self.assertEqual(len(drows), expect_rows, path)
        for pos, (d, s) in enumerate(zip(drows, srows)):
            self.assertEqual(d[0], pos, f"{path}: DuckDB's file_row_number")
            self.assertEqual(list(s.keys()), names, path)
            for k, (name, kind) in enumerate(zip(names, kinds)):
                a, b = norm(kind, d[k + 1]), norm(kind, s[name])
                if a != b:
                    self.fail(f"{path} position {pos} column {name}: DuckDB {d[k + 1]!r}, strike {s[name]!r}")
        return names, drows


class ParquetInterop(DuckDBCompare):
    # -- files we write, DuckDB reads --

    SCHEMA = [
        {"name": "id", "type": "long", "required": True},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "low", "type": "string", "required": True},
        {"name": "ts", "type": "timestamp"},
    ]
    SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 5e-324,
               -1.7976931348623157e308, 1.7976931348623157e308]

    @classmethod
    def row(cls, i):
        def i32(x):
            x &= 0xFFFFFFFF
            return x - (1 << 32) if x >= 1 << 31 else x
        k13 = i % 13
        s17 = i % 17
        return {
            "id": i,
            "b": None if i % 7 == 3 else (i * 31) % 3 == 0,
            "i": None if i % 5 == 1 else (-2**31 if i % 997 == 0 else 2**31 - 1 if i % 997 == 2
                                          else 0 if i % 997 == 3 else i32(i * 2654435761)),
            "l": None if i % 8 == 5 else (-2**63 if i % 991 == 0 else 2**63 - 1 if i % 991 == 1
                                          else -1 if i % 991 == 2 else i * 1000003 - 2**40),
            "d": None if i % 4 == 0 else (cls.SPECIAL[k13 - 1] if 1 <= k13 <= 8 else i / 3 - 1000),
            "s": None if i % 6 == 0 else ("" if s17 == 1 else "ü€𝄞%d" % i if s17 == 2
                                          else 'q"b\\t\tn\nc\x01-%d' % i if s17 == 3 else "row-%d" % i),
            "low": ["alpha", "beta", "gamma", "δέλτα"][i % 4],
            "ts": None if i % 9 == 0 else (i - 500) * 86400000000 * 37 + i,
        }

    @staticmethod
    def ndjson(rows):
        def enc(v):
            if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
                return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            return v
        return "".join(json.dumps({k: enc(v) for k, v in r.items()}) + "\n" for r in rows)

    def write(self, name, rows, schema=None, *opts):
        path = self.path(name)
        strike("write", "--schema", json.dumps(schema or self.SCHEMA), *opts, path,
               stdin=self.ndjson(rows))
        return path

    def check_duckdb_reads(self, path, rows, schema=None):
        schema = schema or self.SCHEMA
        cols, drows = duck_read(path)
        self.assertEqual([c[0] for c in cols], [c["name"] for c in schema])
        kinds = [c[1] for c in cols]
        want_kind = {"long": "BIGINT", "int": "INTEGER", "boolean": "BOOLEAN", "double": "DOUBLE",
                     "string": "VARCHAR", "timestamp": "TIMESTAMP WITH TIME ZONE"}
        self.assertEqual(kinds, [want_kind[c["type"]] for c in schema])
        self.assertEqual(len(drows), len(rows))
        for pos, (d, want) in enumerate(zip(drows, rows)):
            self.assertEqual(d[0], pos)
            for k, c in enumerate(schema):
                a, b = norm(kinds[k], d[k + 1]), norm(kinds[k], want[c["name"]])
                if a != b:
                    self.fail(f"{path} position {pos} column {c['name']}: DuckDB {d[k + 1]!r}, wrote {want[c['name']]!r}")
        # and strike reads back the same
        srows = strike_cat(path)
        self.assertEqual(len(srows), len(rows))
        for pos, (s, want) in enumerate(zip(srows, rows)):
            for k, c in enumerate(schema):
                if norm(kinds[k], s[c["name"]]) != norm(kinds[k], want[c["name"]]):
                    self.fail(f"{path} position {pos} column {c['name']}: strike {s[c['name']]!r}")

    def test_duckdb_reads_our_files(self):
        rows = [self.row(i) for i in range(25000)]
        variants = [("zstd_dict.parquet", ["--row-group-rows", "7000", "--kv", "strike.table_id=t1"]),
                    ("plain.parquet", ["--row-group-rows", "10000", "--compression", "none",
                                       "--no-dictionary"]),
                    ("zstd19.parquet", ["--zstd-level", "19"])]
        for name, opts in variants:
            with self.subTest(variant=name):
                path = self.write(name, rows, None, *opts)
                self.check_duckdb_reads(path, rows)
        # DuckDB sees our statistics, row groups and key/value metadata
        meta = [json.loads(line) for line in node("meta", self.path("zstd_dict.parquet")).splitlines()]
        ids = sorted((int(m["row_group_id"]), m) for m in meta if m["path_in_schema"] == "id")
        self.assertEqual(len(ids), 4)
        for g, m in ids:
            self.assertEqual(int(m["stats_min_value"]), 0 if g == 0 else 7000 * g)
            self.assertEqual(int(m["stats_max_value"]), min(7000 * (g + 1), 25000) - 1)
            self.assertEqual(int(m["stats_null_count"]), 0)
        ls = [m for m in meta if m["path_in_schema"] == "l" and int(m["row_group_id"]) == 0]
        self.assertEqual(int(ls[0]["stats_min_value"]), -2**63)
        self.assertEqual(int(ls[0]["stats_max_value"]), 2**63 - 1)
        lows = [m for m in meta if m["path_in_schema"] == "low"]
        self.assertTrue(all("RLE_DICTIONARY" in m["encodings"] for m in lows), lows)
        self.assertTrue(all(m["stats_min_value"] == "alpha" and m["stats_max_value"] == "δέλτα"
                            for m in lows))
        meta_out = strike("meta", self.path("zstd_dict.parquet")).stdout
        self.assertIn('"strike.table_id" = "t1"', meta_out)
        self.assertIn("created_by: \"strike version ", meta_out)

    def test_zero_and_one_row(self):
        path = self.write("empty.parquet", [])
        self.check_duckdb_reads(path, [])
        self.assertIn("rows: 0\nrow groups: 0", strike("meta", path).stdout)
        for i in (0, 4, 12):  # nulls in different columns
            row = [self.row(i)]
            path = self.write("one-%d.parquet" % i, row)
            self.check_duckdb_reads(path, row)

    def test_long_strings(self):
        schema = [{"name": "k", "type": "int", "required": True}, {"name": "s", "type": "string"}]
        mib = 1 << 20
        vals = ["", "x", "é" * 500, "a" * 65536, "z" * mib, "€" * (mib // 3), "𝄞" * (mib // 4), None,
                "b" * (mib - 1) + "c"]
        rows = [{"k": i, "s": v} for i, v in enumerate(vals)]
        path = self.write("long.parquet", rows, schema, "--row-group-rows", "4")
        self.check_duckdb_reads(path, rows, schema)
        # statistics stay short: bounds, not 1 MiB copies
        meta = [json.loads(line) for line in node("meta", path).splitlines()]
        for m in meta:
            if m["path_in_schema"] == "s" and m["stats_max_value"] is not None:
                self.assertLessEqual(len(m["stats_max_value"].encode()), 68)
        # a string over 1 MiB is refused with the line and column
        r = strike("write", "--schema", json.dumps(schema), self.path("over.parquet"),
                   stdin=json.dumps({"k": 1, "s": "y" * (mib + 1)}) + "\n", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 1", r.stderr)
        self.assertIn("'s'", r.stderr)
        self.assertFalse(os.path.exists(self.path("over.parquet")))

    # -- files DuckDB writes, we read --

    def test_we_read_duckdb_peers_table(self):
        path = self.path("peers.parquet")
        node("peers", "300000", path)
        names, drows = self.assert_same_as_duckdb(path, 300000)
        self.assertEqual(names, ["id", "user_id", "amount", "status", "payload"])
        for pos, d in enumerate(drows):
            self.assertEqual(d[1], pos)  # id equals the row position
        meta = strike("meta", path, "--scan").stdout
        self.assertIn("row groups: 3", meta)
        self.assertIn("PLAIN_DICTIONARY", meta)

    TYPES_SQL = """
        SELECT CASE WHEN i % 7 = 3 THEN NULL ELSE (i * 31) % 3 = 0 END AS b,
               CASE WHEN i % 5 = 1 THEN NULL WHEN i % 997 = 0 THEN -2147483648
                    WHEN i % 997 = 2 THEN 2147483647 ELSE (i * 7919) % 100003 - 50000 END::INTEGER AS i32,
               (i % 100 - 50)::TINYINT AS i8, (i * 7 % 60000 - 30000)::SMALLINT AS i16,
               CASE WHEN i % 8 = 5 THEN NULL WHEN i % 991 = 0 THEN -9223372036854775808
                    WHEN i % 991 = 1 THEN 9223372036854775807
                    ELSE i * 1000003 - 1099511627776 END::BIGINT AS i64,
               CASE WHEN i % 4 = 0 THEN NULL WHEN i % 13 = 1 THEN 'NaN'::DOUBLE
                    WHEN i % 13 = 2 THEN 'inf'::DOUBLE WHEN i % 13 = 3 THEN '-inf'::DOUBLE
                    WHEN i % 13 = 5 THEN '-0.0'::DOUBLE ELSE i / 3 - 1000 END AS d,
               CASE WHEN i % 3 = 0 THEN NULL ELSE (i / 7)::FLOAT END AS f,
               CASE WHEN i % 6 = 0 THEN NULL WHEN i % 17 = 1 THEN ''
                    WHEN i % 17 = 2 THEN 'ü€𝄞' || i ELSE 'row-' || i END AS s,
               (['alpha', 'beta', 'gamma', 'δέλτα'])[1 + i % 4] AS low,
               CASE WHEN i % 9 = 0 THEN NULL
                    ELSE make_timestamp(((i - 500) * 86400000000 * 37 + i)::BIGINT)::TIMESTAMPTZ END AS ts,
               make_timestamp((i * 1000001)::BIGINT) AS ts_local,
               make_timestamp((i * 1000001)::BIGINT)::TIMESTAMP_MS AS ts_ms
        FROM range(20000) t(i)"""

    def test_we_read_duckdb_types(self):
        variants = {
            "v1_zstd": "COMPRESSION zstd",
            "v2_zstd": "COMPRESSION zstd, PARQUET_VERSION V2",
            "v1_snappy_small_groups": "COMPRESSION snappy, ROW_GROUP_SIZE 3000",
            "v2_uncompressed": "COMPRESSION uncompressed, PARQUET_VERSION V2",
        }
        for name, opts in variants.items():
            with self.subTest(variant=name):
                path = self.path(f"duck_{name}.parquet")
                node("copy", path, opts, self.TYPES_SQL)
                self.assert_same_as_duckdb(path, 20000)
        scan = strike("meta", self.path("duck_v2_zstd.parquet"), "--scan").stdout
        for enc in ("DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "BYTE_STREAM_SPLIT",
                    "RLE_DICTIONARY"):
            self.assertIn(enc, scan.splitlines()[-1])

    def test_we_read_arrow_files(self):
        files = sorted(glob.glob(os.path.join(HERE, "parquet_fixtures", "*.parquet")))
        rows = 0
        for f in files:
            with self.subTest(file=os.path.basename(f)):
                _, drows = self.assert_same_as_duckdb(f)
                rows += len(drows)
        self.assertEqual(rows, 4 * 3000)  # 4 fixtures of 3000 rows (gen.mjs)

    def test_unsupported_types_are_named(self):
        path = self.path("unsupported.parquet")
        node("copy", path, "", """SELECT i::BIGINT AS id, DATE '2024-01-01' + i::INTEGER AS day,
                                   (i / 100)::DECIMAL(10, 2) AS price, 'ab'::BLOB AS raw,
                                   [i, i + 1] AS list, {'a': i} AS rec, (i % 200)::UTINYINT AS u8,
                                   i::UBIGINT AS u64, make_timestamp(i::BIGINT)::TIMESTAMP_NS AS ns
                                   FROM range(10) t(i)""")
        meta = strike("meta", path).stdout
        self.assertIn('"id": long', meta)
        for what in ("DATE", "DECIMAL(10,2)", "BYTE_ARRAY (binary", "nested column", "UINT_64"):
            self.assertIn(what, meta)
        r = strike("cat", path, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unsupported type", r.stderr)
        r = strike("cat", path, "--columns", "day", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("'day'", r.stderr)
        self.assertIn("DATE", r.stderr)
        # the readable columns still read
        rows = strike_cat(path, ["id", "u8", "ns"])
        self.assertEqual([r["id"] for r in rows], list(range(10)))
        self.assertEqual([r["u8"] for r in rows], list(range(10)))
        self.assertEqual([rfc3339_us(r["ns"]) for r in rows], list(range(10)))  # ns floored to us

    def test_cli_errors(self):
        bad = self.path("bad.parquet")
        with open(bad, "wb") as f:
            f.write(b"PAR1" + b"\0" * 100 + b"PAR1")
        r = strike("meta", bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("footer", r.stderr)
        r = strike("cat", self.path("missing.parquet"), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot open", r.stderr)
        self.assertEqual(strike("cat", check=False).returncode, 2)
        self.assertEqual(strike("frobnicate", check=False).returncode, 2)
        self.assertEqual(strike("cat", bad, "--limit", "x", check=False).returncode, 2)
        r = strike("write", "--schema", '[{"name":"a","type":"int","required":true}]',
                   self.path("w.parquet"), stdin='{"a": null}\n', check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("required", r.stderr)
        path = self.write("limit.parquet", [self.row(i) for i in range(50)])
        self.assertEqual(len(strike("cat", path, "--limit", "7").stdout.splitlines()), 7)
        self.assertEqual(strike("cat", path, "--limit", "0").stdout, "")
        r = strike("cat", path, "--columns", "id,nope", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'nope'", r.stderr)
        self.assertIn("--columns", strike("--help").stdout)


class SparkFiles(DuckDBCompare):
    """The Parquet files of the upstream Delta tables (Spark / Databricks Runtime)."""

    @classmethod
    def setUpClass(cls):
        if not TESTDATA_DIR:
            raise RuntimeError("STRIKE_TESTDATA_DIR is not set: run this test through ctest")
        if not os.path.isfile(os.path.join(TESTDATA_DIR, "MANIFEST.md")):
            raise RuntimeError(f"{TESTDATA_DIR}/MANIFEST.md is missing: the fixtures are not there")
        super().setUpClass()

    def test_we_read_spark_files(self):
        files = []
        for table in ("delta", "delta-kernel-rs"):
            files += sorted(glob.glob(os.path.join(TESTDATA_DIR, table, "**", "*.parquet"),
                                      recursive=True))
        self.assertEqual(len(files), 25, "delta/ and delta-kernel-rs/ should hold 25 Parquet files")
        rows = 0
        for f in files:
            with self.subTest(file=os.path.basename(f)):
                _, drows = self.assert_same_as_duckdb(f)
                rows += len(drows)
        # MANIFEST: 10 + 5 + 5 rows in delta-kernel-rs, 2004 in table-with-dv-large
        self.assertEqual(rows, 10 + 10 + 2004)


if __name__ == "__main__":
    require_env()
    unittest.main(verbosity=2)
