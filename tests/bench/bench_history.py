"""bench_history.py - the previous run's ratios next to the new ones (issue 19).

bench.py calls, before it writes latest.json:

    prev = bench_history.previous(out_dir, mode)
    notes = bench_history.compare(prev, rows)   # sets row["previous"], row["regressed"]

and after it:

    bench_history.record(out_dir, mode, prev, rows, date, commit)

Each row of the table has a key: its number ("2", "i7"), with the row's index
for the measures that print several rows ("i3.1", "i3.2", "i4.1".."i4.3").
The previous figure of a row is the last one measured in a run of the same
size (full or --quick): from out_dir/latest.json when the previous run had
that row, else from out_dir/history.json, which keeps, per size and row key,
the last ratio with its run's date and commit. So a row run alone
(STRIKE_BENCH_ONLY) compares with the last run that had it. Failed and "not
available" rows are compared with nothing and leave the history as it was,
and so does a profiled run (tests/bench/profile.sh: latest.json says
"profiled"; perf slows striked down), which bench.py records with no rows.

The ratio cell is text ("4.86x PostgreSQL's p50", "0.47x req/s; p99 1.18x",
"5.19x slower"): its numbers are read back in order, and BETTER says per row
which way each is better. A ratio that moved the wrong way by more than 10%
(higher-is-better: below 0.9x the previous; lower-is-better: above 1.1x)
marks its row's "previous" cell with REGRESSED and is listed in a note.
Python standard library only.
"""
import json
import os
import re

REGRESSED = "⚠ worse"
THRESHOLD = 0.10

# which way each number of a row's ratio cell is better, by row key
H, L = "higher", "lower"
BETTER = {
    "1": [H, H],          # times faster; times fewer bytes
    "2": [L],             # p50 / PostgreSQL's p50
    "3": [H],             # rows/s / PostgreSQL's
    "4": [H, L],          # req/s / nginx's; p99 / nginx's
    "5": [L],             # 10%-deleted scan time / 0%-deleted
    "6": [H],             # rows/s / DuckDB's
    "7": [H],             # 8 writers / 1 writer
    "8": [L],             # peak RSS / the smaller scan's
    "9": [H],             # lookups/s / PostgreSQL's
    "i3.1": [H], "i3.2": [H],  # speed vs npm roaring ("x faster" / "x slower")
    "i4.1": [H], "i4.2": [H],  # write MiB/s, read rows/s vs DuckDB
    "i4.3": [L],               # file size / DuckDB's
    "i7": [H, L],         # gRPC calls/s / the gRPC peer's; p99 / the peer's
    "i13": [L],           # the other table's p50 during the delete / before
    "i14a": [L],          # worst growth
    "i14b": [H],          # rows/s / DuckDB's
    "i14c": [H, H],       # the speed; times fewer bytes
    "i15": [H],
    "i16": [H],
    "i28": [L],           # peak RSS growth per body byte, the worst shape
}
MULTI = {"i3", "i4"}  # measures that print several rows: keyed by index


def row_keys(rows):
    """The key of each row, in order."""
    seen, keys = {}, []
    for r in rows:
        n = str(r["num"])
        seen[n] = seen.get(n, 0) + 1
        keys.append(f"{n}.{seen[n]}" if n in MULTI else n)
    return keys


_NUM = re.compile(r"(\d[\d,]*(?:\.\d+)?)x(\s+slower)?")


def values(key, ratio):
    """The numbers of a ratio cell, each as 'bigger = more'; None when they do not
    match what the row is known to print (failed, not available, a new format)."""
    if not isinstance(ratio, str):
        return None
    vs = []
    for m in _NUM.finditer(ratio):
        v = float(m.group(1).replace(",", ""))
        if m.group(2):  # "5.19x slower" is 1/5.19 of the peer's speed
            v = 1 / v if v else None
        vs.append(v)
    if not vs or None in vs or len(vs) != len(BETTER.get(key, [])):
        return None
    return vs


