"""Avro container files against an independent implementation: npm avsc 5.7.9.

- avsc reads what storage/iceberg/avro.h writes (avro_sample write: random values of every
  type for Iceberg's manifest and manifest-list schemas with their field ids): the same
  records, the metadata keys in the order given, and `avro.schema` byte for byte the schema
  text we gave (field-id, element-id, logicalType, doc with escapes all intact); one block
  and many; avsc checks every sync marker.
- We read what avsc writes (avro_sample dump of avsc's own encoding of those records, in
  many small blocks): the same records.
- The bytes are deterministic and the sync marker is the first 16 bytes of the SHA-256 of
  the header before it; avsc refuses our file with a sync marker changed.

Needs STRIKE_BIN_DIR (avro_sample) and STRIKE_BUILD_DIR (avsc in BUILD_DIR/peers:
scripts/test-peers.sh), both set by ctest; without them the test fails.
"""
import hashlib
import json
import os
import subprocess
import tempfile
import unittest

BIN_DIR = os.environ.get("STRIKE_BIN_DIR", "")
BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
HERE = os.path.dirname(os.path.abspath(__file__))
NODE_HELPER = os.path.join(HERE, "avro_decode.mjs")
SAMPLE = os.path.join(BIN_DIR, "avro_sample")

# Iceberg v3's manifest_entry (format/spec.md "Manifests"), written as Iceberg Java writes
# it: optional fields as unions with null first, maps with int keys as arrays of key/value
# records with logicalType "map", lists with element-id. Odd spacing, a doc with escapes
# and non-ASCII, so that byte-for-byte survival of the text means something. The record
# x_types adds the types manifests do not use (enum, float, double, a map with string keys,
# a union of several branches, a recursive record).
MANIFEST_SCHEMA = """{
  "type" : "record",  "name" : "manifest_entry",
  "fields" : [ {
    "name" : "status", "type" : "int", "field-id" : 0
  }, {
    "name" : "snapshot_id", "type" : [ "null", "long" ], "default" : null, "field-id" : 1
  }, {
    "name" : "sequence_number", "type" : [ "null", "long" ], "default" : null, "field-id" : 3
  }, {
    "name" : "file_sequence_number", "type" : [ "null", "long" ], "default" : null,
    "field-id" : 4
  }, {
    "name" : "data_file",
    "type" : {
      "type" : "record", "name" : "r2",
      "fields" : [
        {"name": "content", "type": "int", "doc": "Contents of the file: 0=data, 1=position deletes, 2=equality deletes", "field-id": 134},
        {"name": "file_path", "type": "string", "doc": "Location URI with FS scheme \\"s3://\\" or caf\\u00e9 or caf\u00e9 \\ud83d\\ude00", "field-id": 100},
        {"name": "file_format", "type": "string", "doc": "File format name: avro, orc, or parquet", "field-id": 101},
        {"name": "partition", "type": {"type": "record", "name": "r102", "fields": [
          {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": null, "field-id": 1000},
          {"name": "id_bucket", "type": ["null", "int"], "default": null, "field-id": 1001},
          {"name": "uuid", "type": ["null", {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}], "default": null, "field-id": 1002},
          {"name": "ts_hour", "type": ["null", {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": true}], "default": null, "field-id": 1003},
          {"name": "flag", "type": ["null", "boolean"], "default": null, "field-id": 1004},
          {"name": "name", "type": ["null", "string"], "default": null, "field-id": 1005},
          {"name": "raw", "type": ["null", "bytes"], "default": null, "field-id": 1006}
        ]}, "doc": "Partition data tuple, schema based on the partition spec", "field-id": 102},
        {"name": "record_count", "type": "long", "doc": "Number of records in the file", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "doc": "Total file size in bytes", "field-id": 104},
        {"name": "column_sizes", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k117_v118", "fields": [{"name": "key", "type": "int", "field-id": 117}, {"name": "value", "type": "long", "field-id": 118}]}, "logicalType": "map"}], "doc": "Map of column id to total size on disk", "default": null, "field-id": 108},
        {"name": "value_counts", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k119_v120", "fields": [{"name": "key", "type": "int", "field-id": 119}, {"name": "value", "type": "long", "field-id": 120}]}, "logicalType": "map"}], "default": null, "field-id": 109},
        {"name": "null_value_counts", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k121_v122", "fields": [{"name": "key", "type": "int", "field-id": 121}, {"name": "value", "type": "long", "field-id": 122}]}, "logicalType": "map"}], "default": null, "field-id": 110},
        {"name": "nan_value_counts", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k138_v139", "fields": [{"name": "key", "type": "int", "field-id": 138}, {"name": "value", "type": "long", "field-id": 139}]}, "logicalType": "map"}], "default": null, "field-id": 137},
        {"name": "lower_bounds", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k126_v127", "fields": [{"name": "key", "type": "int", "field-id": 126}, {"name": "value", "type": "bytes", "field-id": 127}]}, "logicalType": "map"}], "default": null, "field-id": 125},
        {"name": "upper_bounds", "type": ["null", {"type": "array", "items": {"type": "record", "name": "k129_v130", "fields": [{"name": "key", "type": "int", "field-id": 129}, {"name": "value", "type": "bytes", "field-id": 130}]}, "logicalType": "map"}], "default": null, "field-id": 128},
        {"name": "key_metadata", "type": ["null", "bytes"], "default": null, "field-id": 131},
        {"name": "split_offsets", "type": ["null", {"type": "array", "items": "long", "element-id": 133}], "default": null, "field-id": 132},
        {"name": "equality_ids", "type": ["null", {"type": "array", "items": "int", "element-id": 136}], "default": null, "field-id": 135},
        {"name": "sort_order_id", "type": ["null", "int"], "default": null, "field-id": 140},
        {"name": "first_row_id", "type": ["null", "long"], "default": null, "field-id": 142},
        {"name": "referenced_data_file", "type": ["null", "string"], "default": null, "field-id": 143},
        {"name": "content_offset", "type": ["null", "long"], "default": null, "field-id": 144},
        {"name": "content_size_in_bytes", "type": ["null", "long"], "default": null, "field-id": 145},
        {"name": "x_types", "type": {"type": "record", "name": "x_types", "namespace": "strike.test", "fields": [
          {"name": "f", "type": "float"},
          {"name": "d", "type": "double"},
          {"name": "e", "type": {"type": "enum", "name": "Kind", "symbols": ["DATA", "POSITION_DELETES", "EQUALITY_DELETES"]}},
          {"name": "props", "type": {"type": "map", "values": "string"}},
          {"name": "many", "type": ["null", "boolean", "int", "long", "float", "double", "bytes", "string", "Kind", {"type": "array", "items": "string"}, {"type": "map", "values": "long"}]},
          {"name": "tree", "type": {"type": "record", "name": "node", "fields": [
            {"name": "v", "type": "int"},
            {"name": "kids", "type": {"type": "array", "items": "node"}},
            {"name": "next", "type": ["null", "node"]}]}},
          {"name": "h", "type": "strike.test.Kind"}
        ]}}
      ]
    },
    "field-id" : 2
  } ]
}"""

