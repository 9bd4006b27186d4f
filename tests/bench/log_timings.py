#!/usr/bin/python3
"""log_timings.py - where a request's time goes, from striked's debug log.

    log_timings.py BUILD/bench/striked.log [--table tk] [--route /v1/tables/{t}/changes]

striked at --log-level debug (tests/bench/run.sh: STRIKE_BENCH_LOG_LEVEL=debug)
logs each HTTP request's time ("http request" ... "ms") and each commit's
prepare, write and commit times ("commit table=T ... prepare_ms= write_ms=
commit_ms="), both with the request's id (rid). This joins them by rid and
prints the median, p90 and mean of each part, and of the rest of the
request's time outside the commit path (HTTP parsing, JSON, the hand-off to
the table's committer and back, the answer): for requests committed in one
attempt, alone in their batch (requests=1), so each commit line is one
request's. Medians do not add up; the column "mid" does: the mean of each
part over the requests whose total is between its 40th and 60th percentile
(a typical request, without the tail a loaded machine adds). Python
standard library only.
"""
import argparse
import json
import re
import statistics
import sys

COMMIT = re.compile(r"^commit table=(\S+) base=\d+ attempt=(\d+) requests=(\d+) rows=(\d+) dvs=(\d+) "
                    r"prepare_ms=([\d.]+) write_ms=([\d.]+) commit_ms=([\d.]+) outcome=(-?\d+)")


def pct(v, p):
    s = sorted(v)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def parse(lines, table, route):
    http, commits = {}, {}
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        rid = e.get("rid")
        if rid is None:
            continue
        msg = e.get("msg", "")
        if msg == "http request" and e.get("route") == route and e.get("status") == "200":
            if table is None or f"/tables/{table}/" in e.get("path", ""):
                http[rid] = float(e["ms"])
            continue
        m = COMMIT.match(msg)
        if m and (table is None or m.group(1) == table):
            commits.setdefault(rid, []).append(
                {"attempt": int(m.group(2)), "requests": int(m.group(3)), "prepare": float(m.group(6)),
                 "write": float(m.group(7)), "commit": float(m.group(8)), "outcome": int(m.group(9))})
    rows = []
    for rid, ms in http.items():
        c = commits.get(rid)
        if not c or len(c) != 1 or c[0]["requests"] != 1 or c[0]["attempt"] != 0 or c[0]["outcome"] != 0:
            continue
        c = c[0]
        rows.append({"http": ms, "prepare": c["prepare"], "write": c["write"], "commit": c["commit"],
                     "outside": ms - c["prepare"] - c["write"] - c["commit"]})
    return rows, len(http)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--table", default=None, help="only this table's requests")
    ap.add_argument("--route", default="/v1/tables/{t}/changes")
    a = ap.parse_args()
    with open(a.log, errors="replace") as f:
        rows, n = parse(f, a.table, a.route)
    if not rows:
        print(f"log_timings: no request of {a.route} joined to a single commit in {a.log} ({n} requests)",
              file=sys.stderr)
        return 1
    print(f"{len(rows)} requests of {a.route}{' on ' + a.table if a.table else ''} joined to their commit by rid "
          f"(of {n}; the rest were batched, retried or failed)")
    print(f"{'part':<50} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8} {'share':>6} {'mid ms':>8} {'share':>6}")
    total = statistics.mean(r["http"] for r in rows)
    lo, hi = pct([r["http"] for r in rows], 0.4), pct([r["http"] for r in rows], 0.6)
    mid = [r for r in rows if lo <= r["http"] <= hi]
    mid_total = statistics.mean(r["http"] for r in mid)
    for k, label in (("http", "HTTP request, striked's own timer (all)"),
                     ("prepare", "  commit path: prepare (key lookup, plan)"),
                     ("write", "  commit path: write (blobs, fsyncs)"),
                     ("commit", "  commit path: commit (catalog transaction)"),
                     ("outside", "  outside the commit path (HTTP, JSON, hand-off)")):
        v = [r[k] for r in rows]
        m = statistics.mean(r[k] for r in mid)
        print(f"{label:<50} {statistics.median(v):>8.2f} {pct(v, 0.9):>8.2f} {statistics.mean(v):>8.2f} "
              f"{statistics.mean(v) / total:>6.0%} {m:>8.2f} {m / mid_total:>6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
