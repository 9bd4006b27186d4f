#!/usr/bin/env bash
# http_bench.sh - the HTTP front end's benchmarks (numbers only, no assertions).
#
#   tests/bench/http_bench.sh BUILD_DIR [--quick]
#
# BUILD_DIR: a Release build (cmake -DCMAKE_BUILD_TYPE=Release) with the DuckDB
# peer installed (scripts/test-peers.sh BUILD_DIR). Runs
#   http_dv_bench.sh    DV fetch with wrk -c64, striked vs nginx on the same bytes
#   http_scan_bench.py  scan cost at 10% vs 0% deleted, and scan-to-NDJSON vs DuckDB
# --quick: shorter runs and 200k rows instead of 1M.
set -euo pipefail
BUILD=${1:?usage: http_bench.sh BUILD_DIR [--quick]}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${2:-}" = --quick ]; then
  "$HERE/http_dv_bench.sh" "$BUILD" 1 5s 64
  /usr/bin/python3 "$HERE/http_scan_bench.py" "$BUILD" --rows 200000 --runs 3
else
  "$HERE/http_dv_bench.sh" "$BUILD" 5 10s 64
  /usr/bin/python3 "$HERE/http_scan_bench.py" "$BUILD" --rows 1000000 --runs 7
fi
