#!/usr/bin/env bash
# package_deb.sh -- builds netc without sanitizers, tests or benchmarks in
# BUILD_DIR (default build-package) and makes the Debian package there with
# `cpack -G DEB` (Depends computed by dpkg-shlibdeps): netc, and netc-mpi (the
# MPI plugin) when Open MPI was found. Prints netc's package path on the
# last line. A unity build (each library's files compiled a few at a time as
# one: 60% of the time from scratch); a second run only repackages.
#   scripts/package_deb.sh [BUILD_DIR]  &&  apt install ./build-package/netc_*.deb
# NETC_PACKAGE_BUILD_TYPE sets the CMake build type: Release for a package
# to install (the default), None (no optimisation, no debug information:
# the quickest to compile) for scripts/test.sh, which checks how the package
# is made and what it holds, not how fast it runs. Without it, an existing
# BUILD_DIR keeps its own build type, so a second run rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-package}
type=${NETC_PACKAGE_BUILD_TYPE:-}
if [[ -z $type && -f $dir/CMakeCache.txt ]]; then
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$dir/CMakeCache.txt")
fi
# With CUDA, the GPU test binary too (never packaged): scripts/gpu_check.sh
# bundles it with netc from this tree.
NETC_BUILD_TYPE=${type:-Release} scripts/build.sh "$dir" -DNETC_BUILD_TESTS=OFF -DNETC_BUILD_BENCH=OFF \
  -DNETC_BUILD_GPU_TESTS=ON -DNETC_SANITIZE= -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_UNITY_BUILD=ON >&2
rm -f "$dir"/netc_*.deb "$dir"/netc-mpi_*.deb
(cd "$dir" && cpack -G DEB >&2)
ls "$dir"/netc_*.deb
