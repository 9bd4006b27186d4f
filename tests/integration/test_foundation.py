"""Foundation: striked on the embedded default and on a shared --catalog.

- the embedded default answers /healthz and /readyz, errors are problem+json;
- a restart reuses the cluster (no second initdb) and is fast;
- SIGTERM exits 0 and leaves no postgres process behind;
- a crash (SIGKILL) never blocks the next start;
- two striked on one --catalog both start (migrations under the lock);
- bad options exit 2 with one line.
"""
import os
import signal
import subprocess
import time
import unittest

import harness as h


class EmbeddedDefault(unittest.TestCase):
    def setUp(self):
        self.root = h.tmpdir()
        self.data = os.path.join(self.root, "data")

    def tearDown(self):
        for pid in h.postgres_pids_for(self.data):
            os.kill(pid, signal.SIGQUIT)
        subprocess.run(["rm", "-rf", self.root])

    def test_lifecycle(self):
        s = h.Striked(data_dir=self.data)
        try:
            r = s.req("GET", "/healthz")
            self.assertEqual(r.status, 200)
            self.assertEqual(r.json(), {"status": "ok"})
            self.assertEqual(s.req("GET", "/readyz").status, 200)

            r = s.req("GET", "/no/such/thing")
            self.assertEqual(r.status, 404)
            self.assertEqual(r.header("Content-Type"), "application/problem+json")
            p = r.json()
            self.assertEqual(p["status"], 404)
            self.assertIn("title", p)
            self.assertIn("/no/such/thing", p["detail"])

            r = s.req("POST", "/healthz", body={})
            self.assertEqual(r.status, 405)
            self.assertIn("GET", r.header("Allow"))

            self.assertTrue(os.path.exists(os.path.join(self.data, "catalog", "pgdata", "PG_VERSION")))
            self.assertTrue(h.postgres_pids_for(self.data), "embedded postgres should run")
            recs = s.log_records()
            self.assertTrue(recs, "striked logs JSON lines")
            for rec in recs:
                for k in ("ts", "level", "msg"):
                    self.assertIn(k, rec)
            self.assertTrue(any("creating a PostgreSQL cluster" in r["msg"] for r in recs))

            code, took = s.stop(signal.SIGTERM)
            self.assertEqual(code, 0, s.logs())
            self.assertLess(took, 10)
            self.assertEqual(h.postgres_pids_for(self.data), [], "no postgres left after SIGTERM")
        finally:
            s.close()

        # A second start reuses the cluster: no initdb, and quick.
        t0 = time.monotonic()
        s = h.Striked(data_dir=self.data)
        try:
            self.assertLess(time.monotonic() - t0, 10)
            self.assertEqual(s.req("GET", "/readyz").status, 200)
            self.assertFalse(any("creating a PostgreSQL cluster" in r["msg"] for r in s.log_records()))
            code, _ = s.stop(signal.SIGINT)
            self.assertEqual(code, 0)
        finally:
            s.close()
        self.assertEqual(h.postgres_pids_for(self.data), [])

    def test_crash_does_not_block_restart(self):
        s = h.Striked(data_dir=self.data)
        s.proc.kill()  # SIGKILL: postgres survives with its postmaster.pid
        s.proc.wait()
        s.close()
        survivors = h.postgres_pids_for(self.data)
        self.assertTrue(survivors, "postgres outlives a killed striked")

        s = h.Striked(data_dir=self.data)
        try:
            self.assertEqual(s.req("GET", "/readyz").status, 200)
            for pid in survivors:
                self.assertFalse(os.path.exists(f"/proc/{pid}"), "the orphan server was stopped")
            code, _ = s.stop()
            self.assertEqual(code, 0)
        finally:
            s.close()

        # A pid file naming a live process that is not our postgres (pid 1) is stale.
        with open(os.path.join(self.data, "catalog", "pgdata", "postmaster.pid"), "w") as f:
            f.write("1\n")
        s = h.Striked(data_dir=self.data)
        try:
            self.assertEqual(s.req("GET", "/readyz").status, 200)
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()

    def test_second_server_on_same_data_is_refused(self):
        s = h.Striked(data_dir=self.data)
        try:
            other = h.Striked(data_dir=self.data, wait=False)
            code = other.proc.wait(timeout=30)
            other.close()
            self.assertNotEqual(code, 0)
            self.assertIn("in use by another striked", other.logs())
        finally:
            s.close()


class SharedCatalog(unittest.TestCase):
    def test_two_servers_one_catalog(self):
        url = h.create_db("strike_found_shared")
        root = h.tmpdir()
        data = os.path.join(root, "data")
        a = h.Striked(data_dir=data, catalog=url, wait=False)
        b = h.Striked(data_dir=data, catalog=url, wait=False)
        try:
            a.wait_healthy()
            b.wait_healthy()
            self.assertEqual(a.req("GET", "/readyz").status, 200)
            self.assertEqual(b.req("GET", "/readyz").status, 200)
            versions = h.sql("strike_found_shared", "SELECT version FROM strike.schema_version ORDER BY 1")
            self.assertEqual([v[0] for v in versions], [str(i + 1) for i in range(len(versions))])
            self.assertGreaterEqual(len(versions), 1)
            self.assertEqual(a.stop()[0], 0)
            self.assertEqual(b.stop()[0], 0)
        finally:
            a.close()
            b.close()
            subprocess.run(["rm", "-rf", root])

    def test_unreachable_catalog_fails_start(self):
        root = h.tmpdir()
        s = h.Striked(data_dir=os.path.join(root, "d"),
                      catalog="postgresql://postgres@/nope?host=/nonexistent-dir", wait=False)
        code = s.proc.wait(timeout=30)
        s.close()
        subprocess.run(["rm", "-rf", root])
        self.assertEqual(code, 1)
        self.assertIn("cannot connect to the catalog", s.logs())


class Options(unittest.TestCase):
    def run_striked(self, args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run([os.path.join(h.BIN_DIR, "striked")] + args, capture_output=True,
                              text=True, env=e, timeout=30)

    def assert_usage_error(self, r, needle):
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(needle, lines[0])

    def test_bad_options(self):
        self.assert_usage_error(self.run_striked(["--bogus"]), "unknown option --bogus")
        self.assert_usage_error(self.run_striked(["--http", "nonsense"]), "--http")
        self.assert_usage_error(self.run_striked(["--http", "127.0.0.1:99999"]), "--http")
        self.assert_usage_error(self.run_striked(["--catalog", "mysql://x"]), "--catalog")
        self.assert_usage_error(self.run_striked(["--data"]), "--data needs a value")
        self.assert_usage_error(self.run_striked([], {"STRIKE_GRPC": "x:y"}), "STRIKE_GRPC")
        self.assert_usage_error(self.run_striked(["--http", "0.0.0.0:8080"]), "non-loopback")
        # a tokens file that cannot be used (not a regular file): never serve without it
        self.assert_usage_error(self.run_striked(["--tokens", "/dev/null"]), "--tokens")

    def test_help_and_version(self):
        r = self.run_striked(["--help"])
        self.assertEqual(r.returncode, 0)
        for opt in ("--http", "--grpc", "--data", "--catalog", "--tokens", "--insecure"):
            self.assertIn(opt, r.stdout)
        r = self.run_striked(["--version"])
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("striked "))


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
