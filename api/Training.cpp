// Training.cpp -- trainNetwork (include/netc/Training.h) as a row of named
// steps: checkSettings, joinJob, readStartCheckpoint, settleBatch, loadData,
// an agreement of the ranks, splitValidationData, compileNetwork,
// buildTrainingPlan, pickFreshParameters, normalizeData, createBackend and a
// second agreement (TrainingSteps.cpp, DataParallel.cpp), then
// makeTrainOptions and runTrainer (here). Each step returns what it made or a
// Refusal (a usage or input failure whose message names the file or flag
// involved); the first refusal ends the run before anything is written --
// with several ranks at the next agreement, which every rank reaches, so all
// of them stop with the same message. The backend is reached only through
// runtime/core (api/Backends.cpp registers the built-in ones).
#include "netc/Training.h"
#include "api/Backends.h"
#include "api/DataParallel.h"
#include "api/Pipeline.h"
#include "api/RunEstimate.h"
#include "api/SettingValues.h"
#include "api/TrainingSteps.h"
#include "codegen/Codegen.h"
#include "runtime/core/Backend.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/RunFiles.h"
#include "runtime/train/Trainer.h"
#include "support/NumberText.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace netc {

static_assert(int64_t(kDefaultBucketMb * (1 << 20)) == plan::kDefaultBucketBytes,
              "kDefaultBucketMb (include/netc/Training.h) is the plan's default bucket size");

