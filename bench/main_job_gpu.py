#!/usr/bin/env python3
"""The README's main job on one GPU, netc against PyTorch: the wall time to the accuracy (issue "--data-on-device").

The main job (README.md, scripts/main.sh) trains the seed network examples/mnist.net on data/mnist
(8,004 training and 1,996 test digits, scripts/prepare_mnist.sh) to about 97.8% test accuracy:

  netc train examples/mnist.net --data data/mnist --epochs 40 --batch 32 --lr 0.1 --momentum 0.9
    --init xavier --schedule cosine --seed 1 --threads 1 --out DIR --overwrite

This script runs it on the GPU, --rounds times each (default 3, alternating which side goes first):

  netc, with --device cuda --data-on-device (the training set held in GPU memory, each batch gathered
    there), and again with --device cuda alone (each batch gathered on the host and copied in; the
    same weights bit for bit, docs/gpu.md): the whole process timed from outside (its wall clock,
    CUDA context and library start-up included), the training loop's seconds, steps and test accuracy
    taken from the run's metrics.jsonl ("end" line; netc train has no other machine-readable output),
    and cross-checked against its text ("trained 40 epoch(s), N steps in M:SS", "final: ... test
    accuracy X% ...");
  PyTorch, the same training in a process of its own (this script with --torch-worker), timed the
    same way from outside, and inside: `import torch`, the CUDA context, reading the IDX files and
    normalising them, and the training loop. The model is bench/torch_reference.py's build("seed")
    (examples/mnist.net written by hand), re-initialised as netc's --init xavier does. FP32 only:
    torch.backends.cudnn.allow_tf32 = False, torch.backends.cuda.matmul.allow_tf32 = False,
    torch.set_float32_matmul_precision("highest") (as bench/compare_gpu.py). The whole training set is
    one tensor on the GPU; each epoch's order is a torch.randperm on the device (seeded; not netc's
    mt19937_64 Fisher-Yates order, runtime/data/Shuffle.h), each batch gathered by index_select.

What the PyTorch side copies from netc, so that it is the same job:
  * normaliser minmax (runtime/data/Normalizer.cpp, Normalizer::fit, the MinMax branch; ML.NET's
    "fixZero"): fitted on the training set, per feature x' = x * s, s = 1 / max(|min|, |max|) in
    float32 (offset 0, so 0 stays 0; pixels are the raw bytes 0..255, runtime/data/Idx.cpp loadIdx),
    s = 0 for a feature without spread (max == min); the test set gets the training set's s;
  * --init xavier (runtime/train/ModelState.cpp initializeParameters; fan-in, fan-out and gain from
    codegen/BuildPlan.cpp createParameters): every weight uniform in +-gain*sqrt(6/(fanIn+fanOut)),
    gain 4 into a sigmoid layer (Conv1, Conv2, Hid3), 1 into the softmax output; a full bundle has
    fanIn = source nodes, fanOut = layer nodes; a convolution has fanIn = the kernel's window and
    fanOut = MapCount * window, and its one bias per kernel is drawn with its weights from the same
    uniform; the full layers' biases start at 0. Limits: Conv1 4*sqrt(6/(16+80)) = 1.0, Conv2
    4*sqrt(6/(25+250)) = 0.591, Hid3 4*sqrt(6/(1250+100)) = 0.267, Digit sqrt(6/(100+10)) = 0.234;
  * --schedule cosine, per step (runtime/optim/Schedule.cpp scheduledLearningRate, called by
    runtime/train/Trainer.cpp runSteps): lr = min + (lr0 - min) (1 + cos(pi t / T)) / 2 with min = 0,
    T = --epochs and t = epoch + (samples of the epoch before this step) / 8004, rounded to float32;
  * SGD with momentum 0.9 (runtime/optim/UpdateMath.h: v = mu v + g; w -= lr v, PyTorch's form),
    batches of 32 with a last batch of 8004 mod 32 = 4 (251 steps an epoch, 10,040 in all), the
    mean cross-entropy of the batch (softmax output, docs/language.md §17);
  * after every epoch: the running train loss and accuracy, the test set evaluated in batches of 32
    (netc evaluates at --batch, runtime/train/Trainer.cpp), and the checkpoints written (last every
    epoch, best when the test accuracy improves; torch.save of the model and optimizer state,
    written under a temporary name and renamed, as netc does) with a metrics line.

It prints a table of the medians (process wall seconds, training-loop seconds, steps, final test
accuracy) and the ratios PyTorch time / netc time (above 1: netc is faster); --json FILE writes every
figure (rewritten after each round, so a run cut short keeps the rounds it finished).

It needs a GPU, PyTorch with CUDA, netc built with CUDA and the data folder; without them it says
what is missing and exits 2. scripts/gpu_check.sh runs it on the GPU machine (its main_job step).

Usage: python3 bench/main_job_gpu.py [--netc build/tools/netc/netc] [--data data/mnist] [--epochs 40]
           [--rounds 3] [--json FILE]
"""

