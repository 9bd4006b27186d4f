"""Auth (issue 18): bearer tokens with per-table scopes on every route and RPC.

- the routes come from the router itself (`striked --list-routes`) and the RPCs
  from proto/strike/v1/strike.proto's `rpc` lines: every one declares a scope,
  and every one is tried without a token, with an unknown token, and with a
  read, a write and an admin token on a table their glob matches and on one it
  does not; a route added without a scope fails this test (or striked's start);
- GET /v1/tables and ListTables list only readable tables;
- Debezium's `Authorization: Bearer: <token>`;
- the audit trail: one JSON line with "audit":true per 401/403 and per admin
  operation, with the token id (first 8 hex digits of its SHA-256), never the token;
- SIGHUP adding and revoking a token while requests run; a bad file keeps the
  tokens in force;
- a non-loopback listener needs tokens or --insecure;
- `strike token new`.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest

import grpc

import harness as h
import grpc_client as gc
from grpc_client import pb

S = None
C = None
DIR = None
TOKENS = {}   # name -> token
ORDER = {"open": 0, "read": 1, "write": 2, "admin": 3}


def new_token(scope, glob):
    out = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "token", "new", "--scope", scope,
                          "--tables", glob], check=True, capture_output=True, text=True).stdout
    token, line = out.splitlines()
    return token, line


def write_tokens(names):
    with open(os.path.join(DIR, "tokens.tmp"), "w") as f:
        f.write("# test tokens\n")
        for n in names:
            f.write(LINES[n] + "\n")
    os.replace(os.path.join(DIR, "tokens.tmp"), os.path.join(DIR, "tokens"))


LINES = {}


def bearer(name):
    return {"Authorization": "Bearer " + TOKENS[name]}


def md(name):
    return (("authorization", "Bearer " + TOKENS[name]),)


def setUpModule():
    global S, C, DIR
    h.require_env()
    DIR = h.tmpdir("strike-auth-")
    for name, scope, glob in (("root", "admin", "*"), ("read", "read", "orders*"),
                              ("write", "write", "orders*"), ("admin", "admin", "orders*"),
                              ("late", "read", "*")):
        TOKENS[name], LINES[name] = new_token(scope, glob)
    write_tokens(["root", "read", "write", "admin"])
    S = h.Striked(catalog=h.create_db("auth_main"),
                  extra_args=["--tokens", os.path.join(DIR, "tokens"),
                              "--cdc-route", "inv.hidden=users", "--cdc-route", "inv.gone=nosuch"])
    C = gc.Client(S.grpc_port)
    for t in ("orders", "users"):
        r = S.req("POST", "/v1/tables", {"name": t, "columns": [
            {"name": "id", "type": "long", "required": True}], "primary_key": ["id"]},
            headers=bearer("root"))
        assert r.status == 201, r


def tearDownModule():
    if C is not None:
        C.close()
    if S is not None:
        logs = S.logs()
        for tok in TOKENS.values():
            assert tok not in logs, "a token appears in the server log"
        S.close_clean()


def routes():
    out = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--list-routes"], check=True,
                         capture_output=True, text=True).stdout
    http, rpcs = [], {}
    for line in out.splitlines():
        f = line.split()
        if f[0] == "http":
            http.append((f[1], f[2], f[3], f[4]))
        else:
            rpcs[f[1]] = (f[2], f[3])
    return http, rpcs


_fresh = [0]


def fresh_table(prefix="orders_t"):
    _fresh[0] += 1
    name = f"{prefix}{_fresh[0]}"
    r = S.req("POST", "/v1/tables", {"name": name, "columns": [
        {"name": "id", "type": "long", "required": True}], "primary_key": ["id"]},
        headers=bearer("root"))
    assert r.status == 201, r
    return name


BODIES = {
    "/v1/tables/{t}/changes": {"changes": []},
    "/v1/tables/{t}/delete": {"filter": False},
    "/v1/tables/{t}/scan": {},
    "/v1/tables/{t}/plan": {},
}


def http_call(method, pattern, table, headers):
    """One request to the route on `table` (a fresh one where it would be dropped); the
    Iceberg catalog's routes in its one namespace, with a plan id no plan has."""
    path = pattern.replace("{t}", table).replace("{id}", "1").replace("{ns}", "default")
    path = path.replace("{plan}", "0b7a4e1c-5d6f-4a8b-9c0d-1e2f3a4b5c6d")
    body = None
    hdrs = dict(headers)
    if pattern == "/v1/cdc/debezium":  # one event, routed to `table` by its source
        r = S.req(method, path, {"op": "c", "after": {"id": 7},
                                 "source": {"name": "auth", "db": "d", "table": table}}, headers=hdrs)
        r.method, r.path = method, path
        return r
    if method == "POST":
        if pattern == "/v1/tables":
            body = {"name": table, "columns": [{"name": "id", "type": "long", "required": True}],
                    "primary_key": ["id"]}
        else:
            body = BODIES.get(pattern, {})
    r = S.req(method, path, body, headers=hdrs)
    r.method, r.path = method, path
    return r


