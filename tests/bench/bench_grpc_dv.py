#!/usr/bin/python3
"""bench_grpc_dv.py - GetDeletionVector over gRPC next to its peer on the same core, and over HTTP.

    cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release
    cmake --build build/release -j2 --target striked bench_grpc_dv grpc_dv_peer strike_py_proto
    /usr/bin/python3 tests/bench/bench_grpc_dv.py --build build/release

Starts striked (embedded catalog, or --catalog URL), builds one table whose
first data file has a deletion vector, then keeps 64 calls in flight for the
same DV with bench_grpc_dv (a C client on the gRPC core) against:

- striked, explicit snapshot (answered from the DV cache, no catalog);
- grpc_dv_peer, the least server on the same core, answering the bytes striked
  answered (written to a file once) from memory: the same client, channels and
  calls in flight, alternating with striked (strike first in even rounds);
- HTTP, the same DV with wrk (64 keep-alive connections), as a note;
- striked and HTTP at the current snapshot (a catalog round trip per call),
  once.

Prints one line per round and run ("# round"), then the median of the rounds
per server ("grpc explicit", "peer explicit", ...: calls/s and the median of
the p50 and p99), with the server's CPU time per call (user + system of the
process from /proc, warm-up included: steadier than calls/s on a loaded
machine). No assertions on speed. Client and servers share the cores.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

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
    p.add_argument("--server-threads", type=int, default=0,
                   help="completion-queue threads of striked (--grpc-threads) and of the peer (0: their default)")
    p.add_argument("--rounds", type=int, default=3, help="striked and the peer, alternating")
    p.add_argument("--perf", metavar="DIR", help="after the rounds, one more run of each under "
                   "`perf record -g` (DIR/striked.data, DIR/peer.data; not counted)")
    p.add_argument("--perf-call-graph", default="fp", help="perf record --call-graph (fp, dwarf)")
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


def cpu_s(pid):
    """CPU time (user + system, every thread) the process has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_grpc(binary, port, table, file_id, snapshot, a, pid=None):
    cmd = [binary, "--target", f"127.0.0.1:{port}", "--table", table, "--file-id", str(file_id),
           "--concurrency", str(a.concurrency), "--channels", str(a.channels),
           "--threads", str(a.client_threads), "--seconds", str(a.seconds), "--warmup", "1"]
    if snapshot is not None:
        cmd += ["--snapshot", str(snapshot)]
    c0 = cpu_s(pid) if pid else 0
    out = subprocess.run(cmd, capture_output=True, text=True)
    c1 = cpu_s(pid) if pid else 0
    line = out.stdout.strip()
    if out.returncode != 0 or not line:
        raise RuntimeError(f"bench_grpc_dv failed ({out.returncode}): {out.stdout}{out.stderr}")
    kv = dict(x.split("=", 1) for x in line.split(": ", 1)[1].split())
    r = {"calls/s": float(kv["calls/s"]), "p50_us": float(kv["p50_us"]), "p99_us": float(kv["p99_us"]),
         "errors": int(kv["errors"]), "bytes": int(kv["bytes"]), "card": int(kv["card"])}
    if pid:  # the server's CPU per call, warm-up included (calls counted over the measured seconds)
        calls = r["calls/s"] * (a.seconds + 1)
        r["cpu_us"] = (c1 - c0) * 1e6 / calls if calls else 0
    return r


