// UpdateRule.h -- what a Plan's fused update op computes (docs/architecture.md §The Plan): the
// optimizer (codegen/Optimizers.def) and its hyperparameters, and the layout
// of the small per-step scalars buffer the host writes before each step
// (learning rate, step count, Adam's bias corrections, the loss scale and the
// valid-sample count), so that a step runs with no host decision inside it.
// Plain data only: device code (CUDA) includes this header as it is.
#pragma once

#include <cstdint>

namespace netc::plan {

/// The optimizers (Optimizers.def).
enum class OptimizerKind {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1) Id,
#include "codegen/Optimizers.def"
#undef OPTIMIZER
};

/// The most state slots any optimizer keeps.
inline constexpr int kMaxStateSlots = 2;

/// Training hyperparameters; each field names the CLI flag that sets it. The
/// same weight decay (L2: g += weightDecay * w) applies to every optimizer.
struct Hyperparameters {
  /// `--lr`: the base learning rate (a schedule scales it per epoch).
  float learningRate = 0.1f;
  /// `--momentum` (SGD): 0 disables the velocity buffer.
  float momentum = 0;
  /// `--nesterov` (SGD): Nesterov momentum; needs momentum > 0.
  bool nesterov = false;
  /// `--weight-decay`: L2 penalty coefficient.
  float weightDecay = 0;
  /// `--beta1`, `--beta2`, `--epsilon` (Adam).
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  /// `--decay` (AdaDelta rho) and `--conditioning` (AdaDelta epsilon), the
  /// original engine's adaDeltaSgd(decay = 0.95, conditioningConst = 1e-6).
  float decay = 0.95f, conditioning = 1e-6f;
};

/// The optimizer step a training plan's update op applies.
struct UpdateRule {
  OptimizerKind optimizer = OptimizerKind::Sgd;
  Hyperparameters hyper;
};

/// The per-step scalars buffer (BufferRole::StepScalars), one float each.
enum class StepScalar {
  LearningRate,       // the scheduled rate of this step
  Step,               // 1-based optimizer step (exact up to 2^24)
  CorrectedRate,      // Adam: learning rate / (1 − β1^step)
  InvSqrtCorrection2, // Adam: 1 / sqrt(1 − β2^step)
  StepSamples,        // the samples of this optimizer step (all its micro-batches): loss scale 1 / it
  ValidCount,         // the samples of this micro-batch
  Count
};
inline constexpr int kStepScalarCount = static_cast<int>(StepScalar::Count);

/// The metrics buffer (BufferRole::Metrics): sums the loss ops add to until
/// the host reads and clears them (every --log-every steps).
enum class Metric {
  LossSum,      // Σ per-sample loss
  Correct,      // Σ correctly classified samples
  FirstBadStep, // the Step scalar of the first step whose loss was not finite (0: none)
  Count
};
inline constexpr int kMetricCount = static_cast<int>(Metric::Count);

} // namespace netc::plan
