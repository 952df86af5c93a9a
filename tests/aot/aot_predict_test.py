#!/usr/bin/env python3
"""aot_predict_test.py -- a library from `netc build` reproduces `netc predict`.

For one network (an example, or a network of the numeric tests' corpus,
tests/numeric/TestNetworks.h, named by its constant): trains it for one epoch
on random data (so the checkpoint holds real weights and a fitted min-max
normaliser), builds the library, compiles tests/aot/aot_main.c *as C* against
the shared library and against the static one, and runs every entry point on
random raw inputs. Checks, per output value, |library - predict| <= tol *
max(|predict|, 1e-3 * the sample's largest |output|, 1e-2 * the batch's
largest |output|, for a regression 0.1, and the sum of the magnitudes of
the terms the output node adds: exact, from a float64 forward pass, where
every layer is `all` bundles (output_terms), else bounded where the output
layer reads only bounded layers): relative, except for values near zero,
whose rounding is that of the sums they come from; tol is
derived from the network's depth and fan-in (rounding_scale), at least 1e-5;
that the _normalized entry
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


def safetensors(path):
    """Every tensor of a safetensors file, by name, as float64 arrays."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=np.float32).astype(np.float64).reshape(info["shape"])
    return tensors


U32 = 2.0 ** -24  # float32's unit roundoff
BOUNDED = {"tanh", "sigmoid", "softmax"}  # functions whose values lie in [-1, 1]


def rounding_scale(shown, tensors):
    """How far two float32 evaluations of the network may drift apart, from
    the computation itself: (per output node, the tolerance's scale; the
    relative tolerance).

    Float32 rounding of a sum is bounded by a multiple of u * sum(|terms|),
    not of |sum|: an output that is the small difference of large terms keeps
    the terms' absolute error. So where the output layer's inputs are bounded
    (every bundle `all` from a tanh, sigmoid or softmax layer, |h| <= 1), the
    scale of output o is |b_o| + sum_j |W_oj|, an upper bound of its terms;
    elsewhere None (the caller keeps its own scale). The relative tolerance is
    the probabilistic bound of summation error (Higham and Mary, 2019:
    lambda * sqrt(n) * u, lambda = 4 here) for the largest fan-in n, taken once
    for each of the network's D layers and for each of the two evaluations,
    never below 1e-5."""
    layers = {layer["name"]: layer for layer in shown["layers"]}
    output = next(layer for layer in shown["layers"] if layer["kind"] == "output")
    depth = max(layer["depth"] for layer in shown["layers"])
    fan_in = max((layer["flops"] / layer["nodes"] / 2 for layer in shown["layers"] if layer["kind"] != "input"),
                 default=1)
    tolerance = max(TOLERANCE, 2 * depth * 4 * np.sqrt(max(fan_in, 1)) * U32)
    terms = np.abs(tensors.get(output["name"] + "/biases", np.zeros(output["nodes"])))
    for bundle in output["bundles"]:
        weights = tensors.get(f"{output['name']}/{bundle['from']}/weights")
        source = layers.get(bundle["from"])
        if bundle["kind"] != "all" or weights is None or source is None or source["function"] not in BOUNDED:
            return None, tolerance
        terms = terms + np.abs(weights).sum(axis=1)
    return terms, tolerance


# The layer functions of a float64 forward pass (runtime/core/ActivationMath.h's formulas).
FUNCTIONS = {
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "tanh": np.tanh,
    "linear": lambda z: z,
    "rlinear": lambda z: np.maximum(z, 0),
    "brlinear": lambda z: np.clip(z, 0, 1),
    "srlinear": lambda z: np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))),
    "square": lambda z: z * z,
    "sqrt": lambda z: np.sqrt(np.maximum(z, 0)),
    "abs": np.abs,
    "softmax": lambda z: np.exp(z - z.max(axis=1, keepdims=True)) / np.exp(z - z.max(axis=1, keepdims=True)).sum(
        axis=1, keepdims=True),
}


def output_terms(shown, tensors, x):
    """Per sample and output node, |b_o| + sum_j |W_oj| |h_j|: the magnitudes of the terms the
    output layer's sum adds, which float rounding scales with, from a float64 forward pass of the
    normalised inputs `x` (samples x features). None unless the network has one input layer and
    every other layer is made of `all` bundles and has one of FUNCTIONS."""
    values = {}
    inputs = [layer for layer in shown["layers"] if layer["kind"] == "input"]
    if len(inputs) != 1 or inputs[0]["nodes"] != x.shape[1]:
        return None
    for layer in shown["layers"]:  # declaration order: every source before its readers
        name = layer["name"]
        if layer["kind"] == "input":
            values[name] = x.astype(np.float64)
            continue
        if layer.get("function") not in FUNCTIONS or any(b["kind"] != "all" for b in layer["bundles"]):
            return None
        bias = tensors.get(name + "/biases", np.zeros(layer["nodes"]))
        z = np.tile(bias, (x.shape[0], 1))
        terms = np.tile(np.abs(bias), (x.shape[0], 1))
        for bundle in layer["bundles"]:
            weights, source = tensors.get(f"{name}/{bundle['from']}/weights"), values.get(bundle["from"])
            if weights is None or source is None or weights.shape != (layer["nodes"], source.shape[1]):
                return None
            z = z + source @ weights.T
            terms = terms + np.abs(source) @ np.abs(weights).T
        if layer["kind"] == "output":
            return terms
        values[name] = FUNCTIONS[layer["function"]](z)
    return None


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
    # The normaliser the checkpoint recorded, applied here as netc does: (x - offset) * scale in float32.
    norm = checkpoint_normaliser(ckpt)
    x = raw.reshape(samples, features)
    if norm["normalizer"] == "scale":
        x = x / np.float32(norm["divisor"])
    elif norm["normalizer"] != "none":
        x = (x - np.array(norm["offset"], dtype=np.float32)) * np.array(norm["scale"], dtype=np.float32)
    floor = max(1e-2 * np.abs(expected).max(), 0.1 if task == "regression" else 0.0)
    scale = np.maximum(np.maximum(np.abs(expected), 1e-3 * np.abs(expected).max(axis=1, keepdims=True)), floor)
    shown = json.loads(run([args.netc, "show", net, "--format", "json"] + size))
    tensors = safetensors(ckpt)
    terms, tolerance = rounding_scale(shown, tensors)
    exact = output_terms(shown, tensors, x)
    # A softmax output p_i moves by at most the largest change of any logit (|dp_i/dz_k| <= 1/2
    # summed over k <= 1): its scale is the largest logit's terms; other functions' slopes are <= 1.
    if exact is not None:
        scale = np.maximum(scale, exact.max(axis=1, keepdims=True) if loss == "cross-entropy" else exact)
    elif terms is not None:
        scale = np.maximum(scale, terms.max() if loss == "cross-entropy" else terms[np.newaxis, :])
    error = np.abs(got.astype(np.float64) - expected) / scale
    worst = np.unravel_index(np.argmax(error), error.shape)
    print(f"{samples} samples x {outputs} outputs: worst relative difference {error.max():.3g} "
          f"(sample {worst[0]}, output {worst[1]}: library {got[worst]!r}, predict {expected[worst]!r}); "
          f"tolerance {tolerance:.3g}{' of the terms' if terms is not None else ''}")
    failures = []
    if not error.max() <= tolerance:
        failures.append(f"the library differs from netc predict by {error.max():.3g} > {tolerance:.3g}")

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
