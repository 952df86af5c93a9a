#!/usr/bin/env python3
"""Gradient bucket size: how much all-reduce time each `--bucket-mb` leaves exposed after the backward pass.

What it is for: the one command behind the "Gradient buckets (`--bucket-mb`)" section of
docs/performance.md, which chose the default bucket size (kDefaultBucketBytes, codegen/Codegen.h).
A data-parallel step all-reduces each gradient bucket as soon as the backward pass has finished it,
while the backward pass goes on; the step can only update the parameters once the last all-reduce is
done. Small buckets start early but pay the per-call latency many times; large ones pay it once but
start late and leave a big last bucket after the backward pass. This script measures and models that.

  1. The all-reduce cost on this machine: MPI Allreduce (SUM, float32, numpy buffers) over --mpi-ranks
     processes (default 2, shared memory: mpirun --mca btl self,vader) for every power of 2 from
     4 KiB to --mpi-max-mb MiB (default 64), the median of --mpi-repeats timed calls (each one the
     slowest rank's time, after a barrier), fitted as T(b) = alpha + b / beta by least squares on the
     relative error (so the small sizes count as much as the large ones) over the sizes up to
     --fit-max-mb (default 16: from 32 MiB on, Open MPI's temporary buffer is above glibc's largest
     mmap threshold and every call maps and faults in fresh pages, a step the line cannot follow).
     The simulation uses the measured medians themselves (interpolated), step included. Needs
     `mpirun` and mpi4py for --python (Debian: python3-mpi4py openmpi-bin); without them the script
     says so plainly and goes on with the published figures only. --mpirun-args adds arguments.
  2. Published figures for NCCL, as the same model (sources in PUBLISHED below): one node of 8 Hopper
     GPUs on NVLink/NVSwitch, and several nodes over InfiniBand.
  3. Per network: `netc compile FILE --emit=plan` gives every parameter's size, its offset in the
     gradient arena (arena order = the order the backward pass finishes them) and the op after which
     it is final (ready-after=#OP); `netc bench FILE --batch B --threads T --profile --format json`
     gives each op's median microseconds, op i of the profile being op #i of the plan (checked by
     name). Buckets are formed as codegen/PlanArenas.cpp does (walk the trained parameters in arena
     order, each padded to 64 floats, and start a new bucket once the current one holds at least the
     bucket size; a bucket is final after the last of its parameters' ops); the buckets the plan
     printed are checked against this at --plan-bucket-mb (default: kDefaultBucketBytes as
     codegen/Codegen.h says; a netc built with another default shows a MISMATCH warning).
  4. The simulation, per network, bucket size and cost model: the ops run back to back with their
     profiled times; a bucket becomes ready at the end of its ready op; buckets are all-reduced one
     after another on one channel, each taking T(bytes); the exposed time is (end of the last
     all-reduce) - (end of the backward pass), or 0. For the GPU models the CPU op times are divided
     by --gpu-speedup (default 300: this machine's single core against one H100, an assumption) with
     a floor of --gpu-op-floor-us per op (default 5, a kernel launch); --speedups lists other factors
     for which the recommendation is recomputed, to show how much it depends on that assumption.
     "rel" is the exposed time as a percentage of the step's compute time (every op of the plan).

The table gives the exposed time (microseconds and % of the compute step) per network, bucket size
and model; the summary gives, per model, the worst and the summed % over the networks, and the
recommended default: the bucket size whose worst % over the networks and both NCCL models is least
(ties: the summed %, then the larger size). On one CPU node the backward pass is long next to the
all-reduces, so the size matters little there (save for Open MPI's step at 32 MiB); the multi-GPU and
multi-node models are where the choice matters.

Usage:
  python3 bench/bucket_size.py [--netc build/tools/netc/netc]
      [--nets seed,lenet5,vgg-small,vgg16,deep-mlp] [--bucket-mb 0.25,0.5,1,2,4,8,16,25,32,64]
      [--batch 128] [--threads 1] [--mpi-ranks 2] [--mpi-repeats 15] [--mpi-max-mb 64]
      [--fit-max-mb 16] [--no-mpi] [--mpirun-args "ARGS"] [--python /usr/bin/python3]
      [--gpu-speedup 300] [--gpu-op-floor-us 5] [--speedups 100,300,1000] [--plan-bucket-mb MB]
      [--json FILE]
--nets takes names from NETS below or paths to .net files: examples/mnist.net (the seed network),
examples/lenet5.net, and three large ones in bench/: vgg-small.net (25.5 M parameters, most in two
fully connected layers), vgg16.net (11.3 M, spread over 13 convolutions) and deep-mlp.net (17.6 M in
seventeen equal layers). Networks with more than 1 million parameters are profiled with
--warmup 1 --iterations 1 --repeats 3 to keep the run short (the whole run takes about a minute
on this 2-core machine).
Only the Python 3 standard library is used here (numpy and mpi4py run in the MPI children).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = {
    "seed": "examples/mnist.net",
    "lenet5": "examples/lenet5.net",
    "vgg-small": "bench/vgg-small.net",
    "vgg16": "bench/vgg16.net",
    "deep-mlp": "bench/deep-mlp.net",
}
DEFAULT_BUCKETS_MB = (0.25, 0.5, 1, 2, 4, 8, 16, 25, 32, 64)
MIB = 1 << 20
ALIGN_FLOATS = 64  # every parameter starts on a 256-byte boundary (codegen/PlanArenas.cpp)
LARGE_PARAMS = 1_000_000
LARGE_PROFILE_ARGS = ["--warmup", "1", "--iterations", "1", "--repeats", "3"]

# Published all-reduce figures, as T(b) = alpha_us + b / beta (beta in GB/s = 1e9 bytes/s, the
# "algorithm bandwidth" of nccl-tests: bytes all-reduced per second). Round, typical figures.
PUBLISHED = {
    "nccl-nvlink": {
        "alpha_us": 23.0,
        "beta_gbps": 275.0,
        "what": "NCCL, one node of 8 Hopper GPUs on NVLink/NVSwitch (NVLS all-reduce)",
        "sources": [
            "https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc "
            "(NCCL's own cost model: NVLS all-reduce latency 23 us on NVLink)",
            "https://github.com/NVIDIA/nccl-tests/issues/212 "
            "(NCCL maintainer: 8x H100 all-reduce peaks at busBw ~480 GB/s, algbw ~275 GB/s)",
        ],
    },
    "nccl-ib": {
        "alpha_us": 50.0,
        "beta_gbps": 40.0,
        "what": "NCCL, 2 or more nodes over InfiniBand NDR (about one 400 Gb/s link per GPU)",
        "sources": [
            "https://github.com/NVIDIA/nccl/blob/master/src/graph/tuning.cc "
            "(2 nodes, NVLS-tree: 23 us + 2 x 14 us network latency = 51 us)",
            "https://github.com/NVIDIA/nccl/issues/1244 "
            "(2 nodes x 8 H20, NDR: 46-48 us for small all-reduces)",
            "https://github.com/NVIDIA/nccl-tests/issues/232 "
            "(2 nodes over IB: 40-41 GB/s algbw at 16-32 MiB)",
        ],
    },
}
GPU_MODELS = ("nccl-nvlink", "nccl-ib")


# ----------------------------------------------------------------------------------------------
# MPI measurement


def mpi_worker(sizes, repeats):
    """Runs inside mpirun: times Allreduce for each size; rank 0 prints one JSON line."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    out = []
    for size in sizes:
        n = size // 4
        send = np.ones(n, dtype=np.float32)
        recv = np.empty(n, dtype=np.float32)
        for _ in range(2):  # warm-up: page faults, shared-memory segments
            comm.Allreduce(send, recv, op=MPI.SUM)
        times = []
        for _ in range(repeats):
            comm.Barrier()
            t0 = MPI.Wtime()
            comm.Allreduce(send, recv, op=MPI.SUM)
            dt = MPI.Wtime() - t0
            times.append(comm.allreduce(dt, op=MPI.MAX))
        if recv[0] != comm.Get_size():
            raise SystemExit(f"wrong Allreduce result {recv[0]}")
        out.append({"bytes": size, "median_us": statistics.median(times) * 1e6,
                    "min_us": min(times) * 1e6, "repeats": repeats})
    if comm.Get_rank() == 0:
        print(json.dumps({"ranks": comm.Get_size(), "mpi": MPI.Get_library_version().replace("\0", "").strip().splitlines()[0],
                          "points": out}))


