// ElementBodies.h -- the CUDA backend's element-wise and per-row kernels,
// each written once as a body: a small struct of pointers and sizes whose
// call operator computes one element (or one row) and is callable from host
// and device code. runtime/cuda/CudaLauncher.cuh runs a body as a CUDA
// kernel, one thread per element; HostLauncher.h runs the same body as a
// loop, which is how CI checks every body against the reference kernels
// without a GPU (tests/numeric/DeviceKernelParityTest.cpp; the gather:
// DataOnDeviceTest.cpp). Buffers are sample-major (sample b's node i at
// b * nodes + i), as cuBLAS and cuDNN read them. Here: input slices, bias, the output functions with their
// gradients (softmax per row), the bias gradient, and the fused bias +
// output function, the row permutation between cuDNN's channel order
// and Net#'s, and the gather of a batch from a data set held on the device.
#pragma once

#include "runtime/core/ActivationMath.h"
#include "runtime/core/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace netc::runtime::cuda {

/// out = value, or out += value for an accumulating op.
NETC_HOST_DEVICE inline void storeValue(float &out, float value, bool accumulate) {
  out = accumulate ? out + value : value;
}

/// slice-input, element i of [batch × width]: columns [offset, offset + width) of the features.
struct SliceBody {
  const float *features;
  float *out;
  int64_t width, total, offset;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / width, j = i % width;
    out[i] = features[b * total + offset + j];
  }
};

/// concat-nodes, one part: element i of the part [batch × width] into
/// columns [offset, offset + width) of the layer [batch × total].
struct PlaceBody {
  const float *part;
  float *out;
  int64_t width, total, offset;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / width, j = i % width;
    out[b * total + offset + j] = part[i];
  }
};

/// add-bias, element i of [batch × nodes]: y += bias per node.
struct AddBiasBody {
  const float *bias;
  float *y;
  int64_t nodes;
  NETC_HOST_DEVICE void operator()(int64_t i) const { y[i] += bias[i % nodes]; }
};

/// activate (not softmax), element i: y = f(x).
struct ActivateBody {
  ir::Activation function;
  const float *x;
  float *y;
  NETC_HOST_DEVICE void operator()(int64_t i) const { y[i] = applyFunction<float>(function, x[i]); }
};

/// add-bias then activate on the same values (not softmax), element i: the
/// pre-activation gets its bias (the backward pass reads it) and the output
/// its function, in one pass over memory.
struct BiasActivateBody {
  ir::Activation function;
  const float *bias;
  float *pre, *y;
  int64_t nodes;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const float value = pre[i] + bias[i % nodes];
    pre[i] = value;
    y[i] = applyFunction<float>(function, value);
  }
};

/// activate-grad (not softmax), element i: dx (+)= dy · f'(x) at y = f(x).
struct ActivateGradBody {
  ir::Activation function;
  const float *dy, *y, *x;
  float *dx;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    storeValue(dx[i], dy[i] * functionDerivative<float>(function, x[i], y[i]), accumulate);
  }
};

/// activate with softmax, row b: y = exp(x − max) / Σ exp(x − max).
struct SoftmaxRowBody {
  const float *x;
  float *y;
  int64_t nodes;
  NETC_HOST_DEVICE void operator()(int64_t b) const {
    const float *xb = x + b * nodes;
    float *yb = y + b * nodes;
    float top = xb[0];
    for (int64_t i = 1; i < nodes; ++i)
      top = xb[i] > top ? xb[i] : top;
    float sum = 0;
    for (int64_t i = 0; i < nodes; ++i)
      sum += std::exp(xb[i] - top);
    for (int64_t i = 0; i < nodes; ++i)
      yb[i] = std::exp(xb[i] - top) / sum;
  }
};

/// activate-grad with softmax, row b: dx (+)= y ⊙ (dy − ⟨dy, y⟩).
struct SoftmaxGradRowBody {
  const float *dy, *y;
  float *dx;
  int64_t nodes;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t b) const {
    const int64_t row = b * nodes;
    float dot = 0;
    for (int64_t i = 0; i < nodes; ++i)
      dot += dy[row + i] * y[row + i];
    for (int64_t i = 0; i < nodes; ++i)
      storeValue(dx[row + i], y[row + i] * (dy[row + i] - dot), accumulate);
  }
};

/// How a sum over the batch is split for more threads (OpRunner.h's
/// runBatchReduction): index i of a reduction body is chunk i / elements of
/// `perChunk` samples and output element i % elements. With one chunk the
/// body writes the op's output; with several, each writes its partial sum at
/// out[i], and ChunkSumBody adds the chunks in order.
struct BatchChunks {
  int64_t batch, perChunk, elements;
  NETC_HOST_DEVICE int64_t element(int64_t i) const { return i % elements; }
  NETC_HOST_DEVICE int64_t first(int64_t i) const { return i / elements * perChunk; }
  NETC_HOST_DEVICE int64_t last(int64_t i) const {
    const int64_t end = first(i) + perChunk;
    return end < batch ? end : batch;
  }
};

/// Element e of a chunked reduction: out[e] (+)= Σ over the chunks, in order, of partial[c · elements + e].
struct ChunkSumBody {
  const float *partial;
  float *out;
  int64_t elements, chunks;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t e) const {
    float sum = 0;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partial[c * elements + e];
    storeValue(out[e], sum, accumulate);
  }
};

/// bias-grad, node e of its chunk (BatchChunks): Σ over the chunk's samples of dy.
struct BiasGradBody {
  const float *dy;
  float *out;
  BatchChunks chunks;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t node = chunks.element(i), nodes = chunks.elements;
    float sum = 0;
    for (int64_t b = chunks.first(i); b < chunks.last(i); ++b)
      sum += dy[b * nodes + node];
    storeValue(out[i], sum, accumulate);
  }
};

/// Rows of `length` floats between cuDNN's order and Net#'s (a grouped
/// convolution's channels, its filter rows), in blocks of `rows` rows (a
/// sample's channels; one block of filter rows): cuDNN row r of a block is
/// Net#'s row map[r] of that block (null map: the same row). Element i of
/// the cuDNN side, [blocks × rows × length]. Towards cuDNN it gathers,
/// to[i] = from[Net#]; back it scatters, to[Net#] (+)= from[i], adding
/// bias[biasRow[r]] (biasRow null: bias[r]) where there is a bias. With
/// from == to, no map and no accumulation it adds the bias in place.
struct PermuteRowsBody {
  const float *from;
  float *to;
  const int32_t *map, *biasRow;
  const float *bias;
  int64_t rows, length;
  bool towardsCudnn, accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t block = i / (rows * length), r = (i / length) % rows, k = i % length;
    const int64_t net = (block * rows + (map ? map[r] : r)) * length + k;
    if (towardsCudnn) {
      to[i] = from[net];
      return;
    }
    float value = from[i];
    if (bias)
      value += bias[biasRow ? biasRow[r] : r];
    storeValue(to[net], value, accumulate);
  }
};

/// A batch gathered from a data set held in device memory (--data-on-device),
/// element i of [rows × width]: row r of `to` is row order[r] of `from`
/// (rows of `width` floats, the features or the labels of a sample), so
/// to[i] = from[order[i / width] · width + i % width].
struct GatherRowsBody {
  const float *from;
  const int32_t *order;
  float *to;
  int64_t width;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / width, k = i % width;
    to[i] = from[int64_t{order[row]} * width + k];
  }
};

} // namespace netc::runtime::cuda
