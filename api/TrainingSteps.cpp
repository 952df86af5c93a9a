// TrainingSteps.cpp -- the steps that prepare a training run
// (TrainingSteps.h): checkSettings, readStartCheckpoint, loadData,
// compileNetwork, applyTaskDefaults, buildTrainingPlan, pickFreshParameters
// and normalizeData, with the helpers they share. Every message names the
// file or flag involved and says what to do.
#include "api/TrainingSteps.h"
#include "api/Pipeline.h"
#include "api/SettingValues.h"
#include "codegen/Codegen.h"
#include "runtime/comm/Launch.h"
#include "runtime/data/DataFolder.h"
#include "runtime/data/Shuffle.h"
#include "runtime/train/Evaluate.h"
#include "support/SourceFile.h"
#include "support/Spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <sys/stat.h>

namespace netc::training {

namespace {

/// The .net file, as the CLI reads it (support/SourceFile.h): bounded, and a
/// FIFO or a device is refused, never waited on.
Expected<std::string> readText(const std::string &path, uint64_t maxBytes) {
  std::string error;
  auto text = readSourceText(path, maxBytes, error);
  if (!text)
    return fail(fmt::format("cannot read '{}': {}", path, error));
  return std::move(*text);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i)
    out += fmt::format("{}{}", i ? "×" : "", shape[i]);
  return out;
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

} // namespace

Expected<Compiled> compileForData(const std::string &netPath, const CompileOptions &options) {
  auto text = readText(netPath, options.maxSourceBytes);
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

Refusal usage(std::string message) {
  return {FailureKind::Usage, std::move(message)};
}

Refusal input(std::string message) {
  return {FailureKind::Input, std::move(message)};
}

Step<train::RunFolderLock> holdRunFolder(const TrainSettings &s, const std::string &outDir) {
  train::RunOutputs outputs{outDir, {}, s.resume, s.initFrom, s.overwrite};
  if (!s.metricsFile.empty())
    outputs.metricsFiles.push_back(s.metricsFile);
  std::optional<train::RunFolderLock> lock;
  struct stat info {};
  if (::stat(outDir.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    auto taken = train::RunFolderLock::take(outDir);
    if (!taken)
      return input(taken.message());
    lock.emplace(std::move(*taken));
  }
  if (Status checked = train::checkRunOutputs(outputs); !checked)
    return input(checked.message());
  if (!lock) {
    auto taken = train::RunFolderLock::take(outDir);
    if (!taken)
      return input(taken.message());
    lock.emplace(std::move(*taken));
  }
  return std::move(*lock);
}

std::string taskText(Task task) {
  switch (task) {
  case Task::Multiclass: return "multiclass";
  case Task::Binary: return "binary";
  case Task::Regression: return "regression";
  default: return "unspecified";
  }
}

// ---- 1. the settings ------------------------------------------------------------------

Step<RunSettings> checkSettings(const TrainSettings &s) {
  if (s.epochs <= 0)
    return usage(fmt::format("--epochs must be at least 1, got {}", s.epochs));
  if (s.batch < 0) // 0: the default
    return usage(fmt::format("--batch must be at least 1, got {}", s.batch));
  if (s.accumulate <= 0)
    return usage(fmt::format("--accumulate must be at least 1, got {}", s.accumulate));
  if (s.batch > 0 && s.accumulate > std::numeric_limits<int64_t>::max() / s.batch)
    return usage(fmt::format("--accumulate {} micro-batches of --batch {} are more samples per step than {}",
                             s.accumulate, s.batch, std::numeric_limits<int64_t>::max()));
  if (s.threads < 0 || s.threads > kMaxThreads)
    return usage(fmt::format("--threads must be from 0 (all cores) to {}, got {}", kMaxThreads, s.threads));
  if (!(s.initDiameter > 0) || !std::isfinite(s.initDiameter))
    return usage(fmt::format("--init-diameter must be positive, got {}", s.initDiameter));
  if (s.validationFraction && !(*s.validationFraction >= 0 && *s.validationFraction < 1))
    return usage(fmt::format("--validation must be in [0, 1), got {}", *s.validationFraction));
  if (s.logEvery < 0)
    return usage(fmt::format("--log-every must be at least 1, got {}", s.logEvery));
  if (!(s.commTimeout > 0 && s.commTimeout <= kMaxCommTimeout))
    return usage(fmt::format("--comm-timeout must be a positive number of seconds up to {:g}, got {:g}",
                             kMaxCommTimeout, s.commTimeout));
  if (s.sync.every < 1)
    return usage(fmt::format("--sync local-sgd:H needs H >= 1, got {}", s.sync.every));
  if (auto warmup = optim::parseWarmup(lrWarmupText(s.lrWarmup)); s.lrWarmup.length != 0 && !warmup)
    return usage(warmup.message());
  if (const Launch &l = s.launch; l.size < 1 || l.size > comm::kMaxRanks || l.rank < 0 || l.rank >= l.size ||
                                  l.localSize < 1 || l.localSize > l.size || l.localRank < 0 ||
                                  l.localRank >= l.localSize)
    return usage(fmt::format("the launch says rank {} of {} (local rank {} of {}), which do not fit together",
                             l.rank, l.size, l.localRank, l.localSize));
  if (const int k = s.deterministicChunks; k != 0) {
    if (k < 0 || k > kMaxDeterministicChunks || (k & (k - 1)) != 0)
      return usage(fmt::format("--deterministic takes a power of two of chunks from 1 to {}, got {}",
                               kMaxDeterministicChunks, k));
    const int ranks = dataRanksAsked(s); // a pipeline's stages share one copy's chunks
    if ((ranks & (ranks - 1)) != 0 || k % ranks != 0) {
      std::string choices;
      for (int r = 1; r <= k; r *= 2)
        choices += (choices.empty() ? "" : r == k ? " or " : ", ") + std::to_string(r);
      if (pipelineAsked(s))
        return usage(fmt::format("--deterministic {} shares its {} chunks among the pipeline's data-parallel "
                                 "copies, which {} copies cannot: run {} copies",
                                 k, k, ranks, choices));
      return usage(
          fmt::format("--deterministic {} shares its {} chunks among the ranks, which {} ranks cannot: "
                      "run on {} ranks",
                      k, k, ranks, choices));
    }
    if (s.accumulate > 1)
      return usage(
          "--deterministic and --accumulate exclude each other: --deterministic already cuts each step "
          "into chunks");
    if (s.sync.kind == Sync::Kind::LocalSgd)
      return usage(
          "--deterministic fixes the order in which each step's gradients are added; --sync local-sgd "
          "has no such step: use one or the other");
  }
  if (auto problem = checkPipelineSettings(s))
    return std::move(*problem);
  if (s.checkpointEvery < 0)
    return usage(fmt::format("--checkpoint-every must be at least 1 step, got {}", s.checkpointEvery));
  if (s.checkpointEvery > 0 && s.sync.kind == Sync::Kind::LocalSgd && s.checkpointEvery % s.sync.every != 0)
    return usage(fmt::format("--checkpoint-every {} with --sync local-sgd:{} must be a multiple of {}: the "
                             "replicas are one model to save only every {} steps",
                             s.checkpointEvery, s.sync.every, s.sync.every, s.sync.every));
  if (!(s.bucketMb > 0 && s.bucketMb <= kMaxBucketMb))
    return usage(fmt::format("--bucket-mb must be a positive number of MiB up to {}, got {}", kMaxBucketMb,
                             s.bucketMb));
  RunSettings run;
  run.optimizer = toRuntime(s.optimizer);
  run.hyper.learningRate = s.learningRate.value_or(optim::defaultLearningRate(run.optimizer));
  run.hyper.momentum = s.momentum;
  run.hyper.nesterov = s.nesterov;
  run.hyper.weightDecay = s.weightDecay;
  run.hyper.beta1 = s.beta1;
  run.hyper.beta2 = s.beta2;
  run.hyper.epsilon = s.epsilon;
  run.hyper.decay = s.decay;
  run.hyper.conditioning = s.conditioning;
  if (std::string problem = optim::validate(run.hyper); !problem.empty())
    return usage(problem);
  // The parsers say what is wrong with a value out of range (scheduleText
  // and normalizeText write every value that differs from its default).
  if (auto schedule = optim::parseSchedule(scheduleText(s.schedule), s.epochs); !schedule)
    return usage(schedule.message());
  run.schedule = toRuntime(s.schedule, s.epochs);
  run.init = toRuntime(s.init);
  if (s.normalize) {
    if (auto spec = data::parseNormalizer(normalizeText(*s.normalize)); !spec)
      return usage("--normalize: " + spec.message());
    run.normalizer = toRuntime(*s.normalize);
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
  return run;
}

// ---- 2. the checkpoint a run starts from ----------------------------------------------

Step<StartPoint> readStartCheckpoint(const TrainSettings &s, const RunSettings &run) {
  StartPoint start;
  start.path = !s.resume.empty() ? s.resume : s.initFrom;
  if (start.path.empty())
    return start;
  const std::string &startPath = start.path;
  auto file = train::readSafetensors(startPath);
  if (!file)
    return input(file.message());
  start.file = std::move(*file);
  if (Status format = train::checkCheckpointFormat(*start.file, startPath); !format)
    return input(format.message());
  // A run continues only from what a run records (docs/training.md, "The
  // checkpoint layout"); weights alone start a new run.
  if (!s.resume.empty())
    for (const char *key : {"epoch", "step"})
      if (!start.file->metadataInt(key))
        return input(fmt::format("{}: its metadata has no \"{}\" (a decimal integer), so it cannot continue "
                                 "a run; start a new run from its weights with --init-from {}",
                                 startPath, key, startPath));
  if (auto text = start.file->metadataString("normalizer")) {
    auto recorded = data::Normalizer::fromJson(*text);
    if (!recorded)
      return input(fmt::format("{}: bad normalizer metadata: {}", startPath, recorded.message()));
    start.normalizer = std::move(*recorded);
  } else if (!s.resume.empty() || !run.normalizer) {
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
  if (!s.resume.empty() && run.normalizer && *run.normalizer != start.normalizer->spec())
    return usage(fmt::format(
        "--normalize {} differs from the normalizer {} recorded in {}, which the run was trained with; "
        "drop "
        "--normalize to keep it (or start a new run from these weights: --init-from {} --normalize {})",
        data::normalizerText(*run.normalizer), data::normalizerText(start.normalizer->spec()), s.resume,
        s.resume, data::normalizerText(*run.normalizer)));
  return start;
}

// ---- 3. the data ----------------------------------------------------------------------

Step<TrainingData> loadData(const TrainSettings &s, const StartPoint &start) {
  auto folder = data::loadDataFolder(s.dataDir);
  if (!folder)
    return input(folder.message());
  TrainingData d;
  d.train = std::move(folder->train);
  d.test = std::move(folder->test);
  std::optional<uint64_t> givenSeed = s.seed;
  d.validationFraction = s.validationFraction.value_or(0);
  if (!s.resume.empty()) { // a checkpoint that cannot be read was refused before
    const train::SafetensorsFile &checkpoint = *start.file;
    if (auto shuffle = checkpoint.metadataString("shuffle"); shuffle && !givenSeed)
      if (auto state = data::ShuffleState::fromJson(*shuffle))
        givenSeed = state->seed;
    auto heldText = checkpoint.metadataString("validation"); // absent: no split
    const double held = heldText ? std::strtod(heldText->c_str(), nullptr) : 0.0;
    if (!s.validationFraction)
      d.validationFraction = held;
    else if (*s.validationFraction != held)
      return usage(fmt::format("--validation {} differs from the {} held out by the run in {}; drop "
                               "--validation or pass --validation {}",
                               *s.validationFraction, held, s.resume, held));
  }
  d.seed = givenSeed ? *givenSeed
                     : std::random_device{}() ^
                           uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  return d;
}

std::optional<Refusal> splitValidationData(TrainingData &d) {
  if (d.validationFraction > 0) {
    auto split = data::splitValidation(d.train, d.validationFraction, d.seed);
    if (!split)
      return usage("--validation: " + split.message());
    d.train = std::move(split->train);
    d.validation = std::move(split->validation);
  }
  return std::nullopt;
}

// ---- 4. the network -------------------------------------------------------------------

Step<CompiledNetwork> compileNetwork(const std::string &netPath, const TrainSettings &s,
                                     const TrainingData &data, std::string &diagnostics) {
  const data::Dataset &trainSet = data.train;
  const std::optional<data::Dataset> &testSet = data.test;
  CompileOptions options;
  options.maxSourceBytes = s.maxSourceBytes;
  options.inputSize = trainSet.featureCount;
  options.task = s.task != Task::Unspecified ? s.task : taskFromLabels(trainSet);
  if (options.task == Task::Multiclass)
    options.classCount = std::max(trainSet.classCount, testSet ? testSet->classCount : 0);
  options.hiddenNodes = s.hiddenNodes;
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
  // without the count: labels past the output layer are then refused later,
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
  diagnostics = compiled->diagnostics;
  if (!compiled->network) {
    if (s.task == Task::Unspecified && options.task == Task::Regression && compiled->outputSizeMismatch)
      if (auto cause = regressionCause({&trainSet, testSet ? &*testSet : nullptr}))
        return input(compileFailure + ": " + *cause);
    return input(compileFailure);
  }
  return CompiledNetwork{std::move(*compiled), options};
}

void applyTaskDefaults(RunSettings &run, const TrainSettings &s, Task task) {
  if (!s.learningRate && run.optimizer == optim::OptimizerKind::Sgd && task == Task::Regression)
    run.hyper.learningRate = 0.005f;
}

// ---- 5. the plan ----------------------------------------------------------------------

plan::PlanOptions trainingPlanOptions(const TrainSettings &s, const RunSettings &run, int ranks,
                                      bool dataParallel) {
  plan::PlanOptions planOptions;
  planOptions.update = {run.optimizer, run.hyper};
  planOptions.maxMemoryBytes = s.maxMemory;
  planOptions.accumulateGradients = s.accumulate > 1;
  planOptions.bucketBytes = std::max<int64_t>(1, std::llround(s.bucketMb * double(1 << 20)));
  // --deterministic adds the gradients on the host in a fixed order: no all-reduce ops.
  if ((ranks > 1 || dataParallel) && s.deterministicChunks == 0)
    planOptions.replicaSync = s.sync.kind == Sync::Kind::LocalSgd ? plan::ReplicaSync::AverageReplicas
                                                                  : plan::ReplicaSync::AllReduceGradients;
  return planOptions;
}

Step<TrainingPlan> buildTrainingPlan(const std::string &netPath, const TrainSettings &s,
                                     const RunSettings &run, const ir::Network &net, TrainingData &data,
                                     int ranks, bool dataParallel, const StagePart *part) {
  plan::PlanOptions options = trainingPlanOptions(s, run, ranks, dataParallel);
  if (part) {
    options.stageOf = part->stageOf;
    options.stage = part->stage;
    options.splitParts = part->splitParts;
    options.part = part->part;
  }
  auto plan = plan::buildPlan(net, options);
  if (!plan)
    return input(fmt::format("{}: {}{}", netPath,
                             !part || plan.message().starts_with("--split") ? std::string() // names the layer
                                                                            : fmt::format("stage {}: ", part->stage),
                             plan.message()));
  if (part) { // each micro-batch in flight keeps its activations and inputs until its backward
    plan->activationSlots = part->activationSlots;
    plan->inputSlots = part->activationSlots;
  }
  if (Status fits = plan::checkPlanFits(*plan, s.batch, s.maxMemory); !fits)
    return usage(fmt::format("--batch {}: {}", s.batch, fits.message()));
  if (plan->featureCount != data.train.featureCount)
    return input(fmt::format("{}: samples have {} features ({}) but network '{}' reads {} (its input layers)",
                             data.train.origin, data.train.featureCount, shapeText(data.train.sampleShape),
                             net.name, plan->featureCount));
  const std::string outputName = net.layers[static_cast<size_t>(net.output)].name;
  for (const data::Dataset *d : data.sets())
    if (Status st = checkLabels(*d, *plan, outputName, netPath); !st)
      return input(st.message()); // the label, not the size the compiler wanted for it
  TrainingPlan p;
  p.plan = std::move(*plan);
  p.classifies = train::isClassification(p.plan);
  p.classes = !p.classifies ? 0 : p.plan.outputNodes == 1 ? 2 : p.plan.outputNodes;
  if (p.classifies) {
    std::vector<bool> seen(static_cast<size_t>(p.classes), false);
    for (const data::Dataset *d : data.sets())
      for (float label : d->labels) // checkLabels made them integers in [0, classes)
        seen[static_cast<size_t>(label)] = true;
    p.classesUsed = std::count(seen.begin(), seen.end(), true);
  }
  return p;
}

Step<std::set<std::string>> pickFreshParameters(const TrainSettings &s, const ir::Network &net,
                                                const plan::Plan &plan) {
  std::set<std::string> fresh;
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
    for (const plan::Parameter &p : plan.parameters)
      for (const ir::ParamRef &owner : p.owners)
        if (owner.layer == index) {
          fresh.insert(p.name);
          owns = true;
        }
    if (!owns)
      return usage(fmt::format("--init-skip: layer '{}' has no weights or biases to leave fresh (its "
                               "parameters are those of its incoming bundles and its biases)",
                               layerName));
  }
  return fresh;
}

// ---- 6. normalisation -----------------------------------------------------------------

Step<Normalizing> normalizeData(const TrainSettings &s, const RunSettings &run, const StartPoint &start,
                                TrainingData &data) {
  Normalizing n;
  if (start.normalizer && (!s.resume.empty() || !run.normalizer)) {
    n.normalizer = *start.normalizer;
    n.note = fmt::format(" (recorded in {})", start.path);
  } else {
    n.normalizer = data::Normalizer::fit(run.normalizer.value_or(data::NormalizerSpec()), data.train);
    // What a checkpoint may not hold, a run does not fit (eval and predict would refuse it).
    if (Status range = n.normalizer.checkRange(); !range)
      return input(
          fmt::format("{}: the {} normalizer fitted on its training data is out of range: {}; rescale "
                      "the features (other units) or pass --normalize none",
                      s.dataDir, data::normalizerText(n.normalizer.spec()), range.message()));
    if (start.normalizer)
      n.note = fmt::format(" (re-fitted on the training data; {} recorded {})", start.path,
                           data::normalizerText(start.normalizer->spec()));
    else if (start.file)
      n.note = fmt::format(" (fitted on the training data; {} records no normalizer)", start.path);
  }
  const data::Normalizer &normalizer = n.normalizer;
  if (normalizer.kind() != data::NormalizerKind::None && normalizer.featureCount() != data.train.featureCount)
    return input(fmt::format("{}: its {} normalizer is for {} features but the samples of {} have {}{}",
                             start.path, data::normalizerText(normalizer.spec()), normalizer.featureCount(),
                             s.dataDir, data.train.featureCount,
                             s.resume.empty() ? "; pass --normalize to fit one on this data" : ""));
  for (data::Dataset *d : data.sets())
    if (Status st = normalizer.apply(*d); !st)
      return input(st.message());
  return n;
}

} // namespace netc::training
