"""The Iceberg export (issue 29, docs/API.md "Iceberg REST catalog", docs/DESIGN.md
"Iceberg"): every strike table is an Iceberg v3 table in its own location, judged
by the tests' own reader (iceberg_read.mjs: avsc, DuckDB, its own Puffin and DV
decoding), which shares no code with strike.

- History: a table with a primary key and a column of each type, through a
  sequence of commits (upserts of new and updated keys, deletes by key, a delete
  by filter, a compaction, an expiry, an erasure by key and one by filter). After
  each step: for every retained snapshot the reader's rows of the exported
  metadata (loadTable's metadata-location; version-hint.text names the same
  file) equal strike's /scan at that snapshot (sorted; doubles by their bits,
  timestamps as microseconds, longs exactly), `check` finds no failure (and no
  note but the upper-case file format), the metadata lists exactly the retained
  snapshots, and metadata/ holds only what they need: expired snapshots' manifest
  lists, manifests no retained snapshot lists and metadata files that list an
  expired snapshot are deleted. After each erasure: the receipt is verified with a
  passing `iceberg_metadata` check, and no file under metadata/ (JSON as text,
  Avro decoded by the reader's avro-dump) names a purged data or Puffin file or
  holds the erased rows' values in its column bounds (which, before the erasure,
  some manifest did: the control). On S3 (moto) the same, through a boto3
  download of the server's prefix and --map s3://BUCKET/=DIR/; loadTable's
  config there carries s3.endpoint, s3.region and s3.path-style-access.
- ExpiryBetweenExports: a compaction then an expiry with no export between them: the
  next export lists none of the files they deleted (the same checks as History).
- Statistics: a file holding a double beyond 2^63 has its column bounds and null
  counts in its manifest entry, as every file does.
- Background: with the default --iceberg-interval and no catalog request at all,
  version-hint.text comes to name a metadata file whose current snapshot is the
  table's, and the rows read through it equal /scan at every snapshot; loadTable
  then answers that same file.
- Legacy: a table written before the export (its DV rows `legacy_ref`, some in a
  Puffin file written here whose blob names the data file by its relative path,
  as strike wrote them before) exported: every DV is moved to a new Puffin file
  whose referenced-data-file is the data file's URI, the DV endpoint's bytes and
  ETag do not change, and the reader's rows are right.

Servers run with --iceberg-interval 0 (the export runs when the test asks through
loadTable) except in Background. Run with class names as arguments to run a part.
"""
import json
import os
import sys
import time
import unittest

import harness as h
import http_util as hu
import iceberg_util as iu

S = None      # --iceberg-interval 0: the export runs when loadTable asks
DBNAME = None  # DB as create_db named it (with "_s3" under the s3 fixture)
DB = iu.db_name("iceberg_export", sys.argv)  # the database: its name as create_db made it
ICE = "/iceberg/v1/namespaces/default/tables"


def setUpModule():
    global S, DBNAME
    h.require_env()
    iu.require_peers("avsc", "@duckdb/node-api", "roaring")
    url = h.create_db(DB)
    DBNAME = url.rsplit("/", 1)[1].split("?")[0]
    S = h.Striked(catalog=url, extra_args=["--iceberg-interval", "0"])


def tearDownModule():
    if S is not None:
        S.close_clean()


def upsert(tc, s, table, rows):
    return hu.ok_changes(tc, s, table, [{"op": "upsert", "row": r} for r in rows])["seq"]


def delete_keys(tc, s, table, ids):
    return hu.ok_changes(tc, s, table, [{"op": "delete", "key": {"id": i}} for i in ids])["seq"]


def load(tc, s, table):
    r = s.req("GET", f"{ICE}/{table}")
    tc.assertEqual(r.status, 200, r)
    tc.assertEqual(r.header("Content-Type"), "application/json")
    return r


