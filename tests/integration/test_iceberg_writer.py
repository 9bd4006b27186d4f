"""storage/iceberg's writers judged by a reader that is not ours (issue 29).

iceberg_sample (tests/integration/iceberg_sample.c) lays out a complete Iceberg
v3 table with strike's own writers: Parquet data files, deletion vectors in
Puffin files, manifests, manifest lists and metadata.json from
storage/iceberg/iceberg.h. Three snapshots: an append of two data files; a
third data file and a DV on the first (the first manifest listed again); a
rewritten manifest with one data file EXISTING and one DELETED, and a DV on the
third. Four metadata versions (v1 has no snapshot).

The tests' own Iceberg reader (iceberg_read.mjs: avsc for Avro, DuckDB for
Parquet, its own Puffin, DV and Roaring decoding, cross-checked with npm
roaring) then:

- `check`: every metadata version passes the spec's invariants with no failure
  (required fields, the Avro schemas' field ids against the spec's tables,
  header keys, sequence numbers and their inheritance, manifest list counts,
  row lineage arithmetic, each DV's blob against its Puffin footer, the
  referenced data file byte for byte, one DV per data file...). The only notes
  (departures from the spec's text that Iceberg Java makes too) are the
  upper-case file_format names; --strict fails on exactly those.
- `rows --lineage`: each snapshot's rows are the rows written minus the DV
  positions, with _row_id = the data file's first_row_id + position and
  _last_updated_sequence_number = its data sequence number; every snapshot at
  once, each alone, and through the older metadata versions.

Needs STRIKE_BIN_DIR (iceberg_sample) and STRIKE_BUILD_DIR with the npm peers
(scripts/test-peers.sh): avsc, @duckdb/node-api, roaring.
"""
import json
import math
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
READER = os.path.join(HERE, "iceberg_read.mjs")
BIN_DIR = os.environ.get("STRIKE_BIN_DIR", "")
BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
SAMPLE = os.path.join(BIN_DIR, "iceberg_sample")
TYPES = ["long", "string", "double", "boolean", "int", "timestamptz", "long", "long"]
# what the check must have evaluated on the full table (a check that never ran proves nothing)
MUST_RUN = {
    "metadata.required", "metadata.schemas", "metadata.snapshot-fields", "metadata.refs",
    "snapshot.sequence", "lineage.snapshot", "manifest-list.avro-schema", "manifest-list.metadata",
    "manifest-list.counts", "manifest-list.length", "manifest.metadata", "manifest.avro-schema",
    "manifest.sequence", "entry.sequence-inheritance", "entry.snapshot-id", "entry.file-path",
    "entry.file-size", "entry.sort-order-id", "data-file.field-ids", "data-file.record-count",
    "dv.entry", "dv.referenced-data-file", "dv.one-per-file", "dv.applies", "dv.blob-range",
    "dv.blob-property", "dv.cardinality", "dv.positions", "dv.roaring-peer",
    "lineage.manifest-first-row-id", "lineage.data-file-row-ids", "snapshot.summary-totals",
    "snapshot.unique-files", "puffin.footer", "metadata.version-hint",
}
# Iceberg Java writes "PARQUET" and "PUFFIN"; the spec's text spells them in lower case
DEPARTURES = {"entry.file-format"}


