// Pipeline.cpp -- a training run's pipeline stages (Pipeline.h): the layout
// settled from the flags, the network and the cost model; the
// communicators split from the job's; the run header's lines.
#include "api/Pipeline.h"
#include "api/RunEstimate.h"
#include "api/SettingValues.h"
#include "codegen/Partition.h"
#include "codegen/TrainingEstimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace netc::training {

namespace {

/// The divisors of `n` (up to 24 of them), "1, 2, 4 or 8".
std::string divisorsText(int64_t n) {
  std::vector<int64_t> all;
  for (int64_t d = 1; d <= n && all.size() < 24; ++d)
    if (n % d == 0)
      all.push_back(d);
  std::string text;
  for (size_t i = 0; i < all.size(); ++i)
    text += fmt::format("{}{}", i == 0 ? "" : i + 1 == all.size() ? " or " : ", ", all[i]);
  return text;
}

/// The micro-batches of a step of `batch` samples through `stages` stages
/// with `copies` copies: --deterministic's chunks of a copy, --micro-batches
/// (which must divide the batch), or the largest divisor of the batch up to 4 K.
Step<int64_t> microBatchesFor(const TrainSettings &s, int64_t batch, int stages, int copies) {
  if (s.deterministicChunks > 0) {
    if ((copies & (copies - 1)) != 0 || s.deterministicChunks % copies != 0) // --partition auto's candidates
      return usage(fmt::format("--deterministic {} shares its chunks among the pipelines, which {} cannot",
                               s.deterministicChunks, copies));
    const int64_t chunks = s.deterministicChunks / copies;
    if (s.microBatches > 0 && s.microBatches != chunks)
      return usage(fmt::format("--micro-batches {} differs from the {} chunks of --deterministic {} each of "
                               "the {} pipeline(s) runs a step: leave --micro-batches out",
                               s.microBatches, chunks, s.deterministicChunks, copies));
    return chunks;
  }
  if (s.microBatches > 0) {
    if (s.microBatches > batch || batch % s.microBatches != 0)
      return usage(fmt::format("--micro-batches {} does not split --batch {} into equal micro-batches: give "
                               "{} micro-batches, or a --batch that {} divides",
                               s.microBatches, batch, divisorsText(batch), s.microBatches));
    return s.microBatches;
  }
  int64_t best = 1;
  for (int64_t m = 1; m <= std::min<int64_t>(batch, 4 * int64_t{stages}); ++m)
    if (batch % m == 0)
      best = m;
  return best;
}

/// The cost table the cuts are priced on: --cost-model's, else the
/// device's default (the GPU's on --device cuda, as the run's estimate
/// takes); the header names it in the equivalent netc show command.
Expected<cost::CostTable> cutTable(const TrainSettings &s, std::string &label) {
  const std::string_view device = s.backend == "cuda" ? std::string_view("cuda") : std::string_view(s.device);
  return chooseCostTable(s.costModel == "none" ? std::string() : s.costModel, device, label);
}

} // namespace

int stagesAsked(const TrainSettings &s) {
  if (!s.cuts.empty())
    return static_cast<int>(s.cuts.size()) + 1;
  return s.partition > 0 ? s.partition : 0;
}

bool pipelineAsked(const TrainSettings &s) {
  return !s.cuts.empty() || s.partition > 1 || s.partition == kAutoPartition;
}

int dataRanksAsked(const TrainSettings &s) {
  const int stages = stagesAsked(s);
  return stages > 0 && s.launch.size % stages == 0 ? s.launch.size / stages : s.launch.size;
}

