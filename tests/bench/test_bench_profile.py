#!/usr/bin/python3
"""test_bench_profile.py - the text tools of tests/bench/profile.sh (issue 19).

fold_stacks.py on a synthetic `perf script` text (both header forms perf
prints, kernel and unknown frames, offsets dropped, periods summed per
stack) and log_timings.py on a synthetic striked debug log (requests joined
to their single commit by rid; batched, retried and other tables' requests
left out; the parts add up). Fast: no perf, no server. Run by ctest
(bench_profile_tools).
"""
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fold_stacks  # noqa: E402
import log_timings  # noqa: E402

SCRIPT = """\
striked 100/101 [000] 10.000001:     333667 cpu-clock:ppp: 
\t    7f00000010 __GI_fsync+0x1b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t        401000 local_put_commit+0x40 (/build/bin/striked)
\t        400800 worker_main+0x10 (/build/bin/striked)

striked 100/101 [001] 10.000401:     333667 cpu-clock:ppp: 
\tffffffff81000000 iowrite16+0x5 ([kernel.kallsyms])
\t    7f00000010 __GI_fsync+0x2c (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t        401000 local_put_commit+0x48 (/build/bin/striked)
\t        400800 worker_main+0x10 (/build/bin/striked)

MHD-worker 100/102 10.000801: 333667 cpu-clock:ppp: 
\t    7f00000999 [unknown] (/usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12)

striked 100/101 [000] 10.001201:     333667 cpu-clock:ppp: 
\t    7f00000010 __GI_fsync+0x1b (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t        401000 local_put_commit+0x40 (/build/bin/striked)
\t        400800 worker_main+0x10 (/build/bin/striked)
"""


def log_line(msg, rid, **kv):
    import json
    d = {"ts": "2026-12-01T21:32:58.303875Z", "level": "debug", "msg": msg, "rid": rid}
    d.update(kv)
    return json.dumps(d)


def commit(table, rid, requests=1, attempt=0, prep=0.5, write=1.0, com=2.0):
    return log_line(f"commit table={table} base=1 attempt={attempt} requests={requests} rows=0 dvs=1 "
                    f"prepare_ms={prep:.2f} write_ms={write:.2f} commit_ms={com:.2f} outcome=0", rid)


def http(table, rid, ms):
    return log_line("http request", rid, method="POST", path=f"/v1/tables/{table}/changes",
                    route="/v1/tables/{t}/changes", status="200", ms=f"{ms:.3f}", end="complete")


class Fold(unittest.TestCase):
    def test_fold(self):
        f = fold_stacks.fold(io.StringIO(SCRIPT))
        self.assertEqual(dict(f), {
            "striked;worker_main;local_put_commit;__GI_fsync": 2 * 333667,
            "striked;worker_main;local_put_commit;__GI_fsync;iowrite16": 333667,
            "MHD-worker;[libmicrohttpd.so.12]": 333667})
        c = fold_stacks.fold(io.StringIO(SCRIPT), count=True)
        self.assertEqual(sum(c.values()), 4)


class LogTimings(unittest.TestCase):
    def test_join(self):
        lines = [commit("tk", "r1", prep=0.5, write=1.0, com=2.0), http("tk", "r1", 4.0),
                 commit("tk", "r2", prep=0.6, write=1.2, com=2.2), http("tk", "r2", 4.5),
                 commit("tk", "r3", requests=2), http("tk", "r3", 9.0),   # batched: left out
                 commit("tk", "r4", attempt=1), http("tk", "r4", 9.0),    # retried: left out
                 commit("t1m", "r5"), http("t1m", "r5", 9.0),             # another table
                 http("tk", "r6", 9.0),                                   # no commit line
                 "not json", '{"msg": "no rid"}']
        rows, n = log_timings.parse(lines, "tk", "/v1/tables/{t}/changes")
        self.assertEqual(n, 5)  # r1-r4, r6
        self.assertEqual(len(rows), 2)
        r1 = min(rows, key=lambda r: r["http"])
        self.assertEqual((r1["prepare"], r1["write"], r1["commit"]), (0.5, 1.0, 2.0))
        self.assertAlmostEqual(r1["outside"], 0.5)
        for r in rows:
            self.assertAlmostEqual(r["prepare"] + r["write"] + r["commit"] + r["outside"], r["http"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
