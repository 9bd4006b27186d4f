#!/usr/bin/python3
"""test_bench_history.py - `make bench` shows the previous run's ratios (issue 19).

A unit test of bench_history.py and bench.py's table, on synthetic runs: a
previous latest.json, then a new run's rows. Checks the "previous" column,
the regression marker (a ratio that moved the wrong way by more than 10%,
each way of "better"), its note with the previous run's date and commit, that
a run of another size compares with nothing, and that a row run alone
(STRIKE_BENCH_ONLY) compares with the last run that had it (history.json).
Fast: no server, no measure. Run by ctest (bench_history).
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import bench_history as bh  # noqa: E402


def row(num, ratio, measure="m"):
    return {"num": num, "measure": measure, "peer": "p", "peer_med": "1", "strike_med": "2", "ratio": ratio,
            "goal": "g", "met": "–"}


def write_latest(out, mode, date, commit, rows):
    with open(os.path.join(out, "latest.json"), "w") as f:
        json.dump({"date": date, "commit": commit, "mode": mode, "rows": rows}, f)


def line_of(table, num):
    """The table line of row num (the first one)."""
    for ln in table.splitlines():
        if ln.startswith(f"| {num} |"):
            return ln
    raise AssertionError(f"no row {num} in:\n{table}")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class PreviousColumn(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        # run A: the previous full run
        write_latest(self.out, "full", "2026-12-01 19:26 UTC", "aaa1111", [
            row(2, "4.86x PostgreSQL's p50"), row(3, "0.93x"), row(4, "1.40x req/s; p99 0.93x"),
            row("i3", "5.19x slower"), row("i3", "2.00x faster"), row("i7", "0.27x calls/s; p99 1.00x"), row(6, "failed")])

    def tearDown(self):
        self.tmp.cleanup()

    def run_b(self):
        return [row(2, "5.50x PostgreSQL's p50"),   # lower is better: +13% -> regressed
                row(3, "1.60x"),                    # higher is better, improved
                row(4, "1.35x req/s; p99 1.10x"),   # req/s -4% (fine), p99 +18% -> regressed
                row(6, "0.90x"),                    # A failed: nothing to compare
                row(9, "0.25x"),                    # not in A
                row("i3", "6.00x slower"),          # speed 1/6 vs 1/5.19: -13.5% -> regressed
                row("i3", "2.10x faster"),
                row("i7", "–")]                     # failed now: shows A's, no marker

    def test_column_and_marker(self):
        rows = self.run_b()
        prev = bh.previous(self.out, "full")
        notes = bh.compare(prev, rows)
        table = bench.table_md(rows)
        head = cells(table.splitlines()[0])
        self.assertEqual(head[5:8], ["ratio", "previous", "goal"])
        col = head.index("previous")
        self.assertEqual(cells(line_of(table, 2))[col], "4.86x PostgreSQL's p50 ⚠ worse by 13%")
        self.assertEqual(cells(line_of(table, 3))[col], "0.93x")
        self.assertEqual(cells(line_of(table, 4))[col], "1.40x req/s; p99 0.93x ⚠ worse by 18%")
        self.assertEqual(cells(line_of(table, 6))[col], "–")
        self.assertEqual(cells(line_of(table, 9))[col], "–")
        i3 = [cells(ln)[col] for ln in table.splitlines() if ln.startswith("| i3 |")]
        self.assertEqual(i3, ["5.19x slower ⚠ worse by 13%", "2.00x faster"])
        self.assertEqual(cells(line_of(table, "i7"))[col], "0.27x calls/s; p99 1.00x")
        self.assertEqual(sum(1 for r in rows if r["regressed"] > 0), 3)
        self.assertEqual(len(notes), 2)
        self.assertIn("rows 2, 3, 4, i3.1, i3.2, i7 from the run of 2026-12-01 19:26 UTC (commit aaa1111)",
                      notes[0])
        self.assertIn("moved the wrong way by more than 10% since the previous run", notes[1])
        for k in ("row 2 (4.86x PostgreSQL's p50 → 5.50x PostgreSQL's p50, worse by 13%)", "row 4 (",
                  "row i3.1 ("):
            self.assertIn(k, notes[1])
        self.assertNotIn("row 3 (", notes[1])
        self.assertNotIn("row i3.2 (", notes[1])

    def test_unknown_form_is_named(self):
        rows = [row(2, "5.30x PostgreSQL's p50"), row(4, "0.47x"), row(77, "1.00x"), row(6, "failed")]
        notes = bh.compare(bh.previous(self.out, "full"), rows)
        self.assertEqual(rows[1]["previous"], "1.40x req/s; p99 0.93x")  # shown, not compared
        self.assertEqual(rows[1]["regressed"], 0)
        self.assertIn("Not compared with the previous run (a ratio of a form bench_history.py does not know): "
                      "rows 4, 77", notes)

    def test_under_threshold_is_not_marked(self):
        rows = [row(2, "5.30x PostgreSQL's p50"), row(3, "0.85x")]  # +9.1%, -8.6%
        bh.compare(bh.previous(self.out, "full"), rows)
        self.assertEqual([r["previous"] for r in rows], ["4.86x PostgreSQL's p50", "0.93x"])
        self.assertEqual([r["regressed"] for r in rows], [0, 0])

    def test_other_size_compares_with_nothing(self):
        rows = self.run_b()
        notes = bh.compare(bh.previous(self.out, "quick"), rows)
        self.assertEqual({r["previous"] for r in rows}, {"–"})
        self.assertEqual(notes, [])

    def test_row_run_alone_uses_history(self):
        # run B (full) recorded, as bench.py does: history read before latest.json is replaced
        rows_b = self.run_b()
        prev = bh.previous(self.out, "full")
        bh.compare(prev, rows_b)
        write_latest(self.out, "full", "2026-12-01 21:00 UTC", "bbb2222", rows_b)
        bh.record(self.out, "full", prev, rows_b, "2026-12-01 21:00 UTC", "bbb2222")
        # run C: STRIKE_BENCH_ONLY=m3, so latest.json has row 3 only
        rows_c = [row(3, "1.70x")]
        prev = bh.previous(self.out, "full")
        bh.compare(prev, rows_c)
        write_latest(self.out, "full", "2026-12-01 22:00 UTC", "ccc3333", rows_c)
        bh.record(self.out, "full", prev, rows_c, "2026-12-01 22:00 UTC", "ccc3333")
        # run D: STRIKE_BENCH_ONLY=m2,e7: row 2 from B, i7 from A (B's failed), via history.json
        rows_d = [row(2, "3.00x PostgreSQL's p50"), row("i7", "0.20x calls/s; p99 1.00x")]
        notes = bh.compare(bh.previous(self.out, "full"), rows_d)
        self.assertEqual(rows_d[0]["previous"], "5.50x PostgreSQL's p50")
        self.assertEqual(rows_d[1]["previous"], "0.27x calls/s; p99 1.00x ⚠ worse by 26%")
        self.assertIn("row 2 from the run of 2026-12-01 21:00 UTC (commit bbb2222)", notes[0])
        self.assertIn("row i7 from the run of 2026-12-01 19:26 UTC (commit aaa1111)", notes[0])
        h = json.load(open(os.path.join(self.out, "history.json")))
        self.assertEqual(set(h), {"full"})
        self.assertEqual(h["full"]["3"]["commit"], "ccc3333")
        self.assertEqual(h["full"]["i3.1"]["ratio"], "6.00x slower")
        self.assertNotIn("6", [k for k, v in h["full"].items() if v["ratio"] == "failed"])

    def test_profiled_run_is_not_previous(self):
        # run P: profiled (latest.json says so; bench.py records no rows of it)
        prev = bh.previous(self.out, "full")
        rows_p = [row(2, "9.00x PostgreSQL's p50")]
        bh.compare(prev, rows_p)
        with open(os.path.join(self.out, "latest.json"), "w") as f:
            json.dump({"date": "2026-12-01 22:00 UTC", "commit": "ppp0000", "mode": "full", "profiled": True,
                       "rows": rows_p}, f)
        bh.record(self.out, "full", prev, [], "2026-12-01 22:00 UTC", "ppp0000")
        # the next run compares with A, the run before the profile
        rows = [row(2, "5.00x PostgreSQL's p50"), row(3, "0.95x")]
        notes = bh.compare(bh.previous(self.out, "full"), rows)
        self.assertEqual([r["previous"] for r in rows], ["4.86x PostgreSQL's p50", "0.93x"])
        self.assertIn("from the run of 2026-12-01 19:26 UTC (commit aaa1111)", notes[0])
        self.assertNotIn("ppp0000", " ".join(notes))

    def test_values_match_each_rows_format(self):
        self.assertEqual(bh.values("1", "2,981x faster; 767,411x fewer bytes"), [2981, 767411])
        self.assertEqual(bh.values("5", "1.012x (strike, ratio of medians)"), [1.012])
        self.assertEqual(bh.values("i14a", "worst 0.71x"), [0.71])
        self.assertEqual(bh.values("i14c", "0.79x the speed; 9.20x fewer bytes"), [0.79, 9.2])
        self.assertAlmostEqual(bh.values("i3.1", "4.00x slower")[0], 0.25)
        self.assertIsNone(bh.values("2", "–"))
        self.assertIsNone(bh.values("4", "0.47x"))  # not the row's format: not compared
        self.assertIsNone(bh.values("i99", "1.00x"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
