#!/usr/bin/env python3
"""aot_predict_test.py -- a library from `netc build` reproduces `netc predict`.

For one network (an example, or a network of the numeric tests' corpus,
tests/numeric/TestNetworks.h, named by its constant): trains it for one epoch
on random data (so the checkpoint holds real weights and a fitted min-max
normaliser), builds the library, compiles tests/aot/aot_main.c *as C* against
the shared library and against the static one, and runs every entry point on
random raw inputs. Checks, per output value, |library - predict| <= 1e-5 *
max(|predict|, 1e-3 * the sample's largest |output|, 1e-2 * the batch's
largest |output|, and for a regression 0.1): relative, except for values near
zero, whose rounding is that of the sums they come from (a regression's
output near 0 is the difference of terms near 1, so it is held to 1e-6
absolute); that the _normalized entry
point on inputs normalised here with the checkpoint's recorded values, the
_with_scratch forms, and PREFIX_infer called from 4 threads at once give the
same bits as PREFIX_infer; and that the static
library gives the same bits as the shared one.

Usage: aot_predict_test.py --netc NETC --cc CC --work DIR (--net FILE | --corpus NAME --corpus-file H)
                           [--input-size N]
"""
import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-5


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout}")
    return r.stdout


def corpus_network(header, name):
    text = open(header).read()
    if name.startswith("functions:"):  # functionsNetwork(output function, nodes)
        _, function, nodes = name.split(":")
        m = re.search(r'functionsNetwork\(.*?return fmt::format\(R"\((.*?)\)",', text, re.S)
        template = m.group(1)
        out = template.replace("{{", "\x00").replace("}}", "\x01")
        out = out.replace("{}", nodes, 1).replace("{}", function, 1)
        return out.replace("\x00", "{").replace("\x01", "}")
    m = re.search(r"inline const char \*" + re.escape(name) + r' = R"\((.*?)\)";', text, re.S)
    if not m:
        sys.exit(f"{name}: no such network in {header}")
    return m.group(1)


def checkpoint_normaliser(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return json.loads(header["__metadata__"]["normalizer"])


def floats(path):
    data = open(path, "rb").read()
    return np.frombuffer(data, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netc", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--work", required=True)
    ap.add_argument("--net")
    ap.add_argument("--corpus")
    ap.add_argument("--corpus-file")
    ap.add_argument("--input-size", type=int)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda *p: os.path.join(args.work, *p)
    net = args.net
    if args.corpus:
        net = w("net.net")
        open(net, "w").write(corpus_network(args.corpus_file, args.corpus))
    size = ["--input-size", str(args.input_size)] if args.input_size else []

    header = run([args.netc, "compile", net, "--emit=inference-plan"] + size).splitlines()[0]
    loss = re.search(r"loss=(\S+)", header).group(1)
    features = int(re.search(r"features=(\d+)", header).group(1))
    outputs = int(re.search(r"outputs=(\d+)", header).group(1))

    rng = random.Random(11)
    os.makedirs(w("data"))
    # The task the output layer allows: a regression has one output, a binary
    # task one or two; a linear, tanh or sigmoid layer of more is trained as classes.
    task = ("binary" if loss == "binary-cross-entropy" and outputs <= 2 else
            "regression" if loss == "squared-error" and outputs == 1 else "multiclass")
    rows = []
    for i in range(48):
        label = (str(i % outputs) if task == "multiclass" else str(i % 2) if task == "binary"
                 else f"{rng.uniform(-1, 1):.3f}")
        rows.append(",".join([label] + [str(rng.randint(0, 255)) for _ in range(features)]))
    open(w("data", "train.csv"), "w").write("\n".join(rows) + "\n")
    run([args.netc, "train", net, "--data", w("data"), "--epochs", "1", "--batch", "16", "--seed", "3",
         "--threads", "1", "--init", "xavier", "--task", task, "--out", w("run"), "--quiet"])
    ckpt = w("run", "last.safetensors")
    built = run([args.netc, "build", net, "--weights", ckpt, "-o", w("lib"), "--name", "aot"])
    print(built.strip())

    # The C program, compiled as C99, against the shared and the static library.
    defs = ['-DAOT_HEADER="aot.h"', "-DAOT_PREFIX=aot", "-DAOT_UPPER=AOT"]
    common = [args.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-x", "c",
              os.path.join(HERE, "aot_main.c"), "-x", "none", "-I", w("lib")] + defs
    run(common + ["-L", w("lib"), "-laot", "-lm", "-pthread", "-Wl,-rpath," + w("lib"), "-o", w("shared")])
    run(common + [w("lib", "libaot.a"), "-lm", "-pthread", "-o", w("static")])

    # Random raw inputs: 37 samples (two whole vectors of lanes and a remainder).
    samples = 37
    raw = np.array([rng.randint(0, 255) for _ in range(samples * features)], dtype=np.float32)
    raw.tofile(w("in.f32"))
    with open(w("in.csv"), "w") as f:
        for s in range(samples):
            f.write(",".join(str(int(v)) for v in raw[s * features:(s + 1) * features]) + "\n")
    predicted = json.loads(run([args.netc, "predict", net, "--weights", ckpt, w("in.csv"), "--format", "json",
                                "--threads", "1"]))
    expected = np.array([e["outputs"] for e in predicted], dtype=np.float64)
    assert expected.shape == (samples, outputs), expected.shape

    def library(program, mode, inputs):
        run([w(program), mode, inputs, w(f"out-{program}-{mode}.f32")])
        return floats(w(f"out-{program}-{mode}.f32")).reshape(samples, outputs)

    got = library("shared", "infer", w("in.f32"))
    floor = max(1e-2 * np.abs(expected).max(), 0.1 if task == "regression" else 0.0)
    scale = np.maximum(np.maximum(np.abs(expected), 1e-3 * np.abs(expected).max(axis=1, keepdims=True)), floor)
    error = np.abs(got.astype(np.float64) - expected) / scale
    worst = np.unravel_index(np.argmax(error), error.shape)
    print(f"{samples} samples x {outputs} outputs: worst relative difference {error.max():.3g} "
          f"(sample {worst[0]}, output {worst[1]}: library {got[worst]!r}, predict {expected[worst]!r})")
    failures = []
    if not error.max() <= TOLERANCE:
        failures.append(f"the library differs from netc predict by {error.max():.3g} > {TOLERANCE}")

    # The normaliser the checkpoint recorded, applied here as netc does: (x - offset) * scale in float32.
    norm = checkpoint_normaliser(ckpt)
    x = raw.reshape(samples, features)
    if norm["normalizer"] == "scale":
        x = x / np.float32(norm["divisor"])
    elif norm["normalizer"] != "none":
        x = (x - np.array(norm["offset"], dtype=np.float32)) * np.array(norm["scale"], dtype=np.float32)
    x.astype(np.float32).tofile(w("normalized.f32"))
    for program, mode, inputs in [("shared", "normalized", w("normalized.f32")), ("shared", "scratch", w("in.f32")),
                                  ("shared", "scratch-normalized", w("normalized.f32")),
                                  ("shared", "threads", w("in.f32")),
                                  ("static", "infer", w("in.f32"))]:
        other = library(program, mode, inputs)
        if not np.array_equal(other.view(np.uint32), got.view(np.uint32)):
            failures.append(f"{program} {mode}: not the same bits as shared infer "
                            f"(largest difference {np.abs(other - got).max():.3g})")
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))
    print("PASSED: the library reproduces netc predict; every entry point and the static library agree")


if __name__ == "__main__":
    main()
