// Optimizer.h -- the CPU kernels behind the training plan's update ops
// (DESIGN.md §6): one update per parameter tensor, as plain functions over
// float arrays, plus a naive double-precision reference for each that the
// numeric tests compare the fast loops against. Also the per-optimizer state
// layout (how many zero-initialised float arrays, each the size of the
// parameter tensor, and their names in checkpoints) and the hyperparameters
// with their validation. Optimizers are listed once in Optimizers.def. The
// updates are element-wise, so a caller may split a tensor into ranges (threads,
// buckets) and update each range separately with the same result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc::optim {

/// The optimizers (Optimizers.def).
enum class OptimizerKind {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1) Id,
#include "runtime/optim/Optimizers.def"
#undef OPTIMIZER
};

/// The most state slots any optimizer keeps.
inline constexpr int kMaxStateSlots = 2;

/// The optimizer spelled `name` (`--optimizer sgd|adam|adadelta`), or nothing.
std::optional<OptimizerKind> parseOptimizer(std::string_view name);
/// The CLI spelling of `kind` ("sgd", "adam", "adadelta").
std::string_view optimizerName(OptimizerKind kind);
/// The accepted spellings for messages: "sgd, adam, adadelta".
std::string optimizerChoices();

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

/// One optimizer step over `count` elements, in place on `weights` and the
/// state arrays `state[0 .. stateSlots)` (may be null when there are none; all
/// pointers may be null when count is 0).
/// `step` is the 1-based number of this update of the tensor (Adam's bias
/// correction); `learningRate` is the scheduled rate for this step (for
/// AdaDelta a factor on its step). Float arithmetic, branch-free inner loops.
///  - SGD (PyTorch): g' = g + wd w; with momentum mu: v = mu v + g',
///    d = nesterov ? g' + mu v : v, w -= lr d; without: w -= lr g'.
///  - Adam: g' as above; m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
///    w -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
///  - AdaDelta: g' as above; E[g^2] = rho E[g^2] + (1-rho) g'^2;
///    dx = -sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) g';
///    E[dx^2] = rho E[dx^2] + (1-rho) dx^2; w += lr dx.
void update(OptimizerKind kind, float *weights, const float *gradients, float *const *state, int64_t count,
            const Hyperparameters &hp, int64_t step, float learningRate);

/// The same step computed naively in double (each element's new weight and
/// state are rounded to float once), for tests against update().
void referenceUpdate(OptimizerKind kind, float *weights, const float *gradients, float *const *state,
                     int64_t count, const Hyperparameters &hp, int64_t step, float learningRate);

} // namespace netc::optim
