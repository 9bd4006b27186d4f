"""Hostile HTTP framing and oversized inputs, over raw sockets (issue 18 "Limits").

Ours (answered by striked, problem+json, one response, connection closed):
- Content-Length given twice, Transfer-Encoding with Content-Length, a
  Transfer-Encoding other than chunked (request smuggling shapes).
libmicrohttpd's own (0.9.75 answers them itself, with its HTML page, before
any callback of ours runs or, for the chunks, between two of them; why no
option changes that: server/README.md "libmicrohttpd's own answers"): a
negative, non-numeric or absurd Content-Length (400/413, its header block sent
twice), a malformed or huge chunk size (400/413), headers or a request line
over 32 KiB (431/414), a header line without a colon (400). For those this
test pins what holds: the status, the page, the closed connection, and that
nothing changed.
gRPC: request metadata over 16 KiB is refused and the server goes on.
"""
import socket
import unittest

import grpc

import harness as h
import grpc_client as gc

S = None
C = None


def setUpModule():
    global S, C
    S = h.Striked(catalog=h.create_db("hostile_main"))
    C = gc.Client(S.grpc_port)
    r = S.req("POST", "/v1/tables", {"name": "t", "columns": [
        {"name": "id", "type": "long", "required": True}], "primary_key": ["id"]})
    assert r.status == 201, r


def tearDownModule():
    C.close()
    S.close_clean()


def raw(data):
    """Send `data`, read until the server closes (it must: these requests end the connection)."""
    s = socket.create_connection(("127.0.0.1", S.http_port), timeout=60)
    try:
        s.sendall(data)
    except OSError:
        pass  # the server may close before the rest is sent
    out = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        out += b
    s.close()
    return out


UPSERT = b'{"changes":[{"op":"upsert","row":{"id":1}}]}'


def post(headers, body=UPSERT):
    return (b"POST /v1/tables/t/changes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + headers + b"\r\n" + body)


def rows():
    r = S.req("POST", "/v1/tables/t/scan", {})
    assert r.status == 200, r
    return r.ndjson()


class TestOurs(unittest.TestCase):
    def check_problem(self, out, status, needle):
        head, _, body = out.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 %d " % status), out[:300])
        self.assertEqual(out.count(b"HTTP/1.1 "), 1, out)  # one response, framed once
        self.assertIn(b"Content-Type: application/problem+json", head)
        self.assertIn(b"Connection: close", head)
        length = int([ln for ln in head.split(b"\r\n") if ln.startswith(b"Content-Length:")][0]
                     .split(b":")[1])
        self.assertEqual(len(body), length)
        self.assertIn(needle, body)

    def test_smuggling_shapes(self):
        n = len(UPSERT)
        for hdrs, needle in (
                (b"Content-Length: %d\r\nContent-Length: %d\r\n" % (n, n - 5), b"more than once"),
                (b"Content-Length: %d\r\nContent-Length: %d\r\n" % (n, n), b"more than once"),
                (b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % n, b"ambiguous"),
                (b"Transfer-Encoding: gzip\r\n", b"only chunked")):
            with self.subTest(headers=hdrs):
                self.check_problem(raw(post(hdrs)), 400, needle)
        self.assertEqual(rows(), [])


class TestLibmicrohttpd(unittest.TestCase):
    """What libmicrohttpd 0.9.75 answers itself (server/README.md "libmicrohttpd's own
    answers" has the function and line of each): its HTML page, no Content-Type, the
    connection closed, nothing changed. A newer libmicrohttpd that fixes the repeated
    header block, or lets us answer, fails the count below: update the README then."""

    def check(self, out, status, title, blocks=1):
        self.assertTrue(out.startswith(b"HTTP/1.1 %d " % status), out[:300])
        # raw() returned, so the server closed the connection; it also says so
        head, _, body = out.partition(b"\r\n\r\n")
        self.assertIn(b"Connection: close", head)
        self.assertNotIn(b"Content-Type", head)
        self.assertIn(b"<title>" + title + b"</title>", out)
        # the status line and header block, sent `blocks` times (see the class comment)
        self.assertEqual(out.count(b"HTTP/1.1 %d " % status), blocks, out)
        self.assertEqual(rows(), [])  # nothing changed
        self.assertEqual(S.req("GET", "/healthz").status, 200)  # and the server goes on

    def test_content_length(self):
        # parse_connection_headers answers, then the state machine builds the
        # header block again for the same response: two blocks, one body
        for cl, status, title in ((b"-5", 400, b"Request malformed"),
                                  (b"12abc", 400, b"Request malformed"),
                                  (b"1" + b"0" * 23, 413, b"Request content too large"),
                                  (b"99999999999999999999999999999", 413,
                                   b"Request content too large")):
            with self.subTest(cl=cl):
                self.check(raw(post(b"Content-Length: " + cl + b"\r\n")), status, title, blocks=2)

    def test_chunks(self):
        # our first call ran (the headers were sound); the body's framing is MHD's
        for chunk, status, title in ((b"zz", 400, b"Request malformed"),
                                     (b"ffffffffffffffffffff", 413, b"Request content too large")):
            with self.subTest(chunk=chunk):
                body = chunk + b"\r\n" + UPSERT + b"\r\n0\r\n\r\n"
                self.check(raw(post(b"Transfer-Encoding: chunked\r\n", body)), status, title)
        # a chunk's data not followed by CRLF
        body = b"%x\r\n" % len(UPSERT) + UPSERT + b"XX0\r\n\r\n"
        self.check(raw(post(b"Transfer-Encoding: chunked\r\n", body)), 400, b"Request malformed")

    def test_headers_too_big(self):
        out = raw(post(b"X-Big: " + b"a" * 40000 + b"\r\nContent-Length: %d\r\n" % len(UPSERT)))
        self.check(out, 431, b"Request too big")

    def test_request_line_too_big(self):
        # over the connection's 32 KiB before the request line ends: MHD's 414
        # (a path over 2048 bytes that fits is ours: 414 problem+json, test_http_limits)
        out = raw(b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.check(out, 414, b"Request too big")

    def test_header_line_malformed(self):
        # a header line without a colon
        out = raw(post(b"NoColonHere\r\nContent-Length: %d\r\n" % len(UPSERT)))
        self.check(out, 400, b"Request malformed")


class TestGrpcMetadata(unittest.TestCase):
    def test_metadata_too_big(self):
        with self.assertRaises(grpc.RpcError) as cm:
            C.call("ListTables", metadata=(("x-big", "a" * 20000),))
        self.assertIn(cm.exception.code(), (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                            grpc.StatusCode.INTERNAL,
                                            grpc.StatusCode.UNAVAILABLE))
        # the server closed that connection; a new one (not the shared subchannel,
        # which may sit in its reconnect backoff) is served
        c2 = gc.Client(S.grpc_port, options=[("grpc.use_local_subchannel_pool", 1)])
        try:
            self.assertEqual(len(c2.call("ListTables").tables), 1)
        finally:
            c2.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
