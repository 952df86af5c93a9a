// RunEstimate.h -- the estimate of a training run as trainNetwork and
// estimateTraining both make it (api/Estimate.cpp): which cost table, and
// the cost model's estimate for a plan and the run's sample counts.
#pragma once

#include "api/CostTableChoice.h"
#include "codegen/TrainingEstimate.h"
#include "netc/Estimate.h"

#include <string>

namespace netc::training {

/// The sample counts an estimate needs.
struct SampleCounts {
  int64_t train = 0, evaluated = 0, finalTest = 0;
};

/// The cost model's estimate of a run of `plan` with `s`'s batch, epochs and
/// threads on `ranks` ranks; `stages` > 0 adds a pipeline partition.
Expected<cost::Estimate> estimateRun(const ir::Network &net, const plan::Plan &plan,
                                     const cost::CostTable &table, const TrainSettings &s, int ranks,
                                     const SampleCounts &samples, int stages = 0, int microBatches = 0,
                                     int maxRanks = 1024);

} // namespace netc::training
