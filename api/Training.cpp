// Training.cpp -- the training API (include/netc/Training.h): loads the data,
// compiles the network with the data's sizes and task, checks the labels
// against the output, normalises, builds the Plan, runs it on a registered
// backend through runtime/train, and maps every failure to a message with
// the file or flag involved. Also Model (evaluate / predict from a
// checkpoint) and bench (throughput on random data).
#include "netc/Training.h"
#include "api/Backends.h"
#include "api/NetworkImpl.h"
#include "codegen/Codegen.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/data/DataFolder.h"
#include "runtime/data/Normalizer.h"
#include "runtime/data/Shuffle.h"
#include "runtime/optim/Schedule.h"
#include "runtime/train/RunFiles.h"
#include "runtime/train/Safetensors.h"
#include "runtime/train/Trainer.h"
#include "support/Spelling.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

namespace netc {

namespace {

Expected<std::string> readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string taskText(Task task) {
  switch (task) {
  case Task::Multiclass: return "multiclass";
  case Task::Binary: return "binary";
  case Task::Regression: return "regression";
  default: return "unspecified";
  }
}

/// A compiled network, or the formatted diagnostics.
struct Compiled {
  std::optional<Network> network;
  std::string diagnostics;
  std::string source;
  bool outputSizeMismatch = false; ///< NS0325: the output layer's size does not fit the task
};

Expected<Compiled> compileForData(const std::string &netPath, const CompileOptions &options) {
  auto text = readText(netPath);
  if (!text)
    return text.error();
  Compiled c;
  c.source = *text;
  CompileResult r = compile(*text, netPath, options);
  c.diagnostics = r.formattedDiagnostics;
  c.network = std::move(r.network);
  for (const Message &m : r.diagnostics)
    c.outputSizeMismatch = c.outputSizeMismatch || m.code == "NS0325";
  return c;
}

/// The task the labels suggest when none is given.
Task taskFromLabels(const data::Dataset &train) {
  if (!train.integerLabels)
    return Task::Regression;
  return train.classCount <= 2 ? Task::Binary : Task::Multiclass;
}

/// Every label of `data` is a class of the output layer `outputName` of
/// `netPath`; the first that is not is named with its file and line (CSV) or
/// record (IDX).
Status checkLabels(const data::Dataset &data, const plan::Plan &plan, const std::string &outputName,
                   const std::string &netPath) {
  if (!train::isClassification(plan))
    return Status::success();
  const int64_t classes = plan.outputNodes == 1 ? 2 : plan.outputNodes;
  const int64_t i = data::firstLabelOutside(data, classes);
  if (i < 0)
    return Status::success();
  return fail(fmt::format("{}: label {} is outside the {} classes of output layer '{}' of {} (labels must be "
                          "integers 0 to {}); fix the label, or check --task and the output layer's size",
                          data::labelLocation(data, i), double(data.labels[static_cast<size_t>(i)]), classes,
                          outputName, netPath, classes - 1));
}

/// When the labels made the task regression (no --task) because one of
/// them is not a class index: that label, where it is, and what to do.
std::optional<std::string> regressionCause(const std::vector<const data::Dataset *> &sets) {
  for (const data::Dataset *d : sets)
    if (d)
      for (int64_t i = 0; i < d->count; ++i)
        if (const float label = d->labels[static_cast<size_t>(i)]; !data::isClassLabel(label))
          return fmt::format("the labels were read as regression targets because {}: label {} is not a class "
                             "(an integer from 0 to {}); fix the label, or give --task",
                             data::labelLocation(*d, i), double(label), int64_t(data::kMaxClassLabel) - 1);
  return std::nullopt;
}

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

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i)
    out += fmt::format("{}{}", i ? "×" : "", shape[i]);
  return out;
}

