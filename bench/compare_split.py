#!/usr/bin/env python3
"""compare_split.py -- layers split over ranks (netc train --split) against one process and against data
parallelism, side by side: the one command behind docs/performance.md's "Layers split over ranks".

For each network (bench/wide-split.net: two 4,096-node layers, both split; examples/wide-mlp.net: one
2,048-node layer) it trains, with one thread per process, on the first --samples digits of the data folder:

  netc train NET --batch B --threads 1 ...                          one process
  netc train NET --batch B --threads 1 --split L:2 ...             2 ranks, each half of the split layers
  netc train NET --batch B/2 --threads 1 --ranks 2 ...             2 data-parallel ranks (global batch B)

--rounds times each (default 3), in rounds that go over the configurations in turn (reversed in even
rounds), so that drift in the load of this shared machine hits each alike. Each run trains --epochs
epochs (default 2); the last epoch's images/s (metrics.jsonl) is its sample, and the table gives medians,
the speedup over one process, and each configuration's planned memory per rank (netc compile --emit=plan:
parameters, gradients and optimizer state, and the activations at the batch), which is what --split is
for. The split runs' checkpoints must be the same bits as one process's (checked on every round).

PyTorch has no tensor parallelism on the CPU to compare with (torch 1.13, Debian's, has no DTensor;
Megatron-LM's layers need CUDA), so the references are netc's own one process and data parallelism.
Needs mpirun (scripts/setup.sh --bench installs it).

Usage:
  python3 bench/compare_split.py [--netc build/tools/netc/netc] [--data data/mnist] [--samples 2048]
      [--batch 256] [--rounds 3] [--epochs 2] [--nets wide-split,wide-mlp] [--json FILE]
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from compare_ddp import runnable  # noqa: E402  (runnable processes now)
from compare_pipeline import write_subset  # noqa: E402

NETS = {"wide-split": ("bench/wide-split.net", "H1:2,H2:2"), "wide-mlp": ("examples/wide-mlp.net", "Wide:2")}
CONFIGS = ("one process", "--split", "2 data-parallel ranks")
COMMON = ["--threads", "1", "--seed", "1", "--init", "xavier", "--normalize", "scale:255", "--progress", "none",
          "-q", "--optimizer", "adam", "--lr", "0.001", "--cost-model", "none"]


def tensors(path):
    import struct
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()
            if k != "__metadata__"}


def train(args, net, data, out, config):
    """One netc train run; returns the last epoch's images/s."""
    path, split = NETS[net]
    batch = args.batch // 2 if config == CONFIGS[2] else args.batch
    extra = {CONFIGS[0]: [], CONFIGS[1]: ["--split", split], CONFIGS[2]: ["--ranks", "2"]}[config]
    command = [args.netc, "train", os.path.join(REPO, path), "--data", data, "--out", out, "--overwrite",
               "--epochs", str(args.epochs), "--batch", str(batch), *COMMON, *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stderr[-2000:]}")
    last = None
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "epoch":
                last = record
    return last["images_per_sec"]


def planned_mib(args, net, config):
    """A rank's planned memory at its batch: the plan header's fixed values and activations per sample."""
    path, split = NETS[net]
    batch = args.batch // 2 if config == CONFIGS[2] else args.batch
    extra = ["--split", split, "--part", "0"] if config == CONFIGS[1] else []
    text = subprocess.run([args.netc, "compile", os.path.join(REPO, path), "--emit=plan", *extra],
                          capture_output=True, text=True, check=True).stdout
    memory = re.search(r"memory arena=(\d+) floats/sample .* inputs=(\d+)x(\d+) floats/sample fixed=(\d+) values",
                       text)
    arena, slots, inputs, fixed = (int(g) for g in memory.groups())
    # Adam's two state slots are not in the printed plan (built for SGD): add them, one arena each.
    arenas = int(re.search(r"arenas parameters=(\d+)", text).group(1))
    return 4 * (fixed + 2 * arenas + batch * (arena + slots * inputs)) / 2 ** 20


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    parser.add_argument("--data", default=os.path.join(REPO, "data", "mnist"))
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--nets", default="wide-split,wide-mlp")
    parser.add_argument("--json")
    args = parser.parse_args()
    if shutil.which("mpirun") is None:
        sys.exit("compare_split: mpirun is not installed (scripts/setup.sh --bench installs it)")
    nets = args.nets.split(",")
    work = tempfile.mkdtemp(prefix="netc-split-bench-")
    try:
        data = os.path.join(work, "data")
        samples = write_subset(args.data, data, args.samples)
        rates = {(net, c): [] for net in nets for c in CONFIGS}
        load = []
        for round_index in range(args.rounds):
            for net in nets:
                configs = list(CONFIGS) if round_index % 2 == 0 else list(reversed(CONFIGS))
                for config in configs:
                    load.append(runnable())
                    out = os.path.join(work, config.replace(" ", "-"))
                    rates[(net, config)].append(train(args, net, data, out, config))
                    print(f"round {round_index + 1}: {net} {config}: {rates[(net, config)][-1]:.1f} images/s",
                          flush=True)
                one = tensors(os.path.join(work, "one-process", "last.safetensors"))
                split = tensors(os.path.join(work, "--split", "last.safetensors"))
                if one != split:
                    raise RuntimeError(f"{net}: the --split run's checkpoint differs from one process's")
        report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "machine": platform.processor() or platform.machine(), "samples": samples, "batch": args.batch,
                  "epochs": args.epochs, "rounds": args.rounds,
                  "runnable_median": statistics.median([x for x in load if x is not None] or [0]), "networks": {}}
        print(f"\n{samples} samples, global batch {args.batch}, {args.epochs} epochs (the last one timed), Adam, "
              f"1 thread per process, medians of {args.rounds} rounds; the --split runs' checkpoints are the "
              "same bits as one process's")
        for net in nets:
            base = statistics.median(rates[(net, CONFIGS[0])])
            print(f"\n{net} ({NETS[net][0]}, --split {NETS[net][1]}):")
            print(f"{'':<24}{'images/s':>10} {'speedup':>8} {'memory a rank':>14}")
            rows = {}
            for config in CONFIGS:
                rate = statistics.median(rates[(net, config)])
                memory = planned_mib(args, net, config)
                rows[config] = {"images_per_sec": rate, "speedup": rate / base, "memory_mib": memory,
                                "runs": rates[(net, config)]}
                print(f"{config:<24}{rate:>10.1f} {rate / base:>7.2f}x {memory:>10.1f} MiB")
            report["networks"][net] = rows
        print(f"\nother processes runnable while measuring (median): {report['runnable_median']}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
