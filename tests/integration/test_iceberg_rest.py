"""The Iceberg REST catalog at /iceberg (issue 29, docs/API.md "Iceberg REST catalog"):
every route, valid and invalid, its answers validated against the schemas of the
Iceberg REST OpenAPI document of Iceberg 1.11.0 ($STRIKE_SPECS_DIR/
iceberg-rest-catalog-open-api.yaml) by npm ajv (iceberg_openapi.mjs), and the
scans it plans read by the tests' own reader (iceberg_read.mjs tasks: DuckDB
read_parquet(file_row_number=true) minus the DV positions it decodes from each
delete file's Puffin range).

- Routes: each `/iceberg` row of `striked --list-routes` has a case here (a new
  route without one fails); reads answer their schema (CatalogConfig,
  ListNamespacesResponse, GetNamespaceResponse, ListTablesResponse,
  LoadTableResult and its TableMetadata, PlanTableScanResult,
  FetchPlanningResult, FetchScanTasksResult), writes 501
  UnsupportedOperationException, an unknown namespace 404
  NoSuchNamespaceException, an unknown table 404 NoSuchTableException, every
  error an IcebergErrorResponse as application/json with its code. config's
  endpoints are the documented routes, each a path and method of the document.
- Catalog: namespaces and their paging, table listing with pageSize and
  next-page-token, loadTable's ETag (304 on If-None-Match, without a body; a new
  commit changes it), HEAD.
- Planning: planTableScan with and without snapshot-id, with a filter, with
  select: the rows of the planned files minus their DVs equal /scan at that
  snapshot (with the filter applied on both sides); each DV its own delete-file
  entry whose referenced-data-file, content-offset, content-size-in-bytes,
  record-count and file-size-in-bytes are the blob's place, property and
  cardinality in the Puffin footer and the file's size, some of them sharing one
  Puffin file. A plan id works on another striked of the same catalog (GET the
  same tasks, DELETE), and is 404 NoSuchPlanIdException after DELETE.
- Tasks: a table of 1,001 data files (one-row commits, no compaction) plans as
  plan-tasks; each fetched with POST .../tasks, together exactly the table's
  files and rows.
- Bad input, each in the Iceberg error model with nothing changed (tables,
  seqs, ETags): malformed bodies, unknown members, bad filters (unknown column,
  wrong type), case-sensitive false and incremental scans (406), an unknown
  or expired snapshot (404 naming it, not NoSuchTableException: Snapshots),
  bad plan ids and plan tasks, wrong methods (405 with Allow), table names that
  cannot be valid (400), bad page sizes.
- Auth (tokens on): no token or an unknown one 401 NotAuthorizedException with
  WWW-Authenticate, a token without read on the table 403 ForbiddenException,
  the listing shows only the tables the token may read.
Run with class names as arguments to run a part.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness as h
import iceberg_util as iu

SPEC = os.path.join(os.environ.get("STRIKE_SPECS_DIR", ""), "iceberg-rest-catalog-open-api.yaml")
DB = iu.db_name("iceberg_rest", sys.argv)  # the database: its name as create_db made it
NS = "/iceberg/v1/namespaces"
TB = f"{NS}/default/tables"
S = None
URL = None
DBNAME = None  # DB as create_db named it (with "_s3" under the s3 fixture)
SEQ = {}  # name of a point in the history -> seq
# the routes config lists (docs/API.md), in the OpenAPI document's terms
ENDPOINTS = {
    "GET /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
}


def setUpModule():
    global S, URL, DBNAME
    h.require_env()
    iu.require_peers("ajv", "ajv-formats", "yaml", "avsc", "@duckdb/node-api", "roaring")
    if not os.path.isfile(SPEC):
        raise AssertionError(f"the Iceberg REST OpenAPI document is missing: {SPEC}")
    URL = h.create_db(DB)
    DBNAME = URL.rsplit("/", 1)[1].split("?")[0]
    S = h.Striked(catalog=URL)
    build_history(S)


def tearDownModule():
    if S is not None:
        S.close_clean()


def changes(s, table, chs):
    r = s.req("POST", f"/v1/tables/{table}/changes", {"changes": chs})
    assert r.status == 200, r
    return r.json()["seq"]


def build_history(s):
    """Table `ev`: three files of disjoint keys, DVs on all three in one commit,
    updates (new DVs and a new file), a single-key delete (inline until planned)."""
    assert s.req("POST", "/v1/tables", iu.table_def("ev")).status == 201
    for lo in (0, 10, 20):
        SEQ[f"file{lo}"] = changes(s, "ev", [{"op": "upsert", "row": iu.mkrow(k)} for k in range(lo, lo + 10)])
    SEQ["dvs"] = changes(s, "ev", [{"op": "delete", "key": {"id": k}} for k in (1, 11, 21, 22)])
    SEQ["updates"] = changes(s, "ev", [{"op": "upsert", "row": iu.mkrow(k, 1)} for k in (5, 15, 30, 31, 32)])
    SEQ["inline"] = changes(s, "ev", [{"op": "delete", "key": {"id": 25}}])
    assert s.req("POST", "/v1/tables", dict(iu.table_def("other"))).status == 201
    changes(s, "other", [{"op": "upsert", "row": iu.mkrow(k)} for k in range(3)])


def openapi(*args, stdin=None):
    r = subprocess.run(["node", iu.OPENAPI, SPEC, *args], capture_output=True, text=True, input=stdin, timeout=300)
    return r.returncode, r.stdout, r.stderr


class Base(unittest.TestCase):
    """Collects every JSON answer with the schema it must meet; validated at the end."""

    def setUp(self):
        self.docs = []

    def tearDown(self):
        if not self.docs:
            return
        rc, out, err = openapi(stdin=json.dumps(self.docs))
        self.assertIn(rc, (0, 1), err)
        bad = [(d, r) for d, r in zip(self.docs, json.loads(out)) if not r["ok"]]
        self.assertEqual(bad, [], "answers that do not meet the OpenAPI document's schemas:\n" +
                         "\n".join(f"{r['schema']}: {r['errors'][:6]}\n  {json.dumps(d[1])[:600]}" for d, r in bad))

    def ok(self, r, schema, status=200):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("Content-Type"), "application/json", r)
        doc = r.json()
        self.docs.append([schema, doc])
        return doc

    def err(self, r, status, etype=None, head=False):
        """An Iceberg error answer: {"error": {"message", "type", "code"}}, application/json."""
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("Content-Type"), "application/json", r)
        if head:
            self.assertEqual(r.body, b"")
            return None
        doc = r.json()
        self.docs.append(["IcebergErrorResponse", doc])
        self.assertEqual(doc["error"]["code"], status, doc)
        self.assertTrue(doc["error"]["message"], doc)
        if etype is not None:
            self.assertEqual(doc["error"]["type"], etype, doc)
        return doc

    def load(self, table, s=None):
        return self.ok((s or S).req("GET", f"{TB}/{table}"), "LoadTableResult")

    def plan(self, table, body, s=None):
        return self.ok((s or S).req("POST", f"{TB}/{table}/plan", body), "PlanTableScanResult")

    def plan_rows(self, table, groups, s=None):
        """The reader's rows of planned tasks (iceberg_read.mjs tasks)."""
        loc = self.load(table, s)["metadata-location"]
        store = iu.Store(s or S)
        store.refresh()
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(groups, f)
        try:
            rc, out, err = iu.node("tasks", loc, f.name, *store.maps())
        finally:
            os.unlink(f.name)
            store.close()
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def state(self):
        """What a refused request must not change: the tables, their seqs and ETags."""
        tables = {t["name"]: t["seq"] for t in S.req("GET", "/v1/tables").json()["tables"]}
        etags = {t: S.req("GET", f"{TB}/{t}").header("ETag") for t in sorted(tables)}
        plans = h.sql(DBNAME, "SELECT count(*) FROM strike.iceberg_plans")
        return tables, etags, plans


