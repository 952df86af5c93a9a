// ActivationMath.h -- the ten Net# output functions (docs/language.md §7) and
// their derivatives, element-wise, defined once for every backend: templates
// over the arithmetic type (the CPU's fast kernels use float, its reference
// kernels double) callable from host and CUDA device code
// (NETC_HOST_DEVICE), so the CPU loops and the CUDA kernel bodies
// (runtime/cuda/) compute the same formulas. Softmax is a whole-row function
// and lives with the kernels; here it is the identity.
#pragma once

#include "ir/Network.h"
#include "runtime/core/HostDevice.h"

#include <cmath>

namespace netc::runtime {
// Internal linkage: the CPU backend compiles its fast kernels once per
// instruction set (runtime/cpu/CMakeLists.txt), and no copy built for one set
// may be linked into another's code.
namespace {

/// f(x) for output function `fn`.
template <class T> NETC_HOST_DEVICE inline T applyFunction(ir::Activation fn, T x) {
  switch (fn) {
  case ir::Activation::Sigmoid: return T(1) / (T(1) + std::exp(-x));
  case ir::Activation::Tanh: return std::tanh(x);
  case ir::Activation::Linear: return x;
  case ir::Activation::Rlinear: return x > T(0) ? x : T(0);
  case ir::Activation::Brlinear:
    return x > T(0) ? (x < T(1) ? x : T(1)) : T(0); // NaN -> 0, like min(1, max(0, x))
  case ir::Activation::Srlinear:                    // ln(1 + e^x), stable for large |x|
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
  case ir::Activation::Square: return x * x;
  case ir::Activation::Sqrt: return std::sqrt(x > T(0) ? x : T(0));
  case ir::Activation::Abs: return std::abs(x);
  case ir::Activation::Softmax: return x; // row-wise: handled by the kernels
  }
  return x;
}

/// d f / d x at pre-activation x with output y = f(x).
template <class T> NETC_HOST_DEVICE inline T functionDerivative(ir::Activation fn, T x, T y) {
  switch (fn) {
  case ir::Activation::Sigmoid: return y * (T(1) - y);
  case ir::Activation::Tanh: return T(1) - y * y;
  case ir::Activation::Linear: return T(1);
  case ir::Activation::Rlinear: return x > T(0) ? T(1) : T(0);
  case ir::Activation::Brlinear: return x > T(0) && x < T(1) ? T(1) : T(0);
  case ir::Activation::Srlinear: return T(1) / (T(1) + std::exp(-x));
  case ir::Activation::Square: return T(2) * x;
  case ir::Activation::Sqrt: return x > T(0) ? T(0.5) / y : T(0);
  case ir::Activation::Abs: return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
  case ir::Activation::Softmax: return T(1); // row-wise: handled by the kernels
  }
  return T(1);
}

} // namespace
} // namespace netc::runtime
