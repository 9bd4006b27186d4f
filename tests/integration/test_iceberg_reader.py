"""The tests' own Iceberg v3 reader and spec checker (iceberg_read.mjs) proves
itself on a table another implementation wrote, before strike's export is
judged by it (issue 29).

The table: iceberg-tables/impala_iceberg_v3_deletion_vectors (Spark 4.0.2 +
Iceberg 1.10.1, from Apache Impala's test data; PROVENANCE.md), with the rows
Impala's own tests expect at each snapshot (fixture.json). Its locations are
hdfs://...; --map turns them into the fixture's folder.

- `rows` finds fixture.json's rows at both snapshots (every snapshot at once,
  and one --snapshot at a time; metadata given as a path and as the table's URI),
  and row lineage as the spec assigns it (_row_id = first_row_id + _pos).
- `check` passes, and each named check ran; the places where Iceberg Java departs
  from the spec's text are notes, and exactly those fail under --strict.
- Negative controls: a copy of the table corrupted in one small way each (a DV's
  content_offset off by one, a missing required metadata field, a flipped CRC
  byte, a referenced_data_file that names no data file, ...; manifests edited
  and written back by avsc through the reader's avro-dump/avro-write) makes
  exactly the named checks fail, with file, field and value; and `rows` fails
  loudly on a corrupt DV instead of returning rows.

Where the table is: $STRIKE_TESTDATA_DIR/iceberg-tables/..., else
../shared/testdata/iceberg-tables/... next to the repository (the checkout's
and, from a git worktree, the main checkout's). Missing: a failure, not a skip.
Needs STRIKE_BUILD_DIR with the npm peers (scripts/test-peers.sh): avsc,
@duckdb/node-api, roaring.
"""
import copy
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "iceberg_read.mjs")
BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
NAME = "impala_iceberg_v3_deletion_vectors"
SNAP1 = "2700858159721908397"  # append: 5 files, i = 1..5
SNAP2 = "3685752423136077685"  # delete: 2 DVs (i = 2 and i = 4)
DATA_MANIFEST = "metadata/5e791f63-c675-4124-8390-6bbce9e61755-m0.avro"
DELETE_MANIFEST = "metadata/e9787b6c-e745-4040-b78f-e4012aa178ab-m0.avro"
LIST2 = "metadata/snap-3685752423136077685-1-e9787b6c-e745-4040-b78f-e4012aa178ab.avro"
PUFFIN = "data/00000-9-08e88179-85b6-4635-8b34-94b49abc87d9-00001-deletes.puffin"
METADATA = "metadata/v3.metadata.json"

# Where Iceberg Java 1.10.1 departs from the spec's text (notes; failures under --strict).
JAVA_DEPARTURES = {"manifest.metadata", "entry.file-format", "metadata.version-hint"}


