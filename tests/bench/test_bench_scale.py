#!/usr/bin/python3
"""test_bench_scale.py - the report of `make bench-scale` (tests/bench/scale.py, issue 32) on
synthetic rounds: the table's rows, the goals met or not, and for each goal not met a line that
says why from the run's own counters (the disk's reads, the WAL, or neither). Also the disk
counter's reading of /proc/diskstats. Fast: no PostgreSQL, no engine. Run by ctest
(bench_scale_report).
"""
import argparse
import io
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402


def ingest(rows_s, wal, fpi, blks, kib):
    return {"rows": 100000, "rows_per_s": rows_s, "wal_bytes_per_row": wal, "wal_fpi": fpi,
            "blks_read_per_row": blks, "disk_kib_per_row": kib}


def delete(p50, blks, kib):
    return {"p50_ms": p50, "blks_read_per_delete": blks, "disk_kib_per_delete": kib}


def run_report(small, big, pg_small, pg_big, d_small=delete(0.6, 0.0, 0.0), d_big=delete(0.65, 0.1, 0.2)):
    """Render the report of two counted rounds with these per-size ingest results."""
    a = argparse.Namespace(small=1000000, big=100000000, batches=10, batch=10000, rounds=2)
    s = object.__new__(scale.Scale)
    s.a = a
    s.out = tempfile.mkdtemp(prefix="strike-scale-test-")
    s.res = {
        "rounds": [{"counted": True, "strike_ingest_small": small, "strike_ingest_big": big,
                    "pg_ingest_small": pg_small, "pg_ingest_big": pg_big,
                    "delete1_small": d_small, "delete1_big": d_big}] * 2,
        "sizes": {"strike_db": 11 * 2**30, "strike_key_index": 11 * 2**30, "strike_key_index_heap": 8 * 2**30,
                  "strike_key_index_pk": 3 * 2**30, "peer_big": 18 * 2**30, "peer_small": 196 * 10**6},
        "load": {"strike_small": {"seconds": 5}, "strike_big": {"seconds": 700, "rows_per_s": 140000,
                                                                "requests": 100},
                 "pg_small": {"seconds": 7}, "pg_big": {"seconds": 650}, "vacuum_analyze_s": 40},
        "settings": {"fsync": "on"}, "checkpoints": [0, 0]}
    out = io.StringIO()
    with redirect_stdout(out):
        s.report()
    try:
        with open(os.path.join(s.out, "scale-latest.md")) as f:
            saved = f.read()
    finally:
        shutil.rmtree(s.out)
    return out.getvalue(), saved


class Report(unittest.TestCase):
    def test_disk_bound_run_says_the_reads(self):
        text, saved = run_report(ingest(200000, 150, 0, 0.01, 0.0), ingest(20000, 1000, 50000, 0.9, 7.5),
                                 ingest(150000, 300, 0, 0.01, 0.0), ingest(15000, 4000, 90000, 1.0, 8.0))
        self.assertEqual(text.strip(), saved.strip())
        self.assertIn("| CDC ingest, 10 batches of 10,000 upserts, half updates: rows/s (strike, engine API) | "
                      "200.0 k (200.0 k–200.0 k) | 20.0 k (20.0 k–20.0 k) | 0.10x | big ≥0.8x small | no (0.10x) |",
                      text)
        self.assertIn("| strike ingest / PostgreSQL's upsert | 1.33x | 1.33x | – | ≥1.5x at big | no (1.33x) |", text)
        self.assertIn("| blocks read from outside shared_buffers per ingested row: strike (PostgreSQL's upsert) | "
                      "0.01 (0.01) | 0.90 (1.00) |", text)
        self.assertIn("| disk KiB read per ingested row, whole machine: strike (PostgreSQL's upsert) | 0.0 (0.0) | "
                      "7.5 (8.0) |", text)
        why = [ln for ln in text.splitlines() if ln.startswith("- Why")]
        self.assertEqual(len(why), 2, why)
        self.assertIn("is 0.10x the figure at 1,000,000, not ≥0.8x: the disk read 7.5 KiB per ingested row "
                      "(0.90 blocks from outside shared_buffers)", why[0])
        self.assertIn("PostgreSQL's upsert: 8.0 KiB from the disk and 1.00 blocks read per row; strike: 7.5 and 0.90",
                      why[1])

    def test_wal_bound_run_says_the_images(self):
        text, _ = run_report(ingest(200000, 150, 0, 0.0, 0.0), ingest(60000, 2700, 39600, 0.3, 0.2),
                             ingest(150000, 300, 0, 0.0, 0.0), ingest(50000, 2400, 57000, 0.3, 0.1))
        why = [ln for ln in text.splitlines() if ln.startswith("- Why")]
        self.assertEqual(len(why), 2, why)
        self.assertIn("the WAL: 2,700 bytes per row (150 at 1,000,000 keys), 3,960 full-page images per batch", why[0])
        self.assertIn("neither side read from the disk; strike wrote 2,700 WAL bytes per row and PostgreSQL's "
                      "upsert 2,400", why[1])

    def test_goals_met_print_no_reason(self):
        text, _ = run_report(ingest(200000, 150, 0, 0.0, 0.0), ingest(180000, 160, 0, 0.0, 0.0),
                             ingest(100000, 300, 0, 0.0, 0.0), ingest(90000, 310, 0, 0.0, 0.0))
        self.assertIn("| 0.90x | big ≥0.8x small | yes |", text)
        self.assertIn("| ≥1.5x at big | yes |", text)
        self.assertNotIn("- Why", text)

    def test_slow_delete_is_explained(self):
        text, _ = run_report(ingest(200000, 150, 0, 0.0, 0.0), ingest(180000, 160, 0, 0.2, 0.0),
                             ingest(100000, 300, 0, 0.0, 0.0), ingest(90000, 310, 0, 0.0, 0.0),
                             d_small=delete(0.5, 0.01, 0.0), d_big=delete(1.0, 2.05, 16.2))
        self.assertIn("| single-key delete: blocks read from outside shared_buffers (disk KiB) per delete | "
                      "0.01 (0.0) | 2.05 (16.2) |", text)
        why = [ln for ln in text.splitlines() if ln.startswith("- Why")]
        self.assertEqual(len(why), 1, why)
        self.assertIn("single-key delete at 100,000,000 keys is 2.00x the figure at 1,000,000, not ≤1.2x: each "
                      "delete read 2.05 blocks from outside shared_buffers and 16.2 KiB from the disk (0.01 and 0.0 "
                      "at 1,000,000 keys)", why[0])


class Disk(unittest.TestCase):
    def test_reads_whole_disks_once(self):
        n = scale.disk_read_sectors()
        self.assertGreaterEqual(n, 0)
        with open("/proc/diskstats") as f:
            rows = [ln.split() for ln in f]
        # partitions and device-mapper volumes are left out: their reads are their disk's too, so the
        # count never exceeds the sum over every row (read after, when the counters only grew)
        self.assertLessEqual(n, sum(int(r[5]) for r in rows))

if __name__ == "__main__":
    unittest.main(verbosity=2)