namespace {

using namespace training;

EvaluationResult toPublic(const train::Evaluation &e) {
  return {e.samples, e.loss, e.accuracy, e.classification, e.confusion, e.classAccuracy, {}, {}};
}

class ListenerAdapter final : public train::TrainObserver {
public:
  explicit ListenerAdapter(TrainListener *listener) : listener_(listener) {}
  void onProgress(const train::Progress &p) override {
    if (listener_)
      listener_->onProgress({p.epoch, p.epochs, p.samplesDone, p.samplesTotal, p.batchesDone, p.batchesTotal,
                             p.loss, p.accuracy, p.imagesPerSecond, p.etaSeconds});
  }
  void onEpoch(const train::EpochReport &r) override {
    if (listener_)
      listener_->onEpoch(toPublic(r));
  }
  void onHint(const std::string &hint) override {
    if (listener_)
      listener_->onHint(hint);
  }
  void onCheckpoint(const std::string &path, int64_t step) override {
    if (listener_)
      listener_->onCheckpoint(path, step);
  }
  bool stopRequested() override { return listener_ && listener_->stopRequested(); }
  int stopReason() override { return listener_ ? listener_->stopReason() : 0; }
  static EpochResult toPublic(const train::EpochReport &r) {
    EpochResult e{r.epoch,           r.trainLoss, r.trainAccuracy, r.testLoss, r.testAccuracy,
                  r.imagesPerSecond, r.seconds,   r.learningRate,  r.best};
    e.classification = r.classification;
    e.validation = r.validation;
    return e;
  }

private:
  TrainListener *listener_;
};

// ---- 7. the backend -------------------------------------------------------------------

/// The most samples one run of the plan takes: --batch (a pipeline's
/// micro-batch), or with --deterministic a chunk of the global batch of
/// `copies` data-parallel ranks (every rank count then runs the same shapes).
int64_t runBatch(const TrainSettings &s, int copies) {
  if (s.deterministicChunks == 0)
    return s.batch;
  const int64_t global = s.batch * copies;
  return (global + s.deterministicChunks - 1) / s.deterministicChunks;
}

/// The device settings of this rank's backend.
DeviceSettings runDeviceSettings(const TrainSettings &s) {
  // A device per rank (the CUDA backend): local rank r uses GPU N + r, or
  // N + (r mod G) where a pipeline's ranks share G GPUs.
  const int shared = sharedGpus(s.launch, s.device, s.backend, pipelineAsked(s));
  return {s.device,
          s.backend,
          s.precision,
          s.cpuIsa,
          s.denseKernel,
          s.cudaDebug,
          s.cudaGraphs,
          threadsPerRank(s.threads, s.launch),
          shared > 0 ? s.launch.localRank % shared : s.launch.localRank};
}

/// The calibration's progress, for the run's listener.
void reportCalibration(void *listener, int done, int total, const std::string &what) {
  static_cast<TrainListener *>(listener)->onCalibrating(done, total, what);
}

/// Creates the backend --device and --backend name (with --threads, its
/// variant --cpu-isa, --precision, --cuda-debug and --cuda-graphs) and loads the plan for
/// batches of --batch samples; `deviceNote` gets what --device auto chose and why.
/// --data-on-device on a backend that cannot hold the training set is a usage error.
Step<std::unique_ptr<runtime::Backend>> createBackend(const TrainSettings &s, const plan::Plan &plan,
                                                      comm::Communicator &comm, int copies,
                                                      std::string &deviceNote) {
  auto setup = backendSetup(runDeviceSettings(s));
  if (!setup)
    return usage(setup.message());
  deviceNote = setup->note;
  auto backend = runtime::createBackend(setup->backend, setup->options);
  if (!backend)
    return usage("--backend: " + backend.message());
  if (Status st = (*backend)->load(plan, runBatch(s, copies)); !st)
    return input(st.message());
  if (s.dataOnDevice && !(*backend)->describe().holdsData)
    return usage(fmt::format("--data-on-device needs --device cuda: the {} backend trains from the training "
                             "set in host memory already",
                             (*backend)->name()));
  (*backend)->attach(&comm); // the plan's all-reduces
  return std::move(*backend);
}

// ---- 8. the trainer's options ---------------------------------------------------------

/// How the weights start, for the run header: "init xavier", "resumed
/// from CKPT at epoch E, step S" or "init from CKPT (epoch E)" with the
/// layers --init-skip leaves fresh.
std::string startText(const TrainSettings &s, const StartPoint &start) {
  std::string fresh = fmt::format(
      "init {}{}", initName(s.init),
      s.init == InitKind::Uniform ? fmt::format(" (diameter {:g})", s.initDiameter) : std::string());
  if (!start.file)
    return fresh;
  const int64_t epoch = start.file->metadataInt("epoch").value_or(0);
  if (!s.resume.empty())
    return fmt::format("resumed from {} at epoch {}, step {}", s.resume, epoch,
                       start.file->metadataInt("step").value_or(0));
  std::string skipped;
  for (const std::string &layer : s.initSkip)
    skipped += (skipped.empty() ? "" : ", ") + layer;
  return fmt::format("init from {} (epoch {}){}", s.initFrom, epoch,
                     skipped.empty() ? std::string() : fmt::format(", {} fresh: {}", skipped, fresh));
}

/// --out, or runs/<network name>.
std::string outputFolder(const TrainSettings &s, const ir::Network &net) {
  return s.outDir.empty() ? "runs/" + net.name : s.outDir;
}

/// Everything the trainer needs besides the plan, the backend and the data:
/// the optimizer and schedule, the seed, the output files, and the facts a
/// checkpoint records so that eval, predict and a resumed run can rebuild
/// the network and its inputs.
train::TrainOptions makeTrainOptions(const TrainSettings &s, const RunSettings &run,
                                     const CompiledNetwork &network, const TrainingData &data,
                                     const TrainingPlan &plan, std::set<std::string> freshParameters,
                                     const Normalizing &normalizing, comm::Communicator &comm, int copies) {
  const ir::Network &net = network.net();
  train::TrainOptions t;
  t.epochs = s.epochs;
  t.batch = s.batch;
  t.accumulate = s.accumulate;
  t.logEvery = s.logEvery; // 0: the backend's choice (BackendInfo::defaultLogEvery)
  t.optimizer = run.optimizer;
  t.hyper = run.hyper;
  t.schedule = run.schedule;
  t.init = {run.init, s.initDiameter, data.seed};
  t.seed = data.seed;
  t.shuffle = s.shuffle;
  // Only rank 0 writes files.
  if (comm.rank() == 0) {
    t.outDir = outputFolder(s, net);
    t.overwrite = s.overwrite;
    if (!s.metricsFile.empty())
      t.metricsFiles.push_back(s.metricsFile);
  }
  t.comm = &comm;
  t.syncEvery = s.sync.kind == Sync::Kind::LocalSgd ? s.sync.every : 1;
  t.learningRateScale = optim::lrScaleFactor(toRuntime(s.lrScaling), copies);
  t.warmup = toRuntime(s.lrWarmup);
  t.deterministicChunks = s.deterministicChunks;
  t.evaluationBatch = runBatch(s, copies);
  t.checkpointEvery = s.checkpointEvery;
  t.dataOnDevice = s.dataOnDevice;
  t.resumeFrom = s.resume;
  t.initFrom = s.initFrom;
  t.freshParameters = std::move(freshParameters);
  t.evaluatesValidation = data.validation.has_value();
  t.info.network = net.name;
  t.info.sourceHash = train::hashSource(network.compiled.source);
  t.info.extra["normalizer"] = normalizing.normalizer.toJson();
  t.info.extra["task"] = taskText(network.options.task);
  t.info.extra["input_size"] = std::to_string(data.train.featureCount);
  t.info.extra["input_shape"] = nlohmann::json(data.train.sampleShape).dump();
  t.info.extra["classes"] = std::to_string(plan.classes);
  t.info.extra["hidden_nodes"] = std::to_string(s.hiddenNodes);
  t.info.extra["validation"] = fmt::format("{:.17g}", data.validationFraction);
  return t;
}

/// What the run header says after "on <backend>": the GPU, and why --device
/// auto chose the device it did.
std::string describeDevice(const runtime::BackendInfo &backend, std::string_view note) {
  std::string out;
  if (backend.name == "cuda")
    out = backend.device;
  if (!note.empty())
    out += out.empty() ? std::string(note) : fmt::format("; {}", note);
  if (!backend.denseKernels.empty())
    out += fmt::format("{}dense: {}", out.empty() ? "" : "; ", backend.denseKernels);
  if (!backend.threadNote.empty())
    out += fmt::format("{}{}", out.empty() ? "" : "; ", backend.threadNote);
  return out.empty() ? out : fmt::format(" ({})", out);
}

/// The run header (TrainListener::onSetup): the network, the data, and how
/// it is trained, on what.
std::vector<std::string> setupLines(const TrainSettings &s, const StartPoint &start,
                                    const CompiledNetwork &network, const TrainingData &data,
                                    const TrainingPlan &plan, const Normalizing &normalizing,
                                    const train::TrainOptions &t, const runtime::BackendInfo &backend,
                                    std::string_view deviceNote, const comm::Communicator &comm,
                                    const PipelineLayout *pipeline) {
  const ir::Network &net = network.net();
  const data::Dataset *evalSet = data.evaluated();
  // The learning rate, with --lr-scaling's factor and the warm-up.
  std::string rate = fmt::format("{:g}", t.hyper.learningRate);
  const int copies = pipeline ? pipeline->copies : comm.size();
  if (t.learningRateScale != 1)
    rate +=
        fmt::format(" × {:g} ({} for {} {}) = {:g}", t.learningRateScale, lrScalingName(s.lrScaling), copies,
                    pipeline ? "pipelines" : "ranks", double(t.hyper.learningRate) * t.learningRateScale);
  if (t.hyper.momentum > 0)
    rate += fmt::format(" momentum {:g}", t.hyper.momentum);
  if (s.lrWarmup.length > 0)
    rate += fmt::format(", warm-up {:g} {}{}", s.lrWarmup.length, s.lrWarmup.steps ? "step" : "epoch",
                        s.lrWarmup.length == 1 ? "" : "s");
  if (s.deterministicChunks > 0)
    rate += fmt::format(", deterministic: {} chunks of {} a step added in a fixed order",
                        s.deterministicChunks, runBatch(s, copies));
  std::vector<std::string> lines = {
      fmt::format("network {}: {} parameters, task {}{}, loss {}", net.name, net.params,
                  taskText(network.options.task),
                  !plan.classifies
                      ? std::string()
                      : fmt::format(", {} classes{}", plan.classes,
                                    plan.classesUsed < plan.classes
                                        ? fmt::format(" (the labels use {} of them)", plan.classesUsed)
                                        : std::string()),
                  plan::lossName(plan.plan.loss)),
      fmt::format(
          "data {}: {} training samples{} of {} features, normalizer {}", s.dataDir, data.train.count,
          evalSet ? fmt::format(", {} {} samples", evalSet->count, data.validation ? "validation" : "test")
                  : std::string(),
          data.train.featureCount, data::normalizerText(normalizing.normalizer.spec()) + normalizing.note),
      fmt::format("training {} epochs, batch {}{}{}, {} lr {}{}, {}, seed {}, {} thread(s){} on {}{}",
                  s.epochs, pipeline ? pipeline->batch : s.batch,
                  pipeline          ? " per pipeline"
                  : comm.size() > 1 ? " per rank"
                                    : "",
                  pipeline           ? std::string()
                  : s.accumulate > 1 ? fmt::format(" × {} micro-batches ({} samples a step)", s.accumulate,
                                                   s.batch * s.accumulate * comm.size())
                                     : std::string(),
                  optimizerName(s.optimizer), rate,
                  s.schedule.kind != Schedule::Kind::Constant ? ", schedule " + scheduleText(s.schedule)
                                                              : std::string(),
                  startText(s, start), data.seed, backend.threads, comm.size() > 1 ? " per rank" : "",
                  backend.name, describeDevice(backend, deviceNote))};
  // Why a CSV's first row was taken as a header, right under the data line.
  size_t noteAt = 2;
  for (const data::Dataset *set : {&data.train, data.test ? &*data.test : nullptr})
    if (set && !set->headerNote.empty())
      lines.insert(lines.begin() + static_cast<ptrdiff_t>(noteAt++), "note: " + set->headerNote);
  if (s.dataOnDevice) // what Backend::holdDataset keeps, besides its order (4 bytes a sample)
    lines.back() += fmt::format(
        ", training set on the device ({:.1f} MiB, each batch gathered there)",
        double((data.train.features.size() + data.train.labels.size()) * sizeof(float)) / double(1 << 20));
  if (pipeline) {
    for (std::string &line : pipelineLines(*pipeline, net, s))
      lines.push_back(std::move(line));
    return lines;
  }
  if (std::string job = jobLine(s, comm, plan.plan); !job.empty())
    lines.push_back(std::move(job));
  return lines;
}

/// The run header's line about the estimate (netc estimate gives the details).
std::string estimateLine(const RunEstimate &e) {
  return fmt::format("estimate: {} s per epoch{}, {} s in total (step {} ms; cost table '{}'{}; "
                     "netc estimate gives the details)",
                     threeDigits(e.epochSeconds),
                     e.evaluationSeconds > 0
                         ? fmt::format(" + {} s evaluation", threeDigits(e.evaluationSeconds))
                         : std::string(),
                     threeDigits(e.totalSeconds), threeDigits(e.stepSeconds * 1e3), e.costTable,
                     e.note.empty() ? "" : "; " + e.note);
}

// ---- 9. training ----------------------------------------------------------------------

/// Runs every epoch, then evaluates the test set (unless the run was
/// stopped), filling `result`.
std::optional<Refusal> runTrainer(const plan::Plan &plan, runtime::Backend &backend, const TrainingData &data,
                                  train::TrainOptions options, int64_t batch, TrainListener *listener,
                                  TrainResult &result) {
  train::Trainer trainer(plan, backend, data.train, data.evaluated(), std::move(options));
  ListenerAdapter adapter(listener);
  auto summary = trainer.run(adapter);
  if (!summary) {
    result.errorOnEveryRank = trainer.errorOnEveryRank();
    return input(summary.message());
  }
  for (const train::EpochReport &r : summary->epochs)
    result.epochs.push_back(ListenerAdapter::toPublic(r));
  result.bestEpoch = summary->bestEpoch;
  result.seconds = summary->seconds;
  result.steps = summary->steps;
  result.interrupted = summary->interrupted;
  result.stoppedEpoch = summary->stoppedEpoch;
  result.stoppedSample = summary->stoppedSample;
  result.epochSamples = summary->epochSamples;
  result.checkpoint = summary->checkpoint;
  result.stopReason = summary->stopReason;
  result.measuredTotalSeconds = summary->seconds;
  if (data.test && !summary->interrupted) { // a stop request wants the process back now
    const auto testStart = std::chrono::steady_clock::now();
    auto test = trainer.evaluateSet(*data.test, batch);
    if (!test)
      return input(test.message());
    result.finalTest = toPublic(*test);
    result.measuredTotalSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - testStart).count();
  }
  return std::nullopt;
}

} // namespace

