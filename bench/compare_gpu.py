#!/usr/bin/env python3
"""netc against PyTorch eager on one GPU, side by side: the CUDA backend's benchmark (issue "CUDA backend").

For the seed network (examples/mnist.net) and LeNet-5 (examples/lenet5.net), in FP32 at batch 128
with a synthetic batch resident on the device, it runs

  netc bench FILE --device cuda --batch 128 --warmup W --iterations I --repeats R --format json
    --resident-input (the batch copied in once, like PyTorch's), and again without it (the trainer's
    step, which copies its batch in first: reported beside, with no PyTorch counterpart), again with
    --cuda-graphs off (each op launched on its own instead of the captured step), and once with
    --profile (each op on its own, waited for) for where the time goes;
  PyTorch 2.x on the same GPU: the same network (bench/torch_reference.py's SeedNet and LeNet5),
    eager each round, and once per network through torch.compile(mode="reduce-overhead"),
    torch.backends.cudnn.allow_tf32 = False, torch.backends.cuda.matmul.allow_tf32 = False,
    torch.set_float32_matmul_precision("highest"), SGD with momentum, one optimizer step per batch,

--rounds times each (default 5, alternating which side goes first), and reports per network the
median training images/s of both sides, their ratio (above 1: netc is faster), the time of a
60,000-image epoch at that rate, kernels per step
(netc: its kernels and library calls; PyTorch: CUDA kernels counted by torch.profiler over one step)
and GPU memory (netc: the plan's one allocation; PyTorch: max_memory_allocated). The goals printed
as met / not met, on the seed network: netc >= 2x PyTorch eager with --cuda-graphs off (the CUDA
backend issue's), and with graphs >= 5x PyTorch eager, >= 1x torch.compile and a 60,000-image epoch in
<= 60 ms (stretch 25 ms; the CUDA graphs issue's).

It needs a GPU, PyTorch with CUDA, and netc built with CUDA; without them it says what is missing
and exits 2. scripts/gpu_check.sh runs it on the GPU machine and keeps its JSON (--json FILE).

Usage: python3 bench/compare_gpu.py [--netc build/tools/netc/netc] [--nets seed,lenet5]
           [--batch 128] [--rounds 5] [--warmup 10] [--iters 50] [--repeats 5] [--json FILE]
           [--no-compile]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NETS = {"seed": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
GOAL_RATIO = 2.0  # netc / PyTorch eager training images/s, seed network
EPOCH_IMAGES = 60000  # an MNIST epoch: its time is EPOCH_IMAGES / images per second
GOAL_EPOCH_MS, STRETCH_EPOCH_MS = 60.0, 25.0  # the CUDA graphs issue's goals, seed network


def torch_side(net, batch, warmup, iters, repeats, compiled=False):
    """PyTorch training images/s (median of `repeats`), kernels per step and peak memory: eager, or
    with the model through torch.compile(mode="reduce-overhead") (Inductor kernels replayed as CUDA
    graphs), which needs more warm-up steps for its compilation and graph recording."""
    import torch
    sys.path.insert(0, HERE)
    from torch_reference import build  # the hand-written Net# networks (parameter counts checked)

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    model, params = build(net)
    model = model.to(device)
    if compiled:
        model = torch.compile(model, mode="reduce-overhead")
        warmup = max(warmup, 20)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(batch, 784, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
        rates.append(iters * batch / (time.perf_counter() - start))
    kernels = None
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    except Exception as error:  # the profiler is optional; the rates are the figure
        print(f"compare_gpu: torch.profiler failed ({error}); kernels per step not counted", file=sys.stderr)
    return {"train_images_per_sec": statistics.median(rates), "runs": rates, "params": params,
            "kernels_per_step": kernels, "memory_bytes": torch.cuda.max_memory_allocated(),
            "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "gpu": torch.cuda.get_device_name(0)}


def netc_side(netc, path, batch, warmup, iters, repeats, resident=True, profile=False, graphs=True):
    cmd = [netc, "bench", path, "--device", "cuda", "--batch", str(batch), "--warmup", str(warmup),
           "--iterations", str(iters), "--repeats", str(repeats), "--format", "json",
           "--cuda-graphs", "on" if graphs else "off"]
    cmd += ["--resident-input"] if resident else []
    cmd += ["--profile"] if profile else []
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    ap.add_argument("--nets", default="seed,lenet5")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip PyTorch's torch.compile(mode='reduce-overhead') side (measured once per network)")
    args = ap.parse_args()
    nets = [n for n in args.nets.split(",") if n]
    unknown = [n for n in nets if n not in NETS]
    if unknown or args.rounds < 1:
        ap.error(f"--nets takes {', '.join(NETS)}; --rounds >= 1")
    try:
        import torch
        if not torch.cuda.is_available():
            sys.exit(print("compare_gpu: PyTorch sees no GPU; run this on the GPU machine", file=sys.stderr) or 2)
    except ImportError:
        sys.exit(print("compare_gpu: PyTorch is not installed here", file=sys.stderr) or 2)
    if not os.access(args.netc, os.X_OK):
        sys.exit(print(f"compare_gpu: no netc at {args.netc} (--netc)", file=sys.stderr) or 2)

    results, failures = {}, []
    for net in nets:
        netc_runs, copy_runs, plain_runs, torch_runs, last_netc, last_torch = [], [], [], [], None, None
        for r in range(args.rounds):
            sides = ["netc", "torch"] if r % 2 == 0 else ["torch", "netc"]
            for side in sides:
                if side == "netc":
                    try:
                        last_netc = netc_side(args.netc, NETS[net], args.batch, args.warmup, args.iters,
                                              args.repeats)
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
                        # PyTorch's figures are still worth keeping; the exit status says netc failed.
                        failures.append(f"{net}: {error}")
                        print(f"compare_gpu: {error}", file=sys.stderr)
                        netc_runs.append(float("nan"))
                        continue
                    netc_runs.append(last_netc["train_images_per_sec"])
                    # The trainer's step, which copies its batch in first (no PyTorch counterpart).
                    try:
                        copied = netc_side(args.netc, NETS[net], args.batch, args.warmup, args.iters,
                                           args.repeats, resident=False)
                        copy_runs.append(copied["train_images_per_sec"])
                        # The same step issued op by op: what the graph saves.
                        plain = netc_side(args.netc, NETS[net], args.batch, args.warmup, args.iters,
                                          args.repeats, graphs=False)
                        plain_runs.append(plain["train_images_per_sec"])
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
                        failures.append(f"{net} (copying its batch, or without graphs): {error}")
                else:
                    last_torch = torch_side(net, args.batch, args.warmup, args.iters, args.repeats)
                    torch_runs.append(last_torch["train_images_per_sec"])
            print(f"  round {r + 1}/{args.rounds} {net}: netc {netc_runs[-1]:,.0f}, torch {torch_runs[-1]:,.0f} images/s",
                  file=sys.stderr)
        compiled = None
        if not args.no_compile:  # once per network: its compilation takes tens of seconds
            try:
                compiled = torch_side(net, args.batch, args.warmup, args.iters, args.repeats, compiled=True)
            except Exception as error:  # an Inductor or Triton failure costs this figure only
                failures.append(f"{net} torch.compile: {error}")
        netc_ok = [v for v in netc_runs if v == v]
        n = statistics.median(netc_ok) if netc_ok else float("nan")
        t = statistics.median(torch_runs)
        last_netc = last_netc or {}
        profile = []
        try:  # where the step's time goes: each op on its own, waited for (includes a sync per op)
            profile = netc_side(args.netc, NETS[net], args.batch, 2, 20, 1, profile=True).get("profile", [])
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
            failures.append(f"{net} --profile: {error}")
        results[net] = {"netc_train_images_per_sec": n, "torch_train_images_per_sec": t, "ratio": n / t,
                        "netc_epoch_ms": 1000.0 * EPOCH_IMAGES / n if n > 0 else None,
                        "torch_epoch_ms": 1000.0 * EPOCH_IMAGES / t if t > 0 else None,
                        "netc_copying_images_per_sec": statistics.median(copy_runs) if copy_runs else None,
                        "netc_no_graphs_images_per_sec": statistics.median(plain_runs) if plain_runs else None,
                        "netc_runs": netc_runs, "netc_copying_runs": copy_runs, "netc_no_graphs_runs": plain_runs,
                        "torch_runs": torch_runs,
                        "netc_profile": profile,
                        "torch_compile_images_per_sec": compiled["train_images_per_sec"] if compiled else None,
                        "torch_compile_runs": compiled["runs"] if compiled else None,
                        "ratio_to_compile": n / compiled["train_images_per_sec"] if compiled else None,
                        "netc_launches_per_step": last_netc.get("launches_per_step"),
                        "netc_device_bytes": last_netc.get("device_bytes"),
                        "netc_device": last_netc.get("device"),
                        "torch_kernels_per_step": last_torch["kernels_per_step"],
                        "torch_memory_bytes": last_torch["memory_bytes"],
                        "torch": last_torch["torch"], "cudnn": last_torch["cudnn"], "gpu": last_torch["gpu"]}
    print(f"{'network':8} {'netc img/s':>12} {'torch img/s':>12} {'ratio':>6} {'netc launches':>13} "
          f"{'torch kernels':>13} {'netc MiB':>9} {'torch MiB':>9}")
    for net, r in results.items():
        print(f"{net:8} {r['netc_train_images_per_sec']:>12,.0f} {r['torch_train_images_per_sec']:>12,.0f} "
              f"{r['ratio']:>5.2f}x {r['netc_launches_per_step'] or 0:>13} {r['torch_kernels_per_step'] or 0:>13} "
              f"{(r['netc_device_bytes'] or 0) / 2**20:>9.1f} {r['torch_memory_bytes'] / 2**20:>9.1f}")
    for net, r in results.items():
        if r["netc_epoch_ms"] and r["torch_epoch_ms"]:
            print(f"{net}: a {EPOCH_IMAGES:,}-image epoch takes netc {r['netc_epoch_ms']:.1f} ms, "
                  f"PyTorch eager {r['torch_epoch_ms']:.1f} ms")
        if r["netc_copying_images_per_sec"]:
            print(f"{net}: netc copying its batch in before each step (the trainer's step): "
                  f"{r['netc_copying_images_per_sec']:,.0f} images/s")
        if r["torch_compile_images_per_sec"]:
            print(f"{net}: PyTorch torch.compile(mode='reduce-overhead'): "
                  f"{r['torch_compile_images_per_sec']:,.0f} images/s; netc is {r['ratio_to_compile']:.2f}x that")
        if r["netc_no_graphs_images_per_sec"]:
            print(f"{net}: netc with --cuda-graphs off (each op launched on its own): "
                  f"{r['netc_no_graphs_images_per_sec']:,.0f} images/s; the graph is "
                  f"{r['netc_train_images_per_sec'] / r['netc_no_graphs_images_per_sec']:.2f}x that")
        top = sorted(r["netc_profile"], key=lambda p: -p["microseconds"])[:8]
        if top:
            print(f"{net}: slowest ops (each on its own, with a wait): " +
                  ", ".join(f"{p['op']} {p['output']} {p['microseconds']:.1f} us" for p in top))
    if "seed" in results:
        r = results["seed"]
        plain = r["netc_no_graphs_images_per_sec"]
        goals = [(f"netc --cuda-graphs off >= {GOAL_RATIO:g}x PyTorch eager",
                  plain / r["torch_train_images_per_sec"] if plain else None, GOAL_RATIO),
                 ("netc >= 5x PyTorch eager", r["ratio"], 5.0),
                 ("netc >= 1x torch.compile", r["ratio_to_compile"], 1.0)]
        for text, ratio, goal in goals:
            verdict = "not measured" if ratio is None else ("met" if ratio >= goal else "not met")
            print(f"goal on the seed network: {text}: {verdict}" + ("" if ratio is None else f" ({ratio:.2f}x)"))
        epoch = r["netc_epoch_ms"]
        for text, goal in ((f"a {EPOCH_IMAGES:,}-image epoch <= {GOAL_EPOCH_MS:g} ms", GOAL_EPOCH_MS),
                           (f"stretch: <= {STRETCH_EPOCH_MS:g} ms", STRETCH_EPOCH_MS)):
            verdict = "not measured" if epoch is None else ("met" if epoch <= goal else "not met")
            print(f"goal on the seed network: {text}: {verdict}" + ("" if epoch is None else f" ({epoch:.1f} ms)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"batch": args.batch, "rounds": args.rounds, "results": results, "failures": failures}, f,
                      indent=1)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
