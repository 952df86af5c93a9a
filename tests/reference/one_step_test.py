#!/usr/bin/env python3
"""one_step_test.py -- netc's training step against an independent float64
reference (netsharp_reference.py, numpy), value by value.

The test starts netc from fixed weights and compares what it trains with the
reference's exact computation:

  1. It writes formula weights for every tensor of the network's checkpoint:
     w[i] = a · sin(0.37 · i + c), i the flat index in the documented order
     (row-major over the tensor's shape), c the tensor's number in
     declaration order, and a = min(0.5, gain / sqrt(fan-in)) so that no
     sigmoid starts saturated (gain 2 for the sigmoid seed network, 1 for
     lenet5's rectified-linear layers, whose steps at lr 0.1 blow up with 2).
     They are rounded to float32 and written as a netc checkpoint
     (safetensors, written here in pure Python) whose metadata holds only
     what `--init-from` needs: "format": "netc-checkpoint" and the scale:255
     normalizer (docs/training.md, "The checkpoint layout").
  2. It writes a data folder with a few real digits of tests/fixtures/mnist-slice
     (raw IDX files), taken class by class (digit 0, 1, …, 9, 0, 1, …) so that
     every batch holds several classes, plus a 10-digit test set.
  3. It runs `netc train --init-from … --no-shuffle --optimizer sgd --lr 0.1
     --threads 1` for one epoch and reads OUT/last.safetensors and
     OUT/metrics.jsonl.
  4. The reference computes the same epoch in float64 from the same float32
     weights and the same float32 inputs (x / 255 is a float32 division, as
     the scale normalizer documents): forward pass, mean cross-entropy,
     backward pass, w -= lr · g per step. Every weight of every tensor must
     agree within the tolerance below, and so must the loss.

Cases (--case):
  one-step       8 digits, --batch 8: one step; also the loss before it
                 (metrics.jsonl's train_loss of epoch 1).
  partial-batch  7 digits, --batch 4: a 4-sample step, then a 3-sample step
                 whose gradient is the mean over 3 samples; also the
                 epoch's loss, the mean over its 7 samples.
  accumulate     64 digits, once with --batch 64 and once with --batch 32
                 --accumulate 2: both must give the same weights within 1e-6
                 (and the --batch 64 run must match the reference).

Tolerance. netc computes in float32 (eps32 = 2^-23 ≈ 1.19e-7). Rounding a
sum of terms t_k in float32 errs by a small multiple of eps32 · Σ|t_k|,
whatever the summation order, so the error of a gradient element scales with
its "absolute gradient" A = Σ|terms|, which the reference computes next to
each gradient (the same backward pass over |values|). Errors that reach an
element from elsewhere (rounded activations and deltas, and in a two-step
epoch the rounded weights of step 1) scale with the magnitudes of the whole
layer, so the tensor's largest A is added. A weight after the epoch must
satisfy

    |w_netc − w_ref| <= steps · ulp32(w) + lr · 2^-17 · (A + max over the tensor of A)

with A summed over the steps. The first term is the float32 rounding of the
stored weight after each step (w0 is exact: it is the float32 value written;
ulp32 at the larger of |w0| and |w_ref|); 2^-17 is 64·eps32. Observed on
both networks and all cases: at most 2.0·eps32 · lr · (A + max A) beyond the
first term (lenet5 one-step; 0.8 on the seed network), so the margin is 32x,
enough for another summation order (blocking, another BLAS kernel). A real
error changes an update by O(1) of itself while this tolerance is about
1e-4 of a typical update: each of these bugs, put into the reference on
purpose one at a time, fails every case of the network it affects, by 10x to
2·10^4x the tolerance:
a missing 1/batch; the last partial batch divided by the full batch size
(fails partial-batch only, as intended); a transposed kernel; the kernel's
bias taken as the last column; the layer biases left out; window cells
shifted by one (unpadded and padded); kernel rows position-major (j·M + m);
destinations position-major; and even a sigmoid derivative off by 0.1%.
The loss must agree within 1e-6 relative (~8 eps32; observed below 1e-8).

Usage: one_step_test.py --netc NETC --case CASE --work DIR [--network mnist|lenet5]
                        [--source SOURCE_DIR] [--keep]
Exits 0 with a summary line, 1 with a located message on the first failure.
"""

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("one_step_test: FAIL: numpy is missing (python3-numpy); run scripts/setup.sh, which installs it",
          file=sys.stderr)
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netsharp_reference as reference  # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)  # 2^-23
GRADIENT_RTOL = 2.0 ** -17       # 64·eps32 on Σ|terms| (see the header)
LOSS_RTOL = 1e-6
ACCUMULATE_ATOL = 1e-6           # --batch 64 against --batch 32 --accumulate 2
LEARNING_RATE = "0.1"
DIVISOR = 255.0