def worse_by(key, old, new):
    """The largest relative move the wrong way between two value lists (0 if none)."""
    worst = 0.0
    for way, a, b in zip(BETTER[key], old, new):
        if a <= 0 or b <= 0:
            continue
        move = (a - b) / a if way == H else (b - a) / a
        worst = max(worst, move)
    return worst


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def previous(out_dir, mode):
    """{row key: {"ratio", "values", "date", "commit"}}: the last figure of each row in
    runs of this size, history.json overlaid with the previous latest.json."""
    prev = {}
    h = _load(os.path.join(out_dir, "history.json"))
    if isinstance(h, dict) and isinstance(h.get(mode), dict):
        prev.update(h[mode])
    last = _load(os.path.join(out_dir, "latest.json"))
    if (isinstance(last, dict) and last.get("mode") == mode and not last.get("profiled")
            and isinstance(last.get("rows"), list)):
        for key, r in zip(row_keys(last["rows"]), last["rows"]):
            v = values(key, r.get("ratio"))
            if v is not None:
                prev[key] = {"ratio": r["ratio"], "values": v, "date": last.get("date", "?"),
                             "commit": last.get("commit", "?"), "measure": r.get("measure", "")}
    return prev


def compare(prev, rows):
    """Sets row["previous"] (the cell) and row["regressed"] (the wrong-way move, or
    0) on every row, prev being previous()'s answer; returns the notes: which run
    each previous figure comes from, and the regressions."""
    runs, regressions, unknown = {}, [], []
    for key, r in zip(row_keys(rows), rows):
        p = prev.get(key)
        r["regressed"] = 0.0
        if values(key, r.get("ratio")) is None and _NUM.search(str(r.get("ratio"))):
            unknown.append(key)  # a ratio this module cannot read: BETTER needs the row's new form
        if p is None:
            r["previous"] = "–"
            continue
        r["previous"] = p["ratio"]
        runs.setdefault((p.get("date", "?"), p.get("commit", "?")), []).append(key)
        new = values(key, r.get("ratio"))
        if new is not None and len(p.get("values") or []) == len(new):
            w = worse_by(key, p["values"], new)
            if w > THRESHOLD:
                r["regressed"] = w
                r["previous"] = f"{p['ratio']} {REGRESSED} by {w:.0%}"
                regressions.append(f"row {key} ({p['ratio']} → {r['ratio']}, worse by {w:.0%})")
    notes = []
    if runs:
        notes.append("Previous: the last run of this size that had the row: " + "; ".join(
            f"{'rows' if len(keys) > 1 else 'row'} {', '.join(keys)} from the run of {date} (commit {commit})"
            for (date, commit), keys in sorted(runs.items())))
    if unknown:
        notes.append(f"Not compared with the previous run (a ratio of a form bench_history.py does not know): "
                     f"{'rows' if len(unknown) > 1 else 'row'} {', '.join(unknown)}")
    if regressions:
        notes.append(f"{REGRESSED.split()[0]} Ratios that moved the wrong way by more than "
                     f"{THRESHOLD:.0%} since the previous run: " + "; ".join(regressions))
    return notes


def record(out_dir, mode, prev, rows, date, commit):
    """history.json: for this size, prev (previous()'s answer, read before latest.json
    was replaced) with this run's figure of every row that has one."""
    path = os.path.join(out_dir, "history.json")
    h = _load(path)
    if not isinstance(h, dict):
        h = {}
    m = h[mode] = dict(prev)
    for key, r in zip(row_keys(rows), rows):
        v = values(key, r.get("ratio"))
        if v is not None:
            m[key] = {"ratio": r["ratio"], "values": v, "date": date, "commit": commit,
                      "measure": r.get("measure", "")}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(h, f, indent=1, ensure_ascii=False)
    os.replace(tmp, path)
