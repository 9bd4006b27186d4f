#!/usr/bin/python3
"""bench.py - the measures of `make bench`, strike next to its peers, in one run.

Run by tests/bench/run.sh, which starts (and always stops) the durable
PostgreSQL that holds both strike's catalog (database `strike`) and the
PostgreSQL peer's table (database `peer`), and striked on that catalog:

    bench.py --build B --out B/bench --work W --pg-host DIR --http-port P --striked-pid PID [--quick]

For each measure, strike and its peer run in alternation (A B A B ..., 5
rounds; --quick: 2 rounds at tiny sizes). Prints ONE markdown table (the nine
measures of issue 8, then the benchmarks of issues 3, 4, 7, 13 and later), with medians
and min-max over the rounds, and writes every raw run as JSON to
B/bench/run-<time>.json and B/bench/latest.json (the table to latest.md).
The column "previous" is each row's ratio in the last run of the same size
that had the row (the previous latest.json, else B/bench/history.json), with
a marker where it moved the wrong way by more than 10% (bench_history.py).
With STRIKE_BENCH_PERF=DIR, perf records striked during each measure
(perfrec.py; tests/bench/profile.sh).
A measure whose feature is missing says "not available"; a measure that
fails says "failed" and makes the exit status 1. No timing is asserted: the
"met" column reports, it never fails the run.

Python standard library only (/usr/bin/python3).
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

import bench_history
import body_rss
import perfrec

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
PSQL = next((p for p in (f"/usr/lib/postgresql/{v}/bin/psql" for v in (15, 16, 17, 18, 14)) if os.path.exists(p)),
            shutil.which("psql") or "psql")

SIZES = {
    "full": dict(rounds=5, small=1_000_000, big=10_000_000, big_batch=1_000_000,
                 m1_samples=20, m2_samples=100, m3_batches=10, m3_batch=10_000,
                 m7_seconds=5, m9_rounds=10, m9_batch=10_000,
                 wrk_dur="10s", grpc_rows=200_000, grpc_seconds=3,
                 pq_rows=1_000_000, pq_big=10_000_000, dv_rows=10_000_000, dv_runs=21,
                 hist_commits=10_000, era_history=100,
                 cdc_batches=50, cdc_rows=100_000,
                 rss_body_mib=16, rss_wide_mib=4, rss_erase_keys=10_000_000, rss_shapes=None,
                 e13_rows=50_000_000, e13_delete=20_000_000, e13_block=1_000_000, e13_batch=1_000_000,
                 e13_before_s=20, ice_files=10_000, ice_plan_files=1_000, ice_loads=300),
    "quick": dict(rounds=2, small=20_000, big=100_000, big_batch=20_000,
                  m1_samples=5, m2_samples=10, m3_batches=2, m3_batch=1_000,
                  m7_seconds=1, m9_rounds=2, m9_batch=1_000,
                  wrk_dur="1s", grpc_rows=5_000, grpc_seconds=1,
                  pq_rows=20_000, pq_big=0, dv_rows=1_000_000, dv_runs=5,
                  hist_commits=200, era_history=10,
                  cdc_batches=5, cdc_rows=20_000,
                  rss_body_mib=1, rss_wide_mib=0.25, rss_erase_keys=20_000,
                  rss_shapes=("cdc_null", "changes_del_wide", "json_zeros", "grpc_tiny", "erase_filter"),
                  e13_rows=200_000, e13_delete=80_000, e13_block=20_000, e13_batch=20_000,
                  e13_before_s=2, ice_files=200, ice_plan_files=100, ice_loads=30),
}


class NotAvailable(Exception):
    """The feature a measure needs is missing: the row says so, with no number."""


# ------------------------------------------------------------------ helpers

def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, timeout=3600, env=None, cwd=None):
    """Run a command; its stdout. Raises with the tail of stderr on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-8:]
        raise RuntimeError(f"{os.path.basename(cmd[0])} {' '.join(cmd[1:3])} exited {p.returncode}: "
                           + " | ".join(tail))
    return p.stdout


def json_line(out):
    """The last line of `out` that is a JSON object."""
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON line in: {out[-300:]}")


def med(v):
    return statistics.median(v)


def pctl(v, p):
    s = sorted(v)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def fmt_num(x, unit=""):
    if x is None:
        return "–"
    a = abs(x)
    if a >= 1e6:
        s = f"{x / 1e6:.2f} M"
    elif a >= 1e4:
        s = f"{x / 1e3:.1f} k"
    elif a >= 100:
        s = f"{x:.0f} "
    elif a >= 10:
        s = f"{x:.1f} "
    else:
        s = f"{x:.2f} "
    return (s + unit).strip()


def fmt_ms(ms):
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def fmt_bytes(b):
    if b >= 1 << 30:
        return f"{b / (1 << 30):.2f} GiB"
    if b >= 1 << 20:
        return f"{b / (1 << 20):.1f} MiB"
    if b >= 1 << 10:
        return f"{b / (1 << 10):.1f} KiB"
    return f"{b:.0f} B"


def fmt_x(r):
    if r is None:
        return "–"
    if r >= 1000:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.0f}x"
    return f"{r:.2f}x"


def fmt_speed(r):
    """A speed ratio (peer time / strike time) in words."""
    return f"{fmt_x(r)} faster" if r >= 1 else f"{fmt_x(1 / r)} slower"


def spread(values, f):
    """median (min–max) of values, each formatted by f."""
    return f"{f(med(values))} ({f(min(values))}–{f(max(values))})"


def proc_bytes(pid, name):
    """A /proc/PID/status memory field (VmRSS, VmHWM) in bytes; 0 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    return 0


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_md(rows):
    """The markdown table of rows; "previous" is the last run's ratio (bench_history.py)."""
    h = ["#", "measure", "peer", "peer median (min–max)", "strike median (min–max)", "ratio", "previous", "goal",
         "met"]
    lines = ["| " + " | ".join(h) + " |", "|" + "|".join("---" for _ in h) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(k, "–")) for k in ("num", "measure", "peer", "peer_med", "strike_med",
                                                                      "ratio", "previous", "goal", "met")) + " |")
    return "\n".join(lines)


