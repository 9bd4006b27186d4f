"""The remote-engine flow with a real engine (DuckDB, from scripts/test-peers.sh):

plan over HTTP, fetch each Parquet file (/files/{id}) and its deletion
vector (roaring64, decoded by http_roaring.py, not strike's code), let DuckDB
read the files with file_row_number=true and drop the deleted positions,
and compare with strike's own /scan at the same snapshot: same rows, same
order. At the current snapshot and at older ones, after upserts, key
deletes, Debezium updates and a filter delete spread over several files.

On S3 (http_duckdb_s3) the engine reads as it would there: the plan asks for
presigned URLs, each Parquet file comes straight from the store, and each DV
also as its Puffin blob (a Range GET of the presigned URL, decoded as an
Iceberg deletion-vector-v1 blob), which must hold the positions /dv serves.
"""
import datetime
import json
import os
import random
import subprocess
import unittest
import urllib.request

import harness as h
import http_roaring as hr
import http_util as u

BUILD_DIR = os.environ.get("STRIKE_BUILD_DIR", "")
NODE_MODULES = os.path.join(BUILD_DIR, "peers", "node_modules")
READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "http_duckdb_read.cjs")

COLUMNS = [
    {"name": "id", "type": "long", "required": True},
    {"name": "grp", "type": "int"},
    {"name": "amount", "type": "double"},
    {"name": "flag", "type": "boolean"},
    {"name": "name", "type": "string"},
    {"name": "ts", "type": "timestamp"},
]


def micros(rfc3339):
    if rfc3339 is None:
        return None
    d = datetime.datetime.strptime(rfc3339, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return (d - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(microseconds=1)


def norm_strike(row):
    return (row["id"], row["grp"], row["amount"], row["flag"], row["name"], micros(row["ts"]))


def norm_duck(row):
    i = lambda v: None if v is None else int(v)
    return (i(row["id"]), i(row["grp"]), row["amount"], row["flag"], row["name"], i(row["ts"]))


class RemoteEngine(unittest.TestCase):
    def setUp(self):
        if not os.path.isdir(os.path.join(NODE_MODULES, "@duckdb", "node-api")):
            raise AssertionError(f"DuckDB is not installed in {NODE_MODULES}: run scripts/test-peers.sh BUILD_DIR")
        self.s = h.Striked(catalog=h.create_db("strike_http_duckdb"))
        self.work = h.tmpdir("strike-duck-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.work])
        self.s.close_clean()

    def row(self, rnd, k):
        return {"id": k, "grp": rnd.randrange(-5, 5), "amount": rnd.choice([None, rnd.uniform(-1e6, 1e6), 0.1, 1e-300]),
                "flag": rnd.choice([True, False, None]), "name": rnd.choice([None, "", "a'b", "é\"\\", f"n{k}"]),
                "ts": rnd.choice([None, rnd.randrange(0, 2 ** 41), "2026-11-29T13:40:45.123456Z"])}

    def remote_read(self, snapshot):
        """Plan at `snapshot`, fetch files and DVs over HTTP, read with DuckDB."""
        on_s3 = self.s.data_dir.startswith("s3://")
        req = {"snapshot": snapshot}
        if on_s3:
            req.update(presign=True, expires_in=600)
        r = self.s.req("POST", "/v1/tables/remote/plan", req)
        self.assertEqual(r.status, 200, r)
        plan = r.json()
        self.assertEqual(plan["seq"], snapshot)
        files = []
        for f in plan["files"]:
            path = os.path.join(self.work, f"file-{f['id']}.parquet")
            if not os.path.exists(path):
                if on_s3:  # from the store, not through striked
                    with urllib.request.urlopen(f["presigned_url"], timeout=60) as g:
                        data = g.read()
                else:
                    body = self.s.req("GET", f["url"])
                    self.assertEqual(body.status, 200, body)
                    data = body.body
                self.assertEqual(len(data), f["file_size"])
                with open(path, "wb") as fh:
                    fh.write(data)
            deleted = []
            if f["dv"] is not None:
                dv = self.s.req("GET", f["dv"]["url"])
                self.assertEqual(dv.status, 200, dv)
                deleted = hr.decode_roaring64(dv.body)
                self.assertEqual(len(deleted), f["deleted_count"])
                self.assertEqual(dv.header("Strike-Cardinality"), str(f["deleted_count"]))
                if on_s3:  # the Puffin blob the plan names, from the store
                    d = f["dv"]
                    rq = urllib.request.Request(d["presigned_url"], headers={
                        "Range": f"bytes={d['offset']}-{d['offset'] + d['length'] - 1}"})
                    with urllib.request.urlopen(rq, timeout=60) as g:
                        self.assertEqual(g.status, 206)
                        self.assertEqual(hr.decode_iceberg_dv(g.read()), deleted)
            else:
                self.assertEqual(f["deleted_count"], 0)
            self.assertTrue(all(0 <= p < f["record_count"] for p in deleted))
            files.append({"path": path, "deleted": deleted})
        spec = os.path.join(self.work, f"spec-{snapshot}.json")
        with open(spec, "w") as fh:
            json.dump({"columns": COLUMNS, "files": files}, fh)
        p = subprocess.run(["node", READER, spec], capture_output=True, timeout=300,
                           env=dict(os.environ, NODE_PATH=NODE_MODULES))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return [norm_duck(x) for x in json.loads(p.stdout)], plan

    def test_duckdb_reads_what_strike_scans(self):
        r = self.s.req("POST", "/v1/tables", {"name": "remote", "columns": COLUMNS, "primary_key": ["id"]})
        self.assertEqual(r.status, 201, r)
        rnd = random.Random(7)
        u.ok_changes(self, self.s, "remote", [{"op": "upsert", "row": self.row(rnd, k)} for k in range(3000)])
        u.ok_changes(self, self.s, "remote",
                     [{"op": "upsert", "row": self.row(rnd, k)} for k in rnd.sample(range(3000), 400)] +
                     [{"op": "upsert", "row": self.row(rnd, k)} for k in range(3000, 4000)])
        u.ok_changes(self, self.s, "remote",
                     [{"op": "delete", "key": {"id": k}} for k in rnd.sample(range(4000), 300)] +
                     [{"op": "u", "before": {"id": k}, "after": self.row(rnd, k)} for k in rnd.sample(range(4000), 50)] +
                     [{"op": "d", "before": {"id": k}} for k in rnd.sample(range(4000), 50)])
        r = self.s.req("POST", "/v1/tables/remote/delete", {"filter": {"type": "eq", "term": "grp", "value": 3}})
        self.assertEqual(r.status, 200, r)
        self.assertGreater(r.json()["deleted"], 0)
        current = r.json()["seq"]
        self.assertEqual(current, 4)
        for snap in (1, 2, 3, 4):
            duck, plan = self.remote_read(snap)
            scan = u.scan(self.s, "remote", {"snapshot": snap})
            self.assertEqual((scan.status, scan.header("Strike-Snapshot")), (200, str(snap)))
            mine = [norm_strike(x) for x in scan.ndjson()]
            self.assertEqual(len(duck), len(mine), f"snapshot {snap}")
            self.assertEqual(duck, mine, f"snapshot {snap}")
            live = sum(f["record_count"] - f["deleted_count"] for f in plan["files"])
            self.assertEqual(live, len(mine))
            if snap >= 3:
                self.assertTrue(any(f["dv"] for f in plan["files"]), "later snapshots have deletes")
        ids = [x[0] for x in mine]
        self.assertEqual(len(ids), len(set(ids)), "one live row per key")


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
