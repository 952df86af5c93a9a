#!/usr/bin/env python3
"""Generate large Net# networks for the `netc check` performance benchmark.

What it is for: bench/check_bench.py times `netc check` on networks far larger
than anything a person writes, to show that checking grows linearly with the
size of the network. This script writes those networks into an output folder:

  chain-1000.net, chain-3000.net, chain-10000.net
      An input, a chain of N hidden layers and an output (N = 1,000 / 3,000 /
      10,000 by default; --sizes changes the list). Every hidden layer keeps the
      shape [C, W, W] = [4, 8, 8] (256 nodes) so any bundle kind can follow any
      other. The layers cycle through eight patterns: full (`all`), multi-channel
      convolution with Padding, max pool, grouped convolution with
      LowerPad/UpperPad, mean pool declared as the flat shape [256], response
      norm, a two-bundle layer (`all` from the previous layer plus a strided
      convolution from the one before it) and a locally-connected convolution
      (one unshared spatial dimension). Shapes alternate between const names and
      literals so const resolution is exercised too.
  conv-1000.net
      1,000 convolution layers in a chain (1,000 convolve bundles), cycling
      through four convolution geometries (multi-channel, grouped, strided
      along the map dimension, locally connected).

Every generated file is valid: `netc check` exits 0 with no diagnostics
(check_bench.py verifies that before timing; `--verify NETC` here does the same).

Usage:
  python3 bench/gen_networks.py OUT_DIR [--sizes 1000,3000,10000] [--conv 1000]
                                [--verify build/tools/netc/netc]

Only the Python 3 standard library is used. Importable: generate(out_dir, ...)
returns one NetworkInfo per written file.
"""

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass

C, W = 4, 8  # every hidden layer is [C, W, W]
NODES = C * W * W

DEFAULT_SIZES = (1000, 3000, 10000)
DEFAULT_CONV = 1000


@dataclass
class NetworkInfo:
    """One generated file: where it is and how big it is."""

    name: str  # e.g. "chain-10000"
    path: str
    layers: int  # every layer, input and output included
    bundles: int  # every connection bundle
    convolve_bundles: int


def _shape(i):
    """Alternate between const names and literal numbers for the [C, W, W] shape."""
    return "[C, W, W]" if i % 2 == 0 else f"[{C}, {W}, {W}]"


# Bundle bodies; each maps [C, W, W] to [C, W, W].
CONV_FULL = (  # K0 = I0: ordinary multi-channel convolution, padded spatially
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [{C}, 3, 3]; Stride = [1, 1, 1];\n"
    f"  Padding = [false, true, true]; MapCount = {C};"
)
CONV_GROUPED = (  # K0 = 1, dim 0 unshared: grouped convolution, explicit pads
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [1, 3, 3]; Stride = [1, 1, 1];\n"
    "  LowerPad = [0, 1, 1]; UpperPad = [0, 1, 1]; Sharing = [false, true, true];"
)
CONV_STRIDED = (  # stride 2 over the maps, two maps per position: (4-2)/2+1 = 2, x2 = 4
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [2, 3, 3]; Stride = [2, 1, 1];\n"
    "  Padding = [false, true, true]; MapCount = [2, 1, 1];"
)
CONV_LOCAL = (  # an unshared spatial dimension: locally connected
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [{C}, 3, 3]; Stride = [1, 1, 1];\n"
    f"  Padding = [false, true, true]; Sharing = [true, false, true]; MapCount = {C};"
)
MAX_POOL = (
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [1, 3, 3]; Stride = [1, 1, 1];\n"
    "  Padding = [false, true, true];"
)
MEAN_POOL = (
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [1, 2, 2]; Stride = [1, 1, 1];\n"
    "  Padding = true;"
)
RESPONSE_NORM = (
    f"InputShape = [{C}, {W}, {W}]; KernelShape = [1, 3, 3]; Padding = [false, true, true];\n"
    "  Alpha = 0.0001; Beta = 0.75;"
)


