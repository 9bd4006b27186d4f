#!/usr/bin/env bash
# profile.sh - where striked spends its CPU during measures of `make bench`.
#
#   tests/bench/profile.sh ROWS [BUILD_DIR] [--quick] [--top N] [--syscalls] [--report-only]
#
# ROWS: measure keys of bench.py, comma-separated (m2,m3,e7; the row numbers
# 2, 3 and i7 are accepted too). BUILD_DIR: default build/release (build it
# first: cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release && cmake
# --build build/release -j2). Runs tests/bench/run.sh once with
# STRIKE_BENCH_ONLY=ROWS and STRIKE_BENCH_PERF set, so that bench.py attaches
# `perf record` (linux-perf; tests/bench/perfrec.py) to striked for each
# measure only (not the load before it); for i7 to the striked of
# bench_grpc_dv.py during the first round's gRPC calls at an explicit
# snapshot. Then writes, for each ROW, in BUILD_DIR/bench/profile/:
#   ROW.perf.data   perf's recording (perf report -i ... to look further)
#   ROW.txt         the command, the run's table, then the top N frames by
#                   self time (perf report --stdio --no-children, default 30),
#                   the top N with their callees (--children: which of
#                   striked's paths the time is under) and the shares of
#                   striked's threads; also printed
#   ROW.folded      folded stacks of `perf script` (tests/bench/fold_stacks.py),
#                   the input of any flame graph renderer
# On-CPU samples only: time striked waits (fsync, the catalog's commit) is
# not in a profile; STRIKE_BENCH_LOG_LEVEL=debug logs every commit's timings
# (BUILD_DIR/bench/striked.log). STRIKE_BENCH_PERF_CALLGRAPH (dwarf: Release
# has no frame pointers) and STRIKE_BENCH_PERF_FREQ (default here 2999 Hz)
# tune perf record. --syscalls also runs `perf trace -s` on striked and adds
# its summary to ROW.txt: per thread, each system call's count and time (the
# waits a CPU profile does not show; it slows the system calls down a little).
# The run's table and JSON are written as by run.sh. --report-only: no run,
# the reports of the recordings already in BUILD_DIR/bench/profile (the table
# from latest.md).
set -euo pipefail
usage() { echo "usage: profile.sh ROWS [BUILD_DIR] [--quick] [--top N] [--syscalls] [--report-only]" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
ROWS=
for r in $(printf '%s' "${1:-}" | tr ',' ' '); do
  case "$r" in
    [1-9]) r=m$r ;;
    i*) r=e${r#i} ;;
  esac
  ROWS=${ROWS:+$ROWS,}$r
done
[ -n "$ROWS" ] || usage
shift
BUILD=$SRC/build/release
QUICK=
TOP=30
REPORT_ONLY=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=--quick ;;
    --syscalls) export STRIKE_BENCH_PERF_TRACE=1 ;;
    --report-only) REPORT_ONLY=1 ;;
    --top) TOP=${2:?--top N}; shift ;;
    -*) usage ;;
    *) BUILD=$1 ;;
  esac
  shift
done
command -v perf >/dev/null || { echo "profile.sh: perf is missing (scripts/deps.sh: linux-perf)" >&2; exit 1; }
BUILD=$(cd "$BUILD" && pwd)
OUT=$BUILD/bench/profile
mkdir -p "$OUT"
RUN_RC=0
if [ -n "$REPORT_ONLY" ]; then
  table=$(cat "$BUILD/bench/latest.md")