class Exported:
    """What the export left for one table at one moment, read from the store."""

    def __init__(self, tc, s, store, table, uuid):
        self.tc, self.s, self.store, self.table, self.uuid = tc, s, store, table, uuid

    def verify(self, what):
        """The checks every step ends with; returns the loadTable answer."""
        tc, s, store = self.tc, self.s, self.store
        seqs = iu.retained(tc, s, self.table)
        r = load(tc, s, self.table)
        doc = r.json()
        meta, loc = doc["metadata"], doc["metadata-location"]
        tc.assertEqual(r.header("ETag"), f'"{self.uuid}-{loc.rsplit("/v", 1)[1].split(".")[0]}"')
        store.refresh()
        mdir = os.path.join(store.root(), "tables", self.uuid, "metadata")
        # the metadata at its location is the answer's, and version-hint.text names it
        with open(store.local(loc)) as f:
            tc.assertEqual(json.load(f), meta, what)
        with open(os.path.join(mdir, "version-hint.text")) as f:
            hint = int(f.read().strip())
        tc.assertEqual(os.path.basename(store.local(loc)), f"v{hint}.metadata.json", what)
        tc.assertEqual(meta["location"], f"{store.uri_root()}/tables/{self.uuid}")
        # the retained snapshots (seq 0, creation, is empty and has no Iceberg snapshot)
        want = {q for q in seqs if q > 0}
        tc.assertEqual({x["snapshot-id"] for x in meta["snapshots"]}, want, what)
        tc.assertEqual({x["sequence-number"] for x in meta["snapshots"]}, want, what)
        tc.assertEqual(meta["current-snapshot-id"], max(seqs), what)
        tc.assertEqual(meta["last-sequence-number"], max(seqs), what)
        # the reader's rows at every snapshot, and the spec's invariants
        rows, rep = iu.rows_and_check(tc, loc, store.maps())
        iu.assert_check_clean(tc, rep, what)
        must_run = ["snapshot.sequence", "lineage.snapshot", "manifest.avro-schema", "data-file.field-ids"]
        if any(x["summary"].get("total-delete-files", "0") != "0" for x in meta["snapshots"]):
            must_run += ["dv.blob-property", "dv.blob-range", "dv.blob-crc", "dv.one-per-file"]
        for name in must_run:
            tc.assertGreater(rep["ran"].get(name, 0), 0, f"{what}: check {name} never ran")
        tc.assertEqual(set(rows), want, what)
        for q in sorted(want):
            got = iu.norm_reader(rows[q])
            exp = iu.norm_scan(iu.scan_at(tc, s, self.table, q))
            tc.assertEqual(got, exp, f"{what}: snapshot {q}: the reader's rows differ from /scan")
        # metadata/ holds what the retained snapshots need, and nothing more
        self.check_folder(meta, mdir, hint, what)
        self.meta, self.loc = meta, loc
        return r

    def check_folder(self, meta, mdir, hint, what):
        tc, store = self.tc, self.store
        present = iu.table_files(store.root(), self.uuid, "metadata")
        lists = {os.path.basename(x["manifest-list"]) for x in meta["snapshots"]}
        self.dumps = iu.avro_dump(tc, [store.local(x["manifest-list"]) for x in meta["snapshots"]])
        manifests = set()
        for d in self.dumps.values():
            for m in d["records"]:
                manifests.add(os.path.basename(store.local(m["manifest_path"])))
        versions = {f for f in present if f.endswith(".metadata.json")}
        tc.assertIn(f"v{hint}.metadata.json", versions)
        tc.assertLessEqual(len(versions), 11, f"{what}: {sorted(versions)}")
        tc.assertEqual(present - versions - {"version-hint.text"}, lists | manifests,
                       f"{what}: metadata/ holds other files than the retained snapshots' lists and manifests")
        # every metadata file left lists only retained snapshots
        ids = {x["snapshot-id"] for x in meta["snapshots"]}
        for v in versions:
            with open(os.path.join(mdir, v)) as f:
                old = json.load(f)
            tc.assertLessEqual({x["snapshot-id"] for x in old.get("snapshots", [])}, ids,
                               f"{what}: {v} lists an expired snapshot")
        self.manifest_files = manifests
        self.list_files = lists

    def all_metadata_text(self):
        """Every file under metadata/ as text: JSON as it is, Avro through avro-dump."""
        mdir = os.path.join(self.store.root(), "tables", self.uuid, "metadata")
        names = sorted(iu.table_files(self.store.root(), self.uuid, "metadata"))
        avro = [os.path.join(mdir, n) for n in names if n.endswith(".avro")]
        docs = iu.avro_dump(self.tc, avro)
        out = {p: json.dumps(d) for p, d in docs.items()}
        for n in names:
            if not n.endswith(".avro"):
                with open(os.path.join(mdir, n), encoding="utf-8") as f:
                    out[os.path.join(mdir, n)] = f.read()
        return out, docs


