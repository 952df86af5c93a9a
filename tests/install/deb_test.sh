#!/usr/bin/env bash
# deb_test.sh -- makes the Debian packages from a build without sanitizers
# (scripts/package_deb.sh PACKAGE_BUILD_DIR: a no-op rebuild when
# scripts/test.sh has built it already), checks that dpkg-shlibdeps computed
# their Depends and that they name no sanitizer runtime, that netc does not
# depend on Open MPI and netc-mpi (the MPI plugin) does, unpacks netc alone
# into a scratch root (dpkg -x) and runs `netc --version`, `netc check` and a
# one-process `netc train` from there. A plugin's package must depend on its
# library and carry no run path into a -dev folder. Exits 77 (reported as
# skipped by CTest) only when dpkg-dev or file, which the packaging needs, are
# missing.
#
# Usage: deb_test.sh SOURCE_DIR PACKAGE_BUILD_DIR WORK_DIR
set -euo pipefail
source=$1 package_build=$2 work=$3

for tool in dpkg-shlibdeps dpkg-deb file; do
  if ! command -v "$tool" >/dev/null; then
    echo "deb_test: SKIP: $tool is not installed (scripts/setup.sh --test installs dpkg-dev and file)" >&2
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
# A plugin's package: only it depends on its library, it depends on netc's
# own version and that library, and it holds the plugin.
# plugin_package NAME DEPENDENCY PLUGIN -> sets plugin_deb (empty: not built)
plugin_package() {
  local name=$1 dependency=$2 plugin=$3 plugin_depends
  if grep -q "$dependency" <<<"$depends"; then
    echo "deb_test: netc depends on $dependency; only $name may" >&2
    exit 1
  fi
  plugin_deb=$(ls "$package_build"/"$name"_*.deb 2>/dev/null || true)
  if [[ -z $plugin_deb ]]; then
    echo "deb_test: no $name package (this build found no library for it)"
    return
  fi
  plugin_depends=$(dpkg-deb -f "$plugin_deb" Depends)
  echo "deb_test: $name Depends: $plugin_depends"
  for needed in "$dependency" "netc (= "; do
    if ! grep -q "$needed" <<<"$plugin_depends"; then
      echo "deb_test: $name's Depends lacks $needed; what the plugin links, and where from:" >&2
      local library
      library=$(find "$package_build" -name "$(sed 's/\\//g' <<<"$plugin")" -print -quit)
      ldd "$library" >&2 || true
      ldd "$library" | awk '/=> \// {print $3}' | xargs -r dpkg -S >&2 || true
      exit 1
    fi
  done
  dpkg-deb -c "$plugin_deb" | awk '{print $6}' | grep -E "netc/$plugin\$"
  # Its run path names no folder of a -dev package (e.g. /usr/lib/llvm-19/lib,
  # llvm-19-dev's): a user has only the runtime package, and dpkg-shlibdeps
  # may credit the library to the -dev package found there.
  local unpacked=$work/$name-contents runpath
  rm -rf "$unpacked" && mkdir -p "$unpacked" && dpkg -x "$plugin_deb" "$unpacked"
  runpath=$(readelf -d "$(find "$unpacked" -name "$(sed 's/\\//g' <<<"$plugin")" -print -quit)" |
    sed -n 's/.*(R\(UN\)\?PATH).*\[\(.*\)\]/\2/p')
  echo "deb_test: $name's run path: ${runpath:-none}"
  if grep -q 'llvm-[0-9]' <<<"$runpath"; then
    echo "deb_test: $name's plugin has a run path into LLVM's -dev folder: $runpath" >&2
    exit 1
  fi
}
plugin_package netc-mpi libopenmpi 'libnetc-comm-mpi\.so'
mpi_deb=$plugin_deb
plugin_package netc-llvm libllvm 'libnetc-llvm\.so'
llvm_deb=$plugin_deb

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
