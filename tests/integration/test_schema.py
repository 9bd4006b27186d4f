"""Schema evolution over HTTP (docs/API.md "Schema changes", issue 30) against the real striked.

POST /v1/tables/{t}/schema: each operation (add, add with a default, drop, rename, widen,
optional), its answer (the table exactly as GET shows it, with schema_id), each refusal (400 or
409 naming the column, nothing changed: schema_id and seq as before), a stale
expected_schema_id while writers commit (409, nothing half-applied), a change that commits
between data commits (one snapshot of operation "schema", ordered by seq), old files read after
add/widen/rename/drop, time travel at an old seq (its own schema), compaction after an add, the
Idempotency-Key, and /changes still refusing unknown columns.
"""
import threading
import unittest

import harness as h
import http_util as u

TABLE = {
    "name": "evo",
    "columns": [{"name": "id", "type": "long", "required": True},
                {"name": "n", "type": "int"},
                {"name": "s", "type": "string"},
                {"name": "gone", "type": "string"},
                {"name": "ver", "type": "long"}],
    "primary_key": ["id"],
    "version_column": "ver",
}


class Schema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = h.create_db("strike_schema")
        cls.s = h.Striked(catalog=cls.db)

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def create(self, name, **over):
        d = dict(TABLE)
        d["name"] = name
        d.update(over)
        r = self.s.req("POST", "/v1/tables", d)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["schema_id"], 0)
        return r.json()

    def get(self, name):
        r = self.s.req("GET", f"/v1/tables/{name}")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def alter(self, name, changes, expected=None, headers=None):
        body = {"changes": changes}
        if expected is not None:
            body["expected_schema_id"] = expected
        return self.s.req("POST", f"/v1/tables/{name}/schema", body, headers)

    def snapshots(self, name):
        out, after = [], None
        while True:
            q = f"?after={after}" if after is not None else ""
            r = self.s.req("GET", f"/v1/tables/{name}/snapshots{q}")
            self.assertEqual(r.status, 200, r)
            out += r.json()["snapshots"]
            after = r.json()["next"]
            if after is None:
                return out

    def rows(self, name, body=None):
        return {r["id"]: r for r in u.scan_rows(self, self.s, name, body)}

    def test_operations_and_reads(self):
        self.create("ops")
        u.ok_changes(self, self.s, "ops", [
            {"op": "upsert", "row": {"id": 1, "n": 10, "s": "one", "gone": "g1", "ver": 1}},
            {"op": "upsert", "row": {"id": 2, "n": -20, "s": "two", "ver": 1}}])
        before = self.get("ops")
        seq0 = before["seq"]
        r = self.alter("ops", [
            {"add": {"name": "phone", "type": "string"}},
            {"add": {"name": "score", "type": "long", "required": True, "default": 7}},
            {"add": {"name": "tag", "type": "string", "required": True, "default": "none"}},
            {"widen": {"column": "n", "type": "long"}},
            {"rename": {"from": "s", "to": "label"}},
            {"drop": "gone"},
            {"optional": "score"},
        ], expected=0)
        self.assertEqual(r.status, 200, r)
        after = r.json()
        self.assertEqual(after, self.get("ops"))  # exactly as GET shows it
        self.assertEqual(after["schema_id"], 1)
        self.assertEqual(after["seq"], seq0 + 1)
        self.assertEqual([c["name"] for c in after["columns"]],
                         ["id", "n", "label", "ver", "phone", "score", "tag"])
        self.assertEqual(after["columns"][1]["type"], "long")
        self.assertFalse(after["columns"][5]["required"])
        self.assertTrue(after["columns"][6]["required"])
        snaps = self.snapshots("ops")
        self.assertEqual(snaps[-1]["seq"], seq0 + 1)
        self.assertEqual(snaps[-1]["operation"], "schema")

        # new rows at the new schema; a required column left out takes its default
        u.ok_changes(self, self.s, "ops", [
            {"op": "upsert", "row": {"id": 3, "n": 5000000000, "label": "three", "ver": 1,
                                     "phone": "p3", "score": 33, "tag": "t3"}},
            {"op": "upsert", "row": {"id": 4, "label": "four", "ver": 1}}])
        rows = self.rows("ops")
        self.assertEqual(rows[1], {"id": 1, "n": 10, "label": "one", "ver": 1, "phone": None,
                                   "score": 7, "tag": "none"})
        self.assertEqual(rows[2]["n"], -20)
        self.assertEqual(rows[3]["n"], 5000000000)
        self.assertEqual(rows[4], {"id": 4, "n": None, "label": "four", "ver": 1, "phone": None,
                                   "score": None, "tag": "none"})
        # filters on columns the old file lacks, on a widened one, on a renamed one
        f = {"filter": {"type": "is-null", "term": "phone"}}
        self.assertEqual(sorted(self.rows("ops", f)), [1, 2, 4])
        f = {"filter": {"type": "gt", "term": "n", "value": 4294967296}}
        self.assertEqual(sorted(self.rows("ops", f)), [3])
        f = {"filter": {"type": "eq", "term": "label", "value": "two"}}
        self.assertEqual(sorted(self.rows("ops", f)), [2])
        f = {"filter": {"type": "eq", "term": "gone", "value": "g1"}}
        u.assert_problem(self, u.scan(self.s, "ops", f), 400, "gone")
        # time travel: the old seq reads at its own schema
        old = self.rows("ops", {"snapshot": seq0})
        self.assertEqual(old[1], {"id": 1, "n": 10, "s": "one", "gone": "g1", "ver": 1})
        self.assertEqual(sorted(old), [1, 2])
        f = {"snapshot": seq0, "filter": {"type": "eq", "term": "gone", "value": "g1"}}
        self.assertEqual(sorted(self.rows("ops", f)), [1])
        r = self.s.req("POST", "/v1/tables/ops/plan", f)
        self.assertEqual(r.status, 200, r)
        # compaction after the add: the same rows, one file at the current schema
        r = self.s.req("POST", "/v1/tables/ops/compact", {"min_deleted_fraction": 0})
        self.assertEqual(r.status, 200, r)
        self.assertGreaterEqual(r.json()["rewritten_files"], 1)
        self.assertEqual(self.rows("ops"), rows)
        # the Iceberg export goes on past a schema change (its schema list is the CDC branch's)
        r = self.s.req("GET", "/iceberg/v1/namespaces/default/tables/ops")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["metadata"]["last-sequence-number"] >= after["seq"], True)
        # /changes keeps refusing unknown columns, and the dropped one
        u.assert_problem(self, u.changes(self.s, "ops", [
            {"op": "upsert", "row": {"id": 9, "gone": "x"}}]), 400, "gone")
        u.assert_problem(self, u.changes(self.s, "ops", [
            {"op": "upsert", "row": {"id": 9, "s": "x"}}]), 400, "\"s\"")

    def test_refusals_change_nothing(self):
        self.create("refuse")
        u.ok_changes(self, self.s, "refuse", [{"op": "upsert", "row": {"id": 1, "n": 1}}])
        t0 = self.get("refuse")
        cases = [
            ([{"drop": "id"}], 400, "\"id\""),
            ([{"drop": "ver"}], 400, "\"ver\""),
            ([{"drop": "nope"}], 400, "\"nope\""),
            ([{"widen": {"column": "id", "type": "string"}}], 400, "\"id\""),
            ([{"widen": {"column": "n", "type": "string"}}], 400, "\"n\""),
            ([{"widen": {"column": "s", "type": "int"}}], 400, "\"s\""),
            ([{"widen": {"column": "n", "type": "decimal"}}], 400, "decimal"),
            ([{"optional": "id"}], 400, "\"id\""),
            ([{"rename": {"from": "n", "to": "s"}}], 400, "\"s\""),
            ([{"rename": {"from": "n", "to": "no spaces"}}], 400, "no spaces"),
            ([{"rename": {"from": "n"}}], 400, "to"),
            ([{"add": {"name": "s", "type": "long"}}], 400, "\"s\""),
            ([{"add": {"name": "r", "type": "long", "required": True}}], 400, "\"r\""),
            ([{"add": {"name": "r", "type": "int", "default": "x"}}], 400, "\"r\""),
            ([{"add": {"name": "r", "type": "int", "default": 4294967296}}], 400, "\"r\""),
            ([{"add": {"name": "r", "type": "int", "default": [1]}}], 400, "default"),
            ([{"add": {"name": "x" * 129, "type": "int"}}], 400, "valid column name"),
            ([{"add": {"name": "r", "type": "int", "primary": True}}], 400, "primary"),
            ([{"drop": "n", "optional": "s"}], 400, "one member"),
            ([{"retype": "n"}], 400, "retype"),
            ([], 400, "changes"),
            ([{"add": {"name": f"c{i}", "type": "int"}} for i in range(257)], 400, "changes"),
        ]
        for chs, status, needle in cases:
            # each after a valid change in the same request: all or nothing
            whole = chs if len(chs) in (0, 257) else [{"add": {"name": "fine", "type": "long"}}] + chs
            r = self.alter("refuse", whole)
            u.assert_problem(self, r, status, needle)
            self.assertEqual(self.get("refuse"), t0, chs)
        for body, needle in [({"changes": [{"drop": "n"}], "extra": 1}, "extra"),
                             ({"changes": {"drop": "n"}}, "changes"),
                             ({"changes": [{"drop": "n"}], "expected_schema_id": -1}, "expected_schema_id"),
                             ({"changes": [{"drop": "n"}], "expected_schema_id": "0"}, "expected_schema_id"),
                             ({}, "changes")]:
            u.assert_problem(self, self.s.req("POST", "/v1/tables/refuse/schema", body), 400, needle)
            self.assertEqual(self.get("refuse"), t0)
        u.assert_problem(self, self.alter("nosuch", [{"drop": "n"}]), 404)
        # a stale expected_schema_id: 409, nothing changed
        self.assertEqual(self.alter("refuse", [{"add": {"name": "y", "type": "long"}}], expected=0).status, 200)
        t1 = self.get("refuse")
        u.assert_problem(self, self.alter("refuse", [{"add": {"name": "z", "type": "long"}}], expected=0),
                         409, "schema 1")
        self.assertEqual(self.get("refuse"), t1)

    def test_stale_schema_id_with_concurrent_writers(self):
        self.create("race")
        stop = threading.Event()
        failures, counts = [], [0]

        def writer(w):
            i = 0
            while not stop.is_set():
                i += 1
                k = w * 1000000 + i
                r = u.changes(self.s, "race", [{"op": "upsert", "row": {"id": k, "n": i}}])
                if r.status != 200:
                    failures.append(r)
                    return
                counts[0] += 1

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        def wait_for(n):
            while counts[0] < n and not failures:
                stop.wait(0.01)

        try:
            wait_for(20)
            # a valid change while the writers commit: ordered between their commits
            r = self.alter("race", [{"add": {"name": "extra", "type": "string",
                                             "required": True, "default": "d"}}], expected=0)
            self.assertEqual(r.status, 200, r)
            at = r.json()["seq"]
            # and a stale one: 409, nothing of it applied
            for _ in range(5):
                r = self.alter("race", [{"drop": "s"}, {"add": {"name": "half", "type": "int"}}],
                               expected=0)
                u.assert_problem(self, r, 409, "expected_schema_id")
            wait_for(counts[0] + 20)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(failures, [])
        self.assertGreater(counts[0], 0)
        t = self.get("race")
        self.assertEqual(t["schema_id"], 1)
        self.assertEqual([c["name"] for c in t["columns"]], ["id", "n", "s", "gone", "ver", "extra"])
        snaps = self.snapshots("race")
        self.assertEqual([s["operation"] for s in snaps].count("schema"), 1)
        self.assertEqual([s["seq"] for s in snaps if s["operation"] == "schema"], [at])
        rows = self.rows("race")
        self.assertEqual(len(rows), counts[0])
        self.assertTrue(any(s["seq"] < at and s["operation"] != "schema" for s in snaps))
        self.assertTrue(any(s["seq"] > at for s in snaps))
        for r in rows.values():  # written before or after the change: the default either way
            self.assertEqual(r["extra"], "d")
        # the snapshot before the change reads without the column
        before = u.scan_rows(self, self.s, "race", {"snapshot": at - 1})
        self.assertTrue(all("extra" not in r for r in before))

    def test_idempotency_key(self):
        self.create("idem")
        hd = {"Idempotency-Key": "schema-1"}
        ch = [{"add": {"name": "a", "type": "boolean", "default": True}}]
        r1 = self.alter("idem", ch, headers=hd)
        self.assertEqual(r1.status, 200, r1)
        r2 = self.alter("idem", ch, headers=hd)
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(r2.header("Idempotent-Replayed"), "true")
        self.assertEqual(r2.json()["schema_id"], r1.json()["schema_id"])
        self.assertEqual(self.get("idem")["schema_id"], 1)
        u.assert_problem(self, self.alter("idem", [{"drop": "n"}], headers=hd), 422)

    def test_changes_evolve(self):
        self.create("ev")
        row = {"id": 1, "n": 1, "city": "Oslo", "score": 2.5, "vip": True, "visits": 3, "none": None}
        u.assert_problem(self, u.changes(self.s, "ev", [{"op": "upsert", "row": row}]), 400, "city")
        self.assertEqual(self.get("ev")["schema_id"], 0)
        u.assert_problem(self, u.changes(self.s, "ev", [{"op": "upsert", "row": row}], evolve=1), 400,
                         "evolve")
        # an all-null column tells no type: not added, and the request refused as before
        u.assert_problem(self, u.changes(self.s, "ev", [{"op": "upsert", "row": row}], evolve=True),
                         400, "none")
        t = self.get("ev")
        self.assertEqual(t["schema_id"], 1)  # the columns were added first, by a change of their own
        del row["none"]
        r = u.ok_changes(self, self.s, "ev", [{"op": "upsert", "row": row},
                                             {"op": "c", "after": {"id": 2, "extra": "x"}}], evolve=True)
        t = self.get("ev")
        self.assertEqual(t["schema_id"], 2)
        types = {c["name"]: (c["type"], c["required"]) for c in t["columns"]}
        self.assertEqual(types["city"], ("string", False))
        self.assertEqual(types["score"], ("double", False))
        self.assertEqual(types["vip"], ("boolean", False))
        self.assertEqual(types["visits"], ("long", False))
        self.assertEqual(types["extra"], ("string", False))
        rows = self.rows("ev")
        self.assertEqual(rows[1]["city"], "Oslo")
        self.assertEqual(rows[2]["extra"], "x")
        self.assertIsNone(rows[1]["extra"])
        # a request that needs nothing new changes no schema
        u.ok_changes(self, self.s, "ev", [{"op": "upsert", "row": {"id": 3, "city": "Rome"}}], evolve=True)
        self.assertEqual(self.get("ev")["schema_id"], 2)
        self.assertGreater(r["seq"], 0)


if __name__ == "__main__":
    h.require_env()
    unittest.main()
