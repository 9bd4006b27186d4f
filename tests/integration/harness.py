"""harness.py - black-box helpers for integration tests: a fresh database on
the ctest PostgreSQL fixture, the real striked binary on free ports, and a
small HTTP client on the standard library.

Run with Debian's /usr/bin/python3 (it has grpcio and protobuf).
Environment (set by ctest): STRIKE_BIN_DIR, STRIKE_TEST_PG_HOST, STRIKE_SOURCE_DIR.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

BIN_DIR = os.environ.get("STRIKE_BIN_DIR", "")
PG_HOST = os.environ.get("STRIKE_TEST_PG_HOST", "")
SOURCE_DIR = os.environ.get("STRIKE_SOURCE_DIR", "")


def require_env():
    if not BIN_DIR or not os.path.exists(os.path.join(BIN_DIR, "striked")):
        raise RuntimeError("STRIKE_BIN_DIR must point at the built binaries (run through ctest)")


def psql_path():
    for v in ("15", "16", "17", "18", "14"):
        p = f"/usr/lib/postgresql/{v}/bin/psql"
        if os.path.exists(p):
            return p
    return shutil.which("psql") or "psql"


def create_db(name):
    """Drop and create database `name` on the fixture; return its URL for --catalog.
    Under the s3 fixture the name gets "_s3": a test's S3 run may run next to its
    local run."""
    if os.environ.get("STRIKE_TEST_S3"):
        name += "_s3"
    if not PG_HOST:
        raise RuntimeError("STRIKE_TEST_PG_HOST is not set (the PostgreSQL fixture is not running)")
    for sql in (f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name} TEMPLATE template0"):
        subprocess.run([psql_path(), "-h", PG_HOST, "-U", "postgres", "-d", "postgres", "-qAtc", sql],
                       check=True, capture_output=True)
    return f"postgresql://postgres@/{name}?host={urllib.parse.quote(PG_HOST, safe='')}"


def sql(db, query):
    """Run a query on a fixture database; return stdout rows as lists of strings."""
    out = subprocess.run([psql_path(), "-h", PG_HOST, "-U", "postgres", "-d", db, "-qAtF", "\t", "-c", query],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tmpdir(prefix="strike-test-"):
    """A temp dir the postgres user can traverse (mkdtemp makes 0700 ones)."""
    d = tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("STRIKE_TEST_TMP", "/tmp"))
    os.chmod(d, 0o755)
    return d


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        return json.loads(self.body)

    def ndjson(self):
        return [json.loads(line) for line in self.body.decode().splitlines() if line]

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


def request(port, method, path, body=None, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        hdrs.setdefault("Content-Type", "application/json")
    if isinstance(body, str):
        body = body.encode()
    conn.request(method, path, body=body, headers=hdrs)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return Response(r.status, r.getheaders(), data)


# What the sanitizers print; UBSan's "runtime error:" does not change the exit code.
# ThreadSanitizer (the `tsan` tests) reports races and exits 66 at the end.
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer",
                   "ThreadSanitizer")


def s3_endpoint():
    """The s3 fixture's endpoint when the test runs on S3 (STRIKE_TEST_S3), else None."""
    d = os.environ.get("STRIKE_TEST_S3")
    if not d:
        return None
    with open(os.path.join(d, "endpoint")) as f:
        return f.read().strip()


def cli_env(data_dir, endpoint=None):
    """The environment of `strike fsck|gc --data data_dir`: for an s3:// store, the s3
    fixture's endpoint (or `endpoint`) in STRIKE_S3_ENDPOINT, as striked gets --s3-endpoint."""
    e = dict(os.environ)
    if data_dir.startswith("s3://"):
        e["STRIKE_S3_ENDPOINT"] = endpoint or s3_endpoint()
        e["STRIKE_S3_PATH_STYLE"] = "1"
    return e


def blob_url(data_dir, rel):
    """An s3:// store's object `rel` as a URL of the s3 fixture's endpoint (path style)."""
    assert data_dir.startswith("s3://"), data_dir
    return f"{s3_endpoint()}/{data_dir[len('s3://'):].rstrip('/')}/{urllib.parse.quote(rel)}"


