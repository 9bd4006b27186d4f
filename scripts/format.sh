#!/usr/bin/env bash
# format.sh - the C sources against the repo's .clang-format (clang-format 14).
#
#   scripts/format.sh           reformat in place (`make format`)
#   scripts/format.sh --check   list the files that differ, exit 1 if any (`make test`)
#
# Covers every tracked *.c and *.h in server/ storage/ clients/ tests/. The
# protobuf-c code is generated into the build tree, never tracked; the one
# tracked generated file (storage/expr/pow5_table.h, from gen_pow5.py) is left
# as its generator writes it.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac

cf=
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null 2>&1; then
    cf=$c
    break
  fi
done
[ -n "$cf" ] || { echo "format: clang-format 14 not found (scripts/deps.sh installs it)" >&2; exit 2; }
case "$("$cf" --version)" in
  *"version 14."*) ;;
  *) echo "format: $cf is not clang-format 14: $("$cf" --version)" >&2; exit 2 ;;
esac

generated=(storage/expr/pow5_table.h)
files=()
while IFS= read -r -d '' f; do
  skip=
  for g in "${generated[@]}"; do
    [ "$f" = "$g" ] && skip=1
  done
  [ -z "$skip" ] && files+=("$f")
done < <(git ls-files -z -- 'server/*.[ch]' 'storage/*.[ch]' 'clients/*.[ch]' 'tests/*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "format: no files (not a git checkout?)" >&2; exit 2; }

if [ "$mode" = fix ]; then
  "$cf" -i --style=file -- "${files[@]}"
  exit 0
fi

differ=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file -- "$f" | cmp -s - "$f"; then
    echo "$f"
    differ=$((differ + 1))
  fi
done
if [ "$differ" -gt 0 ]; then
  echo "format: $differ of ${#files[@]} files differ from .clang-format; run make format" >&2
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
