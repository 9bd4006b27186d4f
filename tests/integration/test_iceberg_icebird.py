"""npm icebird (0.3.1, a JavaScript Iceberg reader on hyparquet: neither strike's
code nor the tests' own reader) reads an exported strike table end to end
(issue 29): version-hint-less, from a named metadata file in the table's
location, through the manifest list and the Avro manifests to the Parquet data
files, and finds the rows strike's /scan finds at that snapshot.

icebird does not apply deletion vectors (it reads every delete file as Parquet),
so it reads a snapshot before any delete: a metadata file exported (loadTable,
--iceberg-interval 0) when the table had three append snapshots and no delete
file, read after later commits added DVs (the older metadata file stays in the
location). Timestamps are whole milliseconds here: hyparquet turns them into
JavaScript Dates. Every other value is compared exactly (longs beyond 2^53 as
decimal strings, -0.0, 5e-324). icebird reaches files through fetch(), to which
icebird_read.mjs gives the file: scheme (whole files, like a GET without Range).
"""
import json
import os
import subprocess
import unittest

import harness as h
import iceberg_util as iu

HERE = os.path.dirname(os.path.abspath(__file__))
ICEBIRD = os.path.join(HERE, "icebird_read.mjs")
TB = "/iceberg/v1/namespaces/default/tables"


def row(k, v=0):
    r = iu.mkrow(k, v)
    if r["ts"] is not None:
        r["ts"] = (k - 20) * 86_400_000_000 + k * 1_000 + v * 1_000_000  # whole milliseconds
    return r


def icebird(tc, table_uri, metadata_name):
    p = subprocess.run(["node", ICEBIRD, table_uri, metadata_name], capture_output=True, text=True, timeout=300)
    tc.assertEqual(p.returncode, 0, p.stderr)
    print(p.stderr.strip(), flush=True)
    return json.loads(p.stdout)["rows"]


def norm_icebird(rows):
    out = []
    for r in rows:
        vals = []
        for c in iu.COLUMNS:
            v = r.get(c)
            if v is not None and iu.TYPES[c] == "timestamp":
                v = v["ms"] * 1000
            vals.append(iu._value(iu.TYPES[c], v) if iu.TYPES[c] != "timestamp" or v is None else v)
        out.append(vals)
    return sorted(out, key=json.dumps)


class Icebird(unittest.TestCase):
    def test_icebird_reads_a_snapshot_without_dvs(self):
        h.require_env()
        iu.require_peers("icebird", "hyparquet")
        s = h.Striked(catalog=h.create_db("iceberg_icebird"), extra_args=["--iceberg-interval", "0"])
        try:
            r = s.req("POST", "/v1/tables", iu.table_def("bird"))
            self.assertEqual(r.status, 201, r)
            uuid = r.json()["uuid"]
            for lo, hi in ((0, 12), (12, 30), (30, 35)):
                r = s.req("POST", "/v1/tables/bird/changes",
                          {"changes": [{"op": "upsert", "row": row(k)} for k in range(lo, hi)]})
                self.assertEqual(r.status, 200, r)
            seq = r.json()["seq"]
            doc = s.req("GET", f"{TB}/bird").json()
            pre = doc["metadata-location"]
            meta = doc["metadata"]
            self.assertEqual(meta["current-snapshot-id"], seq)
            self.assertEqual([x["summary"]["total-delete-files"] for x in meta["snapshots"]], ["0", "0", "0"])
            self.assertEqual(meta["snapshots"][-1]["summary"]["total-data-files"], "3")
            # later commits: deletes (DVs) and an update, exported to a newer metadata file
            r = s.req("POST", "/v1/tables/bird/changes",
                      {"changes": [{"op": "delete", "key": {"id": 3}}, {"op": "delete", "key": {"id": 14}},
                                   {"op": "upsert", "row": row(20, 1)}]})
            self.assertEqual(r.status, 200, r)
            post = s.req("GET", f"{TB}/bird").json()
            self.assertNotEqual(post["metadata-location"], pre)
            self.assertNotEqual(post["metadata"]["snapshots"][-1]["summary"]["total-delete-files"], "0")
            # icebird on the older metadata file: the rows of /scan at its snapshot
            table_uri = meta["location"]
            self.assertTrue(table_uri.startswith("file:///") and table_uri.endswith(f"/tables/{uuid}"), table_uri)
            name = pre.rsplit("/", 1)[1]
            got = icebird(self, table_uri, name)
            want = iu.norm_scan(iu.scan_at(self, s, "bird", seq))
            self.assertEqual(len(got), 35)
            self.assertEqual(norm_icebird(got), want)
            # (the current snapshot differs: what icebird read is that snapshot, not the table now)
            self.assertNotEqual(iu.norm_scan(iu.scan_at(self, s, "bird", seq + 1)), want)
            s.close_clean()
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
