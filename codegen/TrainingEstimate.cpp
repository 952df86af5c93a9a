// TrainingEstimate.cpp -- a run's estimate (TrainingEstimate.h): the step
// from the cost model (with --accumulate, several forward-backward passes
// before one update), the epoch as the trainer cuts it (global steps of ranks
// × batch × accumulate, the last one short), each evaluation in batches over
// the ranks' shares, each epoch's two checkpoint writes, weak scaling over
// doubling rank counts, and with stages the pipeline of micro-batches
// through the partition.
#include "codegen/TrainingEstimate.h"
#include "codegen/Codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace netc::cost {

namespace {

/// ⌈a / b⌉ for a >= 0, without the overflow of (a + b - 1) / b near
/// INT64_MAX (which made a batch of 2^63 - 1 micro-batches of 1 sample).
int64_t ceilDiv(int64_t a, int64_t b) {
  return b > 0 ? a / b + (a % b > 0 ? 1 : 0) : 0;
}

/// Microseconds of a step of `samples` samples per rank on `ranks` ranks.
using StepFunction = std::function<double(int64_t samples, int ranks)>;

/// Seconds of one epoch's training steps at `ranks` ranks of `perStep`
/// samples each (the last step short); `stepUs` receives a full step's time.
double epochSecondsAt(const StepFunction &step, int64_t perStep, int ranks, int64_t samples, double *stepUs) {
  const double full = step(perStep, ranks);
  if (stepUs)
    *stepUs = full;
  const int64_t global = perStep * ranks; // bounded by the caller (estimateTraining)
  const int64_t steps = ceilDiv(samples, global);
  if (steps == 0)
    return 0;
  const int64_t rest = samples - (steps - 1) * global; // the last step's samples, over every rank
  return (double(steps - 1) * full + step(ceilDiv(rest, ranks), ranks)) * 1e-6;
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

int ranksOnNode(const CostTable &table, int ranks) {
  return std::max(1, std::min(ranks, table.devicesPerNode));
}

Expected<PartitionRequest> pipelineRequest(const ir::Network &network, const plan::Plan &plan,
                                           const CostTable &table, const ComputeProfile &profile, int stages,
                                           int microBatches, int64_t batch) {
  PartitionRequest p;
  p.stages = stages;
  p.microBatches =
      microBatches > 0 ? microBatches : static_cast<int>(std::min<int64_t>(4 * int64_t{stages}, batch));
  if (p.microBatches > batch)
    return fail(fmt::format("--micro-batches {}: a step of {} samples (--batch) has at most {} micro-batches",
                            p.microBatches, batch, batch));
  p.microBatch = std::max<int64_t>(1, ceilDiv(batch, p.microBatches));
  p.layers = layerCosts(network, plan, profile);
  p.link = table.linkFor(stages);
  p.memoryLimit = table.memoryBytes;
  return p;
}

Expected<NetworkPartition> partitionNetwork(const ir::Network &network, const CostTable &table,
                                            const plan::UpdateRule &rule, int stages, int microBatches,
                                            int64_t batch, uint64_t memoryLimit) {
  plan::PlanOptions options;
  options.update = rule;
  options.buildTables = false; // sizes only: the table buffers' sizes are kept
  options.maxMemoryBytes = UINT64_MAX;
  auto plan = plan::buildPlan(network, options);
  if (!plan)
    return plan.error();
  NetworkPartition out;
  const ComputeProfile &profile = table.profileFor(1);
  out.threads = profile.threads;
  auto request = pipelineRequest(network, *plan, table, profile, stages, microBatches, batch);
  if (!request)
    return request.error();
  if (memoryLimit > 0)
    request->memoryLimit = memoryLimit;
  out.microBatches = request->microBatches;
  out.microBatch = request->microBatch;
  auto partition = partitionLayers(*request);
  if (!partition)
    return partition.error();
  out.partition = std::move(*partition);
  return out;
}

Expected<Estimate> estimateTraining(const ir::Network &network, const plan::Plan &plan,
                                    const CostTable &table, const EstimateRequest &r) {
  // Bounds that keep every product below in int64 (samples · ranks, bytes · batch).
  constexpr int64_t kMaxBatch = int64_t{1} << 31, kMaxDevices = int64_t{1} << 24;
  if (r.batch < 1 || r.accumulate < 1 || r.ranks < 1 || r.epochs < 0 || r.stages < 0 || r.microBatches < 0 ||
      r.maxRanks < 1 || r.threads < 0)
    return fail("the batch, accumulation and ranks must be at least 1, the epochs, stages, micro-batches and "
                "threads at least 0");
  if (r.batch * r.accumulate > kMaxBatch || int64_t{r.ranks} * std::max(1, r.stages) > kMaxDevices ||
      int64_t{r.maxRanks} * std::max(1, r.stages) > kMaxDevices)
    return fail(fmt::format("an estimate takes at most {} samples per rank and step (--batch × --accumulate) "
                            "and {} devices (--ranks × --partition)",
                            kMaxBatch, kMaxDevices));
  if (r.stages > 0 && r.accumulate > 1)
    return fail("--accumulate and --partition exclude each other: a pipeline's micro-batches already split "
                "its step");
  Estimate e;
  const int stageCount = std::max(1, r.stages);
  // Threads per rank at `n` ranks: given, or the machine's cores shared.
  auto threadsAt = [&](int n) {
    return r.threads > 0 ? r.threads : std::max(1, table.devicesPerNode / ranksOnNode(table, n * stageCount));
  };
  auto profileAt = [&](int n, std::string *note) -> const ComputeProfile & {
    return table.profileFor(threadsAt(n), note, ranksOnNode(table, n * stageCount));
  };
  const ComputeProfile &profile = profileAt(r.ranks, &e.profileNote);
  e.threads = profile.threads == 0 ? 0 : threadsAt(r.ranks);
  for (size_t i = 0; i < plan.ops.size(); ++i)
    e.opMicroseconds.push_back(opMicroseconds(plan, i, profile, r.batch));
  e.step = stepTime(plan, profile, r.batch, r.ranks, table.linkFor(r.ranks));
  e.memory = memoryUse(plan, r.batch);
  // One device per rank, `accumulate` forward-backward passes per update; or
  // with stages, a pipeline of K devices per rank.
  StepFunction step = [&](int64_t samples, int ranks) {
    const ComputeProfile &at = profileAt(ranks, nullptr);
    const int64_t micro = std::min(samples, r.batch), passes = ceilDiv(samples, r.batch);
    const StepTime t = stepTime(plan, at, micro, ranks, table.linkFor(ranks));
    return double(passes) * (t.forwardUs + t.lossUs + t.backwardUs) + t.updateUs + t.exposedCommUs +
           at.stepOverheadUs + at.sampleOverheadUs * double(samples);
  };
  if (r.stages > 0) {
    auto request = pipelineRequest(network, plan, table, profile, r.stages, r.microBatches, r.batch);
    if (!request)
      return request.error();
    e.microBatches = request->microBatches;
    e.microBatch = request->microBatch;
    auto partition = partitionLayers(*request);
    if (!partition)
      return fail(fmt::format("--partition {}: {}", r.stages, partition.message()));
    e.partition = std::move(*partition);
    e.bubble = pipelineBubble(r.stages, e.microBatches);
    // The pipelines' all-reduce: each stage's gradients over the ranks, after
    // the micro-batches have drained (the largest stage's decides).
    double stageGradientBytes = 0;
    for (const Stage &stage : e.partition->stages) {
      double bytes = 0;
      for (int l : stage.layers)
        for (const plan::Parameter &param : plan.parameters)
          for (const ir::ParamRef &owner : param.owners)
            if (owner.layer == l && param.trained)
              bytes += 4.0 * double(param.count);
      stageGradientBytes = std::max(stageGradientBytes, bytes);
    }
    const double pipelineUs = e.partition->stepUs(e.microBatches);
    const int stages = r.stages;
    step = [&, pipelineUs, stageGradientBytes, stages](int64_t samples, int ranks) {
      const ComputeProfile &at = profileAt(ranks, nullptr);
      return pipelineUs + at.stepOverheadUs + at.sampleOverheadUs * double(samples) +
             table.linkFor(ranks * stages).allReduceUs(stageGradientBytes, ranks);
    };
    e.step.allReduceUs = e.step.exposedCommUs =
        table.linkFor(r.ranks * stages).allReduceUs(stageGradientBytes, r.ranks);
    int64_t most = 0;
    for (const Stage &stage : e.partition->stages)
      most = std::max(most, stage.memoryBytes);
    e.memory = MemoryUse{};
    e.memory.other = most;
  }
  const int64_t perStep = r.batch * r.accumulate;
  e.stepsPerEpoch = ceilDiv(r.trainSamples, perStep * r.ranks);
  e.epochSeconds = epochSecondsAt(step, perStep, r.ranks, r.trainSamples, &e.stepUs);

  e.evaluationSeconds = evaluationSeconds(plan, profile, r.batch, r.ranks, r.evaluationSamples);
  if (table.storage && r.checkpointBytes > 0)
    e.checkpointSeconds = 2 * table.storage->writeUs(double(r.checkpointBytes)) * 1e-6;
  e.totalSeconds = double(r.epochs) * (e.epochSeconds + e.evaluationSeconds + e.checkpointSeconds) +
                   evaluationSeconds(plan, profile, r.batch, r.ranks, r.finalTestSamples);
  e.imagesPerSecond = e.epochSeconds > 0 ? double(r.trainSamples) / e.epochSeconds : 0;
  if (!std::isfinite(e.totalSeconds) || !std::isfinite(e.stepUs))
    return fail("the cost table gives no finite time for this run (a rate too small for its work)");

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
    point.epochSeconds = epochSecondsAt(step, perStep, n, r.trainSamples, &point.stepUs);
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