class Routes(Base):
    """Each /iceberg route of --list-routes, with a valid and an invalid request."""

    def test_every_route(self):
        out = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--list-routes"], check=True,
                             capture_output=True, text=True).stdout
        routes = [(f[1], f[2]) for f in (line.split() for line in out.splitlines())
                  if f[0] == "http" and f[2].startswith("/iceberg/")]
        self.assertGreaterEqual(len(routes), 20)
        plan_id = self.plan("ev", {})["plan-id"]
        before = self.state()
        t, ns = "{t}", "{ns}"
        cases = {
            ("GET", "/iceberg/v1/config"): lambda p: self.ok(S.req("GET", p), "CatalogConfig"),
            ("HEAD", "/iceberg/v1/config"): lambda p: self.head_ok(p, 200),
            ("GET", "/iceberg/v1/namespaces"): lambda p: self.ok(S.req("GET", p), "ListNamespacesResponse"),
            ("HEAD", "/iceberg/v1/namespaces"): lambda p: self.head_ok(p, 200),
            ("GET", f"/iceberg/v1/namespaces/{ns}"): lambda p: self.ok(S.req("GET", p), "GetNamespaceResponse"),
            ("HEAD", f"/iceberg/v1/namespaces/{ns}"): lambda p: self.head_ok(p, 204),
            ("GET", f"/iceberg/v1/namespaces/{ns}/tables"): lambda p: self.ok(S.req("GET", p), "ListTablesResponse"),
            ("HEAD", f"/iceberg/v1/namespaces/{ns}/tables"): lambda p: self.head_ok(p, 200),
            ("GET", f"/iceberg/v1/namespaces/{ns}/tables/{t}"): lambda p: self.ok(S.req("GET", p), "LoadTableResult"),
            ("HEAD", f"/iceberg/v1/namespaces/{ns}/tables/{t}"): lambda p: self.head_ok(p, 204),
            ("POST", f"/iceberg/v1/namespaces/{ns}/tables/{t}/plan"):
                lambda p: self.ok(S.req("POST", p, {}), "PlanTableScanResult"),
            ("GET", f"/iceberg/v1/namespaces/{ns}/tables/{t}/plan/{{plan}}"):
                lambda p: self.ok(S.req("GET", p), "FetchPlanningResult"),
            ("HEAD", f"/iceberg/v1/namespaces/{ns}/tables/{t}/plan/{{plan}}"): lambda p: self.head_ok(p, 200),
            ("DELETE", f"/iceberg/v1/namespaces/{ns}/tables/{t}/plan/{{plan}}"): None,  # Planning, below
            ("POST", f"/iceberg/v1/namespaces/{ns}/tables/{t}/tasks"): None,  # Tasks: a plan of plan tasks
        }
        writes = {("POST", "/iceberg/v1/namespaces"), ("DELETE", f"/iceberg/v1/namespaces/{ns}"),
                  ("POST", f"/iceberg/v1/namespaces/{ns}/properties"),
                  ("POST", f"/iceberg/v1/namespaces/{ns}/tables"),
                  ("POST", f"/iceberg/v1/namespaces/{ns}/register"),
                  ("POST", f"/iceberg/v1/namespaces/{ns}/tables/{t}"),
                  ("DELETE", f"/iceberg/v1/namespaces/{ns}/tables/{t}"), ("POST", "/iceberg/v1/tables/rename"),
                  ("POST", "/iceberg/v1/transactions/commit")}
        for method, pattern in routes:
            with self.subTest(route=f"{method} {pattern}"):
                self.assertTrue((method, pattern) in cases or (method, pattern) in writes,
                                f"{method} {pattern}: a route this test does not know")
                path = pattern.replace("{ns}", "default").replace("{t}", "ev").replace("{plan}", plan_id)
                if (method, pattern) in writes:
                    body = {} if method == "POST" else None
                    self.err(S.req(method, path, body), 501, "UnsupportedOperationException")
                    continue
                if cases[(method, pattern)] is not None:
                    cases[(method, pattern)](path)
                head = method == "HEAD"
                body = {} if method == "POST" else None
                if "{ns}" in pattern:  # an unknown namespace
                    bad = pattern.replace("{ns}", "nope").replace("{t}", "ev").replace("{plan}", plan_id)
                    self.err(S.req(method, bad, body), 404, "NoSuchNamespaceException", head=head)
                if "{t}" in pattern:  # an unknown table, and a name that cannot be valid
                    bad = pattern.replace("{ns}", "default").replace("{t}", "nope").replace("{plan}", plan_id)
                    self.err(S.req(method, bad, body), 404, "NoSuchTableException", head=head)
                    for name in ("bad-name", "a" * 129, "9lives"):
                        bad = pattern.replace("{ns}", "default").replace("{t}", name).replace("{plan}", plan_id)
                        self.err(S.req(method, bad, body), 400, "BadRequestException", head=head)
                if "{plan}" in pattern:  # an unknown plan id
                    bad = pattern.replace("{ns}", "default").replace("{t}", "ev").replace("{plan}", "no-such-plan")
                    self.err(S.req(method, bad), 404, "NoSuchPlanIdException", head=head)
                # a method the route does not have: 405 with Allow, in Iceberg's model
                r = S.req("PUT", path, {})
                self.err(r, 405)
                self.assertIn(method, r.header("Allow").replace(" ", "").split(","))
        self.assertEqual(self.state()[:2], before[:2])
        # paths outside the routes: 404 in Iceberg's model too
        self.err(S.req("GET", "/iceberg/v1/nothing"), 404)
        self.err(S.req("GET", "/iceberg/v2/config"), 404)

    def head_ok(self, path, status):
        r = S.req("HEAD", path)
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.body, b"")

    def test_config(self):
        doc = self.ok(S.req("GET", "/iceberg/v1/config"), "CatalogConfig")
        self.assertEqual(set(doc["endpoints"]), ENDPOINTS)
        self.assertEqual(len(doc["endpoints"]), len(ENDPOINTS))
        for k in ("defaults", "overrides"):
            self.assertNotIn("scan-planning-mode", doc[k])
        # every endpoint is a path and method of the document
        rc, out, err = openapi("--paths")
        self.assertEqual(rc, 0, err)
        paths = json.loads(out)
        for e in doc["endpoints"]:
            m, p = e.split(" ")
            self.assertIn(p, paths, e)
            self.assertIn(m, paths[p], e)
        for wh in ("", "strike"):
            self.ok(S.req("GET", f"/iceberg/v1/config?warehouse={wh}"), "CatalogConfig")
        self.err(S.req("GET", "/iceberg/v1/config?warehouse=other"), 404, "NoSuchWarehouseException")
        # the validator is not vacuous: strike's /v1 problem+json is no IcebergErrorResponse
        rc, out, _ = openapi(stdin=json.dumps([["IcebergErrorResponse", S.req("GET", "/v1/tables/nope").json()],
                                               ["CatalogConfig", {"defaults": {"a": 1}, "overrides": {}}]]))
        self.assertEqual(rc, 1)
        self.assertEqual([r["ok"] for r in json.loads(out)], [False, False])