else
  for r in ${ROWS//,/ }; do rm -f "$OUT/$r".{perf.data,perf.data.log,perf.data.trace,txt,folded}; done
  export STRIKE_BENCH_PERF_FREQ=${STRIKE_BENCH_PERF_FREQ:-2999}
  # a failed measure still leaves the others' recordings: report them, then exit with run.sh's status
  table=$(STRIKE_BENCH_ONLY=$ROWS STRIKE_BENCH_PERF=$OUT "$HERE/run.sh" "$BUILD" $QUICK) || RUN_RC=$?
  [ "$RUN_RC" = 0 ] || echo "profile.sh: run.sh exited $RUN_RC; reporting what was recorded" >&2
fi

# head closes the pipes of perf report early (SIGPIPE): not an error
set +o pipefail
# the rows of perf report, without its comments and blank lines
rows() { grep -v '^#' | grep -v '^[[:space:]]*$' || true; }
for ROW in ${ROWS//,/ }; do
  data=$OUT/$ROW.perf.data
  if [ ! -s "$data" ]; then
    echo "profile.sh: no recording of $ROW ($data)" >&2
    RUN_RC=1
    continue
  fi
  report() { perf report -i "$data" --stdio -g none --percent-limit 0 "$@" 2>/dev/null; }
  samples=$(report --no-children -F sample,comm | rows | awk '{ n += $1 } END { print n + 0 }')
  {
    echo "# profile of measure $ROW: tests/bench/profile.sh $ROWS $BUILD $QUICK"
    echo "#   (STRIKE_BENCH_ONLY=$ROWS STRIKE_BENCH_PERF=$OUT tests/bench/run.sh $BUILD $QUICK)"
    sed 's/^/# /' "$data.log"
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')," \
      "build $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    freq=$(sed -n 's/.* -F \([0-9]*\) .*/\1/p' "$data.log" | head -1)
    echo "# $samples on-CPU samples of striked, $(awk -v n="$samples" -v f="${freq:-0}" \
      'BEGIN { if (f > 0) printf "%.2f s on CPU at %d Hz", n / f, f; else print "?" }')" \
      "(time waiting on fsync or the catalog is not sampled)"
    echo "#"
    echo "# the run:"
    printf '%s\n' "$table" | grep '^|' | sed 's/^/#   /'
    echo
    echo "## top $TOP frames by self time (perf report --stdio --no-children -F overhead,sample,dso,sym)"
    report --no-children -F overhead,sample,dso,sym | rows | head -n "$TOP"
    echo
    echo "## top $TOP frames with their callees (perf report --stdio --children --sort dso,sym)"
    report --children --sort dso,sym | rows | head -n "$TOP"
    echo
    echo "## by thread (perf report --stdio --no-children --sort comm)"
    report --no-children -F overhead,sample,comm | rows | head -n 15
    if [ -s "$data.trace" ]; then
      echo
      echo "## system calls of all striked's threads (perf trace -s summed; wall time inside each call,"
      echo "## blocking included: futex and poll are mostly idle threads waiting for work; $data.trace per thread)"
      awk '/^ [^ ].*\([0-9]+\), [0-9]+ events/ { th++ }
           $1 ~ /^[a-z_0-9]+$/ && NF == 8 && $2 ~ /^[0-9]+$/ {
             c[$1] += $2; e[$1] += $3; t[$1] += $4; if ($7 > m[$1]) m[$1] = $7 }
           END {
             printf "   %d threads\n   %-16s %8s %7s %11s %9s %9s\n", th, "syscall", "calls", "errors", "total ms", "avg ms", "max ms"
             for (k in c) printf "   %-16s %8d %7d %11.3f %9.3f %9.3f\n", k, c[k], e[k], t[k], t[k] / c[k], m[k]
           }' "$data.trace" | { IFS= read -r a; IFS= read -r b; printf '%s\n%s\n' "$a" "$b"; sort -k4,4 -rn; }
    fi
  } >"$OUT/$ROW.txt"
  perf script -i "$data" 2>/dev/null | /usr/bin/python3 "$HERE/fold_stacks.py" >"$OUT/$ROW.folded"
  cat "$OUT/$ROW.txt"
  echo "profile.sh: $OUT/$ROW.txt, $OUT/$ROW.folded ($(wc -l <"$OUT/$ROW.folded") stacks), $data" >&2
done
exit $RUN_RC
