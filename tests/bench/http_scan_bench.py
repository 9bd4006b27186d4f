#!/usr/bin/env python3
"""http_scan_bench.py - scan cost of deletion vectors, and scan-to-NDJSON speed vs DuckDB.

    /usr/bin/python3 tests/bench/http_scan_bench.py BUILD_DIR [--rows 1000000] [--runs 5]

BUILD_DIR should be a Release build with the DuckDB peer installed
(scripts/test-peers.sh BUILD_DIR). Starts a throw-away PostgreSQL
(tests/lib/pgfixture.sh) and BUILD_DIR/bin/striked, then:

  load    one POST /changes with ROWS upserts (the peers' test table: id,
          user_id, amount, status, payload of ~105 B), so one Parquet file
          (snapshot 1, nothing deleted); then one POST /changes deleting a
          seeded 10% sample of the keys (snapshot 2, one DV on that file)
  A       POST /scan at snapshot 1 vs snapshot 2, whole rows and `id` alone,
          timed end to end with curl (to /dev/null), runs interleaved:
          cost ratio 10%-deleted / 0%-deleted
  B       rows/s of the snapshot-2 scan (NDJSON over HTTP) next to DuckDB
          reading the same Parquet file, dropping the same positions (the DV
          fetched over HTTP and decoded by tests/integration/http_roaring.py)
          and writing the same rows as NDJSON (COPY ... (FORMAT JSON)) to a
          file; the positions are loaded before the clock starts

Prints every run and the medians. Servers started here are stopped by pid.
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import http_roaring  # noqa: E402

STATUS = ["NEW", "PAID", "SHIPPED", "CANCELLED"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body, timeout=3600):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"{}")


def rows_json(n):
    """The peers' test table (lib/gen.mjs shape): ~105 B JSON-like payload with a 32-hex digest."""
    out = ['{"changes":[']
    for i in range(n):
        if i:
            out.append(",")
        digest = "%032x" % ((i * 0x9E3779B97F4A7C15 * 0xBF58476D1CE4E5B9) % (1 << 128))
        payload = '{\\"user\\":%d,\\"digest\\":\\"%s\\",\\"note\\":\\"row %d of the strike scan benchmark\\"}' % (
            (i * 7919) % 100000, digest, i)
        out.append('{"op":"upsert","row":{"id":%d,"user_id":%d,"amount":%s,"status":"%s","payload":"%s"}}' % (
            i, (i * 7919) % 100000, repr(((i * 37) % 100000) / 100.0), STATUS[i % 4], payload))
    out.append("]}")
    return "".join(out).encode()


