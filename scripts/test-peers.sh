#!/usr/bin/env bash
# test-peers.sh BUILD_DIR - install the npm peers that tests and benches drive
# (DuckDB, pg, roaring) into BUILD_DIR/peers, from tests/peers/package.json
# and its lock file.
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
# roaring (node-pre-gyp) would first try to download a prebuilt binary from
# outside the registry; build it from its package's sources instead (make,
# g++ and python3 from build-essential and python3, Node's own headers).
(cd "$dst" && npm_config_build_from_source=true npm ci --no-audit --no-fund --loglevel=error)
