// WindowBodies.h -- the CUDA backend's kernels for Net#'s pooling and
// response normalization (docs/language.md §12-§13) over the Plan's
// window tables, dummy cells included (-1 entries are skipped; a mean
// divides by the real cells), as host/device bodies (ElementBodies.h says how
// they run). Forward bodies compute one output of one sample. Backward bodies
// compute one input of one sample by gathering over the outputs whose
// windows hold it (the transposed table, OpTables.h), so no two threads add
// into the same value and the result does not depend on thread order. The
// rules themselves are runtime/core/WindowMath.h's, which the CPU shares.
#pragma once

#include "runtime/core/WindowMath.h"
#include "runtime/cuda/ElementBodies.h"

#include <cmath>
#include <cstdint>

namespace netc::runtime::cuda {

/// A window table: window[o · width + k] is the source node of cell k of
/// output o (-1: a dummy cell).
struct WindowTable {
  const int32_t *window;
  int64_t inputs, outputs, width;
};

/// A table transposed by source (OpTables.h): the entries of source s are
/// entries[start[s] .. start[s + 1]), each the flat index row · width + k of
/// a table cell that holds s, ascending.
struct SourceLists {
  const int32_t *start, *entries;
};

/// max-pool, element i of [batch × outputs]: the first maximal real cell.
struct MaxPoolBody {
  const float *x;
  float *y;
  WindowTable table;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.outputs, o = i % table.outputs;
    const float *xb = x + b * table.inputs;
    const int32_t arg =
        firstMaxCell([xb](int32_t node) { return xb[node]; }, table.window + o * table.width, table.width);
    storeValue(y[i], arg >= 0 ? xb[arg] : 0.0f, accumulate);
  }
};

/// max-pool-grad, element i of [batch × inputs]: the sum of dy over the
/// outputs whose chosen cell is this input.
struct MaxPoolGradBody {
  const float *dy, *x;
  float *dx;
  WindowTable table;
  SourceLists sources;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.inputs, s = i % table.inputs;
    const float *xb = x + b * table.inputs;
    float sum = 0;
    for (int32_t e = sources.start[s]; e < sources.start[s + 1]; ++e) {
      const int64_t o = sources.entries[e] / table.width;
      const int32_t arg =
          firstMaxCell([xb](int32_t node) { return xb[node]; }, table.window + o * table.width, table.width);
      if (arg == s)
        sum += dy[b * table.outputs + o];
    }
    storeValue(dx[i], sum, accumulate);
  }
};

/// mean-pool, element i of [batch × outputs]: the mean over real cells.
struct MeanPoolBody {
  const float *x;
  float *y;
  WindowTable table;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.outputs, o = i % table.outputs;
    const int32_t *w = table.window + o * table.width;
    float sum = 0;
    for (int64_t k = 0; k < table.width; ++k)
      if (w[k] >= 0)
        sum += x[b * table.inputs + w[k]];
    const int64_t real = realCells(w, table.width);
    storeValue(y[i], real ? sum / static_cast<float>(real) : 0.0f, accumulate);
  }
};

/// mean-pool-grad, element i of [batch × inputs]: Σ dy / real cells over the
/// windows holding this input.
struct MeanPoolGradBody {
  const float *dy;
  float *dx;
  WindowTable table;
  SourceLists sources;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.inputs, s = i % table.inputs;
    float sum = 0;
    for (int32_t e = sources.start[s]; e < sources.start[s + 1]; ++e) {
      const int64_t o = sources.entries[e] / table.width;
      sum += dy[b * table.outputs + o] /
             static_cast<float>(realCells(table.window + o * table.width, table.width));
    }
    storeValue(dx[i], sum, accumulate);
  }
};

/// response-norm, element i of [batch × outputs]: x_centre · S^-β.
struct ResponseNormBody {
  const float *x;
  const int32_t *centre;
  float *y;
  WindowTable table;
  NormConstants constants;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.outputs, o = i % table.outputs;
    const float *xb = x + b * table.inputs;
    float result = 0;
    if (centre[o] >= 0) {
      const float s = responseNormScale<float>(
          constants, [xb](int32_t node) { return xb[node]; }, table.window + o * table.width);
      result = xb[centre[o]] * std::pow(s, -constants.beta);
    }
    storeValue(y[i], result, accumulate);
  }
};

/// response-norm-grad, element i of [batch × inputs]: dy · S^-β from the
/// outputs this input is the centre of, plus, from every output whose window
/// holds it, dy · x_centre · (−β) S^(−β−1) · (α / n) · 2 x_i.
struct ResponseNormGradBody {
  const float *dy, *x;
  const int32_t *centre;
  float *dx;
  WindowTable table;
  SourceLists sources; // the window table by source
  SourceLists centres; // the centre table (width 1) by source
  NormConstants constants;
  bool accumulate;
  NETC_HOST_DEVICE float scaleOf(const float *xb, int64_t o) const {
    return responseNormScale<float>(
        constants, [xb](int32_t node) { return xb[node]; }, table.window + o * table.width);
  }
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / table.inputs, s = i % table.inputs;
    const float *xb = x + b * table.inputs, *dyb = dy + b * table.outputs;
    const float beta = constants.beta;
    float sum = 0;
    for (int32_t e = centres.start[s]; e < centres.start[s + 1]; ++e) {
      const int64_t o = centres.entries[e];
      sum += dyb[o] * std::pow(scaleOf(xb, o), -beta);
    }
    for (int32_t e = sources.start[s]; e < sources.start[s + 1]; ++e) {
      const int64_t o = sources.entries[e] / table.width;
      if (centre[o] < 0)
        continue;
      const int32_t *w = table.window + o * table.width;
      const float n = normCells<float>(constants, realCells(w, table.width));
      const float coefficient =
          dyb[o] * xb[centre[o]] * -beta * std::pow(scaleOf(xb, o), -beta - 1) * constants.alpha / n * 2;
      sum += coefficient * xb[s];
    }
    storeValue(dx[i], sum, accumulate);
  }
};

} // namespace netc::runtime::cuda