class History(unittest.TestCase):
    """One table through every kind of commit, verified after each."""

    def test_history(self):
        t0 = time.monotonic()
        table = "every_type"
        r = S.req("POST", "/v1/tables", iu.table_def(table))
        self.assertEqual(r.status, 201, r)
        uuid = r.json()["uuid"]
        store = iu.Store(S)
        x = Exported(self, S, store, table, uuid)
        try:
            self.run_history(x, table, uuid, store)
        finally:
            store.close()
        print(f"history: {time.monotonic() - t0:.1f} s", flush=True)

    def run_history(self, x, table, uuid, store):
        # 1. upserts: 40 new keys in two commits (two files); the erasure markers among them:
        #    id 0 is the smallest key (the lower bound of `id`), its `s` sorts above every
        #    other string (the upper bound of `s`), its `l` is -2^63, below every other row's
        marker = dict(iu.mkrow(0), s="~~ERASED-KEY-42~", l=-2 ** 63)
        upsert(self, S, table, [marker] + [iu.mkrow(k) for k in range(1, 20)])
        upsert(self, S, table, [iu.mkrow(k) for k in range(20, 40)])
        r = x.verify("upserts")
        if store.s3:
            cfg = r.json()["config"]
            self.assertEqual(cfg.get("s3.endpoint"), h.s3_endpoint(), cfg)
            self.assertEqual(cfg.get("s3.region"), "us-east-1", cfg)
            self.assertEqual(cfg.get("s3.path-style-access"), "true", cfg)
        else:
            self.assertFalse([k for k in r.json()["config"] if k.startswith("s3.")], r.json()["config"])
        # 2. new keys and updated keys in one commit (an update: a DV and a new row)
        upsert(self, S, table, [iu.mkrow(k, 1) for k in range(30, 45)])
        x.verify("upserts of new and updated keys")
        # 3. deletes by key: one (inline in the catalog until the export moves it), then several
        delete_keys(self, S, table, [3])
        delete_keys(self, S, table, [5, 6, 21, 33, 44])
        x.verify("deletes by key")
        # 4. a delete by filter
        r = S.req("POST", f"/v1/tables/{table}/delete",
                  {"filter": {"type": "and", "left": {"type": "gt-eq", "term": "id", "value": 10},
                              "right": {"type": "lt", "term": "id", "value": 14}}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["deleted"], 4)
        x.verify("delete by filter")
        # 5. a compaction of every file with a deleted row
        r = S.req("POST", f"/v1/tables/{table}/compact", {"min_deleted_fraction": 0.01})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["rewritten_files"], 0, r)
        x.verify("compaction")
        lists_before = set(x.list_files)
        manifests_before = set(x.manifest_files)
        # 6. more commits, then an expiry keeping the last two snapshots
        upsert(self, S, table, [iu.mkrow(k, 2) for k in (1, 2, 50)])
        delete_keys(self, S, table, [2])
        r = S.req("POST", f"/v1/tables/{table}/expire", {"retain_last": 2})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["expired_snapshots"], 0)
        x.verify("expiry")
        self.assertEqual(len(x.meta["snapshots"]), 2)
        gone_lists = lists_before - x.list_files
        self.assertTrue(gone_lists, "no manifest list of an expired snapshot went")
        self.assertFalse(gone_lists & iu.table_files(store.root(), uuid, "metadata"))
        # the manifests the compaction replaced were listed only by expired snapshots
        self.assertTrue(manifests_before - x.manifest_files, "no manifest went with the expired snapshots")
        # 7. an erasure by key, then 8. one by filter
        # (rows 60 and 61, in a file of their own: `l` 2^63-1, above every other row's)
        upsert(self, S, table, [dict(iu.mkrow(k, 3), s=f"zzz-ERASED-FLT-{k}", l=2 ** 63 - 1) for k in (60, 61)])
        self.erase(x, table, uuid, store, {"keys": [{"id": 0}]},
                   {1: [iu.encode_long(0)], 4: [iu.encode_long(-2 ** 63)],
                    6: [iu.encode_string("~~ERASED-KEY-42~")]},
                   ["ERASED-KEY"])
        self.erase(x, table, uuid, store, {"filter": {"type": "starts-with", "term": "s", "value": "zzz-ERASED"}},
                   {1: [iu.encode_long(61)], 4: [iu.encode_long(2 ** 63 - 1)],
                    6: [iu.encode_string("zzz-ERASED-FLT-60"), iu.encode_string("zzz-ERASED-FLT-61")]},
                   ["ERASED-FLT"])

    def erase(self, x, table, uuid, store, body, values, needles):
        """An erasure, and what it must leave behind in metadata/: values {field id:
        [hex of Iceberg's single-value encoding]} that some column bound held before."""
        x.verify("before the erasure")
        texts, docs = x.all_metadata_text()
        held = {(f, v) for d in docs.values() for f, v in iu.bounds_of(d)}
        # the control: before the erasure, the bounds hold each erased value (or a prefix of the
        # string, when bounds are truncated)
        for fid, vals in values.items():
            self.assertTrue(any(f == fid and any(v == w or (fid == 6 and w.startswith(v) and len(v) >= 16)
                                                 for w in vals) for f, v in held),
                            f"no column bound of field {fid} held {vals} before the erasure: the check "
                            f"after it would prove nothing")
        before = {k: iu.table_files(store.root(), uuid, k) for k in ("data", "dv")}
        r = S.req("POST", f"/v1/tables/{table}/erasures", body)
        if r.status != 201:
            self.fail(f"{r}\nreceipts: {S.req('GET', f'/v1/tables/{table}/erasures').body.decode()[-3000:]}\n"
                      f"{S.logs()[-3000:]}")
        rec = r.json()
        self.assertEqual(rec["status"], "verified", rec)
        ck = {c["check"]: c for c in rec["checks"]}
        self.assertIn("iceberg_metadata", ck, rec)
        self.assertTrue(ck["iceberg_metadata"]["passed"], ck["iceberg_metadata"])
        self.assertTrue(all(c["passed"] for c in rec["checks"]), rec["checks"])
        x.verify(f"erasure {json.dumps(body)}")
        # no snapshot from before the erasure remains
        self.assertGreaterEqual(min(s["snapshot-id"] for s in x.meta["snapshots"]), rec["delete_seq"])
        after = {k: iu.table_files(store.root(), uuid, k) for k in ("data", "dv")}
        purged = (before["data"] - after["data"]) | (before["dv"] - after["dv"])
        self.assertTrue(before["data"] - after["data"], "the erasure purged no data file")
        texts, docs = x.all_metadata_text()
        for path, text in texts.items():
            for name in purged:
                self.assertNotIn(name, text, f"{path} names the purged {name}")
            for n in needles:
                self.assertNotIn(n, text, f"{path} holds {n}")
                self.assertNotIn(n.encode().hex(), text, f"{path} holds {n} (hex)")
        for path, d in docs.items():
            for fid, v in iu.bounds_of(d):
                for w in values.get(fid, []):
                    self.assertFalse(v == w or (fid == 6 and w.startswith(v) and len(v) >= 16),
                                     f"{path}: a column bound of field {fid} holds an erased value")


