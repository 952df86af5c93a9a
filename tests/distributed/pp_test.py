#!/usr/bin/env python3
"""pp_test.py -- pipeline stages end to end: `netc train --partition K` (or --cut) on K ranks, started by
`netc train` itself (one rank per stage), by `--ranks` or by Open MPI's mpirun, on digits of the
committed slice (tests/fixtures/mnist-slice).

Cases (--case; each a CTest test):
  equivalence   --partition K --micro-batches 5 --batch 20 gives the same bits (weights and optimizer
                state, best and last checkpoints) as one process with --batch 4 --accumulate 5, on
                --network mnist or lenet5, for K = 2 and 3 (the partition pass's cuts and --cut), with
                sgd (momentum), adam and adadelta, under the 1f1b and gpipe schedules; 193 samples, so
                the last step is short; netc eval reads the pipeline's checkpoint.
  deterministic --deterministic 8 on 2 pipelines of 2 stages (4 ranks, --batch 10) gives the bits of
                one process with --deterministic 8 --batch 20; so does a 4-rank job without it equal
                2 data-parallel ranks with --accumulate 5.
  resume        a run of 2 stages resumed on one process, one process resumed as 2 stages, and 2
                stages resumed as 3 (--cut) give the bits of an uninterrupted run; a resume without
                --batch keeps the global batch; --init-from as 3 stages equals it on one process.
  memory        a network with wide fully connected layers is refused on one process under
                --max-memory 24M and trains as --partition 2 under the same limit (each rank's).
  frozen        a stage's rank stopped with SIGSTOP: with --comm-timeout 5 the job ends with netc's
                message naming the stage, the rank and the step.
  killed        a stage's rank killed with SIGKILL ends the job; rank 0's checkpoint on disk is whole.
  mismatch      ranks that disagree about the cuts are refused before the first step.

Needs mpirun and numpy (scripts/setup.sh --test installs them); exits 77 (a CTest SKIP, with the reason)
when mpirun is missing.

Usage: pp_test.py --netc NETC --source SOURCE_DIR --work WORK_DIR --case CASE [options]
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import dp_test  # noqa: E402
from dp_test import Failure, Skip, SKIP, make_data, mpirun_prefix, run  # noqa: E402
from one_step_test import read_checkpoint  # noqa: E402

NETWORKS = {"mnist": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
# Every run: the same seed, Xavier initialisation, inputs scaled to [0, 1], one thread per rank.
COMMON = ["--init", "xavier", "--seed", "3", "--normalize", "scale:255", "--threads", "1", "--progress", "none"]
OPTIMIZERS = {"sgd": ["--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.05"],
              "adam": ["--optimizer", "adam", "--lr", "0.001"],
              "adadelta": ["--optimizer", "adadelta"]}
# Where the stages start for --cut, per network and stage count.
CUTS = {("mnist", 2): "Hid3", ("mnist", 3): "Conv2,Digit", ("lenet5", 2): "Full3", ("lenet5", 3): "Pool1,Full3"}


def train(args, network, data, out, extra, epochs=2, launcher=None, ranks=None, expect_ok=True):
    """netc train of `network`; `ranks` with `launcher` (ranks or mpirun), else as the flags say."""
    net = os.path.join(args.source, NETWORKS[network])
    fresh = [] if "--resume" in extra else ["--overwrite"]
    command = [args.netc, "train", net, "--data", data, "--out", out, *fresh, "--epochs", str(epochs), *COMMON,
               *extra]
    if launcher == "ranks":
        command += ["--ranks", str(ranks)]
    elif launcher == "mpirun":
        command = mpirun_prefix(ranks) + command
    return run(command, expect_ok=expect_ok)


def identical(label, out_a, out_b, names=("last.safetensors", "best.safetensors")):
    """Every tensor of the two runs' checkpoints is the same bits."""
    for name in names:
        _, a = read_checkpoint(os.path.join(out_a, name))
        _, b = read_checkpoint(os.path.join(out_b, name))
        if sorted(a) != sorted(b):
            raise Failure(f"{label}: {name} holds different tensors: {sorted(a)} / {sorted(b)}")
        for tensor in a:
            if a[tensor].tobytes() != b[tensor].tobytes():
                worst = float(abs(a[tensor].astype("float64") - b[tensor].astype("float64")).max())
                raise Failure(f"{label}: {name}: tensor {tensor} differs (max |difference| {worst:.3g})")
    print(f"{label}: the same bits in {len(a)} tensors of {', '.join(names)}")


