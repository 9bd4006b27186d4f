#!/usr/bin/env bash
# http_dv_bench.sh - DV fetch over HTTP: striked vs nginx serving the same bytes.
#
#   tests/bench/http_dv_bench.sh BUILD_DIR [RUNS] [DURATION] [CONNECTIONS]
#   (default 3 10s 64; BUILD_DIR should be a Release build; needs wrk and nginx)
#
# Starts a throw-away PostgreSQL (tests/lib/pgfixture.sh) and striked from
# BUILD_DIR/bin, creates a table whose first file has a ~2 KiB deletion
# vector, then loads GET /v1/tables/t/files/1/dv?snapshot=S with
#   wrk -t2 -cCONNECTIONS -dDURATION --latency
# and does the same against nginx (the config of the project's nginx baseline,
# written below: sendfile, access_log off, 2 workers) serving those exact
# bytes as a static file. Runs alternate between the two. Prints req/s, p50
# and p99 per run and the medians. Every server started here is stopped by
# pid on exit. Client and servers share this machine's cores.
set -euo pipefail
BUILD=$(cd "${1:?usage: http_dv_bench.sh BUILD_DIR [RUNS] [DURATION] [CONNECTIONS]}" && pwd)
RUNS=${2:-3}
DUR=${3:-10s}
CONNS=${4:-64}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/strike-dvbench-XXXXXX)
chmod 755 "$WORK"
PG=$WORK/pg
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
GPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
STRIKED_PID= NGINX_PID=

cleanup() {
  [ -n "$STRIKED_PID" ] && kill -TERM "$STRIKED_PID" 2>/dev/null && wait "$STRIKED_PID" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && kill -TERM "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null || true
  "$SRC/tests/lib/pgfixture.sh" stop "$PG" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$SRC/tests/lib/pgfixture.sh" start "$PG" >/dev/null
PSQL=$(ls /usr/lib/postgresql/*/bin/psql | head -1)
"$PSQL" -h "$PG" -U postgres -qc "CREATE DATABASE bench" >/dev/null
"$BUILD/bin/striked" --data "$WORK/data" --http "127.0.0.1:$PORT" --grpc "127.0.0.1:$GPORT" \
  --catalog "postgresql://postgres@/bench?host=$PG" --log-level warn 2>"$WORK/striked.log" &
STRIKED_PID=$!
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done

# A table with 10,000 rows, 1,000 of them deleted: a DV of about 2 KiB.
python3 - "$PORT" <<'EOF'
import json, sys, urllib.request
port = sys.argv[1]
def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read() or b"{}")
post("/v1/tables", {"name": "t", "columns": [{"name": "id", "type": "long", "required": True}],
                    "primary_key": ["id"]})
post("/v1/tables/t/changes", {"changes": [{"op": "upsert", "row": {"id": i}} for i in range(10000)]})
post("/v1/tables/t/changes", {"changes": [{"op": "delete", "key": {"id": i}} for i in range(3, 10000, 10)]})
EOF
URL=$(curl -s -X POST -H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$PORT/v1/tables/t/plan" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["dv"]["url"])')
URL=http://127.0.0.1:$PORT$URL
mkdir -p "$WORK/www" "$WORK/ngx"
curl -fs -o "$WORK/www/dv.bin" "$URL"
curl -fs -o /dev/null "$URL" # warm: the second request is answered from the cache

cat >"$WORK/ngx/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $WORK/ngx/nginx.pid;
error_log $WORK/ngx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 10000000;
  client_body_temp_path $WORK/ngx/body;
  proxy_temp_path $WORK/ngx/proxy;
  fastcgi_temp_path $WORK/ngx/fastcgi;
  uwsgi_temp_path $WORK/ngx/uwsgi;
  scgi_temp_path $WORK/ngx/scgi;
  default_type application/octet-stream;
  server { listen 127.0.0.1:$NPORT; root $WORK/www; }
}
EOF
nginx -c "$WORK/ngx/nginx.conf" -p "$WORK/ngx" &
NGINX_PID=$!
NURL=http://127.0.0.1:$NPORT/dv.bin
for _ in $(seq 50); do curl -fs -o /dev/null "$NURL" && break; sleep 0.1; done
cmp <(curl -fs "$URL") <(curl -fs "$NURL")

echo "DV fetch, $(stat -c %s "$WORK/www/dv.bin") bytes; wrk -t2 -c$CONNS -d$DUR; $(nproc) cores; $(nginx -v 2>&1)"
echo "strike: $URL"
echo "nginx:  $NURL"
run() { # name url -> "rps p50 p99" (ms)
  wrk -t2 -c"$CONNS" -d"$DUR" --latency "$2" >"$WORK/wrk.txt"
  python3 - "$WORK/wrk.txt" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
def ms(s):
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if s.endswith(unit):
            return float(s[:-len(unit)]) * f
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
p50 = ms(re.search(r"^\s+50%\s+(\S+)", t, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
err = re.search(r"Socket errors: (.*)", t)
print(f"{rps:.0f} {p50:.3f} {p99:.3f} {bad.group(1) if bad else 0} {'errors ' + err.group(1) if err else ''}")
EOF
}
: >"$WORK/results.txt"
for i in $(seq "$RUNS"); do
  for who in strike nginx; do
    u=$URL; [ "$who" = nginx ] && u=$NURL
    read -r rps p50 p99 non2xx rest < <(run "$who" "$u")
    printf "run %d %-6s %9s req/s  p50 %7s ms  p99 %7s ms  non-2xx %s %s\n" "$i" "$who" "$rps" "$p50" "$p99" "$non2xx" "$rest"
    echo "$who $rps $p50 $p99" >>"$WORK/results.txt"
  done
done
python3 - "$WORK/results.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for who in ("strike", "nginx"):
    r = [x for x in rows if x[0] == who]
    med[who] = [statistics.median(float(x[i]) for x in r) for i in (1, 2, 3)]
    print(f"median {who:6s} {med[who][0]:9.0f} req/s  p50 {med[who][1]:.3f} ms  p99 {med[who][2]:.3f} ms")
print(f"strike/nginx: {med['strike'][0] / med['nginx'][0]:.2f}x req/s, p99 {med['strike'][2] / med['nginx'][2]:.2f}x")
EOF
m=$(curl -s "http://127.0.0.1:$PORT/metrics" | grep strike_http_dv_requests_total | tr '\n' ' ')
echo "striked: $m"
