// TrainingEstimate.cpp -- a run's estimate (TrainingEstimate.h): the step
// from the cost model, the epoch as the trainer cuts it (global steps of
// ranks × batch, the last one short), each evaluation in batches over the
// ranks' shares, weak scaling over doubling rank counts, and with stages the
// pipeline of micro-batches through the partition.
#include "codegen/TrainingEstimate.h"

#include <algorithm>
#include <cmath>

namespace netc::cost {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

/// Seconds of one epoch's training steps at `ranks` ranks of `batch` each.
double epochSecondsAt(const plan::Plan &plan, const CostTable &table, const ComputeProfile &profile,
                      int64_t batch, int ranks, int64_t samples, double *stepUs) {
  const Link &link = table.linkFor(ranks);
  const double full = stepTime(plan, profile, batch, ranks, link).totalUs();
  if (stepUs)
    *stepUs = full;
  const int64_t global = batch * ranks;
  const int64_t steps = ceilDiv(samples, global);
  if (steps == 0)
    return 0;
  const int64_t rest = samples - (steps - 1) * global; // the last step's samples, over every rank
  const double last = stepTime(plan, profile, ceilDiv(rest, ranks), ranks, link).totalUs();
  return (double(steps - 1) * full + last) * 1e-6;
}

/// Seconds to evaluate `samples` shared among `ranks`, `batch` at a time.
double evaluationSeconds(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch, int ranks,
                         int64_t samples) {
  const int64_t share = ceilDiv(samples, ranks);
  if (share == 0)
    return 0;
  const int64_t full = share / batch, rest = share % batch;
  double us = double(full) * (forwardMicroseconds(plan, profile, batch) + profile.stepOverheadUs);
  if (rest > 0)
    us += forwardMicroseconds(plan, profile, rest) + profile.stepOverheadUs;
  return us * 1e-6;
}

} // namespace

Expected<Estimate> estimateTraining(const ir::Network &network, const plan::Plan &plan,
                                    const CostTable &table, const EstimateRequest &r) {
  if (r.batch < 1 || r.ranks < 1 || r.epochs < 0 || r.stages < 0 || r.microBatches < 0 || r.maxRanks < 1)
    return fail("the batch and ranks must be at least 1, the epochs, stages and micro-batches at least 0");
  Estimate e;
  const ComputeProfile &profile = table.profileFor(r.threads, &e.profileNote);
  e.step = stepTime(plan, profile, r.batch, r.ranks, table.linkFor(r.ranks));
  e.stepsPerEpoch = ceilDiv(r.trainSamples, r.batch * r.ranks);
  e.epochSeconds = epochSecondsAt(plan, table, profile, r.batch, r.ranks, r.trainSamples, &e.stepUs);
  e.memory = memoryUse(plan, r.batch);

  if (r.stages > 0) {
    PartitionRequest p;
    p.layers = layerCosts(network, plan, profile);
    p.stages = r.stages;
    e.microBatches = r.microBatches > 0 ? r.microBatches : 4 * r.stages;
    p.microBatches = e.microBatches;
    p.microBatch = std::max<int64_t>(1, ceilDiv(r.batch, e.microBatches));
    p.link = table.linkFor(r.stages);
    p.memoryLimit = table.memoryBytes;
    auto partition = partitionLayers(p);
    if (!partition)
      return partition.error();
    e.partition = std::move(*partition);
    e.bubble = pipelineBubble(r.stages, e.microBatches);
    // A pipeline's step: the micro-batches through the stages, the update,
    // and with several pipelines the all-reduce of the largest stage's gradients.
    double stageParameterBytes = 0;
    for (const Stage &stage : e.partition->stages) {
      double bytes = 0;
      for (int l : stage.layers)
        for (const plan::Parameter &param : plan.parameters)
          for (const ir::ParamRef &owner : param.owners)
            if (owner.layer == l && param.trained)
              bytes += 4.0 * double(param.count);
      stageParameterBytes = std::max(stageParameterBytes, bytes);
    }
    e.stepUs = e.partition->stepUs(e.microBatches) + e.step.hostUs +
               table.linkFor(r.ranks * r.stages).allReduceUs(stageParameterBytes, r.ranks);
    e.epochSeconds = double(e.stepsPerEpoch) * e.stepUs * 1e-6;
    int64_t most = 0;
    for (const Stage &stage : e.partition->stages)
      most = std::max(most, stage.memoryBytes);
    e.memory = MemoryUse{};
    e.memory.other = most;
  }

  e.evaluationSeconds = evaluationSeconds(plan, profile, r.batch, r.ranks, r.evaluationSamples);
  e.totalSeconds = double(r.epochs) * (e.epochSeconds + e.evaluationSeconds) +
                   evaluationSeconds(plan, profile, r.batch, r.ranks, r.finalTestSamples);
  e.imagesPerSecond = e.epochSeconds > 0 ? double(r.trainSamples) / e.epochSeconds : 0;

  // Weak scaling: the same batch per rank at 1, 2, 4, ... ranks.
  std::vector<int> counts;
  for (int n = 1; n <= r.maxRanks; n *= 2)
    counts.push_back(n);
  if (std::find(counts.begin(), counts.end(), r.ranks) == counts.end())
    counts.push_back(r.ranks);
  std::sort(counts.begin(), counts.end());
  double oneStepUs = 0;
  for (int n : counts) {
    ScalingPoint point;
    point.ranks = n;
    point.epochSeconds = epochSecondsAt(plan, table, profile, r.batch, n, r.trainSamples, &point.stepUs);
    if (n == 1)
      oneStepUs = point.stepUs;
    point.efficiency = point.stepUs > 0 ? oneStepUs / point.stepUs : 1;
    e.scaling.push_back(point);
    if (n == r.ranks)
      e.efficiency = point.efficiency;
  }
  e.stopsPayingAt = counts.back();
  const ScalingPoint *previous = nullptr;
  for (const ScalingPoint &point : e.scaling) {
    if (point.ranks & (point.ranks - 1))
      continue; // the doubling sequence only
    if (previous && point.epochSeconds > 0.9 * previous->epochSeconds) {
      e.stopsPayingAt = previous->ranks;
      break;
    }
    previous = &point;
  }
  return e;
}

} // namespace netc::cost
