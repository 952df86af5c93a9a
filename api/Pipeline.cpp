// Pipeline.cpp -- a training run's pipeline stages (Pipeline.h): the layout
// settled from the flags, the network and the cost model; the
// communicators split from the job's; the run header's lines.
#include "api/Pipeline.h"
#include "api/RunEstimate.h"
#include "api/SettingValues.h"
#include "codegen/Partition.h"
#include "codegen/TrainingEstimate.h"
#include "support/NumberText.h"

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
/// (which must divide the batch), or the largest divisor of the batch up to 4 K
/// (1 for one stage: --split alone).
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
  if (stages == 1) // --split alone: nothing to overlap micro-batches with
    return int64_t{1};
  int64_t best = 1;
  for (int64_t m = 1; m <= std::min<int64_t>(batch, 4 * int64_t{stages}); ++m)
    if (batch % m == 0)
      best = m;
  return best;
}

/// The cost table the cuts are priced on: --cost-model's, else the
/// device's default (the GPU's on --device cuda, as the run's estimate
/// takes; this machine's where it is cached, as netc show takes it); the
/// header names it in the equivalent netc show command. Every rank cuts
/// alike, so none measures a table here.
Expected<cost::CostTable> cutTable(const TrainSettings &s, std::string &label) {
  const std::string device = s.backend == "cuda" ? std::string("cuda") : s.device;
  auto choice = chooseCostTable({s.costModel == "none" ? std::string() : s.costModel, device, s.cpuIsa,
                                 s.denseKernel, false, nullptr, nullptr});
  if (!choice)
    return choice.error();
  label = choice->label;
  return std::move(choice->table);
}

} // namespace

int stagesAsked(const TrainSettings &s) {
  if (!s.cuts.empty())
    return static_cast<int>(s.cuts.size()) + 1;
  return s.partition > 0 ? s.partition : 0;
}

bool pipelineAsked(const TrainSettings &s) {
  return !s.cuts.empty() || s.partition > 1 || s.partition == kAutoPartition || !s.splits.empty();
}

int splitRanksAsked(const TrainSettings &s) {
  if (s.splits.empty())
    return 0;
  auto spec = plan::parseSplitSpec(s.splits.front());
  return spec ? spec->parts : 0;
}

int pipelineRanksAsked(const TrainSettings &s) {
  if (s.partition == kAutoPartition && s.cuts.empty())
    return 0;
  const int split = splitRanksAsked(s);
  return std::max(1, stagesAsked(s)) + (split > 1 ? split - 1 : 0);
}

int dataRanksAsked(const TrainSettings &s) {
  const int ranks = pipelineRanksAsked(s);
  return ranks > 0 && s.launch.size % ranks == 0 ? s.launch.size / ranks : s.launch.size;
}

int PipelineLayout::pipelineRanks() const {
  return plan::pipelineRank(widths, stages, 0);
}