/// How the run's weights start, for the run header: "init xavier", "resumed
/// from CKPT at epoch E, step S" or "init from CKPT (epoch E)" with the
/// layers --init-skip leaves fresh.
std::string startText(const TrainSettings &s, train::InitKind init,
                      const std::optional<train::SafetensorsFile> &startFile) {
  std::string fresh = fmt::format(
      "init {}{}", s.init,
      init == train::InitKind::Uniform ? fmt::format(" (diameter {:g})", s.initDiameter) : std::string());
  if (!startFile)
    return fresh;
  const int64_t epoch = startFile->metadataInt("epoch").value_or(0);
  if (!s.resume.empty())
    return fmt::format("resumed from {} at epoch {}, step {}", s.resume, epoch,
                       startFile->metadataInt("step").value_or(0));
  std::string skipped;
  for (const std::string &layer : s.initSkip)
    skipped += (skipped.empty() ? "" : ", ") + layer;
  return fmt::format("init from {} (epoch {}){}", s.initFrom, epoch,
                     skipped.empty() ? std::string() : fmt::format(", {} fresh: {}", skipped, fresh));
}

} // namespace

TrainResult trainNetwork(const std::string &netPath, const TrainSettings &s, TrainListener *listener) {
  registerBuiltinBackends();
  TrainResult result;
  auto usage = [&](std::string message) {
    result.failure = FailureKind::Usage;
    result.error = std::move(message);
    return result;
  };
  auto input = [&](std::string message) {
    result.failure = FailureKind::Input;
    result.error = std::move(message);
    return result;
  };
  // ---- flags ----
  if (s.epochs <= 0)
    return usage(fmt::format("--epochs must be at least 1, got {}", s.epochs));
  if (s.batch <= 0)
    return usage(fmt::format("--batch must be at least 1, got {}", s.batch));
  if (s.threads < 0 || s.threads > kMaxThreads)
    return usage(fmt::format("--threads must be from 0 (all cores) to {}, got {}", kMaxThreads, s.threads));
  if (!(s.initDiameter > 0) || !std::isfinite(s.initDiameter))
    return usage(fmt::format("--init-diameter must be positive, got {}", s.initDiameter));
  if (s.validationFraction && !(*s.validationFraction >= 0 && *s.validationFraction < 1))
    return usage(fmt::format("--validation must be in [0, 1), got {}", *s.validationFraction));
  auto optimizer = optim::parseOptimizer(s.optimizer);
  if (!optimizer)
    return usage(
        fmt::format("--optimizer must be one of {}, got '{}'", optim::optimizerChoices(), s.optimizer));
  optim::Hyperparameters hyper;
  hyper.learningRate = s.learningRate.value_or(optim::defaultLearningRate(*optimizer));
  hyper.momentum = s.momentum;
  hyper.nesterov = s.nesterov;
  hyper.weightDecay = s.weightDecay;
  hyper.beta1 = s.beta1;
  hyper.beta2 = s.beta2;
  hyper.epsilon = s.epsilon;
  hyper.decay = s.decay;
  hyper.conditioning = s.conditioning;
  if (std::string problem = optim::validate(hyper); !problem.empty())
    return usage(problem);
  auto schedule = optim::parseSchedule(s.schedule, s.epochs);
  if (!schedule)
    return usage(schedule.message());
  auto init = train::parseInit(s.init);
  if (!init)
    return usage(init.message());
  std::optional<data::NormalizerSpec> givenNormalizer;
  if (s.normalize) {
    auto spec = data::parseNormalizer(*s.normalize);
    if (!spec)
      return usage("--normalize: " + spec.message());
    givenNormalizer = *spec;
  }
  if (s.dataDir.empty())
    return usage("--data is required: a folder with train-images-idx3-ubyte / train-labels-idx1-ubyte (MNIST "
                 "names, raw or .gz) or train.csv (run scripts/prepare_mnist.sh to make data/mnist)");
  if (!s.resume.empty() && !s.initFrom.empty())
    return usage(
        "--resume and --init-from exclude each other: --resume continues a run (its epochs, optimizer "
        "state and data position), --init-from starts a new run from a checkpoint's weights");
  if (!s.initSkip.empty() && s.initFrom.empty())
    return usage("--init-skip needs --init-from: it names the layers left freshly initialised when a run "
                 "starts from a checkpoint's weights");

  // ---- the checkpoint a run starts from (--resume or --init-from) ----
  // Read before anything else: a run that cannot start from it writes nothing.
  const std::string &startPath = !s.resume.empty() ? s.resume : s.initFrom;
  std::optional<train::SafetensorsFile> startFile;
  std::optional<data::Normalizer> recordedNormalizer;
  if (!startPath.empty()) {
    auto file = train::readSafetensors(startPath);
    if (!file)
      return input(file.message());
    startFile = std::move(*file);
    if (Status format = train::checkCheckpointFormat(*startFile, startPath); !format)
      return input(format.message());
    // A run continues only from what a run records (docs/training.md, "The
    // checkpoint layout"); weights alone start a new run.
    if (!s.resume.empty())
      for (const char *key : {"epoch", "step"})
        if (!startFile->metadataInt(key))
          return input(
              fmt::format("{}: its metadata has no \"{}\" (a decimal integer), so it cannot continue "
                          "a run; start a new run from its weights with --init-from {}",
                          startPath, key, startPath));
    if (auto text = startFile->metadataString("normalizer")) {
      auto recorded = data::Normalizer::fromJson(*text);
      if (!recorded)
        return input(fmt::format("{}: bad normalizer metadata: {}", startPath, recorded.message()));
      recordedNormalizer = std::move(*recorded);
    } else if (!s.resume.empty() || !givenNormalizer) {
      // Unknown inputs: guessing would train on other inputs than the weights saw.
      return input(fmt::format("{}: its metadata has no \"normalizer\", so the inputs its weights expect are "
                               "unknown; {}",
                               startPath,
                               s.resume.empty()
                                   ? "pass --normalize to fit one on the training data (none for "
                                     "raw inputs)"
                                   : "add the one the run used (docs/training.md, \"The checkpoint "
                                     "layout\")"));
    }
    // A resumed run sees the inputs it was trained on: another normalizer is refused.
    if (!s.resume.empty() && givenNormalizer && *givenNormalizer != recordedNormalizer->spec())
      return usage(fmt::format(
          "--normalize {} differs from the normalizer {} recorded in {}, which the run was trained with; "
          "drop "
          "--normalize to keep it (or start a new run from these weights: --init-from {} --normalize {})",
          data::normalizerText(*givenNormalizer), data::normalizerText(recordedNormalizer->spec()), s.resume,
          s.resume, data::normalizerText(*givenNormalizer)));
  }

  // ---- data ----
  auto folder = data::loadDataFolder(s.dataDir);
  if (!folder)
    return input(folder.message());
  data::Dataset trainSet = std::move(folder->train);
  std::optional<data::Dataset> testSet = std::move(folder->test);
  // A resumed run without --seed continues with its checkpoint's seed: the
  // validation split and the shuffling must be those of the first run (a
  // checkpoint that cannot be read was refused above).
  // The same holds for the validation fraction: a resumed run keeps its own,
  // and another one given with --resume is refused.
  std::optional<uint64_t> givenSeed = s.seed;
  double validationFraction = s.validationFraction.value_or(0);
  if (!s.resume.empty())
    if (const train::SafetensorsFile *checkpoint = &*startFile) {
      if (auto shuffle = checkpoint->metadataString("shuffle"); shuffle && !givenSeed)
        if (auto state = data::ShuffleState::fromJson(*shuffle))
          givenSeed = state->seed;
      auto heldText = checkpoint->metadataString("validation"); // absent: no split
      const double held = heldText ? std::strtod(heldText->c_str(), nullptr) : 0.0;
      if (!s.validationFraction)
        validationFraction = held;
      else if (*s.validationFraction != held)
        return usage(fmt::format("--validation {} differs from the {} held out by the run in {}; drop "
                                 "--validation or pass --validation {}",
                                 *s.validationFraction, held, s.resume, held));
    }
  const uint64_t seed = givenSeed ? *givenSeed
                                  : std::random_device{}() ^
                                        uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  result.seed = seed;
  std::optional<data::Dataset> validation;
  if (validationFraction > 0) {
    auto split = data::splitValidation(trainSet, validationFraction, seed);
    if (!split)
      return usage("--validation: " + split.message());
    trainSet = std::move(split->train);
    validation = std::move(split->validation);
  }

  // ---- network ----
  CompileOptions options;
  options.inputSize = trainSet.featureCount;
  options.task = s.task != Task::Unspecified ? s.task : taskFromLabels(trainSet);
  if (options.task == Task::Multiclass)
    options.classCount = std::max(trainSet.classCount, testSet ? testSet->classCount : 0);
  options.hiddenNodes = s.hiddenNodes;
  // Azure ML's Neural Network Regression module defaults to 0.005 (NETSHARP §10).
  if (!s.learningRate && *optimizer == optim::OptimizerKind::Sgd && options.task == Task::Regression)
    hyper.learningRate = 0.005f;
  auto compiled = compileForData(netPath, options);
  if (!compiled)
    return input(compiled.message());
  // Labels 0 and 1 only suggest a binary task, but an output layer of more
  // than 2 nodes says the network classifies more classes (a slice of the
  // data with two of them): without --task, train it as multiclass.
  if (!compiled->network && compiled->outputSizeMismatch && s.task == Task::Unspecified &&
      options.task == Task::Binary) {
    CompileOptions multiclass = options;
    multiclass.task = Task::Multiclass;
    multiclass.classCount = std::max(trainSet.classCount, testSet ? testSet->classCount : 0);
    auto again = compileForData(netPath, multiclass);
    if (again && (again->network || again->outputSizeMismatch)) {
      compiled = std::move(again);
      options = multiclass;
    }
  }
  const std::string compileFailure = fmt::format(
      "{} has errors (with {} features per sample{} from {}, task {})", netPath, trainSet.featureCount,
      trainSet.sampleShape.size() > 1 ? " (" + shapeText(trainSet.sampleShape) + " images)" : "", s.dataDir,
      taskText(options.task));
  // The labels' class count sizes an `auto` output layer. An output layer of
  // a given size may have more classes than the data shows (a slice holding
  // some digits only), so when the compiler finds the sizes differ, compile
  // without the count: labels past the output layer are then refused below,
  // naming the label and where it is (not the size the compiler wanted).
  if (!compiled->network && compiled->outputSizeMismatch && options.task == Task::Multiclass) {
    CompileOptions sized = options;
    sized.classCount.reset();
    auto again = compileForData(netPath, sized);
    if (again && again->network) {
      compiled = std::move(again);
      options = sized;
    }
  }
  result.diagnostics = compiled->diagnostics;
  if (!compiled->network) {
    if (s.task == Task::Unspecified && options.task == Task::Regression && compiled->outputSizeMismatch)
      if (auto cause = regressionCause({&trainSet, testSet ? &*testSet : nullptr}))
        return input(compileFailure + ": " + *cause);
    return input(compileFailure);
  }
  const ir::Network &net = compiled->network->impl().network;
  plan::PlanOptions planOptions;
  planOptions.optimizerStateSlots = optim::stateSlots(*optimizer, hyper);
  planOptions.maxMemoryBytes = s.maxMemory;
  auto plan = plan::buildPlan(net, planOptions);
  if (!plan)
    return input(fmt::format("{}: {}", netPath, plan.message()));
  if (Status fits = plan::checkPlanFits(*plan, s.batch, s.maxMemory); !fits)
    return usage(fmt::format("--batch {}: {}", s.batch, fits.message()));
  if (plan->featureCount != trainSet.featureCount)
    return input(fmt::format("{}: samples have {} features ({}) but network '{}' reads {} (its input layers)",
                             trainSet.origin, trainSet.featureCount, shapeText(trainSet.sampleShape),
                             net.name, plan->featureCount));
  const std::string outputName = net.layers[static_cast<size_t>(net.output)].name;
  for (const data::Dataset *d :
       {&trainSet, testSet ? &*testSet : nullptr, validation ? &*validation : nullptr})
    if (d)
      if (Status st = checkLabels(*d, *plan, outputName, netPath); !st)
        return input(st.message()); // the label, not the size the compiler wanted for it
  // --init-skip: the parameters of the named layers start fresh.
  std::set<std::string> freshParameters;
  for (const std::string &layerName : s.initSkip) {
    auto layer = std::find_if(net.layers.begin(), net.layers.end(),
                              [&](const ir::Layer &l) { return l.name == layerName; });
    if (layer == net.layers.end()) {
      std::vector<std::string_view> names;
      for (const ir::Layer &l : net.layers)
        names.push_back(l.name);
      auto close = closestMatch(layerName, names);
      return usage(fmt::format("--init-skip: network '{}' has no layer '{}'{}", net.name, layerName,
                               close ? fmt::format("; did you mean '{}'?", *close) : std::string()));
    }
    const auto index = static_cast<int>(layer - net.layers.begin());
    bool owns = false;
    for (const plan::Parameter &p : plan->parameters)
      for (const ir::ParamRef &owner : p.owners)
        if (owner.layer == index) {
          freshParameters.insert(p.name);
          owns = true;
        }
    if (!owns)
      return usage(fmt::format("--init-skip: layer '{}' has no weights or biases to leave fresh (its "
                               "parameters are those of its incoming bundles and its biases)",
                               layerName));
  }
  // The classes of the output layer, and how many of them the labels use.
  const bool classifies = train::isClassification(*plan);
  const int64_t classes = !classifies ? 0 : plan->outputNodes == 1 ? 2 : plan->outputNodes;
  int64_t classesUsed = 0;
  if (classifies) {
    std::vector<bool> seen(static_cast<size_t>(classes), false);
    for (const data::Dataset *d :
         {&trainSet, testSet ? &*testSet : nullptr, validation ? &*validation : nullptr})
      if (d)
        for (float label : d->labels) // checkLabels made them integers in [0, classes)
          seen[static_cast<size_t>(label)] = true;
    classesUsed = std::count(seen.begin(), seen.end(), true);
  }
  // The normalizer: a resumed run's own; by default the one the weights of
  // --init-from were trained with; else fitted on the training data.
  data::Normalizer normalizer;
  std::string normalizerNote;
  if (recordedNormalizer && (!s.resume.empty() || !givenNormalizer)) {
    normalizer = *recordedNormalizer;
    normalizerNote = fmt::format(" (recorded in {})", startPath);
  } else {
    normalizer = data::Normalizer::fit(givenNormalizer.value_or(data::NormalizerSpec()), trainSet);
    if (recordedNormalizer)
      normalizerNote = fmt::format(" (re-fitted on the training data; {} recorded {})", startPath,
                                   data::normalizerText(recordedNormalizer->spec()));
    else if (startFile)
      normalizerNote = fmt::format(" (fitted on the training data; {} records no normalizer)", startPath);
  }
  if (normalizer.kind() != data::NormalizerKind::None && normalizer.featureCount() != trainSet.featureCount)
    return input(fmt::format("{}: its {} normalizer is for {} features but the samples of {} have {}{}",
                             startPath, data::normalizerText(normalizer.spec()), normalizer.featureCount(),
                             s.dataDir, trainSet.featureCount,
                             s.resume.empty() ? "; pass --normalize to fit one on this data" : ""));
  for (data::Dataset *d : {&trainSet, testSet ? &*testSet : nullptr, validation ? &*validation : nullptr})
    if (d)
      if (Status st = normalizer.apply(*d); !st)
        return input(st.message());

  // ---- run ----
  runtime::BackendOptions backendOptions;
  backendOptions.threads = s.threads;
  auto backend = runtime::createBackend(s.backend, backendOptions);
  if (!backend)
    return usage("--backend: " + backend.message());
  if (Status st = (*backend)->load(*plan, s.batch); !st)
    return input(st.message());

  train::TrainOptions t;
  t.epochs = s.epochs;
  t.batch = s.batch;
  t.optimizer = *optimizer;
  t.hyper = hyper;
  t.schedule = *schedule;
  t.init = {*init, s.initDiameter, seed};
  t.seed = seed;
  t.shuffle = s.shuffle;
  t.outDir = s.outDir.empty() ? "runs/" + net.name : s.outDir;
  t.overwrite = s.overwrite;
  if (!s.metricsFile.empty())
    t.metricsFiles.push_back(s.metricsFile);
  t.resumeFrom = s.resume;
  t.initFrom = s.initFrom;
  t.freshParameters = freshParameters;
  t.evaluatesValidation = validation.has_value();
  t.info.network = net.name;
  t.info.sourceHash = train::hashSource(compiled->source);
  t.info.extra["normalizer"] = normalizer.toJson();
  t.info.extra["task"] = taskText(options.task);
  t.info.extra["input_size"] = std::to_string(trainSet.featureCount);
  t.info.extra["input_shape"] = nlohmann::json(trainSet.sampleShape).dump();
  t.info.extra["classes"] = std::to_string(classes);
  t.info.extra["hidden_nodes"] = std::to_string(s.hiddenNodes);
  t.info.extra["validation"] = fmt::format("{:.17g}", validationFraction);
  result.outDir = t.outDir;
  result.trainSamples = trainSet.count;
  const data::Dataset *evalSet = validation ? &*validation : testSet ? &*testSet : nullptr;
  result.testSamples = evalSet ? evalSet->count : 0;
  result.params = net.params;
  if (listener) {
    std::vector<std::string> setup = {
        fmt::format("network {}: {} parameters, task {}{}, loss {}", net.name, net.params,
                    taskText(options.task),
                    !classifies ? std::string()
                                : fmt::format(", {} classes{}", classes,
                                              classesUsed < classes
                                                  ? fmt::format(" (the labels use {} of them)", classesUsed)
                                                  : std::string()),
                    plan::lossName(plan->loss)),
        fmt::format("data {}: {} training samples{} of {} features, normalizer {}", s.dataDir, trainSet.count,
                    evalSet
                        ? fmt::format(", {} {} samples", evalSet->count, validation ? "validation" : "test")
                        : std::string(),
                    trainSet.featureCount, data::normalizerText(normalizer.spec()) + normalizerNote),
        fmt::format("training {} epochs, batch {}, {} lr {:g}{}{}, {}, seed {}, {} thread(s) on {}", s.epochs,
                    s.batch, s.optimizer, hyper.learningRate,
                    hyper.momentum > 0 ? fmt::format(" momentum {:g}", hyper.momentum) : std::string(),
                    s.schedule != "constant" ? ", schedule " + s.schedule : std::string(),
                    startText(s, *init, startFile), seed, runtime::cpu::threadCount(), (*backend)->name())};
    listener->onSetup(setup);
  }
  train::Trainer trainer(*plan, **backend, trainSet, evalSet, t);
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
  if (testSet && !summary->interrupted) // a stop request wants the process back now
    result.finalTest = toPublic(train::evaluate(*plan, **backend, *testSet, s.batch));
  return result;
}

void removeTrainingTemporaries() noexcept {
  train::removeRegisteredTemporaries();
}

} // namespace netc
