#!/usr/bin/env python3
"""body_rss.py - striked's peak memory for maximal /changes bodies (issue 13 item 9).

    tests/bench/body_rss.py --build build/release [--clients 32] [--body-mib 64]
                            [-- STRIKED_ARGS...]

Starts a throw-away PostgreSQL (tests/lib/pgfixture.sh) and, for each phase,
a fresh striked on it (so that its VmHWM belongs to the phase alone):

  1. one client posts one maximal /changes body;
  2. --clients clients post one maximal body each at once (a table each).

A body is as many upserts as fit in --body-mib MiB (less a few bytes: the
limit is --max-body, 64 MiB by default) of rows with a 64-byte string key
and four columns (long, double, string, timestamp), which is what a CDC
producer batching a wide-keyed table sends. striked's VmRSS is sampled every
10 ms from /proc/PID/status and its VmHWM read at the end. Printed per
phase: the RSS before the posts (after the tables exist), the peak, the
delta, the body bytes in flight and the expansion factor (delta / bytes).

Anything after `--` goes to striked (e.g. `-- --max-inflight 1G` to measure
with admission control). A client refused with 503 waits for its
Retry-After and posts again; the refusals are counted. Nothing is asserted:
this is a measurement.
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def req(port, method, path, body=None, headers=None, timeout=600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    if body is not None:
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def post_close(port, path, body, timeout=600):
    """POST with Connection: close on a raw socket: a reply that comes before
    the whole body was sent (a 503 from Content-Length) is still read."""
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n" % (path, len(body))).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        try:
            c.sendall(head)
            view = memoryview(body)
            for off in range(0, len(body), MIB):
                c.sendall(view[off:off + MIB])
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered early: read what came
        resp = b""
        try:
            while True:
                d = c.recv(1 << 16)
                if not d:
                    break
                resp += d
        except ConnectionResetError:
            pass
    if not resp:
        raise OSError("no reply")
    hdr, _, data = resp.partition(b"\r\n\r\n")
    lines = hdr.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return status, hdrs, data


def table_def(name):
    return {
        "name": name,
        "columns": [
            {"name": "id", "type": "string", "required": True},
            {"name": "user_id", "type": "long"},
            {"name": "amount", "type": "double"},
            {"name": "status", "type": "string"},
            {"name": "updated_at", "type": "timestamp"},
        ],
        "primary_key": ["id"],
    }


def make_body(limit):
    """As many upserts as fit in `limit` bytes; returns (bytes, rows)."""
    head, tail = b'{"changes":[', b"]}"
    parts = []
    size = len(head) + len(tail)
    i = 0
    while True:
        key = "customer-%010d-" % i
        key += "k" * (64 - len(key))
        row = ('{"op":"upsert","row":{"id":"%s","user_id":%d,"amount":%d.25,'
               '"status":"%s","updated_at":"2026-11-29T10:%02d:%02d.123456Z"}}'
               % (key, i * 7919 % 1000003, i % 10000, ("NEW", "PAID", "SHIPPED")[i % 3],
                  i // 60 % 60, i % 60)).encode()
        add = len(row) + (1 if parts else 0)
        if size + add > limit:
            break
        parts.append(row)
        size += add
        i += 1
    body = head + b",".join(parts) + tail
    assert len(body) == size <= limit
    return body, i


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 1 << 40


class Sampler(threading.Thread):
    """VmRSS every 10 ms; kills striked if the machine runs short of memory
    (MemAvailable under --floor-mib): the measure is then a lower bound."""

    def __init__(self, pid, floor_kib):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop_ev = pid, 0, threading.Event()
        self.floor_kib, self.killed = floor_kib, False

    def run(self):
        while not self.stop_ev.is_set():
            try:
                self.peak = max(self.peak, status_kib(self.pid, "VmRSS"))
            except OSError:
                return
            if mem_available_kib() < self.floor_kib:
                self.killed = True
                os.kill(self.pid, 9)
                return
            time.sleep(0.01)


def start_striked(build, pg, data, extra, log):
    hport, gport = free_port(), free_port()
    args = [os.path.join(build, "bin", "striked"), "--catalog", f"postgresql://postgres@/strike?host={pg}",
            "--data", data, "--http", f"127.0.0.1:{hport}", "--grpc", f"127.0.0.1:{gport}",
            "--log-level", "warn"] + extra
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            if req(hport, "GET", "/readyz", timeout=2)[0] == 200:
                return p, hport
        except OSError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise SystemExit("body_rss: striked did not become ready (see its log)")


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def phase(name, build, pg, work, extra, body, clients, floor_mib):
    data = os.path.join(work, "data-" + name)
    with open(os.path.join(work, "striked-%s.log" % name), "wb") as log:
        p, port = start_striked(build, pg, data, extra, log)
        try:
            tables = ["rss_%s_%d" % (name, k) for k in range(clients)]
            for t in tables:
                st, _, d = req(port, "POST", "/v1/tables", table_def(t))
                assert st == 201, (st, d)
            time.sleep(0.5)
            base = status_kib(p.pid, "VmRSS")
            base_hwm = status_kib(p.pid, "VmHWM")
            sampler = Sampler(p.pid, floor_mib * 1024)
            sampler.start()
            results = [None] * clients
            refused = [0] * clients

            def client(k):
                while True:
                    try:
                        st, hdrs, d = post_close(port, "/v1/tables/%s/changes" % tables[k], body)
                    except OSError as e:
                        results[k] = (0, str(e).encode())
                        return
                    if st == 503 and "retry-after" in hdrs:
                        refused[k] += 1
                        time.sleep(float(hdrs["retry-after"]))
                        continue
                    results[k] = (st, d)
                    return

            t0 = time.monotonic()
            ths = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            secs = time.monotonic() - t0
            sampler.stop_ev.set()
            sampler.join()
            hwm = after = 0
            if not sampler.killed:
                hwm = status_kib(p.pid, "VmHWM")
                after = status_kib(p.pid, "VmRSS")
        finally:
            stop(p)
    bad = [r for r in results if r is None or r[0] != 200]
    peak = max(hwm, sampler.peak)
    delta = peak - base
    inflight = len(body) * clients
    return {
        "phase": name, "clients": clients, "body_bytes": len(body), "seconds": round(secs, 1),
        "rss_before_mib": round(base / 1024, 1), "hwm_before_mib": round(base_hwm / 1024, 1),
        "peak_mib": round(peak / 1024, 1), "sampled_peak_mib": round(sampler.peak / 1024, 1),
        "rss_after_mib": round(after / 1024, 1), "delta_mib": round(delta / 1024, 1),
        "expansion": round(delta * 1024 / len(body), 2),
        "expansion_per_body_in_flight": round(delta * 1024 / inflight, 2),
        "refused_503": sum(refused), "killed_low_memory": sampler.killed, "failed": [(r[0], r[1][:300].decode(errors="replace")) if r else None
                                                 for r in bad],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="a build directory with bin/striked (Release)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--body-mib", type=float, default=64)
    ap.add_argument("--only", choices=("one", "many"), help="run one phase only")
    ap.add_argument("--floor-mib", type=int, default=3072,
                    help="kill striked when the machine's MemAvailable falls under this [3072]")
    ap.add_argument("striked_args", nargs="*", help="after --: more striked options")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    limit = int(a.body_mib * MIB) - 1024
    body, rows = make_body(limit)
    print("body_rss: a body of %d bytes (%.1f MiB), %d upserts" % (len(body), len(body) / MIB, rows),
          file=sys.stderr)
    work = tempfile.mkdtemp(prefix="strike-body-rss-")
    os.chmod(work, 0o755)
    pg = os.path.join(work, "pg")
    psql = sorted(p for p in (os.path.join("/usr/lib/postgresql", v, "bin", "psql")
                              for v in os.listdir("/usr/lib/postgresql")) if os.path.exists(p))[0]
    fixture = os.path.join(SRC, "tests", "lib", "pgfixture.sh")
    subprocess.run([fixture, "start", pg], check=True, stdout=sys.stderr)
    out = []
    try:
        subprocess.run([psql, "-h", pg, "-U", "postgres", "-qc", "CREATE DATABASE strike"], check=True)
        extra = a.striked_args
        if a.only in (None, "one"):
            out.append(phase("one", build, pg, work, extra, body, 1, a.floor_mib))
            print(json.dumps(out[-1]), file=sys.stderr)
        if a.only in (None, "many"):
            out.append(phase("many", build, pg, work, extra, body, a.clients, a.floor_mib))
            print(json.dumps(out[-1]), file=sys.stderr)
    finally:
        subprocess.run([fixture, "stop", pg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    print("| phase | clients | body MiB | RSS before MiB | peak RSS MiB | delta MiB | delta / bytes in flight "
          "| 503s | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in out:
        print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %d | %.1f |" % (
            r["phase"], r["clients"], r["body_bytes"] / MIB, r["rss_before_mib"], r["peak_mib"],
            r["delta_mib"], r["expansion_per_body_in_flight"], r["refused_503"], r["seconds"]))
    print("striked args: %s" % (" ".join(a.striked_args) or "(defaults)"))
    for r in out:
        if r["killed_low_memory"]:
            print("phase %s: striked was killed when the machine ran short of memory: "
                  "its peak is a lower bound" % r["phase"])
        if r["failed"]:
            kinds = {}
            for f in r["failed"]:
                kinds[str(f)] = kinds.get(str(f), 0) + 1
            print("failed requests in phase %s: %s" % (r["phase"], kinds))
    return 1 if any(r["failed"] for r in out) else 0


if __name__ == "__main__":
    sys.exit(main())
