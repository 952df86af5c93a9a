// UpdateMath.h -- the optimizer step of one element, header only and free of
// host-only calls, so that every backend's fused update kernel runs the same
// arithmetic: the CPU loops over it (runtime/cpu), a CUDA kernel includes it
// as it is (NETC_HOST_DEVICE marks the functions __host__ __device__ under
// nvcc). The per-step values come from the step scalars buffer the host
// writes before the step (codegen/UpdateRule.h: learning rate, Adam's bias
// corrections); the formulas are those of runtime/optim/Optimizer.h, in
// float, in a fixed order, so every backend agrees with the others.
#pragma once

#include "codegen/UpdateRule.h"
#include "runtime/core/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace netc::optim {
// Internal linkage, as in runtime/core/HostDevice.h: each of the CPU's
// per-instruction-set kernel tables compiles its own copy (UpdateLoops.h),
// so no copy built for one set is linked into another's code.
namespace {

/// The constants of one optimizer step: the rule's hyperparameters and the
/// step scalars, folded the way the element functions use them.
struct StepConstants {
  float lr = 0, weightDecay = 0, momentum = 0;
  float correctedRate = 0, invSqrtCorrection2 = 1; // Adam
  float beta1 = 0, beta2 = 0, oneMinusBeta1 = 1, oneMinusBeta2 = 1, epsilon = 0;
  float rho = 0, oneMinusRho = 1, conditioning = 0; // AdaDelta
};

NETC_HOST_DEVICE inline StepConstants stepConstants(const plan::UpdateRule &rule, const float *scalars) {
  const plan::Hyperparameters &hp = rule.hyper;
  StepConstants c;
  c.lr = scalars[static_cast<int>(plan::StepScalar::LearningRate)];
  c.weightDecay = hp.weightDecay;
  c.momentum = hp.momentum;
  c.correctedRate = scalars[static_cast<int>(plan::StepScalar::CorrectedRate)];
  c.invSqrtCorrection2 = scalars[static_cast<int>(plan::StepScalar::InvSqrtCorrection2)];
  c.beta1 = hp.beta1;
  c.beta2 = hp.beta2;
  c.oneMinusBeta1 = 1 - hp.beta1;
  c.oneMinusBeta2 = 1 - hp.beta2;
  c.epsilon = hp.epsilon;
  c.rho = hp.decay;
  c.oneMinusRho = 1 - hp.decay;
  c.conditioning = hp.conditioning;
  return c;
}

/// SGD without momentum: w -= lr (g + wd w).
NETC_HOST_DEVICE inline void sgdElement(float &w, float g, const StepConstants &c) {
  w -= c.lr * (g + c.weightDecay * w);
}

/// SGD with momentum: v = mu v + (g + wd w); w -= lr v.
NETC_HOST_DEVICE inline void sgdMomentumElement(float &w, float g, float &v, const StepConstants &c) {
  const float vi = c.momentum * v + (g + c.weightDecay * w);
  v = vi;
  w -= c.lr * vi;
}

/// SGD with Nesterov momentum: g' = g + wd w; v = mu v + g'; w -= lr (g' + mu v).
NETC_HOST_DEVICE inline void sgdNesterovElement(float &w, float g, float &v, const StepConstants &c) {
  const float gi = g + c.weightDecay * w;
  const float vi = c.momentum * v + gi;
  v = vi;
  w -= c.lr * (gi + c.momentum * vi);
}

/// Adam with the bias corrections folded into the step scalars:
/// w -= lr/(1-b1^t) m / (sqrt(v) / sqrt(1-b2^t) + eps).
NETC_HOST_DEVICE inline void adamElement(float &w, float g, float &m, float &v, const StepConstants &c) {
  const float gi = g + c.weightDecay * w;
  const float mi = c.beta1 * m + c.oneMinusBeta1 * gi;
  const float vi = c.beta2 * v + c.oneMinusBeta2 * gi * gi;
  m = mi;
  v = vi;
  w -= c.correctedRate * mi / (std::sqrt(vi) * c.invSqrtCorrection2 + c.epsilon);
}

/// AdaDelta: E[g²] = rho E[g²] + (1-rho) g'²; d = sqrt(E[dx²] + eps) / sqrt(E[g²] + eps) g';
/// E[dx²] = rho E[dx²] + (1-rho) d²; w -= lr d.
NETC_HOST_DEVICE inline void adaDeltaElement(float &w, float g, float &squareAvg, float &deltaAvg,
                                             const StepConstants &c) {
  const float gi = g + c.weightDecay * w;
  const float sq = c.rho * squareAvg + c.oneMinusRho * gi * gi;
  const float delta = std::sqrt(deltaAvg + c.conditioning) / std::sqrt(sq + c.conditioning) * gi; // -dx
  squareAvg = sq;
  deltaAvg = c.rho * deltaAvg + c.oneMinusRho * delta * delta;
  w -= c.lr * delta;
}

/// Which element function `rule` uses (the choice is made once per step,
/// outside the loop, so each loop body is branch-free).
enum class UpdateVariant { Sgd, SgdMomentum, SgdNesterov, Adam, AdaDelta };

NETC_HOST_DEVICE inline UpdateVariant updateVariant(const plan::UpdateRule &rule) {
  switch (rule.optimizer) {
  case plan::OptimizerKind::Adam: return UpdateVariant::Adam;
  case plan::OptimizerKind::AdaDelta: return UpdateVariant::AdaDelta;
  case plan::OptimizerKind::Sgd: break;
  }
  if (!(rule.hyper.momentum > 0))
    return UpdateVariant::Sgd;
  return rule.hyper.nesterov ? UpdateVariant::SgdNesterov : UpdateVariant::SgdMomentum;
}

/// Element i of one step of `variant` over flat arrays (state0/state1 may be
/// null where the variant keeps none): the body of every backend's update kernel.
NETC_HOST_DEVICE inline void updateElement(UpdateVariant variant, int64_t i, float *w, const float *g,
                                           float *state0, float *state1, const StepConstants &c) {
  switch (variant) {
  case UpdateVariant::Sgd: sgdElement(w[i], g[i], c); break;
  case UpdateVariant::SgdMomentum: sgdMomentumElement(w[i], g[i], state0[i], c); break;
  case UpdateVariant::SgdNesterov: sgdNesterovElement(w[i], g[i], state0[i], c); break;
  case UpdateVariant::Adam: adamElement(w[i], g[i], state0[i], state1[i], c); break;
  case UpdateVariant::AdaDelta: adaDeltaElement(w[i], g[i], state0[i], state1[i], c); break;
  }
}

} // namespace
} // namespace netc::optim
