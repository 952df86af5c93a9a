#!/usr/bin/env bash
# deb_test.sh -- makes the Debian package from a build without sanitizers
# (scripts/package_deb.sh PACKAGE_BUILD_DIR: a no-op rebuild when
# scripts/test.sh has built it already), checks that dpkg-shlibdeps computed
# its Depends and that they name no sanitizer runtime, unpacks it into a
# scratch root (dpkg -x) and runs `netc --version` and `netc check` from
# there. Exits 77 (reported as skipped by CTest) only when dpkg-dev or file,
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

rm -rf "$work"
mkdir -p "$work"
dpkg -x "$deb" "$work/root"
"$work/root/usr/bin/netc" --version
"$work/root/usr/bin/netc" check "$source/examples/mnist.net"
echo "deb_test: passed"
