#!/usr/bin/env python3
"""dp_accuracy.py -- the README's main job (examples/mnist.net on data/mnist, 40 epochs, batch 32,
lr 0.1, momentum 0.9, Xavier, cosine schedule, 1 thread) on 1 rank and on 2, over several seeds:
the one command behind docs/distributed.md's "Accuracy" and "Local SGD" sections.

Configurations (--configs picks some, by name):
  one            the README's command: 1 rank, --batch 32
  ranks2         the same with --ranks 2 (--batch 32 per rank: a global batch of 64)
  ranks2-b16     --ranks 2 --batch 16 (the README's global batch of 32)
  ranks2-linear  --ranks 2 --lr-scaling linear (lr 0.2 for the global batch of 64)
  local-sgd-H    --ranks 2 --sync local-sgd:H, for each H in --local-sgd (default 4,16,64)
For each it reports, over --seeds (default 1-5): the final test accuracy (mean, min, max), and the
time to reach --target test accuracy (default 97%): the training seconds of the epochs up to the first
that reaches it (metrics.jsonl's "seconds", evaluation excluded), median over the seeds that reach it.
Runs go round-robin over the configurations, one seed at a time, so drift in the machine's load hits
them alike.

Needs data/mnist (scripts/prepare_mnist.sh) and mpirun (scripts/setup.sh --mpi installs it).

Usage: python3 bench/dp_accuracy.py [--netc build/tools/netc/netc] [--seeds 1,2,3,4,5]
           [--configs one,ranks2,...] [--local-sgd 4,16,64] [--target 0.97] [--json FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_JOB = ["train", "examples/mnist.net", "--data", "data/mnist", "--epochs", "40", "--lr", "0.1",
              "--momentum", "0.9", "--init", "xavier", "--schedule", "cosine", "--threads", "1",
              "--progress", "none", "--overwrite", "--device", "cpu"]


def configurations(local_sgd):
    configs = {"one": ["--batch", "32"],
               "ranks2": ["--batch", "32", "--ranks", "2"],
               "ranks2-b16": ["--batch", "16", "--ranks", "2"],
               "ranks2-linear": ["--batch", "32", "--ranks", "2", "--lr-scaling", "linear"]}
    for h in local_sgd:
        configs[f"local-sgd-{h}"] = ["--batch", "32", "--ranks", "2", "--sync", f"local-sgd:{h}"]
    return configs


def run(netc, extra, seed, out):
    command = [netc, *README_JOB, "--seed", str(seed), "--out", out, *extra]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=1800)
    if result.returncode != 0:
        sys.exit(f"dp_accuracy: `{' '.join(command)}` exited with {result.returncode}:\n{result.stderr[-2000:]}")
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--configs", default="")
    ap.add_argument("--local-sgd", default="4,16,64")
    ap.add_argument("--target", type=float, default=0.97)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(REPO, "data", "mnist")):
        sys.exit("dp_accuracy: data/mnist is missing: run scripts/prepare_mnist.sh")
    configs = configurations([int(h) for h in args.local_sgd.split(",") if h])
    if args.configs:
        configs = {name: configs[name] for name in args.configs.split(",")}
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {name: [] for name in configs}
    work = tempfile.mkdtemp(prefix="netc-dp-accuracy-")
    try:
        for seed in seeds:
            for name, extra in configs.items():
                lines = run(args.netc, extra, seed, os.path.join(work, f"{name}-{seed}"))
                epochs = [line for line in lines if line.get("event") == "epoch"]
                elapsed, reached = 0.0, None
                for e in epochs:
                    elapsed += e["seconds"]
                    if reached is None and e["test_accuracy"] >= args.target:
                        reached = (e["epoch"], elapsed)
                final = epochs[-1]["test_accuracy"]
                results[name].append({"seed": seed, "final_accuracy": final, "reached": reached,
                                      "train_seconds": elapsed})
                print(f"seed {seed} {name:14} final {100 * final:.2f}%  "
                      + (f"{100 * args.target:g}% at epoch {reached[0]} after {reached[1]:.2f} s" if reached
                         else f"never {100 * args.target:g}%") + f"  ({elapsed:.2f} s of training)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'configuration':14} {'final test accuracy (mean, min-max)':>36} {'time to ' + format(args.target, '.0%'):>14}"
          f" {'epochs':>7} {'train s':>8}")
    summary = {}
    for name, runs in results.items():
        finals = [r["final_accuracy"] for r in runs]
        reached = [r["reached"] for r in runs if r["reached"]]
        time_to = statistics.median(t for _, t in reached) if reached else None
        epochs_to = statistics.median(e for e, _ in reached) if reached else None
        summary[name] = {"mean": statistics.mean(finals), "min": min(finals), "max": max(finals),
                         "time_to_target": time_to, "epochs_to_target": epochs_to,
                         "reached": len(reached), "runs": runs,
                         "train_seconds": statistics.median(r["train_seconds"] for r in runs)}
        print(f"{name:14} {100 * summary[name]['mean']:>23.2f}% ({100 * min(finals):.2f}-{100 * max(finals):.2f}%)"
              f" {(f'{time_to:.2f} s' if time_to else '-'):>14} {(epochs_to or '-'):>7}"
              f" {summary[name]['train_seconds']:>8.2f}  ({len(reached)}/{len(runs)} reach it)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "seeds": seeds, "configs": configs, "summary": summary}, f, indent=2)


if __name__ == "__main__":
    main()
