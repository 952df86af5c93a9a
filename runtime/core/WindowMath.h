// WindowMath.h -- the rules of Net#'s pooling and response normalization
// windows (docs/language.md §12-§13) that every backend shares,
// callable from host and CUDA device code: which cell a max pool picks (the
// first maximal real cell, so forward and backward agree and ties go where
// the reference sends them), how many cells of a window are real (dummy
// padding cells are -1 in the Plan's window tables), and response
// normalization's divisor S = Offset + (Alpha / n) Σ x² with its constants
// taken from the Plan's attributes. Templates over the
// arithmetic type and over how a node's value is read, so the CPU's
// feature-major and sample-major tables and the CUDA kernel bodies all use
// these definitions.
#pragma once

#include "codegen/Plan.h"
#include "runtime/core/HostDevice.h"

#include <cstdint>

namespace netc::runtime {

/// The constants of a response normalization (plan::WindowAttrs), in a form
/// device code can take by value.
struct NormConstants {
  float alpha = 0, beta = 0, offset = 1;
  bool averageOverFullKernel = true;
  int64_t window = 1;
};

// The functions have internal linkage, for the same reason as ActivationMath.h's.
namespace {

/// A response normalization's constants (host code: the Plan's attributes).
inline NormConstants normConstants(const plan::WindowAttrs &a) {
  return {a.alpha, a.beta, a.offset, a.averageOverFullKernel, a.window};
}

/// The source node of the first maximal real cell of window `w`, where
/// value(node) reads the sample's node, or -1 when every cell is a dummy.
template <class Value>
NETC_HOST_DEVICE inline int32_t firstMaxCell(Value value, const int32_t *w, int64_t window) {
  int32_t arg = -1;
  for (int64_t k = 0; k < window; ++k)
    if (w[k] >= 0 && (arg < 0 || value(w[k]) > value(arg)))
      arg = w[k];
  return arg;
}

/// The number of real (non-dummy) cells of window w.
NETC_HOST_DEVICE inline int64_t realCells(const int32_t *w, int64_t window) {
  int64_t real = 0;
  for (int64_t k = 0; k < window; ++k)
    real += w[k] >= 0 ? 1 : 0;
  return real;
}

/// n of the divisor: the full kernel size, or the window's real cells
/// (at least 1) when AvgOverFullKernel is false.
template <class T> NETC_HOST_DEVICE inline T normCells(const NormConstants &k, int64_t real) {
  return k.averageOverFullKernel ? T(k.window) : T(real > 0 ? real : 1);
}

/// S = Offset + (Alpha / n) Σ x_z² over window w's real cells.
template <class T, class Value>
NETC_HOST_DEVICE inline T responseNormScale(const NormConstants &k, Value value, const int32_t *w) {
  T sum = 0;
  for (int64_t c = 0; c < k.window; ++c)
    if (w[c] >= 0) {
      const T v = value(w[c]);
      sum += v * v;
    }
  return T(k.offset) + T(k.alpha) / normCells<T>(k, realCells(w, k.window)) * sum;
}

} // namespace
} // namespace netc::runtime
