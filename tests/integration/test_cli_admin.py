"""strike fsck and strike gc against a real catalog and blob store, by store:
a local directory, or s3:// on the s3 fixture's moto_server (test_cli_admin_s3).

- a consistent store: fsck exits 0 and reports nothing missing or corrupt;
- an orphan (a blob no catalog row references) is listed by fsck, kept by gc
  within the grace period and deleted by gc after it; referenced blobs as old
  as the orphan are never deleted;
- a referenced blob that is missing or damaged makes fsck exit 1 and name it;
- usage errors exit 2;
- stdout holds only data (fsck's findings, one "KIND PATH: DETAIL" line each);
  the fsck and gc summaries are notes on stderr.

Age is a file's mtime here and an object's LastModified on S3, which moto
cannot set: on S3 the CLI goes through s3_front.py, which reports chosen
objects older than they are (in ListObjectsV2 and Last-Modified), as a clock
that moved on would.
"""
import glob
import os
import re
import subprocess
import time
import unittest
import urllib.request

import harness as h
from s3_front import S3Front


def strike(*args, env=None):
    return subprocess.run([os.path.join(h.BIN_DIR, "strike")] + list(args), capture_output=True,
                          text=True, timeout=120, env=env)


FINDING = re.compile(r"^(missing|corrupt|orphan) tables/\S+: .+$")


class LocalStore:
    """A blob store directory; paths relative to it, as the catalog names blobs."""

    def __init__(self):
        self.root = h.tmpdir()
        self.data = os.path.join(self.root, "data")

    def blobs(self, kind, suffix):
        return sorted(os.path.relpath(p, self.data)
                      for p in glob.glob(os.path.join(self.data, "tables", "*", kind, "*" + suffix)))

    def read(self, rel):
        with open(os.path.join(self.data, rel), "rb") as f:
            return f.read()

    def write(self, rel, data):
        with open(os.path.join(self.data, rel), "wb") as f:
            f.write(data)

    def rename(self, rel, new):
        os.rename(os.path.join(self.data, rel), os.path.join(self.data, new))

    def exists(self, rel):
        return os.path.exists(os.path.join(self.data, rel))

    def age(self, rel, seconds):
        old = time.time() - seconds
        os.utime(os.path.join(self.data, rel), (old, old))

    def env(self):
        return None

    def close(self):
        subprocess.run(["rm", "-rf", self.root])


class S3Store:
    """A fresh prefix of the s3 fixture's bucket; the CLI reaches it through an S3Front."""

    def __init__(self):
        self.data = h.s3_data_url()
        self.bucket_prefix = self.data[len("s3://"):]
        self.front = S3Front(h.s3_endpoint(), os.environ["AWS_SECRET_ACCESS_KEY"])

    def blobs(self, kind, suffix):
        bucket, prefix = self.bucket_prefix.split("/", 1)
        url = f"{h.s3_endpoint()}/{bucket}?list-type=2&prefix={prefix}/tables/"
        with urllib.request.urlopen(h.s3_presign("GET", url), timeout=30) as f:
            body = f.read().decode()
        keys = [k.split("</Key>")[0][len(prefix) + 1:] for k in body.split("<Key>")[1:]]
        return sorted(k for k in keys if re.fullmatch(rf"tables/[^/]+/{kind}/[^/]+{re.escape(suffix)}", k))

    def read(self, rel):
        status, body = h.s3_request("GET", self.data, rel)
        assert status == 200, (status, body[:300])
        return body

    def write(self, rel, data):  # a plain PUT overwrites (striked's own PUTs never do)
        status, body = h.s3_request("PUT", self.data, rel, data)
        assert status == 200, (status, body[:300])

    def rename(self, rel, new):
        self.write(new, self.read(rel))
        status, body = h.s3_request("DELETE", self.data, rel)
        assert status == 204, (status, body[:300])

    def exists(self, rel):
        return h.blob_exists(self.data, rel)

    def age(self, rel, seconds):
        self.front.age(f"{self.bucket_prefix}/{rel}", seconds)

    def env(self):
        return h.cli_env(self.data, self.front.endpoint)

    def close(self):
        self.front.close()