def _chain_layer(i, kind):
    """Text of hidden layer H{i} (reading H{i-1}, and H{i-2} for kind 6).

    Returns (text, bundle count, convolve bundle count)."""
    prev = f"H{i - 1}" if i > 1 else "In"
    s = _shape(i)
    if kind == 0:
        return f"hidden H{i} {s} from {prev} all;\n", 1, 0
    if kind == 1:
        return f"hidden H{i} {s} rlinear from {prev} convolve {{\n  {CONV_FULL} }}\n", 1, 1
    if kind == 2:
        return f"hidden H{i} {s} from {prev} max pool {{\n  {MAX_POOL} }}\n", 1, 0
    if kind == 3:
        return f"hidden H{i} {s} tanh from {prev} convolve {{\n  {CONV_GROUPED} }}\n", 1, 1
    if kind == 4:  # declared flat: the count must match, the rank may differ (D9)
        return f"hidden H{i} [{NODES}] from {prev} mean pool {{\n  {MEAN_POOL} }}\n", 1, 0
    if kind == 5:
        return f"hidden H{i} {s} from {prev} response norm {{\n  {RESPONSE_NORM} }}\n", 1, 0
    if kind == 6:  # two bundles from two different sources (same source would warn)
        assert i > 2
        return (
            f"hidden H{i} {s} {{\n  from {prev} all;\n"
            f"  from H{i - 2} convolve {{ {CONV_STRIDED} }}\n}}\n",
            2,
            1,
        )
    if kind == 7:
        return f"hidden H{i} {s} srlinear from {prev} convolve {{\n  {CONV_LOCAL} }}\n", 1, 1
    raise ValueError(kind)


def _header(title):
    return (
        f"// {title}\n"
        "// Generated by bench/gen_networks.py for the `netc check` benchmark; do not edit.\n"
        f"const {{ C = {C}; W = {W}; }}\n"
        f"input In [C, W, W];\n"
    )


def chain_text(n):
    """A chain of n hidden layers cycling through eight bundle patterns.

    Returns (text, layers, bundles, convolve bundles)."""
    parts = [_header(f"A chain of {n} hidden layers mixing all/convolve/pool/norm bundles.")]
    bundles = conv = 0
    for i in range(1, n + 1):
        # Layer 1 reads the input with `all`; pattern 6 needs two predecessors.
        kind = 0 if i == 1 else (i - 1) % 8
        text, b, c = _chain_layer(i, kind)
        parts.append(text)
        bundles += b
        conv += c
    parts.append(f"output Out [10] from H{n} all;\n")
    return "".join(parts), n + 2, bundles + 1, conv


def conv_text(n):
    """A chain of n convolution layers (n convolve bundles), four geometries in turn.

    Returns (text, layers, bundles, convolve bundles)."""
    bodies = [
        ("rlinear", CONV_FULL),
        ("tanh", CONV_GROUPED),
        ("", CONV_STRIDED),
        ("srlinear", CONV_LOCAL),
    ]
    parts = [_header(f"{n} convolution layers in a chain ({n} convolve bundles).")]
    for i in range(1, n + 1):
        prev = f"H{i - 1}" if i > 1 else "In"
        fn, body = bodies[(i - 1) % len(bodies)]
        fn = f" {fn}" if fn else ""
        parts.append(f"hidden H{i} {_shape(i)}{fn} from {prev} convolve {{\n  {body} }}\n")
    parts.append(f"output Out [10] from H{n} all;\n")
    return "".join(parts), n + 2, n + 1, n


def generate(out_dir, sizes=DEFAULT_SIZES, conv=DEFAULT_CONV):
    """Write the benchmark networks into out_dir; return a list of NetworkInfo."""
    os.makedirs(out_dir, exist_ok=True)
    infos = []
    jobs = [(f"chain-{n}", chain_text, n) for n in sizes]
    if conv:
        jobs.append((f"conv-{conv}", conv_text, conv))
    for name, fn, n in jobs:
        text, layers, bundles, conv_bundles = fn(n)
        path = os.path.join(out_dir, name + ".net")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        infos.append(NetworkInfo(name, path, layers, bundles, conv_bundles))
    return infos


def verify(netc, infos):
    """Run `netc check` on each file; return a list of problems (empty when all are clean).

    Clean means exit status 0 and nothing printed (no errors, no warnings)."""
    problems = []
    for info in infos:
        p = subprocess.run(
            [netc, "check", "--color", "never", info.path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out = (p.stdout + p.stderr).strip()
        if p.returncode != 0 or out:
            problems.append(f"{info.path}: exit {p.returncode}\n{out[:600]}")
    return problems


def _parse_sizes(text):
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="folder to write the .net files into")
    ap.add_argument("--sizes", type=_parse_sizes, default=DEFAULT_SIZES,
                    help="comma-separated chain lengths (default 1000,3000,10000)")
    ap.add_argument("--conv", type=int, default=DEFAULT_CONV,
                    help="convolution layers in conv-N.net (0: none; default 1000)")
    ap.add_argument("--verify", metavar="NETC",
                    help="after writing, run NETC check on each file and fail unless all are clean")
    args = ap.parse_args(argv)
    infos = generate(args.out_dir, args.sizes, args.conv)
    for info in infos:
        print(f"{info.path}: {info.layers} layers, {info.bundles} bundles "
              f"({info.convolve_bundles} convolve)")
    if args.verify:
        problems = verify(args.verify, infos)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        print(f"all {len(infos)} files pass `netc check` with no diagnostics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
