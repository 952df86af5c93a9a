#!/usr/bin/env python3
"""ddp_reference.py -- the PyTorch side of bench/compare_ddp.py: the seed network or LeNet-5 (the same
modules as bench/torch_reference.py) trained with DistributedDataParallel over the gloo backend, one
process per rank on this machine, each on its own random batch of --batch samples, SGD with momentum
0.9 as `netc bench` runs it.

Each rank runs --warmup untimed steps, then --repeats measurements of --iters timed steps; before each
measurement the ranks meet at a barrier, and a measurement takes as long as its slowest rank (the
times are all-reduced with MAX). Rank 0 prints one JSON object: the job's training images/s (ranks x
batch x iters / time), the median of the measurements and each of them.

Usage (Debian's CPU build of PyTorch, python3-torch 1.13, is /usr/bin/python3's):
  /usr/bin/python3 bench/ddp_reference.py --net lenet5 --ranks 2 --batch 128 --threads 1
"""

import argparse
import json
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_threads import set_thread_environment  # noqa: E402

if __name__ == "__main__":
    set_thread_environment(sys.argv[1:])  # before `import torch`; the spawned ranks inherit it

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from torch_reference import build  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, args, port, results):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(1)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model, params = build(args.net)
    model = DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.rand(args.batch, 784, generator=generator),
                torch.randint(0, 10, (args.batch,), generator=generator)) for _ in range(8)]

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # DDP all-reduces the gradient buckets during the backward pass
        opt.step()

    for i in range(args.warmup):
        step(*batches[i % len(batches)])
    rates = []
    for _ in range(args.repeats):
        dist.barrier()
        start = time.perf_counter()
        for i in range(args.iters):
            step(*batches[i % len(batches)])
        seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        rates.append(args.ranks * args.batch * args.iters / seconds.item())
    if rank == 0:
        results.put({"net": args.net, "ranks": args.ranks, "batch": args.batch, "threads": args.threads,
                     "train_images_per_sec": round(statistics.median(rates), 1),
                     "train_runs": [round(r, 1) for r in rates], "params": params,
                     "torch_version": torch.__version__, "backend": "gloo"})
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--net", choices=["seed", "lenet5"], default="lenet5")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128, help="samples per rank and step")
    ap.add_argument("--threads", type=int, default=1, help="threads per rank")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if min(args.ranks, args.batch, args.threads, args.iters, args.repeats) < 1 or args.warmup < 0:
        ap.error("--ranks, --batch, --threads, --iters and --repeats must be >= 1, --warmup >= 0")
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    mp.spawn(rank_main, args=(args, free_port(), results), nprocs=args.ranks, join=True)
    print(json.dumps(results.get()))


if __name__ == "__main__":
    main()
