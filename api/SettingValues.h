// SettingValues.h -- the typed training settings of the public API
// (include/netc/Training.h: Optimizer, InitKind, Schedule, Normalize) mapped
// to the runtime's own types. The one place that knows both sides; the parse
// functions declared in Training.h (api/SettingValues.cpp) are built on the
// runtime's parsers, so `netc train`, the C API and trainNetwork share their
// messages.
#pragma once

#include "netc/Training.h"
#include "runtime/data/Normalizer.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/Schedule.h"
#include "runtime/train/ModelState.h"

#include <cstdint>

namespace netc {

/// The runtime's optimizer for `optimizer`.
optim::OptimizerKind toRuntime(Optimizer optimizer);
/// The runtime's initialisation kind for `init`.
train::InitKind toRuntime(InitKind init);
/// The runtime's schedule for `schedule` over a run of `totalEpochs` epochs.
optim::Schedule toRuntime(const Schedule &schedule, int64_t totalEpochs);
/// The runtime's normalizer spec for `normalize`.
data::NormalizerSpec toRuntime(const Normalize &normalize);
/// The runtime's --lr-scaling and --lr-warmup.
optim::LrScaling toRuntime(LrScaling scaling);
optim::Warmup toRuntime(const LrWarmup &warmup);

} // namespace netc
