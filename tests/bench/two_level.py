#!/usr/bin/env python3
"""two_level.py - what a two-level key index would buy at scale, measured in SQL before it is built
(issue 32; docs/SCALE.md "A two-level key index, measured").

    tests/bench/two_level.py BUILD_DIR [--keys N] [--cap-mb M] [--rounds R] [--batches B]
                             [--batch N]

One durable PostgreSQL 15 (tests/lib/pgfixture.sh, PGFIXTURE_DURABLE=1, shared_buffers 256MB as the
embedded default) holds three tables of --keys rows each, loaded by generate_series and then
VACUUM ANALYZEd and checkpointed:
  - `one`: today's key index (strike.key_index_i8's columns, fillfactor 80, primary key
    (table_id, key)); a batch runs the commit path's key statements on it: the lookup of every
    key (one LATERAL probe per key, in key order, returning the row's ctid), the update of the
    found rows at their ctids (a TID scan each, in ctid order), the insert of the new keys;
  - `big` + `recent`: the two levels. `big` holds the same rows under a covering primary key
    (table_id, key) INCLUDE (file_id, pos, seq, version), never updated in place, so that its
    probes answer index-only from all-visible pages; `recent` (empty at first) takes every write.
    A batch probes `recent` and, for the keys it does not hold, `big` (a LATERAL probe each), then
    upserts every key of the batch into `recent`;
  - `peer`: PostgreSQL's own upsert of the same shape of rows as `make bench-scale` (bench_engine
    pgingest: INSERT ... SELECT unnest(...) ON CONFLICT (id) DO UPDATE), the issue's peer.
Each round runs --batches batches of --batch keys, half updates of distinct random existing keys
and half new keys, on each side in alternating order. Each batch is one transaction, committed
durably. With --cap-mb, PostgreSQL's processes run in a memory cgroup (v1) of that size after the
load and the page cache is dropped: the key index no longer fits the cache, as at 100M keys on a
machine whose cache is shared with the peer's table, and the reads come from the disk.

After the rounds, the merge that the two-level design needs is timed: `big` rebuilt with
`recent` folded in, in key order (CREATE TABLE AS, the covering key built after, VACUUM to set
the visibility map), and its cost per ingested row derived for a merge policy (a partition is
rebuilt when its recent rows reach 5% or 10% of it).

Prints one markdown table: rows/s, WAL bytes and full-page images per batch, blocks read from
outside shared_buffers and disk KiB read per ingested row, for each side. Nothing is asserted
about speed; the experiment checks its own work (every update must find its key, every key of a
round must be found in the two levels afterwards).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (run, PSQL, log, the peer's loader, the disk's reads, the cache, run_to_the_end)

CGROUP = "/sys/fs/cgroup/memory/strike-two-level"


class Experiment:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.work = tempfile.mkdtemp(prefix="strike-two-level-")
        os.chmod(self.work, 0o755)
        self.pg = os.path.join(self.work, "pg")
        self.db = f"postgresql://postgres@/lsm?host={self.pg}"
        self.started = False
        self.rng = random.Random(32)
        self.live = a.keys  # keys 0..live-1 exist
        self.next_new = 10**12
        self.written = []  # keys written by the rounds, checked at the end
        self.res = {"args": vars(a), "rounds": []}

    def psql(self, sql, db="lsm"):
        return scale.run([scale.PSQL, "-h", self.pg, "-U", "postgres", "-d", db, "-qAtX",
                          "-v", "ON_ERROR_STOP=1", "-c", sql])

    def psql_file(self, text):
        path = os.path.join(self.work, "batch.sql")
        with open(path, "w") as f:
            f.write(text)
        return scale.run([scale.PSQL, "-h", self.pg, "-U", "postgres", "-d", "lsm", "-qAtX",
                          "-v", "ON_ERROR_STOP=1", "-f", path])

    def start(self):
        env = dict(os.environ, PGFIXTURE_DURABLE="1",
                   PGFIXTURE_CONF="shared_buffers = 256MB\nmax_wal_size = 4GB\ncheckpoint_timeout = 15min")
        scale.run([os.path.join(scale.SRC, "tests/lib/pgfixture.sh"), "start", self.pg], env=env)
        self.started = True
        self.psql("CREATE DATABASE lsm", db="postgres")

    def stop(self):
        if self.started:
            scale.run([os.path.join(scale.SRC, "tests/lib/pgfixture.sh"), "stop", self.pg])
            self.started = False
        if os.path.isdir(CGROUP):
            try:
                os.rmdir(CGROUP)
            except OSError:
                pass
        shutil.rmtree(self.work, ignore_errors=True)

    def load(self):
        n, t = self.a.keys, time.monotonic()
        cols = ("table_id bigint NOT NULL, key bigint NOT NULL, file_id bigint NOT NULL, pos bigint NOT NULL, "
                "seq bigint NOT NULL, version bytea")
        rows = f"SELECT 1, g, 1 + g / 1000000, g % 1000000, 1, NULL::bytea FROM generate_series(0, {n - 1}) g"
        scale.log(f"loading one, big, peer: {n:,} rows each")
        self.psql(f"CREATE TABLE one ({cols}) WITH (fillfactor = 80); INSERT INTO one {rows}; "
                  "ALTER TABLE one ADD PRIMARY KEY (table_id, key)")
        self.psql(f"CREATE TABLE big ({cols}); INSERT INTO big {rows}; "
                  "ALTER TABLE big ADD PRIMARY KEY (table_id, key) INCLUDE (file_id, pos, seq, version)")
        self.psql(f"CREATE TABLE recent ({cols}, deleted boolean NOT NULL DEFAULT false, "
                  "PRIMARY KEY (table_id, key))")
        scale.load_peer(lambda sql: self.psql(sql), "peer", n)
        self.psql("VACUUM ANALYZE")
        self.psql("CHECKPOINT", db="postgres")
        q = lambda sql: int(self.psql(sql).strip())
        self.res["sizes"] = {x: q(f"SELECT pg_total_relation_size('{x}')") for x in ("one", "big", "peer")}
        self.res["sizes"]["big_index"] = q("SELECT pg_relation_size('big_pkey')")
        self.res["load_s"] = time.monotonic() - t
        scale.log(f"  {self.res['load_s']:.0f} s; sizes (MiB): "
                  + ", ".join(f"{k} {v / 2**20:,.0f}" for k, v in self.res["sizes"].items()))
        plan = self.psql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT file_id, pos FROM big "
                         f"WHERE table_id = 1 AND key = {n // 3}")
        if "Index Only Scan" not in plan or "Heap Fetches: 0" not in plan:
            raise RuntimeError(f"the big level's probe is not index-only from all-visible pages:\n{plan}")

    def cap(self):
        """Run PostgreSQL's processes in a memory cgroup of --cap-mb, and empty the page cache."""
        os.makedirs(CGROUP, exist_ok=True)
        with open(os.path.join(CGROUP, "memory.limit_in_bytes"), "w") as f:
            f.write(str(self.a.cap_mb * 2**20))
        with open(os.path.join(self.pg, "data", "postmaster.pid")) as f:
            pm = int(f.readline())
        pids = [pm] + [int(p) for p in scale.run(["pgrep", "-P", pm]).split()]
        for p in pids:
            with open(os.path.join(CGROUP, "cgroup.procs"), "w") as f:
                f.write(str(p))
        if not scale.drop_page_cache():
            raise RuntimeError("could not drop the page cache (--cap-mb needs root)")
        scale.log(f"PostgreSQL ({len(pids)} processes) capped at {self.a.cap_mb} MiB, page cache dropped")

    def stats(self):
        r = self.psql("SELECT w.wal_bytes, w.wal_fpi, d.blks_read FROM pg_stat_wal w, pg_stat_database d "
                      "WHERE d.datname = 'lsm'").strip().split("|")
        return {"wal": int(float(r[0])), "fpi": int(r[1]), "blks_read": int(r[2]), "disk": scale.disk_read_sectors()}

    def keys_of_batch(self):
        half = self.a.batch // 2
        upd = self.rng.sample(range(self.live), half)
        new = list(range(self.next_new, self.next_new + half))
        self.next_new += half
        return upd, new

    def strike_side(self, side, batches):
        """The batches of one side as one psql script; each batch one transaction."""
        out = ["SET enable_hashjoin = off; SET enable_mergejoin = off; SET jit = off;"]
        for seq, (upd, new) in batches:
            keys = "'{" + ",".join(map(str, sorted(upd + new))) + "}'::bigint[]"
            ins = "'{" + ",".join(map(str, new)) + "}'::bigint[]"
            f = 1000 + seq
            if side == "one":
                out.append(
                    "BEGIN;"
                    f"WITH k AS MATERIALIZED (SELECT u.key, x.file_id, x.pos, x.version, x.ctid FROM (SELECT s.key "
                    f"FROM unnest({keys}) AS s(key) ORDER BY 1) AS u(key) CROSS JOIN LATERAL (SELECT i.file_id, "
                    "i.pos, i.version, i.ctid FROM one i WHERE i.table_id = 1 AND i.key = u.key LIMIT 1) x), "
                    f"w AS (UPDATE one i SET file_id = {f}, pos = u.rn, seq = {seq}, version = NULL FROM (SELECT "
                    "k.ctid AS c, k.key, row_number() OVER () AS rn FROM k ORDER BY k.ctid) u WHERE i.ctid = u.c "
                    "AND i.table_id = 1 AND i.key = u.key RETURNING 1) SELECT 'found', count(*) FROM w;"
                    f"INSERT INTO one SELECT 1, k, {f}, 5000 + row_number() OVER (), {seq}, NULL FROM "
                    f"unnest({ins}) AS u(k) ORDER BY k;"
                    "COMMIT;")
            else:
                out.append(
                    "BEGIN;"
                    f"WITH u AS (SELECT s.key FROM unnest({keys}) AS s(key) ORDER BY 1), k AS MATERIALIZED (SELECT "
                    "u.key, coalesce(r.file_id, b.file_id) AS old_file, coalesce(r.pos, b.pos) AS old_pos FROM u "
                    "LEFT JOIN LATERAL (SELECT r.file_id, r.pos FROM recent r WHERE r.table_id = 1 AND r.key = "
                    "u.key AND NOT r.deleted LIMIT 1) r ON true LEFT JOIN LATERAL (SELECT b.file_id, b.pos FROM "
                    "big b WHERE r.file_id IS NULL AND b.table_id = 1 AND b.key = u.key LIMIT 1) b ON true), "
                    "w AS (INSERT INTO recent (table_id, key, file_id, pos, seq, version) SELECT 1, k.key, "
                    f"{f}, row_number() OVER (ORDER BY k.key), {seq}, NULL FROM k ORDER BY k.key ON CONFLICT "
                    "(table_id, key) DO UPDATE SET file_id = excluded.file_id, pos = excluded.pos, seq = "
                    "excluded.seq, version = excluded.version, deleted = false RETURNING 1) "
                    "SELECT 'found', count(*) FILTER (WHERE k.old_file IS NOT NULL), (SELECT count(*) FROM w) FROM k;"
                    "COMMIT;")
        return "\n".join(out) + "\n"

    def prefetch(self, keys):
        """Probe the keys on --prefetch concurrent connections (one psql each), untimed apart."""
        k, procs = self.a.prefetch, []
        chunk = (len(keys) + k - 1) // k
        for j in range(k):
            part = keys[j * chunk:(j + 1) * chunk]
            path = os.path.join(self.work, f"pre{j}.sql")
            with open(path, "w") as f:
                f.write("SET jit = off; SELECT count(x.pos) FROM unnest('{" + ",".join(map(str, part)) +
                        "}'::bigint[]) AS u(key) CROSS JOIN LATERAL (SELECT i.pos FROM one i WHERE i.table_id = 1 "
                        "AND i.key = u.key LIMIT 1) x;\n")
            procs.append(subprocess.Popen([scale.PSQL, "-h", self.pg, "-U", "postgres", "-d", "lsm", "-qAtX",
                                           "-v", "ON_ERROR_STOP=1", "-f", path], stdout=subprocess.DEVNULL))
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError("a prefetch failed")

    def run_side(self, side, batches, key_offset):
        a = self.a
        s0, t0 = self.stats(), time.monotonic()
        if side == "prefetch":
            lines = []
            for b in batches:
                self.prefetch(sorted(b[1][0] + b[1][1]))
                lines += [ln for ln in self.psql_file(self.strike_side("one", [b])).splitlines()
                          if ln.startswith("found|")]
            assert len(lines) == a.batches and all(int(ln.split("|")[1]) == a.batch // 2 for ln in lines), lines
        elif side == "peer":
            x = json.loads(scale.run([os.path.join(self.build, "bin", "bench_engine"), "--pg", self.db, "pgingest",
                                      "--pgtable", "peer", "--rows", a.keys, "--rounds", a.batches, "--batch",
                                      a.batch, "--key-offset", key_offset, "--new-base",
                                      2 * 10**12 + key_offset]).strip().splitlines()[-1])
            assert x["rows"] == a.batches * a.batch, x
        else:
            lines = [ln for ln in self.psql_file(self.strike_side(side, batches)).splitlines()
                     if ln.startswith("found|")]
            want = a.batch // 2
            assert len(lines) == a.batches, lines
            for ln in lines:  # every update found its key (and the two levels wrote every key)
                f = ln.split("|")
                assert int(f[1]) == want and (side == "one" or int(f[2]) == a.batch), (side, ln)
        dt, s1 = time.monotonic() - t0, self.stats()
        rows = a.batches * a.batch
        r = {"rows_per_s": rows / dt, "wal_per_row": (s1["wal"] - s0["wal"]) / rows,
             "fpi_per_batch": (s1["fpi"] - s0["fpi"]) / a.batches,
             "blks_read_per_row": (s1["blks_read"] - s0["blks_read"]) / rows,
             "disk_kib_per_row": (s1["disk"] - s0["disk"]) * 512 / 1024 / rows}
        scale.log(f"  {side}: {r['rows_per_s']:,.0f} rows/s, WAL {r['wal_per_row']:,.0f} B/row, "
                  f"{r['fpi_per_batch']:,.0f} FPI/batch, {r['blks_read_per_row']:.2f} blocks read/row, "
                  f"disk {r['disk_kib_per_row']:.1f} KiB/row")
        return r

    def rounds(self):
        a = self.a
        for r in range(-1, a.rounds):
            scale.log(f"round {r}{' (warm-up)' if r < 0 else ''}")
            sides = ["one", "two", "peer"] + (["prefetch"] if self.a.prefetch else [])
            self.rng.shuffle(sides)
            out = {"round": r}
            for side in sides:
                batches = [((r + 2) * 100 + b, self.keys_of_batch()) for b in range(a.batches)]
                if side == "two":
                    self.written += [k for _, (u, n) in batches for k in u + n]
                out[side] = self.run_side(side, batches, (r + 1) * a.batches * a.batch)
            if r >= 0:
                self.res["rounds"].append(out)

    def merge(self):
        """Fold `recent` into `big`, as a merge of one partition would, and time it."""
        a = self.a
        n_recent = int(self.psql("SELECT count(*) FROM recent").strip())
        t = time.monotonic()
        self.psql(
            "CREATE TABLE big2 AS SELECT coalesce(r.table_id, b.table_id) AS table_id, coalesce(r.key, b.key) AS "
            "key, CASE WHEN r.key IS NULL THEN b.file_id ELSE r.file_id END AS file_id, CASE WHEN r.key IS NULL "
            "THEN b.pos ELSE r.pos END AS pos, CASE WHEN r.key IS NULL THEN b.seq ELSE r.seq END AS seq, CASE WHEN "
            "r.key IS NULL THEN b.version ELSE r.version END AS version FROM big b FULL JOIN recent r ON "
            "r.table_id = b.table_id AND r.key = b.key WHERE r.deleted IS NOT TRUE ORDER BY 1, 2")
        self.psql("ALTER TABLE big2 ADD PRIMARY KEY (table_id, key) INCLUDE (file_id, pos, seq, version)")
        self.psql("VACUUM big2")
        dt = time.monotonic() - t
        n_big2 = int(self.psql("SELECT count(*) FROM big2").strip())
        want = a.keys + len({k for k in self.written if k >= 10**12})
        if n_big2 != want:
            raise RuntimeError(f"the merge holds {n_big2:,} keys, want {want:,}")
        missing = int(self.psql_file(
            "SELECT count(*) FROM unnest('{" + ",".join(map(str, self.written[:50000])) + "}'::bigint[]) u(k) "
            "WHERE NOT EXISTS (SELECT 1 FROM big2 b WHERE b.table_id = 1 AND b.key = u.k AND b.seq > 1)\n").strip())
        if missing:
            raise RuntimeError(f"{missing} keys the rounds wrote are not in the merged level")
        self.res["merge"] = {"rows": n_big2, "recent": n_recent, "seconds": dt, "rows_per_s": n_big2 / dt}
        scale.log(f"merge: {n_big2:,} rows with {n_recent:,} recent in {dt:.1f} s ({n_big2 / dt:,.0f} rows/s)")

    def report(self):
        a, R = self.a, self.res["rounds"]
        med = lambda side, k: statistics.median(x[side][k] for x in R)
        m = self.res["merge"]
        # a partition of P rows is rebuilt (P / merge rate seconds) when its recent rows reach f x P:
        # the merge's time per ingested row is 1 / (f x merge rate)
        cost = {f: 1 / (f * m["rows_per_s"]) for f in (0.05, 0.10)}
        lines = ["| side | rows/s | WAL B/row | FPI/batch | blocks read/row | disk KiB/row |",
                 "| --- | --- | --- | --- | --- | --- |"]
        names = {"one": "today's key index (lookup, update at ctid, insert)",
                 "two": "two levels (probe recent, then big index-only; upsert into recent)",
                 "peer": "PostgreSQL's upsert (bench_engine pgingest)"}
        names["prefetch"] = f"today's, the keys first probed on {a.prefetch} connections at once"
        for side in ("one", "two", "peer") + (("prefetch",) if a.prefetch else ()):
            lines.append(f"| {names[side]} | {med(side, 'rows_per_s'):,.0f} | {med(side, 'wal_per_row'):,.0f} | "
                         f"{med(side, 'fpi_per_batch'):,.0f} | {med(side, 'blks_read_per_row'):.2f} | "
                         f"{med(side, 'disk_kib_per_row'):.1f} |")
        two = med("two", "rows_per_s")
        sus = {f: 1 / (1 / two + c) for f, c in cost.items()}
        z = self.res["sizes"]
        notes = [
            f"- {a.keys:,} keys; {a.rounds} rounds of {a.batches} batches of {a.batch:,} (half updates of random "
            f"existing keys), after a warm-up round; sides in random order per round; medians.",
            f"- Memory: {'PostgreSQL capped at ' + str(a.cap_mb) + ' MiB (cgroup), page cache dropped after the load' if a.cap_mb else 'no cap'};"
            f" shared_buffers 256MB. Sizes: one {z['one'] / 2**20:,.0f} MiB, big {z['big'] / 2**20:,.0f} MiB "
            f"(its covering key {z['big_index'] / 2**20:,.0f} MiB), peer {z['peer'] / 2**20:,.0f} MiB.",
            f"- Two levels / today: {two / med('one', 'rows_per_s'):.2f}x; two levels / PostgreSQL's upsert: "
            f"{two / med('peer', 'rows_per_s'):.2f}x; today / PostgreSQL's upsert: "
            f"{med('one', 'rows_per_s') / med('peer', 'rows_per_s'):.2f}x.",
            f"- Merge: {m['rows']:,} rows rebuilt in {m['seconds']:.1f} s ({m['rows_per_s']:,.0f} rows/s). Rebuilding a "
            f"partition when its recent rows reach 5% (10%) of it costs {cost[0.05] * 1e6:.1f} µs "
            f"({cost[0.10] * 1e6:.1f} µs) per ingested row; ingest with the merges counted in: "
            f"{sus[0.05]:,.0f} ({sus[0.10]:,.0f}) rows/s, {sus[0.05] / med('peer', 'rows_per_s'):.2f}x "
            f"({sus[0.10] / med('peer', 'rows_per_s'):.2f}x) PostgreSQL's upsert.",
        ]
        text = "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"
        print(text)
        out = os.path.join(self.build, "bench")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "two-level-latest.json"), "w") as f:
            json.dump(self.res, f, indent=1)
        with open(os.path.join(out, "two-level-latest.md"), "w") as f:
            f.write(text)

    def main(self):
        self.start()
        self.load()
        if self.a.cap_mb:
            self.cap()
        self.rounds()
        self.merge()
        self.report()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--keys", type=int, default=20000000)
    ap.add_argument("--cap-mb", type=int, default=0, help="PostgreSQL's memory (shared_buffers and page cache)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--prefetch", type=int, default=0,
                    help="also run today's statements after the batch's keys were probed on N connections at once")
    a = ap.parse_args()
    if a.keys < 4 * (a.rounds + 1) * a.batches * a.batch or a.batch < 2:
        ap.error("--keys must be well above the rounds' updates")
    if a.cap_mb and (a.cap_mb < 400 or os.geteuid() != 0):
        ap.error("--cap-mb needs root (a memory cgroup) and at least 400 MiB (shared_buffers is 256MB)")
    scale.run_to_the_end(Experiment(a))


if __name__ == "__main__":
    main()
