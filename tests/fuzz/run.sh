#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS [RUNS] - `make fuzz`: every fuzz target, one at a
# time, for SECONDS each, or with RUNS until it has made that many executions
# (SECONDS being then the cap: the slow targets get the time they need);
# prints each target's executions, edges, corpus size and seconds, then
# restores the short per-target run that `make test` uses.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR SECONDS}
secs=${2:-60}
runs=${3:-0}
cmake -S "$(dirname "$0")/../.." -B "$build" -DSTRIKE_FUZZ_SECONDS="$secs" \
  -DSTRIKE_FUZZ_RUNS="$runs" >/dev/null
status=0
(cd "$build" && ctest -L fuzz --output-on-failure -j1 --timeout $((secs + 120))) || status=$?
echo "== per target (executions, edges covered, corpus, seconds):"
cat "$build"/fuzz-corpus/*.log 2>/dev/null | grep '^fuzz ' || true
cmake -S "$(dirname "$0")/../.." -B "$build" -DSTRIKE_FUZZ_SECONDS=4 -DSTRIKE_FUZZ_RUNS=0 >/dev/null
exit $status
