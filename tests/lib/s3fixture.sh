#!/usr/bin/env bash
# s3fixture.sh - a throw-away S3-compatible server (moto_server) for the tests.
#
#   s3fixture.sh start DIR   moto_server on a free loopback port, bucket
#                            "strike-test"; DIR/endpoint holds http://127.0.0.1:PORT
#   s3fixture.sh stop DIR    stop it, remove DIR
#
# ctest runs `start` as a FIXTURES_SETUP test and `stop` as FIXTURES_CLEANUP.
# Tests that run on S3 get STRIKE_TEST_S3=DIR (and dummy AWS credentials:
# moto accepts any) and read the endpoint from DIR/endpoint. moto enforces
# If-None-Match: * on PUT and on multipart completion.
# moto_server is the machine's python3's (scripts/deps.sh installs it).
set -euo pipefail
cmd=${1:?usage: s3fixture.sh start|stop DIR}
dir=${2:?usage: s3fixture.sh start|stop DIR}

stop_server() {
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
  fi
}

case "$cmd" in
start)
  stop_server
  mkdir -p "$dir"
  python3 -c 'import moto.server' || { echo "s3fixture: moto is not importable by $(command -v python3) (run scripts/deps.sh)" >&2; exit 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  setsid python3 -m moto.server -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  for _ in $(seq 100); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/moto-api/" 2>/dev/null; then break; fi
    sleep 0.1
  done
  curl -fsS -X PUT -o /dev/null "http://127.0.0.1:$port/strike-test" || { echo "s3fixture: cannot create the bucket" >&2; cat "$dir/moto.log" >&2; exit 1; }
  echo "http://127.0.0.1:$port" >"$dir/endpoint"
  ;;
stop)
  stop_server
  rm -rf "$dir"
  ;;
*)
  echo "usage: s3fixture.sh start|stop DIR" >&2; exit 2 ;;
esac
