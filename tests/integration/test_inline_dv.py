"""Small DVs inline in the catalog (issue 19, row 2) through the real striked.

A single-key delete writes no Puffin file (the DV stays in its catalog row);
GET .../dv answers it in every format; a plan then names a Puffin file whose
bytes at offset/length are exactly GET .../dv?format=iceberg-dv, with the same
ETag before and after the flush, and the same bytes and ETags as a striked
with --dv-inline-max 0 that deleted the same positions.
"""
import glob
import os
import unittest

import harness as h
import http_util as u

FORMATS = ("roaring64", "iceberg-dv", "delta-dv")


def puffin_files(data_dir):
    return glob.glob(os.path.join(data_dir, "tables", "*", "dv", "*.puffin"))


class InlineDv(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = h.create_db("strike_inline_dv")
        cls.s = h.Striked(catalog=cls.db)

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def load(self, s, name):
        r = s.req("POST", "/v1/tables", u.table_def(name))
        self.assertEqual(r.status, 201, r)
        u.ok_changes(self, s, name, [{"op": "upsert", "row": {"order_id": i, "user_id": i}} for i in range(200)])
        res = u.ok_changes(self, s, name, [{"op": "delete", "key": {"order_id": 77}}])
        self.assertEqual(res["deleted"], 1)
        t = s.req("GET", f"/v1/tables/{name}").json()
        return t

    def dvs(self, s, name, fid):
        out = {}
        for fmt in FORMATS:
            r = s.req("GET", f"/v1/tables/{name}/files/{fid}/dv?format={fmt}")
            self.assertEqual(r.status, 200, r)
            out[fmt] = (r.body, r.header("ETag"), r.header("Strike-Cardinality"))
        return out

    def test_single_key_delete_then_plan(self):
        t = self.load(self.s, "inl")
        self.assertEqual(puffin_files(self.s.data_dir), [])  # the delete wrote no Puffin file
        self.assertEqual(t["stats"]["inline_dvs"], 1)
        self.assertEqual(t["stats"]["dv_files"], 0)
        health = self.s.req("GET", "/v1/tables/inl/health")
        self.assertEqual(health.status, 200, health)
        self.assertEqual(health.json()["inline_dvs"], 1)
        rows = u.scan_rows(self, self.s, "inl")
        self.assertEqual(len(rows), 199)
        self.assertNotIn(77, [r["order_id"] for r in rows])
        fid = self.s.req("POST", "/v1/tables/inl/plan", {"snapshot": 1}).json()["files"][0]["id"]
        before = self.dvs(self.s, "inl", fid)
        self.assertEqual(before["iceberg-dv"][2], "1")

        plan = self.s.req("POST", "/v1/tables/inl/plan", {})
        self.assertEqual(plan.status, 200, plan)
        f = plan.json()["files"][0]
        self.assertTrue(f["dv"]["path"].endswith(".puffin"), f)
        with open(os.path.join(self.s.data_dir, f["dv"]["path"]), "rb") as fh:
            fh.seek(f["dv"]["offset"])
            stored = fh.read(f["dv"]["length"])
        self.assertEqual(stored, before["iceberg-dv"][0])
        # with curl, by the plan's own URL
        code, out, err = u.curl(f"http://127.0.0.1:{self.s.http_port}{f['dv']['url']}&format=iceberg-dv")
        self.assertEqual((code, out), (0, stored), err)
        self.assertEqual(len(puffin_files(self.s.data_dir)), 1)
        t = self.s.req("GET", "/v1/tables/inl").json()
        self.assertEqual((t["stats"]["inline_dvs"], t["stats"]["dv_files"]), (0, 1))
        # the same bytes and ETags from the Puffin file as from the catalog row
        self.assertEqual(self.dvs(self.s, "inl", fid), before)

        # a striked that never keeps DVs inline answers the same for the same positions
        with h.Striked(catalog=h.create_db("strike_inline_dv_off"), extra_args=["--dv-inline-max", "0"]) as off:
            self.load(off, "inl")
            self.assertEqual(len(puffin_files(off.data_dir)), 1)
            t = off.req("GET", "/v1/tables/inl").json()
            self.assertEqual((t["stats"]["inline_dvs"], t["stats"]["dv_files"]), (0, 1))
            ofid = off.req("POST", "/v1/tables/inl/plan", {}).json()["files"][0]["id"]
            self.assertEqual(self.dvs(off, "inl", ofid), before)

    def test_option_bounds(self):
        for bad in ("2M", "-1", "x"):
            s = h.Striked(catalog=self.db, extra_args=["--dv-inline-max", bad], wait=False)
            try:
                self.assertEqual(s.proc.wait(timeout=60), 2, bad)
                self.assertIn("dv-inline-max", s.logs())
            finally:
                s.close()


if __name__ == "__main__":
    unittest.main()
