#!/usr/bin/env bash
# main.sh -- the README's main job: installs what is missing, builds netc,
# then checks and shows the MNIST seed network (examples/mnist.net).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DNETC_BUILD_TESTS=OFF -DNETC_BUILD_BENCH=OFF
echo
echo "$ netc check examples/mnist.net"
build/tools/netc/netc check examples/mnist.net && echo "examples/mnist.net: no problems found"
echo
echo "$ netc show examples/mnist.net"
build/tools/netc/netc show examples/mnist.net
