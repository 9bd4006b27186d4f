#!/usr/bin/env bash
# stage.sh NAME CMD... - run one stage of `make test` and say how long it took:
#   == stage  asan build        212 s  ok
# The line goes to stderr and, when STRIKE_STAGE_LOG names a file, is appended
# there too (`make test` prints that file as its summary). Exits with CMD's code.
set -uo pipefail
name=${1:?usage: stage.sh NAME CMD...}
shift
start=$(date +%s)
"$@"
rc=$?
took=$(($(date +%s) - start))
status=ok
[ "$rc" -eq 0 ] || status="FAILED (exit $rc)"
line=$(printf '== stage  %-14s %5d s  %s' "$name" "$took" "$status")
echo "$line" >&2
if [ -n "${STRIKE_STAGE_LOG:-}" ]; then
  echo "$line" >>"$STRIKE_STAGE_LOG"
fi
exit "$rc"
