#!/usr/bin/env python3
"""scaling_model.py -- data-parallel training on many GPUs, on paper, from measured parts: the one command
behind docs/distributed.md's "Many GPUs, on paper".

No GPU is lent to this project's machines, so the model takes its parts from what can be measured or
is published, and says which is which:
  - the step: every op of each network's training plan, timed by `netc bench --profile` on this CPU
    (1 thread, batch --profile-batch, default 128), turned into a GPU time per op as this CPU's time
    divided by --gpu-speedup (default 300: one H100 against one core of this machine, the assumption
    bucket_size.py makes and docs/performance.md states), scaled linearly with the per-GPU batch,
    with a floor of --op-floor-us per op (default 5 us: a kernel launch). `--gpu-step-us NET=US`
    replaces a network's modelled step by a measured one (scripts/gpu_check.sh, once a GPU is lent);
  - the gradients: the plan's trained parameters, in its gradient buckets (`netc compile --emit=plan`,
    --bucket-mb as netc's default), each ready after the backward op the plan names;
  - NCCL's ring all-reduce of n bytes on N GPUs: alpha + 2 (N - 1) / N x n / busBW, with alpha
    --alpha-us (default 15, in the 12-17 us public nccl-tests figures show for small all-reduces on
    8 x H100) and busBW --bus-gbps (default 370 GB/s, the ring bus bandwidth nccl-tests reports for
    8 x H100 on NVLink/NVSwitch). Beyond one node of --node-gpus GPUs (default 8) the model switches to
    --ib-alpha-us / --ib-bus-gbps (default 50 us and 40 GB/s: NDR InfiniBand, bench/bucket_size.py's
    published figures), an assumption printed with the table.
The buckets are all-reduced one after another as the backward pass finishes them (as netc's plans do);
the step ends when the last all-reduce and the backward pass have both ended, then the update runs.

Two tables per network:
  - weak scaling: --batch samples per GPU (default 128) at every N: images/s and efficiency
    (N-GPU images/s / (N x 1-GPU images/s));
  - strong scaling: a global batch of --global-batch (default 1024) shared among N GPUs: speedup over
    1 GPU and efficiency (speedup / N).
"Stops scaling" is the first N at which doubling the GPUs gains less than 10% (strong scaling) or
the efficiency falls below 50% (weak scaling).

Usage:
  python3 bench/scaling_model.py [--netc build/tools/netc/netc] [--nets seed,lenet5,vgg-small,vgg16,deep-mlp]
      [--gpus 1,2,4,8,16,32,64,128] [--batch 128] [--global-batch 1024] [--json FILE] [...]
"""

import argparse
import importlib.util
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bucket_size", os.path.join(REPO, "bench", "bucket_size.py"))
bucket_size = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bucket_size)


def allreduce_us(nbytes, gpus, args):
    if gpus <= 1:
        return 0.0
    within = gpus <= args.node_gpus
    alpha = args.alpha_us if within else args.ib_alpha_us
    bus = args.bus_gbps if within else args.ib_bus_gbps
    return alpha + 2 * (gpus - 1) / gpus * nbytes / (bus * 1e3)  # GB/s = 1e3 bytes per us


def step_us(net, per_gpu_batch, gpus, args):
    """(step us, compute us, exposed communication us) at `per_gpu_batch` samples per GPU on `gpus` GPUs."""
    scale = per_gpu_batch / args.profile_batch
    op_us = [max(args.op_floor_us, us / args.gpu_speedup * scale) for us in net["cpu_op_us"]]
    if net["measured_step_us"]:
        factor = net["measured_step_us"] * scale / sum(op_us)
        op_us = [us * factor for us in op_us]
    ends, t = [], 0.0
    for us in op_us:
        t += us
        ends.append(t)
    backward_end = ends[net["backward_last"]]
    free = 0.0
    for bucket in sorted(net["buckets"], key=lambda b: b["ready"]):
        start = max(ends[bucket["ready"]], free)
        free = start + allreduce_us(bucket["count"] * 4, gpus, args)
    exposed = max(0.0, free - backward_end)
    return t + exposed, t, exposed


