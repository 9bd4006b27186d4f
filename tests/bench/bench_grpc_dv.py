#!/usr/bin/python3
"""bench_grpc_dv.py - GetDeletionVector over gRPC next to the same bitmap over HTTP.

    cmake -S . -B build/grpc-rel -DCMAKE_BUILD_TYPE=Release
    cmake --build build/grpc-rel -j2 --target striked bench_grpc_dv strike_py_proto
    /usr/bin/python3 tests/bench/bench_grpc_dv.py --build build/grpc-rel

Starts striked (embedded catalog, or --catalog URL), builds one table whose
first data file has a deletion vector, then keeps 64 calls in flight for the
same DV: over gRPC with bench_grpc_dv (a C client on the gRPC core) and over
HTTP with wrk (64 keep-alive connections). Both ask for an explicit snapshot
(answered from the DV cache, no catalog) and then for the current snapshot
(a catalog round trip per call). Prints calls/s and latency percentiles; no
assertions on speed. Client and server share the machine's cores.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(SRC, "build", "grpc-rel"))
    p.add_argument("--catalog", default=None, help="PostgreSQL URL (default: embedded)")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--channels", type=int, default=4)
    p.add_argument("--client-threads", type=int, default=1)
    return p.parse_args()


def wrk(url, conns, seconds):
    out = subprocess.run(["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def us(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        v, unit = float(m.group(1)), m.group(2)
        return v * {"us": 1, "ms": 1000, "s": 1e6}[unit]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    sock = re.search(r"Socket errors:.*", out)
    return {"calls/s": rps, "p50_us": us("50"), "p99_us": us("99"), "errors": errors,
            "socket": sock.group(0) if sock else ""}


def bench_grpc(binary, port, table, file_id, snapshot, a):
    cmd = [binary, "--target", f"127.0.0.1:{port}", "--table", table, "--file-id", str(file_id),
           "--concurrency", str(a.concurrency), "--channels", str(a.channels),
           "--threads", str(a.client_threads), "--seconds", str(a.seconds), "--warmup", "1"]
    if snapshot is not None:
        cmd += ["--snapshot", str(snapshot)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    line = out.stdout.strip()
    if out.returncode != 0 or not line:
        raise RuntimeError(f"bench_grpc_dv failed ({out.returncode}): {out.stdout}{out.stderr}")
    kv = dict(x.split("=", 1) for x in line.split(": ", 1)[1].split())
    return {"calls/s": float(kv["calls/s"]), "p50_us": float(kv["p50_us"]), "p99_us": float(kv["p99_us"]),
            "errors": int(kv["errors"]), "bytes": int(kv["bytes"]), "card": int(kv["card"])}


def main():
    a = parse_args()
    build = os.path.abspath(a.build)
    os.environ["STRIKE_BIN_DIR"] = os.path.join(build, "bin")
    os.environ["STRIKE_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import harness as h
    import grpc_client as gc

    # no background maintenance: it would compact the table under the measure
    s = h.Striked(catalog=a.catalog, env={"STRIKE_LOG_LEVEL": "warn"},
                  extra_args=["--compact-interval", "0"])
    try:
        c = gc.Client(s.grpc_port)
        t = "bench_dv"
        c.create(t, [("id", "long", True), ("v", "long")], ["id"])
        for start in range(0, a.rows, 20_000):
            c.apply(t, [gc.change("upsert", row={"id": i, "v": i * 3}) for i in range(start, min(a.rows, start + 20_000))])
        # ~12% deleted, scattered, plus a run: array, bitmap and run containers
        dels = [i for i in range(0, a.rows, 9)] + list(range(a.rows // 2, a.rows // 2 + 5000))
        for k in range(0, len(dels), 20_000):
            c.apply(t, [gc.change("delete", key={"id": i}) for i in dels[k:k + 20_000]])
        plan = c.call("PlanScan", table=t)
        f = max(plan.files, key=lambda x: x.deleted_count)
        snap = plan.seq
        g = c.call("GetDeletionVector", table=t, file_id=f.id, snapshot=snap)
        r = s.req("GET", f"/v1/tables/{t}/files/{f.id}/dv?snapshot={snap}")
        if r.status != 200 or r.body != g.data:
            raise RuntimeError(f"HTTP and gRPC disagree on the DV: {r}")
        print(f"# striked {build}, table {t}: {a.rows} rows, file {f.id} ({f.record_count} rows), "
              f"DV roaring64 {len(g.data)} bytes, cardinality {g.cardinality}, snapshot {snap}")
        print(f"# {a.concurrency} concurrent calls, {a.seconds:g} s each; gRPC client: bench_grpc_dv "
              f"({a.channels} connections, {a.client_threads} thread); HTTP client: wrk -t2 -c{a.concurrency}")
        print(f"{'protocol':<6} {'snapshot':<9} {'calls/s':>10} {'p50 us':>9} {'p99 us':>9} {'errors':>7}")
        binary = os.path.join(build, "bin", "bench_grpc_dv")
        perf_out = os.environ.get("STRIKE_BENCH_PERF_OUT")  # tests/bench/profile.sh i7
        for label, sn in (("explicit", snap), ("current", None)):
            if perf_out and label == "explicit":
                sys.path.insert(0, HERE)
                import perfrec
                with perfrec.Recorder([s.proc.pid], perf_out):
                    gr = bench_grpc(binary, s.grpc_port, t, f.id, sn, a)
            else:
                gr = bench_grpc(binary, s.grpc_port, t, f.id, sn, a)
            q = f"?snapshot={snap}" if sn is not None else ""
            hr = wrk(f"http://127.0.0.1:{s.http_port}/v1/tables/{t}/files/{f.id}/dv{q}", a.concurrency,
                     int(a.seconds))
            for proto, x in (("grpc", gr), ("http", hr)):
                print(f"{proto:<6} {label:<9} {x['calls/s']:>10.0f} {x['p50_us']:>9.0f} {x['p99_us']:>9.0f} "
                      f"{x['errors']:>7}" + (f"  {x['socket']}" if x.get("socket") else ""))
        c.close()
    finally:
        s.close()


if __name__ == "__main__":
    main()
