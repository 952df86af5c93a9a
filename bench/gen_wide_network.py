#!/usr/bin/env python3
"""Generate a Net# network too big for one GPU: a wide, deep fully connected chain.

What it is for: docs/distributed.md, "A network too big for one GPU: partition
and estimate", partitions and estimates (on paper, with `netc estimate` and the
built-in h100 cost table) a network whose weights and Adam state do not fit in
one H100's 80 GB. This script writes that network; its output with the
defaults is committed as bench/wide-16b.net, so the doc's commands need no
generator:

  python3 bench/gen_wide_network.py bench/wide-16b.net

The network: an input of --inputs features (1,024), --layers hidden layers of
--width nodes each (40 x 20,000, rlinear), each fully connected to the one
before, and a softmax output of --classes nodes (1,000). Every hidden layer
after the first holds width x width weights (20,000 x 20,000 = 4e8) plus
width biases. With the defaults:

  parameters  1,024 x 20,000 + 20,000            (input -> H1)
            + 39 x (20,000 x 20,000 + 20,000)    (H1 -> H2 ... H39 -> H40)
            + 20,000 x 1,000 + 1,000             (H40 -> output)
            = 15,641,281,000  (about 1.56e10)

Adam's training memory is 4 bytes x (parameters + gradients + 2 moment
slots) = 16 bytes per parameter: 250.3 GB (233.1 GiB), before activations.
The script prints both figures (and, with --verify NETC, runs `netc check`
on the file it wrote).

Usage:
  python3 bench/gen_wide_network.py OUT.net [--inputs 1024] [--layers 40]
          [--width 20000] [--classes 1000] [--verify build/tools/netc/netc]

Only the Python 3 standard library is used.
"""

import argparse
import subprocess
import sys

ADAM_BYTES_PER_PARAM = 4 * 4  # float32 weights, gradients and Adam's two moments


def parameter_count(inputs, layers, width, classes):
    """Trainable parameters: the weights and biases of every fully connected layer."""
    count = inputs * width + width  # input -> H1
    count += (layers - 1) * (width * width + width)  # H(i) -> H(i+1)
    count += width * classes + classes  # H(layers) -> output
    return count


def network_text(inputs, layers, width, classes):
    params = parameter_count(inputs, layers, width, classes)
    lines = [
        f"// A wide, deep MLP too big for one GPU: {inputs} features -> {layers} hidden layers of "
        f"{width:,} nodes -> {classes:,} classes.",
        f"// {params:,} parameters ({params:.3g}); with Adam, 16 bytes each = "
        f"{params * ADAM_BYTES_PER_PARAM / 1e9:.1f} GB before activations.",
        f"// Written by bench/gen_wide_network.py --inputs {inputs} --layers {layers} "
        f"--width {width} --classes {classes}.",
        "// Used by docs/distributed.md, \"A network too big for one GPU: partition and estimate\".",
        f"const W = {width};",
        f"input Features [{inputs}];",
    ]
    previous = "Features"
    for i in range(1, layers + 1):
        lines.append(f"hidden H{i} [W] rlinear from {previous} all;")
        previous = f"H{i}"
    lines.append(f"output Class [{classes}] softmax from {previous} all;")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the .net file to write")
    parser.add_argument("--inputs", type=int, default=1024, help="input features (1024)")
    parser.add_argument("--layers", type=int, default=40, help="hidden layers (40)")
    parser.add_argument("--width", type=int, default=20000, help="nodes per hidden layer (20000)")
    parser.add_argument("--classes", type=int, default=1000, help="output classes (1000)")
    parser.add_argument("--verify", metavar="NETC", help="run `NETC check` on the written file")
    args = parser.parse_args()
    if min(args.inputs, args.layers, args.width, args.classes) < 1:
        parser.error("every size must be at least 1")

    with open(args.out, "w", encoding="utf-8") as f:
        f.write(network_text(args.inputs, args.layers, args.width, args.classes))

    params = parameter_count(args.inputs, args.layers, args.width, args.classes)
    adam = params * ADAM_BYTES_PER_PARAM
    print(f"wrote {args.out}: {args.inputs} -> {args.layers} x {args.width:,} -> {args.classes:,}, "
          f"{args.layers + 2} layers")
    print(f"parameters: {params:,} ({params:.3g})")
    print(f"Adam training memory (weights, gradients, 2 moments; 16 bytes/parameter): "
          f"{adam / 1e9:.1f} GB ({adam / 2**30:.1f} GiB), before activations")

    if args.verify:
        result = subprocess.run([args.verify, "check", args.out], capture_output=True, text=True)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        if result.returncode != 0:
            print(f"netc check refused {args.out} (exit {result.returncode})", file=sys.stderr)
            return 1
        print(f"netc check: {args.out} is valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
