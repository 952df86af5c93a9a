#!/usr/bin/env python3
"""update_goldens.py -- regenerates the golden dump tests in tests/golden/dumps/
from the current netc (like LLVM's update_test_checks.py). Review the diff
before committing: a golden is only as good as the output it pins.

A test is one or more netc command lines, each checked line by line
(CHECK-NEXT for every line, --match-full-lines --strict-whitespace) under
its own FileCheck prefix. A command line may use lit's substitutions
%examples and %S (the dumps folder) and start in a folder of its own; one
that may fail (allow_failure) is checked as `not %netc ... 2>&1` when it does,
its error message pinned instead.

Usage: tests/golden/update_goldens.py [path/to/netc]
"""
import pathlib
import re
import subprocess
import sys
from typing import NamedTuple, Optional

import long_lines

ROOT = pathlib.Path(__file__).resolve().parents[2]
NETC = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/tools/netc/netc")
DUMPS = ROOT / "tests/golden/dumps"
REGENERATE = "regenerate with tests/golden/update_goldens.py"

# What the generator runs for lit's substitutions (lit.cfg.py).
SUBSTITUTIONS = {"%examples": str(ROOT / "examples"), "%S": str(DUMPS)}


class Run(NamedTuple):
    args: list                   # netc's arguments, with lit's substitutions
    prefix: str = "CHECK"        # FileCheck's --check-prefix
    cwd: Optional[str] = None    # where the command starts, with lit's substitutions
    allow_failure: bool = False  # a non-zero exit is the expected output: its messages are pinned
    long_lines: bool = False     # lines over long_lines.LIMIT characters are pinned by a digest


class Test(NamedTuple):
    name: str
    title: str          # the first line's comment
    runs: list
    requires: Optional[str] = None


def compile_test(name, example, emit, flags):
    """A `netc compile --emit` dump of one example (an LLVM module's constant
    tables, one line each, pinned by their digests: long_lines.py)."""
    return Test(name, f"{emit.upper()} dump of examples/{example}; {REGENERATE}",
                [Run(["compile", f"--emit={emit}", *flags, f"%examples/{example}"], long_lines=emit == "llvm")],
                "netc-llvm" if emit == "llvm" else None)


# (test name, example, emit mode, extra flags)
COMPILE_CASES = [(f"ir-{p.stem}", p.name, "ir", ["--input-size", "100"] if p.stem == "hello-world" else [])
                 for p in sorted((ROOT / "examples").glob("*.net"))]
COMPILE_CASES += [("ast-mnist", "mnist.net", "ast", []), ("tokens-mnist", "mnist.net", "tokens", []),
                  ("ast-siamese", "siamese.net", "ast", []),
                  ("ast-multi-input-filtered", "multi-input-filtered.net", "ast", [])]
# Plans: the seed network (convolution kinds, dense, softmax loss), shared
# weights, several inputs with `where` bundles, pooling and normalization.
COMPILE_CASES += [("plan-mnist", "mnist.net", "plan", []), ("plan-siamese", "siamese.net", "plan", []),
                  ("plan-multi-input-filtered", "multi-input-filtered.net", "plan", []),
                  ("plan-pool-norm", "pool-norm.net", "plan", []),
                  ("inference-plan-mnist", "mnist.net", "inference-plan", [])]
# The plan of a rank of a data-parallel job: an all-reduce after the op that
# finishes each of lenet5's (small) buckets, a wait before the update; local
# SGD's averaging after the update.
COMPILE_CASES += [("plan-lenet5-allreduce", "lenet5.net", "plan", ["--data-parallel", "allreduce", "--bucket-mb", "0.05"]),
                  ("plan-mnist-local-sgd", "mnist.net", "plan", ["--data-parallel", "local-sgd"])]
# Each stage of the seed network cut into 2 pipeline stages by the partition
# pass (as netc show --partition 2): the first sends Conv2's values and
# receives their gradient, the second holds the loss.
COMPILE_CASES += [(f"plan-mnist-stage{s}-of-2", "mnist.net", "plan", ["--partition", "2", "--stage", str(s)])
                  for s in (0, 1)]
# Each rank's part of wide-mlp's Wide split over 2 (netc train --split
# Wide:2): its rows of Wide's weights, its nodes exchanged and put together,
# the gradient's slice, and Features' gradient summed part after part.
COMPILE_CASES += [(f"plan-wide-mlp-part{p}-of-2", "wide-mlp.net", "plan", ["--split", "Wide:2", "--part", str(p)])
                  for p in (0, 1)]

# The IR of netc build (weights as zeros): the seed network, and a network
# with pooling and response normalization.
COMPILE_CASES += [("llvm-mnist", "mnist.net", "llvm", []), ("llvm-pool-norm", "pool-norm.net", "llvm", [])]

CASES = [compile_test(*case) for case in COMPILE_CASES]

# The cost model's outputs (issue 16) on the frozen cost table: netc prints a
# table's name as given, so these runs start in the folder that holds it.
INPUTS = "%S/../cli/Inputs"
TABLE = ["--cost-model", "cost-table.json"]
MNIST_SLICE = "%examples/../tests/fixtures/mnist-slice"


def input_size(example):
    return ["--input-size", "100"] if example == "hello-world.net" else []


