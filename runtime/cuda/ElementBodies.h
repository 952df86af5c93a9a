// ElementBodies.h -- the CUDA backend's element-wise and per-row kernels,
// each written once as a body: a small struct of pointers and sizes whose
// call operator computes one element (or one row) and is callable from host
// and device code. runtime/cuda/CudaLauncher.cuh runs a body as a CUDA
// kernel, one thread per element; HostLauncher.h runs the same body as a
// loop, which is how CI checks every body against the reference kernels
// without a GPU (tests/numeric/DeviceKernelParityTest.cpp). Buffers are
// sample-major (sample b's node i at b * nodes + i), as cuBLAS and cuDNN
// read them. Here: input slices, bias, the output functions with their
// gradients (softmax per row), the bias gradient, and the fused bias +
// output function.
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

/// bias-grad, node i: dBias (+)= Σ over the batch of dy.
struct BiasGradBody {
  const float *dy;
  float *dBias;
  int64_t nodes, batch;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    float sum = 0;
    for (int64_t b = 0; b < batch; ++b)
      sum += dy[b * nodes + i];
    storeValue(dBias[i], sum, accumulate);
  }
};

} // namespace netc::runtime::cuda