class Catalog(Base):
    def test_namespaces(self):
        self.assertEqual(self.ok(S.req("GET", NS), "ListNamespacesResponse"), {"namespaces": [["default"]]})
        self.assertEqual(self.ok(S.req("GET", f"{NS}?parent=default"), "ListNamespacesResponse")["namespaces"], [])
        self.err(S.req("GET", f"{NS}?parent=nope"), 404, "NoSuchNamespaceException")
        doc = self.ok(S.req("GET", f"{NS}/default"), "GetNamespaceResponse")
        self.assertEqual(doc["namespace"], ["default"])
        self.err(S.req("GET", f"{NS}/nope"), 404, "NoSuchNamespaceException")

    def test_table_listing_and_pages(self):
        names = sorted(t["name"] for t in S.req("GET", "/v1/tables").json()["tables"])
        doc = self.ok(S.req("GET", TB), "ListTablesResponse")
        self.assertEqual([i["name"] for i in doc["identifiers"]], names)
        self.assertTrue(all(i["namespace"] == ["default"] for i in doc["identifiers"]))
        self.assertNotIn("next-page-token", doc)
        got, token = [], None
        for _ in range(len(names) + 1):
            q = "pageSize=1" + (f"&pageToken={token}" if token else "")
            doc = self.ok(S.req("GET", f"{TB}?{q}"), "ListTablesResponse")
            self.assertLessEqual(len(doc["identifiers"]), 1)
            got += [i["name"] for i in doc["identifiers"]]
            token = doc.get("next-page-token")
            if not token:
                break
        self.assertEqual(got, names)
        for bad in ("0", "1001", "x", "-1"):
            self.err(S.req("GET", f"{TB}?pageSize={bad}"), 400, "BadRequestException")

    def test_load_table_and_etag(self):
        r = S.req("GET", f"{TB}/ev")
        doc = self.ok(r, "LoadTableResult")
        self.docs.append(["TableMetadata", doc["metadata"]])
        meta = doc["metadata"]
        self.assertEqual(set(doc), {"metadata-location", "metadata", "config"})
        self.assertEqual(meta["format-version"], 3)
        cur = S.req("GET", "/v1/tables/ev").json()
        self.assertEqual(meta["table-uuid"], cur["uuid"])
        self.assertEqual(meta["current-snapshot-id"], cur["seq"])
        self.assertEqual(meta["properties"]["strike.table"], "ev")
        self.assertNotIn("scan-planning-mode", doc["config"])
        etag = r.header("ETag")
        self.assertRegex(etag, r'^"' + cur["uuid"] + r'-\d+"$')
        self.assertTrue(doc["metadata-location"].endswith(f"/v{etag.rsplit('-', 1)[1][:-1]}.metadata.json"))
        # unchanged: 304 without a body, the same ETag
        r = S.req("GET", f"{TB}/ev", headers={"If-None-Match": etag})
        self.assertEqual((r.status, r.body), (304, b""))
        self.assertEqual(r.header("ETag"), etag)
        self.assertEqual(S.req("GET", f"{TB}/ev").header("ETag"), etag)
        # ?snapshots=all and refs are accepted, anything else is 400
        for q in ("all", "refs"):
            self.ok(S.req("GET", f"{TB}/ev?snapshots={q}"), "LoadTableResult")
        self.err(S.req("GET", f"{TB}/ev?snapshots=some"), 400, "BadRequestException")
        # HEAD: 204
        r = S.req("HEAD", f"{TB}/ev")
        self.assertEqual((r.status, r.body), (204, b""))
        # a commit changes the ETag; the old one no longer matches
        changes(S, "other", [{"op": "upsert", "row": iu.mkrow(40)}])
        r0 = S.req("GET", f"{TB}/other")
        changes(S, "other", [{"op": "upsert", "row": iu.mkrow(41)}])
        r = S.req("GET", f"{TB}/other", headers={"If-None-Match": r0.header("ETag")})
        doc = self.ok(r, "LoadTableResult")
        self.assertNotEqual(r.header("ETag"), r0.header("ETag"))
        self.assertEqual(doc["metadata"]["current-snapshot-id"], S.req("GET", "/v1/tables/other").json()["seq"])
        r2 = S.req("GET", f"{TB}/other", headers={"If-None-Match": r.header("ETag")})
        self.assertEqual((r2.status, r2.body), (304, b""))