def allowed(status):
    return status not in (401, 403) and (status < 500 or status == 501)


def refusal(tc, r, status):
    """A 401 or 403 body: problem+json on /v1, Iceberg's error model on /iceberg (what
    Iceberg clients parse: docs/API.md "Iceberg REST catalog"). Returns its message."""
    iceberg = r.path.startswith("/iceberg/")
    tc.assertEqual(r.header("Content-Type"), "application/json" if iceberg else "application/problem+json")
    if r.method == "HEAD":
        return None
    doc = r.json()
    if iceberg:
        etype = {401: "NotAuthorizedException", 403: "ForbiddenException"}[status]
        tc.assertEqual((doc["error"]["code"], doc["error"]["type"]), (status, etype), doc)
        return doc["error"]["message"]
    tc.assertEqual(doc["status"], status)
    return doc["detail"]


class TestHttpRoutes(unittest.TestCase):
    def test_every_route_declares_a_scope(self):
        http, rpcs = routes()
        self.assertGreater(len(http), 20)
        for method, pattern, scope, src in http:
            self.assertIn(scope, ORDER, f"{method} {pattern}: scope {scope}")
            if pattern.startswith("/v1/"):
                self.assertNotEqual(scope, "open", f"{method} {pattern} is open")
            if "{t}" in pattern:
                self.assertEqual(src, "path", f"{method} {pattern}")
        # every rpc of the proto is listed, with a declared scope and a table field
        with open(os.path.join(h.SOURCE_DIR, "proto/strike/v1/strike.proto")) as f:
            proto = f.read()
        names = re.findall(r"^\s*rpc\s+(\w+)\s*\(", proto, re.M)
        self.assertGreater(len(names), 10)
        for n in names:
            path = "/strike.v1.Strike/" + n
            self.assertIn(path, rpcs, f"{n} is not in striked's RPC table")
            scope, field = rpcs[path]
            self.assertIn(scope, ("read", "write", "admin"), f"{n}: scope {scope}")
            if n == "ApplyDebezium":  # its tables are in the body: checked per routed table
                self.assertEqual((scope, field), ("write", "none"))
            elif n != "ListTables":
                self.assertIn(field, ("table", "name"), f"{n}: table field {field}")

    def test_without_token_and_unknown_token(self):
        http, _ = routes()
        for method, pattern, scope, _src in http:
            with self.subTest(route=f"{method} {pattern}"):
                for hdrs in ({}, {"Authorization": "Bearer stk_not_a_token"},
                             {"Authorization": "Basic cm9vdDpyb290"},
                             {"Authorization": "Bearer " + "x" * 513}):
                    r = http_call(method, pattern, "orders", hdrs)
                    if scope == "open":
                        self.assertTrue(allowed(r.status), r)
                        continue
                    self.assertEqual(r.status, 401, r)
                    self.assertEqual(r.header("WWW-Authenticate"), 'Bearer realm="strike"')
                    refusal(self, r, 401)

    def test_each_scope_on_matching_and_other_tables(self):
        http, _ = routes()
        for method, pattern, scope, src in http:
            if scope == "open":
                continue
            for tok in ("read", "write", "admin"):
                enough = ORDER[tok] >= ORDER[scope]
                with self.subTest(route=f"{method} {pattern}", token=tok):
                    # a table the token's glob matches
                    if method == "DELETE" or (method == "POST" and src == "body"):
                        table = fresh_table() if method == "DELETE" else f"orders_c{_fresh[0]}_{tok}"
                    else:
                        table = "orders"
                    r = http_call(method, pattern, table, bearer(tok))
                    if enough:
                        self.assertTrue(allowed(r.status), r)
                    else:
                        self.assertEqual(r.status, 403, r)
                        if method != "HEAD":
                            self.assertIn(f"lacks the {scope} scope", refusal(self, r, 403))
                    # a table it does not match
                    other = "users" if src != "body" else "users_new"
                    r = http_call(method, pattern, other, bearer(tok))
                    if src == "none":
                        self.assertTrue(allowed(r.status), r)   # the list: filtered
                    else:
                        self.assertEqual(r.status, 403, r)
        # nothing the refusals named was created or dropped
        names = {t["name"] for t in S.req("GET", "/v1/tables", headers=bearer("root")).json()["tables"]}
        self.assertIn("users", names)
        self.assertNotIn("users_new", names)

    def test_list_is_filtered(self):
        r = S.req("GET", "/v1/tables", headers=bearer("read"))
        self.assertEqual(r.status, 200)
        names = [t["name"] for t in r.json()["tables"]]
        self.assertIn("orders", names)
        self.assertTrue(all(n.startswith("orders") for n in names), names)
        names = [t["name"] for t in S.req("GET", "/v1/tables", headers=bearer("root")).json()["tables"]]
        self.assertIn("users", names)
        resp = C.call("ListTables", metadata=md("read"))
        self.assertTrue(resp.tables)
        self.assertTrue(all(t.name.startswith("orders") for t in resp.tables))

    def test_debezium_bearer_colon(self):
        r = S.req("POST", "/v1/tables/orders/changes",
                  {"changes": [{"op": "c", "after": {"id": 1}}]},
                  headers={"Authorization": "Bearer: " + TOKENS["write"]})
        self.assertEqual(r.status, 200, r)
        r = S.req("POST", "/v1/tables/orders/scan", {}, headers={"Authorization": "Bearer: " + TOKENS["read"]})
        self.assertEqual(r.status, 200, r)
        self.assertIn({"id": 1}, r.ndjson())