def load_network(name, args):
    path = bucket_size.NETS.get(name, name)
    path = path if os.path.isabs(path) else os.path.join(REPO, path)
    plan, err = bucket_size.read_plan(args.netc, path)
    if plan is None:
        sys.exit(f"scaling_model: {name}: {err}")
    large = sum(p["count"] for p in plan["params"]) > 1_000_000
    data, err, _ = bucket_size.read_profile(args.netc, path, args.profile_batch, 1, large)
    if data is None:
        sys.exit(f"scaling_model: {name}: {err}")
    profile = data["profile"]
    sections = [p["section"] for p in profile]
    backward = [i for i, s in enumerate(sections) if s == "backward"]
    buckets = bucket_size.make_buckets(plan["params"], plan["trained"], int(args.bucket_mb * (1 << 20)))
    return {"name": name, "params": sum(p["count"] for p in plan["params"]), "trained": plan["trained"],
            "cpu_op_us": [p["microseconds"] for p in profile], "backward_last": backward[-1] if backward else -1,
            "buckets": buckets, "measured_step_us": args.measured.get(name)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    ap.add_argument("--nets", default="seed,lenet5,vgg-small,vgg16,deep-mlp")
    ap.add_argument("--gpus", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--batch", type=int, default=128, help="weak scaling: samples per GPU")
    ap.add_argument("--global-batch", type=int, default=1024, help="strong scaling: samples per step in all")
    ap.add_argument("--profile-batch", type=int, default=128)
    ap.add_argument("--gpu-speedup", type=float, default=300)
    ap.add_argument("--op-floor-us", type=float, default=5)
    ap.add_argument("--gpu-step-us", action="append", default=[], metavar="NET=US",
                    help="a measured GPU step (at --profile-batch) instead of the modelled one")
    ap.add_argument("--alpha-us", type=float, default=15)
    ap.add_argument("--bus-gbps", type=float, default=370)
    ap.add_argument("--node-gpus", type=int, default=8)
    ap.add_argument("--ib-alpha-us", type=float, default=50)
    ap.add_argument("--ib-bus-gbps", type=float, default=40)
    ap.add_argument("--bucket-mb", type=float, default=16)
    ap.add_argument("--json", help="also write the tables here")
    args = ap.parse_args()
    args.measured = {}
    for item in args.gpu_step_us:
        name, _, value = item.partition("=")
        args.measured[name] = float(value)
    gpus = [int(g) for g in args.gpus.split(",")]
    print(f"NCCL ring all-reduce: alpha {args.alpha_us:g} us, bus bandwidth {args.bus_gbps:g} GB/s up to "
          f"{args.node_gpus} GPUs (NVLink); beyond: {args.ib_alpha_us:g} us, {args.ib_bus_gbps:g} GB/s "
          f"(InfiniBand, assumed). GPU op = CPU op / {args.gpu_speedup:g}, at least {args.op_floor_us:g} us.")
    report = []
    for name in args.nets.split(","):
        net = load_network(name, args)
        one, compute1, _ = step_us(net, args.batch, 1, args)
        print(f"\n{name}: {net['params']:,} parameters ({net['trained'] * 4 / 2**20:.1f} MiB of gradients in "
              f"{len(net['buckets'])} bucket(s)); modelled GPU step at batch {args.batch}: {one:.0f} us"
              + (" (measured)" if net["measured_step_us"] else ""))
        print(f"  {'GPUs':>5} | weak: {'step us':>8} {'exposed':>8} {'img/s':>10} {'eff':>6} | strong "
              f"(global {args.global_batch}): {'batch':>5} {'step us':>8} {'speedup':>8} {'eff':>6}")
        strong1, _, _ = step_us(net, args.global_batch, 1, args)
        rows, weak_stop, strong_stop, previous = [], None, None, None
        for n in gpus:
            step, _, exposed = step_us(net, args.batch, n, args)
            weak_eff = one / step
            per = max(1, args.global_batch // n)
            sstep, _, sexposed = step_us(net, per, n, args)
            speedup = strong1 / sstep
            if weak_stop is None and weak_eff < 0.5:
                weak_stop = n
            if strong_stop is None and previous is not None and speedup < 1.1 * previous[1]:
                strong_stop = previous[0]
            previous = (n, speedup)
            rows.append({"gpus": n, "weak_step_us": step, "weak_exposed_us": exposed,
                         "weak_images_per_sec": n * args.batch / step * 1e6, "weak_efficiency": weak_eff,
                         "strong_batch": per, "strong_step_us": sstep, "strong_exposed_us": sexposed,
                         "strong_speedup": speedup, "strong_efficiency": speedup / n})
            print(f"  {n:>5} | {step:>14.0f} {exposed:>8.0f} {n * args.batch / step * 1e6:>10.0f} "
                  f"{100 * weak_eff:>5.1f}% | {per:>24} {sstep:>8.0f} {speedup:>7.2f}x {100 * speedup / n:>5.1f}%")
        print(f"  stops scaling: strong scaling gains < 10% per doubling from "
              f"{strong_stop or 'beyond ' + str(gpus[-1])} GPUs; weak scaling efficiency < 50% from "
              f"{weak_stop or 'beyond ' + str(gpus[-1])} GPUs")
        report.append({"net": name, "params": net["params"], "buckets": len(net["buckets"]),
                       "strong_stops_at": strong_stop, "weak_stops_at": weak_stop, "rows": rows})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"assumptions": {k: v for k, v in vars(args).items() if k not in ("json", "netc")},
                       "networks": report}, f, indent=2)


if __name__ == "__main__":
    main()
