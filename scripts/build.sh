#!/usr/bin/env bash
# build.sh -- configures and builds netc. Usage: scripts/build.sh [BUILD_DIR]
# [extra cmake args...]. Default: an optimised build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="${NETC_BUILD_TYPE:-Release}" "$@" >/dev/null
ninja -C "$dir"
