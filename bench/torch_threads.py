"""torch_threads.py -- the thread environment the PyTorch side of the benchmarks needs before `import torch`
(bench/torch_reference.py, bench/ddp_reference.py).

PyTorch's GEMMs (the full layers) go to Debian's OpenBLAS, which keeps its own thread pool (one thread per
core by default) that torch.set_num_threads does not resize. The pool is sized when the library loads, so the
environment must say how many threads before torch is imported; processes started later (DDP's ranks)
inherit it.
"""

import argparse
import os


def set_thread_environment(argv):
    """Sets OPENBLAS_NUM_THREADS and OMP_NUM_THREADS from the --threads of `argv` (default 1)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    threads = pre.parse_known_args(argv)[0].threads
    os.environ["OPENBLAS_NUM_THREADS"] = str(max(1, threads))
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"]
