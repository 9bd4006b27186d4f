#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS - `make fuzz`: every fuzz target for SECONDS each,
# prints each target's executions, edges and corpus size, then restores the
# short per-target time that `make test` uses.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR SECONDS}
secs=${2:-60}
cmake -S "$(dirname "$0")/../.." -B "$build" -DSTRIKE_FUZZ_SECONDS="$secs" >/dev/null
status=0
(cd "$build" && ctest -L fuzz --output-on-failure -j1 --timeout $((secs + 120))) || status=$?
echo "== per target (executions, edges covered, corpus):"
cat "$build"/fuzz-corpus/*.log 2>/dev/null | grep '^fuzz ' || true
cmake -S "$(dirname "$0")/../.." -B "$build" -DSTRIKE_FUZZ_SECONDS=4 >/dev/null
exit $status
