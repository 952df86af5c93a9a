#!/usr/bin/env python3
"""check_estimate.py -- netc estimate against measured netc train runs: the one command behind
docs/performance.md's "Estimates against measured runs".

For each network (the seed network examples/mnist.net and LeNet-5), rank count (1 and 2) and batch
(32 and 128) it asks `netc estimate --format json` for the epoch time of the run, then trains the
same run --runs times for --epochs epochs and takes the median of every epoch's measured seconds (the
training steps of the epoch, as metrics.jsonl records them). The runs go in rounds, each round running
every configuration once, so that a burst of load hits all configurations a little rather than one
configuration's every run. The goal is every predicted epoch within
15% of the measured median; the script prints a table (and with --markdown the table for the docs)
and exits 1 when a prediction misses it, 0 otherwise. No time limit is asserted anywhere: a busy
machine makes the runs slower and the check fail, so run it on a quiet machine.

Both sides run --threads threads per rank (default 1: on this project's 2-core machines one rank
and two ranks then have the same cores per rank, and the comparison is of the model, not of core
contention; --threads 0 is netc train's default, every core shared among the ranks). --cost-model
picks the table (default: auto, netc's own choice: the built-in CPU table where it describes this
machine, else this machine's, measured once and cached).

Usage:
  python3 bench/check_estimate.py [--netc build/tools/netc/netc] [--data data/mnist] [--epochs 3]
      [--runs 3] [--nets seed,lenet5] [--ranks 1,2] [--batches 32,128] [--cost-model FILE|NAME]
      [--threads 1] [--json FILE] [--markdown]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = {"seed": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
GOAL = 15.0  # percent


def run_flags(args, batch, ranks):
    flags = ["--data", args.data, "--batch", str(batch), "--epochs", str(args.epochs),
             "--momentum", "0.9", "--cost-model", args.cost_model]
    if ranks > 1:
        flags += ["--ranks", str(ranks)]
    if args.threads:
        flags += ["--threads", str(args.threads)]
    return flags


def estimate(args, net, batch, ranks):
    cmd = [args.netc, "estimate", os.path.join(REPO, NETS[net]), *run_flags(args, batch, ranks), "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def train_once(args, net, batch, ranks):
    """The training seconds of every epoch of one run."""
    seconds = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.netc, "train", os.path.join(REPO, NETS[net]), *run_flags(args, batch, ranks),
               "--out", tmp, "--overwrite", "--progress", "none", "--quiet", "--seed", "1"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        with open(os.path.join(tmp, "metrics.jsonl")) as f:
            for line in f:
                event = json.loads(line)
                if event.get("event") == "epoch":
                    seconds.append(event["seconds"])
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--netc", default=os.path.join(REPO, "build/tools/netc/netc"))
    parser.add_argument("--data", default=os.path.join(REPO, "data/mnist"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nets", default="seed,lenet5")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--batches", default="32,128")
    parser.add_argument("--cost-model", default="auto")
    parser.add_argument("--threads", type=int, default=1, help="threads per rank (0: netc's default)")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()

    configs = [(net, int(ranks), int(batch)) for net in args.nets.split(",")
               for ranks in args.ranks.split(",") for batch in args.batches.split(",")]
    # Round r runs every configuration once before round r + 1 starts, so a
    # burst of load on a shared machine spreads over the configurations
    # instead of landing on all the runs of one.
    measured = {config: [] for config in configs}
    for round_index in range(args.runs):
        for config in configs:
            net, ranks, batch = config
            measured[config] += train_once(args, net, batch, ranks)
        print(f"round {round_index + 1} of {args.runs} done", file=sys.stderr, flush=True)
    rows = []
    for config in configs:
        net, ranks, batch = config
        e = estimate(args, net, batch, ranks)
        seconds = measured[config]
        median = statistics.median(seconds)
        error = 100 * (e["epoch_seconds"] - median) / median
        rows.append({"net": net, "ranks": ranks, "batch": batch, "threads": e["threads"],
                     "predicted_epoch_s": e["epoch_seconds"], "measured_median_s": median,
                     "measured_min_s": min(seconds), "measured_max_s": max(seconds),
                     "epochs_measured": len(seconds), "error_percent": error,
                     "within_goal": abs(error) <= GOAL})
        r = rows[-1]
        print(f"{net:7} ranks {ranks} batch {batch:4} threads {r['threads']}: predicted "
              f"{r['predicted_epoch_s']:.3f} s, measured median {median:.3f} s "
              f"({r['measured_min_s']:.3f}-{r['measured_max_s']:.3f}, {len(seconds)} epochs): "
              f"{error:+.1f}%", flush=True)
    if args.markdown:
        print("\n| network | ranks | batch | threads per rank | predicted epoch | measured median (min-max) | error |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['net']} | {r['ranks']} | {r['batch']} | {r['threads']} | {r['predicted_epoch_s']:.3f} s "
                  f"| {r['measured_median_s']:.3f} s ({r['measured_min_s']:.3f}-{r['measured_max_s']:.3f}) "
                  f"| {r['error_percent']:+.1f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    missed = [r for r in rows if not r["within_goal"]]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} predictions within {GOAL:.0f}% of the measured median")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
