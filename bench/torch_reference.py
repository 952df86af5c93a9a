#!/usr/bin/env python3
"""The reference side of the netc-vs-PyTorch benchmark: two Net# example networks written by hand in PyTorch.

What it is for: docs/architecture.md §Performance measurement measures netc's training and inference throughput
against "the same network in PyTorch". This script is that PyTorch network, for
  * `--net seed`:   examples/mnist.net (the seed network, 127,495 parameters), and
  * `--net lenet5`: examples/lenet5.net (a LeNet-5-like convnet, 61,706 parameters),
with the same computation and the same cost as netc's plan. It times training
(forward + loss + backward + SGD step, momentum 0.9, learning rate 0.1) and
inference (forward + softmax under torch.inference_mode) on synthetic random
inputs of the right shape with random labels, and prints one JSON object:

  {"net": ..., "batch": ..., "threads": ..., "train_images_per_sec": X,
   "infer_images_per_sec": Y, "torch_version": ..., ...}

bench/compare_torch.py runs it next to `netc bench` and prints the ratios.

Equivalence with the Net# files (docs/language.md §11):
  seed (examples/mnist.net), input 784 features = one 28x28 map:
    Conv1  Conv2d(1 -> 5, kernel 4, stride 2), sigmoid. Net# unpadded geometry (D7):
           N = (28-4)/2+1 = 13; r = (28-4) mod 2 = 0 uncovered rows/columns, so no crop.
           One bias per kernel (5 kernels, Sharing all true): 5*(1+16) = 85 parameters.
    Conv2  KernelShape [1,5,5], Sharing [false,true,true], MapCount 10 on [5,13,13]: each of the
           5 input maps has its own bank of 10 kernels = Conv2d(5 -> 50, kernel 5, stride 2,
           groups=5), sigmoid. N = (13-5)/2+1 = 5, r = 0. 50*(1+25) = 1300 parameters.
           Net# numbers the output maps map-major (channel = m*5 + g, D9) where PyTorch's grouped
           convolution numbers them group-major (channel = g*10 + m). The two differ only by a
           fixed permutation of the 50 channels, which the following full layer absorbs into its
           weight matrix, so the function class and the cost are the same; no permute is done.
    Hid3   Linear(1250 -> 100), sigmoid (one bias per node: 125,100 parameters).
    Digit  Linear(100 -> 10) + softmax; the loss is mean categorical cross-entropy (D16), computed
           as CrossEntropyLoss on the logits (log-softmax + NLL, the numerically safe fused form).
  lenet5 (examples/lenet5.net), input [28,28]:
    Conv1  Conv2d(1 -> 6, kernel 5, padding 2), relu. Net# Padding=true (D8): N = (28-1)/1+1 = 28,
           low pad (5-1)/2 = 2 and 2 at the high end. 6*(1+25) = 156 parameters.
    Pool1  MaxPool2d(2, stride 2): [6,28,28] -> [6,14,14] (no padding, nothing uncovered).
    Conv2  KernelShape [6,5,5] spans all 6 maps: Conv2d(6 -> 16, kernel 5), relu. N = [1,10,10];
           16*(1+150) = 2416 parameters.
    Pool2  MaxPool2d(2, stride 2): [16,10,10] -> [16,5,5].
    Full3  Linear(400 -> 120), relu; Full4 Linear(120 -> 84), relu; Digit Linear(84 -> 10) + softmax,
           cross-entropy as above.
  Both networks: float32, row-major [B, nodes] activations (NCHW is the same memory order),
  every trainable value initialised uniform in [-0.05, 0.05] (D15, diameter 0.1). The script checks
  that the parameter count equals netc's (127,495 and 61,706) before timing anything.

Method (the same as `netc bench`): --threads N sets torch.set_num_threads(N) and
torch.set_num_interop_threads(N) before any work, and OPENBLAS_NUM_THREADS=N (and OMP_NUM_THREADS=N)
before torch is imported: Debian's PyTorch runs its full layers' GEMMs in OpenBLAS, whose own
thread pool would otherwise use every core even with --threads 1. A pool of 8 random batches is made once, outside
the timing. Training: --warmup untimed steps, then --repeats measurements of --iters timed steps
each (time.perf_counter around the loop; images/s = iters*batch/seconds); the median is reported.
Then inference the same way. Every sample is in "train_samples"/"infer_samples". The output also
gives images per CPU second (time.process_time, all threads of the process): with 1 thread it moves
much less than the wall-clock figure when other work shares the machine.

Usage (Debian's CPU build of PyTorch is in /usr/bin/python3, python3-torch 1.13):
  /usr/bin/python3 bench/torch_reference.py --net seed --batch 128 --threads 1 --repeats 5
  /usr/bin/python3 bench/torch_reference.py --net lenet5 --threads 2 --warmup 5 --iters 20
"""

import argparse
import json
import os
import statistics
import sys
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_threads import set_thread_environment  # noqa: E402

if __name__ == "__main__":
    set_thread_environment(sys.argv[1:])  # before `import torch`

import torch  # noqa: E402 (after the thread environment)
import torch.nn as nn
import torch.nn.functional as F

