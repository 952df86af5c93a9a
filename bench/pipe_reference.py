#!/usr/bin/env python3
"""pipe_reference.py -- PyTorch 1.13's pipeline, torch.distributed.pipeline.sync.Pipe, on the CPU: the
reference side of bench/compare_pipeline.py --torch.

The network is bench/deep-mlp.net written in PyTorch: 784 inputs, seventeen 1024-node ReLU layers, 10
softmax outputs (cross-entropy), cut into two partitions of equal cost (the first 9 hidden layers, then
the rest), trained with SGD on random inputs at --batch samples a step, split by Pipe into M chunks
(micro-batches), one intra-op thread. For each M it times --rounds measurements of --steps steps after
--warmup steps and prints their median images/s as the last line, JSON: {"M": images/s, ...}. Pipe
runs each partition on a worker thread of its device; where it cannot run here, the last line says why.

Usage: pipe_reference.py [--batch 64] [--micro-batches 1,2,4,8,16] [--samples 1024] [--rounds 3]
                         [--warmup 2] [--steps 8]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--micro-batches", default="1,2,4,8,16")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    try:
        import torch
        import torch.distributed.rpc as rpc
        from torch.distributed.pipeline.sync import Pipe
    except ImportError as error:
        print(f"PyTorch's Pipe is not available: {error}")
        return 1
    torch.set_num_threads(1)
    torch.manual_seed(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    store = tempfile.NamedTemporaryFile(delete=False)
    try:
        rpc.init_rpc("worker", rank=0, world_size=1,
                     rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method=f"file://{store.name}"))
    except Exception as error:  # noqa: BLE001 -- the reason is the result
        print(f"PyTorch's Pipe needs its RPC framework, which did not start: {error}")
        return 1

    def hidden(count, inputs):
        layers = []
        for i in range(count):
            layers += [torch.nn.Linear(inputs if i == 0 else 1024, 1024), torch.nn.ReLU()]
        return layers

    first = torch.nn.Sequential(*hidden(9, 784))
    second = torch.nn.Sequential(*hidden(8, 1024), torch.nn.Linear(1024, 10))
    rates = {}
    x = torch.rand(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))
    for m in [int(v) for v in args.micro_batches.split(",")]:
        try:
            model = Pipe(torch.nn.Sequential(first, second), chunks=m)
        except Exception as error:  # noqa: BLE001 -- the reason is the result
            print(f"PyTorch's Pipe refused M = {m} on the CPU: {error}")
            return 1
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            optimizer.zero_grad()
            out = model(x).local_value()
            loss_fn(out, y).backward()
            optimizer.step()

        for _ in range(args.warmup):
            step()
        samples = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            samples.append(args.batch * args.steps / (time.perf_counter() - start))
        rates[m] = statistics.median(samples)
        print(f"M = {m}: {rates[m]:.1f} images/s", file=sys.stderr)
    rpc.shutdown()
    os.unlink(store.name)
    print(json.dumps(rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
