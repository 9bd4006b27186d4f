"""Maintenance (issue 14, docs/API.md "Maintenance"): snapshot expiry over HTTP
and gRPC, the grace of the blobs it frees (a plan handed out before expiry
still finds its files; the collector deletes them once the grace passed),
reads of expired snapshots (scan, plan, DV: 404 / NOT_FOUND), the
400s of bad bodies, table health (shape and numbers after deletes, over both
protocols), the background maintenance task (expiry with a 1 s interval and
retention, one server at a time per table with two servers on one catalog),
and the maintenance counters of /metrics.

The real striked, a real PostgreSQL, Python's http.client and grpcio.
"""
import os
import subprocess
import time
import unittest

import grpc

import harness as h
import grpc_client as gc
import http_util as u

DB = "strike_maintenance"
S = None  # striked with the background task off: every expiry here is a request's
C = None
URL = None  # S's catalog


def setUpModule():
    global S, C, URL
    URL = h.create_db(DB)
    S = h.Striked(catalog=URL, extra_args=["--compact-interval", "0"])
    C = gc.Client(S.grpc_port)


def tearDownModule():
    C.close()
    S.close_clean()


def create(tc, name, s=None):
    r = (s or S).req("POST", "/v1/tables", u.table_def(name))
    tc.assertEqual(r.status, 201, r)
    return r.json()


def upsert(tc, table, ids, s=None, user=1):
    return u.ok_changes(tc, s or S, table,
                        [{"op": "upsert", "row": {"order_id": i, "user_id": user}} for i in ids])


def delete(tc, table, ids, s=None):
    return u.ok_changes(tc, s or S, table, [{"op": "delete", "key": {"order_id": i}} for i in ids])


def history(tc, table, commits):
    """Commit 1 writes 50 rows; commit k > 1 deletes row k and rewrites row 1000 (a new file)."""
    upsert(tc, table, range(50))
    for k in range(2, commits + 1):
        u.ok_changes(tc, S, table, [{"op": "delete", "key": {"order_id": k}},
                                    {"op": "upsert", "row": {"order_id": 1000, "user_id": k}}])


def blobs_on_disk(s, uuid):
    """The table's blobs in the local store: not a put still in flight ("<key>.tmp.<n>",
    which a background compaction may be writing while the listing runs)."""
    out = set()
    for kind in ("data", "dv"):
        d = os.path.join(s.data_dir, "tables", uuid, kind)
        if os.path.isdir(d):
            out |= {f"tables/{uuid}/{kind}/{f}" for f in os.listdir(d) if ".tmp." not in f}
    return out


def blobs_in_catalog(uuid):
    return blobs_in_catalog_of(DB, uuid)


def blobs_in_catalog_of(db, uuid):
    rows = h.sql(db, f"SELECT f.path FROM strike.data_files f JOIN strike.tables t ON t.id = f.table_id "
                     f"WHERE t.uuid = '{uuid}' UNION SELECT d.puffin_path FROM strike.deletion_vectors d "
                     f"JOIN strike.tables t ON t.id = d.table_id WHERE t.uuid = '{uuid}'")
    return {r[0] for r in rows}


def queued_of(db, uuid):
    """The table's blobs that expiry freed, waiting out their grace (strike.expired_blobs)."""
    rows = h.sql(db, f"SELECT x.path FROM strike.expired_blobs x JOIN strike.tables t ON t.id = x.table_id "
                     f"WHERE t.uuid = '{uuid}'")
    return {r[0] for r in rows}


def pass_grace(db, uuid):
    """As if the grace of the table's queued blobs had passed (the catalog's clock is not ours
    to move: their deletable_after is)."""
    h.sql(db, f"UPDATE strike.expired_blobs x SET deletable_after = now() - interval '1 second' FROM "
              f"strike.tables t WHERE t.id = x.table_id AND t.uuid = '{uuid}'")


def count(sql):
    return int(h.sql(DB, sql)[0][0])


def rpc_error(tc, code, fn, *a, **kw):
    with tc.assertRaises(grpc.RpcError) as cm:
        r = fn(*a, **kw)
        if hasattr(r, "__iter__") and not isinstance(r, (bytes, str)):
            list(r)
    tc.assertEqual(cm.exception.code(), code, cm.exception.details())
    return cm.exception.details()