class Planning(Base):
    def check_plan(self, doc, seq, filt=None, select=None, s=None):
        """The plan's tasks: DV entries against the Puffin footers, and the rows they read
        equal /scan at seq (with the filter on both sides)."""
        self.assertEqual(doc["status"], "completed")
        self.assertNotIn("plan-tasks", doc)
        tasks, dels = doc["file-scan-tasks"], doc.get("delete-files", [])
        store = iu.Store(s or S)
        store.refresh()
        refs = []
        for t in tasks:
            df = t["data-file"]
            self.assertEqual((df["content"], df["file-format"], df["spec-id"], df["partition"]),
                             ("data", "parquet", 0, []))
            self.assertTrue(df["file-path"].startswith(store.uri_root() + "/tables/"), df)
            self.assertEqual(df["file-size-in-bytes"], os.path.getsize(store.local(df["file-path"])))
            self.assertNotIn("residual-filter", t)
            for i in t.get("delete-file-references", []):
                refs.append(i)
                d = dels[i]
                self.assertEqual(d["referenced-data-file"], df["file-path"])
        # each DV its own entry, referenced by exactly one task
        self.assertEqual(sorted(refs), list(range(len(dels))))
        by_puffin = {}
        for d in dels:
            self.assertEqual((d["content"], d["file-format"], d["spec-id"], d["partition"]),
                             ("position-deletes", "puffin", 0, []))
            local = store.local(d["file-path"])
            with open(local, "rb") as f:
                data = f.read()
            self.assertEqual(d["file-size-in-bytes"], len(data))
            footer = iu.puffin_footer(data)
            blobs = [b for b in footer["blobs"] if b["offset"] == d["content-offset"]]
            self.assertEqual(len(blobs), 1, f"no blob at {d['content-offset']} of {d['file-path']}: {footer}")
            b = blobs[0]
            self.assertEqual(b["type"], "deletion-vector-v1")
            self.assertEqual(b["length"], d["content-size-in-bytes"])
            self.assertEqual(b["properties"]["referenced-data-file"], d["referenced-data-file"])
            self.assertEqual(int(b["properties"]["cardinality"]), d["record-count"])
            by_puffin.setdefault(d["file-path"], []).append(d)
        store.close()
        got = self.plan_rows("ev", [doc], s)
        self.assertEqual((got["files"], got["dvs"]), (len(tasks), len(dels)))
        cols = select or iu.COLUMNS
        body = {"columns": select} if select else {}
        if filt:
            body["filter"] = filt["expr"]
        want = iu.norm_scan(iu.scan_at(self, s or S, "ev", seq, body), cols)
        idx = [iu.COLUMNS.index(c) for c in cols]
        rows = [[r[i] for i in idx] for r in iu.norm_reader(got) if not filt or filt["py"](r)]
        self.assertEqual(sorted(rows, key=json.dumps), want)
        return by_puffin

    def test_plan_current_and_older_snapshots(self):
        doc = self.plan("ev", {})
        self.assertTrue(doc["plan-id"])
        by_puffin = self.check_plan(doc, SEQ["inline"])
        self.assertTrue(by_puffin, "no DV in the plan")
        for name in ("file20", "dvs", "updates"):
            with self.subTest(snapshot=name):
                doc = self.plan("ev", {"snapshot-id": SEQ[name]})
                by_puffin = self.check_plan(doc, SEQ[name])
                if name == "dvs":
                    # one delete commit on three files: three DV entries, one Puffin file
                    self.assertEqual(sorted(len(v) for v in by_puffin.values()), [3])
        # a fetch answers the same tasks
        doc = self.plan("ev", {"snapshot-id": SEQ["dvs"]})
        again = self.ok(S.req("GET", f"{TB}/ev/plan/{doc['plan-id']}"), "FetchPlanningResult")
        self.assertEqual(again["status"], "completed")
        self.assertEqual(again["file-scan-tasks"], doc["file-scan-tasks"])
        self.assertEqual(again["delete-files"], doc["delete-files"])

    def test_plan_filter_and_select(self):
        gt = {"expr": {"type": "gt", "term": "id", "value": 10}, "py": lambda r: r[0] > 10}
        doc = self.plan("ev", {"filter": gt["expr"]})
        self.check_plan(doc, SEQ["inline"], filt=gt)
        # the newer expression form, an older snapshot, and a string predicate
        sw = {"expr": {"type": "starts-with", "left": {"type": "reference", "name": "s"}, "right": "row 2"},
              "py": lambda r: r[5] is not None and r[5].startswith("row 2")}
        self.check_plan(self.plan("ev", {"filter": sw["expr"], "snapshot-id": SEQ["dvs"]}), SEQ["dvs"], filt=sw)
        # select names columns (checked); the tasks are whole files, the rows projected here
        doc = self.plan("ev", {"select": ["id", "s", "ts"], "filter": gt["expr"]})
        self.check_plan(doc, SEQ["inline"], filt=gt, select=["id", "s", "ts"])
        # the accepted members that change nothing
        doc = self.plan("ev", {"case-sensitive": True, "use-snapshot-schema": False, "min-rows-requested": 5,
                               "stats-fields": ["id"]})
        self.check_plan(doc, SEQ["inline"])

    def test_plan_ids_across_servers(self):
        s2 = h.Striked(data_dir=S.data_dir, catalog=URL)
        try:
            doc = self.plan("ev", {"snapshot-id": SEQ["updates"]})
            pid = doc["plan-id"]
            got = self.ok(s2.req("GET", f"{TB}/ev/plan/{pid}"), "FetchPlanningResult")
            self.assertEqual(got["file-scan-tasks"], doc["file-scan-tasks"])
            self.assertEqual(got["delete-files"], doc["delete-files"])
            # the other way round
            doc2 = self.plan("ev", {"filter": {"type": "lt", "term": "id", "value": 5}}, s=s2)
            self.assertEqual(self.ok(S.req("GET", f"{TB}/ev/plan/{doc2['plan-id']}"),
                                     "FetchPlanningResult")["file-scan-tasks"], doc2["file-scan-tasks"])
            # a plan id is its table's
            self.err(s2.req("GET", f"{TB}/other/plan/{pid}"), 404, "NoSuchPlanIdException")
            # cancelled on one server: gone on both
            r = s2.req("DELETE", f"{TB}/ev/plan/{pid}")
            self.assertEqual((r.status, r.body), (204, b""))
            for s in (S, s2):
                self.err(s.req("GET", f"{TB}/ev/plan/{pid}"), 404, "NoSuchPlanIdException")
                self.err(s.req("DELETE", f"{TB}/ev/plan/{pid}"), 404, "NoSuchPlanIdException")
            # the other plan still answers
            self.ok(s2.req("GET", f"{TB}/ev/plan/{doc2['plan-id']}"), "FetchPlanningResult")
            s2.close_clean()
        finally:
            s2.close()