class Background(unittest.TestCase):
    """The background export (default --iceberg-interval): files fresh without any request."""

    def test_version_hint_follows_commits(self):
        s = h.Striked(catalog=h.create_db(DB + "_bg"))
        store = iu.Store(s)
        try:
            r = s.req("POST", "/v1/tables", iu.table_def("bg"))
            self.assertEqual(r.status, 201, r)
            uuid = r.json()["uuid"]
            seq1 = upsert(self, s, "bg", [iu.mkrow(k) for k in range(30)])
            self.wait_and_read(s, store, uuid, seq1)
            delete_keys(self, s, "bg", [4, 7, 9])
            seq2 = upsert(self, s, "bg", [iu.mkrow(k, 1) for k in range(25, 35)])
            hint, meta = self.wait_and_read(s, store, uuid, seq2)
            # loadTable answers the file the background task wrote (the table did not move since)
            r = load(self, s, "bg")
            self.assertEqual(r.json()["metadata-location"],
                             f"{store.uri_root()}/tables/{uuid}/metadata/v{hint}.metadata.json")
            self.assertEqual(r.json()["metadata"], meta)
            self.assertEqual(r.header("ETag"), f'"{uuid}-{hint}"')
            self.assertEqual(iu.retained(self, s, "bg"), [0, 1, 2, 3])
            s.close_clean()
        finally:
            store.close()
            s.close()

    def wait_and_read(self, s, store, uuid, seq):
        """Until version-hint.text names a metadata file whose current snapshot is seq
        (the background task's period is 5 s); then the rows through it."""
        deadline = time.monotonic() + 90
        while True:
            store.refresh()
            mdir = os.path.join(store.root(), "tables", uuid, "metadata")
            try:
                with open(os.path.join(mdir, "version-hint.text")) as f:
                    hint = int(f.read().strip())
                with open(os.path.join(mdir, f"v{hint}.metadata.json")) as f:
                    meta = json.load(f)
                if meta.get("current-snapshot-id") == seq:
                    break
            except (OSError, ValueError):
                pass
            self.assertLess(time.monotonic(), deadline, f"no metadata of snapshot {seq} after 90 s")
            time.sleep(0.5)
        path = os.path.join(mdir, f"v{hint}.metadata.json")
        rows, rep = iu.rows_and_check(self, path, store.maps())
        iu.assert_check_clean(self, rep, f"v{hint}")
        self.assertEqual(set(rows), set(range(1, seq + 1)))
        for q in rows:
            self.assertEqual(iu.norm_reader(rows[q]), iu.norm_scan(iu.scan_at(self, s, "bg", q)), f"snapshot {q}")
        return hint, meta