class Admin(unittest.TestCase):
    def assert_findings_only(self, out, n):
        """stdout is exactly n findings, nothing else (no summary, no notes)."""
        lines = out.splitlines()
        self.assertEqual(len(lines), n, out)
        for line in lines:
            self.assertRegex(line, FINDING)

    def test_fsck_and_gc(self):
        url = h.create_db("strike_cli_admin")
        store = S3Store() if h.s3_endpoint() else LocalStore()
        try:
            self.fsck_and_gc(url, store)
        finally:
            store.close()

    def fsck_and_gc(self, url, store):
        data, env = store.data, store.env()
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

        r = strike("fsck", "--catalog", url, "--data", data, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fsck: 2 referenced blobs, 0 missing, 0 corrupt, 0 orphans", r.stderr)
        self.assert_findings_only(r.stdout, 0)

        parquet = store.blobs("data", ".parquet")
        puffin = store.blobs("dv", ".puffin")
        self.assertEqual(len(parquet), 1, parquet)
        self.assertEqual(len(puffin), 1, puffin)
        parquet, puffin = parquet[0], puffin[0]

        # an orphan: listed, kept within the grace, deleted after it
        orphan = os.path.join(os.path.dirname(puffin), "0000-orphan.puffin")
        store.write(orphan, b"PFA1")
        r = strike("fsck", "--catalog", url, "--data", data, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("orphan", r.stdout)
        self.assertIn("0000-orphan.puffin", r.stdout)
        self.assert_findings_only(r.stdout, 1)
        self.assertIn("0 missing, 0 corrupt, 1 orphans", r.stderr)
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "1h", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("1 orphans, 0 deleted (grace 3600s)", r.stderr)  # within the grace: kept
        self.assertTrue(store.exists(orphan))
        for too_short in ("0s", "1s", "4m"):  # a commit in flight may hold its blobs that long
            r = strike("gc", "--catalog", url, "--data", data, "--grace", too_short, env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--grace: at least 5m", r.stderr)
            self.assertTrue(store.exists(orphan))
        # the referenced blobs are as old as the orphan from here on
        for rel in (orphan, parquet, puffin):
            store.age(rel, 600)
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "5m", "--dry-run", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertIn("1 orphans, 0 deleted (dry run)", r.stderr)
        self.assertTrue(store.exists(orphan))
        for rel in (orphan, parquet, puffin):
            store.age(rel, 7200)
        r = strike("gc", "--catalog", url, "--data", data, "--grace", "1h", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 orphans, 1 deleted", r.stderr)
        self.assertEqual(r.stdout, "", "gc prints no data: its summary is on stderr")
        self.assertFalse(store.exists(orphan))
        self.assertTrue(store.exists(parquet), "referenced blobs are never collected")
        self.assertTrue(store.exists(puffin), "referenced blobs are never collected")
        r = strike("fsck", "--catalog", url, "--data", data, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fsck: 2 referenced blobs, 0 missing, 0 corrupt, 0 orphans", r.stderr)

        # a damaged DV blob and a missing data file make fsck fail, naming them
        b = bytearray(store.read(puffin))
        b[10] ^= 0xFF
        store.write(puffin, bytes(b))
        r = strike("fsck", "--catalog", url, "--data", data, env=env)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("corrupt " + puffin + ": ", r.stdout)
        self.assert_findings_only(r.stdout, 1)
        self.assertIn("1 corrupt", r.stderr)
        store.rename(parquet, parquet + ".away")
        r = strike("fsck", "--catalog", url, "--data", data, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing " + parquet + ": ", r.stdout)
        # missing data file, corrupt DV, and the moved-away file as an orphan
        self.assert_findings_only(r.stdout, 3)
        self.assertIn("1 missing, 1 corrupt, 1 orphans", r.stderr)

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