class Snapshots(Base):
    """Plans of snapshots the table does not have: 404 naming the snapshot (the table exists:
    NoSuchTableException would tell a client to forget it)."""

    def test_unknown_snapshot(self):
        r = S.req("POST", f"{TB}/ev/plan", {"snapshot-id": 999999})
        doc = self.err(r, 404)
        self.assertNotEqual(doc["error"]["type"], "NoSuchTableException", doc)
        self.assertIn("999999", doc["error"]["message"])

    def test_expired_snapshot(self):
        self.assertEqual(S.req("POST", "/v1/tables", iu.table_def("gone")).status, 201)
        first = changes(S, "gone", [{"op": "upsert", "row": iu.mkrow(k)} for k in range(3)])
        changes(S, "gone", [{"op": "upsert", "row": iu.mkrow(k, 1)} for k in range(2)])
        self.assertEqual(S.req("POST", "/v1/tables/gone/expire", {"retain_last": 1}).status, 200)
        doc = self.err(S.req("POST", f"{TB}/gone/plan", {"snapshot-id": first}), 404)
        self.assertNotEqual(doc["error"]["type"], "NoSuchTableException", doc)
        self.assertIn("expired", doc["error"]["message"])
        self.assertNotIn(first, {x["snapshot-id"] for x in self.load("gone")["metadata"]["snapshots"]})