class Expire(unittest.TestCase):
    def test_expire_http(self):
        t = create(self, "ex_http")
        history(self, "ex_http", 12)
        keep = u.scan_rows(self, S, "ex_http", {"snapshot": 10})
        cur = u.scan_rows(self, S, "ex_http")
        # a DV of the first file at snapshot 5, fetched before expiry (and cached)
        fid = min(f["id"] for f in S.req("POST", "/v1/tables/ex_http/plan", {}).json()["files"])
        r = S.req("GET", f"/v1/tables/ex_http/files/{fid}/dv?snapshot=5")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(S.req("GET", f"/v1/tables/ex_http/files/{fid}/dv?snapshot=5").status, 200)
        before = blobs_on_disk(S, t["uuid"])
        self.assertEqual(before, blobs_in_catalog(t["uuid"]))
        expired_before = u.metric(S, "strike_expired_snapshots_total")

        r = S.req("POST", "/v1/tables/ex_http/expire", {"retain_last": 3})
        self.assertEqual(r.status, 200, r)
        res = r.json()
        self.assertEqual(set(res), {"expired_snapshots", "deleted_files", "deleted_bytes", "oldest_seq"})
        self.assertEqual(res["expired_snapshots"], 10)  # 0..9 of 0..12
        self.assertEqual(res["oldest_seq"], 10)
        # the blobs only expired snapshots needed stay for their grace: none deleted yet
        self.assertEqual((res["deleted_files"], res["deleted_bytes"]), (0, 0))
        self.assertEqual(blobs_on_disk(S, t["uuid"]), before)
        queued = queued_of(DB, t["uuid"])
        self.assertTrue(queued)
        self.assertEqual(queued, before - blobs_in_catalog(t["uuid"]))
        self.assertEqual(count(f"SELECT count(*) FROM strike.snapshots s JOIN strike.tables t ON t.id = "
                               f"s.table_id WHERE t.name = 'ex_http'"), 3)
        self.assertEqual(u.metric(S, "strike_expired_snapshots_total"), expired_before + 10)
        # past their grace, the table's next expiry deletes them (it has nothing more to expire)
        deleted_before = u.metric(S, "strike_expire_deleted_files_total")
        pass_grace(DB, t["uuid"])
        r = S.req("POST", "/v1/tables/ex_http/expire", {"retain_last": 3})
        self.assertEqual(r.status, 200, r)
        res = r.json()
        self.assertEqual(res["expired_snapshots"], 0)
        after = blobs_on_disk(S, t["uuid"])
        self.assertEqual(res["deleted_files"], len(queued))
        self.assertGreater(res["deleted_bytes"], 0)
        self.assertEqual(after, before - queued)
        self.assertEqual(after, blobs_in_catalog(t["uuid"]))  # every blob referenced, every reference there
        self.assertEqual(queued_of(DB, t["uuid"]), set())
        self.assertEqual(u.metric(S, "strike_expire_deleted_files_total"), deleted_before + len(queued))
        self.assertGreaterEqual(u.metric(S, "strike_expire_deleted_bytes_total"), res["deleted_bytes"])

        # retained snapshots read what they read before
        self.assertEqual(u.scan_rows(self, S, "ex_http", {"snapshot": 10}), keep)
        self.assertEqual(u.scan_rows(self, S, "ex_http"), cur)
        # expired ones: 404 naming the oldest retained one, for scan, plan and the DV
        want = 'snapshot 5 of table "ex_http" expired (the oldest retained snapshot is 10)'
        u.assert_problem(self, u.scan(S, "ex_http", {"snapshot": 5}), 404, want)
        u.assert_problem(self, S.req("POST", "/v1/tables/ex_http/plan", {"snapshot": 5}), 404, want)
        u.assert_problem(self, S.req("GET", f"/v1/tables/ex_http/files/{fid}/dv?snapshot=5"), 404, want)
        u.assert_problem(self, S.req("GET", f"/v1/tables/ex_http/files/{fid}/dv?snapshot=0"), 404,
                         "expired (the oldest retained snapshot is 10)")
        self.assertEqual(S.req("GET", f"/v1/tables/ex_http/files/{fid}/dv?snapshot=10").status, 200)
        # above the current snapshot: the error it always had
        u.assert_problem(self, u.scan(S, "ex_http", {"snapshot": 13}), 404,
                         "does not exist (the current snapshot is 12)")
        # the snapshot list starts at the oldest retained one
        snaps = S.req("GET", "/v1/tables/ex_http/snapshots").json()["snapshots"]
        self.assertEqual([s["seq"] for s in snaps], [10, 11, 12])
        # again: nothing to do
        r = S.req("POST", "/v1/tables/ex_http/expire", {"retain_last": 3})
        self.assertEqual(r.json(), {"expired_snapshots": 0, "deleted_files": 0, "deleted_bytes": 0,
                                    "oldest_seq": 10})
        # an empty body: the server's --retain (7d), nothing is that old
        r = S.req("POST", "/v1/tables/ex_http/expire")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["expired_snapshots"], 0)
        # older_than alone, then both (older than 0 s but the last 2 stay)
        r = S.req("POST", "/v1/tables/ex_http/expire", {"older_than": "0s", "retain_last": 2})
        self.assertEqual(r.json()["oldest_seq"], 11, r)
        r = S.req("POST", "/v1/tables/ex_http/expire", {"older_than": "0s"})
        self.assertEqual(r.json()["expired_snapshots"], 1, r)
        self.assertEqual(r.json()["oldest_seq"], 12, r)
        self.assertEqual(u.scan_rows(self, S, "ex_http"), cur)

    def test_expire_grpc(self):
        t = create(self, "ex_grpc")
        history(self, "ex_grpc", 6)
        fid = min(f.id for f in C.call("PlanScan", table="ex_grpc").files)
        self.assertGreater(C.call("GetDeletionVector", table="ex_grpc", file_id=fid, snapshot=3).cardinality, 0)
        before = blobs_on_disk(S, t["uuid"])
        res = C.call("Expire", table="ex_grpc", retain_last=2)
        self.assertEqual((res.expired_snapshots, res.oldest_seq), (5, 5))
        self.assertEqual((res.deleted_files, res.deleted_bytes), (0, 0))  # kept for their grace
        self.assertEqual(blobs_on_disk(S, t["uuid"]), before)
        queued = queued_of(DB, t["uuid"])
        self.assertTrue(queued)
        pass_grace(DB, t["uuid"])
        res = C.call("Expire", table="ex_grpc", retain_last=2)
        self.assertEqual((res.expired_snapshots, res.oldest_seq), (0, 5))
        self.assertEqual(res.deleted_files, len(queued))
        self.assertEqual(blobs_on_disk(S, t["uuid"]), before - queued)
        self.assertGreater(res.deleted_bytes, 0)
        want = 'snapshot 3 of table "ex_grpc" expired (the oldest retained snapshot is 5)'
        self.assertIn(want, rpc_error(self, grpc.StatusCode.NOT_FOUND, C.scan, "ex_grpc", snapshot=3))
        self.assertIn(want, rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "PlanScan", table="ex_grpc",
                                      snapshot=3))
        self.assertIn(want, rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "GetDeletionVector",
                                      table="ex_grpc", file_id=fid, snapshot=3))
        self.assertEqual(C.scan("ex_grpc", snapshot=5)[0], 5)
        res = C.call("Expire", table="ex_grpc", older_than="0s")
        self.assertEqual((res.expired_snapshots, res.oldest_seq), (1, 6))
        # bad requests
        self.assertIn("retain_last", rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "Expire",
                                               table="ex_grpc", retain_last=-1))
        self.assertIn("older_than", rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "Expire",
                                              table="ex_grpc", older_than="a week"))
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "Expire", table="ghost", retain_last=1)
        self.assertEqual(C.call("Expire", table="ex_grpc").expired_snapshots, 0)  # --retain: 7d

    def test_expire_bad_bodies(self):
        create(self, "ex_bad")
        history(self, "ex_bad", 4)
        for body, needle in (({"retain_last": 0}, "retain_last"),
                             ({"retain_last": -1}, "retain_last"),
                             ({"retain_last": "3"}, "retain_last"),
                             ({"retain_last": 1.5}, "retain_last"),
                             ({"older_than": 7}, "older_than"),
                             ({"older_than": "7 days"}, "older_than"),
                             ({"older_than": "7w"}, "older_than"),
                             ({"older_than": ""}, "older_than"),
                             ({"older_than": "99999999999999999999d"}, "older_than"),
                             ({"retain_last": 1, "keep": 2}, '"keep"'),
                             ("{", "invalid JSON"),
                             ("[]", "JSON object")):
            r = S.req("POST", "/v1/tables/ex_bad/expire", body,
                      {"Content-Type": "application/json"} if isinstance(body, str) else None)
            u.assert_problem(self, r, 400, needle)
        r = S.req("POST", "/v1/tables/ex_bad/expire", b"retain_last=1", {"Content-Type": "text/plain"})
        u.assert_problem(self, r, 415)
        u.assert_problem(self, S.req("POST", "/v1/tables/ghost/expire", {"retain_last": 1}), 404)
        u.assert_problem(self, S.req("GET", "/v1/tables/ex_bad/expire"), 405)
        # nothing changed
        self.assertEqual(len(S.req("GET", "/v1/tables/ex_bad/snapshots").json()["snapshots"]), 5)


