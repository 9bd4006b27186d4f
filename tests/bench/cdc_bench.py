#!/usr/bin/env python3
"""cdc_bench.py - events/s through POST /v1/cdc/debezium against the same rows
through POST /v1/tables/{t}/changes, on one striked (issue 15's bench row).

Two tables of the same schema, each preloaded with the same --rows keys
through /changes. Then, per round, --batches batches of --batch events (half
updates of existing keys, half new keys), alternating CDC and /changes
rounds: the CDC side posts JSON arrays of Debezium envelopes with their
schema (schemas.enable=true, what Debezium Server sends by default; PostgreSQL
source, increasing LSNs, `u` with `before` null for updates, `c` for new
keys), the /changes side posts the same rows as upserts. Bodies are built
before the clock on both sides; the time is the server's (and the loopback's)
from the first POST of a round to the last answer, one kept-alive
connection. Every answer is checked (counts must add up).

  cdc_bench.py --url http://127.0.0.1:8080 [--rounds 5 --batches 50 --batch 200 --rows 100000]

Prints one JSON object: rows/s per round for both sides, medians, the ratio.
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse

STATUS = ["active", "pending", "closed", "refunded"]
COLS = [("id", "long", "int64", None), ("user_id", "long", "int64", None),
        ("amount", "double", "double", None), ("status", "string", "string", None),
        ("payload", "string", "string", None),
        ("created_at", "timestamp", "int64", "io.debezium.time.MicroTimestamp")]


def row_of(k, run):
    return {"id": k, "user_id": (k * 31 + run) % 1000000, "amount": (k % 100000) / 100 + run,
            "status": STATUS[(k + run) % 4],
            "payload": f'{{"ev":"upsert","sku":{k % 5000},"run":{run},"ua":"Mozilla/5.0 (X11; Linux x86_64)"}}',
            "created_at": 1700000000000000 + k}


def envelope_schema():
    def image(which):
        fields = []
        for name, _, ctype, logical in COLS:
            f = {"type": ctype, "optional": name != "id", "field": name}
            if logical:
                f.update(name=logical, version=1)
            fields.append(f)
        return {"type": "struct", "fields": fields, "optional": True, "name": "bench.public.t.Value",
                "field": which}
    source = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
              "field": "source",
              "fields": [{"type": "string", "optional": False, "field": k} for k in
                         ("version", "connector", "name", "db", "schema", "table")] +
                        [{"type": "string", "optional": True, "field": "sequence"},
                         {"type": "int64", "optional": True, "field": "lsn"},
                         {"type": "int64", "optional": True, "field": "txId"}]}
    return {"type": "struct", "optional": False, "name": "bench.public.t.Envelope",
            "fields": [image("before"), image("after"), source,
                       {"type": "string", "optional": False, "field": "op"},
                       {"type": "int64", "optional": True, "field": "ts_ms"}]}


class Client:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)

    def post(self, path, body):
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200 and r.status != 201:
            raise RuntimeError(f"POST {path}: {r.status} {data[:300]!r}")
        return json.loads(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--prefix", default="cdcb")
    ap.add_argument("--no-schema", action="store_true", help="bare payloads (schemas.enable=false)")
    a = ap.parse_args()
    c = Client(a.url)
    t_cdc, t_chg = f"{a.prefix}_cdc", f"{a.prefix}_changes"
    for t in (t_cdc, t_chg):
        c.post("/v1/tables", json.dumps({"name": t, "primary_key": ["id"],
                                         "columns": [{"name": n, "type": ty, "required": n == "id"}
                                                     for n, ty, _, _ in COLS]}))
        for lo in range(0, a.rows, 10000):
            rows = [row_of(k, 0) for k in range(lo, min(a.rows, lo + 10000))]
            r = c.post(f"/v1/tables/{t}/changes", json.dumps({"changes": [{"op": "upsert", "row": x} for x in rows]}))
            assert r["inserted"] == len(rows), r
    schema = envelope_schema()
    perm = lambda i: (i * 2654435761) % a.rows  # noqa: E731 - distinct existing keys
    upd, fresh, lsn = 0, a.rows, 10**9
    res = {"cdc": [], "changes": []}
    per = a.batches * a.batch
    for rnd in range(a.rounds + 1):  # round 0 warms up, not counted
        batches = []
        for _ in range(a.batches):
            keys = []
            for i in range(a.batch):
                if i % 2 == 0:
                    keys.append((perm(upd), "u"))
                    upd += 1
                else:
                    keys.append((fresh, "c"))
                    fresh += 1
            batches.append(keys)
        cdc_bodies, chg_bodies = [], []
        for keys in batches:
            evs = []
            for k, op in keys:
                lsn += 8
                payload = {
                    "before": None, "after": row_of(k, rnd + 1),
                    "source": {"version": "2.5.0.Final", "connector": "postgresql", "name": "bench",
                               "db": "bench", "schema": "public", "table": "t", "lsn": lsn, "txId": lsn // 64,
                               "sequence": json.dumps([str(lsn // 64 * 64 - 1), str(lsn)])},
                    "op": op, "ts_ms": 1700000000000}
                evs.append(payload if a.no_schema else {"schema": schema, "payload": payload})
            cdc_bodies.append(json.dumps(evs).encode())
            chg_bodies.append(json.dumps({"changes": [{"op": "upsert", "row": row_of(k, rnd + 1)}
                                                      for k, _ in keys]}).encode())
        for side in (("cdc", "changes") if rnd % 2 == 0 else ("changes", "cdc")):
            t0 = time.perf_counter()
            n = 0
            if side == "cdc":
                for body in cdc_bodies:
                    r = c.post(f"/v1/cdc/debezium?table={t_cdc}", body)["tables"][t_cdc]
                    n += r["inserted"] + r["updated"]
            else:
                for body in chg_bodies:
                    r = c.post(f"/v1/tables/{t_chg}/changes", body)
                    n += r["inserted"] + r["updated"]
            s = time.perf_counter() - t0
            if n != per:
                raise RuntimeError(f"{side}: {n} of {per} rows applied")
            if rnd > 0:
                res[side].append(per / s)
    out = {"schemas": not a.no_schema, "rounds": a.rounds, "batches": a.batches, "batch": a.batch, "rows": a.rows,
           "cdc_body_bytes": len(cdc_bodies[0]), "changes_body_bytes": len(chg_bodies[0]),
           "cdc_rows_per_s": res["cdc"], "changes_rows_per_s": res["changes"],
           "cdc_median": statistics.median(res["cdc"]), "changes_median": statistics.median(res["changes"])}
    out["ratio"] = out["cdc_median"] / out["changes_median"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
