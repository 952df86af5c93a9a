// Optimizer.cpp -- the optimizer update (the fast float loops of
// UpdateLoops.h for the baseline instruction set, and naive double
// references), the step scalars, the name and state tables derived from
// Optimizers.def, and hyperparameter validation. The fast loops choose the
// element function once, outside the loop, so the loop bodies are
// branch-free and vectorise (the target is built with -fno-math-errno so
// sqrt does too); the references follow the formulas in Optimizer.h
// literally, one element at a time, in double.
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/UpdateLoops.h"
#include "runtime/optim/UpdateMath.h"
#include "support/NumberText.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <iterator>

namespace netc::optim {

namespace {

struct OptimizerInfo {
  std::string_view name;
  float defaultLearningRate;
  std::string_view slotNames[kMaxStateSlots];
};
const OptimizerInfo kOptimizers[] = {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1) {Name, DefaultLr, {Slot0, Slot1}},
#include "codegen/Optimizers.def"
#undef OPTIMIZER
};

const OptimizerInfo &info(OptimizerKind kind) {
  return kOptimizers[static_cast<int>(kind)];
}

// --- references --------------------------------------------------------------

void referenceSgd(float *w, const float *g, float *const *state, int64_t n, const Hyperparameters &hp,
                  int64_t, float lr) {
  const double mu = hp.momentum;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = double(g[i]) + double(hp.weightDecay) * double(w[i]);
    double d = gi;
    if (hp.momentum > 0) {
      const double vi = mu * double(state[0][i]) + gi;
      state[0][i] = float(vi);
      d = hp.nesterov ? gi + mu * vi : vi;
    }
    w[i] = float(double(w[i]) - double(lr) * d);
  }
}

void referenceAdam(float *w, const float *g, float *const *state, int64_t n, const Hyperparameters &hp,
                   int64_t step, float lr) {
  const double b1 = hp.beta1, b2 = hp.beta2;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = double(g[i]) + double(hp.weightDecay) * double(w[i]);
    const double mi = b1 * double(state[0][i]) + (1 - b1) * gi;
    const double vi = b2 * double(state[1][i]) + (1 - b2) * gi * gi;
    state[0][i] = float(mi);
    state[1][i] = float(vi);
    const double mHat = mi / (1 - std::pow(b1, double(step)));
    const double vHat = vi / (1 - std::pow(b2, double(step)));
    w[i] = float(double(w[i]) - double(lr) * mHat / (std::sqrt(vHat) + double(hp.epsilon)));
  }
}

void referenceAdaDelta(float *w, const float *g, float *const *state, int64_t n, const Hyperparameters &hp,
                       int64_t, float lr) {
  const double rho = hp.decay, eps = hp.conditioning;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = double(g[i]) + double(hp.weightDecay) * double(w[i]);
    const double sq = rho * double(state[0][i]) + (1 - rho) * gi * gi;
    const double dx = -std::sqrt(double(state[1][i]) + eps) / std::sqrt(sq + eps) * gi;
    state[0][i] = float(sq);
    state[1][i] = float(rho * double(state[1][i]) + (1 - rho) * dx * dx);
    w[i] = float(double(w[i]) + double(lr) * dx);
  }
}

} // namespace

std::optional<OptimizerKind> parseOptimizer(std::string_view name) {
  for (int i = 0; i < int(std::size(kOptimizers)); ++i)
    if (kOptimizers[i].name == name)
      return static_cast<OptimizerKind>(i);
  return std::nullopt;
}

std::string_view optimizerName(OptimizerKind kind) {
  return info(kind).name;
}

std::string optimizerChoices() {
  std::string choices;
  for (const OptimizerInfo &optimizer : kOptimizers) {
    if (!choices.empty())
      choices += ", ";
    choices += optimizer.name;
  }
  return choices;
}

float defaultLearningRate(OptimizerKind kind) {
  return info(kind).defaultLearningRate;
}

int stateSlots(OptimizerKind kind, const Hyperparameters &hp) {
  switch (kind) {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1)                                                  \
  case OptimizerKind::Id:                                                                                    \
    return Slots;
#include "codegen/Optimizers.def"
#undef OPTIMIZER
  }
  return 0;
}

std::string_view stateSlotName(OptimizerKind kind, int slot) {
  assert(slot >= 0 && slot < kMaxStateSlots);
  return info(kind).slotNames[slot];
}