class Grace(unittest.TestCase):
    def test_plan_outlives_expiry(self):
        """A plan handed out a moment before its snapshot expires: every file and DV blob it
        names stays in the blob store for the grace (docs/API.md "Plan"), byte for byte, however
        old the files are (the collector does not take them for orphans); once the grace passed,
        the collector deletes them and fsck finds the store clean."""
        t = create(self, "gr_plan")
        history(self, "gr_plan", 6)
        plan = S.req("POST", "/v1/tables/gr_plan/plan", {"snapshot": 3}).json()
        self.assertEqual(plan["seq"], 3)
        blobs = {}  # path -> the bytes the plan's URLs served
        for f in plan["files"]:
            r = S.req("GET", f["url"])
            self.assertEqual(r.status, 200, r)
            blobs[f["path"]] = r.body
            if f["dv"]:
                with open(os.path.join(S.data_dir, f["dv"]["path"]), "rb") as g:
                    blobs[f["dv"]["path"]] = g.read()
        self.assertTrue(any(f["dv"] for f in plan["files"]))
        r = S.req("POST", "/v1/tables/gr_plan/expire", {"retain_last": 1})
        self.assertEqual(r.json()["expired_snapshots"], 6, r)
        t_expired = time.time()
        freed = set(blobs) - blobs_in_catalog(t["uuid"])
        self.assertTrue(len(freed) >= 2, freed)  # the hot row's file of 3, the DVs of 3
        for path, body in blobs.items():
            p = os.path.join(S.data_dir, path)
            self.assertTrue(os.path.exists(p), f"{path} of a plan handed out before expiry was deleted")
            with open(p, "rb") as g:
                self.assertEqual(g.read(), body, path)
        self.assertLessEqual(freed, queued_of(DB, t["uuid"]))
        # deletable after the grace: --gc-grace (1h, the default) and at least a plan's hour
        left = h.sql(DB, "SELECT min(extract(epoch FROM x.deletable_after - now())), "
                         "max(extract(epoch FROM x.deletable_after - now())) FROM strike.expired_blobs x "
                         f"JOIN strike.tables t ON t.id = x.table_id WHERE t.uuid = '{t['uuid']}'")[0]
        self.assertGreater(float(left[0]), 3600 - 60 - (time.time() - t_expired))
        self.assertLessEqual(float(left[1]), 3600)
        # the collector, however old the files: not orphans while they wait
        for path in freed:
            old = time.time() - 7200
            os.utime(os.path.join(S.data_dir, path), (old, old))
        gc = self.strike("gc", "--grace", "5m")
        self.assertIn("0 deleted", gc.stderr)
        for path in freed:
            self.assertTrue(os.path.exists(os.path.join(S.data_dir, path)), path)
        fsck = self.strike("fsck")
        self.assertEqual(fsck.stdout, "", "a blob waiting out its grace is no orphan")
        # past the grace: the collector deletes them, and only them
        pass_grace(DB, t["uuid"])
        self.strike("gc", "--grace", "1h")
        for path in freed:
            self.assertFalse(os.path.exists(os.path.join(S.data_dir, path)), path)
        self.assertEqual(queued_of(DB, t["uuid"]), set())
        self.assertEqual(blobs_on_disk(S, t["uuid"]), blobs_in_catalog(t["uuid"]))
        self.assertEqual(self.strike("fsck").stdout, "")
        self.assertEqual(len(u.scan_rows(self, S, "gr_plan")), 50 - 5 + 1)

    def strike(self, cmd, *args):
        p = subprocess.run([os.path.join(h.BIN_DIR, "strike"), cmd, "--catalog", URL, "--data",
                            S.data_dir] + list(args), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, f"strike {cmd}: {p.stdout}\n{p.stderr}")
        return p


