#!/usr/bin/env python3
"""checkpoint_layout_test.py -- an independent reader of netc checkpoints.

This test checks the section "The checkpoint layout" of docs/training.md by
doing what an outside tool would do with it. It trains two networks with the
`netc` binary it is given, then reads each run's last.safetensors with its own
safetensors parser, and runs the network's forward pass in pure Python from
what the layout documents: tensor names and shapes, `all` weights as
[destination, source], `where` weights by destination then source, a
convolution kernel's row (bias first, then the window cells row-major over
KernelShape), rows in map-major order (row = map · groups + unshared
position), tied tensors stored once, and the normalizer recorded in the
metadata. Its class probabilities for a few test digits must match
`netc predict --format json` to within 1e-4, so a wrong statement in the
layout (rows j·10 + m instead of m·5 + j, say) makes the test fail.

The networks:
  * examples/mnist.net, the seed network (ordinary and grouped convolutions,
    full bundles), trained with the command the documentation quotes;
  * a network written here, "zoo", with every kind of trainable bundle and
    kernel: ordinary convolutions (a 2-D MapCount, padding, an uncovered
    remainder), a grouped convolution with UpperPad, a convolution with the
    maps folded into the batch (twice, its weights tied by `share`), a 3-D
    convolution with LowerPad, a locally connected convolution with two
    unshared dimensions, `where` bundles, two bundles from one source (the
    `#1` name), mean and max pooling and response normalization, trained with
    Adam (its optimizer state names are checked) and `--normalize scale:255`.

Usage: checkpoint_layout_test.py NETC SOURCE_DIR SCRATCH_DIR
Standard library only (no numpy); it runs in a few seconds.
"""

import json
import math
import os
import shutil
import struct
import subprocess
import sys

TOLERANCE = 1e-4
# Test digits (indices into the slice's t10k images): a few different digits.
TEST_IMAGES = [0, 23, 47, 71, 96]


# ---------------------------------------------------------------------------
# The checkpoint file: safetensors, as the layout section describes it.
# ---------------------------------------------------------------------------

class Checkpoint:
    """A parsed checkpoint: metadata (str -> str) and F32 tensors."""

    def __init__(self, path):
        with open(path, "rb") as f:
            image = f.read()
        (header_length,) = struct.unpack_from("<Q", image, 0)
        if header_length % 8 != 0:
            raise AssertionError(f"{path}: header length {header_length} is not a multiple of 8")
        header = json.loads(image[8:8 + header_length].decode("utf-8"))
        data_start = 8 + header_length
        self.metadata = header.pop("__metadata__", {})
        self.shapes = {}
        self.tensors = {}
        covered = 0
        for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
            if entry["dtype"] != "F32":
                raise AssertionError(f"{path}: tensor {name} has dtype {entry['dtype']}, expected F32")
            begin, end = entry["data_offsets"]
            count = 1
            for dim in entry["shape"]:
                count *= dim
            if begin != covered or end - begin != 4 * count:
                raise AssertionError(f"{path}: tensor {name} has data_offsets {entry['data_offsets']}")
            covered = end
            self.shapes[name] = list(entry["shape"])
            self.tensors[name] = list(struct.unpack_from(f"<{count}f", image, data_start + begin))
        if data_start + covered != len(image):
            raise AssertionError(f"{path}: {len(image) - data_start - covered} bytes after the last tensor")

    def tensor(self, name, shape):
        """The values of tensor `name`, after checking its documented shape."""
        if name not in self.shapes:
            raise AssertionError(f"the checkpoint has no tensor {name!r}; it has {sorted(self.shapes)}")
        if self.shapes[name] != list(shape):
            raise AssertionError(f"tensor {name!r} has shape {self.shapes[name]}, expected {list(shape)}")
        return self.tensors[name]


# ---------------------------------------------------------------------------
# Networks, described as the .net files say (docs/language.md §8-§15).
# ---------------------------------------------------------------------------

def product(values):
    result = 1
    for value in values:
        result *= value
    return result