def mpi_available(python):
    """(True, None) when mpirun exists and `python` imports mpi4py and numpy, else (False, why)."""
    if shutil.which("mpirun") is None:
        return False, "mpirun not found (Debian: apt-get install openmpi-bin)"
    try:
        r = subprocess.run([python, "-c", "import mpi4py, numpy"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        return False, f"{python}: {e}"
    if r.returncode != 0:
        return False, f"{python} cannot import mpi4py/numpy (Debian: apt-get install python3-mpi4py)"
    return True, None


def measure_mpi(python, ranks, repeats, max_mb, extra):
    """Runs the MPI worker; returns (result dict or None, error text or None)."""
    sizes = []
    size = 4096
    while size <= max_mb * MIB:
        sizes.append(size)
        size *= 2
    cmd = ["mpirun"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["--oversubscribe", "--mca", "btl", "self,vader"] + extra + ["-np", str(ranks),
            python, os.path.abspath(__file__), "--mpi-worker",
            "--mpi-sizes", ",".join(map(str, sizes)), "--mpi-repeats", str(repeats)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"mpirun failed: {e}"
    if r.returncode != 0:
        return None, f"mpirun exited with {r.returncode}: {(r.stderr or r.stdout).strip()[-500:]}"
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            result["command"] = " ".join(cmd)
            return result, None
    return None, "mpirun printed no result"


def fit_alpha_beta(points):
    """Least squares of T(b) = alpha + b * k on the relative error; returns (alpha_us, beta GB/s)."""
    # Minimise sum(((alpha + b k) - T) / T)^2: rows [1/T, b/T] . [alpha, k] = 1.
    s11 = s12 = s22 = r1 = r2 = 0.0
    for p in points:
        t = p["median_us"]
        x1, x2 = 1.0 / t, p["bytes"] / t
        s11 += x1 * x1
        s12 += x1 * x2
        s22 += x2 * x2
        r1 += x1
        r2 += x2
    det = s11 * s22 - s12 * s12
    alpha = (r1 * s22 - r2 * s12) / det
    k = (s11 * r2 - s12 * r1) / det
    if alpha < 0:  # keep the model physical: refit the slope alone
        alpha = 0.0
        k = r2 / s22
    return alpha, 1.0 / k / 1e3  # k in us per byte -> bytes per us / 1e3 = GB/s


def cost_us(model, nbytes):
    """T(nbytes): the measured medians interpolated when the model has them, else alpha + b / beta."""
    pts = model.get("points")
    if not pts:
        return model["alpha_us"] + nbytes / (model["beta_gbps"] * 1e3)
    if nbytes <= pts[0]["bytes"]:
        return pts[0]["median_us"]
    for lo, hi in zip(pts, pts[1:]):
        if nbytes <= hi["bytes"] or hi is pts[-1]:
            slope = (hi["median_us"] - lo["median_us"]) / (hi["bytes"] - lo["bytes"])
            return lo["median_us"] + (nbytes - lo["bytes"]) * slope
    return pts[0]["median_us"]


# ----------------------------------------------------------------------------------------------
# Networks: plan and profile

PARAM_RE = re.compile(r"^parameter (\S+) \[[^\]]*\] count=(\d+) @(\d+) .*ready-after=#(\d+)")
BUCKET_RE = re.compile(r"^bucket (\d+) @(\d+) count=(\d+) ready-after=#(\d+)")
ARENAS_RE = re.compile(r"^arenas parameters=(\d+) trained=(\d+)")
OP_RE = re.compile(r"^  (\S+) .*out=\[([^\]]*)\]")


def run_netc(cmd, timeout=1800):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}"
    return r.stdout, None


def read_plan(netc, path):
    """Parameters (name, count, offset, ready op), printed buckets, trained floats and op list."""
    text, err = run_netc([netc, "compile", path, "--emit=plan"])
    if text is None:
        return None, f"netc compile --emit=plan failed: {err}"
    params, buckets, ops = [], [], []
    trained = None
    in_ops = False
    for line in text.splitlines():
        if m := PARAM_RE.match(line):
            params.append({"name": m[1], "count": int(m[2]), "offset": int(m[3]), "ready": int(m[4])})
        elif m := BUCKET_RE.match(line):
            buckets.append({"offset": int(m[2]), "count": int(m[3]), "ready": int(m[4])})
        elif m := ARENAS_RE.match(line):
            trained = int(m[2])
        elif line in ("forward:", "loss:", "backward:", "update:"):
            in_ops = True
        elif in_ops and (m := OP_RE.match(line)):
            ops.append({"op": m[1], "output": m[2].split(",")[0].strip()})
    if trained is None or not params:
        return None, "no parameters or arena line in the plan"
    return {"params": params, "buckets": buckets, "trained": trained, "ops": ops}, None


def read_profile(netc, path, batch, threads, large):
    cmd = [netc, "bench", path, "--device", "cpu", "--batch", str(batch), "--threads", str(threads), "--profile",
           "--format", "json"]
    if large:
        cmd += LARGE_PROFILE_ARGS
    text, err = run_netc(cmd)
    if text is None:
        return None, f"netc bench --profile failed: {err}", cmd
    try:
        data = json.loads(text)
        profile = data["profile"]
    except (ValueError, KeyError) as e:
        return None, f"netc bench printed no profile: {e}", cmd
    return data, None, cmd


def align(count):
    return (count + ALIGN_FLOATS - 1) // ALIGN_FLOATS * ALIGN_FLOATS


def make_buckets(params, trained, bucket_bytes):
    """codegen/PlanArenas.cpp's grouping: returns [{offset, count (floats), ready}] in arena order."""
    buckets = []
    for p in sorted(params, key=lambda p: p["offset"]):
        if p["offset"] >= trained:
            continue  # not trained: outside the range the update op covers
        if not buckets or buckets[-1]["count"] * 4 >= bucket_bytes:
            buckets.append({"offset": p["offset"], "count": 0, "ready": 0})
        b = buckets[-1]
        b["count"] = p["offset"] + align(p["count"]) - b["offset"]
        b["ready"] = max(b["ready"], p["ready"])
    return buckets


def simulate(op_us, sections, buckets, model):
    """Returns (exposed us, backward end us, compute step us, number of buckets)."""
    ends = []
    t = 0.0
    for us in op_us:
        t += us
        ends.append(t)
    backward_ops = [i for i, s in enumerate(sections) if s == "backward"]
    backward_end = ends[backward_ops[-1]] if backward_ops else ends[-1]
    free = 0.0
    for b in sorted(buckets, key=lambda b: b["ready"]):
        start = max(ends[b["ready"]], free)
        free = start + cost_us(model, b["count"] * 4)
    return max(0.0, free - backward_end), backward_end, t, len(buckets)


# ----------------------------------------------------------------------------------------------


def parse_list(text, kind=float):
    return [kind(x) for x in text.split(",") if x.strip()]


def runnable():
    """Processes running or ready to run on the whole machine right now (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def fmt_mb(mb):
    return f"{mb:g}"


def recommend(results, nets, sizes, models):
    """The size with the least worst % over nets x models (ties: summed %, then larger size)."""
    best = None
    for mb in sizes:
        rels = [results[(n, mb, m)]["rel_pct"] for n in nets for m in models if (n, mb, m) in results]
        if not rels:
            continue
        key = (round(max(rels), 3), round(sum(rels), 3), -mb)
        if best is None or key < best[0]:
            best = (key, mb)
    return best[1] if best else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build/tools/netc/netc"))
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--bucket-mb", default=",".join(map(fmt_mb, DEFAULT_BUCKETS_MB)))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mpi-ranks", type=int, default=2)
    ap.add_argument("--mpi-repeats", type=int, default=15)
    ap.add_argument("--mpi-max-mb", type=int, default=64)
    ap.add_argument("--fit-max-mb", type=float, default=16.0,
                    help="fit alpha and beta to the MPI sizes up to this many MiB")
    ap.add_argument("--no-mpi", action="store_true", help="skip the MPI measurement")
    ap.add_argument("--mpirun-args", default="", help="extra mpirun arguments, e.g. \"-x GLIBC_TUNABLES=...\"")
    ap.add_argument("--python", default="/usr/bin/python3", help="Python with mpi4py and numpy for the MPI ranks")
    ap.add_argument("--gpu-speedup", type=float, default=300.0)
    ap.add_argument("--gpu-op-floor-us", type=float, default=5.0)
    ap.add_argument("--speedups", default="100,300,1000")
    ap.add_argument("--plan-bucket-mb", type=float, default=None,
                    help="bucket size the plan printed (default: kDefaultBucketBytes from codegen/Codegen.h)")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mpi-sizes", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.mpi_worker:
        mpi_worker(parse_list(args.mpi_sizes, int), args.mpi_repeats)
        return 0

    sizes = parse_list(args.bucket_mb)
    speedups = parse_list(args.speedups)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": sys.version.split()[0], "argv": sys.argv[1:],
              "runnable_at_start": runnable(), "batch": args.batch, "threads": args.threads}

    print(f"{report['machine']}, {report['cpus']} CPUs; processes running or runnable at the start: "
          f"{report['runnable_at_start']} (above 1: other work competes with this benchmark)\n")

    # 1. the measured model
    models = {}
    if args.no_mpi:
        print("MPI: skipped (--no-mpi); only the published NCCL figures are used.")
    else:
        ok, why = mpi_available(args.python)
        if not ok:
            print(f"MPI: not measured: {why}. Only the published NCCL figures are used.")
        else:
            result, err = measure_mpi(args.python, args.mpi_ranks, args.mpi_repeats, args.mpi_max_mb,
                                      shlex.split(args.mpirun_args))
            if result is None:
                print(f"MPI: not measured: {err}. Only the published NCCL figures are used.")
            else:
                alpha, beta = fit_alpha_beta([p for p in result["points"] if p["bytes"] <= args.fit_max_mb * MIB])
                models["mpi-shm"] = {"alpha_us": alpha, "beta_gbps": beta, "points": result["points"],
                                     "what": f"measured: {result['mpi'].split(',')[0]}, {result['ranks']} ranks, "
                                             f"shared memory; simulated with the measured medians"}
                report["mpi"] = result
                report["mpi_fit_max_mb"] = args.fit_max_mb
                print(f"MPI Allreduce, {result['ranks']} ranks on this machine ({result['mpi']}), "
                      f"median of {args.mpi_repeats}:")
                print(f"  {'bytes':>10} {'median us':>11} {'fit us':>9} {'GB/s':>7}")
                for p in result["points"]:
                    fit = alpha + p["bytes"] / (beta * 1e3)
                    print(f"  {p['bytes']:>10} {p['median_us']:>11.1f} {fit:>9.1f} "
                          f"{p['bytes'] / p['median_us'] / 1e3:>7.2f}")
                print(f"  fit (4 KiB to {args.fit_max_mb:g} MiB): alpha = {alpha:.1f} us, beta = {beta:.2f} GB/s\n")
    for name, m in PUBLISHED.items():
        models[name] = dict(m)
    report["models"] = models
    for name, m in models.items():
        print(f"model {name}: alpha = {m['alpha_us']:.1f} us, beta = {m['beta_gbps']:.2f} GB/s  ({m['what']})")
    print()

    # 2. the networks
    plan_bucket_mb = args.plan_bucket_mb
    if plan_bucket_mb is None:
        try:
            with open(os.path.join(REPO, "codegen/Codegen.h")) as f:
                m = re.search(r"kDefaultBucketBytes\s*=\s*int64_t\{(\d+)\}\s*<<\s*20", f.read())
            plan_bucket_mb = float(m[1]) if m else None
        except OSError:
            plan_bucket_mb = None
    if not (os.path.isfile(args.netc) and os.access(args.netc, os.X_OK)):
        print(f"netc: {args.netc} is missing or not executable; no network can be simulated.")
        nets = []
    else:
        nets = [n.strip() for n in args.nets.split(",") if n.strip()]
    networks = {}
    for name in nets:
        path = NETS.get(name, name)
        plan, err = read_plan(args.netc, path)
        if plan is None:
            print(f"{name}: skipped: {err}")
            continue
        large = plan["trained"] > LARGE_PARAMS
        prof, err, cmd = read_profile(args.netc, path, args.batch, args.threads, large)
        if prof is None:
            print(f"{name}: skipped: {err}")
            continue
        profile = prof["profile"]
        if len(profile) != len(plan["ops"]) or any(
                p["op"] != o["op"] or p["output"] != o["output"] for p, o in zip(profile, plan["ops"])):
            print(f"{name}: skipped: the profile's ops do not match the plan's op list")
            continue
        check = "not checked"
        if plan_bucket_mb is not None:
            mine = make_buckets(plan["params"], plan["trained"], plan_bucket_mb * MIB)
            check = "match" if mine == plan["buckets"] else "MISMATCH"
            if check == "MISMATCH":
                print(f"{name}: warning: the plan's buckets differ from this script's grouping at "
                      f"{plan_bucket_mb:g} MiB: plan {plan['buckets']} vs {mine}")
        networks[name] = {"path": path, "params": plan["params"], "trained_floats": plan["trained"],
                          "printed_buckets": plan["buckets"], "bucket_check": check,
                          "bucket_check_mb": plan_bucket_mb, "profile_command": " ".join(cmd),
                          "train_images_per_sec": prof.get("train_images_per_sec"), "profile": profile}
        op_us = [p["microseconds"] for p in profile]
        sect = [p["section"] for p in profile]
        bw_ops = [i for i, s in enumerate(sect) if s == "backward"]
        print(f"{name} ({path}): {plan['trained']:,} trained floats ({plan['trained'] * 4 / MIB:.1f} MiB), "
              f"{len(profile)} ops, compute step {sum(op_us) / 1e3:.1f} ms, backward "
              f"{sum(op_us[i] for i in bw_ops) / 1e3:.1f} ms (CPU, batch {args.batch}, {args.threads} thread); "
              f"plan buckets at {plan_bucket_mb:g} MiB: {check}")
    report["networks"] = networks
    if not networks:
        print("no network could be simulated.")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return 1
    print()

    # 3. the simulation
    def op_times(name, model_name, speedup):
        us = [p["microseconds"] for p in networks[name]["profile"]]
        if model_name in GPU_MODELS:
            us = [max(u / speedup, args.gpu_op_floor_us) for u in us]
        return us

    def run_all(speedup):
        res = {}
        for name in networks:
            net = networks[name]
            sect = [p["section"] for p in net["profile"]]
            for mb in sizes:
                buckets = make_buckets(net["params"], net["trained_floats"], mb * MIB)
                for model_name, model in models.items():
                    exposed, bw_end, step, nb = simulate(op_times(name, model_name, speedup), sect, buckets, model)
                    res[(name, mb, model_name)] = {"exposed_us": exposed, "backward_end_us": bw_end,
                                                   "step_us": step, "buckets": nb,
                                                   "rel_pct": 100.0 * exposed / step}
        return res

    results = run_all(args.gpu_speedup)
    model_names = list(models)
    print(f"Exposed all-reduce time per step: microseconds (% of the compute step); GPU models with the CPU op "
          f"times / {args.gpu_speedup:g}, at least {args.gpu_op_floor_us:g} us each")
    head = f"{'network':<10} {'MiB':>5} {'bkts':>4} " + " ".join(f"{m:>20}" for m in model_names)
    print(head)
    for name in networks:
        for mb in sizes:
            r0 = results[(name, mb, model_names[0])]
            cells = []
            for m in model_names:
                r = results[(name, mb, m)]
                cells.append(f"{r['exposed_us']:>10.1f} ({r['rel_pct']:5.2f}%)")
            print(f"{name:<10} {fmt_mb(mb):>5} {r0['buckets']:>4} " + " ".join(f"{c:>20}" for c in cells))
        step_cells = " ".join(
            f"{'step ' + format(results[(name, sizes[0], m)]['step_us'], '.0f') + ' us':>20}" for m in model_names)
        print(f"{'':<10} {'':>5} {'':>4} {step_cells}")
    print()

    print("Worst / summed % over the networks, per bucket size and model:")
    print(f"{'MiB':>5} " + " ".join(f"{m:>20}" for m in model_names))
    for mb in sizes:
        cells = []
        for m in model_names:
            rels = [results[(n, mb, m)]["rel_pct"] for n in networks]
            cells.append(f"{max(rels):8.2f} / {sum(rels):8.2f}")
        print(f"{fmt_mb(mb):>5} " + " ".join(f"{c:>20}" for c in cells))
    gpu = [m for m in GPU_MODELS if m in models]
    chosen = recommend(results, list(networks), sizes, gpu)
    print(f"\nRecommended default (least worst % over the networks and {', '.join(gpu)}): {fmt_mb(chosen)} MiB")
    sensitivity, worst_by_speedup = {}, {}
    for s in speedups:
        res = results if s == args.gpu_speedup else run_all(s)
        sensitivity[s] = recommend(res, list(networks), sizes, gpu)
        worst_by_speedup[s] = {mb: max(res[(n, mb, m)]["rel_pct"] for n in networks for m in gpu) for mb in sizes}
    print("Worst % over the networks and the NCCL models, per GPU speedup (the assumption on compute speed):")
    print(f"{'MiB':>5} " + " ".join(f"{'x' + format(s, 'g'):>9}" for s in speedups))
    for mb in sizes:
        print(f"{fmt_mb(mb):>5} " + " ".join(f"{worst_by_speedup[s][mb]:>9.2f}" for s in speedups))
    print("best: " + ", ".join(f"x{s:g} -> {fmt_mb(mb)} MiB" for s, mb in sensitivity.items()))
    if "mpi-shm" in models:
        print(f"  on this CPU node alone (mpi-shm): {fmt_mb(recommend(results, list(networks), sizes, ['mpi-shm']))} MiB")

    report["bucket_mb"] = sizes
    report["gpu_speedup"] = args.gpu_speedup
    report["gpu_op_floor_us"] = args.gpu_op_floor_us
    report["results"] = [{"network": n, "bucket_mb": mb, "model": m, **r} for (n, mb, m), r in results.items()]
    report["recommended_mb"] = chosen
    report["recommended_mb_by_speedup"] = {str(k): v for k, v in sensitivity.items()}
    report["worst_pct_by_speedup"] = {str(k): {fmt_mb(mb): v for mb, v in w.items()}
                                      for k, w in worst_by_speedup.items()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
