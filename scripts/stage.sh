#!/usr/bin/env bash
# stage.sh NAME CMD... - run one stage of `make test` and say how long it took:
#   == stage  asan build        212 s  ok
# The line goes to stderr and, when STRIKE_STAGE_LOG names a file, is appended
# there too (`make test` prints that file as its summary). When STRIKE_STAGE_NOTE
# names a file that exists once CMD is done (the tests a build tree did not
# run, and why: BUILD/fixtures-not-run.txt), its lines follow the stage line,
# indented, in both places:
#   == stage  asan ctest        553 s  ok
#      fixtures: 12 tests not run: STRIKE_TESTDATA_DIR=... does not exist (...)
# Exits with CMD's code.
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
if [ -n "${STRIKE_STAGE_NOTE:-}" ] && [ -s "$STRIKE_STAGE_NOTE" ]; then
  line+=$'\n'$(sed 's/^/   /' "$STRIKE_STAGE_NOTE")
fi
echo "$line" >&2
if [ -n "${STRIKE_STAGE_LOG:-}" ]; then
  echo "$line" >>"$STRIKE_STAGE_LOG"
fi
exit "$rc"