def repo_roots():
    roots = [os.path.dirname(os.path.dirname(HERE))]
    try:
        common = subprocess.run(["git", "-C", HERE, "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                capture_output=True, text=True, check=True).stdout.strip()
        roots.append(os.path.dirname(common))
    except (OSError, subprocess.CalledProcessError):
        pass
    return roots


def fixture_dir():
    cands = []
    if os.environ.get("STRIKE_TESTDATA_DIR"):
        cands.append(os.path.join(os.environ["STRIKE_TESTDATA_DIR"], "iceberg-tables", NAME))
    for r in repo_roots():
        cands.append(os.path.join(os.path.dirname(r), "shared", "testdata", "iceberg-tables", NAME))
    for c in cands:
        if os.path.exists(os.path.join(c, "fixture.json")):
            return c
    raise AssertionError(f"the Impala Iceberg v3 table is missing; looked in: {cands}")


class IcebergReader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mods = os.path.join(BUILD_DIR, "peers", "node_modules")
        for p in ("avsc", "@duckdb/node-api", "roaring"):
            if not os.path.isdir(os.path.join(mods, p)):
                raise AssertionError(f"npm {p} is not in {mods}: run scripts/test-peers.sh BUILD_DIR")
        cls.src = fixture_dir()
        print(f"table: {cls.src}", flush=True)
        with open(os.path.join(cls.src, "fixture.json")) as f:
            cls.fixture = json.load(f)
        cls.prefix = cls.fixture["table_location"]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="strike-iceberg-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- running the reader ---
    def node(self, *args, stdin=None):
        r = subprocess.run(["node", READER, *args], capture_output=True, text=True, input=stdin, timeout=300)
        return r.returncode, r.stdout, r.stderr

    def run_mode(self, mode, table, *extra, metadata=None):
        meta = metadata or os.path.join(table, METADATA)
        return self.node(mode, meta, "--map", f"{self.prefix}={table}", *extra)

    def rows(self, table, *extra, metadata=None):
        rc, out, err = self.run_mode("rows", table, *extra, metadata=metadata)
        self.assertEqual(rc, 0, err)
        return json.loads(out)["snapshots"]

    def check(self, table, *extra):
        rc, out, err = self.run_mode("check", table, *extra)
        self.assertIn(rc, (0, 1), err)
        doc = json.loads(out)
        self.assertEqual(rc == 0, doc["ok"], err)
        self.assertEqual(doc["ok"], not doc["failures"])
        return doc

    # --- editing a copy of the table ---
    def copy_table(self):
        dst = os.path.join(self.tmp, NAME)
        shutil.copytree(self.src, dst)
        return dst

    def avro_dump(self, path):
        rc, out, err = self.node("avro-dump", path)
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def avro_write(self, path, doc):
        rc, _, err = self.node("avro-write", path, stdin=json.dumps(doc))
        self.assertEqual(rc, 0, err)

    def edit_avro(self, table, rel, fn):
        """Rewrite the Avro file `rel` of `table` through fn(doc); every manifest
        list that names it gets its new manifest_length, so that only what fn
        changed is wrong."""
        path = os.path.join(table, rel)
        doc = self.avro_dump(path)
        fn(doc)
        self.avro_write(path, doc)
        size = os.path.getsize(path)
        for name in os.listdir(os.path.join(table, "metadata")):
            if not name.startswith("snap-"):
                continue
            lp = os.path.join(table, "metadata", name)
            ld = self.avro_dump(lp)
            hit = [m for m in ld["records"] if m["manifest_path"].endswith("/" + rel)]
            for m in hit:
                m["manifest_length"] = size
            if hit:
                self.avro_write(lp, ld)

    def edit_metadata(self, table, fn):
        path = os.path.join(table, METADATA)
        with open(path) as f:
            meta = json.load(f)
        fn(meta)
        with open(path, "w") as f:
            json.dump(meta, f)

    def assert_fails(self, table, expected, *extra):
        doc = self.check(table, *extra)
        got = {f["check"] for f in doc["failures"]}
        self.assertEqual(got, set(expected), json.dumps(doc["failures"], indent=1))
        for f in doc["failures"]:
            for k in ("file", "field", "value", "message"):
                self.assertIn(k, f)
            self.assertTrue(f["file"] and f["field"] and f["message"], f)
        return doc["failures"]

    def assert_rows_fail(self, table, *needles):
        rc, out, err = self.run_mode("rows", table)
        self.assertEqual((rc, out), (1, ""), err)
        for n in needles:
            self.assertIn(n, err)

    # --- the table as written ---
    def test_rows_every_snapshot(self):
        snaps = self.rows(self.src)
        self.assertEqual(set(snaps), set(self.fixture["expected"]))
        for sid, exp in self.fixture["expected"].items():
            self.assertEqual(snaps[sid]["rows"], exp["rows"], f"snapshot {sid}: {exp['source']}")
            self.assertEqual(snaps[sid]["columns"], ["i"])
            self.assertEqual(snaps[sid]["types"], ["int"])
        self.assertEqual((snaps[SNAP1]["sequence_number"], snaps[SNAP2]["sequence_number"]), (1, 2))

    def test_rows_one_snapshot_and_uri(self):
        for sid, exp in self.fixture["expected"].items():
            snaps = self.rows(self.src, "--snapshot", sid)
            self.assertEqual(list(snaps), [sid])
            self.assertEqual(snaps[sid]["rows"], exp["rows"])
        # The metadata named by the table's own URI, through the same map.
        snaps = self.rows(self.src, "--snapshot", SNAP2, metadata=f"{self.prefix}/{METADATA}")
        self.assertEqual(snaps[SNAP2]["rows"], [[1], [3], [5]])
        rc, _, err = self.run_mode("rows", self.src, "--snapshot", "42")
        self.assertEqual(rc, 1)
        self.assertIn("no snapshot 42", err)

    def test_rows_lineage(self):
        # One manifest with first_row_id 0 and five one-row files of null
        # first_row_id: they inherit 0..4 in manifest order (i = 1..5), each row
        # _row_id = first_row_id + _pos, _last_updated_sequence_number = 1.
        snaps = self.rows(self.src, "--lineage")
        self.assertEqual(snaps[SNAP1]["columns"], ["i", "_row_id", "_last_updated_sequence_number"])
        self.assertEqual(snaps[SNAP1]["rows"], [[i, i - 1, 1] for i in range(1, 6)])
        self.assertEqual(snaps[SNAP2]["rows"], [[1, 0, 1], [3, 2, 1], [5, 4, 1]])

    def test_check_passes(self):
        doc = self.check(self.src)
        self.assertTrue(doc["ok"], json.dumps(doc["failures"], indent=1))
        # Each check ran on this table (a check that never runs proves nothing).
        for name in ("metadata.required", "metadata.snapshot-fields", "snapshot.sequence", "lineage.snapshot",
                     "manifest-list.avro-schema", "manifest-list.counts", "manifest-list.length",
                     "manifest.metadata", "manifest.avro-schema", "manifest.sequence", "entry.sequence",
                     "entry.file-size", "data-file.record-count", "data-file.field-ids", "data-file.types",
                     "lineage.manifest-first-row-id", "lineage.data-file-row-ids", "snapshot.summary-totals",
                     "dv.entry", "dv.referenced-data-file", "dv.one-per-file", "dv.applies", "dv.blob-range",
                     "dv.blob-property", "dv.blob-crc", "dv.blob-magic", "dv.blob-length", "dv.blob-bitmap",
                     "dv.blob-cardinality", "dv.cardinality", "dv.positions", "dv.roaring-peer", "puffin.footer"):
            self.assertGreater(doc["ran"].get(name, 0), 0, name)
        self.assertEqual(doc["ran"]["dv.blob-crc"], 2)
        self.assertEqual(doc["ran"]["dv.blob-range"], 2)
        self.assertEqual({n["check"] for n in doc["notes"]}, JAVA_DEPARTURES, json.dumps(doc["notes"], indent=1))
        for sid in (SNAP1, SNAP2):
            self.assertTrue(self.check(self.src, "--snapshot", sid)["ok"])

    def test_check_strict(self):
        # The notes, and only they, fail under --strict: manifests without the
        # header key schema-id, PARQUET/PUFFIN in upper case, an empty version-hint.text.
        fails = self.assert_fails(self.src, JAVA_DEPARTURES, "--strict")
        fields = {(f["check"], f["field"]) for f in fails}
        self.assertIn(("manifest.metadata", "header schema-id"), fields)
        self.assertIn(("entry.file-format", "entry 0.data_file.file_format"), fields)

    def test_avro_round_trip(self):
        # The negative controls edit manifests through avro-dump/avro-write: a
        # rewrite that changes nothing must decode the same and check the same.
        t = self.copy_table()
        for rel in (DATA_MANIFEST, DELETE_MANIFEST, LIST2):
            before = self.avro_dump(os.path.join(t, rel))
            self.edit_avro(t, rel, lambda doc: None)
            self.assertEqual(self.avro_dump(os.path.join(t, rel)), before, rel)
        doc = self.check(t)
        self.assertTrue(doc["ok"], json.dumps(doc["failures"], indent=1))
        self.assertEqual({n["check"] for n in doc["notes"]}, JAVA_DEPARTURES)
        self.assertEqual(self.rows(t)[SNAP2]["rows"], [[1], [3], [5]])

    # --- negative controls ---
    def test_dv_content_offset_off_by_one(self):
        t = self.copy_table()

        def bump(doc):
            self.assertEqual(doc["records"][0]["data_file"]["content_offset"], 4)
            doc["records"][0]["data_file"]["content_offset"] = 5
        self.edit_avro(t, DELETE_MANIFEST, bump)
        (f,) = self.assert_fails(t, {"dv.blob-range"})
        self.assertEqual((f["field"], f["value"]), ("entry 0.data_file.content_offset", "[5,42]"))
        self.assertTrue(f["file"].endswith(DELETE_MANIFEST))
        self.assertIn("[4, 42] [46, 42]", f["message"])
        self.assert_rows_fail(t, "length field")

    def test_missing_required_metadata_fields(self):
        cases = [
            (lambda m: m.pop("next-row-id"), "metadata.required", "next-row-id"),
            (lambda m: m.pop("table-uuid"), "metadata.required", "table-uuid"),
            (lambda m: m.pop("last-sequence-number"), "metadata.required", "last-sequence-number"),
            (lambda m: m.pop("sort-orders"), "metadata.required", "sort-orders"),
            (lambda m: m.pop("last-partition-id"), "metadata.required", "last-partition-id"),
            (lambda m: m["snapshots"][1].pop("first-row-id"), "metadata.snapshot-fields", "snapshots[1].first-row-id"),
            (lambda m: m["snapshots"][0].pop("added-rows"), "metadata.snapshot-fields", "snapshots[0].added-rows"),
            (lambda m: m["snapshots"][1]["summary"].pop("operation"), "metadata.snapshot-fields",
             "snapshots[1].summary.operation"),
        ]
        for edit, check, field in cases:
            with self.subTest(field=field):
                t = self.copy_table()
                self.edit_metadata(t, edit)
                fails = self.assert_fails(t, {check})
                self.assertIn(field, {f["field"] for f in fails})
                shutil.rmtree(t)

    def test_dv_blob_crc_flipped(self):
        t = self.copy_table()
        p = os.path.join(t, PUFFIN)
        with open(p, "r+b") as f:
            f.seek(4 + 42 - 1)  # the last byte of the first blob: its CRC
            b = f.read(1)
            f.seek(4 + 42 - 1)
            f.write(bytes([b[0] ^ 0x01]))
        (f,) = self.assert_fails(t, {"dv.blob-crc"})
        self.assertEqual((f["file"], f["field"]), (p, "blobs[0]"))
        self.assertIn("CRC-32", f["message"])
        self.assert_rows_fail(t, "CRC-32")

    def test_referenced_data_file_names_no_data_file(self):
        t = self.copy_table()
        nope = f"{self.prefix}/data/no-such-file.parquet"

        def rename(doc):
            doc["records"][1]["data_file"]["referenced_data_file"] = nope
        self.edit_avro(t, DELETE_MANIFEST, rename)
        fails = self.assert_fails(t, {"dv.referenced-data-file", "dv.blob-property"})
        self.assertIn(("dv.referenced-data-file", json.dumps(nope)), {(f["check"], f["value"]) for f in fails})
        self.assert_rows_fail(t, "no-such-file.parquet", "no live data file")

    def test_manifest_list_count(self):
        t = self.copy_table()
        p = os.path.join(t, LIST2)
        doc = self.avro_dump(p)
        doc["records"][0]["added_files_count"] = 4
        self.avro_write(p, doc)
        (f,) = self.assert_fails(t, {"manifest-list.counts"})
        self.assertEqual(f["value"], "4")
        self.assertIn("added_files_count", f["field"])

    def test_avro_schema_field_id(self):
        t = self.copy_table()

        def renumber(doc):
            data_file = doc["schema"]["fields"][4]["type"]
            (f,) = [f for f in data_file["fields"] if f["name"] == "content_offset"]
            f["field-id"] = 146
        self.edit_avro(t, DELETE_MANIFEST, renumber)
        (f,) = self.assert_fails(t, {"manifest.avro-schema"})
        self.assertEqual((f["field"], f["value"]), ("manifest_entry.data_file.content_offset", "146"))

    def test_manifest_header_key_missing(self):
        t = self.copy_table()
        self.edit_avro(t, DATA_MANIFEST, lambda doc: doc["meta"].pop("partition-spec-id"))
        (f,) = self.assert_fails(t, {"manifest.metadata"})
        self.assertEqual(f["field"], "header partition-spec-id")

    def test_row_lineage(self):
        t = self.copy_table()
        self.edit_metadata(t, lambda m: m["snapshots"][1].update({"first-row-id": 4}))
        # (the manifest list's header still says first-row-id 5: that disagrees too)
        fails = self.assert_fails(t, {"lineage.snapshot", "manifest-list.metadata"})
        self.assertIn(f"snapshot {SNAP2}.first-row-id", {f["field"] for f in fails})
        self.assertIn("next-row-id", {f["field"] for f in fails})
        # A data manifest without first_row_id in a v3 snapshot.
        t2 = os.path.join(self.tmp, "t2")
        shutil.copytree(self.src, t2)
        p = os.path.join(t2, LIST2)
        doc = self.avro_dump(p)
        doc["records"][0]["first_row_id"] = None
        self.avro_write(p, doc)
        self.assert_fails(t2, {"lineage.manifest-first-row-id", "lineage.data-file-row-ids"})

    def test_sequence_numbers(self):
        t = self.copy_table()
        self.edit_metadata(t, lambda m: m["snapshots"][0].update({"sequence-number": 2}))
        # (and the manifest list's header still says sequence-number 1)
        self.assert_fails(t, {"snapshot.sequence", "manifest.sequence", "manifest-list.metadata"})
        # A DV entry with an explicit data sequence number above its snapshot's.
        t2 = os.path.join(self.tmp, "t2")
        shutil.copytree(self.src, t2)
        self.edit_avro(t2, DELETE_MANIFEST, lambda doc: doc["records"][0].update({"sequence_number": 3}))
        self.assert_fails(t2, {"entry.sequence"})

    def test_two_dvs_for_one_file(self):
        t = self.copy_table()

        def dup(doc):
            doc["records"].append(copy.deepcopy(doc["records"][0]))
        self.edit_avro(t, DELETE_MANIFEST, dup)
        p = os.path.join(t, LIST2)
        doc = self.avro_dump(p)
        doc["records"][1].update({"added_files_count": 3, "added_rows_count": 3})
        self.avro_write(p, doc)
        self.assert_fails(t, {"dv.one-per-file", "snapshot.unique-files", "snapshot.summary-totals"})
        self.assert_rows_fail(t, "a second deletion vector")

    def test_dv_record_count_not_cardinality(self):
        t = self.copy_table()
        self.edit_avro(t, DELETE_MANIFEST, lambda doc: doc["records"][0]["data_file"].update({"record_count": 2}))
        p = os.path.join(t, LIST2)
        doc = self.avro_dump(p)
        doc["records"][1]["added_rows_count"] = 3
        self.avro_write(p, doc)
        self.assert_fails(t, {"dv.cardinality", "snapshot.summary-totals"})
        self.assert_rows_fail(t, "record_count is 2")

    def test_dv_position_past_the_file(self):
        # The bitmap now deletes position 1 of a one-row file; the CRC is made
        # right again, so only the decoded content can tell.
        t = self.copy_table()
        p = os.path.join(t, PUFFIN)
        with open(p, "rb") as f:
            buf = bytearray(f.read())
        blob = buf[4:4 + 42]
        self.assertEqual(blob[4:8], bytes.fromhex("d1d33964"))
        vec_end = 4 + int.from_bytes(blob[0:4], "big")  # the length field covers magic + vector
        self.assertEqual(blob[vec_end - 2:vec_end], b"\x00\x00")  # the array container's one value: 0
        blob[vec_end - 2] = 1
        blob[vec_end:vec_end + 4] = zlib.crc32(bytes(blob[4:vec_end])).to_bytes(4, "big")
        buf[4:4 + 42] = blob
        with open(p, "wb") as f:
            f.write(buf)
        (f,) = self.assert_fails(t, {"dv.positions"})
        self.assertIn("past the end", f["message"])
        self.assert_rows_fail(t, "past the end")


if __name__ == "__main__":
    unittest.main(verbosity=2)