std::string validate(const Hyperparameters &hp) {
  auto finite = [](float x) { return std::isfinite(x); };
  auto got = [](float x) { return ", got " + shortestText(x); };
  if (!finite(hp.learningRate) || !(hp.learningRate > 0))
    return "--lr must be a positive number" + got(hp.learningRate);
  if (!(hp.momentum >= 0 && hp.momentum < 1))
    return "--momentum must be in [0, 1)" + got(hp.momentum);
  if (hp.nesterov && !(hp.momentum > 0))
    return "--nesterov needs --momentum greater than 0";
  if (!finite(hp.weightDecay) || !(hp.weightDecay >= 0))
    return "--weight-decay must be a non-negative number" + got(hp.weightDecay);
  if (!(hp.beta1 >= 0 && hp.beta1 < 1))
    return "--beta1 must be in [0, 1)" + got(hp.beta1);
  if (!(hp.beta2 >= 0 && hp.beta2 < 1))
    return "--beta2 must be in [0, 1)" + got(hp.beta2);
  if (!finite(hp.epsilon) || !(hp.epsilon > 0))
    return "--epsilon must be a positive number" + got(hp.epsilon);
  if (!(hp.decay > 0 && hp.decay < 1))
    return "--decay must be in (0, 1)" + got(hp.decay);
  if (!finite(hp.conditioning) || !(hp.conditioning > 0))
    return "--conditioning must be a positive number" + got(hp.conditioning);
  return {};
}

std::array<float, plan::kStepScalarCount> stepScalars(const UpdateRule &rule, float learningRate,
                                                      int64_t step, double stepSamples, int64_t validCount) {
  std::array<float, plan::kStepScalarCount> scalars{};
  auto set = [&](plan::StepScalar which, float value) { scalars[static_cast<size_t>(which)] = value; };
  set(plan::StepScalar::LearningRate, learningRate);
  set(plan::StepScalar::Step, static_cast<float>(step));
  // lr * m / (1-b1^t) / (sqrt(v) / sqrt(1-b2^t) + eps): the corrections folded
  // into two per-step constants, computed in double.
  const double t = double(std::max<int64_t>(step, 1));
  const double correction1 = 1 - std::pow(double(rule.hyper.beta1), t);
  const double correction2 = 1 - std::pow(double(rule.hyper.beta2), t);
  set(plan::StepScalar::CorrectedRate, float(double(learningRate) / correction1));
  set(plan::StepScalar::InvSqrtCorrection2, float(1 / std::sqrt(correction2)));
  set(plan::StepScalar::StepSamples, static_cast<float>(stepSamples > 0 ? stepSamples : 1));
  set(plan::StepScalar::ValidCount, static_cast<float>(validCount));
  return scalars;
}

void update(const UpdateRule &rule, float *weights, const float *gradients, float *const *state,
            int64_t count, const float *scalars) {
  updateLoops(rule, weights, gradients, state, count, scalars);
}

void referenceUpdate(const UpdateRule &rule, float *weights, const float *gradients, float *const *state,
                     int64_t count, const float *scalars) {
  assert(count >= 0);
  if (count == 0)
    return; // weights and state may be null
  const float learningRate = scalars[static_cast<int>(plan::StepScalar::LearningRate)];
  const auto step = static_cast<int64_t>(scalars[static_cast<int>(plan::StepScalar::Step)]);
  switch (rule.optimizer) {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1)                                                  \
  case OptimizerKind::Id:                                                                                    \
    return reference##Id(weights, gradients, state, count, rule.hyper, step, learningRate);
#include "codegen/Optimizers.def"
#undef OPTIMIZER
  }
}

void update(OptimizerKind kind, float *weights, const float *gradients, float *const *state, int64_t count,
            const Hyperparameters &hp, int64_t step, float learningRate) {
  assert(step >= 1);
  const UpdateRule rule{kind, hp};
  update(rule, weights, gradients, state, count, stepScalars(rule, learningRate, step, 1, 1).data());
}

void referenceUpdate(OptimizerKind kind, float *weights, const float *gradients, float *const *state,
                     int64_t count, const Hyperparameters &hp, int64_t step, float learningRate) {
  assert(step >= 1);
  const UpdateRule rule{kind, hp};
  referenceUpdate(rule, weights, gradients, state, count, stepScalars(rule, learningRate, step, 1, 1).data());
}

} // namespace netc::optim
