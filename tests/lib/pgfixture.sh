#!/usr/bin/env bash
# pgfixture.sh - a throw-away PostgreSQL 15 cluster for the test suite.
#
#   pgfixture.sh start DIR    initdb + start (unix socket in DIR only, port 5432)
#   pgfixture.sh stop DIR     fast shutdown, then remove DIR
#   pgfixture.sh restart DIR  fast shutdown and start again, the data kept (an empty
#                             shared_buffers: make bench-scale's cold start)
#
# PGFIXTURE_DURABLE=1 keeps PostgreSQL's durable defaults (fsync, synchronous
# commit, full-page writes) and sizes memory as the project's PostgreSQL
# baseline (pg-baseline.sh) did: benchmarks compare strike and PostgreSQL on
# the same settings, which are the ones written below. wal_compression = lz4:
# the full-page images of random updates on a big table, about 3.5x smaller
# (docs/SCALE.md), for both sides.
#
# ctest runs `start` as a FIXTURES_SETUP test and `stop` as FIXTURES_CLEANUP,
# so the cluster is stopped also when tests fail. A cluster left behind by a
# killed run is stopped by the next `start`. As root, initdb and postgres run
# as the postgres user (they refuse root); DIR is made traversable for it.
# The cluster trades durability for speed (fsync=off): it only holds tests.
# PGFIXTURE_CONF: more postgresql.conf lines, appended last (for a profile,
# e.g. PGFIXTURE_CONF='log_min_duration_statement = 0').
set -euo pipefail
cmd=${1:?usage: pgfixture.sh start|stop DIR}
dir=${2:?usage: pgfixture.sh start|stop DIR}

bindir=${STRIKE_PG_BINDIR:-}
if [ -z "$bindir" ]; then
  for v in 15 16 17 18 14; do
    if [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then bindir=/usr/lib/postgresql/$v/bin; break; fi
  done
fi
if [ -z "$bindir" ]; then
  bindir=$(dirname "$(command -v initdb || echo /nonexistent/initdb)")
fi
[ -x "$bindir/initdb" ] || { echo "pgfixture: initdb not found (install postgresql-15)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop_cluster() {
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || {
      pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -QUIT "$pid" 2>/dev/null || true
      sleep 1
    }
  fi
}

case "$cmd" in
start)
  stop_cluster
  rm -rf "$dir"
  mkdir -p "$dir"
  chmod 755 "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = 5432
max_connections = 300
CONF
  if [ "${PGFIXTURE_DURABLE:-0}" = 1 ]; then
    cat >>"$dir/data/postgresql.conf" <<CONF
shared_buffers = 2GB
max_wal_size = 8GB
work_mem = 64MB
maintenance_work_mem = 512MB
wal_compression = lz4
CONF
  else
    cat >>"$dir/data/postgresql.conf" <<CONF
shared_buffers = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  fi
  if [ -n "${PGFIXTURE_CONF:-}" ]; then printf '%s\n' "$PGFIXTURE_CONF" >>"$dir/data/postgresql.conf"; fi
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
  echo "pgfixture: PostgreSQL up, socket $dir/.s.PGSQL.5432"
  ;;
restart)
  [ -f "$dir/data/postmaster.pid" ] || { echo "pgfixture: no cluster running in $dir" >&2; exit 1; }
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 300 restart >/dev/null ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  echo "pgfixture: PostgreSQL restarted"
  ;;
stop)
  stop_cluster
  rm -rf "$dir"
  echo "pgfixture: stopped"
  ;;
*)
  echo "usage: pgfixture.sh start|stop|restart DIR" >&2
  exit 2
  ;;
esac