# Iceberg's manifest_file (format/spec.md "Manifest Lists"), compact as avsc-style JSON.
MANIFEST_LIST_SCHEMA = json.dumps({
    "type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
        {"name": "partitions", "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "r508", "fields": [
                {"name": "contains_null", "type": "boolean", "field-id": 509},
                {"name": "contains_nan", "type": ["null", "boolean"], "default": None,
                 "field-id": 518},
                {"name": "lower_bound", "type": ["null", "bytes"], "default": None,
                 "field-id": 510},
                {"name": "upper_bound", "type": ["null", "bytes"], "default": None,
                 "field-id": 511}]}, "element-id": 508}], "default": None, "field-id": 507},
        {"name": "key_metadata", "type": ["null", "bytes"], "default": None, "field-id": 519},
        {"name": "first_row_id", "type": ["null", "long"], "default": None, "field-id": 520},
    ]}, separators=(",", ":"))

MANIFEST_META = [
    "schema={\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\","
    "\"required\":true,\"type\":\"long\"}]}",
    "partition-spec=[]",
    "partition-spec-id=0",
    "format-version=3",
    "content=data",
]
MANIFEST_FIELD_IDS = {0, 1, 3, 4, 2, 134, 100, 101, 102, 1000, 1001, 1002, 1003, 1004, 1005,
                      1006, 103, 104, 108, 133, 136, 117, 118, 109, 119, 120, 110, 121, 122, 137, 138, 139,
                      125, 126, 127, 128, 129, 130, 131, 132, 135, 140, 142, 143, 144, 145}


def require_env():
    for name, val in (("STRIKE_BIN_DIR", BIN_DIR), ("STRIKE_BUILD_DIR", BUILD_DIR)):
        if not val:
            raise RuntimeError(f"{name} is not set: run this test through ctest")
    if not os.access(SAMPLE, os.X_OK):
        raise RuntimeError(f"no avro_sample at {SAMPLE} (build the tests)")
    if not os.path.isdir(os.path.join(BUILD_DIR, "peers", "node_modules", "avsc")):
        raise RuntimeError(f"avsc is not installed: run scripts/test-peers.sh {BUILD_DIR}")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"{cmd[:3]} failed ({r.returncode}): {r.stderr.decode()}")
    return r.stdout


def sample_write(schema_file, out, count, block, seed, meta):
    return json.loads(run([SAMPLE, "write", schema_file, out, str(count), str(block), str(seed),
                           *meta]))


def avsc_decode(path):
    return json.loads(run(["node", NODE_HELPER, "decode", path]))


def field_ids(node, out):
    """Every field-id and element-id in a schema's JSON."""
    if isinstance(node, dict):
        for k in ("field-id", "element-id"):
            if k in node:
                out.add(node[k])
        for v in node.values():
            field_ids(v, out)
    elif isinstance(node, list):
        for v in node:
            field_ids(v, out)
    return out


