"""Compaction while 8 writers delete and upsert on the same files, on 2 servers (issue 14).

Two striked processes share one catalog and one data directory. Eight writer
threads (four per server) each own a disjoint set of keys and post random
upserts and deletes by key, in small batches, each with an Idempotency-Key
(a refused batch is retried with the same key until acknowledged, and each
retry is counted). A compactor thread per server asks for compactions in a
loop with a small target, so that every file it rewrites is also being
written, and a folder thread per server asks for plans in a loop: a plan
folds the delta of every DV row it lists into a new base (docs/DESIGN.md
"Delta DVs and folding"), while the writers append to those deltas. The
second server also runs the background maintenance every second, whose
catch-up moves key rows into the files the compactions wrote while writers
resolve keys through the same remaps (docs/DESIGN.md "Compaction without
rewriting the key index"). At the end:

- the table equals the writers' model: 0 lost deletes, 0 resurrected rows,
  0 lost or stale upserts;
- every compaction answered 200, or 409 because the other server's
  compaction held the table's rewrite lock: none failed because of a write;
- several compactions committed while writes landed on the files they
  rewrote (their snapshots' `carried_deletes` > 0);
- the catch-up moved keys (strike_remap_keys_moved_total > 0);
- every key still deletes exactly its row (through a remap or not);
- `strike fsck` is clean.
"""
import json
import os
import random
import subprocess
import threading
import time
import unittest

import harness as h
import http_util as u

WRITERS = 8
KEYS_PER_WRITER = 400
RUN_S = 20.0
TABLE = {
    "name": "hot",
    "columns": [{"name": "id", "type": "long", "required": True},
                {"name": "v", "type": "long", "required": True}],
    "primary_key": ["id"],
}


class CompactUnderWrites(unittest.TestCase):
    def test_no_write_lost_no_compaction_failed(self):
        url = h.create_db("compact_concurrency")
        a = h.Striked(catalog=url)
        b = h.Striked(data_dir=a.data_dir, catalog=url, extra_args=["--compact-interval", "1"])
        servers = [a, b]
        try:
            self.run_load(url, servers)
        finally:
            b.close()
            a.close()

    def run_load(self, url, servers):
        s0 = servers[0]
        self.assertEqual(s0.req("POST", "/v1/tables", TABLE).status, 201)
        # a first version of every key, in a few files
        n = WRITERS * KEYS_PER_WRITER
        for lo in range(0, n, 800):
            r = u.changes(s0, "hot", [{"op": "upsert", "row": {"id": i, "v": 0}} for i in range(lo, lo + 800)])
            self.assertEqual(r.status, 200, r)
        model = {i: 0 for i in range(n)}
        lock = threading.Lock()
        stop = time.monotonic() + RUN_S
        stats = {"batches": 0, "retries": 0, "compactions": 0, "busy": 0, "compact_failures": [],
                 "plans": 0, "plan_failures": []}

        def writer(w):
            s = servers[w % 2]
            rng = random.Random(w)
            keys = list(range(w * KEYS_PER_WRITER, (w + 1) * KEYS_PER_WRITER))
            mine = {k: 0 for k in keys}
            seq = 0
            while time.monotonic() < stop:
                seq += 1
                chs, after = [], dict()
                for k in rng.sample(keys, 8):
                    if rng.random() < 0.4:
                        chs.append({"op": "delete", "key": {"id": k}})
                        after[k] = None
                    else:
                        chs.append({"op": "upsert", "row": {"id": k, "v": seq}})
                        after[k] = seq
                hdr = {"Idempotency-Key": f"w{w}-{seq}"}
                while True:
                    r = u.changes(s, "hot", chs, headers=hdr)
                    if r.status == 200:
                        break
                    self.assertIn(r.status, (409, 503), r)
                    with lock:
                        stats["retries"] += 1
                    time.sleep(0.01)
                mine.update(after)
                with lock:
                    stats["batches"] += 1
            with lock:
                model.update(mine)

        def compactor(c):
            s = servers[c]
            while time.monotonic() < stop:
                r = s.req("POST", "/v1/tables/hot/compact",
                          {"min_deleted_fraction": 0.02, "target_file_rows": 700}, timeout=120)
                with lock:
                    if r.status == 200:
                        stats["compactions"] += r.json()["rewritten_files"] > 0
                    elif r.status == 409 and "is running" in r.json().get("detail", ""):
                        stats["busy"] += 1
                    else:
                        stats["compact_failures"].append(r)
                time.sleep(0.05)

        def folder(c):
            s = servers[c]
            while time.monotonic() < stop:
                r = s.req("POST", "/v1/tables/hot/plan", {}, timeout=120)
                with lock:
                    if r.status == 200:
                        stats["plans"] += 1
                    elif r.status not in (409, 503):  # busy: another flush holds a row
                        stats["plan_failures"].append(r)
                time.sleep(0.05)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
        threads += [threading.Thread(target=compactor, args=(c,)) for c in range(2)]
        threads += [threading.Thread(target=folder, args=(c,)) for c in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"compaction under writes: {stats['batches']} batches ({stats['retries']} retries), "
              f"{stats['compactions']} compactions, {stats['busy']} refused while the other ran, "
              f"{stats['plans']} plans (folds)", flush=True)
        self.assertEqual(stats["compact_failures"], [])
        self.assertEqual(stats["plan_failures"], [])
        self.assertGreater(stats["plans"], 10)
        self.assertGreater(stats["compactions"], 2)

        # the table is the model: nothing lost, nothing resurrected
        rows = u.scan_rows(self, s0, "hot")
        got = {x["id"]: x["v"] for x in rows}
        self.assertEqual(len(got), len(rows), "a key appears twice")
        want = {k: v for k, v in model.items() if v is not None}
        lost_deletes = [k for k in got if k not in want]
        resurrected_or_lost = [k for k in want if got.get(k) != want[k]]
        self.assertEqual(lost_deletes, [])
        self.assertEqual(resurrected_or_lost, [])

        # compactions carried writes that landed on the files they rewrote
        snaps, after = [], None
        while True:
            q = "" if after is None else f"?after={after}"
            page = s0.req("GET", f"/v1/tables/hot/snapshots{q}").json()
            snaps += page["snapshots"]
            after = page["next"]
            if after is None:
                break
        summaries = [json.loads(x["summary"]) if isinstance(x["summary"], str) else x["summary"]
                     for x in snaps if x["operation"] == "compact"]
        carried = sum(1 for x in summaries if x.get("carried_deletes", 0) > 0)
        print(f"compactions that carried concurrent deletes: {carried} of {len(summaries)}", flush=True)
        self.assertGreater(carried, 0)

        moved = sum(u.metric(s, "strike_remap_keys_moved_total") for s in servers)
        print(f"key rows moved by the catch-up: {moved:.0f}", flush=True)
        self.assertGreater(moved, 0)

        # every key deletes exactly its row
        r = u.changes(s0, "hot", [{"op": "delete", "key": {"id": k}} for k in range(n)])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["deleted"], len(want))
        self.assertEqual(u.scan_rows(self, s0, "hot"), [])
        p = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "fsck", "--catalog", url, "--data",
                            servers[0].data_dir], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
