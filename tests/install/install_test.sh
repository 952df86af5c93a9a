#!/usr/bin/env bash
# install_test.sh -- installs this build tree into a scratch prefix
# (`cmake --install`) and uses it as another project would: the netc command
# runs from the prefix, examples/embed is configured and built on its own
# with find_package(netc) and run, and the C API test is compiled with the
# flags `pkg-config --cflags --libs netc` gives and run. Exits 77 (reported
# as skipped by CTest) only when pkg-config is missing.
#
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR CMAKE C_COMPILER CXX_COMPILER
set -euo pipefail
build=$1 source=$2 work=$3 cmake=$4 cc=$5 cxx=$6

if ! command -v pkg-config >/dev/null; then
  echo "install_test: SKIP: pkg-config is not installed (scripts/setup.sh --test installs it)" >&2
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
step() { echo "install_test: $*"; }

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(dirname "$(find "$prefix" -name 'libnetc.so' -print -quit)")
for f in bin/netc include/netc/netc.h include/netc/Types.h include/netc/Training.h include/netc/netc_c.h; do
  [[ -e $prefix/$f ]] || { echo "install_test: $prefix/$f is missing" >&2; exit 1; }
done
for f in libnetc.so cmake/netc/netcConfig.cmake cmake/netc/netcConfigVersion.cmake \
         cmake/netc/netcTargets.cmake pkgconfig/netc.pc; do
  [[ -e $libdir/$f ]] || { echo "install_test: $libdir/$f is missing" >&2; exit 1; }
done
step "libnetc.so's SONAME: $(objdump -p "$libdir/libnetc.so" | awk '/SONAME/ {print $2}')"

step "the installed netc runs"
"$prefix/bin/netc" --version
"$prefix/bin/netc" check "$source/examples/mnist.net"

step "examples/embed on its own: find_package(netc) from $prefix"
"$cmake" -S "$source/examples/embed" -B "$work/embed" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >"$work/embed-configure.log"
"$cmake" --build "$work/embed" >"$work/embed-build.log" || { cat "$work/embed-build.log"; exit 1; }
out=$("$work/embed/netc_embed_example")
echo "$out"
grep -q "network embedded: 73240 parameters" <<<"$out"

step "pkg-config --cflags --libs netc, and the C API test built with it"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs netc)
echo "pkg-config: $flags (version $(pkg-config --modversion netc))"
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c11 -Wall -Wextra -Werror "$source/tests/capi/capi_test.c" -o "$work/capi_pkgconfig" $flags \
  -Wl,-rpath,"$(pkg-config --variable=libdir netc)" -lm
"$work/capi_pkgconfig" "$source"
echo "install_test: passed"
