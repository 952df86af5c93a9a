// ElementwiseKernels.h -- the output functions (forward and backward, softmax
// row-wise) as templates over the accumulation type, shared by the fast
// (float) and reference (double) kernel tables.
#pragma once

#include "runtime/cpu/Activation.h"
#include "runtime/cpu/Kernels.h"

namespace netc::runtime::cpu {

/// y = f(x) over a row, with the function chosen outside the loops so each
/// loop is a plain element-wise one the compiler can vectorise.
template <class T> void applyRow(ir::Activation fn, const float *x, float *y, int64_t n) {
  switch (fn) {
  case ir::Activation::Sigmoid:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(T(1) / (T(1) + std::exp(-T(x[i]))));
    return;
  case ir::Activation::Tanh:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(std::tanh(T(x[i])));
    return;
  default:
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(applyFunction<T>(fn, T(x[i])));
  }
}

template <class T> void activate(const KernelCall &c) {
  const auto &a = c.op.get<plan::ActivationAttrs>();
  const float *x = c.in(0);
  float *y = c.out();
  const int64_t n = a.nodes;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *xb = x + b * n;
    float *yb = y + b * n;
    if (a.function == ir::Activation::Softmax) {
      T top = xb[0];
      for (int64_t i = 1; i < n; ++i)
        top = std::max(top, T(xb[i]));
      T sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += std::exp(T(xb[i]) - top);
      for (int64_t i = 0; i < n; ++i)
        yb[i] = static_cast<float>(std::exp(T(xb[i]) - top) / sum);
    } else {
      applyRow<T>(a.function, xb, yb, n);
    }
  }
}

template <class T> void activateGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::ActivationAttrs>();
  const float *dy = c.in(0), *y = c.in(1), *x = c.in(2);
  float *dx = c.out();
  const int64_t n = a.nodes;
  const bool accumulate = c.op.accumulate;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *dyb = dy + b * n, *yb = y + b * n, *xb = x + b * n;
    float *dxb = dx + b * n;
    T dot = 0;
    if (a.function == ir::Activation::Softmax)
      for (int64_t i = 0; i < n; ++i)
        dot += T(dyb[i]) * T(yb[i]);
    if (a.function == ir::Activation::Sigmoid && !accumulate) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        dxb[i] = static_cast<float>(T(dyb[i]) * T(yb[i]) * (T(1) - T(yb[i])));
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      const T g = a.function == ir::Activation::Softmax
                      ? T(yb[i]) * (T(dyb[i]) - dot)
                      : T(dyb[i]) * functionDerivative<T>(a.function, T(xb[i]), T(yb[i]));
      dxb[i] = static_cast<float>(accumulate ? T(dxb[i]) + g : g);
    }
  }
}

} // namespace netc::runtime::cpu
