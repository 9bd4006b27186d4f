"""HTTP API v1 (docs/API.md, first half) against the real striked and PostgreSQL.

Every endpoint and its documented errors: tables, changes (upserts,
deletes, Debezium ops, version column, producer offsets, Idempotency-Key),
delete by filter, scans (projection, filter, limit, snapshots, value forms),
plans, snapshots, files with Range, deletion vectors in three formats with
ETag/304, problem+json everywhere, request ids, metrics, 501 for the routes
of a later version.
"""
import json
import os
import re
import socket
import time
import unittest

import harness as h
import http_roaring as hr
import http_util as u


class Api(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = h.create_db("strike_http_api")
        cls.s = h.Striked(catalog=cls.db, extra_args=["--log-level", "debug"])

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def create(self, name, **over):
        r = self.s.req("POST", "/v1/tables", u.table_def(name, **over))
        self.assertEqual(r.status, 201, r)
        return r.json()

    def seq(self, name):
        r = self.s.req("GET", f"/v1/tables/{name}")
        self.assertEqual(r.status, 200, r)
        return r.json()["seq"]

    # ---- service endpoints -------------------------------------------------------

    def test_health_ready_metrics(self):
        r = self.s.req("GET", "/healthz")
        self.assertEqual((r.status, r.json()), (200, {"status": "ok"}))
        r = self.s.req("HEAD", "/healthz")
        self.assertEqual((r.status, r.body), (200, b""))
        r = self.s.req("GET", "/readyz")
        self.assertEqual(r.status, 200, r)
        u.assert_problem(self, self.s.req("POST", "/readyz", {}), 405)
        self.create("metrics_t")
        u.ok_changes(self, self.s, "metrics_t", [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}])
        r = self.s.req("GET", "/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("Content-Type").startswith("text/plain"))
        text = r.body.decode()
        for name in ("strike_http_requests_total", "strike_http_request_duration_seconds_bucket",
                     "strike_commits_total", "strike_commit_conflicts_total", "strike_commit_retries_total",
                     "strike_group_commits_total", "strike_dv_cache_hits_total",
                     "strike_dv_cache_misses_total", "strike_bytes_written_total"):
            self.assertIn(name, text)
        # route patterns, never raw paths
        self.assertIn('route="/v1/tables/{t}/changes",method="POST",status="200"', text)
        self.assertNotIn("metrics_t", text)
        m = re.search(r"^strike_commits_total (\d+)$", text, re.M)
        self.assertGreaterEqual(int(m.group(1)), 1)
        # every sample line is NAME{labels} VALUE
        for line in text.splitlines():
            if line and not line.startswith("#"):
                self.assertRegex(line, r'^[a-z_]+(\{([a-z_]+="[^"]*",?)+\})? [0-9.e+-]+$')

    def test_request_id(self):
        r = self.s.req("GET", "/healthz", headers={"X-Request-Id": "abc-123"})
        self.assertEqual(r.header("X-Request-Id"), "abc-123")
        r1 = self.s.req("GET", "/v1/tables")
        r2 = self.s.req("GET", "/v1/tables")
        self.assertTrue(r1.header("X-Request-Id"))
        self.assertNotEqual(r1.header("X-Request-Id"), r2.header("X-Request-Id"))
        # an unusable id is replaced, not echoed
        r = self.s.req("GET", "/healthz", headers={"X-Request-Id": "bad id with spaces"})
        self.assertNotEqual(r.header("X-Request-Id"), "bad id with spaces")
        # the access log carries the id (debug level) and the route pattern
        self.s.req("GET", "/v1/tables/nosuch", headers={"X-Request-Id": "trace-me-7"})
        found = False
        for _ in range(50):  # the access line is written when the request completes
            recs = [x for x in self.s.log_records() if x.get("rid") == "trace-me-7"]
            found = any(x.get("msg") == "http request" and x.get("status") == "404"
                        and x.get("route") == "/v1/tables/{t}" for x in recs)
            if found:
                break
            time.sleep(0.1)
        self.assertTrue(found, recs)

    def test_not_found_and_methods(self):
        u.assert_problem(self, self.s.req("GET", "/nope"), 404, "/nope")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/x/unknown"), 404)
        u.assert_problem(self, self.s.req("GET", "/v1/tables/x/files/1/dv/more"), 404)
        for path in ("/v1/tables/nosuch", "/v1/tables/nosuch/snapshots",
                     "/v1/tables/nosuch/files/1", "/v1/tables/nosuch/files/1/dv?snapshot=0"):
            u.assert_problem(self, self.s.req("GET", path), 404, "nosuch")
        for path in ("scan", "plan", "delete", "changes"):
            body = {"filter": True} if path == "delete" else {"changes": []} if path == "changes" else {}
            u.assert_problem(self, self.s.req("POST", f"/v1/tables/nosuch/{path}", body), 404, "nosuch")
        u.assert_problem(self, self.s.req("DELETE", "/v1/tables/nosuch"), 404)
        cases = [("PUT", "/v1/tables", "GET, HEAD, POST"), ("POST", "/v1/tables/x", "GET, HEAD, DELETE"),
                 ("GET", "/v1/tables/x/scan", "POST"), ("GET", "/v1/tables/x/changes", "POST"),
                 ("DELETE", "/v1/tables/x/files/1", "GET, HEAD"), ("POST", "/metrics", "GET, HEAD"),
                 ("PATCH", "/v1/tables/x/files/1/dv", "GET, HEAD")]
        for method, path, allow in cases:
            r = self.s.req(method, path, body=b"" if method in ("POST", "PUT", "PATCH") else None)
            u.assert_problem(self, r, 405)
            self.assertEqual(r.header("Allow"), allow, (method, path))
        # names and ids that cannot be valid are 400
        u.assert_problem(self, self.s.req("GET", "/v1/tables/bad-name"), 400, "table name")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/" + "a" * 129), 400, "table name")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/t/files/abc"), 400, "file id")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/t/files/0/dv"), 400, "file id")
        u.assert_problem(self, self.s.req("GET", "/v1/tables?x=1"), 400, 'unknown query parameter "x"')

    def test_maintenance_routes(self):
        self.create("later")
        # compaction and erasure are routed (test_erasure.py tests them whole)
        r = self.s.req("POST", "/v1/tables/later/compact", {})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["rewritten_files"], 0)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/later/erasures", {"keys": []}), 400,
                         "keys: an empty list")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/later/erasures/abc"), 404, "no erasure")
        self.assertEqual(self.seq("later"), 0)

    # ---- tables ------------------------------------------------------------------

    def test_tables(self):
        r = self.s.req("POST", "/v1/tables", u.table_def("t_create"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.header("Location"), "/v1/tables/t_create")
        t = r.json()
        self.assertEqual(t["name"], "t_create")
        self.assertEqual([c["name"] for c in t["columns"]], ["order_id", "user_id", "amount", "status", "updated_at"])
        self.assertEqual(t["columns"][0], {"name": "order_id", "type": "long", "required": True})
        self.assertEqual(t["primary_key"], ["order_id"])
        self.assertEqual(t["seq"], 0)
        u.assert_problem(self, self.s.req("POST", "/v1/tables", u.table_def("t_create")), 409, "already exists")

        r = self.s.req("GET", "/v1/tables/t_create")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["stats"], {"data_files": 0, "rows": 0, "deleted_rows": 0,
                                             "live_rows": 0, "dv_files": 0, "inline_dvs": 0})
        names = [x["name"] for x in self.s.req("GET", "/v1/tables").json()["tables"]]
        self.assertIn("t_create", names)
        self.assertEqual(names, sorted(names))
        # snapshot 0 is scannable and empty
        r = u.scan(self.s, "t_create")
        self.assertEqual((r.status, r.body, r.header("Strike-Snapshot")), (200, b"", "0"))

        r = self.s.req("DELETE", "/v1/tables/t_create")
        self.assertEqual((r.status, r.body), (204, b""))
        u.assert_problem(self, self.s.req("GET", "/v1/tables/t_create"), 404)
        u.assert_problem(self, self.s.req("DELETE", "/v1/tables/t_create"), 404)
        # a table without a primary key: filter deletes only
        d = u.table_def("t_nopk", primary_key=[])
        del d["version_column"]
        self.assertEqual(self.s.req("POST", "/v1/tables", d).status, 201)
        r = u.changes(self.s, "t_nopk", [{"op": "delete", "key": {"order_id": 1}}])
        u.assert_problem(self, r, 400, "no primary key")
        r = u.changes(self.s, "t_nopk", [{"op": "u", "before": {"order_id": 1}, "after": {"order_id": 1, "user_id": 2}}])
        u.assert_problem(self, r, 400, "cannot be updated by key")
        self.assertEqual(u.ok_changes(self, self.s, "t_nopk", [{"op": "c", "after": {"order_id": 1, "user_id": 2}},
                                                               {"op": "upsert", "row": {"order_id": 1, "user_id": 2}}])["inserted"], 2)
        r = self.s.req("POST", "/v1/tables/t_nopk/changes", '{"changes":[{"op":"c","after":{"order_id":1,"user_id":2,"status":"a\u0000b"}}]}',
                       {"Content-Type": "application/json"})
        u.assert_problem(self, r, 400, "invalid JSON")

    def test_create_errors(self):
        bad = [
            ({"columns": []}, "name: required"),
            ({"name": "bad-name", "columns": [{"name": "a", "type": "long"}]}, "name"),
            ({"name": "x1"}, "columns: required"),
            ({"name": "x1", "columns": [{"name": "a", "type": "decimal"}]}, 'columns[0].type: unknown type "decimal"'),
            ({"name": "x1", "columns": [{"name": "a", "type": "long", "size": 3}]}, 'columns[0]: unknown field "size"'),
            ({"name": "x1", "columns": [{"name": "a", "type": "long"}], "primary_key": ["a"]}, "must be required"),
            ({"name": "x1", "columns": [{"name": "a", "type": "long", "required": True}], "primary_key": ["b"]}, 'unknown column "b"'),
            ({"name": "x1", "columns": [{"name": "a", "type": "long"}], "extra": 1}, 'unknown field "extra"'),
            ({"name": "x1", "columns": [{"name": "a", "type": "long"}, {"name": "a", "type": "int"}]}, "duplicate"),
            ({"name": "x1", "columns": [{"name": "a", "type": "long", "required": "yes"}]}, "columns[0].required: expected a boolean"),
        ]
        for body, needle in bad:
            u.assert_problem(self, self.s.req("POST", "/v1/tables", body), 400, needle)
        u.assert_problem(self, self.s.req("POST", "/v1/tables", "[1,2]", {"Content-Type": "application/json"}),
                         400, "must be a JSON object, got array")
        u.assert_problem(self, self.s.req("POST", "/v1/tables", '{"name":', {"Content-Type": "application/json"}),
                         400, "invalid JSON at line 1")
        u.assert_problem(self, self.s.req("POST", "/v1/tables", '{"name":"a","name":"b"}',
                                          {"Content-Type": "application/json"}), 400, "invalid JSON")
        u.assert_problem(self, self.s.req("POST", "/v1/tables", b"", {"Content-Type": "application/json"}),
                         400, "JSON object")
        self.assertEqual(self.s.req("GET", "/v1/tables/x1").status, 404)

    def test_content_type(self):
        body = json.dumps(u.table_def("ct_t"))
        u.assert_problem(self, self.s.req("POST", "/v1/tables", body, {"Content-Type": "text/plain"}), 415,
                         "application/json")
        u.assert_problem(self, self.s.req("POST", "/v1/tables", body), 415, "no Content-Type")
        u.assert_problem(self, self.s.req("POST", "/v1/tables", body,
                                          {"Content-Type": "application/json; charset=latin1"}), 415)
        r = self.s.req("POST", "/v1/tables", body, {"Content-Type": "Application/JSON; charset=UTF-8"})
        self.assertEqual(r.status, 201, r)
        # curl's default form type is refused too
        code, out, _ = u.curl("-X", "POST", f"http://127.0.0.1:{self.s.http_port}/v1/tables/ct_t/scan", "-d", "{}")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out)["status"], 415)

    # ---- changes -----------------------------------------------------------------

    def test_changes_counts_and_values(self):
        self.create("ch")
        res = u.ok_changes(self, self.s, "ch", [
            {"op": "upsert", "row": {"order_id": 1, "user_id": 7, "amount": 9.5, "status": "NEW"}},
            {"op": "upsert", "row": {"order_id": 2, "user_id": 7, "amount": 0.1}},
            {"op": "upsert", "row": {"order_id": 3, "user_id": 8}},
            {"op": "delete", "key": {"order_id": 3}},
            {"op": "delete", "key": {"order_id": 99}},
            {"op": "upsert", "row": {"order_id": 2, "user_id": 9, "amount": 0.25}},
        ])
        self.assertEqual(res, {"seq": 1, "inserted": 3, "updated": 1, "deleted": 1, "missing": 1,
                               "stale": 0, "duplicate": False})
        rows = u.scan_rows(self, self.s, "ch")
        self.assertEqual(rows, [
            {"order_id": 1, "user_id": 7, "amount": 9.5, "status": "NEW", "updated_at": None},
            {"order_id": 2, "user_id": 9, "amount": 0.25, "status": None, "updated_at": None},
        ])
        # an empty list is valid and makes no snapshot
        res = u.ok_changes(self, self.s, "ch", [])
        self.assertEqual(res["seq"], 1)
        self.assertEqual(res["inserted"] + res["updated"] + res["deleted"], 0)
        # exact longs, shortest doubles, timestamps in (micros or RFC 3339) and out (RFC 3339, Z)
        u.ok_changes(self, self.s, "ch", [
            {"op": "upsert", "row": {"order_id": 9007199254740993, "user_id": -9223372036854775808,
                                     "amount": 1e300, "status": "é\"\\\n", "updated_at": 1700000000123456}},
            {"op": "upsert", "row": {"order_id": 5, "user_id": 1, "amount": -0.0,
                                     "updated_at": "2026-01-01T01:00:00.5+01:00"}},
            {"op": "upsert", "row": {"order_id": 6, "user_id": 1, "amount": 7}},
        ])
        out = u.scan(self.s, "ch", {"filter": {"type": "in", "term": "order_id", "values": [9007199254740993, 5, 6]}})
        self.assertEqual(out.status, 200)
        text = out.body.decode()
        self.assertIn('"order_id":9007199254740993,"user_id":-9223372036854775808,"amount":1e300,', text)
        self.assertIn('"updated_at":"2023-11-14T22:13:20.123456Z"', text)
        self.assertEqual(out.ndjson()[0]["status"], 'é"\\\n')
        self.assertIn('"amount":-0.0,"status":null,"updated_at":"2026-01-01T00:00:00.500000Z"', text)
        self.assertIn('"order_id":6,"user_id":1,"amount":7.0,', text)

    def test_change_errors_change_nothing(self):
        self.create("che")
        u.ok_changes(self, self.s, "che", [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}])
        before = u.scan(self.s, "che").body
        bad = [
            ([{"op": "upsert", "row": {"order_id": 2, "user_id": 1}},
              {"op": "upsert", "row": {"order_id": 3, "user_id": 1}},
              {"op": "upsert", "row": {"order_id": 4, "user_id": 1}},
              {"op": "upsert", "row": {"order_id": 5, "user_id": 1, "amount": "x"}}],
             'row 3: column "amount": expected double, got string'),
            ([{"op": "upsert", "row": {"order_id": 2}}], 'row 0: column "user_id" is required'),
            ([{"op": "upsert", "row": {"order_id": 2, "user_id": None}}], 'row 0: column "user_id" is required'),
            ([{"op": "upsert", "row": {"order_id": 2, "user_id": 1, "nope": 1}}], 'row 0: unknown column "nope"'),
            ([{"op": "upsert", "row": {"order_id": 2.5, "user_id": 1}}], 'row 0: column "order_id"'),
            ([{"op": "upsert", "row": {"order_id": 2, "user_id": 1, "updated_at": "yesterday"}}], "RFC 3339"),
            ([{"op": "merge", "row": {"order_id": 2, "user_id": 1}}], "row 0: op must be"),
            ([{"row": {"order_id": 2, "user_id": 1}}], "row 0: op: required"),
            ([{"op": "upsert"}], 'row 0: an upsert needs "row"'),
            ([{"op": "delete", "key": {"order_id": 1, "user_id": 1}}], "row 0:"),
            ([{"op": "upsert", "row": [1, 2]}], "row 0: row: expected an object"),
            ([{"op": "upsert", "row": {"order_id": 2, "user_id": 1}, "extra": 1}], 'row 0: unknown field "extra"'),
            ([5], "row 0: expected a change object"),
        ]
        for chs, needle in bad:
            u.assert_problem(self, u.changes(self.s, "che", chs), 400, needle)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {"changes": 1}), 400, "changes: expected an array")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {}), 400, "changes: required")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {"changes": [], "producer": "p"}), 400, "offset")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {"changes": [], "offset": 1}), 400, "producer")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {"changes": [], "expected_seq": "1"}),
                         400, "expected_seq: expected an integer")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/che/changes", {"changes": [], "chnages": []}),
                         400, 'unknown field "chnages"')
        self.assertEqual(u.scan(self.s, "che").body, before)
        self.assertEqual(self.seq("che"), 1)

    def test_key_size_limit(self):
        """docs/API.md "Changes": a key is at most 1024 bytes encoded (a string: its bytes + 2).
        A longer one used to reach the key index's btree and fail the whole group commit (500)."""
        r = self.s.req("POST", "/v1/tables", {"name": "keysz", "primary_key": ["k", "n"], "columns": [
            {"name": "k", "type": "string", "required": True}, {"name": "n", "type": "int", "required": True},
            {"name": "v", "type": "long"}]})
        self.assertEqual(r.status, 201, r)
        up = lambda k, n=1: {"op": "upsert", "row": {"k": k, "n": n, "v": 1}}
        u.ok_changes(self, self.s, "keysz", [up("a" * 1018)])  # 1018 + 2 + 4 = 1024
        seq = self.seq("keysz")
        for chs, needle in [
            ([up("b"), up("a" * 1019)], "row 1: key: longer than 1024 bytes encoded (1025 bytes)"),
            ([up("é" * 1500)], "row 0: key: longer than 1024 bytes encoded (3006 bytes)"),
            ([up("x"), {"op": "delete", "key": {"k": "z" * 3000, "n": 1}}],
             "row 1: key: longer than 1024 bytes encoded (3006 bytes)"),
            ([{"op": "u", "before": {"k": "y" * 2000, "n": 1}, "after": {"k": "y", "n": 1}}],
             "row 0: key: longer than 1024 bytes encoded (2006 bytes)"),
        ]:
            u.assert_problem(self, u.changes(self.s, "keysz", chs), 400, needle)
        self.assertEqual(self.seq("keysz"), seq)
        self.assertEqual([len(x["k"]) for x in u.scan_rows(self, self.s, "keysz")], [1018])

    def test_expected_seq(self):
        self.create("exp")
        u.ok_changes(self, self.s, "exp", [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}], expected_seq=0)
        r = u.changes(self.s, "exp", [{"op": "upsert", "row": {"order_id": 2, "user_id": 1}}], expected_seq=0)
        u.assert_problem(self, r, 409)
        self.assertEqual(self.seq("exp"), 1)
        r = self.s.req("POST", "/v1/tables/exp/delete", {"filter": True, "expected_seq": 0})
        u.assert_problem(self, r, 409)
        self.assertEqual(len(u.scan_rows(self, self.s, "exp")), 1)

    def test_version_column_stale(self):
        self.create("ver")
        u.ok_changes(self, self.s, "ver", [{"op": "upsert", "row": {"order_id": 1, "user_id": 1, "updated_at": 1000}}])
        res = u.ok_changes(self, self.s, "ver", [
            {"op": "upsert", "row": {"order_id": 1, "user_id": 2, "updated_at": 500}}])
        self.assertEqual((res["stale"], res["updated"]), (1, 0))
        self.assertEqual(u.scan_rows(self, self.s, "ver")[0]["user_id"], 1)
        res = u.ok_changes(self, self.s, "ver", [
            {"op": "upsert", "row": {"order_id": 1, "user_id": 3, "updated_at": "1970-01-01T00:00:00.002Z"}}])
        self.assertEqual((res["stale"], res["updated"]), (0, 1))
        self.assertEqual(u.scan_rows(self, self.s, "ver")[0]["user_id"], 3)

    def test_producer_offsets(self):
        self.create("prod")
        row = lambda k: {"op": "upsert", "row": {"order_id": k, "user_id": 1}}
        res = u.ok_changes(self, self.s, "prod", [row(1)], producer="cdc-1", offset=5)
        self.assertFalse(res["duplicate"])
        seq = res["seq"]
        for off in (5, 4):
            res = u.ok_changes(self, self.s, "prod", [row(2)], producer="cdc-1", offset=off)
            self.assertEqual(res, {"seq": seq, "inserted": 0, "updated": 0, "deleted": 0, "missing": 0,
                                   "stale": 0, "duplicate": True})
        # another producer has its own offsets; a later offset applies
        self.assertFalse(u.ok_changes(self, self.s, "prod", [row(3)], producer="cdc-2", offset=1)["duplicate"])
        res = u.ok_changes(self, self.s, "prod", [row(2)], producer="cdc-1", offset=6)
        self.assertEqual((res["duplicate"], res["inserted"]), (False, 1))
        self.assertEqual(sorted(x["order_id"] for x in u.scan_rows(self, self.s, "prod")), [1, 2, 3])
        # an empty batch that advances the offset still counts as applied once
        u.ok_changes(self, self.s, "prod", [], producer="cdc-1", offset=7)
        self.assertTrue(u.ok_changes(self, self.s, "prod", [], producer="cdc-1", offset=7)["duplicate"])
        # a producer name is 1 to 255 characters; a refused one changes nothing
        seq = self.seq("prod")
        for bad in ("", "p" * 256):
            u.assert_problem(self, u.changes(self.s, "prod", [row(9)], producer=bad, offset=1), 400,
                             "producer: 1 to 255 characters")
        self.assertEqual(self.seq("prod"), seq)
        self.assertFalse(u.ok_changes(self, self.s, "prod", [row(9)], producer="p" * 255, offset=1)["duplicate"])

    def test_producer_not_utf8(self):
        """A producer name that is not UTF-8 is 400 (jdoc checks every string of a body) and
        changes nothing; it never reaches a group commit, where PostgreSQL would refuse it."""
        self.create("prod_utf8")
        for raw in (b"abc\xff", b"ab\xc0\xaf", b"\xed\xa0\x80"):
            body = b'{"changes":[{"op":"upsert","row":{"order_id":1,"user_id":1}}],"producer":"' + raw + \
                b'","offset":1}'
            r = self.s.req("POST", "/v1/tables/prod_utf8/changes", body, {"Content-Type": "application/json"})
            u.assert_problem(self, r, 400, "invalid JSON")  # jansson: "unable to decode byte 0x.."
        self.assertEqual(self.seq("prod_utf8"), 0)
        self.assertEqual(u.scan_rows(self, self.s, "prod_utf8"), [])

    def test_duplicate_ignores_expected_seq(self):
        """docs/API.md: a duplicate answers 200 "whatever its expected_seq"."""
        self.create("prod2")
        row = {"op": "upsert", "row": {"order_id": 1, "user_id": 1}}
        seq = u.ok_changes(self, self.s, "prod2", [row], producer="p", offset=5)["seq"]
        r = u.changes(self.s, "prod2", [row], producer="p", offset=5, expected_seq=seq + 100)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["duplicate"], r.json()["seq"]), (True, seq))

    def test_debezium_ops(self):
        self.create("dbz")
        res = u.ok_changes(self, self.s, "dbz", [
            {"op": "c", "before": None, "after": {"order_id": 1, "user_id": 1, "status": "NEW"},
             "source": {"db": "shop", "table": "orders"}, "ts_ms": 1700000000000},
            {"op": "r", "after": {"order_id": 2, "user_id": 2}},
            {"op": "c", "after": {"order_id": 3, "user_id": 3}},
            {"op": "u", "before": {"order_id": 1, "user_id": 1}, "after": {"order_id": 1, "user_id": 10, "status": "PAID"}},
            {"op": "u", "before": {"order_id": 2, "user_id": 2}, "after": {"order_id": 20, "user_id": 2}},
            {"op": "d", "before": {"order_id": 3, "user_id": 3, "status": "x"}, "after": None},
        ])
        self.assertEqual((res["inserted"], res["updated"], res["deleted"]), (4, 1, 2))
        rows = {r["order_id"]: r for r in u.scan_rows(self, self.s, "dbz")}
        self.assertEqual(sorted(rows), [1, 20])
        self.assertEqual((rows[1]["user_id"], rows[1]["status"]), (10, "PAID"))
        u.assert_problem(self, u.changes(self.s, "dbz", [{"op": "u", "before": {"order_id": 1}}]), 400, 'needs "after"')
        u.assert_problem(self, u.changes(self.s, "dbz", [{"op": "d"}]), 400, 'needs "before"')

    def test_idempotency_key(self):
        self.create("idem")
        body = {"changes": [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}]}
        r1 = self.s.req("POST", "/v1/tables/idem/changes", body, {"Idempotency-Key": "k-1"})
        self.assertEqual(r1.status, 200, r1)
        r2 = self.s.req("POST", "/v1/tables/idem/changes", body, {"Idempotency-Key": "k-1"})
        self.assertEqual((r2.status, r2.body), (200, r1.body))
        self.assertEqual(r2.header("Idempotent-Replayed"), "true")
        self.assertEqual(self.seq("idem"), 1)
        body2 = {"changes": [{"op": "upsert", "row": {"order_id": 2, "user_id": 1}}]}
        u.assert_problem(self, self.s.req("POST", "/v1/tables/idem/changes", body2, {"Idempotency-Key": "k-1"}), 422, "k-1")
        self.assertEqual(self.seq("idem"), 1)
        u.assert_problem(self, self.s.req("POST", "/v1/tables/idem/changes", body, {"Idempotency-Key": "has space"}), 400,
                         "Idempotency-Key")
        # delete by filter, create and drop take keys too
        d1 = self.s.req("POST", "/v1/tables/idem/delete", {"filter": True}, {"Idempotency-Key": "k-2"})
        d2 = self.s.req("POST", "/v1/tables/idem/delete", {"filter": True}, {"Idempotency-Key": "k-2"})
        self.assertEqual((d1.status, d2.status, d1.body), (200, 200, d2.body))
        self.assertEqual(d1.json()["deleted"], 1)
        c1 = self.s.req("POST", "/v1/tables", u.table_def("idem2"), {"Idempotency-Key": "c-1"})
        c2 = self.s.req("POST", "/v1/tables", u.table_def("idem2"), {"Idempotency-Key": "c-1"})
        self.assertEqual((c1.status, c2.status), (201, 201))
        self.assertEqual(c1.json(), c2.json())
        self.assertEqual((c1.header("Idempotent-Replayed"), c2.header("Idempotent-Replayed")), (None, "true"))
        self.assertEqual(c2.header("Location"), "/v1/tables/idem2")
        self.assertEqual(d2.header("Idempotent-Replayed"), "true")
        x1 = self.s.req("DELETE", "/v1/tables/idem2", headers={"Idempotency-Key": "x-1"})
        x2 = self.s.req("DELETE", "/v1/tables/idem2", headers={"Idempotency-Key": "x-1"})
        self.assertEqual((x1.status, x2.status), (204, 204))
        self.assertEqual((x1.header("Idempotent-Replayed"), x2.header("Idempotent-Replayed")), (None, "true"))
        self.assertEqual(x2.body, b"")

    def test_idempotency_key_scoped_to_the_table(self):
        """A key does not outlive its table: a table created later under the
        same name is a new resource and replays nothing of the old one."""
        self.create("idem3")
        body = {"changes": [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}]}
        r1 = self.s.req("POST", "/v1/tables/idem3/changes", body, {"Idempotency-Key": "z"})
        self.assertEqual((r1.status, r1.json()["seq"]), (200, 1), r1)
        x1 = self.s.req("DELETE", "/v1/tables/idem3", headers={"Idempotency-Key": "drop-1"})
        self.assertEqual(x1.status, 204, x1)
        c1 = self.s.req("POST", "/v1/tables", u.table_def("idem3"), {"Idempotency-Key": "c-3"})
        self.assertEqual(c1.status, 201, c1)
        # a retried drop of the old table replays its 204 and leaves the new one alone
        x2 = self.s.req("DELETE", "/v1/tables/idem3", headers={"Idempotency-Key": "drop-1"})
        self.assertEqual((x2.status, x2.header("Idempotent-Replayed")), (204, "true"))
        self.assertEqual(self.s.req("GET", "/v1/tables/idem3").status, 200)
        r2 = self.s.req("POST", "/v1/tables/idem3/changes", body, {"Idempotency-Key": "z"})
        self.assertEqual(r2.status, 200, r2)
        self.assertIsNone(r2.header("Idempotent-Replayed"))
        self.assertEqual(r2.json()["seq"], 1)
        self.assertEqual(len(u.scan_rows(self, self.s, "idem3")), 1)
        # the same for a create key: after a drop, a create with it creates again
        self.assertEqual(self.s.req("DELETE", "/v1/tables/idem3").status, 204)
        c2 = self.s.req("POST", "/v1/tables", u.table_def("idem3"), {"Idempotency-Key": "c-3"})
        self.assertEqual(c2.status, 201, c2)
        self.assertIsNone(c2.header("Idempotent-Replayed"))
        self.assertNotEqual(c2.json()["uuid"], c1.json()["uuid"])
        self.assertEqual(self.s.req("GET", "/v1/tables/idem3").status, 200)

    def test_escaped_nul_and_slash_in_paths(self):
        """%00 would cut a name short and %2F would move to another route: both
        stay escaped, so the name or id cannot be valid (400), nothing is
        dropped or read."""
        self.create("victim")
        self.create("pct")
        u.ok_changes(self, self.s, "pct", [{"op": "upsert", "row": {"order_id": 1, "user_id": 1}}])
        u.assert_problem(self, self.s.req("DELETE", "/v1/tables/victim%00anything"), 400, "table name")
        self.assertEqual(self.s.req("GET", "/v1/tables/victim").status, 200)
        for path in ("/v1/tables/pct%00junk", "/v1/tables/pct%2Fsnapshots", "/v1/tables/pct%2fsnapshots"):
            u.assert_problem(self, self.s.req("GET", path), 400, "table name")
        fid = self.s.req("POST", "/v1/tables/pct/plan", {}).json()["files"][0]["id"]
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/pct/files/{fid}%00/dv"), 400, "file id")
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/pct/files/{fid}/dv?snapshot=1%00x"), 400, "snapshot")
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/pct/files/{fid}/dv?format=delta-dv%00x"), 400,
                         "format")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/pct%00x/scan", {}), 400, "table name")
        # other escapes still decode
        self.assertEqual(self.s.req("GET", "/v1/tables/%70ct").status, 200)
        r = self.s.req("GET", f"/v1/tables/pct/files/{fid}/dv?format=iceberg%2Ddv&snapshot=%31")
        self.assertEqual(r.status, 200, r)

    # ---- delete by filter -------------------------------------------------------------

    def test_delete_by_filter(self):
        self.create("del")
        u.ok_changes(self, self.s, "del", [{"op": "upsert", "row": {"order_id": i, "user_id": i % 3,
                                                                    "status": "NEW" if i % 2 else None}}
                                           for i in range(30)])
        r = self.s.req("POST", "/v1/tables/del/delete", {"filter": {"type": "eq", "term": "user_id", "value": 0}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"seq": 2, "deleted": 10})
        # the newer form, mixed with the released one; nulls never match not-eq
        f = {"type": "and", "left": {"type": "not-eq", "left": {"type": "reference", "name": "status"}, "right": "X"},
             "right": {"type": "lt", "term": "order_id", "value": 10}}
        r = self.s.req("POST", "/v1/tables/del/delete", {"filter": f})
        self.assertEqual(r.json()["deleted"], len([i for i in range(10) if i % 3 and i % 2]))
        u.assert_problem(self, self.s.req("POST", "/v1/tables/del/delete", {}), 400, "filter: required")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/del/delete",
                                          {"filter": {"type": "eq", "term": "nope", "value": 1}}), 400, "nope")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/del/delete",
                                          {"filter": {"type": "eq", "term": "user_id", "value": "x"}}), 400, "filter")
        r = self.s.req("POST", "/v1/tables/del/delete", {"filter": True})
        self.assertEqual(r.status, 200)
        self.assertEqual(u.scan(self.s, "del").body, b"")
        st = self.s.req("GET", "/v1/tables/del").json()["stats"]
        self.assertEqual(st["live_rows"], 0)
        self.assertEqual(st["rows"] - st["deleted_rows"], 0)

    # ---- scans --------------------------------------------------------------------------

    def test_scan(self):
        self.create("sc")
        u.ok_changes(self, self.s, "sc", [{"op": "upsert", "row": {"order_id": k, "user_id": k * 10, "amount": k / 4}}
                                          for k in (10, 11, 12)])
        u.ok_changes(self, self.s, "sc", [{"op": "upsert", "row": {"order_id": k, "user_id": k * 10}} for k in (1, 2)])
        u.ok_changes(self, self.s, "sc", [{"op": "delete", "key": {"order_id": 11}}])
        # files by data_seq then id, rows by position
        self.assertEqual([r["order_id"] for r in u.scan_rows(self, self.s, "sc")], [10, 12, 1, 2])
        r = u.scan(self.s, "sc")
        self.assertEqual(r.header("Strike-Snapshot"), "3")
        # older snapshots
        r = u.scan(self.s, "sc", {"snapshot": 1})
        self.assertEqual(r.header("Strike-Snapshot"), "1")
        self.assertEqual([x["order_id"] for x in r.ndjson()], [10, 11, 12])
        r = u.scan(self.s, "sc", {"snapshot": 0})
        self.assertEqual((r.status, r.body, r.header("Strike-Snapshot")), (200, b"", "0"))
        # projection in the order asked, filter, limit
        rows = u.scan_rows(self, self.s, "sc", {"columns": ["amount", "order_id"], "limit": 2})
        self.assertEqual(rows, [{"amount": 2.5, "order_id": 10}, {"amount": 3.0, "order_id": 12}])
        self.assertEqual(list(rows[0].keys()), ["amount", "order_id"])
        r = u.scan(self.s, "sc", {"limit": 0})
        self.assertEqual((r.status, r.body), (200, b""))
        rows = u.scan_rows(self, self.s, "sc", {"filter": {"type": "gt-eq", "term": "user_id", "value": 20}})
        self.assertEqual([x["order_id"] for x in rows], [10, 12, 2])
        rows = u.scan_rows(self, self.s, "sc", {"filter": {"type": "is-null", "child": {"type": "reference", "name": "amount"}}})
        self.assertEqual([x["order_id"] for x in rows], [1, 2])
        # a chain of one operator is one filter level however deep its JSON nests: bodies with a
        # filter nest up to 2048 values deep (jansson's limit, which read them before jdoc did)
        def chain_body(ors):  # the leaf's members are values at depth ors + 3
            return ('{"filter":' + '{"type":"or","left":' * ors + '{"type":"eq","term":"order_id","value":12}'
                    + ',"right":{"type":"eq","term":"order_id","value":-1}}' * ors + '}')
        js = {"Content-Type": "application/json"}
        r = self.s.req("POST", "/v1/tables/sc/scan", chain_body(2045), js)
        self.assertEqual((r.status, [x["order_id"] for x in r.ndjson()]), (200, [12]), r)
        r = self.s.req("POST", "/v1/tables/sc/plan", chain_body(2045), js)
        self.assertEqual(r.status, 200, r)
        r = self.s.req("POST", "/v1/tables/sc/scan", chain_body(2046), js)
        u.assert_problem(self, r, 400, "invalid JSON at line 1 column ")
        self.assertIn(": maximum parsing depth reached near '", r.json()["detail"])
        u.assert_problem(self, self.s.req("POST", "/v1/tables/sc/delete", chain_body(2046), js), 400,
                         "maximum parsing depth reached")
        # errors
        u.assert_problem(self, u.scan(self.s, "sc", {"columns": []}), 400, "columns")
        u.assert_problem(self, u.scan(self.s, "sc", {"columns": ["nope"]}), 400, 'unknown column "nope"')
        u.assert_problem(self, u.scan(self.s, "sc", {"columns": ["amount", "amount"]}), 400, "twice")
        u.assert_problem(self, u.scan(self.s, "sc", {"snapshot": -1}), 400, "snapshot")
        u.assert_problem(self, u.scan(self.s, "sc", {"snapshot": "1"}), 400, "snapshot")
        u.assert_problem(self, u.scan(self.s, "sc", {"snapshot": 99}), 404, "snapshot 99")
        u.assert_problem(self, u.scan(self.s, "sc", {"limit": -1}), 400, "limit")
        u.assert_problem(self, u.scan(self.s, "sc", {"limt": 1}), 400, 'unknown field "limt"')
        u.assert_problem(self, u.scan(self.s, "sc", {"filter": {"type": "eq", "term": "x", "value": 1}}), 400, "filter")
        # an empty body is an empty request
        r = self.s.req("POST", "/v1/tables/sc/scan", b"")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.ndjson()), 4)

    def test_big_scan_streams(self):
        """A scan larger than the server's buffers, read fully; and one abandoned midway."""
        self.create("bigscan")
        pad = "x" * 200
        for base in range(0, 40000, 20000):
            u.ok_changes(self, self.s, "bigscan", [{"op": "upsert", "row": {"order_id": i, "user_id": i, "status": pad}}
                                                   for i in range(base, base + 20000)])
        rows = u.scan_rows(self, self.s, "bigscan", {"columns": ["order_id"]})
        self.assertEqual([r["order_id"] for r in rows], list(range(40000)))
        r = u.scan(self.s, "bigscan")
        self.assertGreater(len(r.body), 8_000_000)
        self.assertEqual(len(r.ndjson()), 40000)
        # read a little, then hang up: the server stops the scan and stays healthy
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", self.s.http_port)) as c:
                c.sendall(b"POST /v1/tables/bigscan/scan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 2\r\n\r\n{}")
                got = c.recv(65536)
                self.assertIn(b"200 OK", got)
        deadline = time.time() + 20
        while time.time() < deadline:
            m = self.s.req("GET", "/metrics").body.decode()
            idle = (re.search(r"^strike_http_requests_in_flight 1$", m, re.M) and
                    re.search(r"^strike_workers_pending 0$", m, re.M))
            if idle:
                break
            time.sleep(0.1)
        self.assertTrue(idle, "the abandoned scans are still running")
        self.assertGreaterEqual(int(re.search(r"(?m)^strike_http_requests_aborted_total (\d+)$", m).group(1)), 3)
        self.assertEqual(len(u.scan_rows(self, self.s, "bigscan", {"limit": 5})), 5)

    # ---- plan, snapshots, files, DVs -----------------------------------------------------

    def setup_files(self, name):
        """Two files; the first gets deletes at seq 3. Returns the plan at seq 3."""
        self.create(name)
        u.ok_changes(self, self.s, name, [{"op": "upsert", "row": {"order_id": i, "user_id": i}} for i in range(100)])
        u.ok_changes(self, self.s, name, [{"op": "upsert", "row": {"order_id": i, "user_id": i}} for i in range(1000, 1050)])
        u.ok_changes(self, self.s, name, [{"op": "delete", "key": {"order_id": i}} for i in (3, 4, 5, 50, 99)])
        r = self.s.req("POST", f"/v1/tables/{name}/plan", {})
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_plan(self):
        plan = self.setup_files("pl")
        self.assertEqual(plan["seq"], 3)
        f1, f2 = plan["files"]
        self.assertEqual((f1["record_count"], f2["record_count"]), (100, 50))
        self.assertEqual((f1["data_seq"], f2["data_seq"]), (1, 2))
        self.assertEqual(f1["url"], f"/v1/tables/pl/files/{f1['id']}")
        self.assertEqual(f1["format"], "parquet")
        self.assertEqual(f1["deleted_count"], 5)
        self.assertEqual(f1["dv"]["cardinality"], 5)
        self.assertEqual(f1["dv"]["url"], f"/v1/tables/pl/files/{f1['id']}/dv?snapshot=3")
        self.assertTrue(f1["dv"]["path"].endswith(".puffin"))
        self.assertIsNone(f2["dv"])
        self.assertEqual(f2["deleted_count"], 0)
        for f in plan["files"]:
            self.assertEqual(os.path.getsize(os.path.join(self.s.data_dir, f["path"])), f["file_size"])
        # time travel: at seq 1, one file and no DV
        old = self.s.req("POST", "/v1/tables/pl/plan", {"snapshot": 1}).json()
        self.assertEqual(old["seq"], 1)
        self.assertEqual([(f["id"], f["dv"]) for f in old["files"]], [(f1["id"], None)])
        # a filter that the second file's stats exclude
        pr = self.s.req("POST", "/v1/tables/pl/plan", {"filter": {"type": "lt", "term": "order_id", "value": 500}}).json()
        self.assertEqual([f["id"] for f in pr["files"]], [f1["id"]])
        u.assert_problem(self, self.s.req("POST", "/v1/tables/pl/plan", {"snapshot": -1}), 400, "snapshot")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/pl/plan", {"snapshot": 77}), 404, "snapshot")
        u.assert_problem(self, self.s.req("POST", "/v1/tables/pl/plan", {"filter": {"type": "eq", "term": "q", "value": 1}}), 400)

    def test_snapshots(self):
        self.setup_files("sn")
        r = self.s.req("GET", "/v1/tables/sn/snapshots")
        self.assertEqual(r.status, 200)
        snaps = r.json()["snapshots"]
        self.assertEqual([s["seq"] for s in snaps], [0, 1, 2, 3])
        self.assertEqual(snaps[0]["operation"], "create")
        for s in snaps:
            self.assertRegex(s["committed_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
            self.assertIsInstance(s["summary"], dict)
            self.assertTrue(s["operation"])
        self.assertIsNone(r.json()["next"])
        # pages: oldest first, `next` is the `after` of the next page, null on the last
        r = self.s.req("GET", "/v1/tables/sn/snapshots?limit=3")
        self.assertEqual([s["seq"] for s in r.json()["snapshots"]], [0, 1, 2])
        self.assertEqual(r.json()["next"], 2)
        r = self.s.req("GET", "/v1/tables/sn/snapshots?limit=3&after=2")
        self.assertEqual(([s["seq"] for s in r.json()["snapshots"]], r.json()["next"]), ([3], None))
        r = self.s.req("GET", "/v1/tables/sn/snapshots?after=0&limit=1")
        self.assertEqual(([s["seq"] for s in r.json()["snapshots"]], r.json()["next"]), ([1], 1))
        r = self.s.req("GET", "/v1/tables/sn/snapshots?after=3")
        self.assertEqual(r.json(), {"snapshots": [], "next": None})
        r = self.s.req("GET", "/v1/tables/sn/snapshots?limit=5000")  # above the maximum: 1000
        self.assertEqual(len(r.json()["snapshots"]), 4)
        u.assert_problem(self, self.s.req("GET", "/v1/tables/sn/snapshots?limit=0"), 400, "limit: must be >= 1")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/sn/snapshots?limit=x"), 400, "limit")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/sn/snapshots?after=-1"), 400, "after: must be >= 0")
        u.assert_problem(self, self.s.req("GET", "/v1/tables/sn/snapshots?page=2"), 400, "page")

    def test_files_and_ranges(self):
        plan = self.setup_files("fi")
        f = plan["files"][0]
        disk = open(os.path.join(self.s.data_dir, f["path"]), "rb").read()
        r = self.s.req("GET", f["url"])
        self.assertEqual((r.status, r.body), (200, disk))
        self.assertEqual(r.header("Accept-Ranges"), "bytes")
        self.assertEqual(r.body[:4], b"PAR1")
        size = len(disk)
        for rng, lo, hi in (("bytes=0-3", 0, 3), ("bytes=-8", size - 8, size - 1), ("bytes=10-", 10, size - 1),
                            (f"bytes=5-{size + 100}", 5, size - 1), (f"bytes=-{size + 5}", 0, size - 1)):
            r = self.s.req("GET", f["url"], headers={"Range": rng})
            self.assertEqual(r.status, 206, rng)
            self.assertEqual(r.body, disk[lo:hi + 1], rng)
            self.assertEqual(r.header("Content-Range"), f"bytes {lo}-{hi}/{size}")
        for rng in (f"bytes={size}-", f"bytes={size + 10}-{size + 20}", "bytes=-0"):
            r = self.s.req("GET", f["url"], headers={"Range": rng})
            u.assert_problem(self, r, 416)
            self.assertEqual(r.header("Content-Range"), f"bytes */{size}")
        for rng in ("bytes=abc", "items=0-1", "bytes=5-2", "bytes=0-1,4-5", "bytes 0-1", "bytes=-"):
            r = self.s.req("GET", f["url"], headers={"Range": rng})
            self.assertEqual((r.status, len(r.body)), (200, size), rng)
        r = self.s.req("HEAD", f["url"])
        self.assertEqual((r.status, r.body), (200, b""))
        u.assert_problem(self, self.s.req("GET", "/v1/tables/fi/files/999999"), 404, "999999")
        # with curl too
        code, out, err = u.curl("-r", "0-3", f"http://127.0.0.1:{self.s.http_port}{f['url']}")
        self.assertEqual((code, out), (0, b"PAR1"), err)

    def test_deletion_vectors(self):
        plan = self.setup_files("dv")
        f1, f2 = plan["files"]
        url = f1["dv"]["url"]
        r = self.s.req("GET", url)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Content-Type"), "application/octet-stream")
        self.assertEqual(hr.decode_roaring64(r.body), [3, 4, 5, 50, 99])
        self.assertEqual(r.header("Strike-Cardinality"), "5")
        self.assertEqual(r.header("Strike-Snapshot"), "3")
        self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable")
        etag = r.header("ETag")
        self.assertRegex(etag, r'^"[0-9a-f]+"$')
        # cached: same bytes, same tag
        r2 = self.s.req("GET", url)
        self.assertEqual((r2.body, r2.header("ETag")), (r.body, etag))
        for inm in (etag, f'"zzz", {etag}', f"W/{etag}", "*"):
            r3 = self.s.req("GET", url, headers={"If-None-Match": inm})
            self.assertEqual((r3.status, r3.body), (304, b""), inm)
            self.assertEqual(r3.header("ETag"), etag)
        self.assertEqual(self.s.req("GET", url, headers={"If-None-Match": '"other"'}).status, 200)
        # the Iceberg blob exactly as stored in the Puffin file
        ice = self.s.req("GET", url + "&format=iceberg-dv")
        self.assertEqual(ice.status, 200)
        with open(os.path.join(self.s.data_dir, f1["dv"]["path"]), "rb") as fh:
            fh.seek(f1["dv"]["offset"])
            self.assertEqual(ice.body, fh.read(f1["dv"]["length"]))
        self.assertEqual(hr.decode_iceberg_dv(ice.body), [3, 4, 5, 50, 99])
        self.assertNotEqual(ice.header("ETag"), etag)
        delta = self.s.req("GET", url + "&format=delta-dv")
        self.assertEqual(hr.decode_delta_dv(delta.body), [3, 4, 5, 50, 99])
        # the current snapshot: same bytes, not immutable
        cur = self.s.req("GET", f"/v1/tables/dv/files/{f1['id']}/dv")
        self.assertEqual((cur.status, cur.body, cur.header("ETag")), (200, r.body, etag))
        self.assertEqual(cur.header("Strike-Snapshot"), "3")
        self.assertNotEqual(cur.header("Cache-Control"), "public, max-age=31536000, immutable")
        # a file without deletes: the empty bitmap, in every format
        for fmt, dec in (("roaring64", hr.decode_roaring64), ("iceberg-dv", hr.decode_iceberg_dv),
                         ("delta-dv", hr.decode_delta_dv)):
            e = self.s.req("GET", f"/v1/tables/dv/files/{f2['id']}/dv?snapshot=3&format={fmt}")
            self.assertEqual((e.status, e.header("Strike-Cardinality")), (200, "0"), fmt)
            self.assertEqual(dec(e.body), [])
        # the first file before its deletes; the second file did not exist at seq 1
        old = self.s.req("GET", f"/v1/tables/dv/files/{f1['id']}/dv?snapshot=1")
        self.assertEqual((old.status, hr.decode_roaring64(old.body)), (200, []))
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/dv/files/{f2['id']}/dv?snapshot=1"), 404, "not live")
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/dv/files/{f1['id']}/dv?snapshot=42"), 404, "snapshot 42")
        u.assert_problem(self, self.s.req("GET", url + "&format=roaring32"), 400, "format")
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/dv/files/{f1['id']}/dv?snapshot=-1"), 400, "snapshot")
        u.assert_problem(self, self.s.req("GET", f"/v1/tables/dv/files/{f1['id']}/dv?snapshot=x"), 400, "snapshot")
        u.assert_problem(self, self.s.req("GET", url + "&fmt=1"), 400, 'unknown query parameter "fmt"')
        u.assert_problem(self, self.s.req("GET", "/v1/tables/dv/files/424242/dv?snapshot=3"), 404)
        m = self.s.req("GET", "/metrics").body.decode()
        hits = int(re.search(r'strike_http_dv_requests_total\{path="cache"\} (\d+)', m).group(1))
        self.assertGreater(hits, 0, "repeated DV requests are answered from the cache")

    def test_dv_cache_across_table_cache_expiry_and_drop(self):
        plan = self.setup_files("dvc")
        url = plan["files"][0]["dv"]["url"]

        def metric(conn, path):
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            return int(re.search(r'strike_http_dv_requests_total\{path="%s"\} (\d+)' % path, text).group(1))

        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.s.http_port, timeout=30)  # one event thread
        for _ in range(2):
            conn.request("GET", url)
            r = conn.getresponse()
            self.assertEqual((r.status, hr.decode_roaring64(r.read())), (200, [3, 4, 5, 50, 99]))
        workers = metric(conn, "worker")
        time.sleep(1.3)  # past the engine's ~1 s table-definition cache
        for _ in range(3):
            conn.request("GET", url)
            r = conn.getresponse()
            self.assertEqual((r.status, hr.decode_roaring64(r.read())), (200, [3, 4, 5, 50, 99]))
        self.assertEqual(metric(conn, "worker"), workers, "still answered from the event thread's cache")
        # a dropped table's DVs are gone at once, cache or not
        self.assertEqual(self.s.req("DELETE", "/v1/tables/dvc").status, 204)
        conn.request("GET", url)
        r = conn.getresponse()
        self.assertEqual(r.status, 404, r.read())
        r.read()
        conn.close()


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
