// Training.cpp -- trainNetwork (include/netc/Training.h) as a row of named
// steps: checkSettings, readStartCheckpoint, loadData, compileNetwork,
// buildTrainingPlan, pickFreshParameters, normalizeData (TrainingSteps.cpp),
// then createBackend, makeTrainOptions and runTrainer (here). Each step
// returns what it made or a Refusal (a usage or input failure whose message
// names the file or flag involved); the first refusal ends the run before
// anything is written. The backend is reached only through runtime/core
// (api/Backends.cpp registers the built-in ones).
#include "netc/Training.h"
#include "api/Backends.h"
#include "api/TrainingSteps.h"
#include "codegen/Codegen.h"
#include "runtime/core/Backend.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/RunFiles.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
  return {e.samples, e.loss, e.accuracy, e.classification, e.confusion, e.classAccuracy};
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
  bool stopRequested() override { return listener_ && listener_->stopRequested(); }
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

/// Creates the backend --backend names (with --threads and its variant,
/// --cpu-isa) and loads the plan for batches of --batch samples.
Step<std::unique_ptr<runtime::Backend>> createBackend(const TrainSettings &s, const plan::Plan &plan) {
  runtime::BackendOptions options;
  options.threads = s.threads;
  options.variant = s.cpuIsa;
  auto backend = runtime::createBackend(s.backend, options);
  if (!backend)
    return usage("--backend: " + backend.message());
  if (Status st = (*backend)->load(plan, s.batch); !st)
    return input(st.message());
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

/// Everything the trainer needs besides the plan, the backend and the data:
/// the optimizer and schedule, the seed, the output files, and the facts a
/// checkpoint records so that eval, predict and a resumed run can rebuild
/// the network and its inputs.
train::TrainOptions makeTrainOptions(const TrainSettings &s, const RunSettings &run,
                                     const CompiledNetwork &network, const TrainingData &data,
                                     const TrainingPlan &plan, std::set<std::string> freshParameters,
                                     const Normalizing &normalizing) {
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
  t.outDir = s.outDir.empty() ? "runs/" + net.name : s.outDir;
  t.overwrite = s.overwrite;
  if (!s.metricsFile.empty())
    t.metricsFiles.push_back(s.metricsFile);
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

/// The run header (TrainListener::onSetup): the network, the data, and how
/// it is trained, on what.
std::vector<std::string> setupLines(const TrainSettings &s, const StartPoint &start,
                                    const CompiledNetwork &network, const TrainingData &data,
                                    const TrainingPlan &plan, const Normalizing &normalizing,
                                    const train::TrainOptions &t, const runtime::BackendInfo &backend) {
  const ir::Network &net = network.net();
  const data::Dataset *evalSet = data.evaluated();
  return {
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
      fmt::format("training {} epochs, batch {}{}, {} lr {:g}{}{}, {}, seed {}, {} thread(s) on {}", s.epochs,
                  s.batch,
                  s.accumulate > 1 ? fmt::format(" × {} micro-batches", s.accumulate) : std::string(),
                  optimizerName(s.optimizer), t.hyper.learningRate,
                  t.hyper.momentum > 0 ? fmt::format(" momentum {:g}", t.hyper.momentum) : std::string(),
                  s.schedule.kind != Schedule::Kind::Constant ? ", schedule " + scheduleText(s.schedule)
                                                              : std::string(),
                  startText(s, start), data.seed, backend.threads, backend.name)};
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
  if (!summary)
    return input(summary.message());
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
  if (data.test && !summary->interrupted) // a stop request wants the process back now
    result.finalTest = toPublic(train::evaluate(plan, backend, *data.test, batch));
  return std::nullopt;
}

} // namespace

TrainResult trainNetwork(const std::string &netPath, const TrainSettings &s, TrainListener *listener) {
  registerBuiltinBackends();
  TrainResult result;
  auto refuse = [&](Refusal refusal) {
    result.failure = refusal.kind;
    result.error = std::move(refusal.message);
    return result;
  };
  auto run = checkSettings(s);
  if (!run)
    return refuse(run.refusal());
  // ---- communicator (next issue: MPI data parallelism) ----
  // Here the run joins its communicator (local, or mpi under mpirun): rank and
  // world size. Then loadData takes rank 0's seed (broadcast) and each rank
  // reads its shard of the global order; makeTrainOptions gives only rank 0
  // the output folder and metrics files (rank 0 writes every file); the
  // backend's device follows the local rank.
  auto start = readStartCheckpoint(s, *run);
  if (!start)
    return refuse(start.refusal());
  auto data = loadData(s, *start);
  if (!data)
    return refuse(data.refusal());
  result.seed = data->seed;
  auto network = compileNetwork(netPath, s, *data, result.diagnostics);
  if (!network)
    return refuse(network.refusal());
  applyTaskDefaults(*run, s, network->options.task);
  const ir::Network &net = network->net();
  auto plan = buildTrainingPlan(netPath, s, *run, net, *data);
  if (!plan)
    return refuse(plan.refusal());
  auto fresh = pickFreshParameters(s, net, plan->plan);
  if (!fresh)
    return refuse(fresh.refusal());
  auto normalizing = normalizeData(s, *run, *start, *data);
  if (!normalizing)
    return refuse(normalizing.refusal());
  auto backend = createBackend(s, plan->plan);
  if (!backend)
    return refuse(backend.refusal());
  const runtime::BackendInfo info = (*backend)->describe();
  train::TrainOptions options =
      makeTrainOptions(s, *run, *network, *data, *plan, std::move(*fresh), *normalizing);
  result.outDir = options.outDir;
  result.trainSamples = data->train.count;
  result.testSamples = data->evaluated() ? data->evaluated()->count : 0;
  result.params = net.params;
  if (listener)
    listener->onSetup(setupLines(s, *start, *network, *data, *plan, *normalizing, options, info));
  if (auto refusal = runTrainer(plan->plan, **backend, *data, std::move(options), s.batch, listener, result))
    return refuse(std::move(*refusal));
  return result;
}

void removeTrainingTemporaries() noexcept {
  train::removeRegisteredTemporaries();
}

} // namespace netc
