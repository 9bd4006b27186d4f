"""POST /v1/cdc/debezium when the source's columns change (docs/API.md "CDC schema
changes"), against the real striked and PostgreSQL, with PostgreSQL-connector
events in the JSON converter's wrapper (the schema says each field's type):

- evolve (the default): a Debezium replay where the source adds a column,
  widens one (int32 -> int64), renames one (a drop plus an add) and drops
  one, each batch resent once (duplicates), and the sender crashing in the
  middle of the batch that first carries the new column: striked is killed
  (kill -9) after the schema commit and before the rows' commit (a trigger
  holds the rows' snapshot insert), restarted, and the batch resent: the
  column is there, the rows commit exactly once. The table then equals the
  source's final state, nothing was refused, the kept columns read null.
  A schema-change event (tableChanges) adds its column before any row.
- incompatible changes under evolve: a type narrowed between two events
  (int64 then int32), a key column gone, a key column retyped, a value of
  another type: a 400 naming the event, the source table and the column,
  and nothing commits (the new column of an earlier event of the body is
  not added, seq and schema_id unchanged).
- refuse: a new column or a widening is a 400 naming the event, the table,
  the column and the policy; nothing changes.
- ignore-new: the values of unknown columns are dropped and counted.
- gRPC AlterTable: add, rename, widen, optional, drop, a stale
  expected_schema_id (ABORTED, nothing applied), a refused change.
"""
import json
import signal
import threading
import time
import unittest

import grpc

import grpc_client as gc
import harness as h
import http_util as u
from grpc_client import pb

