"""The `strike` client commands (clients/cli_client.c, cli_load.c, cli_where.c)
against the real striked and PostgreSQL:

- every command, in every output format (table, json, csv), and the exit
  codes (0 ok, 1 error, 2 usage, 3 not found, 4 conflict, 5 unavailable);
- load from NDJSON, CSV (with a header), Parquet and stdin; changes with
  strike changes and Debezium envelopes;
- a load of LOAD_ROWS rows into a table without a key (a duplicate would
  show as an extra row) killed with SIGKILL midway and resumed with
  --resume: exactly LOAD_ROWS rows. 200,000 rather than 1M: the ASan
  striked takes about 10k rows/s here, so 1M would take ~100 s a pass;
- --where on random expressions: the rows a scan returns equal a Python
  evaluation of the same expression (SQL three-valued logic) on the rows.
"""
import csv
import io
import json
import os
import pty
import random
import signal
import subprocess
import time
import unittest

import harness as h

LOAD_ROWS = 200_000
STRIKE = None


def strike(*args, server=None, stdin=None, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("STRIKE_OUTPUT", None)
    e["STRIKE_SERVER"] = server or STRIKE
    e.update(env or {})
    return subprocess.run([os.path.join(h.BIN_DIR, "strike"), *args], input=stdin, capture_output=True,
                          text=True, env=e, timeout=timeout)


# ---- a reference evaluator for --where ----

COLS = {"a": "long", "d": "double", "s": "string", "b": "boolean"}


def sql_and(x, y):
    if x is False or y is False:
        return False
    if x is None or y is None:
        return None
    return True


def sql_or(x, y):
    if x is True or y is True:
        return True
    if x is None or y is None:
        return None
    return False


def lit_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def values_for(col, rnd):
    if col == "a":
        return rnd.randint(-3, 10)
    if col == "d":
        return rnd.choice([-1.5, 0.0, 2.25, 7.5, 3, 100.125])
    if col == "s":
        return rnd.choice(["x", "xy", "yz", "NEW", "PAID", "", "it's"])
    return rnd.choice([True, False])


def gen(rnd, depth=0):
    """(text, fn(row) -> True/False/None)"""
    k = rnd.random()
    if depth < 3 and k < 0.35:
        op = rnd.choice(["and", "or"])
        lt, lf = gen(rnd, depth + 1)
        rt, rf = gen(rnd, depth + 1)
        f = (lambda r, lf=lf, rf=rf: sql_and(lf(r), rf(r))) if op == "and" else \
            (lambda r, lf=lf, rf=rf: sql_or(lf(r), rf(r)))
        return f"({lt} {op} {rt})", f
    if depth < 3 and k < 0.45:
        t, f = gen(rnd, depth + 1)
        return f"not {t}", (lambda r, f=f: None if f(r) is None else not f(r))
    col = rnd.choice(list(COLS))
    kind = rnd.random()
    if kind < 0.15:
        neg = rnd.random() < 0.5
        return (f"{col} is {'not ' if neg else ''}null",
                lambda r, col=col, neg=neg: (r[col] is not None) if neg else (r[col] is None))
    if kind < 0.35:
        vals = [values_for(col, rnd) for _ in range(rnd.randint(1, 3))]
        neg = rnd.random() < 0.4
        text = f"{col} {'not ' if neg else ''}in ({', '.join(lit_text(v) for v in vals)})"
        return text, lambda r, col=col, vals=vals, neg=neg: \
            None if r[col] is None else ((r[col] not in vals) if neg else (r[col] in vals))
    if col == "s" and kind < 0.5:
        p = rnd.choice(["x", "y", "N", "", "PA"])
        neg = rnd.random() < 0.4
        return (f"s {'not ' if neg else ''}starts with {lit_text(p)}",
                lambda r, p=p, neg=neg: None if r["s"] is None else (r["s"].startswith(p) != neg))
    ops = ["=", "!=", "<>", "==", "<", "<=", ">", ">="] if col != "b" else ["=", "!="]
    op = rnd.choice(ops)
    v = values_for(col, rnd)
    py = {"=": lambda x, y: x == y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
          "<>": lambda x, y: x != y, "<": lambda x, y: x < y, "<=": lambda x, y: x <= y,
          ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}[op]
    if col == "s":
        cmpf = lambda x, y, py=py: py(x.encode(), y.encode())
    else:
        cmpf = py
    return f"{col} {op} {lit_text(v)}", lambda r, col=col, v=v, cmpf=cmpf: \
        None if r[col] is None else cmpf(r[col], v)


class Client(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global STRIKE
        cls.url = h.create_db("strike_cli_client")
        cls.s = h.Striked(catalog=cls.url, extra_args=["--compact-interval", "0"])
        STRIKE = f"http://127.0.0.1:{cls.s.http_port}"
        cls.dir = h.tmpdir()

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def ok(self, *args, **kw):
        r = strike(*args, **kw)
        self.assertEqual(r.returncode, 0, f"strike {' '.join(args)}:\n{r.stdout}\n{r.stderr}")
        for m in h.SANITIZER_MARKS:
            self.assertNotIn(m, r.stderr)
        return r

    def code(self, want, *args, **kw):
        r = strike(*args, **kw)
        self.assertEqual(r.returncode, want, f"strike {' '.join(args)}:\n{r.stdout}\n{r.stderr}")
        for m in h.SANITIZER_MARKS:
            self.assertNotIn(m, r.stderr)
        return r

    def path(self, name, text):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def rows(self, table, *args):
        r = self.ok("scan", table, "--output", "json", *args)
        return [json.loads(line) for line in r.stdout.splitlines()]

    # ---- tables, exit codes, formats ----

    def test_tables_and_exit_codes(self):
        r = self.ok("tables", "create", "t1", "--columns", "id long not null, name string, at timestamp",
                    "--key", "id", "--output", "json")
        t = json.loads(r.stdout)
        self.assertEqual(t["name"], "t1")
        self.assertEqual(t["primary_key"], ["id"])
        self.assertEqual([c["name"] for c in t["columns"]], ["id", "name", "at"])
        self.assertTrue(t["columns"][0]["required"])
        # json is the default off a terminal; table and csv on demand
        ls = json.loads(self.ok("tables", "ls").stdout)
        self.assertIn("t1", [x["name"] for x in ls])
        table = self.ok("tables", "ls", "--output", "table").stdout
        self.assertRegex(table, r"(?m)^name\s+seq\s+primary_key\s+columns\s*$")
        self.assertRegex(table, r"(?m)^t1\s+0\s+id\s+id long not null, name string, at timestamp\s*$")
        self.assertRegex(table, r"\(\d+ rows?\)")
        rows = list(csv.DictReader(io.StringIO(self.ok("tables", "ls", "--output", "csv").stdout)))
        self.assertIn({"name": "t1", "seq": "0", "primary_key": "id",
                       "columns": "id long not null, name string, at timestamp"}, rows)
        show = self.ok("tables", "show", "t1", "--output", "table").stdout
        self.assertRegex(show, r"(?m)^live_rows\s+0$")
        self.assertEqual(json.loads(self.ok("tables", "show", "t1", env={"STRIKE_OUTPUT": "json"}).stdout)["name"],
                         "t1")
        # global options before the command too
        self.assertEqual(json.loads(strike("--server", STRIKE, "--output", "json", "tables", "show", "t1",
                                           server="http://127.0.0.1:1").stdout)["name"], "t1")
        # exit codes
        r = self.code(3, "tables", "show", "nope")
        self.assertIn('"nope"', r.stderr)
        self.assertIn("HTTP 404", r.stderr)
        self.assertEqual(r.stdout, "")
        r = self.code(4, "tables", "create", "t1", "--columns", "id long not null", "--key", "id")
        self.assertIn("exists", r.stderr)
        r = self.code(1, "tables", "create", "t2", "--columns", "id decimal")
        self.assertIn("HTTP 400", r.stderr)
        self.code(2, "tables", "create", "t2")
        self.code(2, "tables", "frob")
        self.code(2, "scan")
        self.code(2, "tables", "ls", "--output", "xml")
        self.code(2, "tables", "ls", env={"STRIKE_OUTPUT": "yaml"})
        self.code(2, "tables", "ls", server="ftp://x")
        r = self.code(5, "tables", "ls", "--retries", "0", server="http://127.0.0.1:1")
        self.assertIn("127.0.0.1:1", r.stderr)
        self.code(3, "scan", "nope")
        self.code(3, "load", "nope", self.path("one.ndjson", '{"id":1}\n'))
        # --help everywhere, with an example
        for cmd in (["tables"], ["load"], ["changes"], ["scan"], ["delete"], ["plan"], ["dv", "get"],
                    ["snapshots"], ["compact"], ["expire"], ["erase"], ["erasures"], ["health"]):
            r = self.ok(*cmd, "--help")
            self.assertIn("usage: strike", r.stdout)
            self.assertIn("example:", r.stdout)
        self.assertIn("tables", self.ok("--help").stdout)
        self.ok("tables", "drop", "t1")
        self.code(3, "tables", "drop", "t1")

    def test_tables_alter(self):
        """strike tables alter: the changes in order, one commit; its exit codes."""
        self.ok("tables", "create", "ta", "--columns", "id long not null, name string, qty int, note string not null",
                "--key", "id")
        r = self.ok("tables", "alter", "ta", "--add", "phone:string", "--rename", "name:full_name",
                    "--widen", "qty:long", "--optional", "note", "--expected-schema-id", "0",
                    "--output", "json")
        t = json.loads(r.stdout)
        self.assertEqual(t["schema_id"], 1)
        self.assertEqual([(c["name"], c["type"], c.get("required", False)) for c in t["columns"]],
                         [("id", "long", True), ("full_name", "string", False), ("qty", "long", False),
                          ("note", "string", False), ("phone", "string", False)])
        seq = t["seq"]
        # a stale --expected-schema-id: 409, exit 4, nothing applied
        r = self.code(4, "tables", "alter", "ta", "--drop", "phone", "--expected-schema-id", "0")
        self.assertIn("HTTP 409", r.stderr)
        # a refused change: 400 naming the column, exit 1, nothing applied (all or nothing)
        r = self.code(1, "tables", "alter", "ta", "--drop", "phone", "--drop", "id")
        self.assertIn("HTTP 400", r.stderr)
        self.assertIn('"id"', r.stderr)
        r = self.code(1, "tables", "alter", "ta", "--widen", "qty:int")
        self.assertIn("qty", r.stderr)
        t = json.loads(self.ok("tables", "show", "ta", "--output", "json").stdout)
        self.assertEqual((t["seq"], t["schema_id"]), (seq, 1))
        self.assertIn("phone", [c["name"] for c in t["columns"]])
        # the table display after an alter
        r = self.ok("tables", "alter", "ta", "--drop", "phone", "--add", "flag:boolean", "--output", "table")
        self.assertRegex(r.stdout, r"(?m)^columns\s+id long not null, full_name string, qty long, note string, "
                                   r"flag boolean$")
        # usage errors: exit 2, nothing sent
        for bad in (["ta"], ["ta", "--add", "phone"], ["ta", "--rename", "a"], ["ta", "--add", "x:long:maybe"],
                    ["ta", "--expected-schema-id", "x", "--drop", "flag"], ["--drop", "flag"],
                    ["ta", "--frob", "x"]):
            self.code(2, "tables", "alter", *bad)
        self.code(3, "tables", "alter", "nope", "--drop", "x")
        self.assertIn("tables alter TABLE", self.ok("tables", "--help").stdout)

    # ---- on a terminal ----

    def on_tty(self, *args, env=None):
        """Run strike with stdout and stderr on two pseudo-terminals; (exit code, stdout, stderr)."""
        outs = [pty.openpty(), pty.openpty()]
        e = dict(os.environ, STRIKE_SERVER=STRIKE)
        e.pop("STRIKE_OUTPUT", None)
        e.update(env or {})
        p = subprocess.Popen([os.path.join(h.BIN_DIR, "strike"), *args], stdin=subprocess.DEVNULL,
                             stdout=outs[0][1], stderr=outs[1][1], env=e)
        for _, slave in outs:
            os.close(slave)
        got = [b"", b""]
        for i, (master, _) in enumerate(outs):
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the other side closed
                    break
                if not chunk:
                    break
                got[i] += chunk
            os.close(master)
        return p.wait(timeout=300), got[0].decode(), got[1].decode()

    def test_terminal(self):
        self.ok("tables", "create", "tty", "--columns", "id long not null, v string", "--key", "id")
        p = os.path.join(self.dir, "tty.ndjson")
        with open(p, "w") as f:
            for i in range(30000):
                f.write('{"id":%d,"v":"%d"}\n' % (i, i))
        code, out, err = self.on_tty("load", "tty", p, "--batch", "5000")
        self.assertEqual(code, 0, err)
        # a progress bar redrawn in place: rows, MiB, rate, ETA, then the summary; nothing on stdout
        self.assertIn("\r[", err)
        self.assertRegex(err, r"\[#{24}\] 100% 30000 rows [0-9.]+ MiB [0-9.]+[kM]? rows/s")
        self.assertRegex(err, r"ETA \d+:\d\d")
        self.assertIn("30000 rows in 6 chunks", err)
        self.assertEqual(out, "")
        # tables on a terminal by default, bold headers unless NO_COLOR
        code, out, err = self.on_tty("scan", "tty", "--where", "id < 2")
        self.assertEqual(code, 0, err)
        self.assertIn("\x1b[1mid", out)
        self.assertIn("(2 rows)", out)
        code, out, err = self.on_tty("scan", "tty", "--where", "id < 2", env={"NO_COLOR": "1"})
        self.assertNotIn("\x1b", out)
        self.assertRegex(out, r"^id\s+v\r?\n")
        # -q: no progress at all
        code, out, err = self.on_tty("load", "tty", p, "--batch", "5000", "--new", "-q")
        self.assertEqual((code, err), (0, ""))

    # ---- load, changes ----

    def test_load_formats_and_changes(self):
        self.ok("tables", "create", "ld", "--columns",
                "id long not null, n int, x double, s string, ok boolean, at timestamp", "--key", "id")
        nd = self.path("ld.ndjson", "".join(json.dumps({"id": i, "n": i, "x": i / 4, "s": f"r{i}"}) + "\n"
                                            for i in range(0, 10)) + "\n")
        r = self.ok("load", "ld", nd, "--batch", "3")
        summary = json.loads(r.stdout)
        self.assertEqual(summary["rows"], 10)
        self.assertEqual(summary["chunks"], 4)
        self.assertEqual(summary["inserted"], 10)
        # the same file again: refused (exit 4), --resume: replayed, --new: applied again
        r = self.code(4, "load", "ld", nd, "--batch", "3")
        self.assertIn("--resume", r.stderr)
        r = json.loads(self.ok("load", "ld", nd, "--batch", "3", "--resume").stdout)
        self.assertEqual((r["replayed_chunks"], r["inserted"], r["updated"]), (4, 0, 0))
        r = json.loads(self.ok("load", "ld", nd, "--batch", "3", "--new").stdout)
        self.assertEqual((r["replayed_chunks"], r["updated"]), (0, 10))
        # CSV with a header: types from the table, empty unquoted is null, quoted kept
        c = self.path("ld.csv", 'id,s,x,ok,at,n\n10,"a,""b""",1.5,true,2024-01-02T03:04:05Z,7\n'
                                '11,,,false,1700000000000000,\n12,"",-2,,,\n13,"two\nlines",0,1,,3\n')
        r = json.loads(self.ok("load", "ld", c).stdout)
        self.assertEqual(r["inserted"], 4)
        got = {row["id"]: row for row in self.rows("ld", "--where", "id >= 10")}
        self.assertEqual(got[10], {"id": 10, "n": 7, "x": 1.5, "s": 'a,"b"', "ok": True,
                                   "at": "2024-01-02T03:04:05.000000Z"})
        self.assertEqual(got[11]["s"], None)
        self.assertEqual(got[11]["at"], "2023-11-14T22:13:20.000000Z")
        self.assertEqual(got[12]["s"], "")
        self.assertEqual(got[13]["s"], "two\nlines")
        bad = self.path("bad.csv", "id,n\n20,x\n")
        r = self.code(1, "load", "ld", bad)
        self.assertIn('line 2: column "n": not a int', r.stderr)
        r = self.code(1, "load", "ld", self.path("bad2.csv", "id,zz\n1,2\n"))
        self.assertIn('no column "zz"', r.stderr)
        r = self.code(1, "load", "ld", self.path("bad.ndjson", '{"id":30}\n[1]\n'))
        self.assertIn("line 2", r.stderr)
        # Parquet, written by strike parquet write
        pq = os.path.join(self.dir, "ld.parquet")
        schema = json.dumps([{"name": "id", "type": "long", "required": True}, {"name": "s", "type": "string"}])
        self.ok("parquet", "write", "--schema", schema, pq,
                stdin="".join(json.dumps({"id": 100 + i, "s": f"p{i}"}) + "\n" for i in range(50)))
        r = json.loads(self.ok("load", "ld", pq, "--batch", "20").stdout)
        self.assertEqual((r["rows"], r["chunks"], r["inserted"]), (50, 3, 50))
        # stdin
        r = json.loads(self.ok("load", "ld", "-", stdin='{"id":200,"s":"in"}\n{"id":201}\n').stdout)
        self.assertEqual(r["inserted"], 2)
        self.assertEqual(len(self.rows("ld")), 10 + 4 + 50 + 2)
        # changes: strike changes and Debezium events (with and without the wrapper)
        ch = self.path("ch.ndjson", "\n".join([
            json.dumps({"op": "delete", "key": {"id": 0}}),
            json.dumps({"op": "upsert", "row": {"id": 1, "s": "changed"}}),
            json.dumps({"op": "d", "before": {"id": 2}}),
            json.dumps({"schema": {}, "payload": {"op": "c", "after": {"id": 300, "s": "dbz"}}}),
            json.dumps({"op": "u", "before": {"id": 3}, "after": {"id": 3, "s": "u"}}),
        ]) + "\n")
        r = json.loads(self.ok("changes", "ld", ch, "--batch", "2").stdout)
        self.assertEqual((r["inserted"], r["updated"], r["deleted"]), (1, 2, 2))
        ids = {row["id"]: row["s"] for row in self.rows("ld", "--where", "id < 4 or id = 300")}
        self.assertEqual(ids, {1: "changed", 3: "u", 300: "dbz"})
        self.code(4, "changes", "ld", ch, "--batch", "2")
        # progress lines and the summary go to stderr, -q silences them
        self.assertIn("rows in", self.ok("load", "ld", nd, "--new").stderr)
        self.assertEqual(self.ok("load", "ld", nd, "--new", "-q").stderr, "")
        self.code(2, "load", "ld", nd, "--batch", "0")
        self.code(2, "load", "ld", nd, "--resume", "--new")
        self.code(1, "load", "ld", os.path.join(self.dir, "missing.ndjson"))

    def test_load_killed_and_resumed(self):
        self.ok("tables", "create", "big", "--columns", "id long not null, v string")  # no key
        p = os.path.join(self.dir, "big.ndjson")
        with open(p, "w") as f:
            for i in range(LOAD_ROWS):
                f.write('{"id":%d,"v":"value %d"}\n' % (i, i))
        e = dict(os.environ, STRIKE_SERVER=STRIKE)
        proc = subprocess.Popen([os.path.join(h.BIN_DIR, "strike"), "load", "big", p, "--batch", "10000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            live = self.s.req("GET", "/v1/tables/big").json()["stats"]["live_rows"]
            if live >= LOAD_ROWS // 4:
                break
            self.assertIsNone(proc.poll(), "the load finished before it could be killed")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        before = self.s.req("GET", "/v1/tables/big").json()["stats"]["live_rows"]
        self.assertLess(before, LOAD_ROWS)
        r = self.code(4, "load", "big", p, "--batch", "10000")  # not without --resume
        r = json.loads(self.ok("load", "big", p, "--batch", "10000", "--resume").stdout)
        self.assertEqual(r["rows"], LOAD_ROWS)
        self.assertGreaterEqual(r["replayed_chunks"], LOAD_ROWS // 4 // 10000)
        self.assertEqual(r["inserted"] + r["replayed_chunks"] * 10000, LOAD_ROWS)
        stats = self.s.req("GET", "/v1/tables/big").json()["stats"]
        self.assertEqual(stats["live_rows"], LOAD_ROWS)
        # and every row exactly once
        ids = [row["id"] for row in self.rows("big", "--columns", "id")]
        self.assertEqual(len(ids), LOAD_ROWS)
        self.assertEqual(len(set(ids)), LOAD_ROWS)

    # ---- --where ----

    def test_where_against_reference(self):
        self.ok("tables", "create", "w", "--columns", "id long not null, a long, d double, s string, b boolean",
                "--key", "id")
        rnd = random.Random(16)
        data = []
        for i in range(300):
            row = {"id": i}
            for c in COLS:
                row[c] = None if rnd.random() < 0.15 else values_for(c, rnd)
                if c == "d" and row[c] is not None:
                    row[c] = float(row[c])
            data.append(row)
        self.ok("load", "w", "-", stdin="".join(json.dumps(r) + "\n" for r in data))
        for n in range(150):
            text, f = gen(rnd)
            want = sorted(r["id"] for r in data if f(r) is True)
            r = strike("scan", "w", "--where", text, "--columns", "id", "--output", "json")
            self.assertEqual(r.returncode, 0, f"{text}: {r.stderr}")
            got = sorted(json.loads(line)["id"] for line in r.stdout.splitlines())
            self.assertEqual(got, want, f"--where {text}")
        # precise errors: the column of the mistake, and a caret under it
        for text, col, words in [("a < ", 5, "expected a value"), ("a = 1 and", 10, "expected a column"),
                                 ("a in (1, 2", 11, "expected ',' or ')'"), ("(a = 1", 7, "to close the '('"),
                                 ("a = 1 b = 2", 7, "expected 'and', 'or'"), ("a = null", 5, "is null"),
                                 ("s = 'open", 5, "unterminated string"), ("a ~ 1", 3, "unexpected character"),
                                 ("a is 3", 6, "expected 'null'"), ("s starts 'x'", 10, "with")]:
            r = self.code(2, "scan", "w", "--where", text)
            self.assertIn(f"column {col}: ", r.stderr)
            self.assertIn(words, r.stderr)
            lines = r.stderr.splitlines()
            self.assertEqual(lines[-1].index("^") - 2, col - 1, r.stderr)
        # the server's word on a wrong column
        r = self.code(1, "scan", "w", "--where", "nope = 1")
        self.assertIn("nope", r.stderr)
        # --filter-json takes the raw expression
        r = self.ok("scan", "w", "--filter-json", '{"type":"lt","term":"id","value":3}', "--columns", "id")
        self.assertEqual([json.loads(x)["id"] for x in r.stdout.splitlines()], [0, 1, 2])

    # ---- reads, deletes, maintenance ----

    def test_operations(self):
        self.ok("tables", "create", "ops", "--columns", "id long not null, status string, amount double",
                "--key", "id")
        self.ok("load", "ops", "-", stdin="".join(
            json.dumps({"id": i, "status": "NEW" if i % 2 else "PAID", "amount": i * 1.5}) + "\n"
            for i in range(100)))
        # scan: formats, columns, limit, snapshot
        rows = self.rows("ops", "--where", "id < 3")
        self.assertEqual(rows, [{"id": 0, "status": "PAID", "amount": 0}, {"id": 1, "status": "NEW", "amount": 1.5},
                                {"id": 2, "status": "PAID", "amount": 3}])
        c = list(csv.reader(io.StringIO(self.ok("scan", "ops", "--where", "id < 2", "--output", "csv").stdout)))
        self.assertEqual(c, [["id", "status", "amount"], ["0", "PAID", "0"], ["1", "NEW", "1.5"]])
        t = self.ok("scan", "ops", "--where", "id < 2", "--output", "table").stdout.splitlines()
        self.assertRegex(t[0], r"^id\s+status\s+amount$")
        self.assertRegex(t[2], r"^\s*0\s+PAID\s+0$")
        self.assertEqual(t[-1], "(2 rows)")
        self.assertEqual(self.rows("ops", "--columns", "amount,id", "--limit", "2"),
                         [{"amount": 0, "id": 0}, {"amount": 1.5, "id": 1}])
        self.assertEqual(len(self.rows("ops", "--snapshot", "0")), 0)
        # delete --where
        r = json.loads(self.ok("delete", "ops", "--where", "status = 'PAID' and id < 50").stdout)
        self.assertEqual(r["deleted"], 25)
        seq = r["seq"]
        self.code(4, "delete", "ops", "--where", "id = 1", "--expected-seq", "0")
        self.code(2, "delete", "ops")
        self.assertEqual(len(self.rows("ops")), 75)
        # plan and dv get
        plan = json.loads(self.ok("plan", "ops").stdout)
        self.assertEqual(plan["seq"], seq)
        f = plan["files"][0]
        self.assertEqual(f["deleted_count"], 25)
        pt = self.ok("plan", "ops", "--output", "table").stdout
        self.assertRegex(pt, r"(?m)^\s*%d\s+100\s+25\s" % f["id"])
        dv = os.path.join(self.dir, "f.dv")
        r = self.ok("dv", "get", "ops", str(f["id"]), "--format", "iceberg-dv", "-o", dv)
        self.assertIn("cardinality 25", r.stderr)
        dec = self.ok("dv", "decode", "--format", "iceberg-dv", dv).stdout.split()
        self.assertEqual(dec[0], "0")
        self.assertEqual(len(dec), 25)  # even positions 0..48, no runs
        raw = subprocess.run([os.path.join(h.BIN_DIR, "strike"), "dv", "get", "ops", str(f["id"])],
                             capture_output=True, env=dict(os.environ, STRIKE_SERVER=STRIKE))
        self.assertEqual(raw.returncode, 0)
        self.assertEqual(raw.stdout, self.s.req("GET", f"/v1/tables/ops/files/{f['id']}/dv").body)
        self.code(3, "dv", "get", "ops", "99999")
        # snapshots
        snaps = json.loads(self.ok("snapshots", "ops").stdout)["snapshots"]
        self.assertEqual([s["operation"] for s in snaps][0], "create")
        self.assertEqual(snaps[-1]["seq"], seq)
        sc = list(csv.DictReader(io.StringIO(self.ok("snapshots", "ops", "--output", "csv").stdout)))
        self.assertEqual([int(s["seq"]) for s in sc], [s["seq"] for s in snaps])
        # health: totals, advice (25% deleted is under 0.3: no compact advice), files
        hl = json.loads(self.ok("health", "ops").stdout)
        self.assertEqual((hl["rows"], hl["deleted_rows"]), (100, 25))
        ht = self.ok("health", "ops", "--output", "table").stdout
        self.assertRegex(ht, r"(?m)^deleted_rows\s+25$")
        self.assertRegex(ht, r"(?m)^\s*%d\s+100\s+25\s+0\.25\s" % f["id"])
        # compact, expire
        r = json.loads(self.ok("compact", "ops", "--min-deleted-fraction", "0.2").stdout)
        self.assertEqual((r["rewritten_files"], r["rows_dropped"]), (1, 25))
        self.code(2, "compact", "ops", "--min-deleted-fraction", "2")
        r = json.loads(self.ok("expire", "ops", "--retain-last", "1").stdout)
        self.assertGreaterEqual(r["expired_snapshots"], 2)
        self.code(1, "expire", "ops", "--older-than", "soon")
        self.code(3, "scan", "ops", "--snapshot", "0")
        # erase: the receipt; erasures
        r = self.ok("erase", "ops", "--key", '{"id":1}', "--key", '{"id":3}', "--idempotency-key", "cli-erase-1")
        receipt = json.loads(r.stdout)
        self.assertEqual((receipt["status"], receipt["rows_erased"]), ("verified", 2))
        again = json.loads(self.ok("erase", "ops", "--key", '{"id":1}', "--key", '{"id":3}',
                                   "--idempotency-key", "cli-erase-1").stdout)
        self.assertEqual(again["id"], receipt["id"])
        rt = self.ok("erase", "ops", "--where", "id = 5", "--output", "table").stdout
        self.assertRegex(rt, r"(?m)^status\s+verified$")
        self.code(2, "erase", "ops")
        self.code(2, "erase", "ops", "--key", "[1]")
        lst = json.loads(self.ok("erasures", "ops").stdout)["erasures"]
        self.assertEqual(len(lst), 2)
        one = json.loads(self.ok("erasures", "ops", receipt["id"]).stdout)
        self.assertEqual(one["key_digest"], receipt["key_digest"])
        self.code(3, "erasures", "ops", "00000000-0000-4000-8000-000000000000")
        # check keys against a receipt (issue 28 item 2): exit 0 on a match, 1 otherwise
        chk = self.ok("erasures", "check", "ops", receipt["id"], "--key", '{"id":3}', "--key", '{"id":1}')
        self.assertEqual(json.loads(chk.stdout), {"match": True})
        chk = self.code(1, "erasures", "check", "ops", receipt["id"], "--key", '{"id":1}')
        self.assertEqual(json.loads(chk.stdout), {"match": False})
        self.assertRegex(self.code(1, "erasures", "check", "ops", receipt["id"], "--key", '{"id":2}',
                                   "--output", "table").stdout, r"(?m)^match\s+false$")
        self.code(2, "erasures", "check", "ops", receipt["id"])
        self.code(2, "erasures", "check", "ops", "--key", '{"id":1}')
        self.code(3, "erasures", "check", "ops", "00000000-0000-4000-8000-000000000000", "--key", '{"id":1}')
        self.assertIn("erasures check TABLE ID", self.ok("erasures", "--help").stdout)
        self.assertEqual(len(self.rows("ops")), 72)


if __name__ == "__main__":
    unittest.main()