def norm(v):
    """A value as the reader prints it: numbers as floats, -0.0 spelled out."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if v == 0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return float(v)


def key(row):
    return json.dumps(row, sort_keys=True)


class IcebergWriter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SAMPLE):
            raise AssertionError(f"no iceberg_sample at {SAMPLE} (build the tests)")
        mods = os.path.join(BUILD_DIR, "peers", "node_modules")
        for p in ("avsc", "@duckdb/node-api", "roaring"):
            if not os.path.isdir(os.path.join(mods, p)):
                raise AssertionError(f"npm {p} is not in {mods}: run scripts/test-peers.sh BUILD_DIR")
        cls.tmp = tempfile.mkdtemp(prefix="strike-iceberg-writer-")
        cls.table = os.path.join(cls.tmp, "t")
        r = subprocess.run([SAMPLE, cls.table], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"iceberg_sample: {r.stderr}")
        cls.written = json.loads(r.stdout)
        print(f"table: {cls.table}", flush=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def node(self, *args):
        r = subprocess.run(["node", READER, *args], capture_output=True, text=True, timeout=300)
        return r.returncode, r.stdout, r.stderr

    def check(self, metadata, *extra):
        rc, out, err = self.node("check", metadata, *extra)
        self.assertIn(rc, (0, 1), err)
        doc = json.loads(out)
        self.assertEqual(rc == 0, doc["ok"], err)
        return doc

    def expected(self, snap):
        """The rows of a snapshot: each live file's rows minus its DV's positions, with lineage."""
        w = self.written
        rows = []
        for name in snap["live"]:
            f = w["files"][name]
            gone = set(snap["deleted"].get(name, []))
            for pos, row in enumerate(f["rows"]):
                if pos not in gone:
                    rows.append([norm(v) for v in row] + [float(f["first_row_id"] + pos), float(f["seq"])])
        return sorted(rows, key=key)

    def assert_rows(self, got, snap):
        self.assertEqual(got["columns"], self.written["columns"] + ["_row_id", "_last_updated_sequence_number"])
        self.assertEqual(got["types"], TYPES)
        self.assertEqual(got["sequence_number"], snap["sequence_number"])
        rows = sorted(([norm(v) for v in r] for r in got["rows"]), key=key)
        want = self.expected(snap)
        self.assertEqual(len(rows), len(want), f"snapshot {snap['id']}")
        self.assertEqual(rows, want, f"snapshot {snap['id']}")

    def test_check_every_version(self):
        for i, meta in enumerate(self.written["metadata"]):
            with self.subTest(metadata=os.path.basename(meta)):
                doc = self.check(meta)
                self.assertEqual(doc["failures"], [], json.dumps(doc["failures"], indent=1))
                self.assertTrue(doc["ok"])
                self.assertLessEqual({n["check"] for n in doc["notes"]}, DEPARTURES)
                self.assertIn("metadata.required", doc["ran"])
                if i == 0:
                    self.assertNotIn("manifest.avro-schema", doc["ran"])  # no snapshot, no manifest
        doc = self.check(self.written["metadata"][-1])
        missing = MUST_RUN - set(doc["ran"])
        self.assertEqual(missing, set(), f"checks that never ran: {sorted(missing)}")
        # the three data manifests and two delete manifests, each checked once
        self.assertEqual(doc["ran"]["manifest.avro-schema"], 5)

    def test_check_strict(self):
        """--strict turns the notes into failures: only the upper-case file_format, named."""
        doc = self.check(self.written["metadata"][-1], "--strict")
        self.assertFalse(doc["ok"])
        self.assertEqual({f["check"] for f in doc["failures"]}, DEPARTURES)
        self.assertEqual({f["value"] for f in doc["failures"]}, {'"PARQUET"', '"PUFFIN"'})

    def test_rows_every_snapshot(self):
        rc, out, err = self.node("rows", self.written["metadata"][-1], "--lineage")
        self.assertEqual(rc, 0, err)
        got = json.loads(out)["snapshots"]
        snaps = self.written["snapshots"]
        self.assertEqual(sorted(got), sorted(str(s["id"]) for s in snaps))
        for s in snaps:
            self.assert_rows(got[str(s["id"])], s)
        # the DVs removed rows: 9, 12 - 2, 8 - 3 live rows
        self.assertEqual([len(got[str(s["id"])]["rows"]) for s in snaps], [9, 10, 5])

    def test_rows_one_snapshot_at_a_time(self):
        for s in self.written["snapshots"]:
            with self.subTest(snapshot=s["id"]):
                rc, out, err = self.node("rows", self.written["metadata"][-1], "--snapshot", str(s["id"]),
                                         "--lineage")
                self.assertEqual(rc, 0, err)
                got = json.loads(out)["snapshots"]
                self.assertEqual(list(got), [str(s["id"])])
                self.assert_rows(got[str(s["id"])], s)

    def test_rows_older_versions(self):
        """v2 holds the first snapshot, v3 the first two: the same rows through older metadata."""
        for version in (2, 3):
            with self.subTest(version=version):
                meta = self.written["metadata"][version - 1]
                rc, out, err = self.node("rows", "file://" + meta, "--lineage")
                self.assertEqual(rc, 0, err)
                got = json.loads(out)["snapshots"]
                snaps = self.written["snapshots"][:version - 1]
                self.assertEqual(sorted(got), sorted(str(s["id"]) for s in snaps))
                for s in snaps:
                    self.assert_rows(got[str(s["id"])], s)

    def test_no_snapshot(self):
        """v1: a table without snapshots reads as no snapshot at all."""
        rc, out, err = self.node("rows", self.written["metadata"][0])
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["snapshots"], {})
        with open(self.written["metadata"][0]) as f:
            meta = json.load(f)
        self.assertIsNone(meta["current-snapshot-id"])
        self.assertEqual(meta["refs"], {})
        self.assertEqual(meta["next-row-id"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
