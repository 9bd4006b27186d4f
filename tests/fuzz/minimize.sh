#!/usr/bin/env bash
# minimize.sh BUILD_DIR [TARGET...] - after `make fuzz`: each target's working
# corpus (BUILD_DIR/fuzz-corpus/TARGET, grown from the seeds) merged into a
# fresh directory with libFuzzer's -merge=1 (the smallest set of inputs with
# the same coverage), which replaces the target's corpus in tests/fuzz/corpus.
# Seeds written by hand (any name but libFuzzer's 40 hex digits) stay.
# Targets seeded only from fixtures (Roaring, Parquet, gRPC, CDC) keep none,
# and no target keeps a copy of a fixture (a file of STRIKE_TESTDATA_DIR,
# ../shared/testdata by default): the fixtures are seeds already, read from
# there, and this repository carries no copy of them.
set -euo pipefail
build=${1:?usage: minimize.sh BUILD_DIR [TARGET...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
testdata=${STRIKE_TESTDATA_DIR:-$here/../../../shared/testdata}
# libFuzzer names a merged input by the SHA-1 of its bytes: those of the fixtures
declare -A fixture=()
if [ -d "$testdata" ]; then
  while read -r sum _; do fixture[$sum]=1; done < <(find "$testdata" -type f -exec sha1sum {} +)
fi
declare -A dir=([fuzz_auth]=auth [fuzz_filter]=filter [fuzz_jdoc]=jdoc [fuzz_row]=row
  [fuzz_http]=http [dv_delta_fuzzer]=dv_delta_fuzzer [dv_iceberg_fuzzer]=dv_iceberg_fuzzer
  [dv_paimon_fuzzer]=dv_paimon_fuzzer [dv_puffin_fuzzer]=dv_puffin_fuzzer)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${!dir[@]}")
for t in "${targets[@]}"; do
  work=$build/fuzz-corpus/$t
  [ -d "$work" ] || { echo "minimize.sh: no $work (run make fuzz first)" >&2; exit 1; }
  out=$(mktemp -d)
  find "$here/corpus/${dir[$t]}" -type f ! -regex '.*/[0-9a-f]\{40\}' -exec cp {} "$out/" \; 2>/dev/null || true
  "$build/bin/$t" -merge=1 -max_len=65536 -rss_limit_mb=2048 "$out" "$work" >"$work.merge.log" 2>&1
  rm -rf "${here:?}/corpus/${dir[$t]}"
  mkdir -p "$here/corpus/${dir[$t]}"
  for f in "$out"/*; do
    [ -n "${fixture[$(sha1sum "$f" | cut -d' ' -f1)]:-}" ] || cp "$f" "$here/corpus/${dir[$t]}/"
  done
  rm -rf "$out"
  echo "$t: $(ls "$here/corpus/${dir[$t]}" | wc -l) files in tests/fuzz/corpus/${dir[$t]}"
done
