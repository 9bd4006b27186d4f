"""test_s3.py - strike on an S3-compatible store (moto_server of the s3 fixture).

- Two striked processes that share only the catalog URL and the bucket serve
  the same table: what one commits, the other scans, deletes and serves as
  file ranges.
- The object store stopped in the middle of an ingest: the commits that
  cannot write their Parquet file answer 503 with Retry-After, nothing
  acknowledged is lost, and once the store is back the same striked (no
  restart) commits again. "Stopped" is a TCP relay between striked and
  moto_server that stops accepting and cuts its connections, so moto keeps
  its objects (it holds them in memory). The same relay answers 503 Slow Down
  (S3's throttling) for a while: a few are absorbed by the retries, a longer
  stretch is a 503 to the client. The credentials never reach the log.
- Every object striked wrote is a key of the bucket under its prefix.
- A plan presigned for two hours, then its snapshot expired and its files
  compacted away: its presigned URLs still read the files and DVs (expiry
  keeps what it frees until the last presigned URL of the table expires).
"""
import hashlib
import hmac
import json
import os
import re
import socket
import subprocess
import threading
import unittest
import urllib.error
import urllib.request

import harness as h
import http_util as u

TABLE = {"name": "kv",
         "columns": [{"name": "k", "type": "long", "required": True},
                     {"name": "v", "type": "string"}],
         "primary_key": ["k"]}