def git_commit():
    """The source tree's commit (short), "+dirty" with uncommitted changes to tracked files; "?" outside git."""
    try:
        c = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           timeout=30)
        if c.returncode != 0:
            return "?"
        d = subprocess.run(["git", "-C", SRC, "status", "--porcelain", "-uno"], capture_output=True, text=True,
                           timeout=30)
        return c.stdout.strip() + ("+dirty" if d.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


# ------------------------------------------------------------------ context

class Bench:
    def __init__(self, a):
        self.a = a
        self.mode = "quick" if a.quick else "full"
        self.z = SIZES[self.mode]
        self.R = self.z["rounds"]
        self.build = os.path.abspath(a.build)
        self.bin = os.path.join(self.build, "bin")
        self.out = os.path.abspath(a.out)
        self.work = os.path.abspath(a.work)
        self.datadir = os.path.join(self.out, "data")  # deterministic inputs, kept between runs
        self.blobs = os.path.join(self.work, "data")     # striked's blob store (this run only)
        self.peers = os.path.join(self.build, "peers")   # node_modules of tests/peers/package.json
        self.pg = a.pg_host
        self.catalog = f"postgresql://postgres@/strike?host={self.pg}"
        self.peer_db = f"postgresql://postgres@/peer?host={self.pg}"
        self.url = f"http://127.0.0.1:{a.http_port}"
        self.env = dict(os.environ)
        self.results = {}
        self.rows = []
        self.failed = False
        os.makedirs(self.datadir, exist_ok=True)

    # ---- tools
    def node(self, script, *args, timeout=3600):
        return json_line(run(["node", os.path.join(HERE, script), *map(str, args)], timeout=timeout, env=self.env))

    def duck(self, *args, timeout=3600):
        return self.node("duck_peer.mjs", "--modules", self.peers, *args, timeout=timeout)

    def engine(self, *args, timeout=3600):
        return json_line(run([os.path.join(self.bin, "bench_engine"), "--catalog", self.catalog,
                              "--data", self.blobs, *map(str, args)], timeout=timeout, env=self.env))

    def psql(self, db, sql):
        return run([PSQL, "-h", self.pg, "-U", "postgres", "-d", db, "-qAtc", sql])

    def http(self, method, path, body=None, timeout=3600):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"{}")

    def curl_scan(self, table, body, count=False):
        """(seconds, bytes) of one POST /scan read to the end by curl; with count, also the rows."""
        cmd = ["curl", "-s", "-S", "-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps(body),
               f"{self.url}/v1/tables/{table}/scan"]
        if count:
            p = subprocess.run(cmd, capture_output=True, check=True)
            return p.stdout.count(b"\n")
        out = run(cmd[:1] + ["-o", "/dev/null", "-w", "%{http_code} %{time_total} %{size_download}"] + cmd[1:])
        code, t, size = out.split()
        if code == "404" or code == "405" or code == "501":
            raise NotAvailable(f"POST /scan answers {code}")
        if code != "200":
            raise RuntimeError(f"POST /v1/tables/{table}/scan: HTTP {code}")
        return float(t), int(size)

    # ---- data, shared by the measures
    def gen(self, n, csv=False):
        """The peers' table (lib/gen.mjs) with n rows, written by DuckDB; cached in B/bench/data."""
        pq = os.path.join(self.datadir, f"t_{n}.parquet")
        cv = os.path.join(self.datadir, f"t_{n}.csv")
        args = []
        if not os.path.exists(pq):
            args += ["--parquet", pq + ".tmp"]
        if csv and not os.path.exists(cv):
            args += ["--csv", cv + ".tmp"]
        if args:
            log(f"generating the peers' table, {n:,} rows (DuckDB)")
            self.duck("gen", "--rows", n, *args)
            for f in (pq, cv):
                if os.path.exists(f + ".tmp"):
                    os.replace(f + ".tmp", f)
        return pq, cv

    def positions(self, n):
        f = os.path.join(self.datadir, f"pos_{n}.json")
        if not os.path.exists(f):
            self.node("duck_peer.mjs", "positions", "--rows", n, "--frac", "0.1", "--out", f)
        return f

    def setup(self):
        z = self.z
        small_pq, small_csv = self.gen(z["small"], csv=True)
        big_pq = self.gen(z["big"])[0] if not self.only or self.only & {"m1", "m8", "e14c"} else None
        self.small_pq, self.big_pq = small_pq, big_pq
        self.pos_file = self.positions(z["small"])
        self.results["load"] = {}
        # strike: the same rows, through the engine's commit path (bench_engine load)
        loads = [("t1m", small_pq, z["small"]), ("tk", small_pq, z["small"])]
        if not self.only or "m2" in self.only:  # row 2's C clients delete from a copy of tk of their own
            loads.append(("tkc", small_pq, z["small"]))
        if not self.only or self.only & {"m1", "m8"}:  # the big table only for the measures that read it
            loads.append(("tbig", big_pq, z["big_batch"]))
        for table, src, batch in loads:
            log(f"strike: loading {table} from {os.path.basename(src)} (requests of {batch:,} rows)")
            r = self.engine("load", "--table", table, "--from", src, "--batch", batch)
            self.results["load"][table] = r
            log(f"  {r['rows']:,} rows in {r['seconds']:.1f} s ({r['rows_per_s']:,.0f} rows/s, {r['requests']} commits)")
        # PostgreSQL peer: the same rows, COPY into a table with its primary key (pg-bench.mjs)
        log("PostgreSQL peer: COPY into t")
        self.psql("peer", "CREATE TABLE t (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, "
                          "amount DOUBLE PRECISION NOT NULL, status TEXT NOT NULL, payload TEXT NOT NULL)")
        t0 = time.monotonic()
        run([PSQL, "-h", self.pg, "-U", "postgres", "-d", "peer", "-qc", f"\\copy t FROM '{small_csv}' WITH (FORMAT csv)"])
        self.results["load"]["pg_t"] = {"rows": z["small"], "seconds": time.monotonic() - t0}
        # both sides analyzed after the load, as pg-bench.mjs does (autovacuum would, later)
        self.psql("peer", "VACUUM ANALYZE t")
        self.psql("strike", "VACUUM ANALYZE")
        # t1m: snapshot 1 = nothing deleted; snapshot 2 = the 10% sample deleted (id == position)
        pos = json.load(open(self.pos_file))
        self.deleted = len(pos)
        try:
            r = self.http("POST", "/v1/tables/t1m/changes",
                          {"changes": [{"op": "delete", "key": {"id": k}} for k in pos]})
            plan = self.http("POST", "/v1/tables/t1m/plan", {"snapshot": r["seq"]})
        except urllib.error.HTTPError as e:
            if e.code in (404, 405, 501):
                self.http_ok = False
                log(f"HTTP API not available ({e.code}): scans are not available")
                return
            raise
        self.http_ok = True
        if r["deleted"] != len(pos) or len(plan["files"]) != 1 or plan["files"][0]["deleted_count"] != len(pos):
            raise RuntimeError(f"10% delete on t1m: {r}, plan {plan}")
        self.scan_file = os.path.join(self.blobs, plan["files"][0]["path"])
        self.snap0, self.snap10 = r["seq"] - 1, r["seq"]

    # ---- table rows
    def row(self, num, measure, peer, peer_med, strike_med, ratio, goal, met):
        self.rows.append(dict(num=num, measure=measure, peer=peer, peer_med=peer_med, strike_med=strike_med,
                              ratio=ratio, goal=goal, met=met))

    def measure(self, key, num, title, peer, goal, fn):
        log(f"measure {num}: {title}")
        t0 = time.monotonic()
        try:
            pdir = perfrec.enabled()
            if pdir and key != "e7":  # i7 profiles its own striked (bench_grpc_dv.py)
                with perfrec.Recorder([self.a.striked_pid], os.path.join(pdir, f"{key}.perf.data")):
                    fn()
            else:
                fn()
        except NotAvailable as e:
            self.results[key] = {"not_available": str(e)}
            self.row(num, title, peer, "not available", "not available", "–", goal, f"not available: {e}")
        except Exception as e:  # noqa: BLE001 - a failed measure is reported in its row
            self.failed = True
            traceback.print_exc()
            self.results[key] = {"error": str(e)}
            msg = str(e).replace("|", "/")[:160]
            self.row(num, title, peer, "failed", "failed", "–", goal, f"failed: {msg}")
        log(f"  ({time.monotonic() - t0:.0f} s)")

    # ================================================================ measures

    def m1_delete_big(self):
        z, R = self.z, self.R
        n, s = z["big"], z["m1_samples"]
        duck, strike = [], []
        out = os.path.join(self.work, "cow.parquet")
        for r in range(R):
            strike.append(self.engine("delete1", "--table", "tbig", "--rows", n, "--samples", s, "--warmup", 2,
                                      "--key-offset", r * (s + 2)))
            duck.append(self.duck("cow", "--file", self.big_pq, "--out", out, "--runs", 1,
                                  "--warmup", 1 if r == 0 else 0))
        self.results["m1"] = {"strike": strike, "duckdb": duck}
        d_ms = [x["ms"][0] for x in duck]
        s_ms = [x["p50_ms"] for x in strike]
        d_b = [x["bytes_written"] for x in duck]
        s_b = [x["dv_bytes_per_delete"] for x in strike]
        w_b = [x["wal_bytes_per_delete"] for x in strike]
        rt, rb = med(d_ms) / med(s_ms), med(d_b) / med(s_b)
        self.m1_note = (f"strike: p50 of {s} deletes per round; bytes = the DV blob written per delete (a "
                        f"Puffin file, or the blob a small DV keeps inline in its catalog row) "
                        f"(the catalog's WAL adds {fmt_bytes(med(w_b))} per delete, not counted by the goal, "
                        f"as DuckDB's figure counts only its Parquet file)")
        self.row(1, f"1-row delete in a {n:,}-row table: latency; bytes written", "DuckDB copy-on-write rewrite",
                 f"{spread(d_ms, fmt_ms)}; {fmt_bytes(med(d_b))}",
                 f"{spread(s_ms, fmt_ms)}; {spread(s_b, fmt_bytes)}",
                 f"{fmt_x(rt)} faster; {fmt_x(rb)} fewer bytes", "≥1000x faster; ≥100,000x fewer bytes",
                 "yes" if rt >= 1000 and rb >= 100000 else
                 f"no ({'latency ' + fmt_x(rt) if rt < 1000 else ''}{'; ' if rt < 1000 and rb < 100000 else ''}"
                 f"{'bytes ' + fmt_x(rb) if rb < 100000 else ''})")

    def m2_delete_latency(self):
        z, R = self.z, self.R
        n, s = z["small"], z["m2_samples"]
        kc = ["keyed_client.mjs", "--modules", self.peers, "delete1", "--rows", n, "--samples", s, "--warmup", 2]
        # the same delete with each server's own C client (bench_keyed: libcurl, libpq with a prepared
        # DELETE), on tkc (a fresh copy of tk, so its DV grows as tk's does) and on keys of t the node
        # rounds leave alone: not the row's ratio, which stays the one of the node clients
        kb = [os.path.join(self.bin, "bench_keyed"), "delete1", "--rows", n, "--samples", s, "--warmup", 2]
        st, pg, sc, pc = [], [], [], []
        for r in range(R):
            off, coff = r * (s + 2), (R + r) * (s + 2)
            st.append(self.node(*kc, "--target", "strike", "--url", self.url, "--table", "tk", "--offset", off))
            pg.append(self.node(*kc, "--target", "pg", "--pghost", self.pg, "--db", "peer", "--table", "t",
                                 "--offset", off))
            sc.append(json_line(run([*map(str, kb), "--target", "strike", "--url", self.url, "--table", "tkc",
                                     "--offset", str(coff)], timeout=3600, env=self.env)))
            pc.append(json_line(run([*map(str, kb), "--target", "pg", "--conninfo",
                                     f"host={self.pg} user=postgres dbname=peer", "--table", "t",
                                     "--offset", str(coff)], timeout=3600, env=self.env)))
        self.results["m2"] = {"strike": st, "postgres": pg, "strike_c": sc, "postgres_c": pc}
        c50 = [med(x["ms"]) for x in sc]
        d50 = [med(x["ms"]) for x in pc]
        self.m2_note = (f"the same deletes with each server's own C client (tests/bench/bench_keyed.c: libcurl, "
                        f"one kept-alive connection, on a fresh copy of the table; libpq, a prepared DELETE): "
                        f"strike {spread(c50, fmt_ms)}, PostgreSQL {spread(d50, fmt_ms)}, "
                        f"{fmt_x(med(c50) / med(d50))} PostgreSQL's p50 (the row's ratio is the node clients')")
        s50 = [med(x["ms"]) for x in st]
        p50 = [med(x["ms"]) for x in pg]
        s99 = pctl([v for x in st for v in x["ms"]], 0.99)
        p99 = pctl([v for x in pg for v in x["ms"]], 0.99)
        ratio = med(s50) / med(p50)
        self.row(2, f"single-key delete, one client, {n:,}-row table: p50 (p99)", "PostgreSQL DELETE … WHERE id = $1",
                 f"{spread(p50, fmt_ms)} (p99 {fmt_ms(p99)})", f"{spread(s50, fmt_ms)} (p99 {fmt_ms(s99)})",
                 f"{fmt_x(ratio)} PostgreSQL's p50", "p50 ≤2x PostgreSQL", "yes" if ratio <= 2 else f"no ({fmt_x(ratio)})")

    def m3_ingest(self):
        z, R = self.z, self.R
        n, nb, b = z["small"], z["m3_batches"], z["m3_batch"]
        per = nb * b // 2  # updates (and new keys) per round
        kc = ["keyed_client.mjs", "--modules", self.peers, "ingest", "--rows", n, "--batches", nb, "--batch", b]
        st, pg, en = [], [], []
        for r in range(-1, R):  # round -1: warm-up, not counted
            off, base = n // 2 + (r + 1) * per, n + (r + 1) * per
            a = self.node(*kc, "--target", "strike", "--url", self.url, "--table", "tk", "--offset", off,
                          "--new-base", base, "--salt", r + 1)
            c = self.node(*kc, "--target", "pg", "--pghost", self.pg, "--db", "peer", "--table", "t",
                          "--offset", off, "--new-base", base, "--salt", r + 1)
            e = self.engine("ingest", "--table", "tk", "--rows", n, "--rounds", nb, "--batch", b,
                            "--key-offset", off, "--new-base", 10**12 + (r + 1) * per)
            if r >= 0:
                st.append(a), pg.append(c), en.append(e)
        self.results["m3"] = {"strike_http": st, "postgres": pg, "strike_engine_api": en}
        sr = [x["rows_per_s"] for x in st]
        pr = [x["rows_per_s"] for x in pg]
        er = [x["rows_per_s"] for x in en]
        self.m3_engine = er
        ratio = med(sr) / med(pr)
        self.row(3, f"CDC ingest, batches of {b:,} upserts, half updates: rows/s",
                 "PostgreSQL INSERT … ON CONFLICT DO UPDATE", spread(pr, fmt_num), spread(sr, fmt_num),
                 fmt_x(ratio), "≥1.5x PostgreSQL", "yes" if ratio >= 1.5 else f"no ({fmt_x(ratio)})")

    def m4_dv_fetch(self):
        script = os.path.join(HERE, "http_dv_bench.sh")
        if not os.path.exists(script):
            raise NotAvailable("tests/bench/http_dv_bench.sh is missing")
        for tool in ("wrk", "nginx"):
            if not shutil.which(tool):  # deps.sh installs both: a missing one is a failure, not a skip
                raise RuntimeError(f"{tool} is not installed (scripts/deps.sh)")
        out = run(["bash", script, self.build, str(self.R), self.z["wrk_dur"], "64"], timeout=3600)
        runs = {"strike": [], "nginx": []}
        for m in re.finditer(r"^run (\d+) (strike|nginx)\s+(\S+) req/s\s+p50\s+(\S+) ms\s+p99\s+(\S+) ms\s+non-2xx (\d+)(.*)$",
                             out, re.M):
            runs[m.group(2)].append({"round": int(m.group(1)), "rps": float(m.group(3)), "p50_ms": float(m.group(4)),
                                     "p99_ms": float(m.group(5)), "non2xx": int(m.group(6)),
                                     "errors": m.group(7).strip()})
        size = re.search(r"DV fetch, (\d+) bytes", out)
        self.results["m4"] = {"runs": runs, "dv_bytes": int(size.group(1)) if size else None, "output": out}
        if len(runs["strike"]) != self.R or len(runs["nginx"]) != self.R:
            raise RuntimeError(f"http_dv_bench.sh printed {len(runs['strike'])}/{len(runs['nginx'])} runs")
        bad = sum(x["non2xx"] for x in runs["strike"])
        s_r = [x["rps"] for x in runs["strike"]]
        n_r = [x["rps"] for x in runs["nginx"]]
        s_p = [x["p99_ms"] for x in runs["strike"]]
        n_p = [x["p99_ms"] for x in runs["nginx"]]
        ratio, pr = med(s_r) / med(n_r), med(s_p) / med(n_p)
        ok = ratio >= 1.0 and pr <= 1.0 and bad == 0
        self.row(4, f"DV fetch ({size.group(1) if size else '?'} B), wrk 64 connections: req/s (p99)",
                 "nginx serving the same bytes", f"{spread(n_r, fmt_num)} (p99 {fmt_ms(med(n_p))})",
                 f"{spread(s_r, fmt_num)} (p99 {fmt_ms(med(s_p))})",
                 f"{fmt_x(ratio)} req/s; p99 {fmt_x(pr)}", "≥1x nginx req/s, p99 ≤ nginx",
                 "yes" if ok else "no (" + ", ".join(
                     ([f"req/s {fmt_x(ratio)}"] if ratio < 1 else []) + ([f"p99 {fmt_x(pr)}"] if pr > 1 else [])
                     + ([f"{bad} non-2xx"] if bad else [])) + ")")

    def _scans(self):
        """Rounds shared by measures 5 and 6: strike at 0% and 10% deleted, DuckDB's anti-join and NDJSON."""
        if getattr(self, "scan_runs", None) is not None:
            return self.scan_runs
        if not self.http_ok:
            raise NotAvailable("the HTTP API (POST /scan) is missing")
        n, live = self.z["small"], self.z["small"] - self.deleted
        # warm the caches and check the row counts once, untimed
        for snap, rows in ((self.snap0, n), (self.snap10, live)):
            got = self.curl_scan("t1m", {"snapshot": snap}, count=True)
            if got != rows:
                raise RuntimeError(f"scan at snapshot {snap} gave {got} rows, expected {rows}")
        ndjson_js = os.path.join(HERE, "http_scan_duckdb.cjs")
        runs = []
        for r in range(self.R):
            s0 = self.curl_scan("t1m", {"snapshot": self.snap0})
            s10 = self.curl_scan("t1m", {"snapshot": self.snap10})
            aj = self.duck("antijoin", "--file", self.scan_file, "--positions", self.pos_file, "--runs", 1,
                           "--warmup", 1)
            nd = None
            if os.path.exists(ndjson_js):
                env = dict(self.env, NODE_PATH=os.path.join(self.peers, "node_modules"))
                nd = json_line(run(["node", ndjson_js, self.scan_file, self.pos_file,
                                    os.path.join(self.work, "duck.ndjson"), "1"], env=env))
                os.remove(os.path.join(self.work, "duck.ndjson"))
            runs.append({"strike_0": s0, "strike_10": s10, "duck_antijoin": aj, "duck_ndjson": nd})
        self.scan_runs = runs
        self.results["scans"] = {"rows": n, "deleted": self.deleted, "file": self.scan_file, "runs": runs}
        return runs

    def m5_scan_ratio(self):
        runs = self._scans()
        s_ratio = [x["strike_10"][0] / x["strike_0"][0] for x in runs]
        d_ratio = [x["duck_antijoin"]["anti_ms"][0] / x["duck_antijoin"]["full_ms"][0] for x in runs]
        s0 = [x["strike_0"][0] * 1000 for x in runs]
        s10 = [x["strike_10"][0] * 1000 for x in runs]
        r = med(s10) / med(s0)
        self.m5_note = (f"strike's scans: 0% deleted {spread(s0, fmt_ms)}, 10% deleted {spread(s10, fmt_ms)}; "
                        f"DuckDB: full scan {spread([x['duck_antijoin']['full_ms'][0] for x in runs], fmt_ms)}, "
                        f"anti-join {spread([x['duck_antijoin']['anti_ms'][0] for x in runs], fmt_ms)}")
        x3 = lambda v: f"{v:.3f}x"  # noqa: E731
        self.row(5, f"scan, 10% deleted vs 0% deleted ({self.z['small']:,}-row file): time ratio",
                 "DuckDB anti-join on file_row_number vs plain scan", spread(d_ratio, fmt_x), spread(s_ratio, x3),
                 f"{x3(r)} (strike, ratio of medians)", "≤1.05x", "yes" if r <= 1.05 else f"no ({x3(r)})")

    def m6_scan_ndjson(self):
        runs = self._scans()
        if runs[0]["duck_ndjson"] is None:
            raise NotAvailable("tests/bench/http_scan_duckdb.cjs is missing")
        live = self.z["small"] - self.deleted
        s = [live / x["strike_10"][0] for x in runs]
        d = [x["duck_ndjson"]["rows"] / x["duck_ndjson"]["median_s"] for x in runs]
        if any(x["duck_ndjson"]["rows"] != live for x in runs):
            raise RuntimeError("DuckDB wrote another row count than strike scans")
        ratio = med(s) / med(d)
        self.m6_note = (f"NDJSON bytes: strike {fmt_bytes(runs[0]['strike_10'][1])} over HTTP, "
                        f"DuckDB {fmt_bytes(runs[0]['duck_ndjson']['bytes'])} to a file")
        self.row(6, f"scan to NDJSON, {self.z['small']:,} rows with 10% deleted: rows/s", "DuckDB COPY … TO (FORMAT JSON)",
                 spread(d, fmt_num), spread(s, fmt_num), fmt_x(ratio), "≥1.0x DuckDB",
                 "yes" if ratio >= 1.0 else f"no ({fmt_x(ratio)})")

    def m7_writers(self):
        R, sec = self.R, self.z["m7_seconds"]
        one, eight = [], []
        for _ in range(R):
            one.append(self.engine("writers", "--threads", 1, "--seconds", sec))
            eight.append(self.engine("writers", "--threads", 8, "--seconds", sec))
        self.results["m7"] = {"threads_1": one, "threads_8": eight}
        a = [x["requests_per_s"] for x in one]
        b = [x["requests_per_s"] for x in eight]
        lost = sum(x["lost"] for x in one + eight)
        ratio = med(b) / med(a)
        self.m7_note = (f"catalog commits/s: 1 writer {spread([x['commits_per_s'] for x in one], fmt_num)}, "
                        f"8 writers {spread([x['commits_per_s'] for x in eight], fmt_num)} (group commit merges "
                        f"concurrent requests); acknowledged writes lost: {lost}")
        self.row(7, "writers on one table, 1-row upserts: acknowledged commits/s", "strike, 1 writer",
                 spread(a, fmt_num), f"{spread(b, fmt_num)} (8 writers)", fmt_x(ratio), "≥0.7x 1 writer, nothing lost",
                 "yes" if ratio >= 0.7 and lost == 0 else f"no ({fmt_x(ratio)}, lost {lost})")

    def aux_striked(self, env=None, args=("--compact-interval", "0")):
        """A fresh striked on the same catalog and blob store (striked is stateless), on free
        ports; its pid goes to WORK/aux-striked.pid so that run.sh stops it whatever happens."""
        port, gport = free_port(), free_port()
        log_f = open(os.path.join(self.work, "aux-striked.log"), "ab")
        p = subprocess.Popen([os.path.join(self.bin, "striked"), "--catalog", self.catalog, "--data", self.blobs,
                              "--http", f"127.0.0.1:{port}", "--grpc", f"127.0.0.1:{gport}", "--max-body", "1G",
                              "--log-level", "warn", *args], stdout=log_f, stderr=subprocess.STDOUT,
                             env=dict(self.env, **(env or {})))
        with open(os.path.join(self.work, "aux-striked.pid"), "w") as f:
            f.write(f"{p.pid}\n")
        for _ in range(600):
            if p.poll() is not None:
                raise RuntimeError(f"striked exited with {p.returncode} (see aux-striked.log)")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            p.terminate()
            raise RuntimeError("striked did not become ready")
        return p, f"http://127.0.0.1:{port}"

    def m8_rss(self):
        if not self.http_ok:
            raise NotAvailable("the HTTP API (POST /scan) is missing")

        def scan_peak(table, rows, env=None):
            """A fresh striked scans `table` once: its RSS after start, its peak (VmHWM, and VmRSS
            sampled every 10 ms), the scan's seconds and bytes."""
            p, url = self.aux_striked(env)
            try:
                base = proc_bytes(p.pid, "VmRSS")
                peak = [base]
                stop = threading.Event()

                def sample():
                    while not stop.is_set():
                        peak[0] = max(peak[0], proc_bytes(p.pid, "VmRSS"))
                        time.sleep(0.01)
                th = threading.Thread(target=sample)
                th.start()
                try:
                    saved, self.url = self.url, url
                    t, size = self.curl_scan(table, {})
                finally:
                    self.url = saved
                    stop.set()
                    th.join()
                hwm = proc_bytes(p.pid, "VmHWM")
            finally:
                p.terminate()
                p.wait(timeout=60)
                os.remove(os.path.join(self.work, "aux-striked.pid"))
            return {"rows": rows, "seconds": t, "bytes": size, "rss_after_start": base,
                    "rss_peak_sampled": peak[0], "vmhwm": hwm, "peak": max(peak[0], hwm)}

        main_rss = proc_bytes(self.a.striked_pid, "VmRSS") if os.path.exists(f"/proc/{self.a.striked_pid}") else 0
        small_rows = self.z["small"] - self.deleted
        big_rows = self.http("GET", "/v1/tables/tbig").get("stats", {}).get("live_rows")
        runs = []
        for _ in range(self.R):
            runs.append({"small": scan_peak("t1m", small_rows), "big": scan_peak("tbig", big_rows),
                         # diagnostic: the same scan with one malloc arena (glibc keeps each
                         # thread's arena at its peak; the scan moves across worker threads)
                         "big_one_arena": scan_peak("tbig", big_rows, {"MALLOC_ARENA_MAX": "1"})})
        self.results["m8"] = {"runs": runs, "long_running_striked_rss": main_rss}
        sp = [x["small"]["peak"] for x in runs]
        bp = [x["big"]["peak"] for x in runs]
        ratio = med(bp) / med(sp)
        mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
        rate = [big_rows / x["big"]["seconds"] for x in runs]
        self.m8_note = (f"each scan runs on a fresh striked (same catalog and blob store), so the peak is the scan's: "
                        f"RSS after start {mib(med([x['big']['rss_after_start'] for x in runs]))}; the "
                        f"{self.z['big']:,}-row scan streamed {fmt_bytes(runs[0]['big']['bytes'])} at "
                        f"{spread(rate, fmt_num)} rows/s (curl to /dev/null); peak = max(VmHWM, VmRSS sampled "
                        f"every 10 ms). The same {self.z['big']:,}-row scan on a striked started with MALLOC_ARENA_MAX=1 peaks at "
                        f"{spread([x['big_one_arena']['peak'] for x in runs], mib)} (striked itself caps glibc at 4 "
                        f"arenas and serves buffers of 1 MiB or more from mmap, so freed row-group buffers go back "
                        f"to the system instead of staying at each arena's high-water mark). The long-running "
                        f"striked of this run, after the measures before it (HTTP ingest of measure 3 included), "
                        f"held {mib(main_rss)} RSS")
        self.row(8, f"peak RSS of striked during a {self.z['big']:,}-row scan", f"fresh striked, {self.z['small']:,}-row scan",
                 spread(sp, mib), spread(bp, mib), fmt_x(ratio), "bounded: ≤1.25x the smaller scan's peak",
                 "yes" if ratio <= 1.25 else f"no ({fmt_x(ratio)})")

    def m9_lookups(self):
        z, R = self.z, self.R
        n, rounds, b = z["small"], z["m9_rounds"], z["m9_batch"]
        st, pg = [], []
        for r in range(R):
            st.append(self.engine("lookup", "--table", "t1m", "--rows", n, "--rounds", rounds, "--batch", b,
                                  "--key-offset", r * (rounds + 1)))
            pg.append(json_line(run([os.path.join(self.bin, "bench_engine"), "--pg", self.peer_db, "pglookup",
                                     "--rows", str(n), "--rounds", str(rounds), "--batch", str(b),
                                     "--key-offset", str(r * (rounds + 1) * b)])))
        self.results["m9"] = {"strike": st, "postgres": pg}
        s = [x["keys_per_s"] for x in st]
        pa = [x["absent_keys_per_s"] for x in pg]
        pe = [x["existing_keys_per_s"] for x in pg]
        self.m9_note = (f"strike looks up keys that are absent (a delete of an absent key commits nothing), so the "
                        f"peer's row is PostgreSQL on absent keys too; on existing keys PostgreSQL does "
                        f"{spread(pe, fmt_num)} keys/s")
        ratio = med(s) / med(pa)
        self.row(9, f"key lookups in the commit path, batches of {b:,} keys, {n:,}-key index: keys/s",
                 "PostgreSQL raw `id = ANY($1)` (primary key)", spread(pa, fmt_num), spread(s, fmt_num), fmt_x(ratio),
                 "report (PostgreSQL is the bound)", "n/a")

    # ---- the benchmarks of issues 3, 4 and 7
    def e3_dv_codecs(self):
        if not os.path.exists(os.path.join(self.bin, "bench_dv")) or not os.path.exists(os.path.join(HERE, "dv_peer.mjs")):
            raise NotAvailable("bench_dv or dv_peer.mjs is missing")
        z = self.z
        pat = r"^\s+10%\s+{}\s+(\d+) B\s+([\d.]+) /\s+([\d.]+) /\s+([\d.]+) us"
        st, pe = [], []
        for _ in range(self.R):
            a = run([os.path.join(self.bin, "bench_dv"), "--runs", str(z["dv_runs"]), "--rows", str(z["dv_rows"])])
            b = run(["node", os.path.join(HERE, "dv_peer.mjs"), "--modules", self.peers, "--runs", str(z["dv_runs"]),
                     "--rows", str(z["dv_rows"])], env=self.env)
            g = lambda out, what: re.search(pat.format(re.escape(what)), out, re.M)  # noqa: E731
            row = {}
            for k, out, what in (("s_enc", a, "encode roaring32"), ("s_dec", a, "decode roaring32"),
                                 ("s_enc_ice", a, "encode iceberg-dv"), ("s_dec_ice", a, "decode iceberg-dv"),
                                 ("p_enc", b, "serialize portable (run-optimized)"), ("p_dec", b, "deserialize portable")):
                m = g(out, what)
                if not m:
                    raise RuntimeError(f"no '{what}' line in the output")
                row[k] = {"bytes": int(m.group(1)), "median_us": float(m.group(3))}
            st.append(row)
        self.results["e3"] = {"rows": z["dv_rows"], "runs": st}
        for key, what, pk in (("s_enc", "encode", "p_enc"), ("s_dec", "decode", "p_dec")):
            s = [x[key]["median_us"] for x in st]
            p = [x[pk]["median_us"] for x in st]
            us = lambda v: f"{v:.0f} µs"  # noqa: E731
            self.row("i3", f"DV {what}, 10% of {z['dv_rows']:,} positions, portable Roaring ({st[0][key]['bytes']:,} B)",
                     f"npm roaring {'serialize' if what == 'encode' else 'deserialize'} (CRoaring 4.5)",
                     spread(p, us), spread(s, us), fmt_speed(med(p) / med(s)), "compare", "–")

    def e4_parquet(self):
        script = os.path.join(HERE, "bench_parquet.mjs")
        if not os.path.exists(script) or not os.path.exists(os.path.join(self.bin, "bench_parquet")):
            raise NotAvailable("bench_parquet or bench_parquet.mjs is missing")
        pqdir = os.path.join(self.datadir, "pq")

        def once(n, runs):
            out = run(["node", script, self.build, "--rows", str(n), "--runs", str(runs), "--dir", pqdir],
                      env=self.env)
            f = lambda rx: re.search(rx, out, re.M)  # noqa: E731
            size = f(r"file size\s+DuckDB (\d+) B.*strike (\d+) B")
            w_d = f(r"write\s+DuckDB COPY\s+\S+ / (\S+) / \S+ s = ([\d.]+) MiB/s of file")
            w_s = f(r"^\s+strike\s+\S+ / (\S+) / \S+ s = ([\d.]+) MiB/s of file")
            r_d = f(r"read all columns DuckDB, its file\s+\S+ / (\S+) / \S+ s = ([\d.]+) M rows/s")
            r_s = f(r"^\s+strike, our file\s+\S+ / (\S+) / \S+ s = ([\d.]+) M rows/s")
            if not all((size, w_d, w_s, r_d, r_s)):
                raise RuntimeError("bench_parquet.mjs printed an unexpected format")
            return {"rows": n, "duck_bytes": int(size.group(1)), "strike_bytes": int(size.group(2)),
                    "duck_write_mibs": float(w_d.group(2)), "strike_write_mibs": float(w_s.group(2)),
                    "duck_read_rows_s": float(r_d.group(2)) * 1e6, "strike_read_rows_s": float(r_s.group(2)) * 1e6,
                    "output": out}
        n = self.z["pq_rows"]
        runs = [once(n, 1) for _ in range(self.R)]
        res = {"rows": n, "runs": runs}
        big = None
        if self.z["pq_big"]:
            big = once(self.z["pq_big"], 3)
            res["big"] = big
        self.results["e4"] = res
        mibs = lambda v: f"{v:.1f} MiB/s"  # noqa: E731
        for what, dk, sk, f, unit in (("write (MiB/s of file)", "duck_write_mibs", "strike_write_mibs", mibs, ""),
                                      ("read all columns (rows/s)", "duck_read_rows_s", "strike_read_rows_s", fmt_num, "")):
            d = [x[dk] for x in runs]
            s = [x[sk] for x in runs]
            extra = ""
            if big:
                extra = f"; {self.z['pq_big'] // 10**6}M rows (1 invocation, 3 runs): DuckDB {f(big[dk])}, strike {f(big[sk])}"
            self.row("i4", f"Parquet {what}, {n:,} rows", "DuckDB (2 threads)" if "write" in what else "DuckDB, its own file",
                     spread(d, f), spread(s, f) + extra, fmt_x(med(s) / med(d)), "compare", "–")
        self.row("i4", f"Parquet file size, {n:,} rows (zstd)", "DuckDB", fmt_bytes(runs[0]["duck_bytes"]),
                 fmt_bytes(runs[0]["strike_bytes"]) + (f"; 10M: DuckDB {fmt_bytes(big['duck_bytes'])}, strike "
                                                       f"{fmt_bytes(big['strike_bytes'])}" if big else ""),
                 f"{runs[0]['strike_bytes'] / runs[0]['duck_bytes']:.3f}x", "compare", "–")

    # ---- maintenance (issue 14): history growth, compaction, erasure

    def _post(self, url, path, body, timeout=3600):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"{}")

    def _table_costs(self, url, table, keys):
        """Full scan seconds (curl to the end), plan ms (median of 5), single-key delete p50 ms."""
        cmd = ["curl", "-s", "-S", "-o", "/dev/null", "-w", "%{time_total}", "-X", "POST", "-H",
               "Content-Type: application/json", "-d", "{}", f"{url}/v1/tables/{table}/scan"]
        scan = med([float(run(cmd)) for _ in range(3)])
        plan = []
        for _ in range(5):
            t0 = time.monotonic()
            self._post(url, f"/v1/tables/{table}/plan", {})
            plan.append((time.monotonic() - t0) * 1000)
        dels = []
        for k in keys:
            t0 = time.monotonic()
            r = self._post(url, f"/v1/tables/{table}/changes", {"changes": [{"op": "delete", "key": {"id": k}}]})
            dels.append((time.monotonic() - t0) * 1000)
            if r.get("deleted") != 1:
                raise RuntimeError(f"delete of key {k}: {r}")
        return {"scan_s": scan, "plan_ms": med(plan), "delete_p50_ms": med(dels)}

    def e14a_history(self):
        z = self.z
        n, commits = z["small"], z["hist_commits"]
        rng = random.Random(14)
        out = {}
        for mode, args in (("off", ["--compact-interval", "0"]),
                           ("on", ["--compact-interval", "2s", "--retain", "20s"])):
            table = f"hist_{mode}"
            self.engine("load", "--table", table, "--from", self.small_pq, "--batch", n)
            p, url = self.aux_striked(args=args)
            try:
                keys = rng.sample(range(n), 60 + commits)
                fresh = self._table_costs(url, table, keys[:30])
                t0 = time.monotonic()
                conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=60)
                for i in range(commits):
                    k = keys[60 + i]
                    body = json.dumps({"changes": [{"op": "upsert", "row": {
                        "id": k, "user_id": k % 1000, "amount": float(i), "status": "s", "payload": "p"}}]})
                    conn.request("POST", f"/v1/tables/{table}/changes", body, {"Content-Type": "application/json"})
                    r = conn.getresponse()
                    r.read()
                    if r.status != 200:
                        raise RuntimeError(f"upsert: HTTP {r.status}")
                conn.close()
                took = time.monotonic() - t0
                if mode == "on":  # the task's next passes: until no advice is left (or 2 minutes)
                    for _ in range(240):
                        h = json.loads(urllib.request.urlopen(f"{url}/v1/tables/{table}/health?limit=1").read())
                        if not h["advice"]:
                            break
                        time.sleep(0.5)
                files = json.loads(urllib.request.urlopen(f"{url}/v1/tables/{table}/health?limit=1").read())
                end = self._table_costs(url, table, keys[30:60])
                out[mode] = {"fresh": fresh, "end": end, "commit_s": took, "data_files": files["data_files"],
                             "snapshots": files["snapshots"]}
            finally:
                p.terminate()
                p.wait()
                os.remove(os.path.join(self.work, "aux-striked.pid"))
        self.results["e14a"] = out

        def ratios(m):
            return {k: out[m]["end"][k] / out[m]["fresh"][k] for k in ("scan_s", "plan_ms", "delete_p50_ms")}
        on, off = ratios("on"), ratios("off")
        fmt = lambda r: f"scan {r['scan_s']:.2f}x, plan {r['plan_ms']:.2f}x, delete {r['delete_p50_ms']:.2f}x"
        worst = max(on.values())
        self.e14a_note = (f"history growth: {commits:,} 1-row commits took {out['on']['commit_s']:.0f} s with "
                          f"maintenance ({out['on']['data_files']} data files, {out['on']['snapshots']} snapshots "
                          f"left) and {out['off']['commit_s']:.0f} s without ({out['off']['data_files']} files, "
                          f"{out['off']['snapshots']} snapshots); fresh: scan {fmt_ms(out['on']['fresh']['scan_s'] * 1000)}, "
                          f"plan {fmt_ms(out['on']['fresh']['plan_ms'])}, delete p50 "
                          f"{fmt_ms(out['on']['fresh']['delete_p50_ms'])}")
        self.row("i14a", f"{n:,}-row table after {commits:,} 1-row commits, vs freshly loaded: scan, plan, "
                 f"delete p50", "the same without maintenance", fmt(off), fmt(on), f"worst {fmt_x(worst)}",
                 "≤1.2x each", "yes" if worst <= 1.2 else f"no ({fmt_x(worst)})")

    def e14b_compaction(self):
        z, R = self.z, self.R
        n = z["small"]
        deleted = [i for i in range(n) if i % 10 < 3]
        st, dk = [], []
        p, url = self.aux_striked(args=["--compact-interval", "0"])
        try:
            for r in range(R):
                table = f"cmp_{r}"
                self.engine("load", "--table", table, "--from", self.small_pq, "--batch", n)
                for lo in range(0, len(deleted), 50_000):
                    self._post(url, f"/v1/tables/{table}/changes",
                               {"changes": [{"op": "delete", "key": {"id": k}} for k in deleted[lo:lo + 50_000]]})
                t0 = time.monotonic()
                c = self._post(url, f"/v1/tables/{table}/compact", {"min_deleted_fraction": 0.3})
                secs = time.monotonic() - t0
                if c["rows_moved"] != n - len(deleted) or c["rows_dropped"] != len(deleted):
                    raise RuntimeError(f"compaction of {table}: {c}")
                st.append(c["rows_moved"] / secs)
        finally:
            p.terminate()
            p.wait()
            os.remove(os.path.join(self.work, "aux-striked.pid"))
        out = os.path.join(self.work, "rewrite.parquet")
        for r in range(R):
            d = self.duck("rewrite", "--file", self.small_pq, "--out", out, "--runs", 1, "--warmup", 1 if r == 0 else 0)
            dk.append((n - len(deleted)) / (d["ms"][0] / 1000))
        self.results["e14b"] = {"strike_rows_per_s": st, "duckdb_rows_per_s": dk}
        ratio = med(st) / med(dk)
        self.row("i14b", f"compaction of a {n:,}-row file with 30% deleted: live rows rewritten/s",
                 "DuckDB copy-on-write rewrite (COPY … WHERE, zstd)", spread(dk, fmt_num), spread(st, fmt_num),
                 fmt_x(ratio), "≥1.0x DuckDB", "yes" if ratio >= 1.0 else f"no ({fmt_x(ratio)})")

    def e14c_erasure(self):
        z = self.z
        n, hist = z["big"], z["era_history"]
        key = 4242
        p, url = self.aux_striked(args=["--compact-interval", "0"])
        try:
            self.engine("load", "--table", "era", "--from", self.big_pq, "--batch", z["big_batch"])
            for i in range(hist):
                k = (i * 7919 + 1) % n
                self._post(url, "/v1/tables/era/changes", {"changes": [{"op": "upsert", "row": {
                    "id": k, "user_id": 1, "amount": float(i), "status": "s", "payload": "p"}}]})

            def written():
                m = urllib.request.urlopen(f"{url}/metrics").read().decode()
                return int(float(re.search(r"^strike_bytes_written_total (\S+)$", m, re.M).group(1)))
            b0 = written()
            t0 = time.monotonic()
            rec = self._post(url, "/v1/tables/era/erasures", {"keys": [{"id": key}]})
            secs = time.monotonic() - t0
            bytes_w = written() - b0
            if rec.get("status") != "verified" or rec.get("rows_erased") != 1:
                raise RuntimeError(f"erasure: {rec}")
        finally:
            p.terminate()
            p.wait()
            os.remove(os.path.join(self.work, "aux-striked.pid"))
        out = os.path.join(self.work, "cow.parquet")
        d = self.duck("cow", "--file", self.big_pq, "--out", out, "--key", key, "--runs", 1, "--warmup", 1)
        self.results["e14c"] = {"strike": {"seconds": secs, "bytes_written": bytes_w, "receipt": rec}, "duckdb": d}
        self.e14c_note = (f"erasure: {rec['files_rewritten']} file rewritten, {rec['expired_snapshots']} snapshots "
                          f"expired, {rec['files_deleted']} blobs ({fmt_bytes(rec['bytes_deleted'])}) deleted, "
                          f"{len(rec['checks'])} checks passed; DuckDB's rewrite proves nothing and keeps no history")
        self.row("i14c", f"erase one key in a {n:,}-row table with {hist} snapshots of history: time; bytes written",
                 "DuckDB copy-on-write delete of the key", f"{fmt_ms(d['ms'][0])}; {fmt_bytes(d['bytes_written'])}",
                 f"{fmt_ms(secs * 1000)}; {fmt_bytes(bytes_w)}",
                 f"{fmt_x(d['ms'][0] / (secs * 1000))} the speed; {fmt_x(d['bytes_written'] / max(bytes_w, 1))} fewer bytes",
                 "report", "–")

    # ---- delete by filter at scale (issue 13, item 8)

    def e13_delete_where(self):
        """Delete e13_delete of e13_rows rows of a keyed table with one POST /delete {"filter"} on a
        striked of its own, while one client keeps deleting single keys of another table on the same
        striked: striked's peak RSS, the delete's time, the other table's latency before and during,
        then the checks (live rows, key index rows, strike fsck)."""
        z = self.z
        n, k, blk = z["e13_rows"], z["e13_delete"], z["e13_block"]
        if n % blk or k * blk % n:
            raise RuntimeError("e13 sizes: e13_rows must be a multiple of e13_block, and the fraction exact")
        src, _ = self.gen(n)
        small_src, _ = self.gen(z["small"])
        log(f"e13: loading {n:,} rows into e13 (requests of {z['e13_batch']:,} rows, bench_engine load)")
        load = self.engine("load", "--table", "e13", "--from", src, "--batch", z["e13_batch"], timeout=4 * 3600)
        log(f"  {load['rows']:,} rows in {load['seconds']:.0f} s ({load['rows_per_s']:,.0f} rows/s, "
            f"{load['requests']} commits)")
        self.engine("load", "--table", "e13s", "--from", small_src, "--batch", z["small"])
        # analyzed after both loads, as setup() does: with statistics from before e13s existed,
        # its single-key deletes plan `key = ANY` as a filter over all its keys (~0.7 s each)
        t0 = time.monotonic()
        self.psql("strike", "VACUUM ANALYZE strike.key_index_i8")
        vacuum_s = time.monotonic() - t0
        # the filter: in each block of blk ids (files hold ~blk rows, id == position), its first
        # k/n: every file is read and loses the same share of its rows, k rows in all
        part = blk * k // n

        def ranges(lo, hi):  # a balanced "or" of the blocks lo..hi-1
            if hi - lo == 1:
                b = lo * blk
                return {"type": "and", "left": {"type": "gt-eq", "term": "id", "value": b},
                        "right": {"type": "lt", "term": "id", "value": b + part}}
            mid = (lo + hi) // 2
            return {"type": "or", "left": ranges(lo, mid), "right": ranges(mid, hi)}
        flt = ranges(0, n // blk)

        p, url = self.aux_striked()
        port = int(url.rsplit(":", 1)[1])
        lat = []  # (start, ms, status) of the other table's single-key deletes
        stop = threading.Event()
        keys = list(range(z["small"]))
        random.Random(13).shuffle(keys)

        def other():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            for key in keys:
                if stop.is_set():
                    break
                body = json.dumps({"changes": [{"op": "delete", "key": {"id": key}}]})
                t = time.monotonic()
                try:
                    conn.request("POST", "/v1/tables/e13s/changes", body, {"Content-Type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    st = r.status if r.status != 200 or json.loads(data).get("deleted") == 1 else -1
                except OSError:
                    st = 0
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                lat.append((t, (time.monotonic() - t) * 1000, st))
                time.sleep(0.02)  # a steady client (about 40 requests/s), not a load generator
            conn.close()
        peak = [0]

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], proc_bytes(p.pid, "VmRSS"))
                time.sleep(0.01)
        th_o, th_s = threading.Thread(target=other), threading.Thread(target=sample)
        try:
            th_o.start()
            time.sleep(z["e13_before_s"])
            rss_before = proc_bytes(p.pid, "VmRSS")
            hwm_before = proc_bytes(p.pid, "VmHWM")
            th_s.start()
            load_before = open("/proc/loadavg").read().split()[:3]
            d0 = time.monotonic()
            try:
                res = self._post(url, "/v1/tables/e13/delete", {"filter": flt}, timeout=4 * 3600)
            except urllib.error.HTTPError as e:
                raise RuntimeError(f"POST /delete: HTTP {e.code}: {e.read()[:300]!r}")
            d1 = time.monotonic()
            load_after = open("/proc/loadavg").read().split()[:3]
            time.sleep(min(2, z["e13_before_s"]))  # a little after, so that "during" ends inside the run
        finally:
            stop.set()
            th_o.join()
            if th_s.ident is not None:
                th_s.join()
        hwm = proc_bytes(p.pid, "VmHWM")
        try:
            live = json.loads(urllib.request.urlopen(f"{url}/v1/tables/e13", timeout=600).read())["stats"]["live_rows"]
        finally:
            p.terminate()
            p.wait(timeout=60)
            os.remove(os.path.join(self.work, "aux-striked.pid"))
        keyrows = int(self.psql("strike", "SELECT count(*) FROM strike.key_index_i8 WHERE table_id = "
                                          "(SELECT id FROM strike.tables WHERE name = 'e13')").strip())
        f0 = time.monotonic()
        fs = subprocess.run([os.path.join(self.bin, "strike"), "fsck", "--catalog", self.catalog, "--data",
                             self.blobs], capture_output=True, text=True)
        fsck_s = time.monotonic() - f0
        before = [x for x in lat if x[0] < d0]
        during = [x for x in lat if d0 <= x[0] < d1]
        bad = lambda v: sum(1 for x in v if x[2] != 200)  # noqa: E731
        s503 = sum(1 for x in lat if x[2] == 503)
        ms = lambda v: [x[1] for x in v if x[2] == 200]  # noqa: E731
        if not ms(before) or not ms(during):
            raise RuntimeError(f"the other table's client: {len(before)} requests before, {len(during)} during")
        secs = d1 - d0
        out = {"rows": n, "deleted_expected": k, "load": load, "vacuum_analyze_s": vacuum_s, "response": res,
               "seconds": secs, "rows_per_s": k / secs, "rss_before": rss_before, "vmhwm_before": hwm_before,
               "peak_sampled": peak[0], "vmhwm": hwm, "peak": max(peak[0], hwm), "live_rows": live,
               "key_rows": keyrows, "fsck_rc": fs.returncode, "fsck_stdout": fs.stdout[-2000:],
               "fsck_summary": fs.stderr.strip()[-500:], "fsck_s": fsck_s,
               "other": {"before": {"n": len(before), "errors": bad(before), "p50_ms": med(ms(before)),
                                    "p99_ms": pctl(ms(before), 0.99)},
                         "during": {"n": len(during), "errors": bad(during), "p50_ms": med(ms(during)),
                                    "p99_ms": pctl(ms(during), 0.99)},
                         "503s": s503, "errors_total": bad(lat)},
               "loadavg_before": load_before, "loadavg_after": load_after}
        self.results["e13"] = out
        o = out["other"]
        checks = {"deleted": res.get("deleted") == k, "live": live == n - k, "key_rows": keyrows == n - k,
                  "fsck": fs.returncode == 0, "no_errors": o["errors_total"] == 0}
        out["checks"] = checks
        if not all(checks.values()):
            raise RuntimeError(f"e13 checks failed: {checks}; deleted {res.get('deleted')}, live {live}, key rows "
                               f"{keyrows}, fsck {fs.returncode} {fs.stderr.strip()[-200:]}, other table errors "
                               f"{o['errors_total']} (503s {s503})")
        mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
        self.e13_note = (f"delete by filter: {n:,} rows loaded by bench_engine load in {load['requests']} commits of "
                         f"{n // load['requests']:,} rows on average (whole row groups, one Parquet file each) in "
                         f"{load['seconds']:.0f} s ({fmt_num(load['rows_per_s'])} rows/s; VACUUM ANALYZE of the key "
                         f"index after it {vacuum_s:.0f} s); the filter matches the first {part:,} ids of every "
                         f"{blk:,} (every file is read and loses about {100 * k // n}% of its rows); striked RSS "
                         f"{mib(rss_before)} before the delete, peak {mib(out['peak'])} (VmHWM and VmRSS every 10 ms); "
                         f"the other table: {o['before']['n']} single-key deletes before, {o['during']['n']} during, "
                         f"{o['errors_total']} errors, {s503} 503s; after: {live:,} live rows, {keyrows:,} key index "
                         f"rows, strike fsck exit {fs.returncode} in {fsck_s:.0f} s ({fs.stderr.strip()}); load "
                         f"average {' '.join(load_before)} at the delete's start, {' '.join(load_after)} at its end")
        ratio = o["during"]["p50_ms"] / o["before"]["p50_ms"]
        ok = out["peak"] <= 512 * 2**20 and s503 == 0
        self.row("i13", f"delete {k:,} of {n:,} rows by one filter while another table serves single-key deletes: "
                 f"striked peak RSS; delete time (rows/s); the other table's p50 (p99)",
                 "the other table before the delete", f"{fmt_ms(o['before']['p50_ms'])} (p99 "
                 f"{fmt_ms(o['before']['p99_ms'])})",
                 f"{mib(out['peak'])}; {secs:.0f} s ({fmt_num(k / secs)} rows/s); during: "
                 f"{fmt_ms(o['during']['p50_ms'])} (p99 {fmt_ms(o['during']['p99_ms'])}), {o['errors_total']} errors",
                 f"p50 {fmt_x(ratio)} during", "peak ≤512 MiB, no 503s", "yes" if ok else
                 f"no ({'peak ' + mib(out['peak']) if out['peak'] > 512 * 2**20 else ''}"
                 f"{' ' if out['peak'] > 512 * 2**20 and s503 else ''}{f'{s503} 503s' if s503 else ''})")

    # ---- memory per request body (issue 28, item 5)

    # The factor each shape's route is charged (server/admit.h), by the constant's name.
    RSS_CHARGE = {"changes": "CHANGES", "changes_tiny": "CHANGES", "changes_del_wide": "CHANGES",
                  "json_zeros": "CHANGES", "cdc_null": "CDC", "cdc_null_1mib": "CDC", "cdc_tiny": "CDC",
                  "cdc_del_wide": "CDC", "cdc_schema": "CDC", "cdc_zeros": "CDC", "grpc_tiny": "GRPC_CHANGES",
                  "grpc_del_wide": "GRPC_CHANGES", "grpc_empty": "GRPC_CHANGES", "grpc_cdc_null": "GRPC_CDC",
                  "grpc_unknown": "GRPC", "grpc_erase_keys": "GRPC_ERASE", "erase_keys": "ERASE",
                  "delete_in": "JSON", "erase_filter": "ERASE"}

    def e28_body_rss(self):
        """Every shape of tests/bench/body_rss.py on a fresh striked each (database `rss` of this
        run's PostgreSQL): the worst peak RSS growth per body byte, and whether each route's
        admission charge (server/admit.h) covers its shapes."""
        z = self.z
        if not body_rss.have_grpc():
            raise NotAvailable("python3-grpcio is missing (the gRPC shapes)")
        src = open(os.path.join(SRC, "server", "admit.h")).read()
        factor = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define ADMIT_X_(\w+)\s+(\d+)u", src)}
        names = z["rss_shapes"] or [n for n in body_rss.SHAPES if n != "many"]
        self.psql("peer", "DROP DATABASE IF EXISTS rss")
        self.psql("peer", "CREATE DATABASE rss")
        catalog = f"postgresql://postgres@/rss?host={self.pg}"
        work = os.path.join(self.work, "rss")
        os.makedirs(work, exist_ok=True)
        out = []
        for n in names:
            shape = body_rss.make_shape(n, z["rss_body_mib"], z["rss_wide_mib"], z["rss_erase_keys"])
            r = body_rss.run_shape(self.build, catalog, work, shape, ["--max-body", "1G"],
                                   pidfile=os.path.join(self.work, "aux-striked.pid"), log=log)
            r["charge"] = factor.get(self.RSS_CHARGE[n])
            out.append(r)
            log(f"  {n}: {r['body_bytes']:,} bytes, {r['units']:,} {r['unit']}: peak RSS +{r['delta_kib'] / 1024:.1f} "
                f"MiB ({r['expansion']:.2f}x the body; charged {r['charge']}x)")
            if r["failed"]:
                raise RuntimeError(f"body_rss shape {n}: {r['failed'][0]}")
        self.results["e28"] = out
        bodies = [r for r in out if r["shape"] != "erase_filter"]
        # the goal, per shape: growth <= 2x the body + 64 MiB; the row shows the worst ratio among
        # the shapes that miss it (else among all)
        over = [r for r in bodies if r["delta_kib"] * 1024 > 2 * r["body_bytes"] + 64 * 2**20]
        worst = max(over or bodies, key=lambda r: r["expansion"])
        uncovered = [r["shape"] for r in bodies if r["charge"] is None or r["expansion"] > r["charge"]]
        era = next((r for r in out if r["shape"] == "erase_filter"), None)
        mib = lambda k: f"{k / 1024:.1f} MiB"  # noqa: E731
        self.e28_note = ("peak RSS growth per body byte, each shape on a fresh striked (tests/bench/body_rss.py; "
                         "VmHWM and VmRSS every 10 ms; the row: the worst of the shapes that miss the goal): "
                         + "; ".join(f"{r['shape']} {r['expansion']:.2f}x ({mib(r['delta_kib'])} for "
                                     f"{r['body_bytes'] / 2**20:.2f} MiB, charged {r['charge']}x)" for r in bodies)
                         + (f"; an erasure by filter of {era['units']:,} keys: {mib(era['delta_kib'])} "
                            f"({era['bytes_per_unit']:.0f} B a key)" if era else "")
                         + (f"; shapes whose growth passes their route's charge: {', '.join(uncovered)}"
                            if uncovered else "; every route's charge (server/admit.h) covers its shapes"))
        self.row("i28", "peak RSS growth of striked per request body byte, the worst of "
                 f"{len(bodies)} body shapes (bodies up to {z['rss_body_mib']} MiB); an erasure by filter",
                 "the route's admission charge (server/admit.h)", f"{worst['charge']}x",
                 f"{worst['shape']}: {worst['expansion']:.2f}x ({mib(worst['delta_kib'])} for "
                 f"{worst['body_bytes'] / 2**20:.2f} MiB)"
                 + (f"; erasure of {era['units']:,} keys: {mib(era['delta_kib'])}" if era else ""),
                 f"{worst['expansion']:.2f}x the body ({worst['expansion'] / worst['charge']:.2f} of its charge)"
                 if worst["charge"] else f"{worst['expansion']:.2f}x the body",
                 "≤2x the body + 64 MiB", "yes" if not over and not uncovered else
                 f"no ({len(over)} of {len(bodies)} shapes over it, worst {worst['expansion']:.1f}x"
                 f"{'; over the charge: ' + ', '.join(uncovered) if uncovered else ''})")

    def e15_cdc(self):
        script = os.path.join(HERE, "cdc_bench.py")
        if not os.path.exists(script):
            raise NotAvailable("tests/bench/cdc_bench.py is missing")
        out = run([sys.executable, script, "--url", self.url, "--rounds", str(self.R), "--batches",
                   str(self.z["cdc_batches"]), "--batch", "200", "--rows", str(self.z["cdc_rows"])])
        r = json.loads(out.strip().splitlines()[-1])
        self.results["e15"] = r
        c, p = r["cdc_rows_per_s"], r["changes_rows_per_s"]
        self.row("i15", "CDC endpoint, batches of 200 Debezium events with schema, half updates: rows/s",
                 "the same rows through POST /changes", spread(p, fmt_num), spread(c, fmt_num),
                 fmt_x(r["ratio"]), "≥0.8x /changes", "yes" if r["ratio"] >= 0.8 else f"no ({fmt_x(r['ratio'])})")

    def e7_grpc(self):
        """GetDeletionVector, explicit snapshot, 64 calls in flight: striked against grpc_dv_peer (the least
        server on the same gRPC core, answering the same bytes from memory), the same client (bench_grpc_dv),
        alternating inside each run; HTTP (wrk) on the same DV as a note."""
        script = os.path.join(HERE, "bench_grpc_dv.py")
        for b in ("bench_grpc_dv", "grpc_dv_peer"):
            if not os.path.exists(script) or not os.path.exists(os.path.join(self.bin, b)):
                raise NotAvailable(f"{b} or bench_grpc_dv.py is missing")
        runs = []
        for r in range(self.R):
            db = f"grpcbench{r}"
            self.psql("postgres", f"DROP DATABASE IF EXISTS {db}")
            self.psql("postgres", f"CREATE DATABASE {db}")
            env = dict(self.env)
            env.pop("STRIKE_BENCH_PERF", None)
            if perfrec.enabled() and r == 0:  # profile (tests/bench/profile.sh): the first round's gRPC calls
                env["STRIKE_BENCH_PERF_OUT"] = os.path.join(perfrec.enabled(), "e7.perf.data")
            out = run(["/usr/bin/python3", script, "--build", self.build, "--catalog",
                       f"postgresql://postgres@/{db}?host={self.pg}", "--rows", str(self.z["grpc_rows"]),
                       "--seconds", str(self.z["grpc_seconds"]), "--rounds", "2"], env=env)
            lines = {}
            for m in re.finditer(r"^(grpc|peer|http)\s+(explicit|current)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)",
                                 out, re.M):
                lines[f"{m.group(1)}_{m.group(2)}"] = {"calls_s": float(m.group(3)), "p50_us": float(m.group(4)),
                                                      "p99_us": float(m.group(5)), "errors": int(m.group(6))}
            if len(lines) != 5:
                raise RuntimeError(f"bench_grpc_dv.py printed {len(lines)} of 5 result lines")
            runs.append({"lines": lines, "output": out})
            self.psql("postgres", f"DROP DATABASE IF EXISTS {db}")
        self.results["e7"] = {"runs": runs}

        def col(who, k):
            return [x["lines"][who][k] for x in runs]
        g, p, h = col("grpc_explicit", "calls_s"), col("peer_explicit", "calls_s"), col("http_explicit", "calls_s")
        g99, p99 = med(col("grpc_explicit", "p99_us")) / 1000, med(col("peer_explicit", "p99_us")) / 1000
        h99 = med(col("http_explicit", "p99_us")) / 1000
        errors = sum(sum(x["lines"][k]["errors"] for k in x["lines"]) for x in runs)
        ratio, pr = med(g) / med(p), g99 / p99
        self.e7_note = ("client bench_grpc_dv (C core, 4 connections, 64 calls in flight) on striked and on "
                        "grpc_dv_peer, alternating; the same DV over HTTP (wrk -t2 -c64): "
                        f"{spread(h, fmt_num)} req/s (p99 {fmt_ms(h99)}), strike's gRPC {fmt_x(med(g) / med(h))} of it; "
                        "at the current snapshot (a catalog round trip per call): gRPC "
                        f"{spread(col('grpc_current', 'calls_s'), fmt_num)}, HTTP "
                        f"{spread(col('http_current', 'calls_s'), fmt_num)} calls/s")
        ok = ratio >= 0.9 and pr <= 1.2 and errors == 0
        self.row("i7", "GetDeletionVector, 64 calls in flight, explicit snapshot: calls/s (p99)",
                 "grpc_dv_peer: the same bytes from memory on the same gRPC core",
                 f"{spread(p, fmt_num)} (p99 {fmt_ms(p99)})", f"{spread(g, fmt_num)} (p99 {fmt_ms(g99)})",
                 f"{fmt_x(ratio)} calls/s; p99 {fmt_x(pr)}", "≥0.9x peer calls/s, p99 ≤1.2x",
                 "yes" if ok else f"no ({fmt_x(ratio)}, p99 {fmt_x(pr)}" + (f", {errors} errors)" if errors else ")"))

    # ================================================================ report

    def machine(self):
        mem = 0
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
        return {"nproc": os.cpu_count(), "memory": fmt_bytes(mem), "kernel": platform.release(),
                "loadavg": open("/proc/loadavg").read().split()[:3]}

    def table(self):
        return table_md(self.rows)

    def notes(self, start, end):
        n = []
        m, z = self.meta, self.z
        n.append(f"Machine: {m['nproc']} cores, {m['memory']} RAM, Linux {m['kernel']}; {self.started} ({self.mode} "
                 f"mode, {self.R} rounds, strike and peer alternating each round); load average "
                 f"{' '.join(start)} at the start, {' '.join(end)} at the end (a shared, noisy machine: compare the "
                 f"ratios, taken inside this run). Build: {self.build_type}.")
        n.append("Clients: (1) strike through the engine API in-process (bench_engine, C), DuckDB in-process "
                 "(@duckdb/node-api, COPY … WHERE id <> k TO a new zstd file); (2)(3) both sides through node, one "
                 "kept-alive connection: strike POST /v1/tables/{t}/changes over HTTP (node http), PostgreSQL "
                 "through node `pg` on the unix socket, autocommit; the same keys and rows on both; (4) wrk -t2 -c64 "
                 "on both (tests/bench/http_dv_bench.sh); (5)(6) strike POST /scan read to the end by curl over "
                 "HTTP, DuckDB in-process through node on the same Parquet file and the same positions "
                 "(tests/bench/http_scan_duckdb.cjs writes the NDJSON to a file); (7)(9) the engine API in-process "
                 "(bench_engine); (9)'s peer is libpq from C with the engine's own binary int8[] parameter; (8) "
                 "curl streams POST /scan while /proc/PID/status is read.")
        n.append("PostgreSQL 15 runs with durable defaults (fsync, synchronous_commit, full_page_writes on) and the "
                 "peers' memory settings (tests/lib/pgfixture.sh, PGFIXTURE_DURABLE=1); it holds strike's catalog "
                 "and the peer's table, and both were VACUUM ANALYZEd after the load. strike's tables were loaded "
                 "from the Parquet file DuckDB wrote (tests/peers/lib/gen.mjs) through the engine's commit path; "
                 "the PostgreSQL table from the CSV DuckDB wrote of the same rows.")
        for k in ("m1_note", "m2_note", "m5_note", "m6_note", "m7_note", "m8_note", "m9_note", "e7_note"):
            if getattr(self, k, None):
                n.append(("(" if k[0] == "m" else "(issue ") + k[1] + ") " + getattr(self, k) + ".")
        if getattr(self, "e13_note", None):
            n.append("(issue 13) " + self.e13_note + ".")
        for k in ("e14a_note", "e14c_note"):
            if getattr(self, k, None):
                n.append("(issue 14) " + getattr(self, k) + ".")
        if getattr(self, "e28_note", None):
            n.append("(i28) " + self.e28_note + ".")
        if getattr(self, "e31_note", None):
            n.append(self.e31_note + ".")
        if getattr(self, "m3_engine", None):
            n.append(f"(3) strike's commit path alone (bench_engine ingest, engine API, the same table and batch "
                     f"shape): {spread(self.m3_engine, fmt_num)} rows/s.")
        if self.mode == "quick":
            n.append("Quick mode: tiny sizes and 2 rounds, to prove the harness works; the numbers mean nothing "
                     "(under `make test` the binaries are ASan+UBSan builds).")
        return n

    # ---- the Iceberg export and REST catalog (issue 29)
    def _commit_one(self, conn, table, k, amount):
        body = json.dumps({"changes": [{"op": "upsert", "row": {
            "id": k, "user_id": k % 1000, "amount": float(amount), "status": "s", "payload": "p"}}]})
        conn.request("POST", f"/v1/tables/{table}/changes", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        out = r.read()
        if r.status != 200:
            raise RuntimeError(f"upsert into {table}: HTTP {r.status} {out[:200]!r}")
        return json.loads(out)

    def _metric(self, url, name):
        text = urllib.request.urlopen(f"{url}/metrics").read().decode()
        m = re.search(rf"^{name} (\d+)", text, re.M)
        return int(m.group(1)) if m else 0

    def _ice_table(self, url, table, files):
        """A table of `files` data files (one per 1-row commit), exported once (loadTable)."""
        self._post(url, "/v1/tables", {"name": table, "primary_key": ["id"], "columns": [
            {"name": "id", "type": "long", "required": True}, {"name": "user_id", "type": "long"},
            {"name": "amount", "type": "double"}, {"name": "status", "type": "string"},
            {"name": "payload", "type": "string"}]})
        conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=60)
        for i in range(files):
            self._commit_one(conn, table, i, i)
        conn.close()
        t0 = time.monotonic()
        urllib.request.urlopen(f"{url}/iceberg/v1/namespaces/default/tables/{table}").read()
        return time.monotonic() - t0

    def e29_iceberg(self):
        z, R = self.z, self.R
        n = z["ice_files"]
        p, url = self.aux_striked(args=["--compact-interval", "0", "--iceberg-interval", "0"])
        try:
            first = self._ice_table(url, "ice10k", n)
            uuid = self.http_get(url, "/v1/tables/ice10k")["uuid"]
            meta = os.path.join(self.blobs, "tables", uuid, "metadata")
            conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=60)
            rng = random.Random(29)
            secs, written, files = [], [], []
            for r in range(R):
                # a one-row commit (an update: a DV on an old file and a new data file), then its export
                self._commit_one(conn, "ice10k", rng.randrange(n), -r)
                before_b, before_f = self._metric(url, "strike_bytes_written_total"), set(os.listdir(meta))
                t0 = time.monotonic()
                urllib.request.urlopen(f"{url}/iceberg/v1/namespaces/default/tables/ice10k").read()
                secs.append(time.monotonic() - t0)
                written.append(self._metric(url, "strike_bytes_written_total") - before_b)
                after_f = set(os.listdir(meta))
                files.append(len(after_f - before_f))
            # loadTable of an unchanged table (served from the cache), one kept-alive client
            lat = []
            for _ in range(z["ice_loads"]):
                t0 = time.monotonic()
                conn.request("GET", "/iceberg/v1/namespaces/default/tables/ice10k")
                rr = conn.getresponse()
                rr.read()
                lat.append((time.monotonic() - t0) * 1000)
            conn.close()
            # REST planTableScan against strike's own /plan: a table of m files, a DV on most
            m = z["ice_plan_files"]
            self._ice_table(url, "ice1k", m)
            conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=60)
            for k in range(0, m, 2):  # updates: a DV on every other file, plus new files
                self._commit_one(conn, "ice1k", k, -1)
            conn.close()
            urllib.request.urlopen(f"{url}/iceberg/v1/namespaces/default/tables/ice1k").read()
            rest, own = [], []
            for _ in range(max(R, 3)):
                t0 = time.monotonic()
                self._post(url, "/v1/tables/ice1k/plan", {})
                own.append((time.monotonic() - t0) * 1000)
                t0 = time.monotonic()
                res = self._post(url, "/iceberg/v1/namespaces/default/tables/ice1k/plan", {})
                rest.append((time.monotonic() - t0) * 1000)
                if res.get("status") != "completed":
                    raise RuntimeError(f"planTableScan: {res}")
        finally:
            p.terminate()
            p.wait()
            os.remove(os.path.join(self.work, "aux-striked.pid"))
        self.results["e29"] = {"first_export_s": first, "export_s": secs, "export_bytes": written,
                               "export_files": files, "load_ms": lat, "rest_plan_ms": rest, "own_plan_ms": own}
        wb = med(written)
        self.row("i29a", f"Iceberg export after a one-row commit (an update) on a table of {n:,} data files: "
                 "bytes and files written, time", "the change's own size", f"first export of the table "
                 f"{fmt_ms(first * 1000)}", f"{fmt_bytes(wb)} in {med(files):.0f} files, {spread([x * 1000 for x in secs], fmt_ms)}",
                 fmt_bytes(wb), "O(the change), under 1 MiB", "yes" if wb < (1 << 20) else f"no ({fmt_bytes(wb)})")
        ratio = med(rest) / med(own)
        self.row("i29b", f"REST planTableScan of a {m:,}-file table with DVs vs strike's own /plan: time",
                 "POST /v1/tables/{t}/plan", spread(own, fmt_ms), spread(rest, fmt_ms), fmt_x(ratio), "≤1.5x",
                 "yes" if ratio <= 1.5 else f"no ({fmt_x(ratio)})")
        self.row("i29c", "loadTable of an unchanged table (cached), one kept-alive client: p50 (p99)", "–", "–",
                 f"{fmt_ms(med(lat))} (p99 {fmt_ms(pctl(lat, 99))})", "–", "report", "–")

    def http_get(self, url, path):
        return json.loads(urllib.request.urlopen(url + path).read())

    def e16_cli_load(self):
        """strike load of NDJSON rows (chunks of 10,000) vs curl posting the same chunk bodies from a
        shell loop, each into a fresh keyed table, alternating; the client must not be the bottleneck."""
        z, R = self.z, self.R
        n, batch = z["small"], 10_000
        d = os.path.join(self.work, "e16")
        os.makedirs(d, exist_ok=True)
        nd = os.path.join(d, "rows.ndjson")
        lines = ['{"id":%d,"user_id":%d,"amount":%d.%02d,"status":"%s"}' % (i, i % 1000, i % 10000, i % 100,
                                                                             "NEW" if i % 3 else "PAID")
                 for i in range(n)]
        with open(nd, "w") as f:
            f.write("\n".join(lines) + "\n")
        chunks = []  # the bodies strike load sends, byte for byte
        for k in range(0, n, batch):
            p = os.path.join(d, f"chunk-{k // batch}.json")
            with open(p, "w") as f:
                f.write('{"changes":[' + ",".join('{"op":"upsert","row":' + x + "}" for x in lines[k:k + batch])
                        + "]}")
            chunks.append(p)
        del lines
        script = os.path.join(d, "curl.sh")
        with open(script, "w") as f:
            f.write('set -e\nfor c in "$@"; do curl -sS -f -o /dev/null -X POST -H "Content-Type: application/json" '
                    '--data-binary @"$c" "$URL/v1/tables/$T/changes"; done\n')
        cols = [{"name": "id", "type": "long", "required": True}, {"name": "user_id", "type": "long", "required": True},
                {"name": "amount", "type": "double"}, {"name": "status", "type": "string"}]
        rates = {"curl": [], "strike": []}
        for r in range(R):
            for who in ("curl", "strike") if r % 2 == 0 else ("strike", "curl"):
                t = f"e16_{who}_{r}"
                self.http("POST", "/v1/tables", {"name": t, "columns": cols, "primary_key": ["id"]})
                t0 = time.monotonic()
                if who == "curl":
                    run(["bash", script, *chunks], env=dict(self.env, URL=self.url, T=t))
                else:
                    run([os.path.join(self.bin, "strike"), "load", t, nd, "--batch", str(batch), "-q",
                         "--server", self.url], env=self.env)
                el = time.monotonic() - t0
                live = self.http("GET", f"/v1/tables/{t}")["stats"]["live_rows"]
                if live != n:
                    raise RuntimeError(f"{who} loaded {live} rows of {n}")
                rates[who].append(n / el)
                self.http("DELETE", f"/v1/tables/{t}")
        self.results["e16"] = rates
        ratio = med(rates["strike"]) / med(rates["curl"])
        self.row("i16", f"strike load of {n:,} NDJSON rows in chunks of {batch:,}: rows/s",
                 "curl posting the same chunks (shell loop)", spread(rates["curl"], fmt_num),
                 spread(rates["strike"], fmt_num), fmt_x(ratio), "≥0.9x curl",
                 "yes" if ratio >= 0.9 else f"no ({fmt_x(ratio)})")

    def e31_delta_dvs(self):
        """Rows i31a-b (issue 31): deletes and CDC upserts on a file whose DV holds 30% of its rows,
        against the same on a fresh file. Four tables loaded from the same rows in one file each
        (bench_engine load in one request): e31d_big/e31d_new for the deletes, e31i_big/e31i_new
        for the ingest; the _big ones then lose 30% of their rows at random (the keys of a window of
        keyed_client's permutation, deleted through POST /changes in requests of 10,000 keys).
        Each round runs both sides, in alternating order, one client each (keyed_client.mjs, as
        rows 2 and 3); the main striked has no background maintenance, so no fold runs but the
        ones the commits make."""
        z, R = self.z, self.R
        n = z["small"]
        src = self.gen(n)[0]
        P = 2654435761
        perm = lambda i: (i % n) * P % n  # noqa: E731 - keyed_client.mjs' permKey
        for table in ("e31d_big", "e31d_new", "e31i_big", "e31i_new"):
            log(f"e31: loading {table} ({n:,} rows, one file)")
            self.engine("load", "--table", table, "--from", src, "--batch", n)
        cut = int(n * 0.3)
        lo = n - cut  # the window [lo, n) of the permutation: 30% of the keys, random positions
        for table in ("e31d_big", "e31i_big"):
            log(f"e31: deleting {cut:,} random rows of {table}")
            for a in range(lo, n, 10_000):
                keys = [perm(i) for i in range(a, min(a + 10_000, n))]
                r = self.http("POST", f"/v1/tables/{table}/changes",
                              {"changes": [{"op": "delete", "key": {"id": k}} for k in keys]})
                if r["deleted"] != len(keys):
                    raise RuntimeError(f"e31: {table} deleted {r['deleted']} of {len(keys)}")
        self.psql("strike", "VACUUM ANALYZE")
        s = z["m2_samples"]
        kc = ["keyed_client.mjs", "--modules", self.peers]
        nb, b = max(1, z["m3_batches"] * 2 // 5), z["m3_batch"]
        per = nb * b // 2
        dels = {"big": [], "new": []}
        ings = {"big": [], "new": []}
        for r in range(-1, R):  # round -1: warm-up, not counted
            doff = lo - (R + 2) * (s + 2) + (r + 1) * (s + 2)  # delete windows below the deleted 30%
            ioff = (r + 1) * per  # update windows from 0 (kept clear of the delete windows)
            sides = ("big", "new") if r % 2 == 0 else ("new", "big")
            for side in sides:
                d = self.node(*kc, "delete1", "--rows", n, "--samples", s, "--warmup", 2, "--target", "strike",
                              "--url", self.url, "--table", f"e31d_{side}", "--offset", doff)
                if r >= 0:
                    dels[side].append(d)
            for side in sides:
                i = self.node(*kc, "ingest", "--rows", n, "--batches", nb, "--batch", b, "--target", "strike",
                              "--url", self.url, "--table", f"e31i_{side}", "--offset", ioff,
                              "--new-base", 10**9 + (r + 1) * per, "--salt", r + 1)
                if r >= 0:
                    ings[side].append(i)
        self.results["e31"] = {"deletes": dels, "ingest": ings}
        b50 = [med(x["ms"]) for x in dels["big"]]
        f50 = [med(x["ms"]) for x in dels["new"]]
        b99 = pctl([v for x in dels["big"] for v in x["ms"]], 0.99)
        f99 = pctl([v for x in dels["new"] for v in x["ms"]], 0.99)
        rd = med(b50) / med(f50)
        self.row("i31a", f"single-key delete p50 (p99), one client, on a {n:,}-row file whose DV holds 30% of "
                 f"its rows vs a fresh file", "the same deletes on a fresh file",
                 f"{spread(f50, fmt_ms)} (p99 {fmt_ms(f99)})", f"{spread(b50, fmt_ms)} (p99 {fmt_ms(b99)})",
                 f"{fmt_x(rd)} the fresh file's p50", "≤1.2x", "yes" if rd <= 1.2 else f"no ({fmt_x(rd)})")
        bi = [x["rows_per_s"] for x in ings["big"]]
        fi = [x["rows_per_s"] for x in ings["new"]]
        ri = med(bi) / med(fi)
        self.row("i31b", f"CDC ingest, batches of {b:,} upserts (half updates), into a {n:,}-row file whose DV "
                 f"holds 30% of its rows vs a fresh file: rows/s", "the same batches into a fresh file",
                 spread(fi, fmt_num), spread(bi, fmt_num), fmt_x(ri), "≥0.9x",
                 "yes" if ri >= 0.9 else f"no ({fmt_x(ri)})")
        self.e31_note = (f"(i31) the DV-heavy tables lost {cut:,} of {n:,} rows at random (30%) before the "
                         f"measures, through POST /changes in requests of 10,000 keys; each round runs the "
                         f"DV-heavy and the fresh table alternately (order swapped every round), {s} deletes and "
                         f"{nb} batches of {b:,} upserts a side; the fresh tables are those the rounds write "
                         f"(their DVs grow by {nb * b // 2:,} updated rows a round); no background maintenance")

    def main(self):
        self.started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        self.meta = self.machine()
        self.build_type = "?"
        cache = os.path.join(self.build, "CMakeCache.txt")
        if os.path.exists(cache):
            m = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", open(cache).read(), re.M)
            san = re.search(r"^STRIKE_SANITIZE:\w+=ON$", open(cache).read(), re.M)
            self.build_type = (m.group(1) if m else "?") + (" + ASan/UBSan" if san else "")
        start_load = self.meta["loadavg"]
        t0 = time.monotonic()
        only = set(self.a.only.split(",")) if self.a.only else None
        self.only = only
        if only is None or only - {"e13", "e28", "e31"}:  # e13, e28 and e31 load tables of their own
            self.setup()
        plan = [
            ("m9", 9, "key lookups", self.m9_lookups),
            ("m1", 1, "1-row delete in the big table", self.m1_delete_big),
            ("m2", 2, "single-key delete latency", self.m2_delete_latency),
            ("m3", 3, "CDC ingest", self.m3_ingest),
            ("m5", 5, "scan 10% vs 0% deleted", self.m5_scan_ratio),
            ("m6", 6, "scan to NDJSON", self.m6_scan_ndjson),
            ("m8", 8, "peak RSS during a scan", self.m8_rss),
            ("m7", 7, "8 writers vs 1", self.m7_writers),
            ("m4", 4, "DV fetch vs nginx", self.m4_dv_fetch),
            ("e3", "i3", "DV codecs vs npm roaring", self.e3_dv_codecs),
            ("e4", "i4", "Parquet vs DuckDB", self.e4_parquet),
            ("e7", "i7", "gRPC DV fetch vs a peer on the same core", self.e7_grpc),
            ("e14a", "i14a", "history growth with and without maintenance", self.e14a_history),
            ("e14b", "i14b", "compaction throughput vs DuckDB", self.e14b_compaction),
            ("e14c", "i14c", "erasure of one key vs DuckDB", self.e14c_erasure),
            ("e15", "i15", "CDC endpoint vs /changes", self.e15_cdc),
            ("e16", "i16", "strike load vs curl", self.e16_cli_load),
            ("e28", "i28", "peak memory per request body, by shape", self.e28_body_rss),
            ("e29", "i29a", "Iceberg export, REST plan, loadTable", self.e29_iceberg),
            ("e31", "i31a", "deletes and CDC ingest on a file with a large DV vs a fresh one", self.e31_delta_dvs),
            # last: its 50,000,000-row table, 40% deleted, would be the first work of
            # the maintenance task of any striked a later measure starts (i14a's)
            ("e13", "i13", "delete by filter at scale", self.e13_delete_where),
        ]
        peers = {1: "DuckDB copy-on-write rewrite", 2: "PostgreSQL DELETE … WHERE id = $1",
                 3: "PostgreSQL INSERT … ON CONFLICT DO UPDATE", 4: "nginx serving the same bytes",
                 5: "DuckDB anti-join on file_row_number vs plain scan", 6: "DuckDB COPY … TO (FORMAT JSON)",
                 7: "strike, 1 writer", 8: "fresh striked, smaller scan", 9: "PostgreSQL raw `id = ANY($1)`",
                 "i3": "npm roaring", "i4": "DuckDB", "i7": "grpc_dv_peer (same gRPC core, bytes from memory)",
                 "i13": "the other table before the delete", "i14a": "the same without maintenance",
                 "i14b": "DuckDB copy-on-write rewrite",
                 "i14c": "DuckDB copy-on-write delete",
                 "i15": "the same rows through POST /changes", "i16": "curl posting the same chunks",
                 "i28": "the route's admission charge",
                 "i29a": "the change's own size", "i31a": "the same deletes on a fresh file"}
        goals = {1: "≥1000x faster; ≥100,000x fewer bytes", 2: "p50 ≤2x PostgreSQL", 3: "≥1.5x PostgreSQL",
                 4: "≥1x nginx req/s, p99 ≤ nginx", 5: "≤1.05x", 6: "≥1.0x DuckDB", 7: "≥0.7x 1 writer, nothing lost",
                 8: "bounded: ≤1.25x the smaller scan's peak", 9: "report (PostgreSQL is the bound)",
                 "i3": "compare", "i4": "compare", "i7": "≥0.9x peer calls/s, p99 ≤1.2x",
                 "i13": "peak ≤512 MiB, no 503s",
                 "i14a": "≤1.2x each", "i14b": "≥1.0x DuckDB", "i14c": "report", "i15": "≥0.8x /changes",
                 "i16": "≥0.9x curl", "i28": "≤2x the body + 64 MiB",
                 "i29a": "O(the change), under 1 MiB", "i31a": "≤1.2x"}
        for key, num, title, fn in plan:
            if only and key not in only:
                continue
            self.measure(key, num, title, peers[num], goals[num], fn)
        order = {n: i for i, n in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, "i3", "i4", "i7", "i13", "i14a", "i14b", "i14c",
                                             "i15", "i16", "i28", "i29a", "i29b", "i29c", "i31a",
                                             "i31b"])}
        self.rows.sort(key=lambda r: order[r["num"]])
        end_load = open("/proc/loadavg").read().split()[:3]
        commit = git_commit()
        # the previous run's ratios (latest.json, history.json) before they are replaced
        prev = bench_history.previous(self.out, self.mode)
        prev_notes = bench_history.compare(prev, self.rows)
        table = self.table()
        notes = self.notes(start_load, end_load) + prev_notes
        profiled = perfrec.enabled() is not None
        if profiled:
            notes.append("Profiled run (tests/bench/profile.sh: perf attached to striked): its ratios do not "
                         "become the previous run's; the next run compares with the run before this one.")
        text = table + "\n\n" + "\n".join(f"- {x}" for x in notes) + "\n"
        print(text)
        doc = {"date": self.started, "commit": commit, "profiled": profiled, "mode": self.mode, "sizes": self.z,
               "machine": self.meta,
               "loadavg_end": end_load, "build": self.build, "build_type": self.build_type,
               "seconds": time.monotonic() - t0, "results": self.results, "rows": self.rows, "table": table,
               "notes": notes}
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, f"run-{stamp}.json"), "w") as f:
            json.dump(doc, f, indent=1)
        shutil.copyfile(os.path.join(self.out, f"run-{stamp}.json"), os.path.join(self.out, "latest.json"))
        with open(os.path.join(self.out, "latest.md"), "w") as f:
            f.write(text)
        # a profiled run's rows are perf's too: history keeps the run before it (latest.json is skipped by
        # bench_history.previous once it says "profiled")
        bench_history.record(self.out, self.mode, prev, [] if profiled else self.rows, self.started, commit)
        log(f"raw runs: {self.out}/run-{stamp}.json (and latest.json, latest.md); {time.monotonic() - t0:.0f} s")
        # the harness's own check: all nine measures have a row with numbers or "not available"
        nums = {r["num"] for r in self.rows if isinstance(r["num"], int)}
        if not only and nums != set(range(1, 10)):
            log(f"missing rows: {sorted(set(range(1, 10)) - nums)}")
            return 1
        return 1 if self.failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--pg-host", required=True)
    ap.add_argument("--http-port", required=True, type=int)
    ap.add_argument("--striked-pid", required=True, type=int)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated measure keys (m1..m9, e3, e4, e7, e14a, e14b, e14c, e15, e16, e29, e31), for development")
    sys.exit(Bench(ap.parse_args()).main())


if __name__ == "__main__":
    main()
