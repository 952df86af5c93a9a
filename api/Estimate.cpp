// Estimate.cpp -- estimateTraining (include/netc/Estimate.h): the run's
// settings checked as netc train checks them, the data's sample counts (or
// --samples on paper), the network compiled and its training plan built
// without the memory check (the estimate reports the memory instead), then
// the cost model of codegen/TrainingEstimate.h with the chosen cost table.
#include "api/RunEstimate.h"
#include "api/TrainingSteps.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace netc {

namespace training {

Expected<cost::Estimate> estimateRun(const ir::Network &net, const plan::Plan &plan,
                                     const cost::CostTable &table, const TrainSettings &s, int ranks,
                                     const SampleCounts &samples, int stages, int microBatches,
                                     int maxRanks) {
  cost::EstimateRequest request;
  request.batch = std::max<int64_t>(1, s.batch);
  request.accumulate = std::max<int64_t>(1, s.accumulate);
  request.ranks = ranks;
  request.threads = s.threads; // 0: the machine's cores shared among its ranks (and stages)
  request.trainSamples = samples.train;
  request.evaluationSamples = samples.evaluated;
  request.finalTestSamples = samples.finalTest;
  request.epochs = s.epochs;
  request.stages = stages;
  request.microBatches = microBatches;
  request.maxRanks = std::max(maxRanks, ranks);
  // A checkpoint holds the parameters and the optimizer state.
  request.checkpointBytes = 4 * plan.arenaElements * (1 + static_cast<int64_t>(plan.stateArenas.size()));
  return cost::estimateTraining(net, plan, table, request);
}

} // namespace training

namespace {

using namespace training;

void fill(EstimateResult &r, const cost::Estimate &e, const ir::Network &net) {
  r.note = e.profileNote;
  r.stepsPerEpoch = e.stepsPerEpoch;
  r.stepSeconds = e.stepUs * 1e-6;
  r.forwardSeconds = e.step.forwardUs * 1e-6;
  r.lossSeconds = e.step.lossUs * 1e-6;
  r.backwardSeconds = e.step.backwardUs * 1e-6;
  r.updateSeconds = e.step.updateUs * 1e-6;
  r.hostSeconds = e.step.hostUs * 1e-6;
  r.allReduceSeconds = e.step.allReduceUs * 1e-6;
  r.exposedCommSeconds = e.step.exposedCommUs * 1e-6;
  r.epochSeconds = e.epochSeconds;
  r.evaluationSeconds = e.evaluationSeconds;
  r.checkpointSeconds = e.checkpointSeconds;
  r.totalSeconds = e.totalSeconds;
  r.imagesPerSecond = e.imagesPerSecond;
  r.parameterBytes = e.memory.parameters;
  r.gradientBytes = e.memory.gradients;
  r.optimizerBytes = e.memory.optimizerState;
  r.tableBytes = e.memory.tables;
  r.activationBytes = e.memory.activations;
  r.inputBytes = e.memory.inputs;
  r.otherBytes = e.memory.other;
  r.memoryBytes = e.memory.total();
  r.efficiency = e.efficiency;
  r.stopsPayingAt = e.stopsPayingAt;
  for (const cost::ScalingPoint &p : e.scaling)
    r.scaling.push_back({p.ranks, p.stepUs * 1e-6, p.epochSeconds, p.efficiency});
  r.microBatches = e.microBatches;
  r.microBatch = e.microBatch;
  r.bubble = e.bubble;
  if (e.partition) {
    r.cutBytes = e.partition->cutBytes;
    for (const cost::Stage &stage : e.partition->stages) {
      EstimateStage out;
      for (int l : stage.layers)
        out.layers.push_back(net.layers[static_cast<size_t>(l)].name);
      out.computeSeconds = stage.computeUs * 1e-6;
      out.transferSeconds = stage.transferUs * 1e-6;
      out.memoryBytes = stage.memoryBytes;
      out.weightsBytes = stage.fixedBytes;
      out.activationBytes = stage.activationBytes;
      out.bytesIn = stage.bytesIn;
      out.bytesOut = stage.bytesOut;
      r.partition.push_back(std::move(out));
    }
  }
}

} // namespace

