#!/usr/bin/env python3
"""netsharp_reference.py -- an independent float64 implementation of Net#
training, in numpy, for the exactness test one_step_test.py.

It is written from the language's semantics (docs/language.md
§8-§17) and from the checkpoint layout of docs/training.md,
never from netc's own kernels: it shares no code and no algorithm with
runtime/. It computes, in float64, the forward pass, the mean loss and the
gradient of every parameter of a network, and one plain SGD step
w -= lr · g, so that a netc checkpoint written after a step can be compared
value by value with it.

How it works:
  * A network is a list of Layer objects described in Python from its .net
    file (seed_network() is examples/mnist.net, lenet5_network() is
    examples/lenet5.net). Parameters are numpy arrays named and shaped as the
    checkpoint stores them (`<layer>/<source>/weights`, `<layer>/biases`).
  * Bundle geometry (InputShape, KernelShape, Stride, Padding, LowerPad,
    UpperPad; D7, D8) gives, per dimension, the kernel positions N_d and the
    source coordinate o_d of window cell 0 at position 0. From it each
    convolve/pool bundle builds an index table: for every destination node
    (map-major coordinates m_d·N_d + j_d, D9) the kernel row it uses
    (r = m·G + u, G kernels per map along the unshared dimensions) and, for
    every window cell in row-major KernelShape order, the source node it reads
    (or -1 for a padding cell). The forward and backward passes are gathers
    and scatters through that table; the same table drives max and mean
    pooling (dummy cells skipped, the max pool's gradient to the first
    largest cell).
  * Functions (§5.3, D6): sigmoid, tanh, rlinear and linear on hidden layers;
    the output is softmax with mean categorical cross-entropy (D16), whose
    gradient with respect to the logits is (p − onehot) / batch.
  * Besides each gradient, backward() also returns its "absolute" twin: the
    same sums taken over the absolute values of every factor (Σ|terms|). The
    test scales its float32 tolerance by it: float32 rounding of a sum is
    bounded by a multiple of eps32 · Σ|terms|, not of |Σ terms|.

Needs numpy (python3-numpy; scripts/setup.sh --test installs it).
"""

import numpy as np


# ---------------------------------------------------------------------------
# Geometry (docs/language.md §11.2-§11.3).
# ---------------------------------------------------------------------------

def row_major_strides(extent):
    strides = [1] * len(extent)
    for d in range(len(extent) - 2, -1, -1):
        strides[d] = strides[d + 1] * extent[d + 1]
    return strides


def grid(extent):
    """All multi-indices over `extent` in row-major order, as an int array [count, rank]."""
    if not extent:
        return np.zeros((1, 0), dtype=np.int64)
    axes = np.meshgrid(*[np.arange(e) for e in extent], indexing="ij")
    return np.stack([a.reshape(-1) for a in axes], axis=1).astype(np.int64)


