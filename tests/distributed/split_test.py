#!/usr/bin/env python3
"""split_test.py -- a fully connected layer split over ranks end to end: `netc train --split LAYER:S`
(Megatron-style column parallelism), started by `netc train` itself, by `--ranks` or by Open MPI's mpirun,
on digits of the committed slice (tests/fixtures/mnist-slice).

Cases (--case; each a CTest test):
  equivalence   --split Wide:2 gives the same bits (weights and optimizer state, best and last
                checkpoints) as one process, with sgd (momentum), adam and adadelta; so does --split
                Wide:3; with --cut (2 stages, the split one first or last, 3 ranks) it equals one
                process accumulating the micro-batches, as pipeline stages do; 193 samples, so the last
                step is short; netc eval reads the checkpoint; the run header names each part's nodes.
  hybrid        2 data-parallel copies of a split stage (4 ranks): under --deterministic 8 the bits of
                one process with --deterministic 8; without it, the bits of 2 data-parallel ranks.
  resume        a split run resumed on one process, one process resumed split, a split run resumed as
                2 stages of which one is split, all with adam: the bits of an uninterrupted run.
  memory        a network with a very wide layer is refused on one process under --max-memory 20M and
                trains with --split under the same limit (each rank's).
  frozen        a part's rank stopped with SIGSTOP: with --comm-timeout 5 the job ends with netc's
                message naming the part, the rank and the step.
  killed        a part's rank killed with SIGKILL ends the job; rank 0's checkpoint on disk is whole.
  mismatch      ranks that disagree about --split are refused before the first step; so is a layer too
                narrow to split, naming it, before any file is written.

Needs mpirun and numpy (scripts/setup.sh --test installs them); exits 77 (a CTest SKIP, with the reason)
when mpirun is missing.

Usage: split_test.py --netc NETC --source SOURCE_DIR --work WORK_DIR --case CASE [--launcher ranks|mpirun]
"""

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import pp_test  # noqa: E402
from dp_test import Failure, Skip, SKIP, make_data, mpirun_prefix, run  # noqa: E402
from one_step_test import read_checkpoint  # noqa: E402
from pp_test import COMMON, OPTIMIZERS, header_must_say, identical  # noqa: E402

# Wide (2,048 nodes: two blocks of 1,024) is split; its input gradient is A's, which trains A.
WIDE_NET = """// A wide fully connected layer between two narrow ones.
input Pic [28, 28];
hidden A [48] tanh from Pic all;
hidden Wide [2048] sigmoid from A all;
output Digit [10] softmax from Wide all;
"""
# Too wide for one rank under --max-memory 20M: its weights and their gradients take 25.7 MB.
WIDER_NET = """// A very wide fully connected layer: 3.2 million weights.
input Pic [28, 28];
hidden Wide [4096] tanh from Pic all;
output Digit [10] softmax from Wide all;
"""


def network(args, text=WIDE_NET, name="wide.net"):
    path = os.path.join(args.work, name)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text)
    return path


def train(args, data, out, extra, epochs=2, launcher=None, ranks=None, expect_ok=True, net=None):
    """netc train of the wide network; `ranks` with `launcher` (ranks or mpirun), else as the flags say."""
    fresh = [] if "--resume" in extra else ["--overwrite"]
    command = [args.netc, "train", net or network(args), "--data", data, "--out", out, *fresh, "--epochs",
               str(epochs), *COMMON, *extra]
    if launcher == "ranks":
        command += ["--ranks", str(ranks)]
    elif launcher == "mpirun":
        command = mpirun_prefix(ranks) + command
    return run(command, expect_ok=expect_ok)