# Every example cut into 2, 3 and 4 pipeline stages (a network of fewer
# layers than stages: the error).
CASES += [Test(f"partition-{p.stem}",
               f"netc show --partition K of examples/{p.name} for K = 2, 3, 4 on the frozen cost table; {REGENERATE}",
               [Run(["show", f"%examples/{p.name}", "--partition", str(k), *TABLE, *input_size(p.name)],
                    prefix=f"K{k}", cwd=INPUTS, allow_failure=True) for k in (2, 3, 4)])
          for p in sorted((ROOT / "examples").glob("*.net"))]
# A partition as Graphviz clusters (shared weights across stages) and as JSON
# (several inputs, a layer that reads an input across a cut).
CASES += [Test("partition-siamese-dot",
               f"netc show --partition 2 --format dot of examples/siamese.net on the frozen cost table; {REGENERATE}",
               [Run(["show", "%examples/siamese.net", "--partition", "2", "--format", "dot", *TABLE], cwd=INPUTS)]),
          Test("partition-multi-input-filtered-json",
               f"netc show --partition 3 --format json of examples/multi-input-filtered.net on the frozen cost table; {REGENERATE}",
               [Run(["show", "%examples/multi-input-filtered.net", "--partition", "3", "--format", "json", *TABLE],
                    cwd=INPUTS)])]


def estimate_test(name, example, flags, what):
    return Test(name, f"netc estimate of examples/{example}{what} on the MNIST slice and the frozen cost table; {REGENERATE}",
                [Run(["estimate", f"%examples/{example}", "--data", MNIST_SLICE, "--batch", "32", "--epochs", "3",
                      *flags, *TABLE], cwd=INPUTS)])


# Training estimates: one rank, two data-parallel ranks, two pipeline stages, JSON.
CASES += [estimate_test("estimate-mnist", "mnist.net", ["--threads", "2"], ""),
          estimate_test("estimate-lenet5", "lenet5.net", ["--threads", "2"], ""),
          estimate_test("estimate-lenet5-json", "lenet5.net", ["--threads", "2", "--format", "json"], " as JSON"),
          estimate_test("estimate-lenet5-ranks2", "lenet5.net", ["--ranks", "2", "--threads", "1"], " on 2 ranks"),
          estimate_test("estimate-lenet5-partition2", "lenet5.net", ["--threads", "2", "--partition", "2"],
                        " in 2 pipeline stages")]


def substitute(text):
    for name, value in SUBSTITUTIONS.items():
        text = text.replace(name, value)
    return text


def check_text(line):
    """A line of output as FileCheck pattern text: {{ and [[ are FileCheck's."""
    return re.sub(r"\{\{|\[\[", lambda m: "{{" + re.escape(m.group(0)) + "}}", line)


def run_lines(test_name, run):
    """The RUN line and the CHECK lines of one command."""
    cmd = [NETC, *(substitute(a) for a in run.args)]
    cwd = substitute(run.cwd) if run.cwd else None
    result = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if run.allow_failure else subprocess.PIPE, text=True)
    failed = result.returncode != 0
    if failed and (not run.allow_failure or result.returncode < 0):
        sys.exit(f"{test_name}: {' '.join(cmd)} exited with {result.returncode}:\n{result.stderr or result.stdout}")
    if not failed and result.stderr:
        sys.exit(f"{test_name}: {' '.join(cmd)} wrote to stderr, which the test would not check:\n{result.stderr}")
    out = result.stdout
    if run.long_lines:
        out = "".join(long_lines.shorten(line) + "\n" for line in out.rstrip("\n").split("\n"))
    if not out.strip():
        sys.exit(f"{test_name}: {' '.join(cmd)} printed nothing to check")
    if str(ROOT) in out:
        sys.exit(f"{test_name}: {' '.join(cmd)} printed the checkout's path, so its golden would depend on it:\n{out}")
    run_line = ("not " if failed else "") + "%netc " + " ".join(run.args) + (" 2>&1" if failed else "")
    if run.cwd:
        run_line = f"cd {run.cwd} && {run_line}"
    if run.long_lines:
        run_line += " | %python %S/../long_lines.py"
    prefix_flag = "" if run.prefix == "CHECK" else f" --check-prefix={run.prefix}"
    lines = [f"RUN: {run_line} | FileCheck %s{prefix_flag} --match-full-lines --strict-whitespace"]
    checks = []
    for i, line in enumerate(out.rstrip("\n").split("\n")):
        directive = run.prefix if i == 0 else f"{run.prefix}-NEXT"
        checks.append(f"{directive}:{check_text(line)}" if line else f"{run.prefix}-EMPTY:")
    return lines, checks


def main():
    DUMPS.mkdir(parents=True, exist_ok=True)
    for test in CASES:
        lines = [f"# {test.title}", *([f"REQUIRES: {test.requires}"] if test.requires else [])]
        blocks = [run_lines(test.name, run) for run in test.runs]
        if len(blocks) == 1:
            lines += blocks[0][0] + blocks[0][1]
        else:  # the RUN lines first, then each prefix's checks after a blank line
            for run_line, _ in blocks:
                lines += run_line
            for _, checks in blocks:
                lines += ["", *checks]
        (DUMPS / f"{test.name}.test").write_text("\n".join(lines) + "\n")
        print("wrote", test.name)


if __name__ == "__main__":
    main()