class BadInput(Base):
    def test_bad_bodies_change_nothing(self):
        before = self.state()
        plan = f"{TB}/ev/plan"
        cases = [
            (plan, b"{", 400, "BadRequestException"),
            (plan, b"[]", 400, "BadRequestException"),
            (plan, b'{"filter": {"type": "gt", "term": "id", "value": 1}', 400, "BadRequestException"),
            (plan, {"snapshot-idd": 1}, 400, "BadRequestException"),
            (plan, {"snapshot-id": "3"}, 400, "BadRequestException"),
            (plan, {"snapshot-id": -1}, 400, "BadRequestException"),
            (plan, {"filter": {"type": "gt", "term": "nope", "value": 1}}, 400, "BadRequestException"),
            (plan, {"filter": {"type": "gt", "term": "id", "value": "abc"}}, 400, "BadRequestException"),
            (plan, {"filter": {"type": "eq", "term": "b", "value": 1}}, 400, "BadRequestException"),
            (plan, {"filter": {"type": "frobnicate", "term": "id"}}, 400, "BadRequestException"),
            (plan, {"filter": "id > 1"}, 400, "BadRequestException"),
            (plan, {"select": ["nope"]}, 400, "BadRequestException"),
            (plan, {"select": "id"}, 400, "BadRequestException"),
            (plan, {"stats-fields": [1]}, 400, "BadRequestException"),
            (plan, {"case-sensitive": "no"}, 400, "BadRequestException"),
            (plan, {"case-sensitive": False}, 406, "UnsupportedOperationException"),
            (plan, {"start-snapshot-id": 1, "end-snapshot-id": 2}, 406, "UnsupportedOperationException"),
            (plan, {"end-snapshot-id": 2}, 406, "UnsupportedOperationException"),
            (f"{TB}/ev/tasks", {}, 400, "BadRequestException"),
            (f"{TB}/ev/tasks", {"plan-task": 7}, 400, "BadRequestException"),
            (f"{TB}/ev/tasks", {"plan-task": "x", "more": 1}, 400, "BadRequestException"),
            (f"{TB}/ev/tasks", {"plan-task": "no-such-task"}, 404, "NoSuchPlanTaskException"),
        ]
        for path, body, status, etype in cases:
            with self.subTest(body=body):
                hdrs = {"Content-Type": "application/json"} if isinstance(body, bytes) else None
                self.err(S.req("POST", path, body, headers=hdrs), status, etype)
        # a body that is not JSON by its type
        r = S.req("POST", plan, b"{}", headers={"Content-Type": "text/plain"})
        self.err(r, 415)
        # a plan task of a plan that has none (a small plan answers its tasks at once)
        pid = self.plan("ev", {})["plan-id"]
        for task in (f"{pid}:0", f"{pid}:1", f"{pid}:-1", f"{pid}:x", f"{pid}", f"x{pid[1:]}:0"):
            with self.subTest(task=task):
                self.err(S.req("POST", f"{TB}/ev/tasks", {"plan-task": task}), 404)
        after = self.state()
        self.assertEqual(after[:2], before[:2])
        self.assertEqual(int(after[2][0][0]), int(before[2][0][0]) + 1)  # the one plan made here


