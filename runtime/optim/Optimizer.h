// Optimizer.h -- the host side of the training plan's fused update op
// (docs/architecture.md §Data, optimizers and training): the step over flat
// float arrays (UpdateLoops.h's loops of the element functions in
// UpdateMath.h, which device code shares), a naive
// double-precision reference that the numeric tests compare it against, the
// per-step scalars the host writes before each step, the per-optimizer state
// layout (how many zero-initialised float arrays, each the size of the
// parameters, and their names in checkpoints) and hyperparameter validation.
// Optimizers are listed once in codegen/Optimizers.def; the kind and the
// hyperparameters are Plan data (codegen/UpdateRule.h). The updates are
// element-wise, so a caller may split the arena into ranges (threads,
// buckets) and update each separately with the same result.
#pragma once

#include "codegen/UpdateRule.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc::optim {

using plan::Hyperparameters;
using plan::kMaxStateSlots;
using plan::OptimizerKind;
using plan::UpdateRule;

/// The optimizer spelled `name` (`--optimizer sgd|adam|adadelta`), or nothing.
std::optional<OptimizerKind> parseOptimizer(std::string_view name);
/// The CLI spelling of `kind` ("sgd", "adam", "adadelta").
std::string_view optimizerName(OptimizerKind kind);
/// The accepted spellings for messages: "sgd, adam, adadelta".
std::string optimizerChoices();

/// An empty string when every field is valid, else a message naming the first
/// offending flag and its allowed range ("--momentum must be in [0, 1), got 1").
std::string validate(const Hyperparameters &hp);

/// The learning rate used when `--lr` is not given: 0.1 for SGD (the Azure ML
/// default), 0.001 for Adam, 1 for AdaDelta (which needs none: lr only scales
/// its step).
float defaultLearningRate(OptimizerKind kind);

/// How many float arrays the optimizer keeps per parameter tensor, each the
/// tensor's size and zero-initialised: SGD 1 (velocity) when momentum > 0 else
/// 0; Adam 2 (m, v); AdaDelta 2 (E[g^2], E[dx^2]).
int stateSlots(OptimizerKind kind, const Hyperparameters &hp);
/// The checkpoint name of state slot `slot` (PyTorch's: "momentum_buffer",
/// "exp_avg", "exp_avg_sq", "square_avg", "acc_delta").
std::string_view stateSlotName(OptimizerKind kind, int slot);

/// The step scalars (codegen/UpdateRule.h) of optimizer step `step`
/// (1-based; 0 for a plan run without an update) at `learningRate`, for a
/// step over `stepSamples` samples of which this micro-batch has `validCount`
/// (the loss scale is 1 / stepSamples: the step's samples over every rank,
/// or for local SGD that count divided by the ranks, which need not be whole).
std::array<float, plan::kStepScalarCount> stepScalars(const UpdateRule &rule, float learningRate,
                                                      int64_t step, double stepSamples, int64_t validCount);

/// One optimizer step over `count` elements, in place on `weights` and the
/// state arrays `state[0 .. stateSlots)` (may be null when there are none; all
/// pointers may be null when count is 0), with the learning rate and Adam's
/// bias corrections of the step scalars `scalars` (stepScalars()). Float
/// arithmetic (UpdateMath.h), branch-free inner loops (UpdateLoops.h, here
/// for the baseline instruction set; the CPU backend's kernel tables
/// compile their own).
///  - SGD (PyTorch): g' = g + wd w; with momentum mu: v = mu v + g',
///    d = nesterov ? g' + mu v : v, w -= lr d; without: w -= lr g'.
///  - Adam: g' as above; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
///    w -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
///  - AdaDelta: g' as above; E[g^2] = rho E[g^2] + (1-rho) g'^2;
///    dx = -sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) g';
///    E[dx^2] = rho E[dx^2] + (1-rho) dx^2; w += lr dx.
void update(const UpdateRule &rule, float *weights, const float *gradients, float *const *state,
            int64_t count, const float *scalars);

/// The same step computed naively in double from the learning rate and step
/// count of `scalars` (each element's new weight and state are rounded to
/// float once), for tests against update().
void referenceUpdate(const UpdateRule &rule, float *weights, const float *gradients, float *const *state,
                     int64_t count, const float *scalars);

/// Both, for one step `step` at `learningRate` (the scalars made by stepScalars()).
void update(OptimizerKind kind, float *weights, const float *gradients, float *const *state, int64_t count,
            const Hyperparameters &hp, int64_t step, float learningRate);
void referenceUpdate(OptimizerKind kind, float *weights, const float *gradients, float *const *state,
                     int64_t count, const Hyperparameters &hp, int64_t step, float learningRate);

} // namespace netc::optim