import argparse
import gzip
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NET = "examples/mnist.net"
BATCH, LR, MOMENTUM, SEED = 32, 0.1, 0.9, 1
IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")
# Xavier gain per layer of torch_reference.SeedNet: 4 into the sigmoid layers, 1 into the softmax output
# (codegen/BuildPlan.cpp: param.gain = owner.function == Sigmoid ? 4.0 : 1.0).
SEED_GAINS = {"conv1": 4.0, "conv2": 4.0, "hid3": 4.0, "digit": 1.0}
SIDES = {"netc": "netc --data-on-device", "netc_copy": "netc (batches copied in)", "torch": "PyTorch eager"}


def say(text):
    print(f"main_job_gpu: {text}", file=sys.stderr)


# ---- the data (both the worker and the checks) -------------------------------------------------------

def idx_path(data, name):
    """`name` or `name.gz` in `data`, as netc's findIdxFile looks for them (runtime/data/Idx.cpp); None if neither."""
    for suffix in ("", ".gz"):
        path = os.path.join(data, name + suffix)
        if os.path.isfile(path):
            return path
    return None


def read_idx(path):
    """An IDX file of unsigned bytes (raw or gzip, like netc's reader): its dimensions and its bytes."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file")
    if raw[2] != 0x08:
        raise ValueError(f"{path}: IDX type 0x{raw[2]:02x}; this script reads unsigned bytes (0x08) only")
    ndim = raw[3]
    dims = list(struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim]))
    body = raw[4 + 4 * ndim:]
    count = math.prod(dims)
    if len(body) < count:
        raise ValueError(f"{path}: {len(body)} bytes of data, the header claims {count}")
    return dims, body[:count]


# ---- the PyTorch side (a process of its own: --torch-worker) -------------------------------------------

def to_float32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def cosine_lr(base, epoch, fraction, epochs, minimum=0.0):
    """runtime/optim/Schedule.cpp scheduledLearningRate, ScheduleKind::Cosine (double, then float)."""
    total = float(max(epochs, 1))
    t = min(max(epoch + fraction, 0.0), total)
    return to_float32(minimum + (base - minimum) * (1 + math.cos(math.pi * t / total)) / 2)


def xavier_like_netc(model, torch):
    """netc's --init xavier on torch_reference.SeedNet (see the module docstring for the formula)."""
    limits = {}
    with torch.no_grad():
        for name, gain in SEED_GAINS.items():
            layer = getattr(model, name)
            if isinstance(layer, torch.nn.Conv2d):
                window = layer.weight[0].numel()  # (in_channels / groups) * kh * kw: netc's kernel window
                maps = layer.out_channels // layer.groups  # the bundle's MapCount
                fan_in, fan_out = window, maps * window
                limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
                layer.weight.uniform_(-limit, limit)
                layer.bias.uniform_(-limit, limit)  # a kernel's bias is drawn with its weights
            else:
                fan_in, fan_out = layer.in_features, layer.out_features
                limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
                layer.weight.uniform_(-limit, limit)
                layer.bias.zero_()  # a layer's biases start at 0
            limits[name] = limit
    return limits


