// UpdateBody.h -- the CUDA backend's fused optimizer update, one parameter
// element per thread, from the header-only update math every backend shares
// (runtime/optim/UpdateMath.h), as a host/device body (ElementBodies.h says
// how it runs). A step whose loss was not finite (the metrics' first bad
// step is set) leaves the parameters as they are, as on the CPU.
#pragma once

#include "codegen/UpdateRule.h"
#include "runtime/optim/UpdateMath.h"

#include <cstdint>

namespace netc::runtime::cuda {

/// update, element i of the trained range of the flat arenas.
struct UpdateBody {
  plan::UpdateRule rule;
  const float *gradients, *scalars, *metrics;
  float *weights, *state0, *state1; // state: null where the optimizer keeps none
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    if (metrics[static_cast<int>(plan::Metric::FirstBadStep)] != 0)
      return;
    const optim::StepConstants constants = optim::stepConstants(rule, scalars);
    optim::updateElement(optim::updateVariant(rule), i, weights, gradients, state0, state1, constants);
  }
};

} // namespace netc::runtime::cuda
