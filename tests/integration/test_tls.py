"""TLS on both listeners (issue 18), with certificates made at test time by openssl.

- HTTP: curl --cacert; gRPC: python grpcio with ssl_channel_credentials;
- TLS 1.2 and 1.3 only: a TLS 1.1 handshake is refused on both ports;
- a plain-text client against either TLS port fails, and the server goes on
  serving TLS;
- SIGHUP with a new pair (from another CA): new connections on both
  listeners get the new certificate; a bad pair keeps the one in force;
- a key that does not match its certificate, or one file without the other,
  stops the start (exit 2);
- with tokens: a bearer token over TLS.
"""
import http.client
import os
import shutil
import signal
import subprocess
import time
import unittest

import grpc

import harness as h
import grpc_client as gc
from grpc_client import pb

D = None


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{D}/{name}.key", "-out", f"{D}/{name}.pem", "-days", "2",
            "-subj", f"/CN={name}")


def make_server(name, ca):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{D}/{name}.key", "-out", f"{D}/{name}.csr", "-subj", "/CN=localhost")
    with open(f"{D}/ext", "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", f"{D}/{name}.csr", "-CA", f"{D}/{ca}.pem", "-CAkey",
            f"{D}/{ca}.key", "-CAcreateserial", "-out", f"{D}/{name}.pem", "-days", "2",
            "-extfile", f"{D}/ext")


def setUpModule():
    global D
    h.require_env()
    D = h.tmpdir("strike-tls-")
    for ca in ("ca1", "ca2"):
        make_ca(ca)
    make_server("srv1", "ca1")
    make_server("srv2", "ca2")
    shutil.copy(f"{D}/srv1.pem", f"{D}/cert.pem")
    shutil.copy(f"{D}/srv1.key", f"{D}/key.pem")


def tearDownModule():
    shutil.rmtree(D, ignore_errors=True)


def curl(port, path, ca, extra=()):
    """(exit code, HTTP status) of curl over TLS, verifying against `ca`."""
    p = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                        f"{D}/{ca}.pem", *extra, f"https://localhost:{port}{path}"],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout


def start(extra=()):
    s = h.Striked(catalog=h.create_db("tls_main"), wait=False, extra_args=[
        "--tls-cert", f"{D}/cert.pem", "--tls-key", f"{D}/key.pem", *extra])
    while True:  # healthy over TLS (the harness's own probe is plain text)
        if s.proc.poll() is not None:
            raise RuntimeError(f"striked exited:\n{s.logs()}")
        if curl(s.http_port, "/healthz", "ca1") == (0, "200"):
            return s
        time.sleep(0.05)


