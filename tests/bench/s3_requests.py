"""s3_requests.py - what strike asks of an S3 store, counted on moto_server's
request log: requests per commit, per scan of a table, and the time per
commit on S3 (moto on loopback) against a local directory. Numbers for the
record, not a test (moto is no performance reference).

Run with the pg and s3 fixtures up (ctest -R 's3_start|pg_start' leaves them
up only while a test needs them: run it next to a ctest of test_s3, or start
them with tests/lib/pgfixture.sh and tests/lib/s3fixture.sh) and the
environment ctest gives test_s3 (STRIKE_TEST_S3, STRIKE_TEST_PG_HOST,
STRIKE_BIN_DIR, AWS_*): python3 tests/bench/s3_requests.py
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness as h  # noqa: E402

COMMITS, ROWS = 50, 200
TABLE = {"name": "kv", "columns": [{"name": "k", "type": "long", "required": True},
                                   {"name": "v", "type": "string"},
                                   {"name": "n", "type": "double"}], "primary_key": ["k"]}


def moto_lines(prefix):
    """The requests moto logged for objects under the prefix (other tests may share moto)."""
    with open(os.path.join(os.environ["STRIKE_TEST_S3"], "moto.log")) as f:
        return [ln for ln in f if prefix in ln]


def run(on_s3):
    cat = h.create_db("strike_s3_requests")
    if on_s3:
        s = h.Striked(catalog=cat, extra_args=["--gc-interval", "0", "--compact-interval", "0"])
    else:
        d = h.tmpdir("strike-s3req-")
        s = h.Striked(data_dir=os.path.join(d, "data"), catalog=cat,
                      extra_args=["--gc-interval", "0", "--compact-interval", "0"])
    try:
        assert s.req("POST", "/v1/tables", TABLE).status == 201
        prefix = "/" + s.data_dir[len("s3://"):] + "/" if on_s3 else "(local)"
        before = len(moto_lines(prefix))
        lat = []
        for c in range(COMMITS):
            rows = [{"op": "upsert", "row": {"k": c * ROWS + i, "v": "x" * 20, "n": i / 3}}
                    for i in range(ROWS)]
            # every other commit also deletes 5 rows of earlier files (DVs)
            if c % 2 == 1:
                rows += [{"op": "delete", "key": {"k": (c - 1) * ROWS + i}} for i in range(5)]
            t0 = time.monotonic()
            r = s.req("POST", "/v1/tables/kv/changes", {"changes": rows})
            lat.append(time.monotonic() - t0)
            assert r.status == 200, r
        mid = len(moto_lines(prefix))
        t0 = time.monotonic()
        r = s.req("POST", "/v1/tables/kv/scan", {})
        scan_s = time.monotonic() - t0
        nrows = len(r.body.splitlines())
        after = len(moto_lines(prefix))
        files = len(json.loads(s.req("POST", "/v1/tables/kv/plan", {}).body)["files"])
        lat.sort()
        return {"p50_ms": round(lat[len(lat) // 2] * 1000, 1),
                "req_per_commit": round((mid - before) / COMMITS, 2) if on_s3 else None,
                "scan_rows": nrows, "scan_rows_per_s": int(nrows / scan_s), "files": files,
                "req_per_scan": (after - mid) if on_s3 else None}
    finally:
        s.close()


if __name__ == "__main__":
    h.require_env()
    print("local", json.dumps(run(False)))
    print("s3   ", json.dumps(run(True)))