int PipelineLayout::rankInPipeline() const {
  return plan::pipelineRank(widths, stage, part);
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
  for (const std::string &text : s.splits) {
    auto spec = plan::parseSplitSpec(text);
    if (!spec)
      return usage(spec.message());
    if (spec->parts != splitRanksAsked(s))
      return usage(
          fmt::format("--split {} and --split {} share their layers among {} and {} ranks; the split "
                      "layers share one stage's ranks, so give them the same count",
                      s.splits.front(), text, splitRanksAsked(s), spec->parts));
  }
  if (!s.splits.empty() && s.partition == kAutoPartition && s.cuts.empty())
    return usage("--partition auto and --split exclude each other: the cost model does not choose among "
                 "layouts with split layers; give --partition K or --cut");
  const std::string asked = !s.splits.empty() ? "--split" : "--partition";
  if (s.accumulate > 1)
    return usage(
        fmt::format("--accumulate and {} exclude each other: a pipeline's micro-batches already split "
                    "its step (--micro-batches)",
                    asked));
  if (s.sync.kind == Sync::Kind::LocalSgd)
    return usage(fmt::format("--sync local-sgd and {} exclude each other: a pipeline's {} step together",
                             asked, s.splits.empty() ? "stages" : "ranks"));
  if (s.dataOnDevice)
    return usage(fmt::format("--data-on-device and {} exclude each other: {} train from host memory", asked,
                             s.splits.empty() ? "pipeline stages" : "a pipeline's ranks"));
  const int stages = stagesAsked(s), ranks = s.launch.size;
  if (!s.splits.empty()) {
    const int perCopy = pipelineRanksAsked(s), split = splitRanksAsked(s);
    if (ranks % perCopy != 0)
      return usage(fmt::format(
          "--split {} needs a multiple of {} ranks ({} per data-parallel copy: {}the {} ranks its layer's "
          "nodes are shared among), but this job has {}: run it on {} ranks",
          s.splits.front(), perCopy, perCopy,
          stages > 1 ? fmt::format("{} for the other stages and ", stages - 1) : std::string(), split, ranks,
          perCopy * std::max(1, ranks / perCopy)));
    return std::nullopt;
  }
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
  int stages = s.splits.empty() ? stagesAsked(s) : std::max(1, stagesAsked(s));
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
  const int perCopy = s.splits.empty() ? stages : pipelineRanksAsked(s); // (auto excludes --split)
  layout.copies = ranks / perCopy;
  layout.copy = s.launch.rank / perCopy;
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
  } else if (stages == 1) { // --split alone: the whole network is one stage
    layout.stageOf.assign(net.layers.size(), 0);
    layout.cutBy = "no cut";
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
          // netc show takes the same default table: the built-in one, or this machine's.
          tableLabel == kDefaultCpuCostTable || tableLabel == kMachineCostTable
              ? std::string()
              : fmt::format(" --cost-model {}", tableLabel));
  }
  // The ranks of each stage, and this rank's place: its stage and part.
  if (!s.splits.empty()) {
    auto parts = plan::splitPartsOf(net, s.splits);
    if (!parts)
      return usage(parts.message());
    auto widths = plan::stageWidths(net, layout.stageOf, *parts);
    if (!widths)
      return usage(widths.message());
    layout.splitParts = std::move(*parts);
    layout.widths = std::move(*widths);
  } else {
    layout.widths.assign(static_cast<size_t>(stages), 1);
  }
  int within = s.launch.rank % layout.pipelineRanks();
  layout.stage = 0;
  while (within >= layout.widths[static_cast<size_t>(layout.stage)])
    within -= layout.widths[static_cast<size_t>(layout.stage++)];
  layout.part = within;
  layout.wholePlan = std::move(*wholePlan);
  return std::optional<PipelineLayout>(std::move(layout));
}

Expected<PipelineCommunicators> joinPipeline(comm::Communicator &job, const PipelineLayout &layout) {
  PipelineCommunicators out;
  const int within = layout.rankInPipeline();
  auto stages = job.split(layout.copy, within, "split of the job into pipelines");
  if (!stages)
    return stages.error();
  auto copies = job.split(within, layout.copy, "split of the job into the stages' copies");
  if (!copies)
    return copies.error();
  out.stages = std::move(*stages);
  out.copies = std::move(*copies);
  return out;
}

