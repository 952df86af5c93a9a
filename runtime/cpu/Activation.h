// Activation.h -- the ten Net# output functions (NETSHARP §5.3) and their
// derivatives, element-wise, as templates so the fast kernels instantiate
// them in float and the reference kernels in double. Softmax (a whole-row
// function) lives in the kernels.
#pragma once

#include "ir/Network.h"

#include <algorithm>
#include <cmath>

namespace netc::runtime::cpu {
// Internal linkage: each kernel table's translation unit compiles its own copy
// for its instruction set (runtime/cpu/CMakeLists.txt), so no copy built for
// one set is linked into another's code.
namespace {

template <class T> inline T applyFunction(ir::Activation fn, T x) {
  switch (fn) {
  case ir::Activation::Sigmoid: return T(1) / (T(1) + std::exp(-x));
  case ir::Activation::Tanh: return std::tanh(x);
  case ir::Activation::Linear: return x;
  case ir::Activation::Rlinear: return std::max(T(0), x);
  case ir::Activation::Brlinear: return std::min(T(1), std::max(T(0), x));
  case ir::Activation::Srlinear: // ln(1 + e^x), stable for large |x|
    return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
  case ir::Activation::Square: return x * x;
  case ir::Activation::Sqrt: return std::sqrt(std::max(T(0), x));
  case ir::Activation::Abs: return std::abs(x);
  case ir::Activation::Softmax: return x; // row-wise: handled by the kernels
  }
  return x;
}

/// d f / d x at pre-activation x with output y = f(x).
template <class T> inline T functionDerivative(ir::Activation fn, T x, T y) {
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
} // namespace netc::runtime::cpu