class Tasks(Base):
    """A table of 1,001 data files: planned as plan tasks."""

    def test_plan_tasks(self):
        t = {"name": "many", "columns": [{"name": "id", "type": "long", "required": True},
                                         {"name": "v", "type": "string"}], "primary_key": ["id"]}
        self.assertEqual(S.req("POST", "/v1/tables", t).status, 201)
        # a file of 10 rows, then 1,000 one-row commits one at a time: each its own file (no
        # group commit, no compaction); deletes in the first file (a DV: the file stays live)
        changes(S, "many", [{"op": "upsert", "row": {"id": k, "v": f"v{k}"}} for k in range(10)])
        for k in range(10, 1010):
            changes(S, "many", [{"op": "upsert", "row": {"id": k, "v": f"v{k}"}}])
        changes(S, "many", [{"op": "delete", "key": {"id": k}} for k in (3, 7)])
        self.assertEqual(S.req("GET", "/v1/tables/many").json()["stats"]["data_files"], 1001)
        doc = self.ok(S.req("POST", f"{TB}/many/plan", {}, timeout=600), "PlanTableScanResult")
        self.assertEqual(doc["status"], "completed")
        self.assertNotIn("file-scan-tasks", doc)
        pid = doc["plan-id"]
        self.assertEqual(doc["plan-tasks"], [f"{pid}:0", f"{pid}:1"])
        fetched = self.ok(S.req("GET", f"{TB}/many/plan/{pid}", timeout=600), "FetchPlanningResult")
        self.assertEqual(fetched["plan-tasks"], doc["plan-tasks"])
        groups = []
        for pt in doc["plan-tasks"]:
            groups.append(self.ok(S.req("POST", f"{TB}/many/tasks", {"plan-task": pt}, timeout=600),
                                  "FetchScanTasksResult"))
        self.assertEqual([len(g["file-scan-tasks"]) for g in groups], [1000, 1])
        paths = [x["data-file"]["file-path"] for g in groups for x in g["file-scan-tasks"]]
        self.assertEqual(len(set(paths)), 1001)
        self.assertEqual(sum(len(g.get("delete-files", [])) for g in groups), 1)
        got = self.plan_rows("many", groups)
        want = iu.norm_scan(iu.scan_at(self, S, "many", S.req("GET", "/v1/tables/many").json()["seq"]),
                            ["id", "v"], {"id": "long", "v": "string"})
        self.assertEqual(iu.norm_reader(got, ["id", "v"], {"id": "long", "v": "string"}), want)
        self.assertEqual(len(want), 1008)
        # 18446744073709552 x 1,000 files wraps around 2^64 to 384: a chunk is checked against
        # the number of chunks before it is multiplied (it answered files 384 on)
        for bad in (f"{pid}:2", f"{pid}:-1", f"{pid}:1x", "x:0", f"{pid}:18446744073709552"):
            self.err(S.req("POST", f"{TB}/many/tasks", {"plan-task": bad}), 404, "NoSuchPlanTaskException")
        # a plan task of another table's plan
        self.err(S.req("POST", f"{TB}/ev/tasks", {"plan-task": f"{pid}:0"}), 404)
        r = S.req("DELETE", f"{TB}/many/plan/{pid}")
        self.assertEqual(r.status, 204)
        self.err(S.req("POST", f"{TB}/many/tasks", {"plan-task": f"{pid}:0"}), 404)


