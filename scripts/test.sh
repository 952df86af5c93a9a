#!/usr/bin/env bash
# test.sh -- the README's test command: installs what is missing, builds
# netc with AddressSanitizer + UndefinedBehaviorSanitizer, runs the whole
# test suite (unit, golden, mutation, embedding example) with CTest, after a
# bounded libFuzzer run (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
NETC_BUILD_TYPE=RelWithDebInfo scripts/build.sh build-test -DNETC_SANITIZE=address,undefined -DNETC_BUILD_BENCH=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [[ -x scripts/fuzz.sh ]]; then
  NETC_FUZZ_RUNS=${NETC_FUZZ_RUNS:-5000} scripts/fuzz.sh
fi
cd build-test && ctest --output-on-failure -j2
