#!/usr/bin/env bash
# run.sh - `make bench`: every performance comparison of strike next to its
# peer, in one run, as one markdown table (issue 8).
#
#   tests/bench/run.sh BUILD_DIR [--quick]
#
# BUILD_DIR: a build with striked, bench_engine, bench_keyed, bench_dv, bench_parquet and
# bench_grpc_dv, grpc_dv_peer, and the DuckDB peer in BUILD_DIR/peers (scripts/test-peers.sh).
# `make bench` uses a Release build; `make test` runs --quick once on its
# ASan build only to prove that the harness works (ctest bench_quick).
#
# What it does, in order:
#   1. installs the npm peers of tests/peers/package.json (DuckDB, pg, roaring)
#      into BUILD_DIR/peers (scripts/test-peers.sh: npm ci, skipped while the
#      lock file is unchanged);
#   2. starts a throw-away durable PostgreSQL 15 (tests/lib/pgfixture.sh with
#      PGFIXTURE_DURABLE=1: the PostgreSQL baseline's durable settings) that
#      holds strike's catalog (database `strike`) and the PostgreSQL peer's
#      table (database `peer`), and striked on that catalog;
#   3. runs tests/bench/bench.py: data from tests/peers/lib/gen.mjs (cached
#      in BUILD_DIR/bench/data), each measure with strike and its peer in
#      alternation, the table on stdout, the raw runs as JSON in BUILD_DIR/bench/
#      (run-<time>.json, latest.json; the table and notes in latest.md), each
#      row next to its ratio in the previous run of the same size (column
#      "previous", from latest.json or history.json: tests/bench/bench_history.py).
# --quick: tiny sizes and 2 rounds. STRIKE_BENCH_ONLY=m3,m8 runs some
# measures only; STRIKE_BENCH_LOG_LEVEL=debug logs every commit's timings
# (striked's log is kept as BUILD_DIR/bench/striked.log, the measures' own
# striked processes' as aux-striked.log, PostgreSQL's as
# BUILD_DIR/bench/postgres.log; PGFIXTURE_CONF adds postgresql.conf lines, e.g.
# 'log_min_duration_statement = 0'); STRIKE_BENCH_STRIKED_ARGS adds options
# to the main striked (e.g. "--dv-inline-max 0": every DV in a Puffin file). Every server started here (PostgreSQL,
# striked, the fresh striked of measure 8 by its pid file; nginx inside
# http_dv_bench.sh) is stopped by pid on exit, also on error or Ctrl-C.
# The main striked runs with --compact-interval 0 (no background maintenance under the
# measures); the maintenance measures (i14a-c) and the delete by filter at scale (i13:
# 50M rows loaded, 20M deleted; STRIKE_BENCH_ONLY=e13 runs it alone, without the
# tables the other measures load) start striked processes of their own.
# Nothing is asserted about speed.
set -euo pipefail
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [--quick]}" && pwd)
QUICK=
case "${2:-}" in
  --quick) QUICK=--quick ;;
  "") ;;
  *) echo "usage: run.sh BUILD_DIR [--quick]" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
OUT=$BUILD/bench
PSQL=$(ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | head -1)
mkdir -p "$OUT"

for b in striked bench_engine bench_keyed; do
  [ -x "$BUILD/bin/$b" ] || { echo "run.sh: $BUILD/bin/$b is missing (build first)" >&2; exit 1; }
done
for t in node npm curl wrk nginx; do
  command -v "$t" >/dev/null || { echo "run.sh: $t is missing (scripts/deps.sh)" >&2; exit 1; }
done

# 1. the npm peers (tests/peers/package.json) in BUILD_DIR/peers
"$SRC/scripts/test-peers.sh" "$BUILD" >&2

# 2. PostgreSQL and striked, always stopped by pid
WORK=$(mktemp -d /tmp/strike-bench-XXXXXX)
chmod 755 "$WORK"
PG=$WORK/pg
STRIKED_PID=
PG_STARTED=
stop_pid() { # TERM, up to 30 s, then KILL
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$STRIKED_PID" ]; then
    stop_pid "$STRIKED_PID"
    wait "$STRIKED_PID" 2>/dev/null || true
  fi
  # a second striked that bench.py starts for measure 8 (one at a time) records its pid here
  if [ -f "$WORK/aux-striked.pid" ]; then
    stop_pid "$(cat "$WORK/aux-striked.pid")"
  fi
  if [ -n "$PG_STARTED" ]; then
    cp "$PG/server.log" "$OUT/postgres.log" 2>/dev/null || true
    "$SRC/tests/lib/pgfixture.sh" stop "$PG" >/dev/null 2>&1 || true
  fi
  if [ $rc -ne 0 ] && [ -f "$WORK/striked.log" ]; then
    echo "run.sh: striked's log (last lines):" >&2
    tail -n 20 "$WORK/striked.log" >&2 || true
  fi
  [ -f "$WORK/striked.log" ] && cp "$WORK/striked.log" "$OUT/striked.log" 2>/dev/null || true
  [ -f "$WORK/aux-striked.log" ] && cp "$WORK/aux-striked.log" "$OUT/aux-striked.log" 2>/dev/null || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PG_STARTED=1
PGFIXTURE_DURABLE=1 "$SRC/tests/lib/pgfixture.sh" start "$PG" >&2
for db in strike peer; do "$PSQL" -h "$PG" -U postgres -qc "CREATE DATABASE $db"; done

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HPORT=$(free_port)
GPORT=$(free_port)
"$BUILD/bin/striked" --catalog "postgresql://postgres@/strike?host=$PG" --data "$WORK/data" \
  --http "127.0.0.1:$HPORT" --grpc "127.0.0.1:$GPORT" --max-body 1G --compact-interval 0 --log-level "${STRIKE_BENCH_LOG_LEVEL:-warn}" \
  ${STRIKE_BENCH_STRIKED_ARGS:-} >"$WORK/striked.log" 2>&1 &
STRIKED_PID=$!
ready=
for _ in $(seq 600); do
  if curl -fs -o /dev/null "http://127.0.0.1:$HPORT/readyz"; then ready=1; break; fi
  kill -0 "$STRIKED_PID" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ready" ] || { echo "run.sh: striked did not become ready" >&2; exit 1; }
echo "run.sh: PostgreSQL on $PG, striked pid $STRIKED_PID on 127.0.0.1:$HPORT" >&2

# 3. the measures
/usr/bin/python3 "$HERE/bench.py" --build "$BUILD" --out "$OUT" --work "$WORK" --pg-host "$PG" \
  --http-port "$HPORT" --striked-pid "$STRIKED_PID" $QUICK ${STRIKE_BENCH_ONLY:+--only "$STRIKE_BENCH_ONLY"}