TABLE = {
    "columns": [
        {"name": "id", "type": "long", "required": True},
        {"name": "name", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": "string", "required": True},
    ],
    "primary_key": ["id"],
}


def envelope(fields):
    """The JSON converter's schema of a PostgreSQL change event whose row has `fields`
    [(name, type, optional)]."""
    row = [{"type": t, "optional": opt, "field": n} for n, t, opt in fields]
    return {
        "type": "struct", "name": "pgsrv.public.t.Envelope", "optional": False,
        "fields": [
            {"type": "struct", "fields": row, "optional": True, "name": "pgsrv.public.t.Value",
             "field": "before"},
            {"type": "struct", "fields": row, "optional": True, "name": "pgsrv.public.t.Value",
             "field": "after"},
            {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
             "field": "source", "fields": [{"type": "string", "optional": False, "field": "name"}]},
            {"type": "string", "optional": False, "field": "op"},
        ],
    }


def event(table, fields, op, lsn, row, before=None):
    """A wrapped PostgreSQL event at source position `lsn` (row: the after image)."""
    return {
        "schema": envelope(fields),
        "payload": {
            "before": before, "after": row,
            "source": {"version": "2.5.0.Final", "connector": "postgresql", "name": "pgsrv",
                       "ts_ms": 1700000000000, "snapshot": "false", "db": "src",
                       "schema": "public", "table": table, "lsn": lsn},
            "op": op, "ts_ms": 1700000000001,
        },
    }


class Source:
    """The source table as Debezium sees it: its columns (name, type) and rows, and the events
    its changes make, with increasing positions."""

    def __init__(self, table, cols):
        self.table, self.cols, self.rows, self.lsn = table, list(cols), {}, 1000
        self.written = {}  # each key's last after image, as sent

    def fields(self):
        return [(n, t, n != "id") for n, t in self.cols]

    def put(self, key, **vals):
        op = "u" if key in self.rows else "c"
        row = {n: None for n, _ in self.cols}
        row.update(self.rows.get(key, {}))
        row.update(vals)
        row = {n: row.get(n) for n, _ in self.cols}
        row["id"] = key
        self.rows[key] = row
        self.written[key] = dict(row)
        self.lsn += 10
        return event(self.table, self.fields(), op, self.lsn, row)

    def add(self, name, typ):
        self.cols.append((name, typ))

    def drop(self, name):
        self.cols = [(n, t) for n, t in self.cols if n != name]
        for r in self.rows.values():
            r.pop(name, None)

    def retype(self, name, typ):
        self.cols = [(n, typ if n == name else t) for n, t in self.cols]


def post(s, body, table=None):
    path = "/v1/cdc/debezium" + (f"?table={table}" if table else "")
    return s.req("POST", path, json.dumps(body), {"Content-Type": "application/json"})


def table_of(s, name):
    """GET /v1/tables/{name}; gRPC GetTable's schema_id must be the same."""
    r = s.req("GET", f"/v1/tables/{name}")
    assert r.status == 200, r
    t = r.json()
    c = gc.Client(s.grpc_port)
    try:
        sid = c.call("GetTable", name=name).schema_id
    finally:
        c.close()
    assert t["schema_id"] == sid, (t, sid)
    return t


def columns(s, name):
    return {c["name"]: (c["type"], c.get("required", False)) for c in table_of(s, name)["columns"]}


class Base(unittest.TestCase):
    maxDiff = None
    POLICY = None

    @classmethod
    def setUpClass(cls):
        cls.dbname = f"strike_cdc_schema_{cls.__name__.lower()}"
        cls.db = h.create_db(cls.dbname)
        cls.args = ["--cdc-schema", cls.POLICY] if cls.POLICY else []
        cls.s = h.Striked(catalog=cls.db, extra_args=cls.args)

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def create(self, name, spec=TABLE):
        r = self.s.req("POST", "/v1/tables", dict(spec, name=name))
        self.assertEqual(r.status, 201, r)

    def ok(self, body, table):
        r = post(self.s, body)
        self.assertEqual(r.status, 200, r)
        return r.json()["tables"][table]

    def rows(self, table):
        return {r["id"]: r for r in u.scan_rows(self, self.s, table)}


class Evolve(Base):
    """The default policy: no --cdc-schema."""

    def test_replay(self):
        self.create("t")
        src = Source("t", [("id", "int64"), ("name", "string"), ("qty", "int32"), ("note", "string")])
        a = [src.put(k, name=f"n{k}", qty=k, note="x") for k in (1, 2, 3)]
        r = self.ok(a, "t")
        self.assertEqual((r["inserted"], r["schema_changes"], r["schema_id"]), (3, 0, 0), r)
        self.assertEqual(self.ok(a, "t")["duplicates"], 3)  # a resend

        # the source adds "phone": the first batch carrying it is cut off by a crash between the
        # schema commit and the rows' commit (the rows' snapshot insert sleeps; striked is killed)
        src.add("phone", "string")
        b = [src.put(1, phone="555-1"), src.put(4, name="n4", qty=4, note="y", phone="555-4")]
        before = table_of(self.s, "t")
        h.sql(self.dbname, "CREATE SEQUENCE test_hold; CREATE FUNCTION test_hold() RETURNS trigger "
                       "LANGUAGE plpgsql AS $$ BEGIN IF NEW.operation <> 'schema' AND "
                       "nextval('public.test_hold') = 1 THEN PERFORM pg_sleep(60); END IF; "
                       "RETURN NEW; END $$; CREATE TRIGGER test_hold BEFORE INSERT ON "
                       "strike.snapshots FOR EACH ROW EXECUTE FUNCTION test_hold()")
        answer = []

        def send():
            try:
                answer.append(post(self.s, b))
            except OSError as e:
                answer.append(e)
        th = threading.Thread(target=send, daemon=True)
        th.start()
        sleeping = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
        deadline = time.monotonic() + 60
        while h.sql(self.dbname, sleeping)[0][0] != "1" and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(h.sql(self.dbname, sleeping)[0][0], "1", "the rows never reached their commit")
        old = self.s
        old.stop(signal.SIGKILL)
        th.join(30)
        self.assertFalse(answer and not isinstance(answer[0], OSError) and answer[0].status == 200,
                         f"the killed server answered: {answer}")
        h.sql(self.dbname, "DROP TRIGGER test_hold ON strike.snapshots; DROP FUNCTION test_hold(); "
                       "DROP SEQUENCE test_hold")
        deadline = time.monotonic() + 30  # PostgreSQL notices the client is gone
        while h.sql(self.dbname, sleeping)[0][0] != "0" and time.monotonic() < deadline:
            time.sleep(0.1)
        type(self).s = old.successor()
        # the column was added (its own commit), the rows were not
        mid = table_of(self.s, "t")
        self.assertIn("phone", [c["name"] for c in mid["columns"]])
        self.assertEqual(mid["schema_id"], before["schema_id"] + 1)
        self.assertEqual(mid["seq"], before["seq"] + 1)
        self.assertNotIn(4, self.rows("t"))
        # the resend finds the column there and commits the rows once
        r = self.ok(b, "t")
        self.assertEqual((r["inserted"], r["updated"], r["schema_changes"]), (1, 1, 0), r)
        self.assertEqual(r["seq"], mid["seq"] + 1, r)
        r = self.ok(b, "t")
        self.assertEqual((r["duplicates"], r["inserted"], r["updated"]), (2, 0, 0), r)

        # the source widens qty (int32 -> int64): the column becomes long before the rows
        src.retype("qty", "int64")
        c = [src.put(5, name="n5", qty=5_000_000_000, note="z"), src.put(2, qty=7)]
        r = self.ok(c, "t")
        self.assertEqual((r["schema_changes"], r["inserted"], r["updated"]), (1, 1, 1), r)
        self.assertEqual(columns(self.s, "t")["qty"], ("long", False))
        self.assertEqual(self.ok(c, "t")["duplicates"], 2)

        # the source renames name -> full_name (a drop plus an add): strike keeps "name" (null
        # from then on) and adds "full_name"
        src.drop("name")
        src.add("full_name", "string")
        d = [src.put(2, full_name="Two"), src.put(6, full_name="Six", qty=6, note="w")]
        r = self.ok(d, "t")
        self.assertEqual((r["schema_changes"], r["inserted"], r["updated"]), (1, 1, 1), r)

        # the source drops phone and note (note is required in strike: it becomes optional)
        src.drop("phone")
        src.drop("note")
        e = [src.put(4, qty=44), src.put(7, full_name="Seven", qty=7)]
        r = self.ok(e, "t")
        self.assertEqual((r["schema_changes"], r["inserted"], r["updated"]), (1, 1, 1), r)
        self.assertEqual(self.ok(e, "t")["duplicates"], 2)

        cols = columns(self.s, "t")
        self.assertEqual(cols, {"id": ("long", True), "name": ("string", False),
                                "qty": ("long", False), "note": ("string", False),
                                "phone": ("string", False), "full_name": ("string", False)})
        # the table equals the source's final state in the source's columns; the columns the
        # source lost keep what was written before (nothing deleted) and read null in the rows
        # written since
        got = self.rows("t")
        self.assertEqual(sorted(got), sorted(src.rows))
        for k, row in src.rows.items():
            self.assertEqual({n: got[k][n] for n in row}, row, k)
            w = {n: None for n in cols}
            w.update(src.written[k])
            self.assertEqual(got[k], w, k)
        self.assertEqual(got[1]["phone"], "555-1")  # written before the source dropped it
        self.assertEqual((got[1]["name"], got[2]["name"], got[2]["full_name"]), ("n1", None, "Two"))
        self.assertEqual((got[4]["phone"], got[4]["note"], got[4]["qty"]), (None, None, 44))
        self.assertEqual(got[5]["qty"], 5_000_000_000)
        # every schema change was a commit of its own, ahead of its rows
        self.assertEqual(table_of(self.s, "t")["schema_id"], 4)

    def test_schema_change_event(self):
        self.create("sc")
        ddl = {"source": {"version": "2.5.0.Final", "connector": "mysql", "name": "mysrv",
                          "db": "inventory", "table": "sc", "file": "mysql-bin.000003", "pos": 154,
                          "row": 0, "snapshot": "false"},
               "databaseName": "inventory", "ddl": "ALTER TABLE sc ADD COLUMN score BIGINT",
               "tableChanges": [{"type": "ALTER", "id": "\"inventory\".\"sc\"", "table": {
                   "primaryKeyColumnNames": ["id"],
                   "columns": [{"name": "id", "jdbcType": -5, "typeName": "BIGINT", "optional": False},
                               {"name": "name", "jdbcType": 12, "typeName": "VARCHAR"},
                               {"name": "qty", "jdbcType": 4, "typeName": "INT"},
                               {"name": "note", "jdbcType": 12, "typeName": "VARCHAR"},
                               {"name": "score", "jdbcType": -5, "typeName": "BIGINT"}]}},
                   {"type": "ALTER", "id": "\"inventory\".\"not_here\"", "table": {
                       "columns": [{"name": "id", "jdbcType": 4}]}}]}
        seq = table_of(self.s, "sc")["seq"]
        r = self.ok(ddl, "sc")
        self.assertEqual((r["schema_changes"], r["seq"], r["schema_id"]), (1, seq + 1, 1), r)
        self.assertEqual(columns(self.s, "sc")["score"], ("long", False))
        # the same again: nothing to change (204)
        r = post(self.s, ddl)
        self.assertEqual(r.status, 204, r)
        # a schema-change event whose key is not the table's: 400, nothing changes
        bad = json.loads(json.dumps(ddl))
        bad["tableChanges"][0]["table"]["primaryKeyColumnNames"] = ["name"]
        u.assert_problem(self, post(self.s, bad), 400,
                         'event 0 (inventory.sc): column "name": the source\'s primary key')
        self.assertEqual(table_of(self.s, "sc")["seq"], seq + 1)

    def test_required_with_default(self):
        """A required column with a default that the source never sends: its write-default, and
        the column stays required (nothing to change)."""
        self.create("dflt")
        r = self.s.req("POST", "/v1/tables/dflt/schema", {"changes": [
            {"add": {"name": "tier", "type": "string", "required": True, "default": "std"}}]})
        self.assertEqual(r.status, 200, r)
        src = Source("dflt", [("id", "int64"), ("name", "string"), ("qty", "int32"), ("note", "string")])
        r = self.ok([src.put(1, name="a", qty=1, note="n")], "dflt")
        self.assertEqual((r["inserted"], r["schema_changes"], r["schema_id"]), (1, 0, 1), r)
        self.assertEqual(columns(self.s, "dflt")["tier"], ("string", True))
        self.assertEqual(self.rows("dflt")[1]["tier"], "std")

    def test_incompatible(self):
        self.create("inc")
        src = Source("inc", [("id", "int64"), ("name", "string"), ("qty", "int64"), ("note", "string")])
        r = self.ok([src.put(1, name="a", qty=1, note="n")], "inc")  # qty widened to long
        self.assertEqual(r["schema_changes"], 1, r)
        t0 = table_of(self.s, "inc")
        fresh = [("id", "int64"), ("name", "string"), ("qty", "int64"), ("note", "string"),
                 ("extra", "string")]
        first = event("inc", [(n, t, n != "id") for n, t in fresh], "c", 5000,
                      {"id": 2, "name": "b", "qty": 2, "note": "n", "extra": "e"})
        narrowed = event("inc", [("id", "int64", False), ("name", "string", True), ("qty", "int32", True),
                                 ("note", "string", True), ("extra", "string", True)], "c", 5010,
                         {"id": 3, "name": "c", "qty": 3, "note": "n", "extra": "e"})
        nokey = event("inc", [("name", "string", True), ("qty", "int64", True), ("note", "string", True)],
                      "c", 5020, {"name": "c", "qty": 3, "note": "n"})
        keytype = event("inc", [("id", "string", False), ("name", "string", True), ("qty", "int64", True),
                                ("note", "string", True)], "c", 5030,
                        {"id": "k", "name": "c", "qty": 3, "note": "n"})
        retyped = event("inc", [("id", "int64", False), ("name", "int64", True), ("qty", "int64", True),
                                ("note", "string", True)], "c", 5040,
                        {"id": 4, "name": 9, "qty": 3, "note": "n"})
        cases = [
            ([first, narrowed], 'event 1 (public.inc): column "qty": the source narrowed its type '
                                'from long to int'),
            ([first, nokey], 'event 1 (public.inc): column "id": the primary-key column is not in '
                             'the source any more'),
            ([keytype], 'event 0 (public.inc): column "id": the source\'s type string does '
                        'not go into the table\'s long primary-key column'),
            ([first, keytype], 'event 1 (public.inc): column "id": the source changed its type '
                               'from long to string'),
            ([retyped], 'event 0 (public.inc): column "name": the source\'s type long does '
                        'not go into the table\'s string column'),
            ([first, retyped], 'event 1 (public.inc): column "name": the source changed its type '
                               'from string to long'),
        ]
        for body, needle in cases:
            u.assert_problem(self, post(self.s, body), 400, needle)
            t = table_of(self.s, "inc")
            self.assertEqual((t["seq"], t["schema_id"]), (t0["seq"], t0["schema_id"]), needle)
            self.assertNotIn("extra", [c["name"] for c in t["columns"]], needle)
        self.assertEqual(sorted(self.rows("inc")), [1])


class Refuse(Base):
    POLICY = "refuse"

    def test_refuse(self):
        self.create("r")
        src = Source("r", [("id", "int64"), ("name", "string"), ("qty", "int32"), ("note", "string")])
        self.ok([src.put(1, name="a", qty=1, note="n")], "r")
        t0 = table_of(self.s, "r")
        src.add("phone", "string")
        body = [src.put(2, name="b", qty=2, note="n"), src.put(3, name="c", qty=3, note="n", phone="p")]
        u.assert_problem(self, post(self.s, body), 400,
                         'event 0 (public.r): column "phone" is not in table "r" (--cdc-schema refuse')
        src.drop("phone")
        src.retype("qty", "int64")
        body = [src.put(2, name="b", qty=2, note="n"), src.put(3, name="c", qty=3, note="n")]
        u.assert_problem(self, post(self.s, body), 400,
                         'event 0 (public.r): column "qty": the source\'s type long does not go into '
                         'the table\'s int column (--cdc-schema refuse')
        t = table_of(self.s, "r")
        self.assertEqual((t["seq"], t["schema_id"], t["columns"]),
                         (t0["seq"], t0["schema_id"], t0["columns"]))
        self.assertEqual(sorted(self.rows("r")), [1])


class IgnoreNew(Base):
    POLICY = "ignore-new"

    def test_ignore_new(self):
        self.create("ig")
        src = Source("ig", [("id", "int64"), ("name", "string"), ("qty", "int32"), ("note", "string"),
                            ("phone", "string")])
        t0 = table_of(self.s, "ig")
        r = self.ok([src.put(1, name="a", qty=1, note="n", phone="p1"),
                     src.put(2, name="b", qty=2, note="n"),
                     src.put(3, name="c", qty=3, note="n", phone="p3")], "ig")
        self.assertEqual((r["inserted"], r["ignored"], r["schema_changes"]), (3, 2, 0), r)
        t = table_of(self.s, "ig")
        self.assertEqual((t["columns"], t["schema_id"]), (t0["columns"], t0["schema_id"]))
        self.assertEqual(self.rows("ig")[1], {"id": 1, "name": "a", "qty": 1, "note": "n"})


class GrpcAlter(Base):
    def test_alter_table(self):
        self.create("g")
        c = gc.Client(self.s.grpc_port)
        try:
            t = c.call("AlterTable", pb.AlterTableRequest(table="g", changes=[
                pb.SchemaChange(add=pb.Column(name="phone", type="string")),
                pb.SchemaChange(rename=pb.RenameColumn(**{"from": "name", "to": "full_name"})),
                pb.SchemaChange(widen=pb.WidenColumn(column="qty", type="long")),
                pb.SchemaChange(optional="note")], expected_schema_id=0))
            self.assertEqual(t.schema_id, 1)
            self.assertEqual([(x.name, x.type, x.required) for x in t.columns],
                             [("id", "long", True), ("full_name", "string", False),
                              ("qty", "long", False), ("note", "string", False),
                              ("phone", "string", False)])
            self.assertEqual(c.call("GetTable", name="g").schema_id, 1)
            self.assertIn("full_name", [x["name"] for x in table_of(self.s, "g")["columns"]])
            seq = t.seq
            # a stale expected_schema_id: ABORTED, nothing applied
            with self.assertRaises(grpc.RpcError) as cm:
                c.call("AlterTable", pb.AlterTableRequest(
                    table="g", changes=[pb.SchemaChange(drop="phone")], expected_schema_id=0))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.ABORTED, cm.exception)
            # refused changes: INVALID_ARGUMENT naming the column, nothing applied (all or nothing)
            for ch, needle in [(pb.SchemaChange(drop="id"), "id"),
                               (pb.SchemaChange(widen=pb.WidenColumn(column="qty", type="int")), "qty"),
                               (pb.SchemaChange(add=pb.Column(name="bad-name", type="string")),
                                "bad-name"),
                               (pb.SchemaChange(), "changes[1]")]:
                with self.assertRaises(grpc.RpcError) as cm:
                    c.call("AlterTable", pb.AlterTableRequest(
                        table="g", changes=[pb.SchemaChange(drop="phone"), ch]))
                self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, needle)
                self.assertIn(needle, cm.exception.details())
            t = c.call("GetTable", name="g")
            self.assertEqual((t.seq, t.schema_id), (seq, 1))
            self.assertIn("phone", [x.name for x in t.columns])
            t = c.call("AlterTable", pb.AlterTableRequest(
                table="g", changes=[pb.SchemaChange(drop="phone")], expected_schema_id=1))
            self.assertEqual((t.schema_id, t.seq), (2, seq + 1))
            self.assertNotIn("phone", [x.name for x in t.columns])
            with self.assertRaises(grpc.RpcError) as cm:
                c.call("AlterTable", pb.AlterTableRequest(
                    table="nosuch", changes=[pb.SchemaChange(drop="x")]))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
            # an idempotency-key: the retry gets the first answer, nothing applied twice
            md = (("idempotency-key", "alter-g-1"),)
            add_z = pb.AlterTableRequest(table="g", changes=[
                pb.SchemaChange(add=pb.Column(name="z", type="long", required=True), default_json="7")])
            t1 = c.call("AlterTable", add_z, metadata=md)
            t2 = c.call("AlterTable", add_z, metadata=md)
            self.assertEqual((t1.seq, t1.schema_id), (seq + 2, 3))
            self.assertEqual((t2.seq, t2.schema_id), (t1.seq, t1.schema_id))
            self.assertEqual(c.call("GetTable", name="g").seq, t1.seq)
            with self.assertRaises(grpc.RpcError):  # the same key, another request
                c.call("AlterTable", pb.AlterTableRequest(
                    table="g", changes=[pb.SchemaChange(drop="z")]), metadata=md)
            self.assertEqual(c.call("GetTable", name="g").seq, t1.seq)
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