std::optional<Refusal> checkPipelineSettings(const TrainSettings &s) {
  if (s.partition < kAutoPartition || s.partition > kMaxPipelineStages)
    return usage(fmt::format("--partition takes a number of stages from 1 to {}, or auto; got {}",
                             kMaxPipelineStages, s.partition));
  if (s.microBatches < 0)
    return usage(fmt::format("--micro-batches must be at least 1, got {}", s.microBatches));
  if (auto schedule = train::parsePipelineSchedule(s.pipelineSchedule); !schedule)
    return usage(schedule.message());
  if (!s.cuts.empty() && s.partition != 0 && s.partition != stagesAsked(s))
    return usage(fmt::format("--cut makes {} stages but --partition says {}: give one or the other",
                             stagesAsked(s),
                             s.partition == kAutoPartition ? "auto" : std::to_string(s.partition)));
  if (!pipelineAsked(s)) {
    if (s.microBatches > 0)
      return usage("--micro-batches is for pipeline stages: give --partition K (or --cut); without them "
                   "--accumulate splits a step");
    return std::nullopt;
  }
  if (s.accumulate > 1)
    return usage("--accumulate and --partition exclude each other: a pipeline's micro-batches already split "
                 "its step (--micro-batches)");
  if (s.sync.kind == Sync::Kind::LocalSgd)
    return usage("--sync local-sgd and --partition exclude each other: a pipeline's stages step together");
  if (s.dataOnDevice)
    return usage(
        "--data-on-device and --partition exclude each other: pipeline stages train from host memory");
  const int stages = stagesAsked(s), ranks = s.launch.size;
  if (stages > 0 && ranks % stages != 0)
    return usage(fmt::format("{} a multiple of {} ranks (a pipeline of {} per data-parallel copy), but "
                             "this job has {}: run it on {} ranks",
                             s.cuts.empty() ? fmt::format("--partition {} needs", stages)
                                            : fmt::format("--cut's {} stages need", stages),
                             stages, stages, ranks, stages * std::max(1, ranks / stages)));
  return std::nullopt;
}

Step<std::optional<PipelineLayout>> settlePipeline(const TrainSettings &s, const RunSettings &run,
                                                   const ir::Network &net, const SampleCounts &samples) {
  if (!pipelineAsked(s))
    return std::optional<PipelineLayout>();
  PipelineLayout layout;
  layout.schedule = *train::parsePipelineSchedule(s.pipelineSchedule); // checked by checkSettings
  layout.batch = s.batch;
  const int ranks = s.launch.size;
  std::string tableLabel;
  auto table = cutTable(s, tableLabel);
  if (!table)
    return usage("--cost-model: " + table.message());
  // The whole network's plan without tables: the estimates' and auto's.
  plan::PlanOptions whole = trainingPlanOptions(s, run);
  whole.buildTables = false;
  whole.maxMemoryBytes = UINT64_MAX;
  auto wholePlan = plan::buildPlan(net, whole);
  if (!wholePlan)
    return input(wholePlan.message());
  int stages = stagesAsked(s);
  if (stages == 0) { // --partition auto: the fastest epoch of K stages × ranks / K copies
    double bestSeconds = std::numeric_limits<double>::infinity();
    std::string tried;
    for (int k = 1; k <= std::min(ranks, kMaxPipelineStages); ++k) {
      if (ranks % k != 0)
        continue;
      auto m = microBatchesFor(s, s.batch, k, ranks / k);
      if (!m)
        continue;
      // Only the layouts whose every rank fits --max-memory.
      if (s.maxMemory > 0) {
        const bool fits = k == 1 ? plan::checkPlanFits(*wholePlan, s.batch, s.maxMemory).ok()
                                 : cost::partitionNetwork(net, *table, {run.optimizer, run.hyper}, k,
                                                          static_cast<int>(*m), s.batch, s.maxMemory)
                                       .ok();
        if (!fits) {
          tried += fmt::format("{}K = {}: over --max-memory", tried.empty() ? "" : ", ", k);
          continue;
        }
      }
      auto estimate = estimateRun(net, *wholePlan, *table, s, ranks / k, samples, k > 1 ? k : 0,
                                  k > 1 ? static_cast<int>(*m) : 0);
      if (!estimate)
        continue;
      tried += fmt::format("{}K = {}: {:.3g} s", tried.empty() ? "" : ", ", k, estimate->epochSeconds);
      if (estimate->epochSeconds < bestSeconds) {
        bestSeconds = estimate->epochSeconds;
        stages = k;
      }
    }
    if (stages == 0)
      return usage(fmt::format("--partition auto: no pipeline of {} ranks fits the cost table '{}' (give "
                               "--partition K)",
                               ranks, tableLabel));
    layout.cutBy = fmt::format("--partition auto on cost table '{}': epoch {}", tableLabel, tried);
    if (stages == 1) { // data parallelism is fastest: a layout of one stage says so
      layout.stages = 1;
      layout.copies = ranks;
      return std::optional<PipelineLayout>(std::move(layout));
    }
  }
  layout.stages = stages;
  layout.copies = ranks / stages;
  layout.stage = s.launch.rank % stages;
  layout.copy = s.launch.rank / stages;
  auto m = microBatchesFor(s, s.batch, stages, layout.copies);
  if (!m)
    return m.refusal();
  layout.microBatches = *m;
  layout.microBatch = s.deterministicChunks > 0
                          ? (s.batch * layout.copies + s.deterministicChunks - 1) / s.deterministicChunks
                          : s.batch / layout.microBatches;
  if (!s.cuts.empty()) {
    auto stageOf = cost::stagesFromCuts(net, s.cuts);
    if (!stageOf)
      return usage("--cut: " + stageOf.message());
    layout.stageOf = std::move(*stageOf);
    layout.cutBy = "--cut";
  } else {
    // Each stage within --max-memory, a rank's limit.
    auto partition = cost::partitionNetwork(net, *table, {run.optimizer, run.hyper}, stages,
                                            static_cast<int>(layout.microBatches), s.batch, s.maxMemory);
    if (!partition)
      return usage(fmt::format("--partition {}: {}", stages, partition.message()));
    layout.stageOf = std::move(partition->partition.stageOf);
    if (layout.cutBy.empty())
      layout.cutBy = fmt::format(
          "the partition pass on cost table '{}' (as netc show --partition {} --batch {} "
          "--micro-batches {}{}{})",
          tableLabel, stages, s.batch, layout.microBatches,
          s.optimizer == Optimizer::Sgd ? std::string()
                                        : fmt::format(" --optimizer {}", optimizerName(s.optimizer)),
          tableLabel == kDefaultCpuCostTable ? std::string() : fmt::format(" --cost-model {}", tableLabel));
  }
  layout.wholePlan = std::move(*wholePlan);
  return std::optional<PipelineLayout>(std::move(layout));
}

