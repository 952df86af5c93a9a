#!/usr/bin/env python3
"""compare_ddp.py -- netc's data-parallel training against PyTorch's DistributedDataParallel, side by
side: the one command behind docs/distributed.md's "Throughput against PyTorch DDP".

For each network (the seed network examples/mnist.net and examples/lenet5.net) and each rank count
(1, then 2), with one thread per rank and --batch samples per rank (default 128), it runs

  netc bench FILE --batch B --threads 1 --ranks N --warmup W --iterations I --repeats R --format json
  /usr/bin/python3 bench/ddp_reference.py --net NET --ranks N --batch B --threads 1 --warmup W --iters I
                                          --repeats R

--rounds times each (default 5), alternating which side goes first and going round-robin over the
configurations, so that drift in the load of this shared machine hits both alike. Inside one run each
side times R measurements of I steps (every rank's step; a measurement lasts as long as its slowest
rank) and reports their median as the job's training images/s; the table gives the median over the
rounds. From those it prints:
  - the scaling efficiency of each side: images/s with 2 ranks / (2 x images/s with 1 rank);
  - netc / DDP at each rank count.
The goals (printed as met / not met): >= 90% efficiency for netc on LeNet-5, and netc >= 3x DDP's
throughput at 2 ranks. With 2 ranks on a 2-core machine every core is busy: other work on the machine
(the runnable count is printed) costs the 2-rank runs far more than the 1-rank ones.

Needs mpirun (netc's ranks) and Debian's python3-torch (`scripts/setup.sh --bench` installs both).

Usage:
  python3 bench/compare_ddp.py [--netc build/tools/netc/netc] [--python /usr/bin/python3]
      [--nets seed,lenet5] [--ranks 1,2] [--batch 128] [--rounds 5] [--warmup 5] [--iters 20]
      [--repeats 5] [--json FILE]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = {"seed": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
GOAL_EFFICIENCY = 0.90  # netc, LeNet-5, 2 ranks
GOAL_RATIO = 3.0        # netc / DDP, 2 ranks


def runnable():
    """Processes running or ready on this machine now (/proc/loadavg's 4th field, minus this one)."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        return None


def run_json(command, timeout=900):
    start = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error)
    for line in reversed(result.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line), None
            except ValueError:
                pass
    return None, f"exit {result.returncode} after {time.perf_counter() - start:.0f} s: {result.stderr[-800:]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--nets", default="seed,lenet5")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    nets = args.nets.split(",")
    rank_counts = [int(r) for r in args.ranks.split(",")]
    configs = [(net, ranks) for net in nets for ranks in rank_counts]
    samples = {(side, net, ranks): [] for side in ("netc", "ddp") for net, ranks in configs}
    load = []
    for round_ in range(args.rounds):
        for index, (net, ranks) in enumerate(configs):
            netc = [args.netc, "bench", NETS[net], "--device", "cpu", "--batch", str(args.batch), "--threads", "1", "--ranks",
                    str(ranks), "--warmup", str(args.warmup), "--iterations", str(args.iters), "--repeats",
                    str(args.repeats), "--format", "json"]
            ddp = [args.python, os.path.join(REPO, "bench", "ddp_reference.py"), "--net", net, "--ranks",
                   str(ranks), "--batch", str(args.batch), "--threads", "1", "--warmup", str(args.warmup),
                   "--iters", str(args.iters), "--repeats", str(args.repeats)]
            order = [("netc", netc), ("ddp", ddp)]
            if (round_ + index) % 2:
                order.reverse()
            for side, command in order:
                load.append(runnable())
                result, error = run_json(command)
                if result is None:
                    print(f"compare_ddp: {side} {net} {ranks} rank(s) failed: {error}", file=sys.stderr)
                    continue
                samples[(side, net, ranks)].append(result["train_images_per_sec"])
                print(f"round {round_ + 1}: {side:4} {net:6} {ranks} rank(s): "
                      f"{result['train_images_per_sec']:9.0f} images/s", flush=True)

    def median(side, net, ranks):
        values = samples[(side, net, ranks)]
        return statistics.median(values) if values else None

    print(f"\nbatch {args.batch} per rank, 1 thread per rank, medians of {args.rounds} runs (training images/s)")
    print(f"{'network':8} {'ranks':>5} {'netc':>10} {'DDP':>10} {'netc/DDP':>9}")
    table = []
    for net, ranks in configs:
        n, d = median("netc", net, ranks), median("ddp", net, ranks)
        ratio = n / d if n and d else None
        table.append({"net": net, "ranks": ranks, "netc": n, "ddp": d, "ratio": ratio,
                      "netc_runs": samples[("netc", net, ranks)], "ddp_runs": samples[("ddp", net, ranks)]})
        print(f"{net:8} {ranks:>5} {n or 0:>10.0f} {d or 0:>10.0f} {ratio or 0:>8.2f}x")
    efficiency = {}
    if 1 in rank_counts and 2 in rank_counts:
        print("\nscaling efficiency at 2 ranks (2-rank images/s / (2 x 1-rank images/s)):")
        for net in nets:
            for side in ("netc", "ddp"):
                one, two = median(side, net, 1), median(side, net, 2)
                if one and two:
                    efficiency[(side, net)] = two / (2 * one)
                    print(f"  {side:4} {net:6} {100 * efficiency[(side, net)]:5.1f}%")
    goals = []
    if ("netc", "lenet5") in efficiency:
        met = efficiency[("netc", "lenet5")] >= GOAL_EFFICIENCY
        goals.append(f"netc >= {100 * GOAL_EFFICIENCY:.0f}% efficiency on LeNet-5 at 2 ranks: "
                     f"{'met' if met else 'NOT met'} ({100 * efficiency[('netc', 'lenet5')]:.1f}%)")
    for row in table:
        if row["ranks"] == 2 and row["ratio"]:
            goals.append(f"netc >= {GOAL_RATIO:g}x DDP on {row['net']} at 2 ranks: "
                         f"{'met' if row['ratio'] >= GOAL_RATIO else 'NOT met'} ({row['ratio']:.2f}x)")
    if goals:
        print("\n" + "\n".join(goals))
    known = [value for value in load if value is not None]
    if known:
        print(f"other runnable processes as runs started: median {statistics.median(known)}, max {max(known)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.node(),
                       "cpus": os.cpu_count(), "batch": args.batch, "rounds": args.rounds, "table": table,
                       "efficiency": {f"{side}/{net}": value for (side, net), value in efficiency.items()},
                       "goals": goals}, f, indent=2)


if __name__ == "__main__":
    main()
