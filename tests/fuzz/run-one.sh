#!/usr/bin/env bash
# run-one.sh TARGET CORPUS_DIR SECONDS [SEED_DIR...]
# Runs one libFuzzer target for SECONDS on a working corpus seeded from
# SEED_DIRs (files or directories). Fails on any crash, leak or UB report.
# STRIKE_FUZZ_DICT: a libFuzzer dictionary. STRIKE_FUZZ_RUNS (when > 0):
# stop after that many executions, SECONDS being then only the cap. The
# run's output is kept in CORPUS_DIR.log and its last line summarizes it
# (run.sh prints them all):
#   fuzz NAME: executions N, edges E, corpus C files (B bytes), S s
set -euo pipefail
target=$1 corpus=$2 secs=$3
shift 3
mkdir -p "$corpus"
for seed in "$@"; do
  if [ -d "$seed" ]; then
    # -size -1M would mean "0 MiB rounded up": only empty files (the seeds never arrived)
    find "$seed" -type f -size -1048577c -exec cp -n {} "$corpus/" \; 2>/dev/null || true
  elif [ -f "$seed" ]; then
    cp -n "$seed" "$corpus/" 2>/dev/null || true
  else
    echo "run-one.sh: seed $seed does not exist (a fixture folder moved?)" >&2
    exit 1
  fi
done
dict=()
if [ -n "${STRIKE_FUZZ_DICT:-}" ]; then
  dict=(-dict="$STRIKE_FUZZ_DICT")
fi
if [ "${STRIKE_FUZZ_RUNS:-0}" -gt 0 ]; then
  dict+=(-runs="$STRIKE_FUZZ_RUNS")
fi
# Leaks are findings too; a crash leaves its input in the corpus dir's parent.
log="$corpus.log"
status=0
start=$SECONDS
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$corpus/../" -print_final_stats=1 "${dict[@]}" "$corpus" >"$log" 2>&1 ||
  status=$?
tail -n 40 "$log"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
files=$(find "$corpus" -type f | wc -l)
bytes=$(du -sb "$corpus" | cut -f1)
echo "fuzz $(basename "$target"): executions ${execs:-?}, edges ${edges:-?}, corpus $files files ($bytes bytes), $((SECONDS - start)) s" |
  tee -a "$log"
exit $status
