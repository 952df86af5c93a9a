// PipelineSchedule.cpp -- 1F1B and GPipe orders of a stage's micro-batches
// (PipelineSchedule.h).
#include "runtime/train/PipelineSchedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::train {

std::string_view pipelineScheduleName(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::GPipe ? "gpipe" : "1f1b";
}

Expected<PipelineScheduleKind> parsePipelineSchedule(std::string_view name) {
  if (name == "1f1b")
    return PipelineScheduleKind::OneForwardOneBackward;
  if (name == "gpipe")
    return PipelineScheduleKind::GPipe;
  return fail(fmt::format("unknown pipeline schedule '{}': use 1f1b or gpipe", name));
}

int activationSlots(PipelineScheduleKind kind, int stages, int stage, int microBatches) {
  if (kind == PipelineScheduleKind::GPipe)
    return std::max(microBatches, 1);
  return std::max(1, std::min(microBatches, stages - stage));
}

std::vector<PipelineAction> stageSchedule(PipelineScheduleKind kind, int stages, int stage,
                                          int microBatches) {
  const int slots = activationSlots(kind, stages, stage, microBatches);
  std::vector<PipelineAction> out;
  out.reserve(static_cast<size_t>(2 * std::max(microBatches, 0)));
  int forwards = 0, backwards = 0;
  auto forward = [&] {
    out.push_back({false, forwards, forwards % slots});
    ++forwards;
  };
  auto backward = [&] {
    out.push_back({true, backwards, backwards % slots});
    ++backwards;
  };
  // 1F1B's warm-up: the forwards the later stages need before the first
  // backward comes back; GPipe's is every forward.
  const int warmup = kind == PipelineScheduleKind::GPipe ? microBatches : std::min(microBatches, slots - 1);
  while (forwards < warmup)
    forward();
  while (forwards < microBatches) { // steady state: one forward, one backward
    forward();
    backward();
  }
  while (backwards < microBatches)
    backward();
  return out;
}

} // namespace netc::train