class Peer:
    """grpc_dv_peer answering `reply` (the packed DeletionVector), on a port of its own."""

    def __init__(self, binary, reply, threads=0):
        self.f = tempfile.NamedTemporaryFile(prefix="dv-reply-", suffix=".pb")
        self.f.write(reply)
        self.f.flush()
        cmd = [binary, "--reply", self.f.name] + (["--threads", str(threads)] if threads else [])
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        m = re.match(r"port (\d+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"grpc_dv_peer did not start: {line!r}")
        self.port = int(m.group(1))

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
            if self.p.wait(timeout=30) != 0:
                raise RuntimeError(f"grpc_dv_peer exited {self.p.returncode}")
        self.f.close()


def median_of(runs):
    keys = ("calls/s", "p50_us", "p99_us") + (("cpu_us",) if all("cpu_us" in x for x in runs) else ())
    m = {k: statistics.median(x[k] for x in runs) for k in keys}
    m["errors"] = sum(x["errors"] for x in runs)
    return m


def row(proto, label, x):
    return (f"{proto:<6} {label:<9} {x['calls/s']:>10.0f} {x['p50_us']:>9.0f} {x['p99_us']:>9.0f} "
            f"{x['errors']:>7}" + (f"  server CPU {x['cpu_us']:.1f} us/call" if "cpu_us" in x else "")
            + (f"  {x['socket']}" if x.get("socket") else ""))


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
                  extra_args=["--compact-interval", "0"] +
                  (["--grpc-threads", str(a.server_threads)] if a.server_threads else []))
    peer = None
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
        req = gc.pb.GetDeletionVectorRequest(table=t, file_id=f.id, snapshot=snap)
        # the reply's bytes as striked packed them: what the peer answers
        raw = c.channel.unary_unary(gc.SERVICE + "GetDeletionVector",
                                    request_serializer=gc.pb.GetDeletionVectorRequest.SerializeToString,
                                    response_deserializer=None)(req, timeout=30)
        g = gc.pb.DeletionVector.FromString(raw)
        r = s.req("GET", f"/v1/tables/{t}/files/{f.id}/dv?snapshot={snap}")
        if r.status != 200 or r.body != g.data:
            raise RuntimeError(f"HTTP and gRPC disagree on the DV: {r}")
        peer = Peer(os.path.join(build, "bin", "grpc_dv_peer"), raw, a.server_threads)
        print(f"# striked {build}, table {t}: {a.rows} rows, file {f.id} ({f.record_count} rows), "
              f"DV roaring64 {len(g.data)} bytes (reply {len(raw)} bytes), cardinality {g.cardinality}, "
              f"snapshot {snap}")
        print(f"# {a.concurrency} concurrent calls, {a.seconds:g} s each, {a.rounds} rounds; gRPC client: "
              f"bench_grpc_dv ({a.channels} connections, {a.client_threads} thread) on striked and on "
              f"grpc_dv_peer (same core, reply from memory), alternating; HTTP client: wrk -t2 -c{a.concurrency}")
        print(f"# load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
        binary = os.path.join(build, "bin", "bench_grpc_dv")
        url = f"http://127.0.0.1:{s.http_port}/v1/tables/{t}/files/{f.id}/dv"
        perf_out = os.environ.get("STRIKE_BENCH_PERF_OUT")  # tests/bench/profile.sh i7: striked, round 0
        runs = {"grpc": [], "peer": [], "http": []}
        for rd in range(a.rounds):
            order = ("grpc", "peer") if rd % 2 == 0 else ("peer", "grpc")
            for who in order:
                port, pid = (s.grpc_port, s.proc.pid) if who == "grpc" else (peer.port, peer.p.pid)
                if perf_out and rd == 0 and who == "grpc":
                    sys.path.insert(0, HERE)
                    import perfrec
                    with perfrec.Recorder([s.proc.pid], perf_out):
                        x = bench_grpc(binary, port, t, f.id, snap, a, pid)
                else:
                    x = bench_grpc(binary, port, t, f.id, snap, a, pid)
                runs[who].append(x)
                print("# round", rd, row(who, "explicit", x))
            x = wrk(url + f"?snapshot={snap}", a.concurrency, int(a.seconds))
            runs["http"].append(x)
            print("# round", rd, row("http", "explicit", x))
        print(f"# load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
        print(f"{'protocol':<6} {'snapshot':<9} {'calls/s':>10} {'p50 us':>9} {'p99 us':>9} {'errors':>7}")
        for who in ("grpc", "peer", "http"):
            print(row(who, "explicit", median_of(runs[who])))
        gs, ps = median_of(runs["grpc"]), median_of(runs["peer"])
        print(f"# strike / peer: calls/s {gs['calls/s'] / ps['calls/s']:.2f}x, "
              f"p99 {gs['p99_us'] / ps['p99_us']:.2f}x, server CPU per call {gs['cpu_us'] / ps['cpu_us']:.2f}x")
        if a.perf:
            os.makedirs(a.perf, exist_ok=True)
            for who, pid, port in (("striked", s.proc.pid, s.grpc_port), ("peer", peer.p.pid, peer.port)):
                out = os.path.join(a.perf, f"{who}.data")
                pr = subprocess.Popen(["perf", "record", "-q", "--call-graph", a.perf_call_graph, "-p", str(pid), "-o", out],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                x = bench_grpc(binary, port, t, f.id, snap, a)
                pr.send_signal(signal.SIGINT)
                pr.wait(timeout=60)
                print(f"# perf {out} ({who} at {x['calls/s']:.0f} calls/s under perf)")
        print(row("grpc", "current", bench_grpc(binary, s.grpc_port, t, f.id, None, a)))
        print(row("http", "current", wrk(url, a.concurrency, int(a.seconds))))
        c.close()
    finally:
        if peer is not None:
            peer.close()
        s.close()


if __name__ == "__main__":
    main()
