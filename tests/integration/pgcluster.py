"""pgcluster.py - a private throw-away PostgreSQL cluster that a test may kill.

The shared ctest fixture (tests/lib/pgfixture.sh) serves every other test, so
a test that kills, stops or restarts PostgreSQL starts its own cluster here:
initdb in a temp dir, a unix socket in that dir only (no TCP), a free port
number (it names the socket), and as root everything runs as the postgres
user (PostgreSQL refuses root), as pgfixture.sh does.

Unlike the fixture, the cluster keeps synchronous_commit on: a test that
kills the postmaster must not lose a commit PostgreSQL acknowledged (with
it off, a commit is acknowledged before its WAL leaves shared memory).
fsync stays off: the kernel outlives the killed processes, so what was
written survives; only a machine crash would need fsync.
"""
import os
import shutil
import signal
import subprocess
import time
import urllib.parse

import harness as h


def pg_bindir():
    for v in ("15", "16", "17", "18", "14"):
        d = f"/usr/lib/postgresql/{v}/bin"
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    initdb = shutil.which("initdb")
    if not initdb:
        raise RuntimeError("initdb not found (install postgresql-15)")
    return os.path.dirname(initdb)


def _as_pg(args):
    if os.getuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + args
    return args


class PgCluster:
    def __init__(self, prefix="strike-faults-pg-"):
        self.bindir = pg_bindir()
        self.dir = h.tmpdir(prefix)
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data = os.path.join(self.dir, "data")
        self.port = h.free_port()
        self.log = os.path.join(self.dir, "server.log")
        subprocess.run(_as_pg([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "postgres",
                               "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]),
                       check=True, capture_output=True, timeout=120)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"listen_addresses = ''\nunix_socket_directories = '{self.dir}'\nport = {self.port}\n"
                    "max_connections = 100\nshared_buffers = 32MB\nfsync = off\nfull_page_writes = off\n"
                    "synchronous_commit = on\n")
        self.start()

    def _ctl(self, *args, timeout=60):
        return subprocess.run(_as_pg([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, *args]),
                              capture_output=True, text=True, timeout=timeout)

    def start(self, timeout=60):
        """Start on the same data dir and port; crash recovery runs if it was killed."""
        p = self._ctl("-l", self.log, "-w", "-t", str(timeout), "start", timeout=timeout + 10)
        if p.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start:\n{p.stdout}{p.stderr}\n{self.server_log()}")

    def server_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def kill9(self):
        """kill -9 of the postmaster; then wait (10 s at most) for its children,
        which exit on their own once they see it gone, so that it can start again."""
        pid = self.postmaster_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if not h.postgres_pids_for(self.data):
                return pid
            time.sleep(0.1)
        for p in h.postgres_pids_for(self.data):  # ours alone: their cwd is our data dir
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pid

    def signal_all(self, sig):
        """Send `sig` to the postmaster and every backend of this cluster (SIGSTOP/SIGCONT)."""
        pids = h.postgres_pids_for(self.data)
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        return pids

    def url(self, db):
        return f"postgresql://postgres@/{db}?host={urllib.parse.quote(self.dir, safe='')}&port={self.port}"

    def psql(self, db, query, timeout=30):
        out = subprocess.run([h.psql_path(), "-h", self.dir, "-p", str(self.port), "-U", "postgres", "-d", db,
                              "-qAtF", "\t", "-c", query], check=True, capture_output=True, text=True,
                             timeout=timeout).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def create_db(self, name):
        self.psql("postgres", f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)

    def close(self):
        """Stop (continuing it first, in case a test left it stopped) and remove everything."""
        self.signal_all(signal.SIGCONT)
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            if self._ctl("-m", "immediate", "-w", "-t", "20", "stop", timeout=30).returncode != 0:
                for p in h.postgres_pids_for(self.data):
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        shutil.rmtree(self.dir, ignore_errors=True)