class ExpiryBetweenExports(unittest.TestCase):
    """A compaction and an expiry between two exports: the expiry deletes the catalog rows of
    the files the compaction replaced before any export saw them go; the next export must
    still leave them out of every manifest (their blobs are deleted after a grace)."""

    def test_compaction_then_expiry_before_the_export(self):
        table = "compact_expire"
        r = S.req("POST", "/v1/tables", iu.table_def(table))
        self.assertEqual(r.status, 201, r)
        upsert(self, S, table, [iu.mkrow(k) for k in range(10)])
        upsert(self, S, table, [iu.mkrow(k) for k in range(10, 20)])
        delete_keys(self, S, table, [2, 3, 12])
        load(self, S, table)  # exported up to here
        r = S.req("POST", f"/v1/tables/{table}/compact", {"min_deleted_fraction": 0.01})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["rewritten_files"], 0)
        r = S.req("POST", f"/v1/tables/{table}/expire", {"retain_last": 1})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["expired_snapshots"], 0)
        # the replaced files' catalog rows are gone (their blobs wait out their grace)
        n = h.sql(DBNAME, "SELECT count(*) FROM strike.data_files d JOIN strike.tables t ON t.id = d.table_id "
                      f"WHERE t.name = '{table}' AND d.removed_seq IS NOT NULL")
        self.assertEqual(n, [["0"]])
        x = Exported(self, S, iu.Store(S), table, S.req("GET", f"/v1/tables/{table}").json()["uuid"])
        x.verify("compaction and expiry between two exports")
        self.assertEqual(len(x.meta["snapshots"]), 1)


class Statistics(unittest.TestCase):
    """Column statistics of a file holding a double beyond 2^63 (1.7976931348623157e308):
    the catalog has its min/max (data_files.stats), so its manifest entry has bounds and
    null counts, as every other file's does."""

    def test_bounds_with_doubles_beyond_int64(self):
        table = "extreme_doubles"
        r = S.req("POST", "/v1/tables", iu.table_def(table))
        self.assertEqual(r.status, 201, r)
        rows = [dict(iu.mkrow(k), d=d) for k, d in ((1, 1.7976931348623157e308), (2, -1e300), (3, 0.5), (4, None))]
        upsert(self, S, table, rows)
        upsert(self, S, table, [dict(iu.mkrow(9), d=0.25)])  # a file of ordinary doubles: the control
        meta = load(self, S, table).json()["metadata"]
        store = iu.Store(S)
        (lst,) = iu.avro_dump(self, [store.local(meta["snapshots"][-1]["manifest-list"])]).values()
        entries = [e for d in iu.avro_dump(self, [store.local(m["manifest_path"]) for m in lst["records"]]).values()
                   for e in d["records"]]
        self.assertEqual(len(entries), 2)
        by_rows = {e["data_file"]["record_count"]: e["data_file"] for e in entries}
        for n, lo, hi in ((1, 0.25, 0.25), (4, -1e300, 1.7976931348623157e308)):
            with self.subTest(file=f"{n} rows"):
                f = by_rows[n]
                bounds = dict(iu.bounds_of({"records": [{"data_file": {"lower_bounds": f["lower_bounds"]}}]}))
                self.assertEqual(bounds.get(5), iu.encode_double(lo), f"lower_bounds {f['lower_bounds']}")
                bounds = dict(iu.bounds_of({"records": [{"data_file": {"upper_bounds": f["upper_bounds"]}}]}))
                self.assertEqual(bounds.get(5), iu.encode_double(hi), f"upper_bounds {f['upper_bounds']}")
                self.assertEqual(bounds.get(1), iu.encode_long(9 if n == 1 else 4))
                nulls = {x["key"]: x["value"] for x in f["null_value_counts"] or []}
                self.assertEqual(nulls.get(5), 0 if n == 1 else 1, f"null_value_counts {f['null_value_counts']}")