TrainResult trainNetwork(const std::string &netPath, const TrainSettings &given, TrainListener *listener) {
  registerBuiltinBackends();
  TrainResult result;
  result.rank = given.launch.rank;
  result.ranks = given.launch.size;
  auto refuse = [&](Refusal refusal) {
    result.failure = refusal.kind;
    result.error = std::move(refusal.message);
    return result;
  };
  auto run = checkSettings(given);
  if (!run) {
    result.errorOnEveryRank = given.launch.size > 1; // from the flags alone: every rank's
    return refuse(run.refusal());
  }
  // The job: one process (local), or a rank of several (MPI). From here on
  // every rank reaches each agreement, also after a refusal of its own, so
  // that all of them stop with the same message instead of timing out.
  auto joined = joinJob(given);
  if (!joined)
    return refuse(joined.refusal());
  comm::Communicator &comm = **joined;
  TrainSettings s = given;
  std::optional<Refusal> refusal;
  auto start = readStartCheckpoint(s, *run);
  if (!start)
    refusal = start.refusal();
  if (!refusal) {
    auto batch = settleBatch(s, *start);
    if (batch)
      s.batch = *batch;
    else
      refusal = batch.refusal();
  }
  std::optional<TrainingData> data;
  if (!refusal) {
    auto loaded = loadData(s, *start);
    if (loaded)
      data = std::move(*loaded);
    else
      refusal = loaded.refusal();
  }
  uint64_t seed = data ? data->seed : 0;
  refusal = agreeAcrossRanks(comm, std::move(refusal),
                             refusal ? comm::Fingerprint{} : runFingerprint(s, *run, *start, *data), seed,
                             "agreement on the settings and data", result.errorOnEveryRank);
  if (refusal)
    return refuse(std::move(*refusal));
  data->seed = seed; // rank 0's
  result.seed = seed;
  result.globalBatch = s.batch * s.accumulate * comm.size();
  if (auto split = splitValidationData(*data))
    refusal = std::move(split);
  std::optional<CompiledNetwork> network;
  if (!refusal) {
    auto compiled = compileNetwork(netPath, s, *data, result.diagnostics);
    if (compiled)
      network = std::move(*compiled);
    else
      refusal = compiled.refusal();
  }
  // Rank 0's outputs: checked and held before the header is printed.
  std::optional<train::RunFolderLock> folderLock;
  if (!refusal && comm.rank() == 0) {
    auto held = holdRunFolder(s, outputFolder(s, network->net()));
    if (held)
      folderLock.emplace(std::move(*held));
    else
      refusal = held.refusal();
  }
  std::optional<PipelineLayout> pipeline;
  std::string autoNote; // why --partition auto chose no pipeline
  std::optional<TrainingPlan> plan;
  std::set<std::string> fresh;
  std::optional<Normalizing> normalizing;
  std::unique_ptr<runtime::Backend> backend;
  std::string deviceNote;
  if (!refusal) {
    applyTaskDefaults(*run, s, network->options.task);
    const SampleCounts counts{data->train.count, data->evaluated() ? data->evaluated()->count : 0,
                              data->test ? data->test->count : 0};
    auto settled = settlePipeline(s, *run, network->net(), counts);
    if (!settled)
      refusal = settled.refusal();
    else if (*settled && (*settled)->stages == 1 &&
             (*settled)->splitParts.empty()) // auto chose data parallelism
      autoNote = fmt::format("pipeline: none: {} (data parallelism, K = 1, is fastest)", (*settled)->cutBy);
    else
      pipeline = std::move(*settled);
  }
  // With pipeline stages each rank is a stage of one of the data-parallel
  // copies; each step's batch goes through in micro-batches (the plan
  // accumulates their gradients, as --accumulate does).
  const int copies = pipeline ? pipeline->copies : comm.size();
  std::optional<StagePart> part;
  if (pipeline) {
    result.globalBatch = pipeline->batch * pipeline->copies;
    if (s.deterministicChunks == 0) {
      s.batch = pipeline->microBatch;
      s.accumulate = pipeline->microBatches;
    }
    part = StagePart{pipeline->stageOf, pipeline->stage,
                     train::activationSlots(pipeline->schedule, pipeline->stages, pipeline->stage,
                                            static_cast<int>(pipeline->microBatches)),
                     pipeline->splitParts, pipeline->part};
  }
  if (!refusal) {
    auto planned = buildTrainingPlan(netPath, s, *run, network->net(), *data, copies, comm.kind() == "nccl",
                                     part ? &*part : nullptr);
    if (planned)
      plan = std::move(*planned);
    else
      refusal = planned.refusal();
  }
  if (!refusal) {
    auto picked = pickFreshParameters(s, network->net(), plan->plan);
    if (picked)
      fresh = std::move(*picked);
    else
      refusal = picked.refusal();
  }
  if (!refusal) {
    auto normalized = normalizeData(s, *run, *start, *data);
    if (normalized)
      normalizing = std::move(*normalized);
    else
      refusal = normalized.refusal();
  }
  std::optional<cost::CostTable> costTable;
  std::string costTableLabel, costTableNote;
  if (!refusal && s.costModel != "none") {
    // The table of the device the backend runs on (auto may choose a GPU);
    // this machine's is measured only by a process alone (ranks would time
    // each other), before the backend takes the cores.
    auto setup = backendSetup(runDeviceSettings(s));
    auto chosen = chooseCostTable({s.costModel, setup && setup->backend == "cuda" ? "cuda" : s.device,
                                   s.cpuIsa, s.denseKernel, comm.size() == 1 && !pipelineAsked(s),
                                   listener ? reportCalibration : nullptr, listener});
    if (chosen) {
      costTable = std::move(chosen->table);
      costTableLabel = chosen->label;
      costTableNote = chosen->note;
    } else {
      refusal = usage("--cost-model: " + chosen.message());
    }
  }
  if (!refusal) {
    auto created = createBackend(s, plan->plan, comm, copies, deviceNote);
    if (created)
      backend = std::move(*created);
    else
      refusal = created.refusal();
  }
  refusal = agreeAcrossRanks(comm, std::move(refusal),
                             refusal ? comm::Fingerprint{}
                                     : networkFingerprint(*network, *plan, *normalizing,
                                                          pipeline ? pipelineFingerprint(*pipeline) : ""),
                             seed, "agreement on the network", result.errorOnEveryRank);
  if (refusal)
    return refuse(std::move(*refusal));
  // Every rank agreed: the pipelines' and the stages' communicators.
  std::optional<PipelineCommunicators> links;
  if (pipeline) {
    // Messages about a rank say which stage it holds.
    comm.setRankRoles(pipelineRoles(*pipeline));
    auto joined = joinPipeline(comm, *pipeline);
    if (!joined) {
      result.lostRank = comm.failed();
      return refuse(input(joined.message()));
    }
    links = std::move(*joined);
    backend->attach(links->copies.get());
    backend->attachStages(links->stages.get());
  }
  const runtime::BackendInfo info = backend->describe();
  train::TrainOptions options =
      makeTrainOptions(s, *run, *network, *data, *plan, std::move(fresh), *normalizing, comm, copies);
  if (pipeline)
    options.pipeline =
        train::TrainOptions::Pipeline{links->stages.get(), links->copies.get(), pipeline->schedule,
                                      pipeline->stage,     pipeline->widths,    s.splits};
  const ir::Network &net = network->net();
  result.outDir = options.outDir;
  result.trainSamples = data->train.count;
  result.testSamples = data->evaluated() ? data->evaluated()->count : 0;
  result.params = net.params;
  const bool split = pipeline && !pipeline->splitParts.empty();
  if (costTable && !split) {
    TrainSettings estimated = s;
    estimated.threads = info.threads;
    // A resumed run has only the epochs after its checkpoint's left.
    if (!s.resume.empty() && start->file)
      estimated.epochs = std::max<int64_t>(0, s.epochs - start->file->metadataInt("epoch").value_or(0));
    const SampleCounts counts{data->train.count, data->evaluated() ? data->evaluated()->count : 0,
                              data->test ? data->test->count : 0};
    if (pipeline) { // the whole network's plan, cut into the stages again
      estimated.batch = pipeline->batch;
      estimated.accumulate = 1;
    }
    auto e = pipeline ? estimateRun(net, *pipeline->wholePlan, *costTable, estimated, copies, counts,
                                    pipeline->stages, static_cast<int>(pipeline->microBatches))
                      : estimateRun(net, plan->plan, *costTable, estimated, comm.size(), counts);
    if (e) {
      RunEstimate estimate;
      estimate.costTable = costTableLabel;
      estimate.note = e->profileNote;
      estimate.stepSeconds = e->stepUs * 1e-6;
      estimate.epochSeconds = e->epochSeconds;
      estimate.evaluationSeconds = e->evaluationSeconds;
      estimate.checkpointSeconds = e->checkpointSeconds;
      estimate.totalSeconds = e->totalSeconds;
      estimate.finalTestSeconds =
          e->totalSeconds -
          double(estimated.epochs) * (e->epochSeconds + e->evaluationSeconds + e->checkpointSeconds);
      result.estimate = estimate;
      options.estimate = train::TrainOptions::Estimate{costTableLabel, estimate.stepSeconds, e->epochSeconds,
                                                       e->evaluationSeconds, e->checkpointSeconds};
    }
  }
  if (listener) {
    auto lines = setupLines(s, *start, *network, *data, *plan, *normalizing, options, info, deviceNote, comm,
                            pipeline ? &*pipeline : nullptr);
    if (!autoNote.empty())
      lines.push_back(autoNote);
    if (split && costTable)
      lines.push_back("estimate: none: the cost model does not price layers split over ranks (--split)");
    if (result.estimate)
      lines.push_back(estimateLine(*result.estimate));
    if (result.estimate && !costTableNote.empty())
      lines.push_back("cost table: " + costTableNote);
    listener->onSetup(lines);
    if (folderLock && !folderLock->warning().empty())
      listener->onHint(folderLock->warning());
    if (!info.kernelWarning.empty())
      listener->onWarning(info.kernelWarning);
  }
  if (folderLock) // the run is under way: its folder and lock stay
    folderLock->commit();
  if (auto failed = runTrainer(plan->plan, *backend, *data, std::move(options), runBatch(s, copies), listener,
                               result)) {
    result.lostRank = comm.failed();
    return refuse(std::move(*failed));
  }
  if (!result.outDir.empty())
    for (const std::string &name : train::runFilesIn(result.outDir))
      result.savedFiles.push_back((std::filesystem::path(result.outDir) / name).string());
  return result;
}

void removeTrainingTemporaries() noexcept {
  train::removeRegisteredTemporaries();
}

} // namespace netc