def header_must_say(result, texts, label):
    missing = [text for text in texts if text not in result.stdout]
    if missing:
        raise Failure(f"{label}: the run header does not say {missing}:\n{result.stdout}")


def case_equivalence(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    for optimizer, flags in OPTIMIZERS.items():
        one = os.path.join(args.work, f"one-{optimizer}")
        train(args, args.network, data, one, ["--batch", "4", "--accumulate", "5", *flags])
        for stages in (2, 3):
            cut = ["--partition", str(stages)] if stages == 2 else ["--cut", CUTS[(args.network, stages)]]
            schedule = "gpipe" if optimizer == "adam" else "1f1b"
            out = os.path.join(args.work, f"pipeline-{stages}-{optimizer}")
            launcher = args.launcher if stages == 3 else None  # K = 2: netc starts a rank per stage
            result = train(args, args.network, data, out,
                           ["--batch", "20", "--micro-batches", "5", "--pipeline-schedule", schedule, *cut, *flags],
                           launcher=launcher, ranks=stages)
            header_must_say(result, [f"pipeline: {stages} stages × 1 data-parallel copy on {stages} ranks",
                                     "global batch 20 (1 × --batch 20), 5 micro-batches of 4 a step",
                                     f"schedule {schedule}", "stage 0 on rank 0: ",
                                     f"stage {stages - 1} on rank {stages - 1}: "], out)
            if result.stdout.count("final: ") != 1:
                raise Failure(f"expected one summary (rank 0's), got:\n{result.stdout}")
            identical(f"{args.network}, {optimizer}, {stages} stages ({' '.join(cut)}, {schedule}) vs one "
                      "process --batch 4 --accumulate 5", one, out)
    meta, _ = read_checkpoint(os.path.join(out, "last.safetensors"))
    if meta.get("global_batch") != "20" or '"stages":3' not in meta.get("pipeline", ""):
        raise Failure(f"the checkpoint records global_batch {meta.get('global_batch')}, pipeline "
                      f"{meta.get('pipeline')}")
    evaluated = run([args.netc, "eval", os.path.join(args.source, NETWORKS[args.network]), "--weights",
                     os.path.join(out, "last.safetensors"), "--data", data])
    print(f"netc eval reads the pipeline's checkpoint: {evaluated.stdout.strip().splitlines()[0]}")


def case_deterministic(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    flags = OPTIMIZERS["sgd"]
    one = os.path.join(args.work, "one")
    train(args, "mnist", data, one, ["--batch", "20", "--deterministic", "8", *flags])
    four = os.path.join(args.work, "two-pipelines")
    result = train(args, "mnist", data, four, ["--batch", "10", "--deterministic", "8", "--partition", "2", *flags],
                   launcher=args.launcher, ranks=4)
    header_must_say(result, ["pipeline: 2 stages × 2 data-parallel copies on 4 ranks", "stage 0 on ranks 0, 2: ",
                             "stage 1 on ranks 1, 3: "], "--deterministic")
    identical("--deterministic 8: 2 pipelines of 2 stages x --batch 10 vs one process x 20", one, four)
    # Without --deterministic: each stage's two copies all-reduce its gradients, as 2 ranks do.
    two = os.path.join(args.work, "two-ranks")
    train(args, "mnist", data, two, ["--batch", "4", "--accumulate", "5", *flags], launcher="ranks", ranks=2)
    hybrid = os.path.join(args.work, "hybrid")
    train(args, "mnist", data, hybrid, ["--batch", "20", "--micro-batches", "5", "--partition", "2", *flags],
          launcher=args.launcher, ranks=4)
    identical("2 pipelines of 2 stages vs 2 data-parallel ranks with --accumulate 5", two, hybrid)


def case_resume(args):
    data = make_data(args, os.path.join(args.work, "data"), 193)
    flags = OPTIMIZERS["adam"]
    straight = os.path.join(args.work, "straight")
    train(args, "mnist", data, straight, ["--batch", "4", "--accumulate", "5", *flags])
    # 2 stages -> one process.
    first = os.path.join(args.work, "stages-then-one")
    train(args, "mnist", data, first, ["--batch", "20", "--micro-batches", "5", "--partition", "2", *flags], epochs=1)
    train(args, "mnist", data, first, ["--batch", "4", "--accumulate", "5", *flags, "--resume",
                                       os.path.join(first, "last.safetensors")])
    identical("2 stages for an epoch, resumed on one process", straight, first)
    # One process -> 2 stages (the batch from the checkpoint's global batch).
    second = os.path.join(args.work, "one-then-stages")
    train(args, "mnist", data, second, ["--batch", "4", "--accumulate", "5", *flags], epochs=1)
    result = train(args, "mnist", data, second, ["--partition", "2", "--micro-batches", "5", *flags, "--resume",
                                                 os.path.join(second, "last.safetensors")])
    header_must_say(result, ["batch 20 per pipeline", "5 micro-batches of 4 a step"], "resumed as 2 stages")
    identical("one process for an epoch, resumed as 2 stages", straight, second)
    # 2 stages -> 3.
    third = os.path.join(args.work, "two-then-three")
    train(args, "mnist", data, third, ["--batch", "20", "--micro-batches", "5", "--partition", "2", *flags], epochs=1)
    train(args, "mnist", data, third, ["--cut", "Conv2,Digit", "--micro-batches", "5", *flags, "--resume",
                                       os.path.join(third, "last.safetensors")])
    identical("2 stages for an epoch, resumed as 3", straight, third)
    # A new run from the weights of a checkpoint (--init-from): each stage takes its own tensors.
    weights = os.path.join(straight, "last.safetensors")
    from_one = os.path.join(args.work, "init-from-one")
    train(args, "mnist", data, from_one, ["--batch", "4", "--accumulate", "5", *flags, "--init-from", weights],
          epochs=1)
    from_stages = os.path.join(args.work, "init-from-stages")
    train(args, "mnist", data, from_stages, ["--batch", "20", "--micro-batches", "5", "--cut", "Conv2,Digit", *flags,
                                             "--init-from", weights], epochs=1)
    identical("--init-from as 3 stages vs one process", from_one, from_stages)


WIDE_NET = """// Two wide fully connected layers: 28.6 MB of weights and gradients in all.
input Pic [28, 28];
hidden A [1536] sigmoid from Pic all;
hidden B [1536] sigmoid from A all;
output Digit [10] softmax from B all;
"""


def case_memory(args):
    data = make_data(args, os.path.join(args.work, "data"), 64)
    net = os.path.join(args.work, "wide.net")
    with open(net, "w") as f:
        f.write(WIDE_NET)
    base = [args.netc, "train", net, "--data", data, "--epochs", "1", "--batch", "8", *COMMON, "--max-memory", "24M",
            "--overwrite"]
    refused = run([*base, "--out", os.path.join(args.work, "one")], expect_ok=False)
    if refused.returncode == 0 or "(--max-memory)" not in refused.stderr:
        raise Failure(f"one process under --max-memory 24M: expected a refusal naming --max-memory, got "
                      f"{refused.returncode}:\n{refused.stdout}{refused.stderr}")
    print(f"one process: {refused.stderr.strip().splitlines()[-1]}")
    out = os.path.join(args.work, "two")
    result = run([*base, "--out", out, "--partition", "2"])
    header_must_say(result, ["pipeline: 2 stages"], "--partition 2 under --max-memory 24M")
    print("--partition 2 trains under the same --max-memory 24M:",
          [line for line in result.stdout.splitlines() if line.startswith("  stage")])
    _, tensors = read_checkpoint(os.path.join(out, "last.safetensors"))
    if not any(name.startswith("B/") for name in tensors):
        raise Failure(f"the checkpoint lacks layer B's tensors: {sorted(tensors)}")
    # --partition auto on 2 ranks: data parallelism would not fit, so 2 stages.
    result = run([*base, "--out", os.path.join(args.work, "auto"), "--partition", "auto", "--ranks", "2"])
    header_must_say(result, ["pipeline: 2 stages", "K = 1: over --max-memory"], "--partition auto under 24M")


def start_long_job(args, extra=(), net=None, layout=("--partition", "2")):
    """A long 2-rank job of `layout` (the seed network's 2 stages by default) once it trains."""
    data = make_data(args, os.path.join(args.work, "data"), 500)
    out = os.path.join(args.work, "out")
    net = net or os.path.join(args.source, NETWORKS["mnist"])
    command = [args.netc, "train", net, "--data", data, "--out", out, "--overwrite", "--epochs", "1000", *COMMON,
               "--batch", "4", *layout, *extra]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and job.poll() is None:
        metrics = os.path.join(out, "metrics.jsonl")
        if os.path.exists(metrics) and open(metrics).read().count("\n") >= 1:
            pids = dp_test.rank_pids(job.pid)
            if len(pids) == 2:
                return job, pids, out
        time.sleep(0.05)
    job.kill()
    out_text, err = job.communicate()
    raise Failure(f"the job ({' '.join(layout)}) did not start training:\n{out_text}{err}")


def frozen(args, needed, net=None, layout=("--partition", "2"), who="stage 1's rank"):
    """Rank 1 of a long job stopped with SIGSTOP: with --comm-timeout 5 the job ends, rank 0's message
    holding every text of `needed`."""
    job, pids, _ = start_long_job(args, ["--comm-timeout", "5"], net, layout)
    os.kill(pids[1], signal.SIGSTOP)
    code, _, err, hang = dp_test.finish(job, pids, 120)
    if hang:
        raise Failure(f"{who} was stopped with SIGSTOP: {hang} (it hangs)")
    print(f"exit {code}\n{err[-3000:]}")
    missing = [text for text in needed if text not in err]
    if code == 0 or missing:
        raise Failure(f"expected a non-zero exit and netc's message with {missing}; exit {code}:\n{err}")


def killed(args, net=None, layout=("--partition", "2"), who="stage 1's rank"):
    """Rank 1 of a long job killed with SIGKILL ends the job; rank 0's checkpoint on disk is whole."""
    job, pids, out = start_long_job(args, (), net, layout)
    os.kill(pids[1], signal.SIGKILL)
    code, _, err, hang = dp_test.finish(job, pids, 120)
    if hang:
        raise Failure(f"{who} was killed with SIGKILL: {hang} (it hangs)")
    print(f"exit {code}\n{err[-3000:]}")
    if code == 0 or "netc: error: rank 1 (" not in err or "exited on signal 9" not in err:
        raise Failure(f"expected a non-zero exit and a message that rank 1 was killed; exit {code}:\n{err}")
    last = os.path.join(out, "last.safetensors")
    run([args.netc, "eval", net or os.path.join(args.source, NETWORKS["mnist"]), "--weights", last, "--data",
         os.path.join(args.work, "data")])
    print(f"{last} is whole: netc eval reads it")


def case_frozen(args):
    frozen(args, ["rank 0 of 2 (stage 0): the ", "rank 1 (stage 1) did not answer", "at step ",
                  "did not complete within --comm-timeout 5 s"])


def case_killed(args):
    killed(args)


def case_mismatch(args):
    data = make_data(args, os.path.join(args.work, "data"), 64)
    mnist = os.path.join(args.source, NETWORKS["mnist"])
    out = os.path.join(args.work, "out")
    base = [mnist, "--data", data, "--out", out, "--overwrite", "--epochs", "1", *COMMON, "--batch", "8"]
    command = mpirun_prefix(1) + [args.netc, "train", *base, "--cut", "Hid3", ":", "-np", "1", args.netc, "train",
                                  *base, "--cut", "Conv2"]
    result = run(command, expect_ok=False)
    expected = "rank 1 of 2 differs from rank 0: its --cut is Conv2, rank 0's is Hid3"
    if result.returncode == 0 or expected not in result.stderr or "epoch   1" in result.stdout:
        raise Failure(f"ranks with other cuts: expected a refusal before the first step saying '{expected}', got "
                      f"exit {result.returncode}:\n{result.stdout}{result.stderr}")
    print(f"ranks with other cuts are refused: {expected}")


CASES = {"equivalence": case_equivalence, "deterministic": case_deterministic, "resume": case_resume,
         "memory": case_memory, "frozen": case_frozen, "killed": case_killed, "mismatch": case_mismatch}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--netc", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--network", default="mnist", choices=sorted(NETWORKS))
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