class Relay:
    """A TCP relay 127.0.0.1:port -> target that can be stopped and started."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = h.free_port()
        self.lsock = None
        self.conns = []
        self.mu = threading.Lock()
        self.failing = 0  # connections still to answer with 503 Slow Down
        self.failed = 0
        self.start()

    def fail(self, n):
        """Answer the next n connections' request with 503 Slow Down (S3's
        throttling answer) and close them; pooled connections are cut first."""
        self.stop()
        self.failing, self.failed = n, 0
        self.start()

    def start(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.lsock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def stop(self):
        s, self.lsock = self.lsock, None
        if s is None:
            return
        try:
            s.shutdown(socket.SHUT_RDWR)  # stops listening and wakes accept() (Linux)
        except OSError:
            pass
        s.close()
        with self.mu:
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
            with self.mu:
                slow = self.failing > 0
                if slow:
                    self.failing -= 1
                    self.failed += 1
            if slow:
                threading.Thread(target=self._slow_down, args=(c,), daemon=True).start()
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.mu:
                self.conns += [c, up]
            for a, b in ((c, up), (up, c)):
                threading.Thread(target=u.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _slow_down(c):
        try:
            c.settimeout(10)
            c.recv(65536)
            body = b"<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
            c.sendall(b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        except OSError:
            pass
        c.close()


def scan(s, table="kv"):
    r = s.req("POST", f"/v1/tables/{table}/scan", {})
    assert r.status == 200, r
    return {row["k"]: row["v"] for row in map(json.loads, r.body.decode().splitlines())}


def list_keys(endpoint, prefix):
    url = f"{endpoint}/strike-test?list-type=2&prefix={prefix}"
    with urllib.request.urlopen(url, timeout=30) as f:
        body = f.read().decode()
    return [p.split("</Key>")[0] for p in body.split("<Key>")[1:]]


def sigv4_ok(head, secret, region="us-east-1"):
    """Check a request's SigV4 Authorization header as S3 does: rebuild the
    canonical request from what was sent, sign it with the secret, compare."""
    lines = head.split("\r\n")
    method, target, _ = lines[0].split(" ")
    hdrs = {}
    for ln in lines[1:]:
        k, v = ln.split(":", 1)
        hdrs[k.strip().lower()] = v.strip()
    auth = hdrs["authorization"]
    signed = re.search(r"SignedHeaders=([^,]+)", auth).group(1).split(";")
    sig = re.search(r"Signature=(\w+)", auth).group(1)
    missing = [x for x in signed if x not in hdrs]
    if missing:
        return f"signed but not sent: {missing}"
    ts = hdrs["x-amz-date"]
    path, query = (target.split("?", 1) + [""])[:2]
    creq = "\n".join([method, path, query] + [f"{x}:{hdrs[x]}" for x in signed] +
                     ["", ";".join(signed), hdrs.get("x-amz-content-sha256", "")])
    scope = f"{ts[:8]}/{region}/s3/aws4_request"
    sts = f"AWS4-HMAC-SHA256\n{ts}\n{scope}\n" + hashlib.sha256(creq.encode()).hexdigest()
    k = ("AWS4" + secret).encode()
    for m in (ts[:8], region, "s3", "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    good = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return "ok" if good == sig else f"signature mismatch for\n{creq}"


class S3(unittest.TestCase):
    def setUp(self):
        self.endpoint = h.s3_endpoint()
        self.assertIsNotNone(self.endpoint, "run under the s3 fixture (STRIKE_TEST_S3)")

    def test_two_servers_share_catalog_and_bucket(self):
        catalog = h.create_db("strike_s3_two")
        data = h.s3_data_url()
        args = ["--s3-endpoint", self.endpoint, "--s3-path-style"]
        a = h.Striked(data_dir=data, catalog=catalog, extra_args=args)
        b = h.Striked(data_dir=data, catalog=catalog, extra_args=args)
        try:
            self.assertEqual(a.req("POST", "/v1/tables", TABLE).status, 201)
            rows = [{"op": "upsert", "row": {"k": i, "v": f"a{i}"}} for i in range(100)]
            r = a.req("POST", "/v1/tables/kv/changes", {"changes": rows})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(len(scan(b)), 100)
            r = b.req("POST", "/v1/tables/kv/changes",
                      {"changes": [{"op": "delete", "key": {"k": 5}},
                                   {"op": "upsert", "row": {"k": 6, "v": "b6"}}]})
            self.assertEqual(r.status, 200, r)
            got = scan(a)
            self.assertNotIn(5, got)
            self.assertEqual(got[6], "b6")
            self.assertEqual(len(got), 99)
            # the file endpoint reads its ranges from the bucket on either server
            plan = json.loads(a.req("POST", "/v1/tables/kv/plan", {}).body)
            fid = plan["files"][0]["id"]
            ra = a.req("GET", f"/v1/tables/kv/files/{fid}", headers={"Range": "bytes=0-3"})
            rb = b.req("GET", f"/v1/tables/kv/files/{fid}", headers={"Range": "bytes=0-3"})
            self.assertEqual((ra.status, ra.body), (206, b"PAR1"))
            self.assertEqual((rb.status, rb.body), (206, b"PAR1"))
            whole = b.req("GET", f"/v1/tables/kv/files/{fid}")
            self.assertEqual(whole.status, 200)
            self.assertEqual(whole.body[:4], b"PAR1")
            self.assertEqual(whole.body[-4:], b"PAR1")
            # presigned URLs: the file and its DV blob straight from the store
            r = a.req("POST", "/v1/tables/kv/plan", {"presign": True, "expires_in": 600})
            self.assertEqual(r.status, 200, r)
            f0 = next(f for f in json.loads(r.body)["files"] if f["dv"] is not None)
            self.assertIn("X-Amz-Signature=", f0["presigned_url"])
            self.assertIn("X-Amz-Expires=600&", f0["presigned_url"])
            self.assertRegex(f0["expires_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
            with urllib.request.urlopen(f0["presigned_url"], timeout=30) as g:
                self.assertEqual(g.read(), b.req("GET", f"/v1/tables/kv/files/{f0['id']}").body)
            dv = f0["dv"]
            self.assertIsNotNone(dv, f0)
            rq = urllib.request.Request(dv["presigned_url"], headers={
                "Range": f"bytes={dv['offset']}-{dv['offset'] + dv['length'] - 1}"})
            with urllib.request.urlopen(rq, timeout=30) as g:
                self.assertEqual(len(g.read()), dv["length"])
            for bad, field in (({"presign": True, "expires_in": 0}, "expires_in"),
                               ({"presign": True, "expires_in": 604801}, "expires_in"),
                               ({"presign": "yes"}, "presign"),
                               ({"expires_in": 60}, "expires_in")):
                r = a.req("POST", "/v1/tables/kv/plan", bad)
                self.assertEqual(r.status, 400, (bad, r))
                self.assertIn(field, json.loads(r.body)["detail"])
            # every object is under the prefix: Parquet and Puffin files
            keys = list_keys(self.endpoint, data[len("s3://strike-test/"):] + "/")
            self.assertTrue(any(k.endswith(".parquet") for k in keys), keys)
            self.assertTrue(any(k.endswith(".puffin") for k in keys), keys)
            self.assertEqual(a.stop()[0], 0)
            self.assertEqual(b.stop()[0], 0)
        finally:
            a.close()
            b.close()

    def test_presigned_plan_outlives_expiry(self):
        catalog = h.create_db("strike_s3_presign_grace")
        db = catalog.split("/")[-1].split("?")[0]
        data = h.s3_data_url()
        a = h.Striked(data_dir=data, catalog=catalog,
                      extra_args=["--s3-endpoint", self.endpoint, "--s3-path-style"])
        try:
            self.assertEqual(a.req("POST", "/v1/tables", TABLE).status, 201)
            for k in range(3):  # three files, a DV on the first
                rows = [{"op": "upsert", "row": {"k": k * 10 + i, "v": f"v{k}{i}"}} for i in range(10)]
                self.assertEqual(a.req("POST", "/v1/tables/kv/changes", {"changes": rows}).status, 200)
            r = a.req("POST", "/v1/tables/kv/changes", {"changes": [{"op": "delete", "key": {"k": 3}}]})
            self.assertEqual(r.status, 200, r)
            r = a.req("POST", "/v1/tables/kv/plan", {"presign": True, "expires_in": 7200})
            self.assertEqual(r.status, 200, r)
            plan = json.loads(r.body)
            self.assertEqual(len(plan["files"]), 3)
            before = {}
            for f in plan["files"]:
                with urllib.request.urlopen(f["presigned_url"], timeout=30) as g:
                    before[f["presigned_url"]] = g.read()
                if f["dv"]:
                    with urllib.request.urlopen(f["dv"]["presigned_url"], timeout=30) as g:
                        before[f["dv"]["presigned_url"]] = g.read()
            self.assertEqual(len(before), 4)
            # a shorter presign later does not shorten the table's horizon
            self.assertEqual(a.req("POST", "/v1/tables/kv/plan", {"presign": True, "expires_in": 60}).status, 200)
            # every file of the plan rewritten, then every older snapshot expired
            r = a.req("POST", "/v1/tables/kv/compact", {"min_deleted_fraction": 0})
            self.assertEqual(json.loads(r.body)["rewritten_files"], 3, r)
            r = a.req("POST", "/v1/tables/kv/expire", {"retain_last": 1})
            self.assertEqual(r.status, 200, r)
            res = json.loads(r.body)
            self.assertGreater(res["expired_snapshots"], 0, res)
            # the plan's presigned URLs still read what they read
            for url, body in before.items():
                try:
                    with urllib.request.urlopen(url, timeout=30) as g:
                        self.assertEqual(g.read(), body)
                except urllib.error.HTTPError as e:
                    self.fail(f"a presigned URL of a plan handed out before expiry: {e.code}: {url}")
            self.assertEqual(res["deleted_files"], 0, res)
            # kept until the URLs expire (two hours), longer than the default grace (one hour)
            left = h.sql(db, "SELECT count(*), min(extract(epoch FROM deletable_after - now())) "
                             "FROM strike.expired_blobs")[0]
            self.assertEqual(int(left[0]), 4)
            self.assertGreater(float(left[1]), 7200 - 120)
            self.assertEqual(a.stop()[0], 0)
        finally:
            a.close()

    def test_requests_are_signed_as_s3_checks(self):
        """moto does not check signatures: a listener that does (SigV4 by hand
        above) takes striked's first PUT and answers 503 to everything."""
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(8)
        heads = []

        def serve():
            while True:
                try:
                    c, _ = ls.accept()
                except OSError:
                    return
                data = b""
                c.settimeout(10)
                try:
                    while b"\r\n\r\n" not in data:
                        d = c.recv(65536)
                        if not d:
                            break
                        data += d
                    heads.append(data.split(b"\r\n\r\n")[0].decode())
                    c.sendall(b"HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass
                c.close()

        threading.Thread(target=serve, daemon=True).start()
        s = h.Striked(data_dir="s3://strike-test/signed", catalog=h.create_db("strike_s3_sig"),
                      extra_args=["--s3-endpoint", f"http://127.0.0.1:{ls.getsockname()[1]}",
                                  "--s3-region", "eu-west-3"])
        try:
            self.assertEqual(s.req("POST", "/v1/tables", TABLE).status, 201)
            r = s.req("POST", "/v1/tables/kv/changes",
                      {"changes": [{"op": "upsert", "row": {"k": 1, "v": "x"}}]})
            self.assertEqual(r.status, 503, r)
            self.assertGreaterEqual(len(heads), 1)
            put = heads[0]
            self.assertTrue(put.startswith("PUT /strike-test/signed/tables/"), put)
            self.assertIn("\r\nIf-None-Match: *", put)
            self.assertIn("\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD", put)
            self.assertIn("Credential=" + os.environ["AWS_ACCESS_KEY_ID"] + "/", put)
            self.assertEqual(sigv4_ok(put, os.environ["AWS_SECRET_ACCESS_KEY"], "eu-west-3"), "ok")
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()
            ls.close()

    def test_presign_refused_on_a_local_store(self):
        d = h.tmpdir("strike-s3-local-")
        s = h.Striked(data_dir=os.path.join(d, "data"), catalog=h.create_db("strike_s3_local"))
        try:
            self.assertEqual(s.req("POST", "/v1/tables", TABLE).status, 201)
            r = s.req("POST", "/v1/tables/kv/plan", {"presign": True})
            self.assertEqual(r.status, 400, r)
            self.assertIn("presign", json.loads(r.body)["detail"])
            self.assertEqual(s.req("POST", "/v1/tables/kv/plan", {"presign": False}).status, 200)
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()
            subprocess.run(["rm", "-rf", d])

    def test_store_stopped_mid_ingest(self):
        port = int(self.endpoint.rsplit(":", 1)[1])
        relay = Relay(port)
        s = h.Striked(data_dir=h.s3_data_url(), catalog=h.create_db("strike_s3_stop"),
                      extra_args=["--s3-endpoint", f"http://127.0.0.1:{relay.port}",
                                  "--s3-path-style"])
        try:
            self.assertEqual(s.req("POST", "/v1/tables", TABLE).status, 201)
            acked = {}
            k = 0

            def batch():
                nonlocal k
                rows = [{"op": "upsert", "row": {"k": k + i, "v": f"v{k + i}"}} for i in range(20)]
                r = s.req("POST", "/v1/tables/kv/changes", {"changes": rows})
                if r.status == 200:
                    for i in range(20):
                        acked[k + i] = f"v{k + i}"
                k += 20
                return r

            for _ in range(5):
                self.assertEqual(batch().status, 200)
            # throttled (503 Slow Down) a few times: the retries carry the commit
            relay.fail(3)
            self.assertEqual(batch().status, 200)
            self.assertEqual(relay.failed, 3)
            self.assertGreaterEqual(s.logs().count("server error (attempt"), 3)
            # throttled for longer than the retries last: 503 to the client
            relay.fail(1000)
            r = batch()
            self.assertEqual(r.status, 503, r)
            self.assertEqual(r.header("Retry-After"), "1")
            relay.fail(0)
            relay.stop()
            refused = [batch() for _ in range(3)]
            for r in refused:
                self.assertEqual(r.status, 503, r)
                self.assertEqual(r.header("Retry-After"), "1")
                self.assertIn("object store", json.loads(r.body)["detail"])
            relay.start()
            for _ in range(5):
                self.assertEqual(batch().status, 200)
            got = scan(s)
            self.assertEqual(got, acked)  # nothing acknowledged lost, nothing refused committed
            self.assertEqual(len(got), 220)
            # the credentials never reach the log, whatever failed
            self.assertNotIn(os.environ["AWS_SECRET_ACCESS_KEY"], s.logs())
            self.assertNotIn(os.environ["AWS_ACCESS_KEY_ID"], s.logs())
            self.assertEqual(s.stop()[0], 0)
        finally:
            s.close()
            relay.stop()


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