def s3_presign(method, url, expires=300, region="us-east-1"):
    """`url` (path style, already %-encoded) presigned for `method` with the test credentials
    (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): SigV4 query signing, host signed, payload
    unsigned. moto serves a private object to a signed request only."""
    import datetime
    import hashlib
    import hmac
    u = urllib.parse.urlsplit(url)
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{date}/{region}/s3/aws4_request"
    q = sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True) + [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", f"{os.environ['AWS_ACCESS_KEY_ID']}/{scope}"),
        ("X-Amz-Date", stamp), ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")])
    query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                     for k, v in q)
    creq = "\n".join([method, u.path, query, f"host:{u.netloc}", "", "host", "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + os.environ["AWS_SECRET_ACCESS_KEY"]).encode()
    for m in (date, region, "s3", "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return f"{u.scheme}://{u.netloc}{u.path}?{query}&X-Amz-Signature={sig}"


def s3_request(method, data_dir, rel, data=None, headers=None):
    """A signed request for the object rel of an s3:// store on the s3 fixture; returns
    (status, body); a 4xx or 5xx answer is returned, not raised."""
    hdrs = dict(headers or {})
    if data is not None:  # not urllib's default, form-urlencoded, which moto would parse
        hdrs.setdefault("Content-Type", "application/octet-stream")
    rq = urllib.request.Request(s3_presign(method, blob_url(data_dir, rel)), data=data,
                                method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(rq, timeout=30) as f:
            return f.status, f.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def blob_exists(data_dir, rel):
    """Whether the blob store at data_dir (a directory or s3:// on the s3 fixture) holds rel."""
    if not data_dir.startswith("s3://"):
        return os.path.exists(os.path.join(data_dir, rel))
    status, body = s3_request("HEAD", data_dir, rel)
    if status not in (200, 404):
        raise AssertionError(f"HEAD {rel}: {status} {body[:300]!r}")
    return status == 200


def s3_data_url():
    """A fresh s3:// --data of the fixture's bucket."""
    return f"s3://strike-test/t-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class Striked:
    """The real striked binary, started on free ports and stopped at the end."""

    def __init__(self, data_dir=None, catalog=None, extra_args=(), env=None, wait=True):
        require_env()
        self.owned_dir = None
        extra_args = list(extra_args)
        if data_dir is None and catalog and s3_endpoint():
            # under the s3 fixture (STRIKE_TEST_S3): a fresh prefix of its bucket
            data_dir = s3_data_url()
        if data_dir is not None and data_dir.startswith("s3://") and s3_endpoint() \
                and "--s3-endpoint" not in extra_args:
            # the fixture's bucket (a restart on the prefix of an earlier striked, too)
            extra_args += ["--s3-endpoint", s3_endpoint(), "--s3-path-style"]
        if data_dir is None:
            self.owned_dir = tmpdir()
            data_dir = os.path.join(self.owned_dir, "data")
        self.data_dir = data_dir
        self._catalog, self._extra, self._env = catalog, extra_args, env
        self.log = None
        self._log_paths = []  # every log this server wrote (one per start), removed on a clean close
        self._final_logs = None  # the last log's text once that file is gone
        # free_port() releases the port before striked binds it, so a test
        # running in parallel (ctest -j2) may take it first: then striked
        # cannot listen, and it is started again on other ports.
        for attempt in range(4):
            self._spawn()
            if not wait:
                return
            try:
                self.wait_healthy()
                return
            except RuntimeError:
                if attempt == 3 or "cannot listen" not in self.logs():
                    raise

    def _spawn(self):
        self.http_port = free_port()
        self.grpc_port = free_port()
        args = [os.path.join(BIN_DIR, "striked"), "--data", self.data_dir,
                "--http", f"127.0.0.1:{self.http_port}", "--grpc", f"127.0.0.1:{self.grpc_port}"]
        if self._catalog:
            args += ["--catalog", self._catalog]
        # No background maintenance unless a test asks for it (a later --compact-interval
        # wins): a compaction under a test's feet would change the files it looks at.
        args += ["--compact-interval", "0"]
        args += self._extra
        if self.log is not None:
            self.log.close()
        self.log_path = os.path.join(tempfile.gettempdir(), f"striked-{os.getpid()}-{self.http_port}.log")
        self.log = open(self.log_path, "wb")
        self._log_paths.append(self.log_path)
        self._final_logs = None
        e = dict(os.environ)
        e.update(self._env or {})
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=e)
        self.started = time.monotonic()

    def wait_healthy(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"striked exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                if request(self.http_port, "GET", "/healthz", timeout=2).status == 200:
                    return time.monotonic() - self.started
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"striked not healthy after {timeout}s:\n{self.logs()}")

    def req(self, method, path, body=None, headers=None, timeout=60):
        return request(self.http_port, method, path, body, headers, timeout)

    def logs(self):
        if not self.log.closed:
            self.log.flush()
        if self._final_logs is not None:  # closed clean: the file is gone
            return self._final_logs
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def log_records(self):
        out = []
        for line in self.logs().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Send `sig` and wait; return (exit code, seconds taken)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        return self.proc.returncode, time.monotonic() - t0

    def close(self):
        """Stop and clean up; fail on a sanitizer report in the log, also for
        the tests that do not check the exit code (a TSan race report)."""
        if self.proc.poll() is None:
            self.stop()
        self.log.close()
        if self.owned_dir:
            shutil.rmtree(self.owned_dir, ignore_errors=True)
        logs = self.logs()
        for m in SANITIZER_MARKS:
            if m in logs:
                raise AssertionError(f"sanitizer report in the server log:\n{logs[-8000:]}")
        # a clean close leaves no log behind in the temp directory (a sanitizer report keeps it);
        # logs() still answers from memory
        self._final_logs = logs
        for path in self._log_paths:
            try:
                os.unlink(path)
            except OSError:
                pass

    def successor(self):
        """A new striked on this one's blob store and catalog, with its arguments (after this one
        was killed): it takes over the data directory this one owned, and this one is closed."""
        new = Striked(data_dir=self.data_dir, catalog=self._catalog, extra_args=self._extra, env=self._env)
        new.owned_dir, self.owned_dir = self.owned_dir, None
        self.close()
        return new

    def close_clean(self, sig=signal.SIGTERM):
        """Stop, clean up, and fail unless striked exited 0 (ASan/LSan exit
        non-zero on a leak or an error) with no sanitizer report in its log.
        Returns the seconds the stop took."""
        code, took = self.stop(sig)
        logs = self.logs()
        self.close()  # raises on a sanitizer report
        if code != 0:
            raise AssertionError(f"striked exited with {code} after {signal.Signals(sig).name} "
                                 f"(leak or crash?):\n{logs[-5000:]}")
        return took

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            print(self.logs())
        self.close()


def postgres_pids_for(data_dir):
    """PIDs of processes whose working directory is inside data_dir (postgres chdirs to PGDATA)."""
    real = os.path.realpath(data_dir)
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{p}/cwd")
            with open(f"/proc/{p}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith("postgres") and (cwd == real or cwd.startswith(real + "/")):
            pids.append(int(p))
    return pids
