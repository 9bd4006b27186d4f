#!/usr/bin/env bash
# run-one.sh TARGET CORPUS_DIR SECONDS [SEED_DIR...]
# Runs one libFuzzer target for SECONDS on a working corpus seeded from
# SEED_DIRs (files or directories). Fails on any crash, leak or UB report.
set -euo pipefail
target=$1 corpus=$2 secs=$3
shift 3
mkdir -p "$corpus"
for seed in "$@"; do
  if [ -d "$seed" ]; then
    find "$seed" -type f -size -1M -exec cp -n {} "$corpus/" \; 2>/dev/null || true
  elif [ -f "$seed" ]; then
    cp -n "$seed" "$corpus/" 2>/dev/null || true
  else
    echo "run-one.sh: seed $seed does not exist (a fixture folder moved?)" >&2
    exit 1
  fi
done
# Leaks are findings too; a crash leaves its input in the corpus dir's parent.
exec "$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$corpus/../" -print_final_stats=1 "$corpus"
