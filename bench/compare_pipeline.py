#!/usr/bin/env python3
"""compare_pipeline.py -- pipeline stages against one process, side by side: the one command behind
docs/distributed.md's "Pipeline stages: measured".

For each network (bench/deep-mlp.net, whose two halves cost about the same, and examples/lenet5.net) it
trains, with one thread per process, on the first --samples digits of the data folder:

  netc train NET --batch B --threads 1 ...                                     one process
  netc train NET --batch B --threads 1 --partition 2 --micro-batches M ...    2 ranks, one stage each

for M = 1, 2, 4, 8, 16, --rounds times each (default 3), in rounds that go over every configuration in
turn (the one-process run first in odd rounds, last in even ones), so that drift in the load of this
shared machine hits every configuration alike. Each run trains --epochs epochs (default 2) and the last
epoch's images/s (metrics.jsonl) is its sample; the table gives medians. For each M it prints:
  - the speedup: pipeline images/s / one process's;
  - the ideal bubble (K - 1) / (M + K - 1), and the measured idle fraction 1 - speedup / K (bubble,
    transfers and imbalance together: what a stage did not spend computing);
  - netc's own estimate of the pipeline's epoch (the run's "estimate" metrics line, from the
    partition and the cost table) and the measured epoch's error against it.
The goals (printed as met / not met): >= 1.6x one process at M = 16 on the balanced network; every
measured epoch within 15% of its estimate.

With --torch, PyTorch 1.13's torch.distributed.pipeline.sync.Pipe runs the same balanced network in
two partitions on the CPU at the same M (bench/pipe_reference.py), where it can; where it cannot, the
reason is printed.

The estimates use a cost table measured here first (netc calibrate --threads-list 1 --ranks 2), unless
--cost-model names one. Needs mpirun (scripts/setup.sh --bench installs it, and python3-torch for --torch).

Usage:
  python3 bench/compare_pipeline.py [--netc build/tools/netc/netc] [--data data/mnist] [--samples 8192]
      [--batch 4096] [--micro-batches 1,2,4,8,16] [--rounds 3] [--epochs 2] [--nets deep-mlp,lenet5]
      [--torch] [--torch-steps 2] [--cost-model FILE] [--json FILE]
The batch is large because a micro-batch must stay large: each micro-batch reads every weight of its
stage again, and at a few dozen samples that traffic, not the arithmetic, sets the pace of one core.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from compare_ddp import runnable  # noqa: E402  (runnable processes now)
NETS = {"deep-mlp": "bench/deep-mlp.net", "lenet5": "examples/lenet5.net"}
BALANCED = "deep-mlp"
GOAL_SPEEDUP = 1.6
GOAL_ESTIMATE_PERCENT = 15.0
STAGES = 2


def write_subset(source, folder, count):
    """The first `count` training digits of `source` (IDX files) in `folder`."""
    os.makedirs(folder, exist_ok=True)
    for kind, per in (("images-idx3-ubyte", None), ("labels-idx1-ubyte", 1)):
        with open(os.path.join(source, f"train-{kind}"), "rb") as f:
            data = f.read()
        dims = data[3]
        shape = list(struct.unpack(f">{dims}I", data[4:4 + 4 * dims]))
        item = 1
        for d in shape[1:]:
            item *= d
        count = min(count, shape[0])
        shape[0] = count
        header = data[:4] + struct.pack(f">{dims}I", *shape)
        body = data[4 + 4 * dims:4 + 4 * dims + count * item]
        with open(os.path.join(folder, f"train-{kind}"), "wb") as f:
            f.write(header + body)
    return count


def train(args, net, data, out, extra):
    """One netc train run; returns (images/s of the last epoch, its seconds, the estimated epoch seconds)."""
    command = [args.netc, "train", os.path.join(REPO, NETS[net]), "--data", data, "--out", out, "--overwrite",
               "--epochs", str(args.epochs), "--batch", str(args.batch), "--threads", "1", "--seed", "1",
               "--init", "xavier", "--normalize", "scale:255", "--progress", "none", "-q", "--cost-model",
               args.cost_model, *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stderr[-2000:]}")
    estimate, last = None, None
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "estimate":
                estimate = record["epoch_seconds"]
            elif record.get("event") == "epoch":
                last = record
    return last["images_per_sec"], last["seconds"], estimate


def torch_pipe(args, samples, micro_batches):
    """PyTorch's Pipe on the balanced network at each M: {M: images/s} or the reason it cannot run."""
    command = [args.python, os.path.join(REPO, "bench", "pipe_reference.py"), "--batch", str(args.batch),
               "--micro-batches", ",".join(map(str, micro_batches)), "--samples", str(samples),
               "--rounds", str(args.rounds), "--steps", str(args.torch_steps), "--warmup", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).strip().splitlines()
        return None, lines[-1] if lines else f"exit {result.returncode}"
    return {int(k): v for k, v in json.loads(result.stdout.strip().splitlines()[-1]).items()}, None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--data", default=os.path.join(REPO, "data", "mnist"))
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--micro-batches", default="1,2,4,8,16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--nets", default="deep-mlp,lenet5")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--torch-steps", type=int, default=2, help="timed steps per PyTorch measurement")
    parser.add_argument("--cost-model", help="the cost table of the estimates (default: netc calibrate "
                        "--threads-list 1 --ranks 2, measured on this machine first)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if shutil.which("mpirun") is None:
        sys.exit("compare_pipeline: mpirun is not installed (scripts/setup.sh --bench installs it)")
    micro_batches = [int(m) for m in args.micro_batches.split(",")]
    nets = args.nets.split(",")
    work = tempfile.mkdtemp(prefix="netc-pipeline-bench-")
    try:
        data = os.path.join(work, "data")
        samples = write_subset(args.data, data, args.samples)
        if not args.cost_model:  # this machine's costs, one thread, and the link between 2 ranks
            args.cost_model = os.path.join(work, "table.json")
            print("netc calibrate: measuring this machine's cost table ...", flush=True)
            subprocess.run([args.netc, "calibrate", "-o", args.cost_model, "--threads-list", "1", "--ranks", "2",
                            "-q"], check=True, capture_output=True, timeout=3600)
        one = {net: [] for net in nets}
        pipe = {(net, m): [] for net in nets for m in micro_batches}
        load = []
        for round_index in range(args.rounds):
            for net in nets:
                configs = [None] + micro_batches
                if round_index % 2:
                    configs.reverse()
                for m in configs:
                    load.append(runnable())
                    out = os.path.join(work, "out")
                    if m is None:
                        one[net].append(train(args, net, data, out, []))
                    else:
                        pipe[(net, m)].append(train(args, net, data, out, ["--partition", str(STAGES),
                                                                           "--micro-batches", str(m)]))
                    print(f"round {round_index + 1}: {net} {'one process' if m is None else f'M = {m}'}: "
                          f"{(one[net] if m is None else pipe[(net, m)])[-1][0]:.1f} images/s", flush=True)
        torch_rates, torch_reason = (None, "not asked for (--torch)")
        if args.torch:
            torch_rates, torch_reason = torch_pipe(args, samples, micro_batches)
        report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "machine": platform.processor() or platform.machine(), "samples": samples, "batch": args.batch,
                  "epochs": args.epochs, "rounds": args.rounds, "runnable_median": statistics.median(
                      [x for x in load if x is not None] or [0]), "networks": {}}
        goals = []
        print(f"\n{samples} samples, --batch {args.batch}, {args.epochs} epochs (the last one timed), "
              f"1 thread per process, medians of {args.rounds} rounds; K = {STAGES}")
        for net in nets:
            base = statistics.median(r[0] for r in one[net])
            base_estimate = statistics.median(r[2] for r in one[net])
            base_seconds = statistics.median(r[1] for r in one[net])
            print(f"\n{net}: one process {base:.1f} images/s (epoch {base_seconds:.3f} s, estimate "
                  f"{base_estimate:.3f} s, error {100 * (base_estimate - base_seconds) / base_seconds:+.1f}%)")
            header = f"{'M':>3} {'images/s':>10} {'speedup':>8} {'bubble':>7} {'idle':>7} {'est. s':>8} " \
                     f"{'meas. s':>8} {'error':>7}"
            if torch_rates:
                header += f" {'Pipe img/s':>11} {'netc/Pipe':>10}"
            print(header)
            rows = []
            for m in micro_batches:
                runs = pipe[(net, m)]
                rate = statistics.median(r[0] for r in runs)
                seconds = statistics.median(r[1] for r in runs)
                estimate = statistics.median(r[2] for r in runs)
                speedup = rate / base
                bubble = (STAGES - 1) / (m + STAGES - 1)
                error = 100 * (estimate - seconds) / seconds
                line = f"{m:>3} {rate:>10.1f} {speedup:>7.2f}x {100 * bubble:>6.1f}% " \
                       f"{100 * (1 - speedup / STAGES):>6.1f}% {estimate:>8.3f} {seconds:>8.3f} {error:>+6.1f}%"
                row = {"micro_batches": m, "images_per_sec": rate, "speedup": speedup, "bubble": bubble,
                       "idle": 1 - speedup / STAGES, "estimated_epoch_seconds": estimate,
                       "measured_epoch_seconds": seconds, "estimate_error_percent": error}
                if torch_rates and net == BALANCED and m in torch_rates:
                    line += f" {torch_rates[m]:>11.1f} {rate / torch_rates[m]:>9.2f}x"
                    row["torch_pipe_images_per_sec"] = torch_rates[m]
                print(line)
                rows.append(row)
                goals.append((f"{net}, M = {m}: measured epoch within {GOAL_ESTIMATE_PERCENT:g}% of the "
                              f"estimate", abs(error) <= GOAL_ESTIMATE_PERCENT))
                if net == BALANCED and m == 16:
                    goals.append((f"{net}, M = 16: >= {GOAL_SPEEDUP}x one process", speedup >= GOAL_SPEEDUP))
            report["networks"][net] = {"one_process_images_per_sec": base, "pipeline": rows}
        print(f"\nPyTorch Pipe: {'measured' if torch_rates else torch_reason}")
        report["torch_pipe"] = torch_rates if torch_rates else {"reason": torch_reason}
        print("\ngoals:")
        for text, met in goals:
            print(f"  {'met    ' if met else 'NOT MET'} {text}")
        print(f"(runnable processes when the runs started, median: {report['runnable_median']})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
