#!/usr/bin/env bash
# deb_test.sh -- makes the Debian packages from a build without sanitizers
# (scripts/package_deb.sh PACKAGE_BUILD_DIR: a no-op rebuild when
# scripts/test.sh has built it already), checks that dpkg-shlibdeps computed
# their Depends and that they name no sanitizer runtime, that netc does not
# depend on Open MPI and netc-mpi (the MPI plugin) does, unpacks netc alone
# into a scratch root (dpkg -x) and runs `netc --version`, `netc check` and a
# one-process `netc train` from there. Exits 77 (reported as skipped by CTest) only when dpkg-dev or file,
# which the packaging needs, are missing.
#
# Usage: deb_test.sh SOURCE_DIR PACKAGE_BUILD_DIR WORK_DIR
set -euo pipefail
source=$1 package_build=$2 work=$3

for tool in dpkg-shlibdeps dpkg-deb file; do
  if ! command -v "$tool" >/dev/null; then
    echo "deb_test: SKIP: $tool is not installed (scripts/setup.sh installs dpkg-dev and file)" >&2
    exit 77
  fi
done

start=$SECONDS
deb=$("$source/scripts/package_deb.sh" "$package_build" | tail -n 1)
echo "deb_test: built $deb in $((SECONDS - start)) s"
depends=$(dpkg-deb -f "$deb" Depends)
echo "deb_test: Depends: $depends"
for needed in libc6 libstdc++6 libopenblas0 libantlr4-runtime; do
  grep -q "$needed" <<<"$depends" || { echo "deb_test: Depends lacks $needed" >&2; exit 1; }
done
if grep -Eq 'libasan|libubsan|liblsan|libtsan' <<<"$depends"; then
  echo "deb_test: Depends names a sanitizer runtime: the package was built with sanitizers" >&2
  exit 1
fi
dpkg-deb -c "$deb" | awk '{print $6}' | grep -E 'bin/netc$|libnetc\.so|netc_c\.h$|netcConfig\.cmake$|netc\.pc$'
if grep -q 'libopenmpi' <<<"$depends"; then
  echo "deb_test: netc depends on Open MPI; only netc-mpi may" >&2
  exit 1
fi
mpi_deb=$(ls "$package_build"/netc-mpi_*.deb 2>/dev/null || true)
if [[ -n $mpi_deb ]]; then
  mpi_depends=$(dpkg-deb -f "$mpi_deb" Depends)
  echo "deb_test: netc-mpi Depends: $mpi_depends"
  for needed in libopenmpi "netc (= "; do
    grep -q "$needed" <<<"$mpi_depends" || { echo "deb_test: netc-mpi's Depends lacks $needed" >&2; exit 1; }
  done
  dpkg-deb -c "$mpi_deb" | awk '{print $6}' | grep -E 'netc/libnetc-comm-mpi\.so$'
else
  echo "deb_test: no netc-mpi package (this build found no Open MPI)"
fi
if grep -q 'libllvm' <<<"$depends"; then
  echo "deb_test: netc depends on LLVM; only netc-llvm may" >&2
  exit 1
fi
llvm_deb=$(ls "$package_build"/netc-llvm_*.deb 2>/dev/null || true)
if [[ -n $llvm_deb ]]; then
  llvm_depends=$(dpkg-deb -f "$llvm_deb" Depends)
  echo "deb_test: netc-llvm Depends: $llvm_depends"
  for needed in libllvm19 "netc (= "; do
    grep -q "$needed" <<<"$llvm_depends" || { echo "deb_test: netc-llvm's Depends lacks $needed" >&2; exit 1; }
  done
  dpkg-deb -c "$llvm_deb" | awk '{print $6}' | grep -E 'netc/libnetc-llvm\.so$'
else
  echo "deb_test: no netc-llvm package (this build found no LLVM 19)"
fi

rm -rf "$work"
mkdir -p "$work"
dpkg -x "$deb" "$work/root"
"$work/root/usr/bin/netc" --version
"$work/root/usr/bin/netc" check "$source/examples/mnist.net"
# The netc package alone trains (one process: no MPI plugin needed).
"$work/root/usr/bin/netc" train "$source/examples/mnist.net" --data "$source/tests/fixtures/mnist-slice" --epochs 1 \
  --batch 50 --init xavier --threads 1 --seed 1 --progress none --out "$work/run" --overwrite | tail -n 2
# With netc-mpi unpacked next to it, the installed netc finds its plugin and trains on 2 ranks.
if [[ -n $mpi_deb ]] && command -v mpirun >/dev/null; then
  dpkg -x "$mpi_deb" "$work/root"
  "$work/root/usr/bin/netc" train "$source/examples/mnist.net" --data "$source/tests/fixtures/mnist-slice" \
    --epochs 1 --batch 25 --init xavier --threads 1 --seed 1 --progress none --out "$work/run2" --overwrite --ranks 2 |
    grep -E '^data parallel: 2 ranks'
fi
# With netc-llvm unpacked next to it, the installed netc builds a library.
if [[ -n $llvm_deb ]]; then
  dpkg -x "$llvm_deb" "$work/root"
  "$work/root/usr/bin/netc" build "$source/examples/mnist.net" --weights "$work/run/last.safetensors" -o "$work/lib" --quiet
  test -s "$work/lib/libmnist.so" || { echo "deb_test: the installed netc-llvm built no library" >&2; exit 1; }
fi
echo "deb_test: passed"