class Geometry:
    """Per-dimension geometry of a convolve/pool bundle.

    count[d] = N_d, the kernel positions along d; offset[d] = o_d, the source
    coordinate of window cell 0 at position 0 (negative: padding cells).
    """

    def __init__(self, input_shape, kernel, stride=None, padding=None, lower=None, upper=None):
        rank = len(input_shape)
        self.input = list(input_shape)
        self.kernel = list(kernel)
        self.stride = list(stride) if stride is not None else [1] * rank
        if isinstance(padding, bool):  # a single bool applies to every dimension (D8)
            padding = [padding] * rank
        assert len(self.kernel) == rank and len(self.stride) == rank
        self.count, self.offset = [], []
        for d in range(rank):
            i, k, s = self.input[d], self.kernel[d], self.stride[d]
            assert 1 <= k <= i and 1 <= s <= k
            if padding is not None and padding[d]:
                # D8: N = (I-1)/S + 1; the first kernel's central cell (K-1)/2 sits on node 0.
                self.count.append((i - 1) // s + 1)
                self.offset.append(-((k - 1) // 2))
            elif lower is not None or upper is not None:
                low = lower[d] if lower is not None else 0
                high = upper[d] if upper is not None else 0
                assert 0 <= 2 * low < k and 0 <= 2 * high <= k
                self.count.append((i + low + high - k) // s + 1)
                self.offset.append(-low)
            else:
                # D7: N = (I-K)/S + 1; floor(r/2) of the r uncovered nodes left out at the low end.
                self.count.append((i - k) // s + 1)
                self.offset.append(((i - k) % s) // 2)

    def sources(self, positions):
        """Source node of every (position, window cell), -1 for padding: int array [positions, ΠK]."""
        cells = grid(self.kernel)                                   # [K, rank]
        coords = (np.array(self.offset)[None, None, :]
                  + positions[:, None, :] * np.array(self.stride)[None, None, :]
                  + cells[None, :, :])                              # [P, K, rank]
        inside = np.all((coords >= 0) & (coords < np.array(self.input)[None, None, :]), axis=2)
        flat = coords @ np.array(row_major_strides(self.input))
        return np.where(inside, flat, -1)


# ---------------------------------------------------------------------------
# Bundles and layers.
# ---------------------------------------------------------------------------

class All:
    """`from L all` (§6.1): weights [destination nodes, source nodes]."""

    def __init__(self, source):
        self.source = source


class Convolve:
    """`from L convolve { ... }` (§6.3, D4, D5, D9): weights [M·G, 1 + ΠK], bias first."""

    def __init__(self, source, geometry, map_count=1, sharing=True):
        self.source = source
        self.geometry = geometry
        rank = len(geometry.input)
        # D8: a single integer m is [m, 1, ..., 1]; a single bool applies to every dimension.
        self.maps = list(map_count) if isinstance(map_count, (list, tuple)) else [map_count] + [1] * (rank - 1)
        self.sharing = list(sharing) if isinstance(sharing, (list, tuple)) else [sharing] * rank
        g = geometry
        unshared = [d for d in range(rank) if not self.sharing[d]]
        self.kernels_per_map = int(np.prod([g.count[d] for d in unshared], dtype=np.int64))
        self.map_total = int(np.prod(self.maps, dtype=np.int64))
        self.rows = self.map_total * self.kernels_per_map
        self.window = int(np.prod(g.kernel, dtype=np.int64))

        # Every destination node, enumerated row-major over (M_d·N_d)_d; its
        # coordinate along d is m_d·N_d + j_d (map-major).
        out_extent = [self.maps[d] * g.count[d] for d in range(rank)]
        coords = grid(out_extent)                                   # [O, rank]
        counts = np.array(g.count)
        m = coords // counts[None, :]
        j = coords % counts[None, :]
        m_flat = m @ np.array(row_major_strides(self.maps), dtype=np.int64)
        if unshared:
            u = j[:, unshared] @ np.array(row_major_strides([g.count[d] for d in unshared]), dtype=np.int64)
        else:
            u = np.zeros(len(coords), dtype=np.int64)
        self.out_count = len(coords)
        self.row_of = m_flat * self.kernels_per_map + u             # [O]: r = m·G + u
        self.src = g.sources(j)                                     # [O, ΠK]

    def shape(self):
        return (self.rows, 1 + self.window)


class Pool:
    """`from L max pool` / `mean pool` (§6.4): no parameters; dummy cells skipped."""

    def __init__(self, source, geometry, kind):
        assert kind in ("max", "mean")
        self.source = source
        self.geometry = geometry
        self.kind = kind
        positions = grid(geometry.count)
        self.out_count = len(positions)
        self.src = geometry.sources(positions)                      # [O, ΠK]


class Layer:
    def __init__(self, name, shape, function=None, bundles=(), output=False):
        self.name = name
        self.shape = list(shape)
        self.nodes = int(np.prod(shape, dtype=np.int64))
        self.bundles = list(bundles)
        trainable = any(isinstance(b, (All, Convolve)) for b in self.bundles)
        if function is None:
            # D6: the output's default is the task's (multiclass: softmax);
            # a hidden layer with a trainable bundle: sigmoid; pool-only: linear.
            function = "softmax" if output else ("sigmoid" if trainable else "linear")
        self.function = function
        self.output = output
        self.has_bias = any(isinstance(b, All) for b in self.bundles)  # D5


class Network:
    """Layers in declaration (= dependency) order; the first is the single input."""

    def __init__(self, name, layers):
        self.name = name
        self.layers = layers
        self.by_name = {layer.name: layer for layer in layers}
        assert layers[-1].output and layers[-1].function == "softmax"
        # Parameter tensors in declaration order: each layer's bundles, then its biases.
        self.params = []  # (tensor name, shape, fan-in)
        for layer in layers:
            for bundle, prefix in zip(layer.bundles, bundle_names(layer)):
                if isinstance(bundle, All):
                    source = self.by_name[bundle.source]
                    self.params.append((f"{prefix}/weights", (layer.nodes, source.nodes), source.nodes))
                elif isinstance(bundle, Convolve):
                    assert bundle.out_count == layer.nodes, f"{layer.name}: {bundle.out_count} nodes"
                    self.params.append((f"{prefix}/weights", bundle.shape(), bundle.window))
                else:
                    assert bundle.out_count == layer.nodes, f"{layer.name}: {bundle.out_count} nodes"
            if layer.has_bias:
                fan_in = sum(self.by_name[b.source].nodes for b in layer.bundles if isinstance(b, All))
                self.params.append((f"{layer.name}/biases", (layer.nodes,), fan_in))

    def input_size(self):
        return self.layers[0].nodes


def bundle_names(layer):
    """`<layer>/<source>`, with `#1`, `#2` for later bundles from the same source."""
    seen, names = {}, []
    for bundle in layer.bundles:
        n = seen.get(bundle.source, 0)
        seen[bundle.source] = n + 1
        names.append(f"{layer.name}/{bundle.source}" + (f"#{n}" if n else ""))
    return names


# ---------------------------------------------------------------------------
# Forward, loss and backward (float64).
# ---------------------------------------------------------------------------

def _gather(x, src):
    """x[:, src] with -1 (padding) reading 0: [B, O, K]."""
    padded = np.concatenate([x, np.zeros((x.shape[0], 1))], axis=1)
    return padded[:, np.where(src < 0, x.shape[1], src)]


def _scatter(values, src, size):
    """The transpose of _gather: sums values [B, O, K] into [B, size], padding cells dropped."""
    batch = values.shape[0]
    index = np.where(src < 0, size, src)                            # padding -> a spare column
    flat = (np.arange(batch)[:, None, None] * (size + 1) + index[None, :, :]).reshape(-1)
    total = np.bincount(flat, weights=values.reshape(-1), minlength=batch * (size + 1))
    return total.reshape(batch, size + 1)[:, :size]


def _activate(function, z):
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    if function == "tanh":
        return np.tanh(z)
    if function == "rlinear":
        return np.maximum(z, 0.0)
    if function == "linear":
        return z.copy()
    if function == "softmax":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    raise ValueError(f"function {function!r} is not supported by the reference")


def _derivative(function, z, y):
    if function == "sigmoid":
        return y * (1.0 - y)
    if function == "tanh":
        return 1.0 - y * y
    if function == "rlinear":
        return (z > 0.0).astype(np.float64)
    if function == "linear":
        return np.ones_like(z)
    raise ValueError(f"function {function!r} has no derivative here")


def forward(network, params, x):
    """Every layer's pre-activation z and value y for inputs x [B, input nodes]."""
    z_of, y_of, argmax_of = {}, {}, {}
    for layer in network.layers:
        if not layer.bundles:
            y_of[layer.name] = x
            continue
        z = np.zeros((x.shape[0], layer.nodes))
        for bundle, prefix in zip(layer.bundles, bundle_names(layer)):
            src = y_of[bundle.source]
            if isinstance(bundle, All):
                z += src @ params[f"{prefix}/weights"].T
            elif isinstance(bundle, Convolve):
                w = params[f"{prefix}/weights"]
                rows = w[bundle.row_of]                             # [O, 1 + ΠK]
                z += rows[None, :, 0] + np.einsum("bok,ok->bo", _gather(src, bundle.src), rows[:, 1:])
            else:
                cells = _gather(src, bundle.src)
                real = (bundle.src >= 0)[None, :, :]
                if bundle.kind == "max":
                    masked = np.where(real, cells, -np.inf)
                    # The gradient goes to the argmax only (§12); on a tie, to the
                    # first largest real cell. Exact ties arise where windows read
                    # identical values (blank borders), whose gradients are equal.
                    pick = np.argmax(masked, axis=2)
                    argmax_of[(layer.name, prefix)] = pick
                    z += np.take_along_axis(masked, pick[:, :, None], axis=2)[:, :, 0]
                else:
                    z += np.where(real, cells, 0.0).sum(axis=2) / (bundle.src >= 0).sum(axis=1)[None, :]
        if layer.has_bias:
            z += params[f"{layer.name}/biases"][None, :]
        z_of[layer.name] = z
        y_of[layer.name] = _activate(layer.function, z)
    return z_of, y_of, argmax_of


def loss_and_gradients(network, params, x, labels):
    """Mean cross-entropy, the gradient of every parameter, and its absolute twin (Σ|terms|).

    x: [B, input nodes] float64 (already normalised); labels: [B] ints.
    """
    batch = x.shape[0]
    z_of, y_of, argmax_of = forward(network, params, x)
    out = network.layers[-1]
    p = y_of[out.name]
    onehot = np.zeros_like(p)
    onehot[np.arange(batch), labels] = 1.0
    loss = float(-np.mean(np.log(p[np.arange(batch), labels])))

    grads = {name: np.zeros(shape) for name, shape, _ in network.params}
    absg = {name: np.zeros(shape) for name, shape, _ in network.params}
    # dL/dz of the output: softmax fused with cross-entropy, mean over the batch (D16).
    dz_of = {out.name: (p - onehot) / batch}
    adz_of = {out.name: (p + onehot) / batch}  # |p| + |t|: the magnitude of the terms of p − t
    dy_of, ady_of = {}, {}
    for layer in reversed(network.layers):
        if not layer.bundles:
            continue
        if layer.name not in dz_of:
            if layer.name not in dy_of:
                continue  # does not lead to the output
            dz_of[layer.name] = dy_of[layer.name] * _derivative(layer.function, z_of[layer.name], y_of[layer.name])
            adz_of[layer.name] = ady_of[layer.name] * np.abs(
                _derivative(layer.function, z_of[layer.name], y_of[layer.name]))
        dz, adz = dz_of[layer.name], adz_of[layer.name]
        if layer.has_bias:
            grads[f"{layer.name}/biases"] += dz.sum(axis=0)
            absg[f"{layer.name}/biases"] += np.abs(dz).sum(axis=0)
        for bundle, prefix in zip(layer.bundles, bundle_names(layer)):
            src = y_of[bundle.source]
            source = network.by_name[bundle.source]
            if isinstance(bundle, All):
                w = params[f"{prefix}/weights"]
                grads[f"{prefix}/weights"] += dz.T @ src
                absg[f"{prefix}/weights"] += np.abs(dz).T @ np.abs(src)
                dx, adx = dz @ w, adz @ np.abs(w)
            elif isinstance(bundle, Convolve):
                w = params[f"{prefix}/weights"]
                cells = _gather(src, bundle.src)                    # [B, O, K]
                g = np.zeros(w.shape)
                ag = np.zeros(w.shape)
                np.add.at(g[:, 0], bundle.row_of, dz.sum(axis=0))
                np.add.at(ag[:, 0], bundle.row_of, np.abs(dz).sum(axis=0))
                np.add.at(g[:, 1:], bundle.row_of, np.einsum("bo,bok->ok", dz, cells))
                np.add.at(ag[:, 1:], bundle.row_of, np.einsum("bo,bok->ok", np.abs(dz), np.abs(cells)))
                grads[f"{prefix}/weights"] += g
                absg[f"{prefix}/weights"] += ag
                rows = w[bundle.row_of, 1:]                         # [O, K]
                dx = _scatter(dz[:, :, None] * rows[None], bundle.src, source.nodes)
                adx = _scatter(adz[:, :, None] * np.abs(rows)[None], bundle.src, source.nodes)
            else:
                real = bundle.src >= 0
                if bundle.kind == "max":
                    pick = argmax_of[(layer.name, prefix)]          # [B, O]
                    route = np.zeros((batch,) + bundle.src.shape)
                    np.put_along_axis(route, pick[:, :, None], 1.0, axis=2)
                else:
                    route = np.broadcast_to((real / real.sum(axis=1, keepdims=True))[None],
                                            (batch,) + bundle.src.shape)
                dx = _scatter(dz[:, :, None] * route, bundle.src, source.nodes)
                adx = _scatter(adz[:, :, None] * route, bundle.src, source.nodes)
            if source.bundles:
                dy_of[source.name] = dy_of.get(source.name, 0.0) + dx
                ady_of[source.name] = ady_of.get(source.name, 0.0) + adx
    return loss, grads, absg


def sgd_step(params, grads, lr):
    """Plain SGD (no momentum, no weight decay): w -= lr · g."""
    return {name: params[name] - lr * grads[name] for name in params}


# ---------------------------------------------------------------------------
# The networks, as their .net files declare them.
# ---------------------------------------------------------------------------

def seed_network():
    """examples/mnist.net (docs/language.md §15): 127,495 parameters."""
    return Network("mnist", [
        Layer("Pic", [784]),
        Layer("Conv1", [5, 13, 13], bundles=[
            Convolve("Pic", Geometry([28, 28], [4, 4], [2, 2]), map_count=5)]),
        Layer("Conv2", [50, 5, 5], bundles=[
            Convolve("Conv1", Geometry([5, 13, 13], [1, 5, 5], [1, 2, 2]), map_count=10,
                     sharing=[False, True, True])]),
        Layer("Hid3", [100], bundles=[All("Conv2")]),
        Layer("Digit", [10], bundles=[All("Hid3")], output=True),
    ])


def lenet5_network():
    """examples/lenet5.net: padding, multi-channel convolution, max pooling; 61,706 parameters."""
    return Network("lenet5", [
        Layer("Image", [28, 28]),
        Layer("Conv1", [6, 28, 28], "rlinear", bundles=[
            Convolve("Image", Geometry([28, 28], [5, 5], padding=True), map_count=6)]),
        Layer("Pool1", [6, 14, 14], bundles=[
            Pool("Conv1", Geometry([6, 28, 28], [1, 2, 2], [1, 2, 2]), "max")]),
        Layer("Conv2", [16, 10, 10], "rlinear", bundles=[
            Convolve("Pool1", Geometry([6, 14, 14], [6, 5, 5]), map_count=16)]),
        Layer("Pool2", [16, 5, 5], bundles=[
            Pool("Conv2", Geometry([16, 10, 10], [1, 2, 2], [1, 2, 2]), "max")]),
        Layer("Full3", [120], "rlinear", bundles=[All("Pool2")]),
        Layer("Full4", [84], "rlinear", bundles=[All("Full3")]),
        Layer("Digit", [10], bundles=[All("Full4")], output=True),
    ])


NETWORKS = {"mnist": (seed_network, "examples/mnist.net"), "lenet5": (lenet5_network, "examples/lenet5.net")}
