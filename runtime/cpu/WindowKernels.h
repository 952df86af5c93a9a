// WindowKernels.h -- pooling and response normalization over the Plan's
// window tables (docs/language.md §12-§13) as templates over the
// accumulation type: the fast table instantiates them with float, the
// reference table with double. Dummy (padding) cells are skipped: max is
// over real cells, mean divides by the real cells, and response norm divides
// by the full kernel size unless AvgOverFullKernel is false. Sample b's node i
// is at KernelCall::at (feature-major in the fast table): the forward loops run
// over outputs with the batch innermost; the backward ones, which add into
// shared inputs, split the batch between threads instead.
#pragma once

#include "runtime/core/WindowMath.h"
#include "runtime/cpu/Kernels.h"
#ifdef NETC_FAST_NAMESPACE
#include "runtime/cpu/LaneVector.h"
#endif

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace netc::runtime::cpu {
// Internal linkage: each kernel table's translation unit compiles its own copy
// for its instruction set (runtime/cpu/CMakeLists.txt), so no copy built for
// one set is linked into another's code.
namespace {

/// Runs body(b0, b1) on the threads, each with its own range of samples (for
/// backward kernels that add into inputs shared by several outputs).
template <class Body> void splitBatch(const KernelCall &c, Body body) {
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = (c.batch + threads - 1) / threads;
    const int64_t b0 = std::min(c.batch, t * per), b1 = std::min(c.batch, b0 + per);
    if (b0 < b1)
      body(b0, b1);
  }
}

/// Sets dx to zero for the batch's samples unless the op accumulates.
inline void clearUnlessAccumulating(const KernelCall &c, float *dx, int64_t n) {
  if (c.op.accumulate)
    return;
  if (c.lanes) {
    for (int64_t i = 0; i < n; ++i)
      std::memset(dx + i * c.lanes, 0, static_cast<size_t>(c.batch) * sizeof(float));
  } else {
    std::memset(dx, 0, static_cast<size_t>(n * c.batch) * sizeof(float));
  }
}

#ifdef NETC_FAST_NAMESPACE
/// Whether no real cell is in two of the windows (a stride at least the
/// kernel: the usual pooling), from the window table; `seen` has a byte
/// per input (the kernel's workspace, workspaceBytes).
inline bool windowsAreDisjoint(const plan::WindowAttrs &a, const int32_t *window, uint8_t *seen) {
  std::memset(seen, 0, static_cast<size_t>(a.inputs));
  for (int64_t e = 0; e < a.outputs * a.window; ++e)
    if (const int32_t node = window[e]; node >= 0 && seen[node]++)
      return false;
  return true;
}

/// The fast tables' max pool on the feature-major layout, a chunk of batch
/// columns at a time: per lane, the first maximal real cell (the same rule
/// as firstMaxCell, with a strict comparison in window order). With `dy`,
/// adds each lane's gradient to the cell it chose instead of writing y.
inline void maxPoolLanes(const KernelCall &c, const plan::WindowAttrs &a, const float *x,
                         const int32_t *window, float *y, const float *dy, float *dx) {
  const int64_t chunks = (c.batch + kLaneChunk - 1) / kLaneChunk;
  // The gradient of disjoint windows needs no clearing pass: each input
  // covered once is written once, the chosen lanes' gradient and +0
  // elsewhere, plus 0 (as the sum into a cleared row gives: a -0 becomes
  // +0), and the inputs no window covers are cleared.
  uint8_t *covered = static_cast<uint8_t *>(c.workspace);
  const bool once = dy && !c.op.accumulate && windowsAreDisjoint(a, window, covered);
  auto pool = [&](int64_t o, int64_t b0) {
    const int32_t *w = window + o * a.window;
    LaneVector best{};
    LaneMask arg = LaneMask{} - 1; // the chosen cell per lane, -1: none yet
    bool any = false;
    for (int64_t k = 0; k < a.window; ++k) {
      if (w[k] < 0)
        continue;
      const LaneVector v = loadLanes(x + w[k] * c.lanes + b0);
      if (!any) {
        best = v, arg = LaneMask{} + static_cast<int32_t>(k), any = true;
        continue;
      }
      const LaneMask greater = v > best;
      best = select(greater, v, best);
      arg = (greater & static_cast<int32_t>(k)) | (~greater & arg);
    }
    if (!dy) {
      float *out = y + o * c.lanes + b0;
      storeLanes(out, c.op.accumulate ? loadLanes(out) + best : best);
      return;
    }
    const LaneVector g = loadLanes(dy + o * c.lanes + b0);
    for (int64_t k = 0; any && k < a.window; ++k)
      if (w[k] >= 0) {
        float *d = dx + w[k] * c.lanes + b0;
        const LaneVector share = masked(g, arg == static_cast<int32_t>(k));
        storeLanes(d, once ? share + 0.0f : loadLanes(d) + share);
      }
  };
  if (!dy) {
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < a.outputs; ++o)
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        pool(o, chunk * kLaneChunk);
    return;
  }
  // Windows may overlap: each thread takes a range of whole chunks, and
  // within it goes output by output (a row's chunks are consecutive memory).
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    const int64_t per = (chunks + threads - 1) / threads;
    const int64_t first = std::min(chunks, thread * per), last = std::min(chunks, first + per);
    if (!c.op.accumulate && first < last)
      for (int64_t i = 0; i < a.inputs; ++i)
        if (!once || !covered[i])
          std::memset(dx + i * c.lanes + first * kLaneChunk, 0,
                      static_cast<size_t>((last - first) * kLaneChunk) * sizeof(float));
    for (int64_t o = 0; o < a.outputs; ++o)
      for (int64_t chunk = first; chunk < last; ++chunk)
        pool(o, chunk * kLaneChunk);
  }
}
#endif