def save_atomic(torch, state, path):
    tmp = f"{path}.tmp-{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)


def torch_worker(args):
    """One PyTorch training of the main job; prints one JSON line of its figures."""
    began = time.perf_counter()
    import torch
    import torch.nn.functional as F
    imported = time.perf_counter()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    torch.cuda.init()
    torch.empty(1, device=device)  # the context
    torch.cuda.synchronize()
    context = time.perf_counter()

    # The data: raw bytes as floats, minmax fitted on the training set (float32 throughout), on the GPU.
    def load(images, labels):
        dims, pixels = read_idx(idx_path(args.data, images))
        ldims, ybytes = read_idx(idx_path(args.data, labels))
        if dims[0] != ldims[0]:
            raise ValueError(f"{images} has {dims[0]} images but {labels} has {ldims[0]} labels")
        x = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).reshape(dims[0], -1).to(torch.float32)
        y = torch.frombuffer(bytearray(ybytes), dtype=torch.uint8).to(torch.int64)
        return x, y

    x_train, y_train = load(IDX_FILES[0], IDX_FILES[1])
    x_test, y_test = load(IDX_FILES[2], IDX_FILES[3])
    lo, hi = x_train.min(dim=0).values, x_train.max(dim=0).values
    top = torch.maximum(lo.abs(), hi.abs())
    scale = torch.where(hi > lo, torch.ones_like(top) / top, torch.zeros_like(top))
    x_train, x_test = x_train * scale, x_test * scale  # (x - offset) * scale with offset 0
    x_train, y_train = x_train.to(device), y_train.to(device)
    x_test, y_test = x_test.to(device), y_test.to(device)
    torch.cuda.synchronize()
    loaded = time.perf_counter()

    sys.path.insert(0, HERE)
    from torch_reference import build  # examples/mnist.net by hand (its parameter count checked)
    torch.manual_seed(args.seed)
    model, params = build("seed")
    limits = xavier_like_netc(model, torch)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    n, n_test, batch = x_train.shape[0], x_test.shape[0], args.batch
    steps_per_epoch = (n + batch - 1) // batch
    out = args.out or tempfile.mkdtemp(prefix="main-job-torch-")
    os.makedirs(out, exist_ok=True)
    metrics = open(os.path.join(out, "metrics.jsonl"), "w")
    torch.cuda.synchronize()
    built = time.perf_counter()

    steps, best, epochs = 0, None, []
    loop_start = time.perf_counter()
    for epoch in range(args.epochs):
        epoch_start = time.perf_counter()
        model.train()
        order = torch.randperm(n, device=device, generator=generator)
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.int64)
        lr = args.lr
        for k in range(steps_per_epoch):
            first = k * batch
            index = order[first:first + batch]
            x, y = x_train.index_select(0, index), y_train.index_select(0, index)
            lr = cosine_lr(args.lr, epoch, first / n, args.epochs)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            logits = model(x)
            loss = F.cross_entropy(logits, y)  # softmax + mean categorical cross-entropy
            loss.backward()
            optimizer.step()
            steps += 1
            loss_sum += loss.detach() * y.shape[0]
            correct += (logits.detach().argmax(dim=1) == y).sum()
        model.eval()
        test_loss = torch.zeros((), device=device)
        test_correct = torch.zeros((), device=device, dtype=torch.int64)
        with torch.no_grad():
            for first in range(0, n_test, batch):
                logits = model(x_test[first:first + batch])
                y = y_test[first:first + batch]
                test_loss += F.cross_entropy(logits, y, reduction="sum")
                test_correct += (logits.argmax(dim=1) == y).sum()
        report = {"epoch": epoch + 1, "train_loss": loss_sum.item() / n, "train_accuracy": correct.item() / n,
                  "test_loss": test_loss.item() / n_test, "test_accuracy": test_correct.item() / n_test,
                  "learning_rate": lr}
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1}
        save_atomic(torch, state, os.path.join(out, "last.pt"))
        if best is None or report["test_accuracy"] > best[1]:
            best = (epoch + 1, report["test_accuracy"])
            save_atomic(torch, state, os.path.join(out, "best.pt"))
        report["seconds"] = time.perf_counter() - epoch_start
        metrics.write(json.dumps(report, sort_keys=True) + "\n")
        metrics.flush()
        epochs.append(report)
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_start
    metrics.close()
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    last = epochs[-1] if epochs else {}
    print(json.dumps({
        "import_seconds": imported - began, "context_seconds": context - imported,
        "data_seconds": loaded - context, "model_seconds": built - loaded, "loop_seconds": loop,
        "worker_seconds": time.perf_counter() - began, "steps": steps, "params": params,
        "test_accuracy": last.get("test_accuracy"), "test_loss": last.get("test_loss"),
        "train_accuracy": last.get("train_accuracy"), "train_loss": last.get("train_loss"),
        "best_epoch": best[0] if best else None, "init_limits": limits,
        "epoch_seconds": [e["seconds"] for e in epochs], "test_accuracies": [e["test_accuracy"] for e in epochs],
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(0), "memory_bytes": torch.cuda.max_memory_allocated()}))


