// EstimateCommand.cpp -- `netc estimate FILE --data DIR [--ranks N]
// [--partition K] [--batch B] [--epochs E] [--cost-model FILE|NAME]
// [--format text|json]`: how long training will take, before it runs -- per
// step, per epoch and in total, the memory per rank, data-parallel scaling
// and where adding ranks stops paying, and with --partition the pipeline's
// stages and bubble. `--samples N` (with --input-size) estimates a run on
// paper, without data. docs/estimate.md says how the figures are made.
#include "CommandSupport.h"

#include "netc/Estimate.h"
#include "support/ByteSize.h"
#include "support/NumberText.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace netc::cli {

namespace {

struct EstimateArgs {
  std::string file, format = "text", optimizer = "sgd", task = "auto";
  bool ops = false; // --ops: every op's time
  EstimateSettings settings;
};

void printText(const EstimateResult &r) {
  std::printf("estimate for network '%s' from cost table '%s' (%s)\n", r.network.c_str(), r.costTable.c_str(),
              r.costTableDevice.c_str());
  std::printf("  table: %s\n", r.costTableSource.c_str());
  if (!r.costTableFile.empty())
    std::printf("  kept in: %s\n", r.costTableFile.c_str());
  if (!r.costTableNote.empty())
    std::printf("  note: %s\n", r.costTableNote.c_str());
  if (!r.note.empty())
    std::printf("  note: %s\n", r.note.c_str());
  std::string evaluated = r.evaluationSamples > 0
                              ? fmt::format(", {} evaluated per epoch", groupDigits(r.evaluationSamples))
                              : std::string();
  if (r.finalTestSamples > 0)
    evaluated += fmt::format(", {} in the final test", groupDigits(r.finalTestSamples));
  const std::string where = r.threads > 0  ? fmt::format("{} thread(s) each", r.threads)
                            : r.stages > 0 ? fmt::format("{} devices each", r.stages)
                                           : std::string("a device each");
  const std::string accumulated =
      r.accumulate > 1 ? fmt::format(" × {} micro-batches a step", r.accumulate) : std::string();
  std::printf("  run: %s training samples%s; batch %lld%s per rank on %d rank(s), %s; %lld epoch(s)\n\n",
              groupDigits(r.trainSamples).c_str(), evaluated.c_str(), static_cast<long long>(r.batch),
              accumulated.c_str(), r.ranks, where.c_str(), static_cast<long long>(r.epochs));
  std::string parts =
      fmt::format("forward {}, loss {}, backward {}, update {}, host {}", durationText(r.forwardSeconds),
                  durationText(r.lossSeconds), durationText(r.backwardSeconds), durationText(r.updateSeconds),
                  durationText(r.hostSeconds));
  if (r.ranks > 1)
    parts += fmt::format(", all-reduce {} of which {} exposed", durationText(r.allReduceSeconds),
                         durationText(r.exposedCommSeconds));
  if (r.stages > 0)
    parts = fmt::format("{} micro-batches through {} stages{}", r.microBatches, r.stages,
                        r.ranks > 1 ? fmt::format(", then the stages' all-reduce over {} pipelines: {}",
                                                  r.ranks, durationText(r.allReduceSeconds))
                                    : std::string());
  std::printf("  %-16s %-10s (%s)\n", "step", durationText(r.stepSeconds).c_str(), parts.c_str());
  std::printf("  %-16s %-10s (%s steps, %s images/s)\n", "epoch", durationText(r.epochSeconds).c_str(),
              groupDigits(r.stepsPerEpoch).c_str(), groupDigits(std::llround(r.imagesPerSecond)).c_str());
  if (r.evaluationSamples > 0)
    std::printf("  %-16s %-10s (per epoch)\n", "evaluation", durationText(r.evaluationSeconds).c_str());
  if (r.checkpointSeconds > 0)
    std::printf("  %-16s %-10s (per epoch: last and best)\n", "checkpoints",
                durationText(r.checkpointSeconds).c_str());
  std::printf("  %-16s %-10s (%lld epoch(s)%s)\n", "total", durationText(r.totalSeconds).c_str(),
              static_cast<long long>(r.epochs),
              r.evaluationSamples > 0 || r.finalTestSamples > 0
                  ? (r.checkpointSeconds > 0 ? ", their evaluations and checkpoints, and the final test"
                                             : ", their evaluations and the final test")
                  : (r.checkpointSeconds > 0 ? ", their checkpoints" : ""));
  if (r.stages > 0)
    std::printf("  %-16s %-10s (the most of any stage; %s per device)\n", "memory per rank",
                bytesText(r.memoryBytes).c_str(),
                bytesText(static_cast<int64_t>(r.deviceMemoryBytes)).c_str());
  else
    std::printf("  %-16s %-10s (parameters %s, gradients %s, optimizer state %s, tables %s, activations %s, "
                "inputs %s; %s per device)\n",
                "memory per rank", bytesText(r.memoryBytes).c_str(), bytesText(r.parameterBytes).c_str(),
                bytesText(r.gradientBytes).c_str(), bytesText(r.optimizerBytes).c_str(),
                bytesText(r.tableBytes).c_str(), bytesText(r.activationBytes + r.otherBytes).c_str(),
                bytesText(r.inputBytes).c_str(),
                bytesText(static_cast<int64_t>(r.deviceMemoryBytes)).c_str());
  if (r.memoryBytes > 0 && static_cast<uint64_t>(r.memoryBytes) > r.deviceMemoryBytes)
    std::printf("  warning: %s per rank exceeds the device's %s\n", bytesText(r.memoryBytes).c_str(),
                bytesText(static_cast<int64_t>(r.deviceMemoryBytes)).c_str());
  if (r.stages > 0) {
    std::printf(
        "\npipeline: %d stages, %d micro-batch(es) of %lld sample(s): bubble (K-1)/(M+K-1) = %.1f%%\n",
        r.stages, r.microBatches, static_cast<long long>(r.microBatch), 100 * r.bubble);
    std::printf("  %-6s %-12s %-12s %-12s %-12s %-12s %-12s %s\n", "stage", "compute", "transfer", "memory",
                "weights", "activations", "cut out", "layers");
    for (size_t i = 0; i < r.partition.size(); ++i) {
      const EstimateStage &s = r.partition[i];
      std::string layers;
      for (const std::string &l : s.layers)
        layers += (layers.empty() ? "" : ", ") + l;
      std::printf("  %-6zu %-12s %-12s %-12s %-12s %-12s %-12s %s\n", i,
                  durationText(s.computeSeconds).c_str(), durationText(s.transferSeconds).c_str(),
                  bytesText(s.memoryBytes).c_str(), bytesText(s.weightsBytes).c_str(),
                  bytesText(s.activationBytes).c_str(),
                  i + 1 < r.partition.size() ? bytesText(s.bytesOut).c_str() : "-", layers.c_str());
    }
  }
  std::printf("\ndata-parallel scaling (batch %lld per rank):\n", static_cast<long long>(r.batch));
  std::printf("  %-7s %-10s %-10s %s\n", "ranks", "step", "epoch", "efficiency");
  for (const EstimateScaling &p : r.scaling)
    std::printf("  %-7d %-10s %-10s %.1f%%\n", p.ranks, durationText(p.stepSeconds).c_str(),
                durationText(p.epochSeconds).c_str(), 100 * p.efficiency);
  std::printf("adding ranks stops paying beyond %d (doubling them shortens an epoch by less than 10%%)\n",
              r.stopsPayingAt);
}

nlohmann::json toJson(const EstimateResult &r) {
  nlohmann::json scaling = nlohmann::json::array();
  for (const EstimateScaling &p : r.scaling)
    scaling.push_back({{"ranks", p.ranks},
                       {"step_seconds", p.stepSeconds},
                       {"epoch_seconds", p.epochSeconds},
                       {"efficiency", p.efficiency}});
  nlohmann::json table = {
      {"name", r.costTable}, {"device", r.costTableDevice}, {"source", r.costTableSource}};
  if (!r.costTableFile.empty())
    table["file"] = r.costTableFile;
  if (!r.costTableNote.empty())
    table["note"] = r.costTableNote;
  nlohmann::json j = {{"network", r.network},
                      {"cost_table", std::move(table)},
                      {"note", r.note},
                      {"batch", r.batch},
                      {"ranks", r.ranks},
                      {"threads", r.threads},
                      {"epochs", r.epochs},
                      {"train_samples", r.trainSamples},
                      {"evaluation_samples", r.evaluationSamples},
                      {"final_test_samples", r.finalTestSamples},
                      {"steps_per_epoch", r.stepsPerEpoch},
                      {"step_seconds", r.stepSeconds},
                      {"step",
                       {{"forward", r.forwardSeconds},
                        {"loss", r.lossSeconds},
                        {"backward", r.backwardSeconds},
                        {"update", r.updateSeconds},
                        {"host", r.hostSeconds},
                        {"all_reduce", r.allReduceSeconds},
                        {"exposed_communication", r.exposedCommSeconds}}},
                      {"epoch_seconds", r.epochSeconds},
                      {"evaluation_seconds", r.evaluationSeconds},
                      {"checkpoint_seconds", r.checkpointSeconds},
                      {"total_seconds", r.totalSeconds},
                      {"images_per_second", r.imagesPerSecond},
                      {"memory_per_rank",
                       {{"total", r.memoryBytes},
                        {"parameters", r.parameterBytes},
                        {"gradients", r.gradientBytes},
                        {"optimizer_state", r.optimizerBytes},
                        {"tables", r.tableBytes},
                        {"activations", r.activationBytes},
                        {"inputs", r.inputBytes},
                        {"other", r.otherBytes},
                        {"device", r.deviceMemoryBytes}}},
                      {"efficiency", r.efficiency},
                      {"stops_paying_at", r.stopsPayingAt},
                      {"scaling", scaling}};
  nlohmann::json ops = nlohmann::json::array();
  for (const OpProfile &op : r.ops)
    ops.push_back({{"section", op.section}, {"op", op.op}, {"output", op.output}, {"us", op.microseconds}});
  j["ops"] = ops;
  if (r.stages > 0) {
    nlohmann::json stages = nlohmann::json::array();
    for (const EstimateStage &s : r.partition)
      stages.push_back({{"layers", s.layers},
                        {"compute_seconds", s.computeSeconds},
                        {"transfer_seconds", s.transferSeconds},
                        {"memory_bytes", s.memoryBytes},
                        {"weights_bytes", s.weightsBytes},
                        {"activation_bytes", s.activationBytes},
                        {"bytes_in", s.bytesIn},
                        {"bytes_out", s.bytesOut}});
    j["pipeline"] = {{"stages", stages},
                     {"micro_batches", r.microBatches},
                     {"bubble", r.bubble},
                     {"cut_bytes", r.cutBytes}};
  }
  return j;
}

int runEstimate(EstimateArgs &args) {
  if (!readFileOrReport(args.file, args.settings.train.maxSourceBytes))
    return kUsageError;
  TrainSettings &s = args.settings.train;
  Parsed<Optimizer> optimizer = parseOptimizer(args.optimizer);
  if (!optimizer) {
    printError(optimizer.error);
    return kUsageError;
  }
  s.optimizer = *optimizer;
  if (args.task != "auto")
    s.task = args.task == "multiclass" ? Task::Multiclass
             : args.task == "binary"   ? Task::Binary
                                       : Task::Regression;
  bool terminal = isatty(fileno(stderr)) != 0;
  args.settings.progress = printCalibrationProgress;
  args.settings.progressContext = &terminal;
  EstimateResult r = estimateTraining(args.file, args.settings);
  if (!r.diagnostics.empty())
    std::fputs(r.diagnostics.c_str(), stderr);
  if (!r.ok()) {
    printError(r.error);
    return r.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  if (args.format == "json")
    std::printf("%s\n", toJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else {
    if (args.ops)
      printOpProfile(r.ops);
    printText(r);
  }
  return kSuccess;
}

} // namespace

void addCostModelOption(CLI::App &app, std::string &spec) {
  app.add_option(
         "--cost-model", spec,
         "Cost table: a file written by netc calibrate, a built-in one (cpu: measured on one machine; h100: "
         "public figures), or machine: this machine's, measured once and kept in netc's cache folder "
         "(default: the device's built-in table where it describes this machine, else machine)")
      ->type_name("FILE|NAME");
}

void addEstimateCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<EstimateArgs>();
  EstimateSettings &e = args->settings;
  TrainSettings &s = e.train;
  s.epochs = 100;
  CLI::App *cmd = app.add_subcommand(
      "estimate", "Estimate a training run before it runs: time per step, per epoch and in total, memory per "
                  "rank, data-parallel scaling, pipeline stages");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--data", s.dataDir,
                  "Data folder, as netc train takes it (for its sample counts and sizes)");
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  addIntegerOption(*cmd, "--samples", e.samples, int64_t{1}, kMaxInt64,
                   "Without --data: training samples per epoch, for a run on paper");
  addIntegerOption(*cmd, "--input-size", e.inputSize, int64_t{1}, int64_t{1} << 31,
                   "Without --data: the feature count ('input X auto')");
  addIntegerOption(*cmd, "--epochs", s.epochs, int64_t{1}, kMaxInt64, "Passes over the training data");
  addIntegerOption(*cmd, "--batch", s.batch, int64_t{1}, kMaxInt64,
                   "Samples per step of each rank (default 1)");
  addIntegerOption(*cmd, "--accumulate", s.accumulate, int64_t{1}, kMaxInt64,
                   "Micro-batches of --batch samples per optimizer step");
  cmd->add_option("--optimizer", args->optimizer,
                  "sgd, adam or adadelta (its state's memory and update time)")
      ->capture_default_str();
  cmd->add_option("--momentum", s.momentum, "SGD momentum (a state slot when above 0)")
      ->capture_default_str();
  cmd->add_option("--validation", s.validationFraction,
                  "Fraction of the training data held out and evaluated after each epoch");
  cmd->add_option("--task", args->task, "multiclass, binary or regression (default: from the data)")
      ->check(CLI::IsMember({"auto", "multiclass", "binary", "regression"}))
      ->capture_default_str();
  addIntegerOption(*cmd, "--hidden-nodes", s.hiddenNodes, int64_t{1}, kMaxInt64,
                   "Size of 'hidden H auto' layers");
  addThreadsOption(*cmd, s.threads);
  addMaxSourceSizeOption(*cmd, s.maxSourceBytes);
  cmd->add_option("--device", s.device, "The device whose built-in cost table is the default: cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--bucket-mb", s.bucketMb, "MiB of gradients a data-parallel run all-reduces at once")
      ->type_name("MB")
      ->capture_default_str();
  addIntegerOption(*cmd, "--ranks", e.ranks, 1, 1 << 20, "Data-parallel ranks");
  addIntegerOption(*cmd, "--partition", e.stages, 1, 4096,
                   "Pipeline stages K: cut the network into K stages");
  addIntegerOption(*cmd, "--micro-batches", e.microBatches, 0, 1 << 20,
                   "With --partition: micro-batches M per step (0: 4 K)")
      ->capture_default_str();
  addIntegerOption(*cmd, "--max-ranks", e.maxRanks, 1, 1 << 20, "The scaling table's last rank count")
      ->capture_default_str();
  addCostModelOption(*cmd, e.costModel);
  // The kernels the run would use: this machine's table describes them.
  addCpuIsaOption(*cmd, s.cpuIsa);
  addDenseKernelOption(*cmd, s.denseKernel);
  cmd->add_flag("--ops", args->ops, "Also list every op's predicted time per step (as netc bench --profile)");
  cmd->add_option("--format", args->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runEstimate(*args); });
}

} // namespace netc::cli