template <class T> void maxPool(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1);
  float *y = c.out();
#ifdef NETC_FAST_NAMESPACE
  if (c.lanes)
    return maxPoolLanes(c, a, x, window, y, nullptr, nullptr);
#endif
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < a.outputs; ++o)
    for (int64_t b = 0; b < c.batch; ++b) {
      auto value = [&](int32_t node) { return x[c.at(b, node, a.inputs)]; };
      const int32_t arg = firstMaxCell(value, window + o * a.window, a.window);
      const T best = arg >= 0 ? T(value(arg)) : T(0);
      float &out = y[c.at(b, o, a.outputs)];
      out = static_cast<float>(c.op.accumulate ? out + best : best);
    }
}

template <class T> void maxPoolGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *window = c.inTable(2);
  float *dx = c.out();
#ifdef NETC_FAST_NAMESPACE
  if (c.lanes)
    return maxPoolLanes(c, a, x, window, nullptr, dy, dx);
#endif
  clearUnlessAccumulating(c, dx, a.inputs);
  splitBatch(c, [&](int64_t b0, int64_t b1) {
    for (int64_t o = 0; o < a.outputs; ++o)
      for (int64_t b = b0; b < b1; ++b) {
        auto value = [&](int32_t node) { return x[c.at(b, node, a.inputs)]; };
        const int32_t arg = firstMaxCell(value, window + o * a.window, a.window);
        if (arg >= 0) {
          float &d = dx[c.at(b, arg, a.inputs)];
          d = static_cast<float>(T(d) + T(dy[c.at(b, o, a.outputs)]));
        }
      }
  });
}

template <class T> void meanPool(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < a.outputs; ++o) {
    const int32_t *w = window + o * a.window;
    const int64_t real = realCells(w, a.window);
    for (int64_t b = 0; b < c.batch; ++b) {
      T sum = 0;
      for (int64_t k = 0; k < a.window; ++k)
        if (w[k] >= 0)
          sum += x[c.at(b, w[k], a.inputs)];
      const T mean = real ? sum / T(real) : T(0);
      float &out = y[c.at(b, o, a.outputs)];
      out = static_cast<float>(c.op.accumulate ? out + mean : mean);
    }
  }
}

template <class T> void meanPoolGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0);
  const int32_t *window = c.inTable(1);
  float *dx = c.out();
  clearUnlessAccumulating(c, dx, a.inputs);
  splitBatch(c, [&](int64_t b0, int64_t b1) {
    for (int64_t o = 0; o < a.outputs; ++o) {
      const int32_t *w = window + o * a.window;
      const int64_t real = realCells(w, a.window);
      if (!real)
        continue;
      for (int64_t k = 0; k < a.window; ++k)
        if (w[k] >= 0)
          for (int64_t b = b0; b < b1; ++b) {
            float &d = dx[c.at(b, w[k], a.inputs)];
            d = static_cast<float>(T(d) + T(dy[c.at(b, o, a.outputs)]) / T(real));
          }
    }
  });
}

template <class T> void responseNorm(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *x = c.in(0);
  const int32_t *window = c.inTable(1), *centre = c.inTable(2);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < a.outputs; ++o)
    for (int64_t b = 0; b < c.batch; ++b) {
      auto value = [&](int32_t node) { return x[c.at(b, node, a.inputs)]; };
      T result = 0;
      if (centre[o] >= 0)
        result = T(value(centre[o])) *
                 std::pow(responseNormScale<T>(normConstants(a), value, window + o * a.window), -T(a.beta));
      float &out = y[c.at(b, o, a.outputs)];
      out = static_cast<float>(c.op.accumulate ? out + result : result);
    }
}

template <class T> void responseNormGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::WindowAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *window = c.inTable(2), *centre = c.inTable(3);
  float *dx = c.out();
  clearUnlessAccumulating(c, dx, a.inputs);
  splitBatch(c, [&](int64_t b0, int64_t b1) {
    for (int64_t o = 0; o < a.outputs; ++o) {
      if (centre[o] < 0)
        continue;
      const int32_t *w = window + o * a.window;
      const T n = normCells<T>(normConstants(a), realCells(w, a.window));
      for (int64_t b = b0; b < b1; ++b) {
        auto value = [&](int32_t node) { return x[c.at(b, node, a.inputs)]; };
        auto grad = [&](int32_t node) -> float & { return dx[c.at(b, node, a.inputs)]; };
        const T s = responseNormScale<T>(normConstants(a), value, w);
        const T g = dy[c.at(b, o, a.outputs)], xc = value(centre[o]);
        grad(centre[o]) = static_cast<float>(T(grad(centre[o])) + g * std::pow(s, -T(a.beta)));
        const T coefficient = g * xc * -T(a.beta) * std::pow(s, -T(a.beta) - 1) * T(a.alpha) / n * 2;
        for (int64_t k = 0; k < a.window; ++k)
          if (w[k] >= 0)
            grad(w[k]) = static_cast<float>(T(grad(w[k])) + coefficient * T(value(w[k])));
      }
    }
  });
}

} // namespace
} // namespace netc::runtime::cpu
