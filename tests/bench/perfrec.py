"""perfrec.py - `perf record` attached to running processes, for tests/bench/profile.sh.

bench.py (and bench_grpc_dv.py for measure i7, whose striked is its own)
record a measure while STRIKE_BENCH_PERF names a directory:

    with perfrec.Recorder([pid], os.path.join(dir, "m2.perf.data")):
        ...the measure...

The recording is `perf record -F FREQ --call-graph MODE -p PID,...`:
on-CPU samples only (time spent waiting for fsync or the catalog shows as
wall time in striked's debug log, not here). MODE is
STRIKE_BENCH_PERF_CALLGRAPH (default dwarf: the Release build has no frame
pointers), FREQ STRIKE_BENCH_PERF_FREQ (default 999 Hz). perf stops on
SIGINT and writes its file; a perf that cannot start fails the measure, so a
profile is never silently empty. With STRIKE_BENCH_PERF_TRACE=1, a
`perf trace -s -p PID,...` runs alongside and writes OUT.trace: per thread,
each system call's count and total, mean and max time (where the waits
are: fsync, poll on the catalog's socket, futex hand-offs). Python standard
library only.
"""
import os
import signal
import subprocess
import time


def enabled():
    """The directory profiles go to, or None."""
    d = os.environ.get("STRIKE_BENCH_PERF", "")
    return d or None


class Recorder:
    def __init__(self, pids, out):
        self.pids = [int(p) for p in pids]
        self.out = out
        self.proc = None
        self.trace = None
        self.log = None

    def __enter__(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.out)), exist_ok=True)
        cg = os.environ.get("STRIKE_BENCH_PERF_CALLGRAPH", "dwarf")
        freq = os.environ.get("STRIKE_BENCH_PERF_FREQ", "999")
        cmd = ["perf", "record", "-q", "-F", freq, "--call-graph", cg,
               "-p", ",".join(map(str, self.pids)), "-o", self.out]
        self.log = open(self.out + ".log", "w")
        self.log.write(" ".join(cmd) + "\n")
        self.log.flush()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        if os.environ.get("STRIKE_BENCH_PERF_TRACE") == "1":
            tcmd = ["perf", "trace", "-s", "-p", ",".join(map(str, self.pids)), "-o", self.out + ".trace"]
            self.log.write(" ".join(tcmd) + "\n")
            self.log.flush()
            self.trace = subprocess.Popen(tcmd, stdout=self.log, stderr=subprocess.STDOUT)
        # perf is attached once it has created its output file; give up after 10 s
        for _ in range(100):
            if self.proc.poll() is not None:
                raise RuntimeError(f"perf record exited {self.proc.returncode} (see {self.out}.log)")
            if os.path.exists(self.out) and os.path.getsize(self.out) > 0:
                break
            time.sleep(0.1)
        else:
            self._stop()
            raise RuntimeError(f"perf record did not start (see {self.out}.log)")
        return self

    def _stop(self):
        for p in (self.proc, self.trace):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in (self.proc, self.trace):
            if p is None:
                continue
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = self.trace = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def __exit__(self, *exc):
        self._stop()
        return False