Expected<PipelineCommunicators> joinPipeline(comm::Communicator &job, const PipelineLayout &layout) {
  PipelineCommunicators out;
  auto stages = job.split(layout.copy, layout.stage, "split of the job into pipelines");
  if (!stages)
    return stages.error();
  auto copies = job.split(layout.stage, layout.copy, "split of the job into the stages' copies");
  if (!copies)
    return copies.error();
  out.stages = std::move(*stages);
  out.copies = std::move(*copies);
  return out;
}

std::vector<std::string> pipelineLines(const PipelineLayout &layout, const ir::Network &net,
                                       const TrainSettings &s) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "pipeline: {} stages × {} data-parallel cop{} on {} ranks ({}), cut by {}; global batch {} ({} × "
      "--batch "
      "{}), {} micro-batch{} of {} a step, schedule {}",
      layout.stages, layout.copies, layout.copies == 1 ? "y" : "ies", layout.stages * layout.copies,
      s.launch.launcher.empty() ? std::string("one process") : s.launch.launcher, layout.cutBy,
      layout.batch * layout.copies, layout.copies, layout.batch, layout.microBatches,
      layout.microBatches == 1 ? "" : "es", layout.microBatch, train::pipelineScheduleName(layout.schedule)));
  for (int stage = 0; stage < layout.stages; ++stage) {
    std::string ranks;
    for (int copy = 0; copy < layout.copies && copy < 8; ++copy)
      ranks += fmt::format("{}{}", copy == 0 ? "" : ", ", copy * layout.stages + stage);
    if (layout.copies > 8)
      ranks += ", ...";
    std::vector<std::string> names;
    for (int l : plan::dependencyOrder(net))
      if (layout.stageOf[static_cast<size_t>(l)] == stage)
        names.push_back(net.layers[static_cast<size_t>(l)].name);
    std::string layers;
    if (names.size() > 6)
      layers = fmt::format("{} … {} ({} layers)", names.front(), names.back(), names.size());
    else
      for (size_t i = 0; i < names.size(); ++i)
        layers += (i ? ", " : "") + names[i];
    lines.push_back(
        fmt::format("  stage {} on rank{} {}: {}", stage, layout.copies == 1 ? "" : "s", ranks, layers));
  }
  return lines;
}

std::string pipelineFingerprint(const PipelineLayout &layout) {
  std::string stageOf;
  for (int s : layout.stageOf)
    stageOf += (stageOf.empty() ? "" : ",") + std::to_string(s);
  return fmt::format("{} stages × {} copies, {} micro-batches, {}, stages of the layers {}", layout.stages,
                     layout.copies, layout.microBatches, train::pipelineScheduleName(layout.schedule),
                     stageOf);
}

} // namespace netc::training