def cdc_event(after, table="x", db="d"):
    return {"op": "c", "after": after, "source": {"name": "auth", "db": db, "table": table}}


class TestCdcScopeFirst(unittest.TestCase):
    """Issue 28 item 6: the CDC endpoint checks the token's write scope on each routed
    table before it reads the catalog, so a table the token may not write answers 403
    whether it exists or not, on both wires, and nothing names its columns."""

    # (how the event is routed, the request's query, the event's source) -> the routed table
    CASES = [
        ("?table", "?table=nosuch", ("d", "x"), "nosuch"),
        ("?table", "?table=users", ("d", "x"), "users"),
        ("source", "", ("d", "nosuch"), "nosuch"),
        ("source", "", ("d", "users"), "users"),
        ("--cdc-route", "", ("inv", "gone"), "nosuch"),
        ("--cdc-route", "", ("inv", "hidden"), "users"),
    ]
    # a value `users` would refuse naming its column and type, and a column it does not have
    BAD = ({"id": "not-a-number"}, {"id": 1, "secret_col": 2})

    def check_forbidden(self, detail, table):
        self.assertIn(f'lacks the write scope on table "{table}"', detail)
        for leak in ("does not exist", "long", "secret_col", "column", "not-a-number"):
            self.assertNotIn(leak, detail)

    def test_http(self):
        details = {}
        for how, query, (db, src), table in self.CASES:
            for after in self.BAD + ({"id": 3},):
                with self.subTest(how=how, table=table, after=after):
                    r = S.req("POST", "/v1/cdc/debezium" + query, cdc_event(after, src, db),
                              headers=bearer("write"))
                    self.assertEqual(r.status, 403, r)
                    detail = r.json()["detail"]
                    self.check_forbidden(detail, table)
                    details.setdefault(how, set()).add(detail.replace(table, "T"))
        # a table that exists and one that does not: the same answer, but for the name
        for how, ds in details.items():
            self.assertEqual(len(ds), 1, (how, ds))
        # the same events on tables the token may write still answer by the catalog
        r = S.req("POST", "/v1/cdc/debezium?table=orders_nosuch", cdc_event({"id": 3}),
                  headers=bearer("write"))
        self.assertEqual(r.status, 404, r)
        self.assertIn("does not exist", r.json()["detail"])
        r = S.req("POST", "/v1/cdc/debezium?table=orders", cdc_event(self.BAD[0]),
                  headers=bearer("write"))
        self.assertEqual(r.status, 400, r)
        self.assertIn('column "id": expected long', r.json()["detail"])
        # nothing was written to users
        rows = S.req("POST", "/v1/tables/users/scan", {}, headers=bearer("root")).ndjson()
        self.assertNotIn({"id": 3}, rows)

    def test_grpc(self):
        details = {}
        for how, query, (db, src), table in self.CASES:
            for after in self.BAD + ({"id": 3},):
                with self.subTest(how=how, table=table, after=after):
                    req = pb.ApplyDebeziumRequest(
                        body=json.dumps(cdc_event(after, src, db)).encode(),
                        table=query.partition("=")[2])
                    with self.assertRaises(grpc.RpcError) as cm:
                        C.call("ApplyDebezium", req, metadata=md("write"))
                    self.assertEqual(cm.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
                    self.check_forbidden(cm.exception.details(), table)
                    details.setdefault(how, set()).add(cm.exception.details().replace(table, "T"))
        for how, ds in details.items():
            self.assertEqual(len(ds), 1, (how, ds))
        with self.assertRaises(grpc.RpcError) as cm:
            C.call("ApplyDebezium", pb.ApplyDebeziumRequest(
                body=json.dumps(cdc_event({"id": 3})).encode(), table="orders_nosuch"),
                metadata=md("write"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)


def rpc_request(name, table):
    req_cls = gc.UNARY[name][0] if name in gc.UNARY else pb.ScanRequest
    req = req_cls()
    for f in ("name", "table"):
        if f in req_cls.DESCRIPTOR.fields_by_name:
            setattr(req, f, table)
    if name == "CreateTable":
        req.columns.append(pb.Column(name="id", type="long", required=True))
        req.primary_key.append("id")
    return req


def rpc_call(name, table, metadata):
    """The status code of one call (OK, or the error's)."""
    req = rpc_request(name, table)
    try:
        if name == "Scan":
            for _ in C._scan(req, timeout=30, metadata=metadata):
                pass
        else:
            C.call(name, req, timeout=30, metadata=metadata)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


class TestRpcs(unittest.TestCase):
    def test_every_rpc(self):
        _, rpcs = routes()
        for path, (scope, field) in rpcs.items():
            if not path.startswith("/strike.v1.Strike/"):
                continue
            name = path.rsplit("/", 1)[1]
            with self.subTest(rpc=name):
                for m in (None, (("authorization", "Bearer stk_nope"),)):
                    self.assertEqual(rpc_call(name, "orders", m), grpc.StatusCode.UNAUTHENTICATED)
                for tok in ("read", "write", "admin"):
                    enough = ORDER[tok] >= ORDER[scope]
                    table = "orders"
                    if name == "DropTable":
                        table = fresh_table()
                    elif name == "CreateTable":
                        _fresh[0] += 1
                        table = f"orders_g{_fresh[0]}"
                    code = rpc_call(name, table, md(tok))
                    if enough:
                        self.assertNotIn(code, (grpc.StatusCode.UNAUTHENTICATED,
                                                grpc.StatusCode.PERMISSION_DENIED), (name, tok))
                    else:
                        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED, (name, tok))
                    if field != "none":
                        other = "users" if name != "CreateTable" else "users_g"
                        self.assertEqual(rpc_call(name, other, md(tok)),
                                         grpc.StatusCode.PERMISSION_DENIED, (name, tok))
        # the health check stays open
        ch = C.channel.unary_unary("/grpc.health.v1.Health/Check",
                                   request_serializer=lambda b: b, response_deserializer=lambda b: b)
        self.assertEqual(ch(b"", timeout=10), b"\x08\x01")

    def test_details(self):
        with self.assertRaises(grpc.RpcError) as cm:
            C.call("GetTable", name="users", metadata=md("read"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn('lacks the read scope on table "users"', cm.exception.details())
        with self.assertRaises(grpc.RpcError) as cm:
            C.call("GetTable", name="orders")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(C.call("GetTable", name="orders", metadata=md("read")).name, "orders")


class TestAudit(unittest.TestCase):
    def test_audit_lines(self):
        t = fresh_table()
        r = S.req("DELETE", f"/v1/tables/{t}", headers=bearer("admin"))
        self.assertEqual(r.status, 204)
        S.req("GET", "/v1/tables/users", headers=bearer("read"))
        S.req("GET", "/v1/tables/orders")
        C.call("DropTable", name=fresh_table(), metadata=md("admin"))
        audit = [rec for rec in S.log_records() if rec.get("audit") is True]
        tid = lambda n: hashlib.sha256(TOKENS[n].encode()).hexdigest()[:8]
        self.assertTrue(any(a["op"] == "DELETE /v1/tables/{t}" and a["table"] == t and
                            a["outcome"] == "ok" and a["token"] == tid("admin") for a in audit), audit[-5:])
        self.assertTrue(any(a["op"] == "GET /v1/tables/{t}" and a["table"] == "users" and
                            a["outcome"] == "forbidden" and a["token"] == tid("read") for a in audit))
        self.assertTrue(any(a["outcome"] == "unauthenticated" and a["token"] == "" and
                            a["op"] == "GET /v1/tables/{t}" and a["table"] == "orders" for a in audit))
        # gRPC refusals name the method and the table too
        with self.assertRaises(grpc.RpcError):
            C.call("GetTable", name="users", metadata=(("authorization", "Bearer stk_unknown"),))
        audit = [rec for rec in S.log_records() if rec.get("audit") is True]
        self.assertTrue(any(a["op"] == "/strike.v1.Strike/GetTable" and a["table"] == "users" and
                            a["outcome"] == "unauthenticated" and len(a["token"]) == 8
                            for a in audit))
        self.assertTrue(any(a["op"] == "/strike.v1.Strike/DropTable" and a["outcome"] == "ok"
                            for a in audit))


def wait_log(pattern, count):
    """Until `pattern` has appeared `count` times in the server log (no fixed timeout:
    the reload is an event the log records)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if S.logs().count(pattern) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} x{count} not in the log:\n{S.logs()[-3000:]}")


class TestReload(unittest.TestCase):
    def test_sighup_add_revoke_bad_file(self):
        stop = threading.Event()
        seen = {"read": [], "late": []}
        phase = {"late": False}

        def loop():
            while not stop.is_set():
                seen["read"].append(S.req("GET", "/v1/tables/orders", headers=bearer("read")).status)

        th = [threading.Thread(target=loop) for _ in range(3)]
        for t in th:
            t.start()
        try:
            self.assertEqual(S.req("GET", "/v1/tables/orders", headers=bearer("late")).status, 401)
            n = S.logs().count("tokens file reloaded")
            write_tokens(["root", "read", "write", "admin", "late"])
            S.proc.send_signal(signal.SIGHUP)
            wait_log("tokens file reloaded", n + 1)
            self.assertEqual(S.req("GET", "/v1/tables/users", headers=bearer("late")).status, 200)
            self.assertEqual(C.call("GetTable", name="users", metadata=md("late")).name, "users")
            # a bad file keeps the tokens in force
            with open(os.path.join(DIR, "tokens"), "w") as f:
                f.write("not a tokens file\n")
            S.proc.send_signal(signal.SIGHUP)
            wait_log("the tokens file was not reloaded", 1)
            self.assertEqual(S.req("GET", "/v1/tables/users", headers=bearer("late")).status, 200)
        finally:
            stop.set()
            for t in th:
                t.join()
        # the reader never saw a refusal while the file changed under it
        self.assertTrue(seen["read"])
        self.assertEqual(set(seen["read"]), {200})
        # revoke "late"
        n = S.logs().count("tokens file reloaded")
        write_tokens(["root", "read", "write", "admin"])
        S.proc.send_signal(signal.SIGHUP)
        wait_log("tokens file reloaded", n + 1)
        self.assertEqual(S.req("GET", "/v1/tables/users", headers=bearer("late")).status, 401)
        with self.assertRaises(grpc.RpcError) as cm:
            C.call("GetTable", name="users", metadata=md("late"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        # a file without a token revokes every one
        n = S.logs().count("tokens file reloaded")
        write_tokens([])
        S.proc.send_signal(signal.SIGHUP)
        wait_log("tokens file reloaded", n + 1)
        self.assertEqual(S.req("GET", "/v1/tables/orders", headers=bearer("root")).status, 401)
        n = S.logs().count("tokens file reloaded")
        write_tokens(["root", "read", "write", "admin"])
        S.proc.send_signal(signal.SIGHUP)
        wait_log("tokens file reloaded", n + 1)
        self.assertEqual(S.req("GET", "/v1/tables/orders", headers=bearer("root")).status, 200)


class TestStartup(unittest.TestCase):
    def test_non_loopback_needs_tokens(self):
        port = h.free_port()
        p = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--data", os.path.join(DIR, "x"),
                            "--http", f"0.0.0.0:{port}", "--grpc", f"127.0.0.1:{h.free_port()}"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--tokens", p.stderr)
        # a bad tokens file: exit 2, naming the line
        bad = os.path.join(DIR, "bad")
        with open(bad, "w") as f:
            f.write("# fine\n" + "ab" * 32 + " owner *\n")
        p = subprocess.run([os.path.join(h.BIN_DIR, "striked"), "--data", os.path.join(DIR, "x"),
                            "--tokens", bad], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("line 2", p.stderr)

    def test_non_loopback_with_tokens(self):
        s = h.Striked(catalog=h.create_db("auth_nl"), extra_args=[
            "--tokens", os.path.join(DIR, "tokens"), "--grpc", f"0.0.0.0:{h.free_port()}"])
        try:
            self.assertEqual(s.req("GET", "/v1/tables").status, 401)
        finally:
            s.close_clean()

    def test_token_new(self):
        t1, l1 = new_token("write", "orders*")
        t2, _ = new_token("write", "orders*")
        self.assertNotEqual(t1, t2)
        self.assertRegex(t1, r"^stk_[A-Za-z0-9_-]{43}$")
        self.assertEqual(l1, hashlib.sha256(t1.encode()).hexdigest() + " write orders*")
        p = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "token", "new", "--scope", "owner",
                            "--tables", "*"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