def torch_side(args):
    """The PyTorch job in a fresh process: its figures, with the process's wall clock from outside."""
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--data", args.data,
           "--epochs", str(args.epochs), "--batch", str(args.batch), "--lr", repr(args.lr),
           "--momentum", repr(args.momentum), "--seed", str(args.seed)]
    with tempfile.TemporaryDirectory(prefix="main-job-torch-") as tmp:
        start = time.perf_counter()
        done = subprocess.run(cmd + ["--out", os.path.join(tmp, "run")], capture_output=True, text=True,
                              cwd=REPO, timeout=args.timeout)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the PyTorch worker failed ({done.returncode}): "
                           f"{(done.stderr.strip() or done.stdout.strip())[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_seconds"] = wall
    result["process_seconds_without_import_and_context"] = wall - result["import_seconds"] - result["context_seconds"]
    return result


# ---- the netc side ------------------------------------------------------------------------------------

def clock_seconds(text):
    """netc's "M:SS" or "H:MM:SS" as seconds."""
    seconds = 0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def netc_command(args, out, on_device):
    # The README's command (scripts/main.sh), on the GPU, into a temporary --out.
    cmd = [args.netc, "train", NET, "--data", args.data, "--epochs", str(args.epochs), "--batch", str(args.batch),
           "--lr", repr(args.lr), "--momentum", repr(args.momentum), "--init", "xavier", "--schedule", "cosine",
           "--seed", str(args.seed), "--threads", "1", "--out", out, "--overwrite", "--device", "cuda"]
    return cmd + (["--data-on-device"] if on_device else [])


def netc_side(args, on_device):
    with tempfile.TemporaryDirectory(prefix="main-job-netc-") as tmp:
        out = os.path.join(tmp, "run")
        cmd = netc_command(args, out, on_device)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=args.timeout)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): "
                               f"{(done.stderr.strip() or done.stdout.strip())[-2000:]}")
        lines = []
        try:
            with open(os.path.join(out, "metrics.jsonl")) as f:
                lines = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as error:
            say(f"netc's metrics.jsonl could not be read ({error}); using its text")
    text = done.stdout
    trained = re.search(r"^trained (\d+) epoch\(s\), (\d+) steps in ([\d:]+)", text, re.M)
    final = re.search(r"^final: .*test accuracy ([\d.]+)%", text, re.M)
    header = re.search(r"^training .*$", text, re.M)
    if not trained or not final:
        raise ValueError(f"netc's output has no 'trained ...' or 'final: ...' line:\n{text[-2000:]}")
    end = next((m for m in lines if m.get("event") == "end"), {})
    epochs = [m for m in lines if m.get("event") == "epoch"]
    steps = end.get("steps", int(trained.group(2)))
    accuracy = end.get("test_accuracy", float(final.group(1)) / 100)
    return {"process_seconds": wall,
            "loop_seconds": end.get("seconds", float(clock_seconds(trained.group(3)))),
            "steps": steps, "test_accuracy": accuracy, "test_loss": end.get("test_loss"),
            "train_accuracy": end.get("train_accuracy"), "train_loss": end.get("train_loss"),
            "best_epoch": end.get("best_epoch"),
            "text_steps": int(trained.group(2)), "text_time": trained.group(3),
            "text_test_accuracy_percent": float(final.group(1)),
            "epoch_seconds": [m.get("seconds") for m in epochs],
            "test_accuracies": [m.get("test_accuracy") for m in epochs],
            "header": header.group(0) if header else None, "command": cmd}