EstimateResult estimateTraining(const std::string &netPath, const EstimateSettings &settings) {
  EstimateResult result;
  auto refuse = [&](Refusal refusal) {
    result.failure = refusal.kind;
    result.error = std::move(refusal.message);
    return result;
  };
  TrainSettings s = settings.train;
  const bool onPaper = s.dataDir.empty();
  if (onPaper && settings.samples <= 0)
    return refuse(usage("--data DIR or --samples N is required: the samples of an epoch"));
  if (!onPaper && settings.samples > 0)
    return refuse(usage("--data and --samples exclude each other: --samples is for a run on paper"));
  if (settings.ranks < 1 || settings.ranks > 1 << 20 || settings.stages < 0 || settings.stages > 4096 ||
      settings.microBatches < 0 || settings.maxRanks < 1 || settings.maxRanks > 1 << 20)
    return refuse(
        usage(fmt::format("--ranks must be from 1 to {}, --partition from 0 to 4096, --micro-batches "
                          "at least 0 and --max-ranks from 1 to {}",
                          1 << 20, 1 << 20)));
  if (s.batch == 0)
    s.batch = 1; // online SGD, as netc train
  if (!onPaper && settings.inputSize)
    return refuse(
        usage("--input-size is for a run on paper (--samples): with --data, the data gives the size"));
  if (onPaper && s.validationFraction)
    return refuse(
        usage("--validation holds out part of --data: a run on paper (--samples) has nothing to hold "
              "out"));
  if (settings.microBatches > 0 && settings.stages == 0)
    return refuse(usage("--micro-batches splits the steps of a pipeline: it needs --partition K"));
  if (onPaper)
    s.dataDir = "(on paper)"; // checkSettings wants a folder; nothing is read from it
  s.maxMemory = UINT64_MAX;   // the estimate reports the memory instead of refusing it
  auto run = checkSettings(s);
  if (!run)
    return refuse(run.refusal());

  // A table that cannot be read is refused before the data are read; one
  // that must be measured (this machine's, where none is kept yet) is
  // measured once the network has compiled.
  CostTableRequest tableRequest{
      settings.costModel, s.device, s.cpuIsa, s.denseKernel, false, nullptr, nullptr};
  if (settings.costModel != kMachineCostTable)
    if (auto table = chooseCostTable(tableRequest); !table)
      return refuse(usage("--cost-model: " + table.message()));

  SampleCounts samples;
  std::optional<Network> network;
  if (onPaper) {
    CompileOptions options;
    options.maxSourceBytes = s.maxSourceBytes;
    options.inputSize = settings.inputSize;
    options.task = s.task;
    options.hiddenNodes = s.hiddenNodes;
    auto compiled = compileForData(netPath, options);
    if (!compiled)
      return refuse(input(compiled.message()));
    result.diagnostics = compiled->diagnostics;
    if (!compiled->network)
      return refuse(input(fmt::format("{} has errors", netPath)));
    network = std::move(compiled->network);
    samples.train = settings.samples;
  } else {
    auto data = loadData(s, StartPoint{});
    if (!data)
      return refuse(data.refusal());
    if (auto refused = splitValidationData(*data))
      return refuse(*refused);
    auto compiled = compileNetwork(netPath, s, *data, result.diagnostics);
    if (!compiled)
      return refuse(compiled.refusal());
    network = std::move(compiled->compiled.network);
    samples.train = data->train.count;
    samples.evaluated = data->evaluated() ? data->evaluated()->count : 0;
    samples.finalTest = data->test ? data->test->count : 0;
  }
  const ir::Network &net = network->impl().network;
  // Sizes only: the index tables are not built (a network far too large to
  // run is estimated at once, and reported, without allocating them).
  plan::PlanOptions planOptions = trainingPlanOptions(s, *run);
  planOptions.buildTables = false;
  auto plan = plan::buildPlan(net, planOptions);
  if (!plan)
    return refuse(input(fmt::format("{}: {}", netPath, plan.message())));
  tableRequest.mayMeasure = true;
  tableRequest.progress = settings.progress;
  tableRequest.context = settings.progressContext;
  auto table = chooseCostTable(tableRequest);
  if (!table)
    return refuse(usage("--cost-model: " + table.message()));
  result.costTable = table->label;
  result.costTableFile = table->file;
  result.costTableNote = table->note;
  result.costTableDevice = table->table.device;
  result.costTableSource = table->table.source;
  result.deviceMemoryBytes = table->table.memoryBytes;
  auto estimate = estimateRun(net, *plan, table->table, s, settings.ranks, samples, settings.stages,
                              settings.microBatches, settings.maxRanks);
  if (!estimate)
    return refuse(usage(estimate.message()));
  result.network = net.name;
  result.batch = s.batch;
  result.epochs = s.epochs;
  result.trainSamples = samples.train;
  result.evaluationSamples = samples.evaluated;
  result.finalTestSamples = samples.finalTest;
  result.ranks = settings.ranks;
  result.accumulate = s.accumulate;
  result.threads = estimate->threads; // 0: a device's profile, whatever the host's threads
  result.stages = settings.stages;
  fill(result, *estimate, net);
  for (size_t i = 0; i < plan->ops.size() && i < estimate->opMicroseconds.size(); ++i) {
    const plan::Op &op = plan->ops[i];
    if (!cost::hasRate(op.kind))
      continue;
    const char *section = i < plan->stepBegin     ? "backward"
                          : i < plan->forwardEnd  ? "forward"
                          : i < plan->lossEnd     ? "loss"
                          : i < plan->backwardEnd ? "backward"
                                                  : "update";
    result.ops.push_back({section, std::string(plan::opName(op.kind)),
                          op.out.empty() ? "" : plan->buffers[static_cast<size_t>(op.out[0])].name,
                          estimate->opMicroseconds[i]});
  }
  return result;
}

} // namespace netc