std::vector<std::string> pipelineLines(const PipelineLayout &layout, const ir::Network &net,
                                       const TrainSettings &s) {
  std::vector<std::string> lines;
  const int perCopy = layout.pipelineRanks();
  const std::string launcher = s.launch.launcher.empty() ? std::string("one process") : s.launch.launcher;
  const std::string steps = fmt::format(
      "global batch {} ({} × --batch {}), {} micro-batch{} of {} a step, schedule {}",
      layout.batch * layout.copies, layout.copies, layout.batch, layout.microBatches,
      layout.microBatches == 1 ? "" : "es", layout.microBatch, train::pipelineScheduleName(layout.schedule));
  const auto wide = std::find_if(layout.widths.begin(), layout.widths.end(), [](int w) { return w > 1; });
  if (wide == layout.widths.end()) {
    lines.push_back(
        fmt::format("pipeline: {} stages × {} data-parallel cop{} on {} ranks ({}), cut by {}; {}",
                    layout.stages, layout.copies, layout.copies == 1 ? "y" : "ies", perCopy * layout.copies,
                    launcher, layout.cutBy, steps));
  } else {
    const int splitStage = static_cast<int>(wide - layout.widths.begin());
    lines.push_back(fmt::format(
        "model parallel: {} stage{}{} with --split's layers shared out among {} ranks, × {} data-parallel "
        "cop{} on {} ranks ({}){}; {}",
        layout.stages, layout.stages == 1 ? "" : "s",
        layout.stages == 1 ? std::string() : fmt::format(", stage {}", splitStage), *wide, layout.copies,
        layout.copies == 1 ? "y" : "ies", perCopy * layout.copies, launcher,
        layout.stages == 1 ? std::string() : ", cut by " + layout.cutBy, steps));
  }
  for (int stage = 0; stage < layout.stages; ++stage) {
    const int width = layout.widths[static_cast<size_t>(stage)];
    std::vector<std::string> held;
    for (int copy = 0; copy < layout.copies; ++copy)
      for (int part = 0; part < width; ++part)
        held.push_back(std::to_string(copy * perCopy + plan::pipelineRank(layout.widths, stage, part)));
    std::string ranks;
    for (size_t i = 0; i < held.size() && i < 8; ++i)
      ranks += (i ? ", " : "") + held[i];
    if (held.size() > 8)
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
        fmt::format("  stage {} on rank{} {}: {}", stage, held.size() == 1 ? "" : "s", ranks, layers));
    for (size_t l = 0; l < layout.splitParts.size(); ++l) {
      if (layout.splitParts[l] < 2 || layout.stageOf[l] != stage)
        continue;
      auto first = plan::splitNodes(net.layers[l].nodes, width); // checked when the plan was built
      if (!first)
        continue;
      std::string parts;
      for (int part = 0; part < width; ++part)
        parts += fmt::format("{}{}-{} on part {}", part ? ", " : "", groupDigits((*first)[size_t(part)]),
                             groupDigits((*first)[size_t(part) + 1] - 1), part);
      lines.push_back(fmt::format("    layer '{}' ({} nodes) split: nodes {}", net.layers[l].name,
                                  groupDigits(net.layers[l].nodes), parts));
    }
  }
  return lines;
}

std::vector<std::string> pipelineRoles(const PipelineLayout &layout) {
  std::vector<std::string> roles;
  const int perCopy = layout.pipelineRanks();
  for (int r = 0; r < perCopy * layout.copies; ++r) {
    int stage = 0, within = r % perCopy;
    while (within >= layout.widths[static_cast<size_t>(stage)])
      within -= layout.widths[static_cast<size_t>(stage++)];
    std::string role = layout.widths[static_cast<size_t>(stage)] == 1 ? fmt::format("stage {}", stage)
                       : layout.stages == 1                           ? fmt::format("part {}", within)
                                            : fmt::format("stage {} part {}", stage, within);
    if (layout.copies > 1)
      role += fmt::format(" of pipeline {}", r / perCopy);
    roles.push_back(std::move(role));
  }
  return roles;
}

std::string pipelineFingerprint(const PipelineLayout &layout) {
  std::string stageOf;
  for (int s : layout.stageOf)
    stageOf += (stageOf.empty() ? "" : ",") + std::to_string(s);
  std::string split;
  for (size_t l = 0; l < layout.splitParts.size(); ++l)
    if (layout.splitParts[l] > 1)
      split += fmt::format("{}layer {} over {} ranks", split.empty() ? "" : ", ", l, layout.splitParts[l]);
  return fmt::format("{} stages × {} copies, {} micro-batches, {}, stages of the layers {}{}", layout.stages,
                     layout.copies, layout.microBatches, train::pipelineScheduleName(layout.schedule),
                     stageOf, split.empty() ? std::string() : ", split: " + split);
}

} // namespace netc::training
