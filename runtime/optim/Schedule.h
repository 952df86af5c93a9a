// Schedule.h -- learning-rate schedules (`--schedule`): the rate a training
// step uses as a function of the epoch, from the base rate `--lr`. Constant;
// step decay (the original hosts' lRateRedRatio / lRateRedFreq: multiply by
// gamma every stepEpochs epochs); cosine annealing from the base rate down to
// a minimum over the run. The kinds are listed once in Schedules.def. Pure
// functions; the trainer calls scheduledLearningRate once per step and hands
// the result to optim::update.
#pragma once

#include "support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc::optim {

/// The schedules (Schedules.def).
enum class ScheduleKind {
#define SCHEDULE(Id, Name, Forms) Id,
#include "runtime/optim/Schedules.def"
#undef SCHEDULE
};

/// The keyword of `kind` ("constant", "step", "cosine").
std::string_view scheduleName(ScheduleKind kind);
/// The schedule whose keyword is `name`, or nothing.
std::optional<ScheduleKind> parseScheduleKind(std::string_view name);

/// A learning-rate schedule; fields a kind does not use are ignored.
struct Schedule {
  ScheduleKind kind = ScheduleKind::Constant;
  /// Step: the rate is multiplied by gamma every stepEpochs epochs.
  int64_t stepEpochs = 30;
  float gamma = 0.1f;
  /// Cosine: the run's length in epochs (the caller's `--epochs`) and the rate
  /// reached at its end.
  int64_t totalEpochs = 100;
  float minLearningRate = 0;
};

/// Parses a `--schedule` value: `constant`, `step[:EPOCHS[:GAMMA]]` (EPOCHS a
/// positive integer, default 30; GAMMA in (0, 1], default 0.1) or
/// `cosine[:MIN_LR]` (MIN_LR >= 0, default 0). `totalEpochs` is the run's
/// length (used by cosine). A malformed value is an error naming `--schedule`,
/// the offending part and the accepted forms.
Expected<Schedule> parseSchedule(std::string_view text, int64_t totalEpochs);

/// The `--schedule` spelling of `schedule`; parseSchedule reads it back.
std::string formatSchedule(const Schedule &schedule);

/// The learning rate for a step taken at `epoch` (0-based) plus
/// `epochFraction` (in [0, 1), the part of that epoch already done):
///  - constant: baseLr;
///  - step: baseLr * gamma^floor(epoch / stepEpochs);
///  - cosine: min + (baseLr - min) (1 + cos(pi t / T)) / 2, t = epoch +
///    epochFraction clamped to [0, T], T = totalEpochs.
float scheduledLearningRate(const Schedule &schedule, float baseLr, int64_t epoch, double epochFraction);

// ---- large global batches (Goyal et al. 2017) ----------------------------------------

/// How `--lr-scaling` scales the base rate with the number of ranks (whose
/// global batch is that many times `--batch`): not at all, by the number of
/// ranks, or by its square root.
enum class LrScaling { None, Linear, Sqrt };
std::string_view lrScalingName(LrScaling scaling);
std::optional<LrScaling> parseLrScaling(std::string_view text);
/// The factor for `ranks` ranks.
double lrScaleFactor(LrScaling scaling, int ranks);

/// `--lr-warmup`: the rate rises linearly over the first `length` epochs or
/// steps, from the unscaled rate (base / the scaling factor) when it is
/// scaled, else from base / the warm-up's steps, to the full rate.
struct Warmup {
  double length = 0; // 0: none
  bool steps = false;
  bool operator==(const Warmup &) const = default;
};
/// "N" or "Nepochs" (N epochs, a positive number), or "Nsteps" (a positive
/// integer); an error naming --lr-warmup otherwise.
Expected<Warmup> parseWarmup(std::string_view text);
std::string formatWarmup(const Warmup &warmup);
/// The warm-up's length in optimizer steps for epochs of `stepsPerEpoch` steps.
int64_t warmupSteps(const Warmup &warmup, int64_t stepsPerEpoch);
/// The multiplier of step `step` (1-based) of a warm-up of `steps` steps for
/// a rate scaled by `scale`: 1 once the warm-up is over.
double warmupFactor(int64_t steps, double scale, int64_t step);

} // namespace netc::optim