class Schemas(unittest.TestCase):
    """Schema changes (gRPC AlterTable) between commits: the metadata lists every schema, each
    snapshot names the one it was written with, and the reader, resolving columns by field id
    at each snapshot's schema, reads the old files' missing columns as null."""

    def test_schema_history(self):
        import grpc_client as gc
        from grpc_client import pb
        table = "evolving"
        spec = {"name": table, "primary_key": ["id"],
                "columns": [{"name": "id", "type": "long", "required": True},
                            {"name": "s", "type": "string"}, {"name": "n", "type": "int"}]}
        r = S.req("POST", "/v1/tables", spec)
        self.assertEqual(r.status, 201, r)
        store = iu.Store(S)
        c = gc.Client(S.grpc_port)
        try:
            s1 = upsert(self, S, table, [{"id": k, "s": f"a{k}", "n": k} for k in (1, 2, 3)])

            def alter(*changes):
                return c.call("AlterTable", pb.AlterTableRequest(table=table, changes=list(changes)))
            t = alter(pb.SchemaChange(add=pb.Column(name="phone", type="string")),
                      pb.SchemaChange(add=pb.Column(name="flag", type="boolean", required=True),
                                      default_json="true"))
            self.assertEqual(t.schema_id, 1)
            s_add = t.seq
            s2 = upsert(self, S, table, [{"id": 4, "s": "a4", "n": 4, "phone": "p4", "flag": False},
                                         {"id": 1, "s": "b1", "n": 1, "phone": "p1", "flag": True}])
            t = alter(pb.SchemaChange(widen=pb.WidenColumn(column="n", type="long")),
                      pb.SchemaChange(rename=pb.RenameColumn(**{"from": "s", "to": "label"})),
                      pb.SchemaChange(drop="phone"))
            self.assertEqual(t.schema_id, 2)
            s_alter = t.seq
            s3 = upsert(self, S, table, [{"id": 5, "label": "c5", "n": 5_000_000_000, "flag": False}])
        finally:
            c.close()
        r = load(self, S, table)
        meta, loc = r.json()["metadata"], r.json()["metadata-location"]
        store.refresh()
        with open(store.local(loc)) as f:
            self.assertEqual(json.load(f), meta)  # the REST answer is the file
        # every schema, by id; field ids stable across the rename and the widening
        schemas = {x["schema-id"]: [(f["id"], f["name"], f["type"], f["required"]) for f in x["fields"]]
                   for x in meta["schemas"]}
        # the required column added with a default: v3's initial-default and write-default
        flag = [f for f in meta["schemas"][-1]["fields"] if f["name"] == "flag"][0]
        self.assertEqual((flag.get("initial-default"), flag.get("write-default")), (True, True), flag)
        self.assertEqual(schemas, {
            0: [(1, "id", "long", True), (2, "s", "string", False), (3, "n", "int", False)],
            1: [(1, "id", "long", True), (2, "s", "string", False), (3, "n", "int", False),
                (4, "phone", "string", False), (5, "flag", "boolean", True)],
            2: [(1, "id", "long", True), (2, "label", "string", False), (3, "n", "long", False),
                (5, "flag", "boolean", True)]})
        self.assertEqual(meta["current-schema-id"], 2)
        self.assertEqual(meta["last-column-id"], 5)
        # each snapshot names the schema it was written with
        at = {x["snapshot-id"]: x["schema-id"] for x in meta["snapshots"]}
        self.assertEqual({q: at[q] for q in (s1, s_add, s2, s_alter, s3)},
                         {s1: 0, s_add: 1, s2: 1, s_alter: 2, s3: 2}, at)
        # the reader: each snapshot at its schema; columns a file lacks read null
        rows, rep = iu.rows_and_check(self, loc, store.maps())
        iu.assert_check_clean(self, rep, "schema history")

        def snap(q):
            x = rows[q]
            return x["columns"], sorted(x["rows"], key=lambda r: int(r[0]))
        cols, got = snap(s1)
        self.assertEqual(cols, ["id", "s", "n"])
        self.assertEqual(got, [[1, "a1", 1], [2, "a2", 2], [3, "a3", 3]])
        cols, got = snap(s2)
        self.assertEqual(cols, ["id", "s", "n", "phone", "flag"])
        # rows 2 and 3 are in the file written before the add: phone null, flag its default
        self.assertEqual(got, [[1, "b1", 1, "p1", True], [2, "a2", 2, None, True],
                               [3, "a3", 3, None, True], [4, "a4", 4, "p4", False]])
        cols, got = snap(s3)
        self.assertEqual(cols, ["id", "label", "n", "flag"])
        self.assertEqual([[int(r[0]), r[1], int(r[2]), r[3]] for r in got],
                         [[1, "b1", 1, True], [2, "a2", 2, True], [3, "a3", 3, True], [4, "a4", 4, False],
                          [5, "c5", 5_000_000_000, False]])
        store.close()