class TestFailure(Exception):
    pass


# ---------------------------------------------------------------------------
# Data: IDX files (raw) from the committed slice.
# ---------------------------------------------------------------------------

def read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    (magic,) = struct.unpack_from(">I", data, 0)
    if magic == 0x00000803:
        count, rows, cols = struct.unpack_from(">III", data, 4)
        return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows * cols), (rows, cols)
    if magic == 0x00000801:
        (count,) = struct.unpack_from(">I", data, 4)
        return np.frombuffer(data, np.uint8, count, 8), None
    raise TestFailure(f"{path}: not an IDX file of images or labels (magic {magic:#010x})")


def write_idx(folder, prefix, images, labels, rows, cols):
    with open(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, len(images), rows, cols))
        f.write(np.ascontiguousarray(images, dtype=np.uint8).tobytes())
    with open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x00000801, len(labels)))
        f.write(np.ascontiguousarray(labels, dtype=np.uint8).tobytes())


def class_by_class(labels, count):
    """Indices of `count` samples: the first of each class 0..9, then the second of each, and so on."""
    by_class = [np.flatnonzero(labels == c) for c in range(10)]
    chosen = []
    for i in range(count):
        c = i % 10
        if i // 10 >= len(by_class[c]):
            raise TestFailure(f"the fixture has too few samples of digit {c}")
        chosen.append(int(by_class[c][i // 10]))
    return chosen


def make_data(source_dir, folder, count):
    """A data folder with `count` training digits and a 10-digit test set; returns (x, labels) of the training set."""
    fixture = os.path.join(source_dir, "tests", "fixtures", "mnist-slice")
    images, (rows, cols) = read_idx(os.path.join(fixture, "train-images-idx3-ubyte"))
    labels, _ = read_idx(os.path.join(fixture, "train-labels-idx1-ubyte"))
    test_images, _ = read_idx(os.path.join(fixture, "t10k-images-idx3-ubyte"))
    test_labels, _ = read_idx(os.path.join(fixture, "t10k-labels-idx1-ubyte"))
    os.makedirs(folder)
    chosen = class_by_class(labels, count)
    write_idx(folder, "train", images[chosen], labels[chosen], rows, cols)
    test = class_by_class(test_labels, 10)
    write_idx(folder, "t10k", test_images[test], test_labels[test], rows, cols)
    # The scale:255 normalizer: x / 255 as a float32 division (docs/training.md).
    x = (images[chosen].astype(np.float32) / np.float32(DIVISOR)).astype(np.float64)
    return x, labels[chosen].astype(np.int64)


# ---------------------------------------------------------------------------
# Checkpoints: safetensors, as docs/training.md "The checkpoint layout" describes.
# ---------------------------------------------------------------------------

# a = min(0.5, GAIN / sqrt(fan-in)): sigmoid layers need a larger gain than
# rectified-linear ones, whose first steps at lr 0.1 blow up with gain 2 (the
# loss of lenet5's second step of 4 digits jumps from 2.3 to 235).
GAIN = {"mnist": 2.0, "lenet5": 1.0}


def formula_weights(network):
    """w[i] = a·sin(0.37·i + c) per tensor, rounded to float32 (kept as float64: exact)."""
    params = {}
    for number, (name, shape, fan_in) in enumerate(network.params):
        a = min(0.5, GAIN[network.name] / math.sqrt(fan_in))
        i = np.arange(int(np.prod(shape)), dtype=np.float64)
        values = (a * np.sin(0.37 * i + number)).astype(np.float32)
        params[name] = values.astype(np.float64).reshape(shape)
    return params


def write_checkpoint(path, params, input_size):
    normalizer = json.dumps({"divisor": DIVISOR, "features": input_size, "normalizer": "scale"},
                            separators=(",", ":"))
    header = {"__metadata__": {"format": "netc-checkpoint", "normalizer": normalizer}}
    blobs, offset = [], 0
    for name in sorted(params):
        blob = params[name].astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(params[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_checkpoint(path):
    """(metadata, {name: float64 array}) of a safetensors file of F32 tensors."""
    with open(path, "rb") as f:
        image = f.read()
    (length,) = struct.unpack_from("<Q", image, 0)
    header = json.loads(image[8:8 + length].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise TestFailure(f"{path}: tensor {name} has dtype {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        values = np.frombuffer(image, "<f4", (end - begin) // 4, 8 + length + begin)
        tensors[name] = values.astype(np.float64).reshape(entry["shape"])
    return metadata, tensors


# ---------------------------------------------------------------------------
# netc.
# ---------------------------------------------------------------------------

def train(netc, net_path, data, init, out, batch, extra=()):
    command = [netc, "train", net_path, "--data", data, "--init-from", init, "--epochs", "1",
               "--batch", str(batch), "--no-shuffle", "--optimizer", "sgd", "--lr", LEARNING_RATE,
               "--momentum", "0", "--threads", "1", "--seed", "1", "--progress", "none",
               "--out", out, "--overwrite", *extra]
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise TestFailure(f"cannot run {netc}: {error}") from error
    if result.returncode != 0:
        raise TestFailure(f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    metadata, tensors = read_checkpoint(os.path.join(out, "last.safetensors"))
    with open(os.path.join(out, "metrics.jsonl")) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    epochs = [line for line in lines if line.get("event") == "epoch"]
    if len(epochs) != 1 or epochs[0].get("epoch") != 1:
        raise TestFailure(f"{out}/metrics.jsonl: expected one epoch line for epoch 1, found {epochs}")
    return metadata, tensors, epochs[0]


def learning_rate():
    """netc trains with the float32 value of --lr (metrics.jsonl prints 0.10000000149011612)."""
    return float(np.float32(float(LEARNING_RATE)))


# ---------------------------------------------------------------------------
# Comparisons.
# ---------------------------------------------------------------------------

def check_tensor_set(network, tensors, where):
    expected = {name: tuple(shape) for name, shape, _ in network.params}
    found = {name: tuple(values.shape) for name, values in tensors.items()}
    if expected != found:
        raise TestFailure(f"{where}: the tensors differ from the network's parameters "
                          f"(SGD without momentum has no optimizer state):\n  expected {sorted(expected.items())}\n"
                          f"  found    {sorted(found.items())}")


def ulp32(values):
    """The float32 unit in the last place at each magnitude."""
    return np.spacing(np.abs(values).astype(np.float32)).astype(np.float64)


def compare_weights(network, label, ours, theirs, initial, absolute_terms, lr, steps):
    """Every weight within the tolerance of the header.

    Returns (max abs error, max error of an update relative to the largest
    update of its tensor, max error / tolerance).
    """
    worst_abs, worst_rel, worst_ratio = 0.0, 0.0, 0.0
    for name, shape, _ in network.params:
        want, got = ours[name], theirs[name]
        terms = absolute_terms[name]
        tolerance = (steps * ulp32(np.maximum(np.abs(want), np.abs(initial[name])))
                     + lr * GRADIENT_RTOL * (terms + terms.max()))
        error = np.abs(got - want)
        ratio = error / tolerance
        if not np.all(np.isfinite(got)) or np.any(error > tolerance):
            flat = int(np.argmax(np.where(np.isfinite(ratio), ratio, np.inf)))
            index = np.unravel_index(flat, shape)
            bad = int(np.count_nonzero(~(error <= tolerance)))
            update_ref = want[index] - initial[name][index]
            update_netc = got[index] - initial[name][index]
            raise TestFailure(
                f"{label}: tensor {name} {list(index)} (flat {flat}; {bad} of {error.size} values out of tolerance): "
                f"netc {got[index]:.9g}, reference {want[index]:.9g}, difference {error[index]:.3g} > tolerance "
                f"{tolerance[index]:.3g} (steps·ulp32(w) + lr·2^-17·(Σ|terms| + the tensor's largest Σ|terms|) "
                f"with "
                f"{steps} step(s), Σ|terms| {terms[index]:.3g}, largest {terms.max():.3g}); initial "
                f"{initial[name][index]:.9g}, "
                f"update netc {update_netc:.6g} vs reference {update_ref:.6g}")
        worst_abs = max(worst_abs, float(error.max()))
        worst_rel = max(worst_rel, float(error.max() / np.abs(want - initial[name]).max()))
        worst_ratio = max(worst_ratio, float(ratio.max()))
    return worst_abs, worst_rel, worst_ratio


def reference_epoch(network, params, x, labels, batch, lr):
    """The reference's epoch in file order: (weights after it, Σ over steps of the absolute gradients, losses)."""
    absolute_terms = {name: np.zeros(shape) for name, shape, _ in network.params}
    losses = []
    for start in range(0, len(labels), batch):
        loss, grads, absolute = reference.loss_and_gradients(
            network, params, x[start:start + batch], labels[start:start + batch])
        losses.append(loss)
        for name in absolute_terms:
            absolute_terms[name] += absolute[name]
        params = reference.sgd_step(params, grads, lr)
    return params, absolute_terms, losses


def run_case(args, network, net_path):
    work = args.work
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    lr = learning_rate()
    initial = formula_weights(network)
    init = os.path.join(work, "init.safetensors")
    write_checkpoint(init, initial, network.input_size())

    count, batch = {"one-step": (8, 8), "partial-batch": (7, 4), "accumulate": (64, 64)}[args.case]
    data = os.path.join(work, "data")
    x, labels = make_data(args.source, data, count)
    metadata, tensors, epoch = train(args.netc, net_path, data, init, os.path.join(work, "run"), batch)
    where = f"{network.name} {args.case}"
    check_tensor_set(network, tensors, where)
    if metadata.get("normalizer") is None or json.loads(metadata["normalizer"]).get("normalizer") != "scale":
        raise TestFailure(f"{where}: the run did not keep the scale normalizer of the initial checkpoint: "
                          f"{metadata.get('normalizer')!r}")

    expected, absolute_terms, losses = reference_epoch(network, initial, x, labels, batch, lr)
    worst_abs, worst_rel, worst_ratio = compare_weights(network, where, expected, tensors, initial, absolute_terms,
                                                        lr, len(losses))
    summary = (f"{where}: {len(losses)} step(s), weights max abs error {worst_abs:.3g}, max update rel error "
               f"{worst_rel:.3g}, max error/tolerance {worst_ratio:.3g}")

    if args.case in ("one-step", "partial-batch"):
        # metrics.jsonl's train_loss is the mean loss over the epoch's samples:
        # for one step, the loss before the update; for steps of 4 and 3
        # samples, (4·loss1 + 3·loss2) / 7, each loss taken before its step.
        sizes = [min(batch, count - start) for start in range(0, count, batch)]
        ref_loss = sum(size * loss for size, loss in zip(sizes, losses)) / count
        netc_loss = float(epoch["train_loss"])
        loss_error = abs(netc_loss - ref_loss) / abs(ref_loss)
        if not loss_error <= LOSS_RTOL:
            raise TestFailure(f"{where}: train_loss of epoch 1 (mean over {count} samples in steps of {sizes}): "
                              f"netc {netc_loss:.9g}, reference {ref_loss:.9g}, relative difference "
                              f"{loss_error:.3g} > {LOSS_RTOL:g}")
        summary += f"; loss {ref_loss:.7f} rel error {loss_error:.3g}"

    if args.case == "accumulate":
        print(f"one_step_test: {summary} (--batch 64 against the reference)", flush=True)
        _, accumulated, _ = train(args.netc, net_path, data, init, os.path.join(work, "run-accumulate"), 32,
                                  ["--accumulate", "2"])
        check_tensor_set(network, accumulated, f"{where} (--batch 32 --accumulate 2)")
        worst = 0.0
        for name, shape, _ in network.params:
            error = np.abs(accumulated[name] - tensors[name])
            if not np.all(error <= ACCUMULATE_ATOL):
                flat = int(np.argmax(np.where(np.isnan(error), np.inf, error)))
                index = np.unravel_index(flat, shape)
                raise TestFailure(
                    f"{where}: tensor {name} {list(index)} (flat {flat}): --batch 32 --accumulate 2 gives "
                    f"{accumulated[name][index]:.9g}, --batch 64 gives {tensors[name][index]:.9g}, difference "
                    f"{error[index]:.3g} > {ACCUMULATE_ATOL:g}")
            worst = max(worst, float(error.max()))
        summary += f"; --accumulate 2 vs --batch 64 max abs difference {worst:.3g}"
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--netc", required=True, help="the netc binary to test")
    parser.add_argument("--case", required=True, choices=["one-step", "partial-batch", "accumulate"])
    parser.add_argument("--work", required=True, help="scratch folder (emptied first)")
    parser.add_argument("--network", default="mnist", choices=sorted(reference.NETWORKS))
    parser.add_argument("--source", default=os.path.normpath(os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")), help="the source tree (default: two folders up)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder after a success")
    args = parser.parse_args()

    make_network, net_file = reference.NETWORKS[args.network]
    network = make_network()
    try:
        summary = run_case(args, network, os.path.join(args.source, net_file))
    except TestFailure as failure:
        print(f"one_step_test: FAIL: {failure}", file=sys.stderr)
        return 1
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    print(f"one_step_test: OK: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
