// ElementwiseKernels.h -- the output functions (forward and backward, softmax
// per sample) as templates over the accumulation type, shared by the fast
// (float, feature-major) and reference (double, sample-major) kernel tables.
#pragma once

#include "runtime/core/ActivationMath.h"
#include "runtime/cpu/Kernels.h"
#ifdef NETC_FAST_NAMESPACE
#include "runtime/cpu/LaneVector.h"
#endif

#include <algorithm>
#include <type_traits>

namespace netc::runtime::cpu {
// Internal linkage: each kernel table's translation unit compiles its own copy
// for its instruction set (runtime/cpu/CMakeLists.txt), so no copy built for
// one set is linked into another's code.
namespace {

/// y = f(x) over a row, with the function chosen outside the loops so each
/// loop is a plain element-wise one the compiler can vectorise.
template <class T> void applyRow(ir::Activation fn, const float *x, float *y, int64_t n) {
  switch (fn) {
  case ir::Activation::Sigmoid:
#ifdef NETC_FAST_NAMESPACE // the fast tables: whole chunks through the inline vector exp
    if constexpr (std::is_same_v<T, float>) {
      int64_t i = 0;
      for (; i + kLaneChunk <= n; i += kLaneChunk)
        storeLanes(y + i, 1.0f / (1.0f + expLanes(-loadLanes(x + i))));
      x += i, y += i, n -= i;
    }
#endif
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(T(1) / (T(1) + std::exp(-T(x[i]))));
    return;
  case ir::Activation::Tanh:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(std::tanh(T(x[i])));
    return;
  case ir::Activation::Rlinear:
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(std::max(T(0), T(x[i])));
    return;
  case ir::Activation::Linear: std::copy(x, x + n, y); return;
  default:
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(applyFunction<T>(fn, T(x[i])));
  }
}

/// Calls run(offset, length) for runs of consecutive elements that together
/// cover the batch's n features per sample: rows of `batch` columns in the
/// feature-major layout, one sample's n features in the sample-major one.
template <class Run> void forEachRun(const KernelCall &c, int64_t n, Run run) {
  if (c.lanes) {
    if (c.batch == c.lanes) { // the whole buffer: one run of rows per thread
      const int parts = static_cast<int>(std::clamp<int64_t>(c.threads, 1, n));
      if (parts == 1) {
        run(int64_t{0}, n * c.lanes);
        return;
      }
#pragma omp parallel for schedule(static)
      for (int part = 0; part < parts; ++part) {
        const int64_t begin = n * part / parts, end = n * (part + 1) / parts;
        run(begin * c.lanes, (end - begin) * c.lanes);
      }
      return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      run(i * c.lanes, c.batch);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b)
    run(b * n, n);
}

template <class T> void activate(const KernelCall &c) {
  const auto &a = c.op.get<plan::ActivationAttrs>();
  const float *x = c.in(0);
  float *y = c.out();
  const int64_t n = a.nodes;
  if (a.function != ir::Activation::Softmax) {
    forEachRun(c, n, [&](int64_t offset, int64_t length) {
      applyRow<T>(a.function, x + offset, y + offset, length);
    });
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    auto xb = [&](int64_t i) { return T(x[c.at(b, i, n)]); };
    T top = xb(0);
    for (int64_t i = 1; i < n; ++i)
      top = std::max(top, xb(i));
    T sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(xb(i) - top);
    for (int64_t i = 0; i < n; ++i)
      y[c.at(b, i, n)] = static_cast<float>(std::exp(xb(i) - top) / sum);
  }
}

/// Rows [row, row + rows) of a (non-softmax) activation op in the
/// feature-major layout, in the runs activate's forEachRun gives them: the
/// whole rows where the batch fills the lanes, else the batch's columns of
/// each row. A convolution that fuses the activation calls it for the rows
/// it has just written.
template <class T> void activateRowRange(const KernelCall &c, int64_t row, int64_t rows) {
  const auto &a = c.op.get<plan::ActivationAttrs>();
  const float *x = c.in(0);
  float *y = c.out();
  if (c.batch == c.lanes) {
    applyRow<T>(a.function, x + row * c.lanes, y + row * c.lanes, rows * c.lanes);
    return;
  }
  for (int64_t i = row; i < row + rows; ++i)
    applyRow<T>(a.function, x + i * c.lanes, y + i * c.lanes, c.batch);
}

template <class T> void activateGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::ActivationAttrs>();
  const float *dy = c.in(0), *y = c.in(1), *x = c.in(2);
  float *dx = c.out();
  const int64_t n = a.nodes;
  const bool accumulate = c.op.accumulate;
  if (a.function == ir::Activation::Softmax) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < c.batch; ++b) {
      T dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += T(dy[c.at(b, i, n)]) * T(y[c.at(b, i, n)]);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t e = c.at(b, i, n);
        const T g = T(y[e]) * (T(dy[e]) - dot);
        dx[e] = static_cast<float>(accumulate ? T(dx[e]) + g : g);
      }
    }
    return;
  }
  forEachRun(c, n, [&](int64_t offset, int64_t length) {
    const float *dyr = dy + offset, *yr = y + offset, *xr = x + offset;
    float *dxr = dx + offset;
    if (a.function == ir::Activation::Sigmoid && !accumulate) {
#pragma omp simd
      for (int64_t i = 0; i < length; ++i)
        dxr[i] = static_cast<float>(T(dyr[i]) * T(yr[i]) * (T(1) - T(yr[i])));
      return;
    }
    if (a.function == ir::Activation::Rlinear && !accumulate) {
#pragma omp simd
      for (int64_t i = 0; i < length; ++i)
        dxr[i] = xr[i] > 0.0f ? dyr[i] : 0.0f;
      return;
    }
    if (a.function == ir::Activation::Tanh && !accumulate) {
#pragma omp simd
      for (int64_t i = 0; i < length; ++i)
        dxr[i] = static_cast<float>(T(dyr[i]) * (T(1) - T(yr[i]) * T(yr[i])));
      return;
    }
    for (int64_t i = 0; i < length; ++i) {
      const T g = T(dyr[i]) * functionDerivative<T>(a.function, T(xr[i]), T(yr[i]));
      dxr[i] = static_cast<float>(accumulate ? T(dxr[i]) + g : g);
    }
  });
}

} // namespace
} // namespace netc::runtime::cpu
