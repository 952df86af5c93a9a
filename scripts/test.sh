#!/usr/bin/env bash
# test.sh -- the README's test command: installs what is missing, builds
# netc with AddressSanitizer + UndefinedBehaviorSanitizer, runs the whole
# test suite (unit, golden, mutation, embedding example, C API, install and
# Debian package, the GPU bundle; the GPU tests skip without a GPU) with
# CTest, after a bounded libFuzzer run (scripts/fuzz.sh), then the numeric
# tests again under generic kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
# The seconds each phase took, printed at the end (CI must stay short).
phase_start=$SECONDS
phases=()
end_phase() {
  phases+=("$(printf '%6d  %s' $((SECONDS - phase_start)) "$1")")
  phase_start=$SECONDS
}
print_phases() {
  echo "test.sh: the seconds each phase took:"
  printf '%s\n' "${phases[@]}"
}
scripts/setup.sh --test
end_phase setup
# CUDA code (where nvcc is found) for sm_90 only in every tree built here, to
# keep CI short; the release build compiles sm_80 and sm_90 (cmake/NetcCuda.cmake).
export CUDAARCHS=${CUDAARCHS:-90}
# -Og -g1 (line tables, enough for the sanitizers' stack traces): about 30%
# less compile time than -O1 (which was half of -O2 -g's), for tests that run
# about as fast.
# A unity build (each library's files compiled as one, the tests' 8 at a
# time): 40% less again. The fuzzers' tree (scripts/fuzz.sh) is one too, so
# no tree here compiles a file alone: a file missing an #include that
# another file of its library's unit brings in is not caught (a plain
# `cmake -B build` without -DCMAKE_UNITY_BUILD=ON would show it).
# The CPU kernels and optimiser loops at -O2 (NETC_KERNEL_FLAGS,
# cmake/NetcOptions.cmake): the tests that train spend most of their time there.
NETC_BUILD_TYPE=RelWithDebInfo scripts/build.sh build-test -DNETC_SANITIZE=address,undefined -DNETC_BUILD_BENCH=OFF \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG" \
  -DNETC_KERNEL_FLAGS=-O2 -DCMAKE_UNITY_BUILD=ON
end_phase "sanitizer build"
# The Debian package must come from a build without sanitizers: built here
# (libraries and the CLI only, unoptimised: about 3 CPU-minutes instead of 8),
# so that ctest's deb_package only repackages it. A failure here is reported
# again, with its reason, by that test.
NETC_PACKAGE_BUILD_TYPE=None scripts/package_deb.sh build-test/package >/dev/null ||
  echo "test.sh: scripts/package_deb.sh failed; ctest's deb_package says why" >&2
end_phase "package build"
# intercept_tls_get_addr=0: LeakSanitizer's tracking of dynamic TLS (the
# TLS of a dlopen'ed library: libLLVM in netc build, the CUDA and MPI
# plugins) misreads glibc's TLS blocks now and then and crashes at exit
# ("Tracer caught signal 11", google/sanitizers#1322); without it, pointers
# kept only in such TLS are not scanned, and netc keeps none there.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [[ -x scripts/fuzz.sh ]]; then
  NETC_FUZZ_RUNS=${NETC_FUZZ_RUNS:-5000} NETC_FUZZ_SECONDS=${NETC_FUZZ_SECONDS:-30} scripts/fuzz.sh
fi
end_phase "fuzz build and runs"
cd build-test
# The cost table of this machine that netc's estimates read where the
# built-in one describes another (docs/estimate.md): measured once into a
# cache folder of this build, for the default and the generic kernels, so
# that no test measures one as it runs, nor reads the user's ~/.cache.
export NETC_CACHE_DIR=$PWD/netc-cache
rm -rf "$NETC_CACHE_DIR"
status=0
# NETC_OTHER_TASKS=0: the tables count as measured on a quiet machine (as
# the tests see it, tests/golden/lit.cfg.py), so no test measures them again.
NETC_OTHER_TASKS=0 tools/netc/netc estimate ../examples/mnist.net --samples 1000 >/dev/null || status=$?
NETC_OTHER_TASKS=0 OPENBLAS_CORETYPE=Prescott NETC_CPU_ISA=baseline tools/netc/netc estimate \
  ../examples/mnist.net --samples 1000 >/dev/null || status=$?
end_phase "this machine's cost tables"
ctest --output-on-failure -j2 || status=$?
end_phase ctest
# The tests whose results come from float arithmetic (numeric, reference,
# AOT, and the golden tests of training, evaluation and prediction: label
# numerics) again, under OpenBLAS's generic kernels and netc's baseline ones,
# as on a CPU whose BLAS picks other kernels (an Intel machine's "Prescott"):
# what they assert must hold on any x86-64 machine (docs/training.md,
# Determinism). -C generic adds golden_numerics, which only this pass runs.
# Left out: the CUDA backend's kernels and cuDNN's semantics run on the host
# against the naive reference (DeviceParity, CudnnDescription in
# tests/numeric), which neither OpenBLAS nor netc's CPU kernels reach.
OPENBLAS_CORETYPE=Prescott NETC_CPU_ISA=baseline ctest -C generic -L numerics \
  -E '^(Networks/DeviceParity|CudnnDescription)[.]' --output-on-failure -j2 || status=$?
end_phase "ctest, generic kernels"
# The slowest tests of this run (CTest's own timings), to keep the suite short;
# sed reads all of sort's output (head would end the pipe early: SIGPIPE).
echo "test.sh: the 10 slowest tests (seconds):"
awk 'NF == 3 && $1 != "---" { printf "%9.1f  %s\n", $3, $1 }' Testing/Temporary/CTestCostData.txt | sort -gr | sed -n 1,10p
print_phases
exit $status