def row_major(index, extent):
    flat = 0
    for i, e in zip(index, extent):
        flat = flat * e + i
    return flat


def all_indices(extent):
    """Every multi-index over `extent`, row-major (last index fastest)."""
    if not extent:
        yield ()
        return
    for head in range(extent[0]):
        for tail in all_indices(extent[1:]):
            yield (head,) + tail


class Geometry:
    """The per-dimension geometry of a convolve/pool/norm bundle (D7, D8)."""

    def __init__(self, input_shape, kernel, stride=None, padding=None, lower=None, upper=None):
        rank = len(input_shape)
        self.input = list(input_shape)
        self.kernel = list(kernel)
        self.stride = list(stride or [1] * rank)
        self.count, self.offset = [], []
        for d in range(rank):
            size, k, s = self.input[d], self.kernel[d], self.stride[d]
            if padding and padding[d]:
                self.count.append((size - 1) // s + 1)
                self.offset.append(-((k - 1) // 2))
            elif (lower and lower[d]) or (upper and upper[d]):
                low, high = (lower or [0] * rank)[d], (upper or [0] * rank)[d]
                self.count.append((size + low + high - k) // s + 1)
                self.offset.append(-low)
            else:
                self.count.append((size - k) // s + 1)
                self.offset.append(((size - k) % s) // 2)

    def source(self, position, cell):
        """The source node of window cell `cell` at kernel position `position`, or None (dummy)."""
        coordinates = []
        for d in range(len(self.input)):
            c = self.offset[d] + position[d] * self.stride[d] + cell[d]
            if c < 0 or c >= self.input[d]:
                return None
            coordinates.append(c)
        return row_major(coordinates, self.input)

    def windows(self):
        """(position, [source node or None per cell, cells row-major over KernelShape]) per position."""
        for position in all_indices(self.count):
            yield position, [self.source(position, cell) for cell in all_indices(self.kernel)]


class All:
    def __init__(self, source):
        self.source = source


class Where:
    def __init__(self, source, predicate):
        self.source = source
        self.predicate = predicate  # predicate(s, d) on coordinate tuples


class Convolve:
    def __init__(self, source, geometry, map_count, sharing=None):
        self.source = source
        self.geometry = geometry
        rank = len(geometry.input)
        self.maps = list(map_count) if isinstance(map_count, list) else [map_count] + [1] * (rank - 1)
        self.sharing = list(sharing or [True] * rank)


class Pool:
    def __init__(self, source, geometry, kind):
        self.source = source
        self.geometry = geometry
        self.kind = kind  # "max" or "mean"


class Norm:
    def __init__(self, source, geometry, alpha, beta, offset=1.0, average_over_full_kernel=True):
        self.source = source
        self.geometry = geometry
        self.alpha, self.beta, self.offset = alpha, beta, offset
        self.average_over_full_kernel = average_over_full_kernel


class Layer:
    def __init__(self, name, shape, function=None, bundles=()):
        self.name = name
        self.shape = list(shape)
        self.nodes = product(shape)
        self.bundles = list(bundles)
        trainable = any(isinstance(b, (All, Where, Convolve)) for b in self.bundles)
        if function is None:  # D6 (the output layers below are given their function)
            function = "sigmoid" if trainable else "linear"
        self.function = function
        self.has_bias = any(isinstance(b, (All, Where)) for b in self.bundles)  # D5


# ---------------------------------------------------------------------------
# The forward pass, reading parameters as the checkpoint layout says.
# ---------------------------------------------------------------------------

def bundle_names(layer):
    """`<layer>/<source>` with `#1`, `#2` for later bundles from the same source."""
    seen = {}
    names = []
    for bundle in layer.bundles:
        count = seen.get(bundle.source, 0)
        seen[bundle.source] = count + 1
        names.append(f"{layer.name}/{bundle.source}" + (f"#{count}" if count else ""))
    return names


def activate(function, values):
    if function == "sigmoid":
        return [1.0 / (1.0 + math.exp(-v)) if v > -700 else 0.0 for v in values]
    if function == "tanh":
        return [math.tanh(v) for v in values]
    if function == "rlinear":
        return [max(0.0, v) for v in values]
    if function == "linear":
        return list(values)
    if function == "softmax":
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        total = sum(exps)
        return [e / total for e in exps]
    raise ValueError(function)


class LayoutReader:
    """Reads a network's parameters from a checkpoint and runs it."""

    def __init__(self, layers, checkpoint, tied=None):
        self.layers = {layer.name: layer for layer in layers}
        self.order = [layer.name for layer in layers]
        self.checkpoint = checkpoint
        self.tied = tied or {}  # tensor name -> the name it is stored under (the first owner)
        self.used = set()

    def parameter(self, name, shape):
        stored = self.tied.get(name, name)
        self.used.add(stored)
        return self.checkpoint.tensor(stored, shape)

    def run(self, features):
        values = {}
        for name in self.order:
            layer = self.layers[name]
            if not layer.bundles:
                values[name] = features  # one input layer: the whole feature vector
                continue
            total = [0.0] * layer.nodes
            for bundle, bundle_name in zip(layer.bundles, bundle_names(layer)):
                source = self.layers[bundle.source]
                contribution = self.bundle(bundle, bundle_name, source, layer, values[bundle.source])
                total = [t + c for t, c in zip(total, contribution)]
            if layer.has_bias:
                biases = self.parameter(f"{name}/biases", [layer.nodes])
                total = [t + b for t, b in zip(total, biases)]
            values[name] = activate(layer.function, total)
        return values[self.order[-1]]

    def bundle(self, bundle, name, source, layer, x):
        if isinstance(bundle, All):
            # [destination nodes, source nodes]: y[d] = sum over s of W[d, s] x[s].
            w = self.parameter(f"{name}/weights", [layer.nodes, source.nodes])
            n = source.nodes
            return [sum(w[d * n + s] * x[s] for s in range(n)) for d in range(layer.nodes)]
        if isinstance(bundle, Where):
            # Edges by destination (row-major), then by source (row-major).
            edges = [(d, s) for d, dc in enumerate(all_indices(layer.shape))
                     for s, sc in enumerate(all_indices(source.shape)) if bundle.predicate(sc, dc)]
            w = self.parameter(f"{name}/weights", [len(edges)])
            y = [0.0] * layer.nodes
            for e, (d, s) in enumerate(edges):
                y[d] += w[e] * x[s]
            return y
        if isinstance(bundle, Convolve):
            return self.convolve(bundle, name, layer, x)
        return self.window(bundle, layer, x)

    def convolve(self, bundle, name, layer, x):
        g = bundle.geometry
        rank = len(g.input)
        unshared = [d for d in range(rank) if not bundle.sharing[d]]
        groups = product(g.count[d] for d in unshared)
        maps = product(bundle.maps)
        window = product(g.kernel)
        w = self.parameter(f"{name}/weights", [maps * groups, 1 + window])
        out_extent = [bundle.maps[d] * g.count[d] for d in range(rank)]
        y = [0.0] * layer.nodes
        for position, cells in g.windows():
            u = row_major([position[d] for d in unshared], [g.count[d] for d in unshared])
            for m_flat, m in enumerate(all_indices(bundle.maps)):
                row = kernel_row(m_flat, u, maps, groups)
                kernel = w[row * (1 + window):(row + 1) * (1 + window)]
                total = kernel[0]  # the bias comes first
                for k, s in enumerate(cells):
                    if s is not None:
                        total += kernel[1 + k] * x[s]
                # Map-major along every dimension: coordinate m[d]·N[d] + j[d].
                out = row_major([m[d] * g.count[d] + position[d] for d in range(rank)], out_extent)
                y[out] = total
        return y

    @staticmethod
    def window(bundle, layer, x):
        g = bundle.geometry
        y = []
        for position, cells in g.windows():
            real = [x[s] for s in cells if s is not None]
            if isinstance(bundle, Pool):
                y.append(max(real) if bundle.kind == "max" else sum(real) / len(real))
                continue
            centre = g.source(position, [(k - 1) // 2 for k in g.kernel])
            n = len(cells) if bundle.average_over_full_kernel else len(real)
            scale = bundle.offset + bundle.alpha / n * sum(v * v for v in real)
            y.append(0.0 if centre is None else x[centre] * scale ** -bundle.beta)
        return y


def kernel_row(map_index, unshared_position, maps, groups):
    """The documented row of kernel (map, unshared position): map-major."""
    return map_index * groups + unshared_position


# ---------------------------------------------------------------------------
# The two networks.
# ---------------------------------------------------------------------------

def seed_network():
    """examples/mnist.net."""
    return [
        Layer("Pic", [784]),
        Layer("Conv1", [5, 13, 13], bundles=[
            Convolve("Pic", Geometry([28, 28], [4, 4], [2, 2]), 5)]),
        Layer("Conv2", [50, 5, 5], bundles=[
            Convolve("Conv1", Geometry([5, 13, 13], [1, 5, 5], [1, 2, 2]), 10, [False, True, True])]),
        Layer("Hid3", [100], bundles=[All("Conv2")]),
        Layer("Digit", [10], "softmax", bundles=[All("Hid3")]),
    ]


ZOO_NET = """\
// checkpoint_layout_test.py: every trainable bundle and kernel kind on 28x28 digits.
input Pic [28, 28];
hidden Quad [8, 10] from Pic convolve {
  InputShape = [28, 28]; KernelShape = [7, 5]; Stride = [6, 5]; MapCount = [2, 2]; }
hidden A [3, 14, 14] rlinear from Pic convolve {
  InputShape = [28, 28]; KernelShape = [3, 3]; Stride = [2, 2]; Padding = true; MapCount = 3; }
hidden W [4, 28] tanh from Pic where (s, d) => s[1] == d[1] && s[0] % 7 == d[0];
hidden P [3, 7, 7] from A mean pool {
  InputShape = [3, 14, 14]; KernelShape = [1, 2, 2]; Stride = [1, 2, 2]; }
hidden G [6, 3, 3] from P convolve {
  InputShape = [3, 7, 7]; KernelShape = [1, 4, 4]; Stride = [1, 2, 2]; UpperPad = [0, 1, 1];
  Sharing = [false, true, true]; MapCount = 2; }
hidden B [6, 3, 3] tanh from P convolve {
  InputShape = [3, 7, 7]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2]; MapCount = 2; }
hidden B2 [6, 3, 3] from P convolve {
  InputShape = [3, 7, 7]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2]; MapCount = 2; }
hidden C3 [4, 3, 3] from P convolve {
  InputShape = [3, 7, 7]; KernelShape = [2, 3, 3]; Stride = [1, 2, 2]; LowerPad = [0, 1, 1]; MapCount = 2; }
hidden L [2, 3, 3] from P convolve {
  InputShape = [3, 7, 7]; KernelShape = [3, 3, 3]; Stride = [1, 2, 2]; Sharing = [true, false, false];
  MapCount = 2; }
hidden N [3, 7, 7] from P response norm {
  InputShape = [3, 7, 7]; KernelShape = [3, 1, 1]; Padding = true; Alpha = 0.5; Beta = 0.75;
  AvgOverFullKernel = false; }
hidden M [3, 4, 4] from N max pool {
  InputShape = [3, 7, 7]; KernelShape = [1, 2, 2]; Stride = [1, 2, 2]; Padding = [false, true, true]; }
hidden H [30] {
  from Quad all; from W all; from G all; from B all; from B2 all; from C3 all; from L all;
  from M all; from M where (s, d) => s[0] == d % 3;
}
output Out [10] from H all;
share { P => B, P => B2 }
"""


def zoo_network():
    """ZOO_NET, as Python."""
    return [
        Layer("Pic", [28, 28]),
        Layer("Quad", [8, 10], bundles=[
            Convolve("Pic", Geometry([28, 28], [7, 5], [6, 5]), [2, 2])]),
        Layer("A", [3, 14, 14], "rlinear", bundles=[
            Convolve("Pic", Geometry([28, 28], [3, 3], [2, 2], padding=[True, True]), 3)]),
        Layer("W", [4, 28], "tanh", bundles=[
            Where("Pic", lambda s, d: s[1] == d[1] and s[0] % 7 == d[0])]),
        Layer("P", [3, 7, 7], bundles=[
            Pool("A", Geometry([3, 14, 14], [1, 2, 2], [1, 2, 2]), "mean")]),
        Layer("G", [6, 3, 3], bundles=[
            Convolve("P", Geometry([3, 7, 7], [1, 4, 4], [1, 2, 2], upper=[0, 1, 1]), 2,
                     [False, True, True])]),
        Layer("B", [6, 3, 3], "tanh", bundles=[
            Convolve("P", Geometry([3, 7, 7], [1, 3, 3], [1, 2, 2]), 2)]),
        Layer("B2", [6, 3, 3], bundles=[
            Convolve("P", Geometry([3, 7, 7], [1, 3, 3], [1, 2, 2]), 2)]),
        Layer("C3", [4, 3, 3], bundles=[
            Convolve("P", Geometry([3, 7, 7], [2, 3, 3], [1, 2, 2], lower=[0, 1, 1]), 2)]),
        Layer("L", [2, 3, 3], bundles=[
            Convolve("P", Geometry([3, 7, 7], [3, 3, 3], [1, 2, 2]), 2, [True, False, False])]),
        Layer("N", [3, 7, 7], bundles=[
            Norm("P", Geometry([3, 7, 7], [3, 1, 1], padding=[True, True, True]), 0.5, 0.75,
                 average_over_full_kernel=False)]),
        Layer("M", [3, 4, 4], bundles=[
            Pool("N", Geometry([3, 7, 7], [1, 2, 2], [1, 2, 2], padding=[False, True, True]), "max")]),
        Layer("H", [30], bundles=[
            All("Quad"), All("W"), All("G"), All("B"), All("B2"), All("C3"), All("L"), All("M"),
            Where("M", lambda s, d: s[0] == d[0] % 3)]),
        Layer("Out", [10], "softmax", bundles=[All("H")]),
    ]


ZOO_TIED = {"B2/P/weights": "B/P/weights"}  # share { P => B, P => B2 }: stored under the first owner


# ---------------------------------------------------------------------------
# Metadata and data.
# ---------------------------------------------------------------------------

def normalize(metadata, pixels):
    """The normalizer recorded in the metadata, applied to raw features."""
    spec = json.loads(metadata["normalizer"])
    kind = spec["normalizer"]
    if kind == "none":
        return list(pixels)
    if spec["features"] != len(pixels):
        raise AssertionError(f"the normalizer is for {spec['features']} features, the input has {len(pixels)}")
    if kind == "scale":
        return [p / spec["divisor"] for p in pixels]
    return [(p - o) * s for p, o, s in zip(pixels, spec["offset"], spec["scale"])]


def read_idx_images(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, count, rows, cols = struct.unpack_from(">IIII", data, 0)
    assert magic == 0x00000803, f"{path}: magic {magic:#x}"
    size = rows * cols
    return rows, cols, [list(data[16 + i * size:16 + (i + 1) * size]) for i in range(count)]


def write_idx_images(path, rows, cols, images):
    with open(path, "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, len(images), rows, cols))
        for image in images:
            f.write(bytes(image))


def check_metadata(metadata, expected, where):
    for key, value in expected.items():
        if metadata.get(key) != value:
            raise AssertionError(f"{where}: metadata {key!r} is {metadata.get(key)!r}, expected {value!r}")


# ---------------------------------------------------------------------------
# The test.
# ---------------------------------------------------------------------------

def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited with {result.returncode}:\n"
                             f"{result.stdout}{result.stderr}")
    return result.stdout


def check_network(netc, source_dir, scratch, name, net_path, layers, tied, train_flags, expected_metadata,
                  expected_states, digits):
    out = os.path.join(scratch, name)
    run([netc, "train", net_path, "--data", os.path.join(source_dir, "tests/fixtures/mnist-slice"),
         "--epochs", "1", "--batch", "50", "--init", "xavier", "--seed", "1", "--threads", "1",
         "--out", out, "--quiet"] + train_flags)
    checkpoint_path = os.path.join(out, "last.safetensors")
    checkpoint = Checkpoint(checkpoint_path)
    check_metadata(checkpoint.metadata, expected_metadata, checkpoint_path)

    reader = LayoutReader(layers, checkpoint, tied)
    predictions = json.loads(run([netc, "predict", net_path, "--weights", checkpoint_path, digits,
                                  "--format", "json", "--threads", "1"]))
    _, _, images = read_idx_images(digits)
    if len(predictions) != len(images):
        raise AssertionError(f"netc predict gave {len(predictions)} results for {len(images)} images")
    worst = 0.0
    for image, prediction in zip(images, predictions):
        ours = reader.run(normalize(checkpoint.metadata, image))
        theirs = prediction["outputs"]
        difference = max(abs(a - b) for a, b in zip(ours, theirs))
        worst = max(worst, difference)
        if len(ours) != len(theirs) or difference > TOLERANCE:
            raise AssertionError(
                f"{name}: image {prediction['index']}: the documented layout gives\n  "
                + " ".join(f"{v:.6f}" for v in ours) + "\nbut netc predict gives\n  "
                + " ".join(f"{v:.6f}" for v in theirs) + f"\n(largest difference {difference:.3g})")

    # Every tensor is accounted for: the parameters the layout names, and
    # the optimizer's state for each of them under the documented names.
    expected = set(reader.used)
    for parameter in reader.used:
        for state in expected_states:
            expected.add(f"{parameter}/{state}")
            if checkpoint.shapes.get(f"{parameter}/{state}") != checkpoint.shapes[parameter]:
                raise AssertionError(f"{name}: optimizer state {parameter}/{state} is missing or has "
                                     "another shape")
    if set(checkpoint.shapes) != expected:
        raise AssertionError(f"{name}: the checkpoint's tensors differ from the documented ones: "
                             f"extra {sorted(set(checkpoint.shapes) - expected)}, "
                             f"missing {sorted(expected - set(checkpoint.shapes))}")
    print(f"{name}: {len(images)} images, {len(checkpoint.shapes)} tensors, "
          f"largest difference {worst:.2g}")


def main(argv):
    if len(argv) != 4:
        print("usage: checkpoint_layout_test.py NETC SOURCE_DIR SCRATCH_DIR", file=sys.stderr)
        return 2
    netc, source_dir, scratch = argv[1], argv[2], argv[3]
    if os.path.isdir(scratch):
        shutil.rmtree(scratch)
    os.makedirs(scratch)

    rows, cols, images = read_idx_images(
        os.path.join(source_dir, "tests/fixtures/mnist-slice/t10k-images-idx3-ubyte"))
    digits = os.path.join(scratch, "digits-idx3-ubyte")
    write_idx_images(digits, rows, cols, [images[i] for i in TEST_IMAGES])

    common = {"format": "netc-checkpoint", "task": "multiclass", "classes": "10", "input_size": "784",
              "input_shape": "[28,28]", "epoch": "1", "step": "10"}
    check_network(netc, source_dir, scratch, "seed", os.path.join(source_dir, "examples/mnist.net"),
                  seed_network(), {}, [], dict(common, network="mnist", optimizer="sgd"), [], digits)

    zoo_path = os.path.join(scratch, "zoo.net")
    with open(zoo_path, "w") as f:
        f.write(ZOO_NET)
    check_network(netc, source_dir, scratch, "zoo", zoo_path, zoo_network(), ZOO_TIED,
                  ["--optimizer", "adam", "--lr", "0.01", "--normalize", "scale:255"],
                  dict(common, network="zoo", optimizer="adam"), ["exp_avg", "exp_avg_sq"], digits)
    print("checkpoint layout: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
