#!/usr/bin/env bash
# hidden_llvm_test.sh -- netc on a machine without libLLVM (issue "LLVM code
# generation", item 5): in a private mount namespace LLVM 19's shared library
# is covered by an empty file, so the LLVM plugin cannot be loaded. Then:
#   - netc itself needs no LLVM library (ldd);
#   - it checks and trains as always;
#   - `netc build` and `netc compile --emit=llvm` fail (exit 1) saying that
#     LLVM 19's library is missing and which package brings it, and build
#     leaves no file behind.
# Exits 77 (a CTest skip) where a mount namespace cannot be made (not root,
# or no unshare).
# Usage: hidden_llvm_test.sh NETC SOURCE_DIR WORK_DIR
set -euo pipefail
netc=$1 src=$2 work=$3
if ! command -v unshare >/dev/null || ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: cannot make a private mount namespace here (unshare -m needs root): libLLVM cannot be hidden"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$netc" train "$src/examples/mnist.net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --batch 50 --threads 1 \
  --seed 1 --out "$work/run" --quiet > /dev/null
cat > "$work/inner.sh" <<'INNER'
set -euo pipefail
netc=$1 src=$2 work=$3
for lib in /usr/lib/x86_64-linux-gnu/libLLVM.so.19.1 /usr/lib/aarch64-linux-gnu/libLLVM.so.19.1 \
           /usr/lib/llvm-19/lib/libLLVM.so.1; do
  if [[ -e $lib ]]; then mount --bind /dev/null "$(readlink -f "$lib")"; fi
done
if ldd "$netc" | grep -E 'libLLVM|not found'; then
  echo "FAIL: netc needs an LLVM library (above)"; exit 1
fi
"$netc" check "$src/examples/mnist.net"
"$netc" train "$src/examples/mnist.net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --batch 50 \
  --threads 1 --seed 1 --init xavier --out "$work/run2" --quiet > /dev/null
test -s "$work/run2/last.safetensors" || { echo "FAIL: no checkpoint"; exit 1; }
set +e
"$netc" build "$src/examples/mnist.net" --weights "$work/run/last.safetensors" -o "$work/lib" 2> "$work/build.err"
build_rc=$?
"$netc" compile "$src/examples/mnist.net" --emit=llvm > /dev/null 2> "$work/emit.err"
emit_rc=$?
set -e
for what in build emit; do
  rc=${what}_rc
  [[ ${!rc} == 1 ]] || { echo "FAIL: netc $what exited ${!rc}, not 1"; cat "$work/$what.err"; exit 1; }
  grep -q "could not be loaded: .*libLLVM.*apt install libllvm19" "$work/$what.err" ||
    { echo "FAIL: netc $what does not say what is missing:"; cat "$work/$what.err"; exit 1; }
done
test ! -e "$work/lib" || { echo "FAIL: a failed build left $work/lib"; exit 1; }
if ls -a "$work" | grep -q '^\.netc-build-'; then echo "FAIL: a failed build left its staging folder"; exit 1; fi
echo "ok: $(head -1 "$work/build.err")"
INNER
unshare -m --propagation private bash "$work/inner.sh" "$netc" "$src" "$work"
echo "hidden_llvm_test: passed"
