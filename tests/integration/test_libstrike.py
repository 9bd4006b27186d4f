"""libstrike against the real striked: runs the cmocka program
tests/client/test_libstrike.c (build/bin/test_libstrike) with the server's URL,
then `test_libstrike outage` while the server's catalog is down (a 503 with
Retry-After, retried, then reported as unavailable), then once more after the
catalog is back.
"""
import os
import subprocess
import unittest

import harness as h
import pgcluster


def run(url, *args):
    env = dict(os.environ, STRIKE_TEST_URL=url)
    return subprocess.run([os.path.join(h.BIN_DIR, "test_libstrike"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


class LibStrike(unittest.TestCase):
    def test_operations(self):
        url = h.create_db("strike_libstrike")
        with h.Striked(catalog=url) as s:
            r = run(f"http://127.0.0.1:{s.http_port}")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("[  PASSED  ] 6 test(s).", r.stdout + r.stderr)
            for m in h.SANITIZER_MARKS:
                self.assertNotIn(m, r.stderr)
            s.close_clean()

    def test_outage_retries(self):
        pg = pgcluster.PgCluster("strike-libstrike-pg-")
        try:
            with h.Striked(catalog=pg.create_db("ls")) as s:
                base = f"http://127.0.0.1:{s.http_port}"
                pg.kill9()
                r = run(base, "outage")
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("status=503 attempts=3", r.stdout)
                self.assertIn("catalog", r.stdout)
                pg.start()
                # back: the same call answers (striked reconnects; retries cover the gap)
                env = dict(os.environ, STRIKE_SERVER=base)
                p = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "tables", "ls", "--retries", "20",
                                    "--output", "json"], env=env, capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.strip(), "[]")
        finally:
            pg.close()


if __name__ == "__main__":
    unittest.main()
