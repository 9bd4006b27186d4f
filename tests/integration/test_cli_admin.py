"""strike fsck and strike gc against a real catalog and blob store.

- a consistent store: fsck exits 0 and reports nothing missing or corrupt;
- an orphan (a blob no catalog row references) is listed by fsck, kept by gc
  within the grace period and deleted by gc after it;
- a referenced blob that is missing or damaged makes fsck exit 1 and name it;
- usage errors exit 2;
- stdout holds only data (fsck's findings, one "KIND PATH: DETAIL" line each);
  the fsck and gc summaries are notes on stderr.
"""
import glob
import os
import re
import subprocess
import time
import unittest

import harness as h


def strike(*args):
    return subprocess.run([os.path.join(h.BIN_DIR, "strike")] + list(args), capture_output=True,
                          text=True, timeout=120)


FINDING = re.compile(r"^(missing|corrupt|orphan) tables/\S+: .+$")


class Admin(unittest.TestCase):
    def assert_findings_only(self, out, n):
        """stdout is exactly n findings, nothing else (no summary, no notes)."""
        lines = out.splitlines()
        self.assertEqual(len(lines), n, out)
        for line in lines:
            self.assertRegex(line, FINDING)

    def test_fsck_and_gc(self):
        url = h.create_db("strike_cli_admin")
        root = h.tmpdir()
        data = os.path.join(root, "data")
        # DVs in Puffin files (not inline in the catalog): this test damages and removes blobs
        with h.Striked(data_dir=data, catalog=url, extra_args=["--dv-inline-max", "0"]) as s:
            r = s.req("POST", "/v1/tables", {
                "name": "t", "primary_key": ["id"],
                "columns": [{"name": "id", "type": "long", "required": True},
                            {"name": "v", "type": "string"}]})
            self.assertEqual(r.status, 201, r.body)
            rows = [{"op": "upsert", "row": {"id": i, "v": f"v{i}"}} for i in range(100)]
            self.assertEqual(s.req("POST", "/v1/tables/t/changes", {"changes": rows}).status, 200)
            dels = [{"op": "delete", "key": {"id": i}} for i in range(0, 100, 7)]
            self.assertEqual(s.req("POST", "/v1/tables/t/changes", {"changes": dels}).status, 200)
            self.assertEqual(s.stop()[0], 0)

        r = strike("fsck", "--catalog", url, "--data", data)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 missing, 0 corrupt, 0 orphans", r.stderr)
        self.assert_findings_only(r.stdout, 0)

        parquet = glob.glob(os.path.join(data, "tables", "*", "data", "*.parquet"))
        puffin = glob.glob(os.path.join(data, "tables", "*", "dv", "*.puffin"))
        self.assertEqual(len(parquet), 1)
        self.assertEqual(len(puffin), 1)

        # an orphan: listed, kept within the grace, deleted after it
        orphan = os.path.join(os.path.dirname(puffin[0]), "0000-orphan.puffin")
        with open(orphan, "wb") as f:
            f.write(b"PFA1")
        r = strike("fsck", "--catalog", url, "--data", data)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("orphan", r.stdout)
        self.assertIn("0000-orphan.puffin", r.stdout)
        self.assert_findings_only(r.stdout, 1)
        self.assertIn("0 missing, 0 corrupt, 1 orphans", r.stderr)
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "1h")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("1 orphans, 0 deleted (grace 3600s)", r.stderr)  # within the grace: kept
        self.assertTrue(os.path.exists(orphan))
        for too_short in ("0s", "1s", "4m"):  # a commit in flight may hold its blobs that long
            r = strike("gc", "--catalog", url, "--data", data, "--grace", too_short)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--grace: at least 5m", r.stderr)
            self.assertTrue(os.path.exists(orphan))
        old = time.time() - 600
        os.utime(orphan, (old, old))
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "5m", "--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("1 orphans, 0 deleted (dry run)", r.stderr)
        self.assertTrue(os.path.exists(orphan))
        old = time.time() - 7200
        os.utime(orphan, (old, old))
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "1h")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 orphans, 1 deleted", r.stderr)
        self.assertEqual(r.stdout, "", "gc prints no data: its summary is on stderr")
        self.assertFalse(os.path.exists(orphan))
        self.assertTrue(os.path.exists(puffin[0]), "referenced blobs are never collected")

        # a damaged DV blob and a missing data file make fsck fail, naming them
        with open(puffin[0], "r+b") as f:
            f.seek(10)
            b = f.read(1)
            f.seek(10)
            f.write(bytes([b[0] ^ 0xFF]))
        r = strike("fsck", "--catalog", url, "--data", data)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("corrupt", r.stdout)
        self.assert_findings_only(r.stdout, 1)
        self.assertIn("1 corrupt", r.stderr)
        os.rename(parquet[0], parquet[0] + ".away")
        r = strike("fsck", "--catalog", url, "--data", data)
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing " + os.path.relpath(parquet[0], data), r.stdout)
        # missing data file, corrupt DV, and the moved-away file as an orphan
        self.assert_findings_only(r.stdout, 3)
        self.assertIn("1 missing, 1 corrupt, 1 orphans", r.stderr)
        subprocess.run(["rm", "-rf", root])

    def test_usage(self):
        self.assertEqual(strike("fsck").returncode, 2)
        self.assertEqual(strike("gc", "--catalog", "postgresql:///x", "--data", "/tmp",
                                "--grace", "soon").returncode, 2)
        r = strike("fsck", "--catalog", "postgresql://postgres@/nope?host=/nonexistent",
                   "--data", "/tmp")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot connect", r.stderr)


class Help(unittest.TestCase):
    """Issue 28 item 13: every command and subcommand of strike, as the CLI's own
    command table lists them (`strike --list-commands`), answers --help and -h with its
    usage on stdout and exit 0; the top-level usage names every command."""

    def test_every_command_answers_help(self):
        r = strike("--list-commands")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        commands = [line for line in lines if " " not in line]
        subs = [line.split() for line in lines if " " in line]
        self.assertGreaterEqual(len(commands), 15, lines)
        self.assertIn(["token", "new"], subs)
        self.assertIn(["dv", "get"], subs)
        top = strike("--help")
        self.assertEqual(top.returncode, 0)
        for c in commands:
            self.assertRegex(top.stdout, rf"(?m)^  {c} ", f"strike --help does not list {c}")
        for sub in subs:
            self.assertIn(sub[0], commands)
        for line in lines:
            for flag in ("--help", "-h"):
                with self.subTest(command=line, flag=flag):
                    r = strike(*line.split(), flag)
                    self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
                    self.assertTrue(r.stdout.startswith("usage: strike "), r.stdout)
                    cmd = line.split()
                    # the usage is the command's own: it names the command (and the subcommand)
                    self.assertIn(f"strike {cmd[0]} ", r.stdout)
                    if len(cmd) > 1:
                        self.assertRegex(r.stdout, rf"\b{cmd[1]}\b")
        # a token new with --help creates no token
        r = strike("token", "new", "--scope", "read", "--tables", "*", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertNotIn("stk_", r.stdout)

    def test_striked_help_says_what_maintenance_does(self):
        r = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--help"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0)
        line = next(x for x in r.stdout.splitlines() if x.strip().startswith("--compact-interval"))
        for what in ("inline DVs", "compaction", "--retain"):
            self.assertIn(what, line)


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