EXPECTED_PARAMS = {"seed": 127495, "lenet5": 61706}
NET_FILES = {"seed": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
INIT_DIAMETER = 0.1  # docs/language.md §17: uniform in [-d/2, +d/2]


def unpadded_out(size, kernel, stride):
    """Net# unpadded geometry (docs/language.md §11.2): node count and low-end offset of the first kernel."""
    n = (size - kernel) // stride + 1
    r = (size - kernel) % stride
    return n, r // 2


class SeedNet(nn.Module):
    """examples/mnist.net: Conv1 (5 maps 4x4/2) -> Conv2 (5 groups x 10 maps 5x5/2) -> 100 -> 10."""

    def __init__(self):
        super().__init__()
        n1, off1 = unpadded_out(28, 4, 2)
        n2, off2 = unpadded_out(n1, 5, 2)
        # Both remainders are 0 for this network, so Net#'s geometry is exactly PyTorch's
        # (no crop of uncovered low-end rows/columns is needed).
        assert (n1, off1, n2, off2) == (13, 0, 5, 0)
        self.conv1 = nn.Conv2d(1, 5, kernel_size=4, stride=2)
        self.conv2 = nn.Conv2d(5, 50, kernel_size=5, stride=2, groups=5)
        self.hid3 = nn.Linear(50 * n2 * n2, 100)
        self.digit = nn.Linear(100, 10)

    def forward(self, x):  # x: [B, 784] -> logits [B, 10]
        x = x.view(-1, 1, 28, 28)
        x = torch.sigmoid(self.conv1(x))
        x = torch.sigmoid(self.conv2(x))
        x = torch.sigmoid(self.hid3(x.flatten(1)))
        return self.digit(x)


class LeNet5(nn.Module):
    """examples/lenet5.net: conv 6@5x5 padded -> max pool 2 -> conv 16@[6,5,5] -> max pool 2 -> 120 -> 84 -> 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)  # Padding=true: low pad (5-1)/2 = 2
        self.pool1 = nn.MaxPool2d(2, stride=2)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)
        self.pool2 = nn.MaxPool2d(2, stride=2)
        self.full3 = nn.Linear(16 * 5 * 5, 120)
        self.full4 = nn.Linear(120, 84)
        self.digit = nn.Linear(84, 10)

    def forward(self, x):  # x: [B, 784] -> logits [B, 10]
        x = x.view(-1, 1, 28, 28)
        x = self.pool1(torch.relu(self.conv1(x)))
        x = self.pool2(torch.relu(self.conv2(x)))
        x = torch.relu(self.full3(x.flatten(1)))
        x = torch.relu(self.full4(x))
        return self.digit(x)


def build(net):
    model = {"seed": SeedNet, "lenet5": LeNet5}[net]()
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-INIT_DIAMETER / 2, INIT_DIAMETER / 2)
    params = sum(p.numel() for p in model.parameters())
    if params != EXPECTED_PARAMS[net]:
        sys.exit(f"torch_reference: {net} has {params} parameters, netc counts {EXPECTED_PARAMS[net]}")
    return model, params


def measure(step, batches, warmup, iters, repeats, batch):
    """Runs `step` warmup times untimed, then `repeats` times iters timed steps.

    Returns the images per wall-clock second and per CPU second (all threads) of each repeat."""
    for i in range(warmup):
        step(*batches[i % len(batches)])
    rates, cpu_rates = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for i in range(iters):
            step(*batches[i % len(batches)])
        rates.append(iters * batch / (time.perf_counter() - start))
        cpu_rates.append(iters * batch / max(time.process_time() - start_cpu, 1e-9))
    return rates, cpu_rates


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--net", choices=sorted(EXPECTED_PARAMS), default="seed")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps before training, and before inference")
    ap.add_argument("--iters", type=int, default=20, help="timed steps per measurement (default 20)")
    ap.add_argument("--repeats", type=int, default=5, help="measurements of each kind; the median is reported")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--indent", type=int, default=None, help="indent the JSON output")
    args = ap.parse_args()
    if min(args.batch, args.threads, args.iters, args.repeats) < 1 or args.warmup < 0:
        ap.error("--batch, --threads, --iters and --repeats must be >= 1, --warmup >= 0")

    # Must come before any parallel work (set_num_interop_threads may be called only once).
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)

    model, params = build(args.net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    batches = [(torch.rand(args.batch, 784), torch.randint(0, 10, (args.batch,))) for _ in range(8)]

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)  # softmax output + mean categorical cross-entropy
        loss.backward()
        opt.step()

    def infer_step(x, _y):
        with torch.inference_mode():
            torch.softmax(model(x), dim=1)

    model.train()
    train, train_cpu = measure(train_step, batches, args.warmup, args.iters, args.repeats, args.batch)
    model.eval()
    infer, infer_cpu = measure(infer_step, batches, args.warmup, args.iters, args.repeats, args.batch)

    result = {
        "net": args.net,
        "file": NET_FILES[args.net],
        "batch": args.batch,
        "threads": args.threads,
        "train_images_per_sec": round(statistics.median(train), 1),
        "infer_images_per_sec": round(statistics.median(infer), 1),
        "torch_version": torch.__version__,
        "params": params,
        "warmup": args.warmup,
        "iters": args.iters,
        "repeats": args.repeats,
        "train_images_per_cpu_sec": round(statistics.median(train_cpu), 1),
        "infer_images_per_cpu_sec": round(statistics.median(infer_cpu), 1),
        "train_samples": [round(v, 1) for v in train],
        "infer_samples": [round(v, 1) for v in infer],
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "os_threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None,
        "mkldnn": torch.backends.mkldnn.is_available(),
    }
    print(json.dumps(result, indent=args.indent))


if __name__ == "__main__":
    main()
