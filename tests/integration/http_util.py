"""http_util.py - helpers shared by the HTTP integration tests."""
import json
import os
import re
import socket
import subprocess
import threading

import harness as h

ORDERS = {
    "name": "orders",
    "columns": [
        {"name": "order_id", "type": "long", "required": True},
        {"name": "user_id", "type": "long", "required": True},
        {"name": "amount", "type": "double"},
        {"name": "status", "type": "string"},
        {"name": "updated_at", "type": "timestamp"},
    ],
    "primary_key": ["order_id"],
    "version_column": "updated_at",
}


def table_def(name, **over):
    d = json.loads(json.dumps(ORDERS))
    d["name"] = name
    d.update(over)
    return d


def assert_problem(tc, r, status, needle=None):
    """r is an RFC 9457 problem with `status`, and its detail contains `needle`."""
    tc.assertEqual(r.status, status, r)
    tc.assertEqual(r.header("Content-Type"), "application/problem+json", r)
    p = r.json()
    for k in ("type", "title", "status", "detail"):
        tc.assertIn(k, p, p)
    tc.assertEqual(p["status"], status)
    tc.assertIsInstance(p["detail"], str)
    tc.assertTrue(p["detail"], p)
    if needle is not None:
        tc.assertIn(needle, p["detail"], p)
    return p


def changes(s, table, chs, headers=None, **extra):
    body = {"changes": chs}
    body.update(extra)
    return s.req("POST", f"/v1/tables/{table}/changes", body, headers)


def ok_changes(tc, s, table, chs, **extra):
    r = changes(s, table, chs, **extra)
    tc.assertEqual(r.status, 200, r)
    return r.json()


def scan(s, table, body=None):
    return s.req("POST", f"/v1/tables/{table}/scan", body if body is not None else {})


def scan_rows(tc, s, table, body=None):
    r = scan(s, table, body)
    tc.assertEqual(r.status, 200, r)
    tc.assertEqual(r.header("Content-Type"), "application/x-ndjson")
    return r.ndjson()


def curl(*args, input=None):
    """Run curl; return (exit code, stdout bytes, stderr text)."""
    p = subprocess.run(["curl", "-sS", *args], capture_output=True, input=input, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def raw_http(port, data, read_timeout=10):
    """Send raw bytes on a fresh connection and read until the server closes or stops
    sending for `read_timeout` s; return the bytes received."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as c:
        c.sendall(data)
        out = b""
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                out += b
                if b"\r\n\r\n" in out and _complete(out):
                    break
        except socket.timeout:
            pass
        return out


def _complete(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v.strip())
    return False


def parse_raw(resp):
    """(status, headers dict lower-case, body) of one raw HTTP/1.1 response with Content-Length."""
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body


def pump(a, b):
    """Copy a's bytes to b until either side closes, then shut both down."""
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for x in (a, b):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class TcpProxy:
    """A TCP listener on 127.0.0.1 that forwards to a unix socket; `down()` drops every
    connection and refuses new ones, `up()` listens again on the same port."""

    def __init__(self, unix_path):
        self.unix_path = unix_path
        self.port = h.free_port()
        self.lock = threading.Lock()
        self.conns = []
        self.lsock = None
        self.up()

    def up(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.lsock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def down(self):
        with self.lock:
            if self.lsock is not None:
                try:
                    self.lsock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self.lsock.close()
                self.lsock = None
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            try:
                u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                u.connect(self.unix_path)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            threading.Thread(target=pump, args=(c, u), daemon=True).start()
            threading.Thread(target=pump, args=(u, c), daemon=True).start()

    def close(self):
        self.down()


def pg_socket():
    return os.path.join(h.PG_HOST, ".s.PGSQL.5432")


def metric(s, name):
    """A counter of the server's /metrics (None when it is not there)."""
    r = s.req("GET", "/metrics")
    m = re.search(rf"^{name} (\d+)$", r.body.decode(), re.M)
    return int(m.group(1)) if m else None