# ---- the comparison -----------------------------------------------------------------------------------

def missing_prerequisites(args):
    """What this machine lacks for the benchmark, one sentence each."""
    missing = []
    try:
        import torch
        if not torch.cuda.is_available():
            missing.append("PyTorch sees no GPU; run this on the GPU machine")
    except ImportError:
        missing.append("PyTorch is not installed here")
    if not os.access(args.netc, os.X_OK):
        missing.append(f"no netc at {args.netc} (--netc)")
    absent = [name for name in IDX_FILES if not idx_path(args.data, name)]
    if absent:
        missing.append(f"{args.data} lacks {', '.join(absent)} (--data; scripts/prepare_mnist.sh makes data/mnist)")
    return missing


def median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def summarise(runs):
    keys = ("process_seconds", "loop_seconds", "steps", "test_accuracy", "process_seconds_without_import_and_context",
            "import_seconds", "context_seconds", "data_seconds", "model_seconds")
    return {key: median([r.get(key) for r in runs]) for key in keys if any(key in r for r in runs)}


def ratio(a, b):
    return a / b if a is not None and b else None


def write_json(path, document):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(document, f, indent=1)
        os.replace(path + ".tmp", path)


def fmt(value, spec):
    return format(value, spec) if value is not None else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build", "tools", "netc", "netc"))
    ap.add_argument("--data", default="data/mnist", help="the data folder (default data/mnist)")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each side; the medians are reported (default 3)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one training process may take (default 900)")
    # The README's other settings; flags for the worker, not meant to be changed for the comparison.
    ap.add_argument("--batch", type=int, default=BATCH, help=argparse.SUPPRESS)
    ap.add_argument("--lr", type=float, default=LR, help=argparse.SUPPRESS)
    ap.add_argument("--momentum", type=float, default=MOMENTUM, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=SEED, help=argparse.SUPPRESS)
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rounds < 1 or args.epochs < 1 or args.batch < 1 or args.timeout <= 0:
        ap.error("--rounds, --epochs and --batch must be >= 1, --timeout > 0")
    if args.torch_worker:
        return torch_worker(args)
    if not os.path.isabs(args.data):
        args.data = os.path.abspath(args.data)
    args.netc = os.path.abspath(args.netc)
    missing = missing_prerequisites(args)
    if missing:
        for line in missing:
            say(line)
        sys.exit(2)

    runs = {side: [] for side in SIDES}
    failures = []
    document = {"network": NET, "data": args.data, "epochs": args.epochs, "batch": args.batch, "lr": args.lr,
                "momentum": args.momentum, "seed": args.seed, "rounds": args.rounds,
                "netc_command": netc_command(args, "DIR", True), "runs": runs, "failures": failures}
    for r in range(args.rounds):
        order = list(SIDES) if r % 2 == 0 else list(reversed(SIDES))
        for side in order:
            try:
                if side == "torch":
                    result = torch_side(args)
                else:
                    result = netc_side(args, on_device=side == "netc")
            except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as error:
                failures.append(f"round {r + 1} {SIDES[side]}: {error}")
                say(f"round {r + 1} {SIDES[side]}: {error}")
                continue
            runs[side].append(result)
            say(f"round {r + 1}/{args.rounds} {SIDES[side]}: {result['process_seconds']:.2f} s "
                f"(loop {result['loop_seconds']:.2f} s), {result['steps']} steps, "
                f"test accuracy {100 * result['test_accuracy']:.2f}%")
        document["medians"] = {side: summarise(v) for side, v in runs.items()}
        write_json(args.json, document)

    medians = document["medians"]
    n, c, t = medians["netc"], medians["netc_copy"], medians["torch"]
    document["ratios"] = {
        "torch_over_netc_process": ratio(t.get("process_seconds"), n.get("process_seconds")),
        "torch_over_netc_loop": ratio(t.get("loop_seconds"), n.get("loop_seconds")),
        "torch_without_import_and_context_over_netc_process":
            ratio(t.get("process_seconds_without_import_and_context"), n.get("process_seconds")),
        "torch_over_netc_copy_process": ratio(t.get("process_seconds"), c.get("process_seconds")),
        "torch_over_netc_copy_loop": ratio(t.get("loop_seconds"), c.get("loop_seconds")),
        "netc_copy_over_netc_process": ratio(c.get("process_seconds"), n.get("process_seconds")),
        "netc_copy_over_netc_loop": ratio(c.get("loop_seconds"), n.get("loop_seconds")),
    }
    last_torch = runs["torch"][-1] if runs["torch"] else {}
    last_netc = (runs["netc"] or runs["netc_copy"] or [{}])[-1]
    document.update({"gpu": last_torch.get("gpu"), "torch": last_torch.get("torch"), "cuda": last_torch.get("cuda"),
                     "cudnn": last_torch.get("cudnn"), "netc_header": last_netc.get("header")})
    # --data-on-device gathers the same samples in the same order: the same weights, so the same accuracy.
    same = sorted({round(r["test_accuracy"], 6) for r in runs["netc"] + runs["netc_copy"]})
    document["netc_accuracy_same_with_and_without_data_on_device"] = len(same) == 1 if same else None
    write_json(args.json, document)

    print(f"the README's main job: {NET} on {args.data}, {args.epochs} epochs, batch {args.batch}, "
          f"medians of {args.rounds} round(s)")
    if document["netc_header"]:
        print(f"netc: {document['netc_header']}")
    if document["gpu"]:
        print(f"PyTorch {document['torch']} (CUDA {document['cuda']}, cuDNN {document['cudnn']}) on {document['gpu']}")
    print(f"{'side':26} {'wall (s)':>9} {'loop (s)':>9} {'steps':>6} {'test acc':>9} {'torch/this':>10}")
    for side, label in SIDES.items():
        m = medians[side]
        acc = m.get("test_accuracy")
        print(f"{label:26} {fmt(m.get('process_seconds'), '9.2f')} {fmt(m.get('loop_seconds'), '9.2f')} "
              f"{fmt(m.get('steps'), '6.0f')} {fmt(100 * acc if acc is not None else None, '8.2f')}% "
              f"{fmt(ratio(t.get('process_seconds'), m.get('process_seconds')), '9.2f')}x")
    print("wall: the whole process, timed from outside (start-up, CUDA context, data, training, per-epoch "
          "evaluation and checkpoints); loop: the training epochs with their evaluation and checkpoints")
    if t:
        print(f"PyTorch without `import torch` ({fmt(t.get('import_seconds'), '.2f')} s) and the CUDA context "
              f"({fmt(t.get('context_seconds'), '.2f')} s): {fmt(t.get('process_seconds_without_import_and_context'), '.2f')} s, "
              f"{fmt(document['ratios']['torch_without_import_and_context_over_netc_process'], '.2f')}x netc's wall; "
              f"reading and normalising the data {fmt(t.get('data_seconds'), '.2f')} s")
    ratios = document["ratios"]
    print(f"PyTorch time / netc --data-on-device time: wall {fmt(ratios['torch_over_netc_process'], '.2f')}x, "
          f"loop {fmt(ratios['torch_over_netc_loop'], '.2f')}x; netc copying each batch in takes "
          f"{fmt(ratios['netc_copy_over_netc_loop'], '.2f')}x the loop time of --data-on-device")
    if document["netc_accuracy_same_with_and_without_data_on_device"] is False:
        print(f"netc's test accuracies differ with and without --data-on-device: {same} (they should be the same)")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
