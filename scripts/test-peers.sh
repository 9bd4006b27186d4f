#!/usr/bin/env bash
# test-peers.sh BUILD_DIR - install the npm peers that tests drive (DuckDB)
# into BUILD_DIR/peers, from tests/peers/package.json and its lock file.
# Skips the download when the lock file has not changed since the last install.
set -euo pipefail
build=${1:?usage: test-peers.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../tests/peers" && pwd)
dst=$build/peers
mkdir -p "$dst"
if [ -d "$dst/node_modules" ] && cmp -s "$src/package-lock.json" "$dst/package-lock.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dst/"
(cd "$dst" && npm ci --no-audit --no-fund --loglevel=error)