class Auth(Base):
    """Tokens on: the same bearer tokens and scopes as /v1, in Iceberg's error model."""

    def test_tokens(self):
        d = h.tmpdir("strike-iceberg-auth-")
        tokens = {}
        lines = []
        for name, scope, glob in (("root", "admin", "*"), ("read", "read", "orders*")):
            out = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "token", "new", "--scope", scope,
                                  "--tables", glob], check=True, capture_output=True, text=True).stdout
            tokens[name], line = out.splitlines()
            lines.append(line)
        with open(os.path.join(d, "tokens"), "w") as f:
            f.write("\n".join(lines) + "\n")
        s = h.Striked(catalog=h.create_db(DB + "_auth"), extra_args=["--tokens", os.path.join(d, "tokens")])
        try:
            root = {"Authorization": "Bearer " + tokens["root"]}
            read = {"Authorization": "Bearer " + tokens["read"]}
            for name in ("orders_a", "orders_b", "secret"):
                self.assertEqual(s.req("POST", "/v1/tables", iu.table_def(name), headers=root).status, 201)
                changes_auth(s, name, root)
            for hdrs in ({}, {"Authorization": "Bearer stk_unknown"}, {"Authorization": "Basic eDp5"}):
                for path in ("/iceberg/v1/config", NS, f"{TB}", f"{TB}/orders_a"):
                    r = s.req("GET", path, headers=hdrs)
                    self.err(r, 401, "NotAuthorizedException")
                    self.assertEqual(r.header("WWW-Authenticate"), 'Bearer realm="strike"')
                r = s.req("POST", f"{TB}/orders_a/plan", {}, headers=hdrs)
                self.err(r, 401, "NotAuthorizedException")
            # read on orders*: those tables, not secret
            self.ok(s.req("GET", "/iceberg/v1/config", headers=read), "CatalogConfig")
            self.ok(s.req("GET", NS, headers=read), "ListNamespacesResponse")
            self.ok(s.req("GET", f"{TB}/orders_a", headers=read), "LoadTableResult")
            self.ok(s.req("POST", f"{TB}/orders_b/plan", {}, headers=read), "PlanTableScanResult")
            for method, path, body in (("GET", f"{TB}/secret", None), ("POST", f"{TB}/secret/plan", {}),
                                       ("POST", f"{TB}/secret/tasks", {"plan-task": "x:0"})):
                r = s.req(method, path, body, headers=read)
                doc = self.err(r, 403, "ForbiddenException")
                self.assertIn("secret", doc["error"]["message"])
            self.err(s.req("HEAD", f"{TB}/secret", headers=read), 403, head=True)
            # a plan id of a readable table does not open another one
            pid = self.ok(s.req("POST", f"{TB}/orders_a/plan", {}, headers=read), "PlanTableScanResult")["plan-id"]
            self.err(s.req("GET", f"{TB}/secret/plan/{pid}", headers=read), 403, "ForbiddenException")
            # the listing: only what the token may read
            doc = self.ok(s.req("GET", TB, headers=read), "ListTablesResponse")
            self.assertEqual([i["name"] for i in doc["identifiers"]], ["orders_a", "orders_b"])
            doc = self.ok(s.req("GET", TB, headers=root), "ListTablesResponse")
            self.assertEqual([i["name"] for i in doc["identifiers"]], ["orders_a", "orders_b", "secret"])
            s.close_clean()
        finally:
            s.close()


def changes_auth(s, table, hdrs):
    r = s.req("POST", f"/v1/tables/{table}/changes",
              {"changes": [{"op": "upsert", "row": iu.mkrow(k)} for k in range(4)]}, headers=hdrs)
    assert r.status == 200, r


if __name__ == "__main__":
    unittest.main(verbosity=2)
