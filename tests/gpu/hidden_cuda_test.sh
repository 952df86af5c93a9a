#!/usr/bin/env bash
# hidden_cuda_test.sh -- netc starts and trains on the CPU on a machine
# without CUDA (issue "CUDA backend", item 2): in a private mount namespace
# /usr/local/cuda is covered by an empty folder, so neither the toolkit's
# libraries nor anything else of CUDA can be found; the CUDA runtime inside
# netc is static and finds no driver. Then:
#   - the binary needs no CUDA library (ldd);
#   - `netc train --device auto` trains on the CPU, and the header says why;
#   - `--device cuda` is a usage error (exit 2) that says why.
# Exits 77 (a CTest skip) where a mount namespace cannot be made (not root,
# or no unshare).
# Usage: hidden_cuda_test.sh NETC SOURCE_DIR WORK_DIR
set -euo pipefail
netc=$1 src=$2 work=$3
if ! command -v unshare >/dev/null || ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: cannot make a private mount namespace here (unshare -m needs root): CUDA cannot be hidden"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
cat > "$work/inner.sh" <<'INNER'
set -euo pipefail
netc=$1 src=$2 work=$3
if [[ -d /usr/local/cuda ]]; then mount -t tmpfs -o size=1m none /usr/local/cuda; fi
if ldd "$netc" | grep -E 'libcuda|libcudart|libcublas|libcudnn|not found'; then
  echo "FAIL: netc needs a CUDA library (above)"; exit 1
fi
"$netc" train "$src/examples/mnist.net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --batch 50 \
  --threads 1 --seed 1 --out "$work/run" --progress lines > "$work/train.out" 2> "$work/train.err"
grep -q 'thread(s) on cpu (--device auto: no usable GPU, ' "$work/train.out" "$work/train.err" ||
  { echo "FAIL: the run header does not say why it runs on the CPU:"; cat "$work/train.out" "$work/train.err"; exit 1; }
test -s "$work/run/last.safetensors" || { echo "FAIL: no checkpoint"; exit 1; }
set +e
"$netc" train "$src/examples/mnist.net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --device cuda \
  --out "$work/run2" > "$work/cuda.out" 2> "$work/cuda.err"
rc=$?
set -e
[[ $rc == 2 ]] || { echo "FAIL: --device cuda exited $rc, not 2"; cat "$work/cuda.err"; exit 1; }
grep -q -e 'no NVIDIA driver' -e 'built without CUDA' "$work/cuda.err" ||
  { echo "FAIL: --device cuda does not say why:"; cat "$work/cuda.err"; exit 1; }
echo "ok: trained on the CPU with /usr/local/cuda hidden; --device cuda said: $(head -1 "$work/cuda.err")"
INNER
exec unshare -m --propagation private bash "$work/inner.sh" "$netc" "$src" "$work"