class AvroAvsc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.schemas = {}
        for name, text in (("manifest", MANIFEST_SCHEMA), ("list", MANIFEST_LIST_SCHEMA)):
            p = os.path.join(cls.tmp.name, f"{name}.avsc")
            write_bytes(p, text.encode())
            cls.schemas[name] = p

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def check_header(self, got, schema_name, meta):
        schema_bytes = read_bytes(self.schemas[schema_name])
        self.assertEqual(bytes.fromhex(got["meta"]["avro.schema"]), schema_bytes)
        self.assertEqual(bytes.fromhex(got["meta"]["avro.codec"]), b"null")
        self.assertEqual(list(got["meta"].keys()),
                         ["avro.schema", "avro.codec"] + [m.split("=", 1)[0] for m in meta])
        for m in meta:
            k, v = m.split("=", 1)
            self.assertEqual(bytes.fromhex(got["meta"][k]).decode(), v)

    def test_avsc_reads_ours(self):
        cases = [("manifest", 0, 0, 1), ("manifest", 1, 0, 2), ("manifest", 400, 0, 3),
                 ("manifest", 300, 512, 4), ("list", 200, 300, 5), ("list", 3000, 0, 6)]
        for schema, count, block, seed in cases:
            with self.subTest(schema=schema, count=count, block=block):
                meta = MANIFEST_META if schema == "manifest" else [
                    "snapshot-id=42", "parent-snapshot-id=null", "sequence-number=7",
                    "format-version=3"]
                out = self.path(f"ours-{schema}-{count}-{block}.avro")
                want = sample_write(self.schemas[schema], out, count, block, seed, meta)
                self.assertEqual(len(want["records"]), count)
                got = avsc_decode(out)
                self.check_header(got, schema, meta)
                self.assertEqual(got["meta"], want["meta"])
                self.assertEqual(len(got["records"]), count)
                for i, (g, w) in enumerate(zip(got["records"], want["records"])):
                    self.assertEqual(g, w, f"record {i}")
                data = read_bytes(out)
                blocks = data.count(data[-16:]) - 1 if count else 0
                if block and count:
                    self.assertGreater(blocks, 3)
                # field ids intact in the schema avsc was given
                parsed = json.loads(bytes.fromhex(got["meta"]["avro.schema"]))
                if schema == "manifest":
                    self.assertEqual(field_ids(parsed, set()), MANIFEST_FIELD_IDS)
                else:
                    self.assertEqual(field_ids(parsed, set()),
                                     {500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513,
                                      514, 507, 508, 509, 518, 510, 511, 519, 520})

    def test_we_read_avsc(self):
        for schema, count, seed in (("manifest", 250, 11), ("list", 500, 12), ("manifest", 0, 13)):
            with self.subTest(schema=schema, count=count):
                ours = self.path(f"src-{schema}-{count}.avro")
                want = sample_write(self.schemas[schema], ours, count, 0, seed, [])
                records = self.path(f"src-{schema}-{count}.json")
                with open(records, "w") as f:
                    json.dump(want, f)
                theirs = self.path(f"avsc-{schema}-{count}.avro")
                run(["node", NODE_HELPER, "encode", self.schemas[schema], records, theirs, "400",
                     "written-by=avsc", "format-version=3"])
                data = read_bytes(theirs)
                self.assertEqual(data[:4], b"Obj\x01")
                if count:
                    self.assertGreater(data.count(data[-16:]) - 1, 5)  # many blocks
                got = json.loads(run([SAMPLE, "dump", theirs]))
                self.assertEqual(bytes.fromhex(got["meta"]["written-by"]), b"avsc")
                self.assertEqual(len(got["records"]), count)
                for i, (g, w) in enumerate(zip(got["records"], want["records"])):
                    self.assertEqual(g, w, f"record {i}")

    def test_deterministic_and_sync(self):
        a, b = self.path("det-a.avro"), self.path("det-b.avro")
        sample_write(self.schemas["manifest"], a, 120, 0, 99, MANIFEST_META)
        sample_write(self.schemas["manifest"], b, 120, 0, 99, MANIFEST_META)
        da, db = read_bytes(a), read_bytes(b)
        self.assertEqual(da, db)
        sync = da[-16:]
        header_end = da.index(sync)
        self.assertEqual(hashlib.sha256(da[:header_end]).digest()[:16], sync)
        # another metadata value, another sync marker
        c = self.path("det-c.avro")
        sample_write(self.schemas["manifest"], c, 120, 0, 99, MANIFEST_META[:-1] + ["content=deletes"])
        self.assertNotEqual(read_bytes(c)[-16:], sync)
        # avsc checks the sync markers: one changed byte in the last one is refused
        bad = bytearray(da)
        bad[-5] ^= 0xFF
        p = self.path("det-bad.avro")
        write_bytes(p, bytes(bad))
        r = subprocess.run(["node", NODE_HELPER, "decode", p], capture_output=True, timeout=600)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"sync", r.stderr)
        # and so does our reader
        r = subprocess.run([SAMPLE, "dump", p], capture_output=True, timeout=600)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"the sync marker differs from the header's", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
