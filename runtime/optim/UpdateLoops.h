// UpdateLoops.h -- the fast optimizer update over flat float arrays: the
// element functions of UpdateMath.h in branch-free loops, one per variant,
// chosen once outside the loop. Header only, so that each instruction set's
// kernel table (runtime/cpu/FastKernels.cpp, compiled once per set) runs the
// loops vectorised for its own registers; optim::update (Optimizer.cpp)
// runs them for the baseline set. `#pragma omp simd` asks for vectors at any
// optimisation level (the includer builds with -fopenmp or -fopenmp-simd):
// GCC 12's -O2 left these loops scalar. Host only (the CUDA backend runs
// UpdateMath.h's elements in its own kernel).
#pragma once

#include "runtime/optim/UpdateMath.h"

#include <cassert>
#include <cstdint>

namespace netc::optim {
// Internal linkage: each kernel table's translation unit compiles its own
// copy for its instruction set (runtime/cpu/CMakeLists.txt).
namespace {

/// One step of `rule` over elements [0, count) of the weights, their
/// gradients and the optimizer's state slots (state[k] for the slots the
/// variant keeps; may be null where it keeps none), with the step scalars.
inline void updateLoops(const UpdateRule &rule, float *__restrict weights, const float *__restrict gradients,
                        float *const *state, int64_t count, const float *scalars) {
  assert(count >= 0);
  if (count == 0)
    return; // weights and state may be null
  const StepConstants c = stepConstants(rule, scalars);
  float *__restrict w = weights;
  const float *__restrict g = gradients;
  const UpdateVariant variant = updateVariant(rule);
  const int slots = variant == UpdateVariant::Sgd                                                    ? 0
                    : variant == UpdateVariant::SgdMomentum || variant == UpdateVariant::SgdNesterov ? 1
                                                                                                     : 2;
  float *__restrict s0 = slots > 0 ? state[0] : nullptr;
  float *__restrict s1 = slots > 1 ? state[1] : nullptr;
  switch (variant) {
  case UpdateVariant::Sgd:
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      sgdElement(w[i], g[i], c);
    break;
  case UpdateVariant::SgdMomentum:
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      sgdMomentumElement(w[i], g[i], s0[i], c);
    break;
  case UpdateVariant::SgdNesterov:
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      sgdNesterovElement(w[i], g[i], s0[i], c);
    break;
  case UpdateVariant::Adam:
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      adamElement(w[i], g[i], s0[i], s1[i], c);
    break;
  case UpdateVariant::AdaDelta:
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      adaDeltaElement(w[i], g[i], s0[i], s1[i], c);
    break;
  }
}

} // namespace
} // namespace netc::optim
