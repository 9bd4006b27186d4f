"""s3_front.py - an HTTP front of the s3 fixture's moto_server that does two
things S3 does and moto does not, and passes everything else through:

- a presigned request (X-Amz-Signature in the query) is checked as S3 checks
  it: the SigV4 query signature, recomputed here from the request and the
  secret key, must match (else 403 SignatureDoesNotMatch), and X-Amz-Date +
  X-Amz-Expires must not have passed (else 403 AccessDenied "Request has
  expired"). moto 5.2.1 serves an expired presigned URL as a fresh one.
- `age(key, seconds)`: the object's LastModified, in ListObjectsV2 answers and
  in the Last-Modified header of HEAD and GET, is that much older, as if the
  clock had moved on for that object alone. moto has no way to set it, and
  gc's shortest grace is 5 minutes.

Point striked or the strike CLI at `endpoint` (path-style addressing) instead
of the fixture's; objects live in moto, so both endpoints see the same bucket.
"""
import datetime
import email.utils
import hashlib
import hmac
import http.client
import http.server
import re
import threading
import time
import urllib.parse

import harness as h

# hop-by-hop headers, not forwarded
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
       "host", "content-length", "expect"}


def uri_encode(s):
    """AWS's URI encoding of a query key or value: all but A-Z a-z 0-9 - _ . ~ as %XX."""
    return urllib.parse.quote(s, safe="-_.~")


def presign_problem(method, path, query, host, secret, now=None):
    """Why S3 would refuse this presigned request (None: it would not). `path` as sent
    (encoded once), `query` the raw query string, `host` the Host header."""
    params = urllib.parse.parse_qsl(query, keep_blank_values=True)
    p = dict(params)
    for k in ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
              "X-Amz-SignedHeaders", "X-Amz-Signature"):
        if k not in p:
            return 400, "AuthorizationQueryParametersError", f"{k} is missing"
    if p["X-Amz-Algorithm"] != "AWS4-HMAC-SHA256":
        return 400, "AuthorizationQueryParametersError", "X-Amz-Algorithm"
    signed = p["X-Amz-SignedHeaders"].split(";")
    if signed != ["host"]:
        return 403, "SignatureDoesNotMatch", f"signed headers {signed} (this front checks host only)"
    creq = "\n".join([
        method, path,
        "&".join(f"{uri_encode(k)}={uri_encode(v)}" for k, v in sorted(params) if k != "X-Amz-Signature"),
        f"host:{host}", "", "host", "UNSIGNED-PAYLOAD"])
    _, date, region, service, term = p["X-Amz-Credential"].split("/")
    stamp = p["X-Amz-Date"]
    sts = "\n".join(["AWS4-HMAC-SHA256", stamp, f"{date}/{region}/{service}/{term}",
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for m in (date, region, service, term):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(hmac.new(k, sts.encode(), hashlib.sha256).hexdigest(), p["X-Amz-Signature"]):
        return 403, "SignatureDoesNotMatch", "The request signature we calculated does not match"
    t0 = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    expires = int(p["X-Amz-Expires"])
    if not 1 <= expires <= 604800:
        return 400, "AuthorizationQueryParametersError", "X-Amz-Expires must be 1 to 604800"
    if (time.time() if now is None else now) > t0 + expires:
        return 403, "AccessDenied", "Request has expired"
    return None


class S3Front:
    """The front on a free port; upstream: the fixture's endpoint (h.s3_endpoint()), secret:
    the secret key striked signs with (AWS_SECRET_ACCESS_KEY of the s3 tests)."""

    def __init__(self, upstream, secret):
        u = urllib.parse.urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port
        self.secret = secret
        self.ages = {}        # key (bucket/...) -> seconds older
        self.refused = []     # (code, path) of every presigned request refused
        self.presigned_ok = 0
        self.lock = threading.Lock()
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_any(self):
                front._serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_any

        self.port = h.free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def age(self, key, seconds):
        """Make `key` (bucket/key) look `seconds` older than it is."""
        with self.lock:
            self.ages[key] = seconds

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _older(self, key):
        with self.lock:
            return self.ages.get(key, 0)

    def _body(self, rq):
        if rq.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(rq.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while rq.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += rq.rfile.read(n)
                rq.rfile.readline()
        n = int(rq.headers.get("Content-Length") or 0)
        return rq.rfile.read(n) if n else b""

    def _reply(self, rq, status, headers, body, head=False):
        rq.send_response(status)
        for k, v in headers:
            if k.lower() not in HOP:
                rq.send_header(k, v)
        rq.send_header("Content-Length", str(len(body)) if not head else
                       next((v for k, v in headers if k.lower() == "content-length"), "0"))
        rq.end_headers()
        if not head:
            rq.wfile.write(body)

    def _serve(self, rq):
        body = self._body(rq)
        path, _, query = rq.path.partition("?")
        key = urllib.parse.unquote(path.lstrip("/"))
        if "X-Amz-Signature=" in query:
            why = presign_problem(rq.command, path, query, rq.headers.get("Host", ""), self.secret)
            if why is not None:
                status, code, msg = why
                with self.lock:
                    self.refused.append((code, path))
                xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>"
                       f"<Message>{msg}</Message></Error>").encode()
                self._reply(rq, status, [("Content-Type", "application/xml")], xml)
                return
            with self.lock:
                self.presigned_ok += 1
        hdrs = {k: v for k, v in rq.headers.items() if k.lower() not in HOP}
        c = http.client.HTTPConnection(self.up_host, self.up_port, timeout=60)
        try:
            c.request(rq.command, rq.path, body=body if body or rq.command in ("PUT", "POST") else None,
                      headers=dict(hdrs, Host=f"{self.up_host}:{self.up_port}"))
            r = c.getresponse()
            data = r.read()
            headers = r.getheaders()
        finally:
            c.close()
        older = self._older(key)
        if older:
            headers = [(k, email.utils.formatdate(email.utils.parsedate_to_datetime(v).timestamp() - older,
                                                  usegmt=True) if k.lower() == "last-modified" else v)
                       for k, v in headers]
        if rq.command == "GET" and "list-type=2" in query and self.ages:
            bucket = key.split("/")[0]
            data = re.sub(rb"<Contents>.*?</Contents>", lambda m: self._aged(bucket, m.group(0)), data,
                          flags=re.S)
        self._reply(rq, r.status, headers, data, head=rq.command == "HEAD")

    def _aged(self, bucket, contents):
        k = re.search(rb"<Key>(.*?)</Key>", contents)
        older = self._older(f"{bucket}/{k.group(1).decode()}") if k else 0
        if not older:
            return contents

        def shift(m):
            t = datetime.datetime.fromisoformat(m.group(1).decode().replace("Z", "+00:00"))
            t -= datetime.timedelta(seconds=older)
            return b"<LastModified>" + t.strftime("%Y-%m-%dT%H:%M:%S.000Z").encode() + b"</LastModified>"

        return re.sub(rb"<LastModified>(.*?)</LastModified>", shift, contents)