class Health(unittest.TestCase):
    def test_health_shape_and_numbers(self):
        create(self, "hl")
        for k in range(10):  # 10 files of 10 rows: all small
            upsert(self, "hl", range(k * 10, k * 10 + 10))
        delete(self, "hl", [0, 1, 2, 3, 4])  # half of the first file
        r = S.req("GET", "/v1/tables/hl/health")
        self.assertEqual(r.status, 200, r)
        j = r.json()
        self.assertEqual(list(j), ["seq", "data_files", "rows", "deleted_rows", "deleted_fraction",
                                   "small_files", "dv_bytes", "inline_dvs", "data_bytes", "snapshots",
                                   "oldest_snapshot_at", "advice", "files", "next"])
        self.assertEqual(j["seq"], 11)
        self.assertEqual((j["data_files"], j["rows"], j["deleted_rows"], j["small_files"]), (10, 100, 5, 10))
        self.assertAlmostEqual(j["deleted_fraction"], 0.05)
        self.assertEqual(j["snapshots"], 12)
        self.assertRegex(j["oldest_snapshot_at"], r"^\d{4}-\d\d-\d\dT")
        sizes = count("SELECT sum(f.file_size) FROM strike.data_files f JOIN strike.tables t ON "
                      "t.id = f.table_id WHERE t.name = 'hl' AND f.removed_seq IS NULL")
        self.assertEqual(j["data_bytes"], sizes)
        self.assertGreater(j["dv_bytes"], 0)
        self.assertEqual([a["action"] for a in j["advice"]], ["compact"])
        reason = j["advice"][0]["reason"]
        self.assertIn("1 of 10 files have at least 30% of their rows deleted (the most: 50.0%)", reason)
        self.assertIn("10 files hold fewer than 262144 live rows", reason)
        self.assertIsNone(j["next"])
        self.assertEqual(len(j["files"]), 10)
        first = j["files"][0]
        self.assertEqual(set(first), {"id", "rows", "deleted", "deleted_fraction", "bytes", "dv_bytes",
                                      "data_seq"})
        self.assertEqual((first["rows"], first["deleted"], first["data_seq"]), (10, 5, 1))
        self.assertAlmostEqual(first["deleted_fraction"], 0.5)
        self.assertEqual(first["dv_bytes"], j["dv_bytes"])
        self.assertEqual(sum(f["bytes"] for f in j["files"]), sizes)
        ids = [f["id"] for f in j["files"]]
        self.assertEqual(ids, sorted(ids))
        # pages by file id
        p1 = S.req("GET", "/v1/tables/hl/health?limit=4").json()
        self.assertEqual([f["id"] for f in p1["files"]], ids[:4])
        self.assertEqual(p1["next"], ids[3])
        p2 = S.req("GET", f"/v1/tables/hl/health?limit=4&after={p1['next']}").json()
        self.assertEqual([f["id"] for f in p2["files"]], ids[4:8])
        p3 = S.req("GET", f"/v1/tables/hl/health?limit=4&after={p2['next']}").json()
        self.assertEqual([f["id"] for f in p3["files"]], ids[8:])
        self.assertIsNone(p3["next"])
        self.assertEqual(p3["rows"], 100)  # totals on every page
        # gRPC: the same numbers
        g = C.call("TableHealth", table="hl")
        self.assertEqual((g.seq, g.data_files, g.rows, g.deleted_rows, g.small_files, g.dv_bytes, g.data_bytes,
                          g.snapshots), (11, 10, 100, 5, 10, j["dv_bytes"], sizes, 12))
        self.assertEqual([(a.action, a.reason) for a in g.advice], [("compact", reason)])
        self.assertEqual([f.id for f in g.files], ids)
        self.assertEqual(g.WhichOneof("next_present"), None)
        g = C.call("TableHealth", table="hl", limit=3, after=ids[0])
        self.assertEqual([f.id for f in g.files], ids[1:4])
        self.assertEqual(g.next, ids[3])
        self.assertEqual(S.req("HEAD", "/v1/tables/hl/health").status, 200)
        # errors
        u.assert_problem(self, S.req("GET", "/v1/tables/hl/health?limit=0"), 400, "limit")
        u.assert_problem(self, S.req("GET", "/v1/tables/hl/health?after=-1"), 400, "after")
        u.assert_problem(self, S.req("GET", "/v1/tables/hl/health?x=1"), 400, '"x"')
        u.assert_problem(self, S.req("GET", "/v1/tables/ghost/health"), 404)
        rpc_error(self, grpc.StatusCode.INVALID_ARGUMENT, C.call, "TableHealth", table="hl", limit=0)
        rpc_error(self, grpc.StatusCode.NOT_FOUND, C.call, "TableHealth", table="ghost")

    def test_health_expire_advice(self):
        """A server whose --retain is 1s advises expiry once the oldest snapshot is older."""
        db = "strike_maintenance_advice"
        with h.Striked(catalog=h.create_db(db), extra_args=["--compact-interval", "0", "--retain", "1s"]) as s:
            create(self, "adv", s)
            upsert(self, "adv", [1], s)
            upsert(self, "adv", [2], s)
            deadline = time.monotonic() + 60
            while True:  # wait until the oldest snapshot is older than 1 s (no timed assertion)
                j = s.req("GET", "/v1/tables/adv/health").json()
                if any(a["action"] == "expire" for a in j["advice"]) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            adv = {a["action"]: a["reason"] for a in j["advice"]}
            self.assertIn("expire", adv, j)
            self.assertIn("the oldest of 3 retained snapshots (seq 0)", adv["expire"])
            self.assertIn("older than the retention of 1s", adv["expire"])
            r = s.req("POST", "/v1/tables/adv/expire")  # empty body: --retain
            self.assertEqual(r.json()["oldest_seq"], 2, r)
            j = s.req("GET", "/v1/tables/adv/health").json()
            self.assertEqual(j["advice"], [])  # 2 small files are too few to compact
            self.assertEqual(j["snapshots"], 1)


