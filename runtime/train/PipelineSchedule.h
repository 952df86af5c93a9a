// PipelineSchedule.h -- the order in which a pipeline stage runs its
// micro-batches in one optimizer step (docs/architecture.md §Pipeline
// stages), as plain data: one-forward-one-backward with a flush (1F1B:
// stage s first runs K - s - 1 forwards, then alternates a forward and a
// backward, then finishes the backwards, keeping at most K - s micro-batches
// in flight) or GPipe (every forward, then every backward: all M in flight).
// Each micro-batch's activations stay in an activation slot of the stage
// from its forward to its backward; slot m mod slots is free again by the
// time micro-batch m + slots starts. The backwards run in micro-batch
// order under both, so a stage adds its gradients in the same order as one
// process accumulating the step's micro-batches.
#pragma once

#include "support/Status.h"

#include <string_view>
#include <vector>

namespace netc::train {

enum class PipelineScheduleKind { OneForwardOneBackward, GPipe };
/// "1f1b" or "gpipe" (`--pipeline-schedule`).
std::string_view pipelineScheduleName(PipelineScheduleKind kind);
Expected<PipelineScheduleKind> parsePipelineSchedule(std::string_view name);

struct PipelineAction {
  bool backward = false; // the backward pass of the micro-batch (otherwise its forward)
  int microBatch = 0;
  int slot = 0; // the activation slot that holds it
};

/// The activation slots stage `stage` of `stages` needs for `microBatches`
/// micro-batches per step: min(M, K - stage) under 1F1B, M under GPipe.
int activationSlots(PipelineScheduleKind kind, int stages, int stage, int microBatches);

/// Stage `stage`'s forwards and backwards of one step, in the order it runs them.
std::vector<PipelineAction> stageSchedule(PipelineScheduleKind kind, int stages, int stage, int microBatches);

} // namespace netc::train