def case_equivalence(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    for optimizer, flags in OPTIMIZERS.items():
        one = os.path.join(args.work, f"one-{optimizer}")
        train(args, data, one, ["--batch", "20", *flags])
        out = os.path.join(args.work, f"split-{optimizer}")
        launcher = args.launcher if optimizer == "adam" else None  # otherwise netc starts the 2 ranks
        result = train(args, data, out, ["--batch", "20", "--split", "Wide:2", *flags], launcher=launcher, ranks=2)
        header_must_say(result, ["model parallel: 1 stage with --split's layers shared out among 2 ranks, × 1 "
                                 "data-parallel copy on 2 ranks", "stage 0 on ranks 0, 1: Pic, A, Wide, Digit",
                                 "layer 'Wide' (2,048 nodes) split: nodes 0-1,023 on part 0, 1,024-2,047 on part 1"],
                        out)
        if result.stdout.count("final: ") != 1:
            raise Failure(f"expected one summary (rank 0's), got:\n{result.stdout}")
        identical(f"{optimizer}: --split Wide:2 vs one process", one, out)
    # Wide's 2,048 nodes are two blocks: three ranks are refused, naming how many work.
    refused = train(args, data, os.path.join(args.work, "three"), ["--batch", "20", "--split", "Wide:3"],
                    expect_ok=False)
    if refused.returncode == 0 or "split it over 2 ranks" not in refused.stderr:
        raise Failure(f"--split Wide:3 of a 2-block layer: expected a refusal, got exit {refused.returncode}:\n"
                      f"{refused.stdout}{refused.stderr}")
    print(f"--split Wide:3 is refused: {refused.stderr.strip().splitlines()[-1]}")
    # With pipeline stages: a split first stage, or a split last one.
    flags = OPTIMIZERS["sgd"]
    accumulating = os.path.join(args.work, "one-accumulating")
    train(args, data, accumulating, ["--batch", "4", "--accumulate", "5", *flags])
    for cut, holder in (("Digit", "stage 0 on ranks 0, 1: Pic, A, Wide"), ("Wide", "stage 1 on ranks 1, 2: Wide, Digit")):
        out = os.path.join(args.work, f"stages-{cut}")
        result = train(args, data, out, ["--batch", "20", "--micro-batches", "5", "--cut", cut, "--split", "Wide:2",
                                         *flags], launcher=args.launcher, ranks=3)
        header_must_say(result, ["model parallel: 2 stages", "on 3 ranks", holder], out)
        identical(f"--cut {cut} --split Wide:2 (3 ranks) vs one process --batch 4 --accumulate 5", accumulating, out)
    meta, _ = read_checkpoint(os.path.join(out, "last.safetensors"))
    if '"split":["Wide:2"]' not in meta.get("pipeline", "") or meta.get("world_size") != "1":
        raise Failure(f"the checkpoint records pipeline {meta.get('pipeline')}, world_size {meta.get('world_size')}")
    evaluated = run([args.netc, "eval", network(args), "--weights", os.path.join(out, "last.safetensors"),
                     "--data", data])
    print(f"netc eval reads the split run's checkpoint: {evaluated.stdout.strip().splitlines()[0]}")


def case_hybrid(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    flags = OPTIMIZERS["adadelta"]
    one = os.path.join(args.work, "one")
    train(args, data, one, ["--batch", "20", "--deterministic", "8", *flags])
    four = os.path.join(args.work, "two-copies")
    result = train(args, data, four, ["--batch", "10", "--deterministic", "8", "--split", "Wide:2", *flags],
                   launcher=args.launcher, ranks=4)
    header_must_say(result, ["× 2 data-parallel copies on 4 ranks", "stage 0 on ranks 0, 1, 2, 3: "], "--deterministic")
    identical("--deterministic 8: 2 copies of --split Wide:2 x --batch 10 vs one process x 20", one, four)
    two = os.path.join(args.work, "two-ranks")
    train(args, data, two, ["--batch", "10", *flags], launcher="ranks", ranks=2)
    hybrid = os.path.join(args.work, "hybrid")
    train(args, data, hybrid, ["--batch", "10", "--split", "Wide:2", *flags], launcher=args.launcher, ranks=4)
    identical("2 copies of --split Wide:2 vs 2 data-parallel ranks", two, hybrid)


def case_resume(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    flags = OPTIMIZERS["adam"]
    straight = os.path.join(args.work, "straight")
    train(args, data, straight, ["--batch", "4", "--accumulate", "5", *flags])
    first = os.path.join(args.work, "split-then-one")
    refused = train(args, data, first, ["--batch", "4", "--accumulate", "5", "--split", "Wide:2", *flags],
                    epochs=1, expect_ok=False)
    if refused.returncode == 0 or "--accumulate and --split exclude each other" not in refused.stderr:
        raise Failure(f"--accumulate with --split: expected a refusal, got exit {refused.returncode}:\n"
                      f"{refused.stdout}{refused.stderr}")
    train(args, data, first, ["--batch", "20", "--micro-batches", "5", "--cut", "Digit", "--split", "Wide:2", *flags],
          epochs=1)
    train(args, data, first, ["--batch", "4", "--accumulate", "5", *flags, "--resume",
                              os.path.join(first, "last.safetensors")])
    identical("2 stages, one split, for an epoch, resumed on one process", straight, first)
    second = os.path.join(args.work, "one-then-split")
    train(args, data, second, ["--batch", "4", "--accumulate", "5", *flags], epochs=1)
    result = train(args, data, second, ["--cut", "Wide", "--split", "Wide:2", "--micro-batches", "5", *flags,
                                        "--resume", os.path.join(second, "last.safetensors")])
    header_must_say(result, ["batch 20 per pipeline", "5 micro-batches of 4 a step"], "resumed split")
    identical("one process for an epoch, resumed as 2 stages, one split", straight, second)
    # Without stages the split layer's one stage runs the whole step: the bits of one process at --batch 20.
    whole = os.path.join(args.work, "whole-batch")
    train(args, data, whole, ["--batch", "20", *flags])
    third = os.path.join(args.work, "split-then-stages")
    train(args, data, third, ["--batch", "20", "--split", "Wide:2", *flags], epochs=1)
    train(args, data, third, ["--split", "Wide:2", *flags, "--resume", os.path.join(third, "last.safetensors")])
    identical("--split Wide:2 for an epoch, resumed split", whole, third)


def case_memory(args):
    data = make_data(args, os.path.join(args.work, "data"), 64)
    net = network(args, WIDER_NET, "wider.net")
    base = [args.netc, "train", net, "--data", data, "--epochs", "1", "--batch", "8", *COMMON, "--max-memory", "20M",
            "--overwrite"]
    refused = run([*base, "--out", os.path.join(args.work, "one")], expect_ok=False)
    if refused.returncode == 0 or "(--max-memory)" not in refused.stderr:
        raise Failure(f"one process under --max-memory 20M: expected a refusal naming --max-memory, got "
                      f"{refused.returncode}:\n{refused.stdout}{refused.stderr}")
    print(f"one process: {refused.stderr.strip().splitlines()[-1]}")
    out = os.path.join(args.work, "split")
    result = run([*base, "--out", out, "--split", "Wide:2"])
    header_must_say(result, ["layer 'Wide' (4,096 nodes) split"], "--split Wide:2 under --max-memory 20M")
    _, tensors = read_checkpoint(os.path.join(out, "last.safetensors"))
    if list(tensors["Wide/Pic/weights"].shape) != [4096, 784]:
        raise Failure(f"the checkpoint's Wide/Pic/weights has shape {tensors['Wide/Pic/weights'].shape}")
    print("--split Wide:2 trains under the same --max-memory 20M; the checkpoint holds the whole layer")


def case_frozen(args):
    pp_test.frozen(args, ["rank 0 of 2 (part 0): the ", "rank 1 (part 1) did not answer", "at step ",
                          "did not complete within --comm-timeout 5 s"],
                   network(args), ("--split", "Wide:2"), "part 1's rank")


def case_killed(args):
    pp_test.killed(args, network(args), ("--split", "Wide:2"), "part 1's rank")


def case_mismatch(args):
    data = make_data(args, os.path.join(args.work, "data"), 64)
    # A layer too narrow to split: refused once the ranks read the network, naming it, before any file.
    narrow_out = os.path.join(args.work, "narrow")
    refused = train(args, data, narrow_out, ["--batch", "8", "--split", "A:2"], epochs=1, expect_ok=False)
    expected = ("wide.net: --split A:2: layer 'A': its 48 nodes are computed in one product (a dense op computes "
                "at most 1024 outputs at once, and a split gives each rank whole blocks, so that it computes what one "
                "process does): only a layer of more than 1024 nodes is split")
    if refused.returncode != 1 or expected not in refused.stderr or os.path.exists(narrow_out):
        raise Failure(f"--split of a narrow layer: expected exit 1 with '{expected}' and no output folder, got exit "
                      f"{refused.returncode}:\n{refused.stdout}{refused.stderr}")
    print(f"a narrow layer is refused: {refused.stderr.strip().splitlines()[0]}")
    out = os.path.join(args.work, "out")
    base = [network(args), "--data", data, "--out", out, "--overwrite", "--epochs", "1", *COMMON, "--batch", "8"]
    command = mpirun_prefix(1) + [args.netc, "train", *base, "--split", "Wide:2", ":", "-np", "1", args.netc,
                                  "train", *base, "--split", "A:2"]
    result = run(command, expect_ok=False)
    expected = "rank 1 of 2 differs from rank 0: its --split is A:2, rank 0's is Wide:2"
    if result.returncode == 0 or expected not in result.stderr or "epoch   1" in result.stdout:
        raise Failure(f"ranks that disagree about --split: expected a refusal before the first step saying "
                      f"'{expected}', got exit {result.returncode}:\n{result.stdout}{result.stderr}")
    print(f"ranks that disagree about the layout are refused: {expected}")


CASES = {"equivalence": case_equivalence, "hybrid": case_hybrid, "resume": case_resume, "memory": case_memory,
         "frozen": case_frozen, "killed": case_killed, "mismatch": case_mismatch}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--netc", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--launcher", default="ranks", choices=["mpirun", "ranks"])
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        if shutil.which("mpirun") is None:
            raise Skip("mpirun is not installed (Debian: openmpi-bin; scripts/setup.sh --test installs it)")
        CASES[args.case](args)
    except Skip as skip:
        print(f"SKIP: {skip}")
        return SKIP
    except Failure as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