class Legacy(unittest.TestCase):
    """A table written before the export: DV rows legacy_ref, Puffin blobs naming the
    data file by its relative path."""

    def test_legacy_dvs_are_moved(self):
        table = "legacy"
        r = S.req("POST", "/v1/tables", iu.table_def(table))
        self.assertEqual(r.status, 201, r)
        uuid = r.json()["uuid"]
        upsert(self, S, table, [iu.mkrow(k) for k in range(0, 30)])
        upsert(self, S, table, [iu.mkrow(k) for k in range(30, 60)])
        delete_keys(self, S, table, [1, 2, 31])
        delete_keys(self, S, table, [40])            # inline in the catalog
        upsert(self, S, table, [iu.mkrow(k, 1) for k in (3, 33, 60)])
        delete_keys(self, S, table, [4, 5, 34, 35])
        # /v1 plans flush the inline DVs to Puffin files at each snapshot, so that every DV
        # row has a Puffin file (the export has not run: --iceberg-interval 0, no loadTable)
        seqs = iu.retained(self, S, table)
        for q in seqs:
            self.assertEqual(S.req("POST", f"/v1/tables/{table}/plan", {"snapshot": q}).status, 200)
        self.assertEqual(h.sql(DBNAME, f"SELECT count(*) FROM strike.iceberg_tables i JOIN strike.tables t ON "
                                   f"t.id = i.table_id WHERE t.name = '{table}' AND i.exported_seq > 0"),
                         [["0"]], "the table was exported already")
        dvs = h.sql(DBNAME, "SELECT d.data_file_id, d.added_seq, d.puffin_path, d.blob_offset, d.blob_length, f.path "
                        "FROM strike.deletion_vectors d JOIN strike.data_files f ON f.id = d.data_file_id "
                        f"JOIN strike.tables t ON t.id = d.table_id WHERE t.name = '{table}' "
                        "AND d.puffin_path IS NOT NULL ORDER BY d.data_file_id, d.added_seq")
        inline = h.sql(DBNAME, "SELECT count(*) FROM strike.deletion_vectors d JOIN strike.tables t ON "
                           f"t.id = d.table_id WHERE t.name = '{table}' AND d.inline_blob IS NOT NULL")
        self.assertEqual(inline, [["0"]])
        self.assertGreaterEqual(len(dvs), 4, dvs)
        # the DV endpoint before: every (file, snapshot) with a DV
        before = self.dv_answers(table, seqs)
        # as strike wrote them before the export: half the DVs in Puffin files of their own
        # whose blob names the data file by its relative path, all of them legacy_ref
        store = iu.Store(S)
        legacy_paths = []
        for n, (fid, seq, puffin, off, length, data_path) in enumerate(dvs):
            if n % 2 == 1:
                continue
            with open(os.path.join(store.root(), puffin), "rb") as f:
                blob_file = f.read()
            footer = iu.puffin_footer(blob_file)
            (meta,) = [b for b in footer["blobs"] if b["offset"] == int(off)]
            self.assertEqual(meta["properties"]["referenced-data-file"], f"{store.uri_root()}/{data_path}")
            meta = {k: v for k, v in meta.items() if k not in ("offset", "length")}
            meta["properties"] = dict(meta["properties"], **{"referenced-data-file": data_path})
            data = iu.puffin_write([(blob_file[int(off):int(off) + int(length)], meta)])
            key = f"tables/{uuid}/dv/legacy-{n}.puffin"
            with open(os.path.join(store.root(), key), "wb") as f:
                f.write(data)
            legacy_paths.append(key)
            h.sql(DBNAME, f"UPDATE strike.deletion_vectors SET puffin_path = '{key}', blob_offset = 4, "
                      f"blob_length = {int(length)}, legacy_ref = true WHERE data_file_id = {fid} "
                      f"AND added_seq = {seq}")
        h.sql(DBNAME, "UPDATE strike.deletion_vectors d SET legacy_ref = true FROM strike.tables t WHERE "
                  f"t.id = d.table_id AND t.name = '{table}'")
        self.assertGreaterEqual(len(legacy_paths), 2)
        self.assertEqual(h.sql(DBNAME, "SELECT count(*) FILTER (WHERE d.legacy_ref), count(*) FROM "
                                   "strike.deletion_vectors d JOIN strike.tables t ON t.id = d.table_id "
                                   f"WHERE t.name = '{table}'"), [[str(len(dvs)), str(len(dvs))]])
        # the DV endpoint reads the legacy files the same
        self.assertEqual(self.dv_answers(table, seqs), before)
        # the export (loadTable) moves every DV
        r = load(self, S, table)
        self.assertEqual(h.sql(DBNAME, "SELECT count(*) FROM strike.deletion_vectors d JOIN strike.tables t ON "
                                   f"t.id = d.table_id WHERE t.name = '{table}' AND (d.legacy_ref OR "
                                   "d.puffin_path LIKE '%/legacy-%')"), [["0"]])
        self.assertEqual(self.dv_answers(table, seqs), before, "the DV endpoint's bytes or ETag changed")
        meta, loc = r.json()["metadata"], r.json()["metadata-location"]
        rows, rep = iu.rows_and_check(self, loc, store.maps())
        iu.assert_check_clean(self, rep, "legacy")
        self.assertGreater(rep["ran"].get("dv.blob-property", 0), 0)
        self.assertEqual(set(rows), {q for q in seqs if q > 0})
        for q in rows:
            self.assertEqual(iu.norm_reader(rows[q]), iu.norm_scan(iu.scan_at(self, S, table, q)), f"snapshot {q}")
        # every DV entry names a Puffin file whose blob names the data file's URI (the reader's
        # dv.blob-property checked it; here the files themselves: none is a legacy one)
        docs = iu.avro_dump(self, [store.local(s["manifest-list"]) for s in meta["snapshots"]])
        manifests = {m["manifest_path"] for d in docs.values() for m in d["records"]}
        seen = 0
        for d in iu.avro_dump(self, [store.local(m) for m in manifests]).values():
            for e in d["records"]:
                f = e["data_file"]
                if f["content"] != 1:
                    continue
                seen += 1
                self.assertNotIn("/legacy-", f["file_path"])
                self.assertTrue(f["referenced_data_file"].startswith(store.uri_root() + "/tables/"))
                with open(store.local(f["file_path"]), "rb") as pf:
                    footer = iu.puffin_footer(pf.read())
                (b,) = [b for b in footer["blobs"] if b["offset"] == f["content_offset"]]
                self.assertEqual(b["properties"]["referenced-data-file"], f["referenced_data_file"])
        self.assertGreaterEqual(seen, len(dvs))

    def dv_answers(self, table, seqs):
        """{(file id, seq): (bytes, ETag)} of the DV endpoint for every live file at every snapshot."""
        out = {}
        for q in seqs:
            for f in S.req("POST", f"/v1/tables/{table}/plan", {"snapshot": q}).json()["files"]:
                if f["dv"] is None:
                    continue
                r = S.req("GET", f"/v1/tables/{table}/files/{f['id']}/dv?snapshot={q}&format=iceberg-dv")
                self.assertEqual(r.status, 200, r)
                out[(f["id"], q)] = (r.body, r.header("ETag"))
        self.assertTrue(out)
        return out


if __name__ == "__main__":
    unittest.main(verbosity=2)