def curl_scan(port, body):
    """Seconds and bytes of one scan, read to the end."""
    p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total} %{size_download}",
                        "-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps(body),
                        f"http://127.0.0.1:{port}/v1/tables/bench/scan"], capture_output=True, text=True, check=True)
    code, t, size = p.stdout.split()
    assert code == "200", p.stdout
    return float(t), int(size)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--frac", type=float, default=0.1)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    node_modules = os.path.join(build, "peers", "node_modules")
    work = tempfile.mkdtemp(prefix="strike-scanbench-", dir="/tmp")
    os.chmod(work, 0o755)
    pg = os.path.join(work, "pg")
    procs = []
    try:
        subprocess.run([os.path.join(SRC, "tests/lib/pgfixture.sh"), "start", pg], check=True, capture_output=True)
        psql = sorted(p for p in (f"/usr/lib/postgresql/{v}/bin/psql" for v in (15, 16, 17, 14)) if os.path.exists(p))[0]
        subprocess.run([psql, "-h", pg, "-U", "postgres", "-qc", "CREATE DATABASE bench"], check=True)
        port, gport = free_port(), free_port()
        data = os.path.join(work, "data")
        log = open(os.path.join(work, "striked.log"), "wb")
        striked = subprocess.Popen([os.path.join(build, "bin", "striked"), "--data", data, "--http", f"127.0.0.1:{port}",
                                    "--grpc", f"127.0.0.1:{gport}", "--catalog", f"postgresql://postgres@/bench?host={pg}",
                                    "--max-body", "1G", "--log-level", "warn"], stderr=log)
        procs.append(striked)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        print(f"striked {build}/bin/striked, {os.cpu_count()} cores; {a.rows} rows, {a.frac:.0%} deleted, {a.runs} runs")

        # ---- load
        post(port, "/v1/tables", {"name": "bench", "primary_key": ["id"], "columns": [
            {"name": "id", "type": "long", "required": True}, {"name": "user_id", "type": "long", "required": True},
            {"name": "amount", "type": "double"}, {"name": "status", "type": "string"},
            {"name": "payload", "type": "string"}]})
        body = rows_json(a.rows)
        t0 = time.monotonic()
        res = post(port, "/v1/tables/bench/changes", body)
        t_load = time.monotonic() - t0
        rnd = random.Random(42)
        dead = sorted(rnd.sample(range(a.rows), int(a.rows * a.frac)))
        t0 = time.monotonic()
        res2 = post(port, "/v1/tables/bench/changes", {"changes": [{"op": "delete", "key": {"id": k}} for k in dead]})
        t_del = time.monotonic() - t0
        print(f"load: {a.rows} upserts in one request ({len(body) / 1e6:.0f} MB JSON) -> seq {res['seq']} in {t_load:.1f} s; "
              f"{len(dead)} deletes by key -> seq {res2['seq']} ({res2['deleted']} deleted) in {t_del:.1f} s")
        plan = post(port, "/v1/tables/bench/plan", {"snapshot": 2})
        assert len(plan["files"]) == 1, plan
        f = plan["files"][0]
        print(f"file {f['id']}: {f['record_count']} rows, {f['file_size'] / 2**20:.1f} MiB, DV {f['dv']['length']} B, "
              f"{f['deleted_count']} deleted")

        # ---- A: 10% deleted vs 0% deleted, same file
        cases = [("0% deleted, all columns", {"snapshot": 1}), ("10% deleted, all columns", {"snapshot": 2}),
                 ("0% deleted, id only", {"snapshot": 1, "columns": ["id"]}),
                 ("10% deleted, id only", {"snapshot": 2, "columns": ["id"]})]
        for _, b in cases:
            curl_scan(port, b)  # warm the page cache and the DV cache
        times = {name: [] for name, _ in cases}
        sizes = {}
        # the narrow scans take tens of ms: many more runs, so that noise does not decide
        narrow_runs = max(30, 6 * a.runs)
        for i in range(narrow_runs):
            for name, b in cases:
                if "all columns" in name and i >= a.runs:
                    continue
                t, size = curl_scan(port, b)
                times[name].append(t)
                sizes[name] = size
            if i < a.runs:
                print(f"run {i + 1}: " + ", ".join(f"{n} {times[n][-1] * 1000:.0f} ms" for n, _ in cases))
        med = {n: statistics.median(v) for n, v in times.items()}
        live = {1: a.rows, 2: a.rows - len(dead)}
        print("\nA. scan cost, 10% deleted vs 0% deleted (same file; end to end over HTTP, curl to /dev/null)")
        for name, b in cases:
            rows = live[b["snapshot"]]
            print(f"  {name:26s} {len(times[name]):2d} runs, median {med[name] * 1000:7.1f} ms "
                  f"(min {min(times[name]) * 1000:6.1f})  {rows / med[name] / 1e6:5.2f} M rows/s  "
                  f"{sizes[name] / med[name] / 2**20:6.0f} MiB/s  ({sizes[name] / 2**20:.0f} MiB)")
        for cols in ("all columns", "id only"):
            r = med[f"10% deleted, {cols}"] / med[f"0% deleted, {cols}"]
            rmin = min(times[f"10% deleted, {cols}"]) / min(times[f"0% deleted, {cols}"])
            per_row = (med[f"10% deleted, {cols}"] / live[2]) / (med[f"0% deleted, {cols}"] / live[1])
            print(f"  {cols}: time ratio {r:.3f}x of medians, {rmin:.3f}x of minimums (goal <= 1.05x); "
                  f"per output row {per_row:.3f}x")

        # ---- B: strike scan-to-NDJSON vs DuckDB writing the same rows as NDJSON
        dv = urllib.request.urlopen(f"http://127.0.0.1:{port}{f['dv']['url']}").read()
        positions = http_roaring.decode_roaring64(dv)
        assert positions == [k for k in dead], "the DV holds the deleted keys' positions (id == position)"
        pos_file = os.path.join(work, "positions.json")
        with open(pos_file, "w") as fh:
            json.dump(positions, fh)
        parquet = os.path.join(data, f["path"])
        p = subprocess.run(["node", os.path.join(HERE, "http_scan_duckdb.cjs"), parquet, pos_file,
                            os.path.join(work, "duck.ndjson"), str(a.runs)],
                           capture_output=True, text=True, env=dict(os.environ, NODE_PATH=node_modules))
        if p.returncode != 0:
            raise SystemExit(f"DuckDB run failed:\n{p.stderr}")
        duck = json.loads(p.stdout.strip().splitlines()[-1])
        for line in p.stdout.strip().splitlines()[:-1]:
            print("  " + line)
        sname = "10% deleted, all columns"
        s_rps = live[2] / med[sname]
        d_rps = duck["rows"] / duck["median_s"]
        print(f"\nB. {live[2]} rows (10% deleted) to NDJSON")
        print(f"  strike  POST /scan over HTTP  median {med[sname] * 1000:7.1f} ms  {s_rps / 1e6:5.2f} M rows/s  "
              f"({sizes[sname] / 2**20:.0f} MiB)")
        print(f"  DuckDB  {duck['version']} COPY TO json ({duck['threads']} threads) median {duck['median_s'] * 1000:7.1f} ms  "
              f"{d_rps / 1e6:5.2f} M rows/s  ({duck['bytes'] / 2**20:.0f} MiB)")
        print(f"  strike/DuckDB rows/s: {s_rps / d_rps:.2f}x (goal >= 1.0x)")
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.terminate()
                pr.wait(timeout=60)
        subprocess.run([os.path.join(SRC, "tests/lib/pgfixture.sh"), "stop", pg], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
