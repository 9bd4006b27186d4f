"""POST /v1/cdc/debezium (docs/API.md "CDC endpoint") against the real striked
and PostgreSQL: every fixture shape of tests/data/debezium, malformed bodies
(a precise 4xx and no change), routing (?table=, source.table, --cdc-route,
404 for a table that does not exist), exactly-once by source position
(resends, concurrent duplicates), and the replay of 10,000 events in batches
with the sender "crashing" at random points and resending from an earlier
offset, and striked killed once mid-stream.
"""
import datetime
import json
import os
import random
import signal
import threading
import unittest

import harness as h
import http_util as u

FIXTURES = os.path.join(os.environ.get("STRIKE_SOURCE_DIR", ""), "tests", "data", "debezium")

CUSTOMERS = {
    "columns": [
        {"name": "id", "type": "long", "required": True},
        {"name": "first_name", "type": "string"},
        {"name": "last_name", "type": "string"},
        {"name": "email", "type": "string"},
        {"name": "created_at", "type": "timestamp"},
        {"name": "birth_date", "type": "timestamp"},
        {"name": "balance", "type": "double"},
    ],
    "primary_key": ["id"],
}

ITEMS = {"columns": [{"name": "id", "type": "long", "required": True}, {"name": "v", "type": "string"}],
         "primary_key": ["id"]}

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def ts(us):
    """A timestamp in microseconds as scans write it."""
    d = EPOCH + datetime.timedelta(microseconds=us)
    return d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def pg_event(op, key, lsn, value=None, name="pgsrv", table="items", schema="public", commit=None):
    """A PostgreSQL event; `commit`: the commit LSN before its transaction (source.sequence)."""
    row = None if value is None else {"id": key, "v": value}
    ev = {
        "before": {"id": key, "v": None} if op == "d" else None,
        "after": row,
        "source": {"version": "2.5.0.Final", "connector": "postgresql", "name": name,
                   "ts_ms": 1700000000000, "snapshot": "false", "db": "postgres",
                   "schema": schema, "table": table, "txId": lsn // 10, "lsn": lsn},
        "op": op,
        "ts_ms": 1700000000001,
    }
    if commit is not None:
        ev["source"]["sequence"] = json.dumps([str(commit), str(lsn)])
    return ev


class Cdc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = h.create_db("strike_cdc")
        cls.args = ["--cdc-route", "inventory.orders=cdc_orders", "--cdc-route",
                    "shop.public.items=routed_items"]
        cls.s = h.Striked(catalog=cls.db, extra_args=cls.args)

    @classmethod
    def tearDownClass(cls):
        cls.s.close_clean()

    def create(self, name, d=None):
        body = dict(d or CUSTOMERS)
        body["name"] = name
        r = self.s.req("POST", "/v1/tables", body)
        self.assertEqual(r.status, 201, r)

    def post(self, body, table=None, ctype="application/json", path="/v1/cdc/debezium"):
        if table is not None:
            path += f"?table={table}"
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        return self.s.req("POST", path, body, {"Content-Type": ctype} if ctype else {})

    def ok(self, body, table=None, ctype="application/json"):
        r = self.post(body, table, ctype)
        self.assertEqual(r.status, 200, r)
        return r.json()["tables"]

    def rows(self, table):
        return {r["id"]: r for r in u.scan_rows(self, self.s, table)}

    def seq(self, table):
        r = self.s.req("GET", f"/v1/tables/{table}")
        self.assertEqual(r.status, 200, r)
        return r.json()["seq"]

    # ---- every fixture shape -----------------------------------------------------------------

    def test_postgres_shapes(self):
        self.create("pg_shapes")
        t = self.ok(fixture("pg_snapshot_array.json"), "pg_shapes")
        self.assertEqual(set(t), {"pg_shapes"})
        self.assertEqual((t["pg_shapes"]["inserted"], t["pg_shapes"]["duplicates"]), (3, 0))
        # snapshot reads carry no position: a resend applies again (at least once), same rows
        t = self.ok(fixture("pg_snapshot_array.json"), "pg_shapes")
        self.assertEqual((t["pg_shapes"]["updated"], t["pg_shapes"]["duplicates"]), (3, 0))
        t = self.ok(fixture("pg_create_schema.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual((t["inserted"], t["updated"], t["deleted"], t["duplicates"]), (1, 0, 0, 0))
        row = self.rows("pg_shapes")[1001]
        self.assertEqual(row["created_at"], ts(1700000000123456))       # MicroTimestamp
        self.assertEqual(row["birth_date"], ts(19000 * 86400 * 10**6))   # Date: days
        self.assertEqual(row["balance"], 12.5)
        t = self.ok(fixture("pg_update_noschema.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual(t["updated"], 1)
        row = self.rows("pg_shapes")[1001]
        self.assertEqual((row["email"], row["balance"]), ("sally@example.com", 20.75))  # "20.75"
        t = self.ok(fixture("pg_key_change_update.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual((t["inserted"], t["deleted"]), (1, 1))  # 3 -> 30
        t = self.ok(fixture("pg_key_change_pair.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual((t["inserted"], t["deleted"]), (1, 1))  # 2 -> 20
        t = self.ok(fixture("pg_delete_schema.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual(t["deleted"], 1)
        self.assertEqual(sorted(self.rows("pg_shapes")), [1, 20, 30])
        self.assertEqual(self.rows("pg_shapes")[30]["first_name"], "Edward")
        # nothing to change: 204, no new snapshot
        seq = self.seq("pg_shapes")
        for name in ("heartbeat_schema.json", "tombstone.json", "pg_message.json",
                     "mysql_schema_change.json"):
            r = self.post(fixture(name), "pg_shapes")
            self.assertEqual((r.status, r.body), (204, b""), (name, r))
        r = self.post(b"", "pg_shapes", ctype=None)
        self.assertEqual(r.status, 204, r)
        r = self.post(b"null", "pg_shapes")
        self.assertEqual(r.status, 204, r)
        self.assertEqual(self.seq("pg_shapes"), seq)
        # truncate: every row goes; resent, it is a duplicate
        t = self.ok(fixture("pg_truncate.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual((t["deleted"], t["duplicates"]), (3, 0))
        self.assertEqual(self.rows("pg_shapes"), {})
        self.ok(fixture("pg_snapshot_array.json"), "pg_shapes")
        t = self.ok(fixture("pg_truncate.json"), "pg_shapes")["pg_shapes"]
        self.assertEqual((t["deleted"], t["duplicates"]), (0, 1))
        self.assertEqual(sorted(self.rows("pg_shapes")), [1, 2, 3])

    def test_batch_with_schema(self):
        self.create("batch_t")
        t = self.ok(fixture("pg_batch_schema.json"), "batch_t")["batch_t"]
        self.assertEqual((t["inserted"], t["updated"], t["deleted"], t["duplicates"]), (2, 1, 1, 0))
        row = self.rows("batch_t")[5001]
        self.assertEqual((row["email"], row["balance"]), ("ken@bell-labs.com", 8.5))
        self.assertEqual(row["birth_date"], ts(-9000 * 86400 * 10**6))  # Date before 1970
        self.assertEqual(sorted(self.rows("batch_t")), [5001])
        t = self.ok(fixture("pg_batch_schema.json"), "batch_t")["batch_t"]
        self.assertEqual(t["duplicates"], 4)

    def test_mysql_ndjson_cloudevents(self):
        self.create("my_shapes")
        t = self.ok(fixture("mysql_batch_noschema.json"), "my_shapes")["my_shapes"]
        self.assertEqual((t["inserted"], t["updated"], t["deleted"], t["duplicates"]), (3, 1, 1, 0))
        rows = self.rows("my_shapes")
        self.assertEqual(sorted(rows), [1004, 1006])
        self.assertEqual((rows[1004]["first_name"], rows[1004]["balance"]), ("Anne Marie", 6.5))
        self.assertEqual(rows[1004]["created_at"], "2023-11-14T22:13:20.000000Z")
        self.ok(fixture("mysql_create_schema.json"), "my_shapes")
        row = self.rows("my_shapes")[1007]
        self.assertEqual(row["created_at"], ts(1700000000000 * 1000))  # Timestamp: millis
        self.assertEqual(row["birth_date"], ts(0))
        self.assertEqual(row["balance"], 1234.5)
        # Aiven's NDJSON, with its own type and as application/json
        self.create("nd_shapes")
        t = self.ok(fixture("kafka_connect_aiven.ndjson"), "nd_shapes", "application/x-ndjson")
        self.assertEqual((t["nd_shapes"]["inserted"], t["nd_shapes"]["deleted"]), (2, 1))
        self.assertEqual(sorted(self.rows("nd_shapes")), [2002])
        t = self.ok(fixture("kafka_connect_aiven.ndjson"), "nd_shapes")
        self.assertEqual(t["nd_shapes"]["duplicates"], 3)
        self.ok(fixture("cloudevents_pg.json"), "nd_shapes", "application/cloudevents+json")
        row = self.rows("nd_shapes")[3001]
        self.assertEqual((row["first_name"], row["created_at"]), ("Grace", ts(1700001800000000)))

    # ---- exactly-once --------------------------------------------------------------------------

    def test_duplicates_change_nothing(self):
        self.create("dup_t")
        self.ok(fixture("pg_create_schema.json"), "dup_t")
        seq = self.seq("dup_t")
        t = self.ok(fixture("pg_create_schema.json"), "dup_t")["dup_t"]
        self.assertEqual((t["inserted"], t["updated"], t["duplicates"], t["seq"]), (0, 0, 1, seq))
        self.assertEqual(self.seq("dup_t"), seq)
        # a batch overlapping the stored position applies only what is newer
        self.create("dup_items", ITEMS)
        evs = [pg_event("c", k, 1000 + k, f"v{k}", table="dup_src") for k in range(1, 11)]
        t = self.ok(evs[:6], "dup_items")["dup_items"]
        self.assertEqual(t["inserted"], 6)
        t = self.ok(evs[3:], "dup_items")["dup_items"]
        self.assertEqual((t["inserted"], t["duplicates"]), (4, 3))
        # the same batch from two clients at once: applied once
        more = [pg_event("c", k, 5000 + k, "x", table="dup_src") for k in range(100, 150)]
        res = []

        def send():
            res.append(self.ok(more, "dup_items")["dup_items"])
        th = [threading.Thread(target=send) for _ in range(2)]
        for x in th:
            x.start()
        for x in th:
            x.join()
        self.assertEqual(sum(r["inserted"] for r in res), 50, res)
        self.assertEqual(sum(r["duplicates"] for r in res), 50, res)
        self.assertEqual(len(self.rows("dup_items")), 10 + 50)

    def test_interleaved_transactions(self):
        """PostgreSQL sends transactions in commit order; the LSNs of a transaction that
        committed later may be lower (it wrote first). source.sequence orders them."""
        self.create("ilv_t", ITEMS)
        a1 = pg_event("c", 1, 100, "a1", table="ilv", commit=50)
        a2 = pg_event("c", 2, 300, "a2", table="ilv", commit=50)   # A commits at 400
        b1 = pg_event("c", 3, 200, "b1", table="ilv", commit=400)  # B wrote at 200, commits at 500
        b2 = pg_event("u", 1, 210, "b2", table="ilv", commit=400)
        c1 = pg_event("d", 2, 450, table="ilv", commit=500)
        t = self.ok([a1, a2], "ilv_t")["ilv_t"]
        self.assertEqual(t["inserted"], 2)
        t = self.ok([b1], "ilv_t")["ilv_t"]   # 200 < 300, yet new
        self.assertEqual((t["inserted"], t["duplicates"]), (1, 0))
        t = self.ok([a1, a2, b1, b2, c1], "ilv_t")["ilv_t"]  # a resend from the start
        self.assertEqual((t["updated"], t["deleted"], t["duplicates"]), (1, 1, 3))
        self.assertEqual(self.rows("ilv_t"), {1: {"id": 1, "v": "b2"}, 3: {"id": 3, "v": "b1"}})
        t = self.ok([b2, c1], "ilv_t")["ilv_t"]
        self.assertEqual(t["duplicates"], 2)
        # a key change: Debezium's delete and create of one update share its LSN
        kd = pg_event("d", 3, 600, table="ilv", commit=550)
        kc = pg_event("c", 30, 600, "moved", table="ilv", commit=550)
        t = self.ok([kd], "ilv_t")["ilv_t"]
        self.assertEqual(t["deleted"], 1)
        t = self.ok([kd, kc], "ilv_t")["ilv_t"]  # the pair split across requests, resent
        self.assertEqual((t["inserted"], t["duplicates"]), (1, 1))
        self.assertEqual(sorted(self.rows("ilv_t")), [1, 30])

    # ---- routing ---------------------------------------------------------------------------------

    def test_routing(self):
        self.create("customers")
        self.create("cdc_orders")
        self.create("routed_items", ITEMS)
        # unmapped: the source table's own name; mapped: --cdc-route (db.table, db.schema.table)
        order = json.loads(fixture("mysql_create_schema.json"))
        order["payload"]["source"]["table"] = "orders"
        item = pg_event("c", 7, 42, "seven", name="shop", table="items")
        item["source"]["db"] = "shop"
        body = [json.loads(fixture("pg_create_schema.json")), order, item]
        t = self.ok(body)
        self.assertEqual(list(t), ["customers", "cdc_orders", "routed_items"])
        self.assertEqual([t[k]["inserted"] for k in t], [1, 1, 1])
        self.assertEqual(sorted(self.rows("customers")), [1001])
        self.assertEqual(sorted(self.rows("cdc_orders")), [1007])
        self.assertEqual(self.rows("routed_items")[7]["v"], "seven")
        # a source table that maps to nothing that exists: 404 naming it, nothing committed
        seq = self.seq("customers")
        ghost = pg_event("c", 1, 50, "x", table="ghost", schema="inventory")
        fresh = json.loads(fixture("pg_update_noschema.json"))
        r = self.post([fresh, ghost])
        u.assert_problem(self, r, 404, 'event 1 (inventory.ghost): table "ghost" does not exist')
        self.assertEqual(self.seq("customers"), seq)
        # an event without a source table needs ?table=
        r = self.post({"op": "c", "after": {"id": 1}})
        u.assert_problem(self, r, 400, "event 0: source.table: required")
        r = self.post({"op": "c", "after": {"id": 1}}, "nosuch")
        u.assert_problem(self, r, 404, 'table "nosuch" does not exist')

    # ---- malformed -------------------------------------------------------------------------------

    def test_malformed(self):
        self.create("bad_t")
        self.ok(fixture("pg_create_schema.json"), "bad_t")
        seq = self.seq("bad_t")
        good = json.loads(fixture("pg_update_noschema.json"))
        typed = json.loads(fixture("pg_update_noschema.json"))
        typed["after"]["id"] = "x"
        cases = [
            (b"{\"op\":", 400, "the body is not JSON"),
            (b"[1]", 400, "event 0: expected an event object, got integer"),
            (json.dumps([good, dict(good, op="x")]), 400,
             'event 1 (inventory.customers): op: expected "c", "r", "u", "d", "t" or "m", got "x"'),
            (json.dumps([good, dict(good, after=None)]), 400,
             'event 1 (inventory.customers): after: required (an object) for op "u"'),
            (json.dumps([good, dict(good, op="d", before=None)]), 400,
             'event 1 (inventory.customers): before: required'),
            (fixture("pg_decimal_precise.json"), 400,
             "event 0 (inventory.customers): after.balance: a decimal as base64 bytes"),
            (json.dumps([good, typed]), 400, 'event 1 (inventory.customers): column "id"'),
            # an unknown column is added under the default --cdc-schema evolve (test_cdc_schema.py);
            # a wrong type for a known one is still refused
            (json.dumps(dict(good, source=dict(good["source"], lsn=-1))), 400, "source.lsn"),
        ]
        for body, status, needle in cases:
            u.assert_problem(self, self.post(body, "bad_t"), status, needle)
        u.assert_problem(self, self.post(json.dumps(good), "bad_t", "application/xml"), 415)
        u.assert_problem(self, self.post(json.dumps(good), "no-such"), 400, "table")
        r = self.s.req("POST", "/v1/cdc/debezium?tabel=bad_t", json.dumps(good),
                       {"Content-Type": "application/json"})
        u.assert_problem(self, r, 400, 'unknown query parameter "tabel"')
        u.assert_problem(self, self.s.req("GET", "/v1/cdc/debezium"), 405)
        self.assertEqual(self.seq("bad_t"), seq)
        # the body limit, as /changes
        with h.Striked(catalog=self.db, extra_args=["--max-body", "1K"]) as small:
            r = small.req("POST", "/v1/cdc/debezium?table=bad_t", fixture("pg_create_schema.json"),
                          {"Content-Type": "application/json"})
            u.assert_problem(self, r, 413, "larger than the limit of 1024 bytes")
        self.assertEqual(self.seq("bad_t"), seq)
        self.assertEqual(self.rows("bad_t")[1001]["email"], "sally.thomas@acme.com")

    # ---- gRPC twin -------------------------------------------------------------------------------

    def test_grpc_twin(self):
        import grpc
        import grpc_client as gc
        self.create("grpc_t")
        c = gc.Client(self.s.grpc_port)
        try:
            m = c.call("ApplyDebezium", body=fixture("mysql_batch_noschema.json"), table="grpc_t")
            self.assertFalse(m.no_change)
            self.assertEqual([(t.table, t.inserted, t.updated, t.deleted, t.duplicates) for t in m.tables],
                             [("grpc_t", 3, 1, 1, 0)])
            self.assertEqual(m.tables[0].seq, self.seq("grpc_t"))
            m = c.call("ApplyDebezium", body=fixture("mysql_batch_noschema.json"), table="grpc_t")
            self.assertEqual(m.tables[0].duplicates, 5)
            m = c.call("ApplyDebezium", body=fixture("kafka_connect_aiven.ndjson"),
                       content_type="application/x-ndjson", table="grpc_t")
            self.assertEqual((m.tables[0].inserted, m.tables[0].deleted), (2, 1))
            m = c.call("ApplyDebezium", body=fixture("heartbeat_schema.json"), table="grpc_t")
            self.assertTrue(m.no_change)
            self.assertEqual(len(m.tables), 0)
            self.assertEqual(sorted(self.rows("grpc_t")), [1004, 1006, 2002])
            seq = self.seq("grpc_t")
            with self.assertRaises(grpc.RpcError) as e:
                c.call("ApplyDebezium", body=fixture("pg_decimal_precise.json"), table="grpc_t")
            self.assertEqual(gc.status_of(e.exception)[0], grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("event 0 (inventory.customers): after.balance", gc.status_of(e.exception)[1])
            with self.assertRaises(grpc.RpcError) as e:
                c.call("ApplyDebezium", body=fixture("pg_create_schema.json"), table="ghost_t")
            self.assertEqual(gc.status_of(e.exception),
                             (grpc.StatusCode.NOT_FOUND, 'event 0 (inventory.customers): table "ghost_t" '
                              'does not exist (create it, or map the source table with --cdc-route '
                              'SOURCE=TABLE or ?table=)'))
            with self.assertRaises(grpc.RpcError) as e:
                c.call("ApplyDebezium", body=b"{}", content_type="text/xml")
            self.assertEqual(gc.status_of(e.exception)[0], grpc.StatusCode.INVALID_ARGUMENT)
            self.assertEqual(self.seq("grpc_t"), seq)
        finally:
            c.close()

    # ---- replay ----------------------------------------------------------------------------------

    def test_replay_with_crashes(self):
        """10,000 events in batches; the sender "crashes" at random points (a batch sent but
        its answer lost, or not sent) and resends from an earlier offset, as Debezium does
        from its last committed offset; striked is killed once mid-stream. The transactions
        interleave (LSNs go back between them) and some updates change the key."""
        rnd = random.Random(15)
        self.create("replay_t", ITEMS)
        # PostgreSQL transactions of 1 to 5 events in commit order, the LSNs of each one starting
        # up to 400 below the previous one's last (interleaved writers), some updates changing the
        # key (Debezium's delete + create at one LSN); every event carries source.sequence
        state, events, last_lsn, commit = {}, [], 10**9, 10**9 + 1
        fresh = 600
        while len(events) < 10000:
            prev_commit = commit
            lsn = max(last_lsn - rnd.randrange(0, 400), 1)
            for _ in range(rnd.randrange(1, 6)):
                if len(events) >= 10000:
                    break
                lsn += rnd.randrange(1, 50)
                k = rnd.randrange(600)
                if k not in state:
                    state[k] = f"v{len(events)}"
                    events.append(pg_event("c", k, lsn, state[k], table="replay_src", commit=prev_commit))
                elif rnd.random() < 0.2 and len(events) < 9999:
                    fresh += 1
                    state[fresh] = state.pop(k)
                    events.append(pg_event("d", k, lsn, table="replay_src", commit=prev_commit))
                    events.append(pg_event("c", fresh, lsn, state[fresh], table="replay_src",
                                           commit=prev_commit))
                elif rnd.random() < 0.25:
                    del state[k]
                    events.append(pg_event("d", k, lsn, table="replay_src", commit=prev_commit))
                else:
                    state[k] = f"v{len(events)}"
                    events.append(pg_event("u", k, lsn, state[k], table="replay_src", commit=prev_commit))
            last_lsn = lsn
            commit = max(commit, lsn) + rnd.randrange(1, 30)
        self.assertEqual(len(events), 10000)
        applied = dups = sent = 0
        committed = 0  # the sender's own committed offset (Debezium's offset store)
        pos = 0
        killed = False
        while committed < len(events):
            n = rnd.randrange(1, 201)
            batch = events[pos:pos + n]
            if rnd.random() < 0.15:
                pos = max(0, committed - rnd.randrange(0, 400))  # crash before sending
                continue
            if rnd.random() < 0.5:
                body, ctype = "\n".join(json.dumps(e) for e in batch), "application/x-ndjson"
            else:
                body, ctype = json.dumps(batch), "application/json"
            if not killed and committed > 5000:
                killed = True
                self.s.stop(signal.SIGKILL)
                type(self).s = self.s.successor()
            r = self.post(body, "replay_t", ctype)
            self.assertEqual(r.status, 200, r)
            t = r.json()["tables"]["replay_t"]
            applied += t["inserted"] + t["updated"] + t["deleted"]
            dups += t["duplicates"]
            sent += len(batch)
            pos += len(batch)
            if rnd.random() < 0.2:
                pos = max(0, committed - rnd.randrange(0, 400))  # answer lost: resend earlier
            else:
                committed = pos
        rows = {r["id"]: r["v"] for r in u.scan_rows(self, self.s, "replay_t")}
        self.assertEqual(rows, state)
        self.assertEqual(applied, len(events))  # 0 lost, 0 applied twice
        self.assertEqual(dups, sent - len(events))
        self.assertGreater(dups, 0)


if __name__ == "__main__":
    unittest.main()