def grpc_channel(port, ca):
    with open(f"{D}/{ca}.pem", "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    return grpc.secure_channel(f"localhost:{port}", creds)


def list_tables(ch, metadata=None):
    f = ch.unary_unary("/strike.v1.Strike/ListTables",
                       request_serializer=pb.ListTablesRequest.SerializeToString,
                       response_deserializer=pb.ListTablesResponse.FromString)
    return f(pb.ListTablesRequest(), timeout=30, metadata=metadata)


def s_client(port, version):
    """True when a handshake with exactly that TLS version completes."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", f"-{version}",
                        "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", f"{D}/ca1.pem"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return "BEGIN CERTIFICATE" in p.stdout and "Cipher is (NONE)" not in p.stdout


def wait_log(s, pattern, count):
    """Until the server log records `pattern` `count` times (the reload is an event)."""
    deadline = time.monotonic() + 60
    while s.logs().count(pattern) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{pattern!r} not logged:\n{s.logs()[-3000:]}")
        time.sleep(0.05)


class TestTls(unittest.TestCase):
    def test_both_listeners_versions_plaintext_reload(self):
        s = start()
        try:
            # HTTP over TLS, verified against the CA
            self.assertEqual(curl(s.http_port, "/v1/tables", "ca1"), (0, "200"))
            self.assertNotEqual(curl(s.http_port, "/v1/tables", "ca2")[0], 0)  # wrong CA
            # gRPC over TLS
            ch = grpc_channel(s.grpc_port, "ca1")
            self.assertEqual(len(list_tables(ch).tables), 0)
            ch.close()
            # TLS 1.2 and 1.3 only, on both ports
            for port in (s.http_port, s.grpc_port):
                self.assertTrue(s_client(port, "tls1_2"), port)
                self.assertTrue(s_client(port, "tls1_3"), port)
                self.assertFalse(s_client(port, "tls1_1"), port)
                self.assertFalse(s_client(port, "tls1"), port)
            # the server refused the version itself (this client's OpenSSL could also
            # refuse TLS 1.1 on its own; the server's log says who did)
            self.assertIn("unsupported protocol", s.logs())
            # plain text against the TLS ports fails, and TLS goes on working
            with self.assertRaises((http.client.HTTPException, OSError)):
                h.request(s.http_port, "GET", "/healthz", timeout=30)
            plain = grpc.insecure_channel(f"127.0.0.1:{s.grpc_port}")
            with self.assertRaises(grpc.RpcError) as cm:
                list_tables(plain)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
            plain.close()
            self.assertEqual(curl(s.http_port, "/healthz", "ca1"), (0, "200"))

            # SIGHUP with the pair of another CA: new connections get it
            shutil.copy(f"{D}/srv2.pem", f"{D}/cert.pem")
            shutil.copy(f"{D}/srv2.key", f"{D}/key.pem")
            s.proc.send_signal(signal.SIGHUP)
            wait_log(s, "TLS certificate reloaded", 1)
            self.assertEqual(curl(s.http_port, "/v1/tables", "ca2"), (0, "200"))
            self.assertNotEqual(curl(s.http_port, "/v1/tables", "ca1")[0], 0)
            ch = grpc_channel(s.grpc_port, "ca2")
            self.assertEqual(len(list_tables(ch).tables), 0)
            ch.close()
            old = grpc_channel(s.grpc_port, "ca1")
            with self.assertRaises(grpc.RpcError) as cm:
                list_tables(old)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
            old.close()

            # a bad pair (a key of another certificate) keeps the one in force
            shutil.copy(f"{D}/srv1.key", f"{D}/key.pem")
            s.proc.send_signal(signal.SIGHUP)
            wait_log(s, "the TLS certificate was not reloaded", 1)
            self.assertEqual(curl(s.http_port, "/v1/tables", "ca2"), (0, "200"))
            ch = grpc_channel(s.grpc_port, "ca2")
            self.assertEqual(len(list_tables(ch).tables), 0)
            ch.close()
            shutil.copy(f"{D}/srv1.pem", f"{D}/cert.pem")  # back to pair 1 for other tests
            s.close_clean()
        finally:
            s.close()

    def test_tokens_over_tls(self):
        shutil.copy(f"{D}/srv1.pem", f"{D}/cert.pem")
        shutil.copy(f"{D}/srv1.key", f"{D}/key.pem")
        out = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "token", "new", "--scope", "read",
                              "--tables", "*"], check=True, capture_output=True, text=True).stdout
        token, line = out.splitlines()
        with open(f"{D}/tokens", "w") as f:
            f.write(line + "\n")
        s = start(["--tokens", f"{D}/tokens"])
        try:
            self.assertEqual(curl(s.http_port, "/v1/tables", "ca1"), (0, "401"))
            self.assertEqual(curl(s.http_port, "/v1/tables", "ca1",
                                  ["-H", f"Authorization: Bearer {token}"]), (0, "200"))
            ch = grpc_channel(s.grpc_port, "ca1")
            self.assertEqual(len(list_tables(ch, (("authorization", "Bearer " + token),)).tables), 0)
            ch.close()
            s.close_clean()
        finally:
            s.close()

    def test_bad_pairs_stop_the_start(self):
        exe = os.path.join(h.BIN_DIR, "striked")
        for args, needle in (
                (["--tls-cert", f"{D}/srv1.pem", "--tls-key", f"{D}/srv2.key"], "--tls-cert"),
                (["--tls-cert", f"{D}/srv1.pem"], "go together"),
                (["--tls-cert", f"{D}/srv1.pem", "--tls-key", f"{D}/nope.key"], "nope.key"),
                (["--tls-cert", f"{D}/ext", "--tls-key", f"{D}/srv1.key"], "--tls-cert")):
            p = subprocess.run([exe, "--data", f"{D}/data", *args], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
