#!/usr/bin/env python3
"""update_goldens.py -- regenerates the golden dump tests in tests/golden/dumps/
from the current netc (like LLVM's update_test_checks.py). Review the diff
before committing: a golden is only as good as the output it pins.

Usage: tests/golden/update_goldens.py [path/to/netc]
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
NETC = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/tools/netc/netc")
DUMPS = ROOT / "tests/golden/dumps"

# (test name, example, emit mode, extra flags)
CASES = [(f"ir-{p.stem}", p.name, "ir", ["--input-size", "100"] if p.stem == "hello-world" else [])
         for p in sorted((ROOT / "examples").glob("*.net"))]
CASES += [("ast-mnist", "mnist.net", "ast", []), ("tokens-mnist", "mnist.net", "tokens", []),
          ("ast-siamese", "siamese.net", "ast", []), ("ast-multi-input-filtered", "multi-input-filtered.net", "ast", [])]
# Plans: the seed network (convolution kinds, dense, softmax loss), shared
# weights, several inputs with `where` bundles, pooling and normalization.
CASES += [("plan-mnist", "mnist.net", "plan", []), ("plan-siamese", "siamese.net", "plan", []),
          ("plan-multi-input-filtered", "multi-input-filtered.net", "plan", []),
          ("plan-pool-norm", "pool-norm.net", "plan", []),
          ("inference-plan-mnist", "mnist.net", "inference-plan", [])]
# The plan of a rank of a data-parallel job: an all-reduce after the op that
# finishes each of lenet5's (small) buckets, a wait before the update; local
# SGD's averaging after the update.
CASES += [("plan-lenet5-allreduce", "lenet5.net", "plan", ["--data-parallel", "allreduce", "--bucket-mb", "0.05"]),
          ("plan-mnist-local-sgd", "mnist.net", "plan", ["--data-parallel", "local-sgd"])]

# The IR of netc build (weights as zeros): the seed network, and a network
# with pooling and response normalization.
CASES += [("llvm-mnist", "mnist.net", "llvm", []), ("llvm-pool-norm", "pool-norm.net", "llvm", [])]


def main():
    DUMPS.mkdir(parents=True, exist_ok=True)
    for name, example, emit, flags in CASES:
        cmd = [NETC, "compile", f"--emit={emit}", *flags, str(ROOT / "examples" / example)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        lines = [f"# {emit.upper()} dump of examples/{example}; regenerate with tests/golden/update_goldens.py",
                 *(["REQUIRES: netc-llvm"] if emit == "llvm" else []),
                 f"RUN: %netc compile --emit={emit} {' '.join(flags)} %examples/{example} | FileCheck %s --match-full-lines --strict-whitespace".replace("  ", " ")]
        for i, line in enumerate(out.rstrip("\n").split("\n")):
            prefix = "CHECK:" if i == 0 else "CHECK-NEXT:"
            lines.append(f"{prefix}{line}" if line else "CHECK-EMPTY:")
        (DUMPS / f"{name}.test").write_text("\n".join(lines) + "\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