class Background(unittest.TestCase):
    def test_background_expiry_two_servers(self):
        """--compact-interval 1s --retain 1s on two servers sharing a catalog: the files
        with deleted rows are compacted, then every old snapshot expires, each once (the
        table lock: one server at a time per table)."""
        db = "strike_maintenance_bg"
        url = h.create_db(db)
        # DVs in Puffin files: the blobs expiry deletes are counted exactly (with inline DVs the
        # task's flush writes a Puffin file after `before`; test_engine_inline covers the flush)
        args = ["--compact-interval", "1s", "--retain", "1s", "--dv-inline-max", "0"]
        with h.Striked(catalog=url, extra_args=args) as a, \
                h.Striked(catalog=url, extra_args=args, data_dir=a.data_dir) as b:
            t = create(self, "bg", a)
            for k in range(6):  # each rewrites row 1000: the DVs of old files are closed
                upsert(self, "bg", [k, 1000], a)
            before = blobs_on_disk(a, t["uuid"])
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                cur = a.req("GET", "/v1/tables/bg").json()["seq"]
                snaps = a.req("GET", "/v1/tables/bg/snapshots").json()["snapshots"]
                if [s["seq"] for s in snaps] == [cur] and cur > 6:
                    break
                time.sleep(0.25)
            self.assertEqual([s["seq"] for s in snaps], [cur])
            self.assertEqual(snaps[0]["operation"], "compact")  # every file had a deleted row
            runs = (u.metric(a, "strike_maintenance_runs_total"), u.metric(b, "strike_maintenance_runs_total"))
            self.assertGreater(sum(runs), 0, runs)
            self.assertGreater(u.metric(a, "strike_compactions_total") + u.metric(b, "strike_compactions_total"), 0)
            # the snapshots are gone at the expiry's COMMIT; its counters and unlinks follow it
            # (expire.c), so read them once the pass has settled
            def settled():
                expired = (u.metric(a, "strike_expired_snapshots_total")
                           + u.metric(b, "strike_expired_snapshots_total"))
                deleted = (u.metric(a, "strike_expire_deleted_files_total")
                           + u.metric(b, "strike_expire_deleted_files_total"))
                return expired, deleted, len(before - blobs_on_disk(a, t["uuid"]))
            deadline = time.monotonic() + 10
            while True:
                expired, deleted, gone = settled()
                if (expired == cur and deleted == gone) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.assertEqual(expired, cur)  # 0..cur-1, each by one server
            self.assertEqual(gone, deleted)
            # what expiry freed waits out its grace (an hour): on disk, not referenced, queued
            queued = queued_of(db, t["uuid"])
            self.assertTrue(queued)
            self.assertEqual(blobs_on_disk(a, t["uuid"]), blobs_in_catalog_of(db, t["uuid"]) | queued)
            self.assertEqual(sorted(r["order_id"] for r in u.scan_rows(self, a, "bg")),
                             list(range(6)) + [1000])
            u.assert_problem(self, u.scan(b, "bg", {"snapshot": 2}), 404, "expired")


if __name__ == "__main__":
    unittest.main(verbosity=2)
