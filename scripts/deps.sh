#!/usr/bin/env bash
# deps.sh - install the Debian packages strike needs that are missing.
#
#   scripts/deps.sh          build, test and benchmark dependencies
#   (an argument, such as the older `bench`, changes nothing)
#
# Everything `make test` executes comes from here or from the base image:
# `make test` runs the bench harness once (ctest bench_quick), which drives
# wrk and nginx, so they are in the default set. The npm peers (DuckDB, pg,
# roaring) come from tests/peers/package.json (scripts/test-peers.sh).
#
# Idempotent: when everything is installed it only runs dpkg-query. Runs
# `apt-get update` once, and only when something is missing. Works as root,
# uses sudo otherwise.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config clang libclang-rt-14-dev clang-format-14
  libmicrohttpd-dev libgnutls28-dev openssl libgrpc-dev protobuf-c-compiler libprotobuf-c-dev protobuf-compiler
  libroaring-dev libpq-dev libzstd-dev libsnappy-dev libjansson-dev libcmocka-dev zlib1g-dev libcurl4-openssl-dev
  postgresql-15 postgresql-client-15
  python3 python3-grpcio python3-protobuf curl ca-certificates util-linux procps
  diffutils findutils wrk nginx-light chromium linux-perf
)
# Node.js runs the DuckDB peer in tests; the machine may already have its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

# moto_server, the S3-compatible server the object-storage tests start, with
# the machine's python3 (preinstalled with it on these machines; else pip).
install_moto() {
  if ! python3 -c 'import moto.server' >/dev/null 2>&1; then
    echo "deps: installing moto[server]==5.2.1 for $(command -v python3)"
    python3 -m pip install --quiet 'moto[server]==5.2.1'
  fi
}
[ ${#missing[@]} -eq 0 ] && { install_moto; exit 0; }

sudo=
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep the Debian postgresql service from starting a cluster of its own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_moto
echo "deps: done"
