#!/usr/bin/python3
"""expire_history.py - what snapshot expiry gives back after a long history.

    make test-gcc     # or any build tree with striked
    tests/lib/pgfixture.sh start /tmp/strike-bench-pg
    /usr/bin/python3 tests/bench/expire_history.py --build build/gcc --pg-host /tmp/strike-bench-pg
    tests/lib/pgfixture.sh stop /tmp/strike-bench-pg

Loads a table (--rows rows in one commit), then --commits commits of one
upserted key each (each rewrites a hot key: a removed data file and a
closed DV per commit), over HTTP. Then: the catalog's rows for the table,
the blob count, and the median of 5 plans, 5 full scans and 5 single-key
deletes; then one expiry (retain_last 1, timed), and the same numbers
again. The background task is off (--compact-interval 0). Prints a table;
no assertions. Client, striked and PostgreSQL share the machine's cores.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build/gcc")
    p.add_argument("--pg-host", required=True, help="unix socket dir of a running PostgreSQL")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--commits", type=int, default=2000)
    return p.parse_args()


def main():
    a = parse_args()
    os.environ["STRIKE_BIN_DIR"] = os.path.abspath(os.path.join(a.build, "bin"))
    os.environ["STRIKE_TEST_PG_HOST"] = a.pg_host
    import harness as h  # noqa: E402 (reads the environment at import)

    db = "strike_bench_expire"
    with h.Striked(catalog=h.create_db(db), extra_args=["--compact-interval", "0"]) as s:
        cols = [{"name": "id", "type": "long", "required": True}, {"name": "v", "type": "long"}]
        assert s.req("POST", "/v1/tables", {"name": "t", "columns": cols, "primary_key": ["id"]}).status == 201
        rows = [{"op": "upsert", "row": {"id": i, "v": i}} for i in range(a.rows)]
        assert s.req("POST", "/v1/tables/t/changes", {"changes": rows}).status == 200
        t0 = time.monotonic()
        for k in range(a.commits):
            r = s.req("POST", "/v1/tables/t/changes",
                      {"changes": [{"op": "upsert", "row": {"id": a.rows, "v": k}},
                                   {"op": "delete", "key": {"id": k}}]})
            assert r.status == 200, r
        load_s = time.monotonic() - t0
        uuid = s.req("GET", "/v1/tables/t").json()["uuid"]

        def catalog():
            q = ("SELECT (SELECT count(*) FROM strike.snapshots WHERE table_id = t.id), "
                 "(SELECT count(*) FROM strike.data_files WHERE table_id = t.id), "
                 "(SELECT count(*) FROM strike.deletion_vectors WHERE table_id = t.id) "
                 "FROM strike.tables t WHERE t.name = 't'")
            return tuple(int(x) for x in h.sql(db, q)[0])

        def blobs():
            n = 0
            for kind in ("data", "dv"):
                d = os.path.join(s.data_dir, "tables", uuid, kind)
                n += len(os.listdir(d)) if os.path.isdir(d) else 0
            return n

        def median_ms(fn, n=5):
            ts = []
            for _ in range(n):
                t = time.monotonic()
                fn()
                ts.append((time.monotonic() - t) * 1000)
            return statistics.median(ts)

        key = [a.rows - 1]

        def delete_one():
            key[0] -= 1
            r = s.req("POST", "/v1/tables/t/changes", {"changes": [{"op": "delete", "key": {"id": key[0]}}]})
            assert r.status == 200, r

        def measure():
            return (catalog(), blobs(),
                    median_ms(lambda: s.req("POST", "/v1/tables/t/plan", {})),
                    median_ms(lambda: s.req("POST", "/v1/tables/t/scan", {})),
                    median_ms(delete_one))

        before = measure()
        t = time.monotonic()
        r = s.req("POST", "/v1/tables/t/expire", {"retain_last": 1})
        expire_ms = (time.monotonic() - t) * 1000
        assert r.status == 200, r
        after = measure()
        print(f"{a.rows} rows, {a.commits} commits of 2 changes (loaded in {load_s:.1f} s); "
              f"expire: {expire_ms:.0f} ms, {r.json()}")
        print(f"{'':8} {'snapshots':>9} {'files':>7} {'dv rows':>7} {'blobs':>7} {'plan ms':>8} "
              f"{'scan ms':>8} {'delete ms':>9}")
        for name, m in (("before", before), ("after", after)):
            (sn, fi, dv), bl, pl, sc, de = m
            print(f"{name:8} {sn:9d} {fi:7d} {dv:7d} {bl:7d} {pl:8.1f} {sc:8.1f} {de:9.1f}")


if __name__ == "__main__":
    main()
