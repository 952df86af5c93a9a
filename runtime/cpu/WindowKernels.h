// WindowKernels.h -- pooling and response normalization over the Plan's
// window tables (NETSHARP §6.4-§6.5, §13 D8, D11) as templates over the
// accumulation type: the fast table instantiates them with float, the
// reference table with double. Dummy (padding) cells are skipped: max is
// over real cells, mean divides by the real cells, and response norm divides
// by the full kernel size unless AvgOverFullKernel is false.
#pragma once

#include "runtime/cpu/Kernels.h"

#include <cmath>
#include <cstring>

namespace netc::runtime::cpu {

/// The source node of the first maximal real cell of window `w` in sample
/// `xb`, or -1 when every cell is a dummy. Forward and backward both use it,
/// so the gradient goes to the cell the forward pass chose.
inline int32_t firstMaxCell(const float *xb, const int32_t *w, int64_t window) {
  int32_t arg = -1;
  for (int64_t k = 0; k < window; ++k)
    if (w[k] >= 0 && (arg < 0 || xb[w[k]] > xb[arg]))
      arg = w[k];
  return arg;
}

template <class T> void maxPool(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t o = 0; o < a.outputs; ++o) {
      const int32_t arg = firstMaxCell(x + b * a.inputs, window + o * a.window, a.window);
      const T best = arg >= 0 ? T(x[b * a.inputs + arg]) : T(0);
      float &out = y[b * a.outputs + o];
      out = static_cast<float>(c.op.accumulate ? out + best : best);
    }
}

template <class T> void maxPoolGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *window = c.inTable(2);
  float *dx = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    float *dxb = dx + b * a.inputs;
    if (!c.op.accumulate)
      std::memset(dxb, 0, static_cast<size_t>(a.inputs) * sizeof(float));
    for (int64_t o = 0; o < a.outputs; ++o) {
      const int32_t arg = firstMaxCell(x + b * a.inputs, window + o * a.window, a.window);
      if (arg >= 0)
        dxb[arg] = static_cast<float>(T(dxb[arg]) + T(dy[b * a.outputs + o]));
    }
  }
}

template <class T> void meanPool(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t o = 0; o < a.outputs; ++o) {
      const int32_t *w = window + o * a.window;
      T sum = 0;
      int64_t real = 0;
      for (int64_t k = 0; k < a.window; ++k)
        if (w[k] >= 0) {
          sum += x[b * a.inputs + w[k]];
          ++real;
        }
      const T mean = real ? sum / T(real) : T(0);
      float &out = y[b * a.outputs + o];
      out = static_cast<float>(c.op.accumulate ? out + mean : mean);
    }
}

template <class T> void meanPoolGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0);
  const int32_t *window = c.inTable(1);
  float *dx = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    float *dxb = dx + b * a.inputs;
    if (!c.op.accumulate)
      std::memset(dxb, 0, static_cast<size_t>(a.inputs) * sizeof(float));
    for (int64_t o = 0; o < a.outputs; ++o) {
      const int32_t *w = window + o * a.window;
      int64_t real = 0;
      for (int64_t k = 0; k < a.window; ++k)
        real += w[k] >= 0 ? 1 : 0;
      if (!real)
        continue;
      const T share = T(dy[b * a.outputs + o]) / T(real);
      for (int64_t k = 0; k < a.window; ++k)
        if (w[k] >= 0)
          dxb[w[k]] = static_cast<float>(T(dxb[w[k]]) + share);
    }
  }
}

/// The normalizer S = Offset + (Alpha / n) Σ x_z² of output o of sample xb.
template <class T> T responseNormScale(const plan::WindowAttrs &a, const float *xb, const int32_t *w) {
  T sum = 0;
  int64_t real = 0;
  for (int64_t k = 0; k < a.window; ++k)
    if (w[k] >= 0) {
      const T v = xb[w[k]];
      sum += v * v;
      ++real;
    }
  const T n = a.averageOverFullKernel ? T(a.window) : T(real > 0 ? real : 1);
  return T(a.offset) + T(a.alpha) / n * sum;
}

template <class T> void responseNorm(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1), *centre = c.inTable(2);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *xb = x + b * a.inputs;
    for (int64_t o = 0; o < a.outputs; ++o) {
      T value = 0;
      if (centre[o] >= 0)
        value = T(xb[centre[o]]) * std::pow(responseNormScale<T>(a, xb, window + o * a.window), -T(a.beta));
      float &out = y[b * a.outputs + o];
      out = static_cast<float>(c.op.accumulate ? out + value : value);
    }
  }
}

template <class T> void responseNormGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *window = c.inTable(2), *centre = c.inTable(3);
  float *dx = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *xb = x + b * a.inputs;
    float *dxb = dx + b * a.inputs;
    if (!c.op.accumulate)
      std::memset(dxb, 0, static_cast<size_t>(a.inputs) * sizeof(float));
    for (int64_t o = 0; o < a.outputs; ++o) {
      if (centre[o] < 0)
        continue;
      const int32_t *w = window + o * a.window;
      int64_t real = 0;
      for (int64_t k = 0; k < a.window; ++k)
        real += w[k] >= 0 ? 1 : 0;
      const T n = a.averageOverFullKernel ? T(a.window) : T(real > 0 ? real : 1);
      const T s = responseNormScale<T>(a, xb, w);
      const T g = dy[b * a.outputs + o], xc = xb[centre[o]];
      dxb[centre[o]] = static_cast<float>(T(dxb[centre[o]]) + g * std::pow(s, -T(a.beta)));
      const T coefficient = g * xc * -T(a.beta) * std::pow(s, -T(a.beta) - 1) * T(a.alpha) / n * 2;
      for (int64_t k = 0; k < a.window; ++k)
        if (w[k] >= 0)
          dxb[w[k]] = static_cast<float>(T(dxb[w[k]]) + coefficient * T(xb[w[k]]));
    }
  }
}

} // namespace netc::runtime::cpu
