// Trainer.cpp -- the training loop (see Trainer.h). runSteps is the step
// loop: per micro-batch it waits for the batch's input slot (fence), writes
// the step scalars, runs the plan once and starts writing the next batch
// into the other slot; every --log-every steps readSums takes the loss sums
// from the backend, reports progress and checks the loss is finite (the
// update op skips every step after a non-finite loss, so the parameters are
// still those before it and diverged() can locate the first non-finite
// layer). run wraps epochs around it: evaluation, the best epoch, the
// flat-loss hint, checkpoints and metrics. Checkpoints are written at epoch
// ends, and mid-epoch when the observer asks the run to stop; the data
// position and the partial epoch's running sums are saved with them, so a
// resumed run continues exactly. At an epoch end the checkpoints are written
// before the metrics line, so a metrics file never records an epoch that
// last.safetensors lacks.
#include "runtime/train/Trainer.h"
#include "runtime/data/Prefetcher.h"
#include "runtime/data/Shuffle.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/RunFiles.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <unistd.h>

namespace netc::train {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The layer a values buffer belongs to ("Conv1.pre" → "Conv1").
std::string layerOf(const std::string &buffer) {
  auto dot = buffer.find('.');
  return dot == std::string::npos ? buffer : buffer.substr(0, dot);
}

std::string metricsLine(const EpochReport &r) {
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", r.epoch},
                      {"train_loss", r.trainLoss},
                      {"train_accuracy", r.trainAccuracy},
                      {"images_per_sec", r.imagesPerSecond},
                      {"seconds", r.seconds},
                      {"learning_rate", r.learningRate}};
  const std::string eval = r.validation ? "validation" : "test";
  if (r.testLoss)
    j[eval + "_loss"] = *r.testLoss;
  if (r.testAccuracy && r.classification)
    j[eval + "_accuracy"] = *r.testAccuracy;
  if (!r.classification)
    j.erase("train_accuracy");
  return j.dump();
}

} // namespace

Trainer::Trainer(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &train,
                 const data::Dataset *test, TrainOptions options)
    : plan_(plan), backend_(backend), train_(train), test_(test), options_(std::move(options)) {}

Status Trainer::start(TrainObserver &observer) {
  if (options_.accumulate > 1 && plan_.stepBegin == 0)
    return fail(fmt::format("--accumulate {} needs a plan built for gradient accumulation "
                            "(PlanOptions::accumulateGradients)",
                            options_.accumulate));
  // Check every output path first: a refused run leaves nothing behind.
  if (Status s = checkRunOutputs({options_.outDir, options_.metricsFiles, options_.resumeFrom,
                                  options_.initFrom, options_.overwrite});
      !s)
    return s;
  // Read the checkpoint next: a refused resume leaves nothing behind either.
  const bool resuming = !options_.resumeFrom.empty();
  if (resuming) {
    auto info = loadCheckpoint(options_.resumeFrom, plan_, backend_, /*withOptimizerState=*/true,
                               optim::optimizerName(options_.optimizer));
    if (!info)
      return info.error();
    if (!info->sourceHash.empty() && info->sourceHash != options_.info.sourceHash)
      observer.onHint(fmt::format("{} was written from a different text of this network (same parameters); "
                                  "continuing",
                                  options_.resumeFrom));
    firstEpoch_ = info->epoch;
    step_ = info->step;
    if (firstEpoch_ >= options_.epochs)
      return fail(fmt::format("{} has already trained {} epoch(s); pass --epochs above {} to train more",
                              options_.resumeFrom, firstEpoch_, firstEpoch_));
    // The best epoch so far (0: none yet) and its score, read strictly.
    if (auto it = info->extra.find("best_epoch"); it != info->extra.end()) {
      int64_t best = -1;
      const char *first = it->second.data(), *last = first + it->second.size();
      auto [end, error] = std::from_chars(first, last, best);
      if (error != std::errc() || end != last || best < 0 || best > firstEpoch_)
        return fail(
            fmt::format("{}: metadata \"best_epoch\" is '{}', not an epoch from 0 to its \"epoch\" {}",
                        options_.resumeFrom, it->second.substr(0, 40), firstEpoch_));
      bestEpoch_ = best;
    }
    if (auto it = info->extra.find("best_score"); it != info->extra.end()) {
      char *end = nullptr;
      bestScore_ = std::strtod(it->second.c_str(), &end);
      if (it->second.empty() || *end != '\0' || std::isnan(bestScore_))
        return fail(fmt::format("{}: metadata \"best_score\" is '{}', not a number", options_.resumeFrom,
                                it->second.substr(0, 40)));
    }
    if (auto it = info->extra.find("shuffle"); it != info->extra.end()) {
      auto state = data::ShuffleState::fromJson(it->second);
      if (!state)
        return fail(fmt::format("{}: bad data position: {}", options_.resumeFrom, state.message()));
      if (state->seed != options_.seed)
        return fail(fmt::format("{} continues the run with seed {}; drop --seed or pass --seed {}",
                                options_.resumeFrom, state->seed, state->seed));
      if (state->position != 0 &&
          (state->epoch != firstEpoch_ || state->position < 0 || state->position >= train_.count))
        return fail(fmt::format("{}: metadata \"shuffle\" stops at sample {} of epoch {}, which does not fit "
                                "its \"epoch\" {} and the {} training samples of this data",
                                options_.resumeFrom, state->position, state->epoch + 1, firstEpoch_,
                                train_.count));
      firstPosition_ = state->position;
    }
    if (firstPosition_ > 0) { // saved mid-epoch: the partial epoch's running sums
      auto it = info->extra.find("epoch_sums");
      const nlohmann::json sums =
          it == info->extra.end() ? nlohmann::json()
                                  : nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      auto has = [&](const char *key, bool number) {
        return sums.contains(key) && (number ? sums[key].is_number() : sums[key].is_boolean());
      };
      if (!sums.is_object() || !has("loss", true) || !has("correct", true) || !has("batch", true) ||
          !has("shuffle", false) || (sums.contains("accumulate") && !has("accumulate", true)))
        return fail(
            fmt::format("{}: it was saved in the middle of epoch {} but its metadata \"epoch_sums\" is "
                        "missing or is not {{\"batch\": B, \"correct\": N, \"loss\": L, \"shuffle\": "
                        "true|false}}",
                        options_.resumeFrom, firstEpoch_ + 1));
      // The rest of the epoch is the same batches only with the same batch
      // size and order.
      const nlohmann::json accumulate = sums.contains("accumulate") ? sums["accumulate"] : nlohmann::json(1);
      if (sums["batch"] != options_.batch || sums["shuffle"] != options_.shuffle ||
          accumulate != options_.accumulate)
        return fail(
            fmt::format("{} stopped in the middle of epoch {}, which it continues only with the batch "
                        "size and order it had: pass --batch {}{}{}",
                        options_.resumeFrom, firstEpoch_ + 1, sums["batch"].dump(),
                        accumulate != 1 ? " --accumulate " + accumulate.dump() : std::string(),
                        sums["shuffle"] == true ? " without --no-shuffle" : " --no-shuffle"));
      firstLossSum_ = sums["loss"].get<double>();
      firstCorrect_ = sums["correct"].get<double>();
    }
  }
  // A new run from a checkpoint's weights: everything is initialised as in
  // any new run (fresh optimizer state), then the checkpoint's parameters
  // replace all but the fresh ones.
  if (!options_.initFrom.empty()) {
    initializeParameters(plan_, backend_, options_.init);
    auto info = loadCheckpoint(options_.initFrom, plan_, backend_, /*withOptimizerState=*/false, {},
                               options_.freshParameters);
    if (!info)
      return info.error();
  }
  // Only now is anything created, truncated or removed.
  if (!options_.outDir.empty()) {
    const std::filesystem::path dir(options_.outDir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return fail(fmt::format("cannot create the output folder '{}': {} (choose another with --out)",
                              options_.outDir, ec.message()));
    removeStaleTemporaries(options_.outDir, {std::string(kLastCheckpointName),
                                             std::string(kBestCheckpointName), std::string(kMetricsName)});
    if (options_.overwrite) // the replaced run's checkpoints go with it
      for (std::string_view name : {kLastCheckpointName, kBestCheckpointName})
        if (::unlink((dir / name).c_str()) != 0 && errno != ENOENT)
          return fail(fmt::format("--overwrite: cannot remove '{}': {}", (dir / name).string(),
                                  std::strerror(errno)));
    metricsPaths_.push_back((dir / kMetricsName).string());
  }
  for (const std::string &path : options_.metricsFiles) {
    // Next to the file and, through a symbolic link, next to its target,
    // where trimMetricsForResume writes its temporary.
    std::error_code ec;
    for (const std::filesystem::path &file :
         {std::filesystem::path(path), std::filesystem::weakly_canonical(path, ec)})
      if (!file.empty())
        removeStaleTemporaries(file.parent_path().string(), {file.filename().string()});
    metricsPaths_.push_back(path);
  }
  // A new (or replacing) run starts its metrics files empty; a resumed one
  // appends, after dropping what its checkpoint does not include.
  for (const std::string &path : metricsPaths_)
    if (Status st =
            resuming && !options_.overwrite ? trimMetricsForResume(path, firstEpoch_) : truncateFile(path);
        !st)
      return st;
  if (!resuming && options_.initFrom.empty())
    initializeParameters(plan_, backend_, options_.init);
  return Status::success();
}

Status Trainer::diverged(int64_t step, int64_t epoch, int64_t batch, int inputSlot, float learningRate) {
  std::vector<float> values;
  auto firstBad = [&](int buffer, int64_t count) {
    values.resize(static_cast<size_t>(count));
    backend_.read(buffer, values);
    for (float v : values)
      if (!std::isfinite(v))
        return std::isnan(v) ? "NaN" : "infinite";
    return static_cast<const char *>(nullptr);
  };
  std::string where = "the loss";
  const char *what = "NaN or infinite";
  for (const plan::Parameter &p : plan_.parameters)
    if (const char *bad = firstBad(p.buffer, p.count)) {
      where = fmt::format("parameter '{}'", p.name);
      what = bad;
      break;
    }
  if (where == "the loss") {
    // The backward pass may have reused the layers' memory: run the forward
    // ops again on the batch (the parameters are still those before it).
    backend_.run(plan_.stepBegin, plan_.forwardEnd, batch, inputSlot);
    backend_.synchronize();
  }
  if (where == "the loss")
    for (size_t i = plan_.stepBegin; i < plan_.forwardEnd; ++i) {
      int out = plan_.ops[i].out[0];
      const plan::Buffer &b = plan_.buffers[static_cast<size_t>(out)];
      if (const char *bad = firstBad(out, b.perSample * batch)) {
        where = fmt::format("the values of layer '{}'", layerOf(b.name));
        what = bad;
        break;
      }
    }
  return fail(
      fmt::format("training diverged at step {} (epoch {}): {} became {}. Hint: lower the learning rate "
                  "(--lr, now {:g}), use a smaller initialisation (--init-diameter, --init xavier), or "
                  "normalise the data (--normalize minmax)",
                  step, epoch + 1, where, what, learningRate));
}

Status Trainer::writeMetrics(const std::string &line) {
  for (const std::string &path : metricsPaths_)
    if (Status st = appendLine(path, line); !st)
      return st;
  return Status::success();
}

Status Trainer::saveState(const std::string &path, int64_t epochsDone, int64_t position, double lossSum,
                          double correct) {
  CheckpointInfo info = options_.info;
  info.optimizer = std::string(optim::optimizerName(options_.optimizer));
  info.epoch = epochsDone;
  info.step = step_;
  info.extra["shuffle"] = data::ShuffleState{options_.seed, epochsDone, position}.toJson();
  info.extra["data_position"] = fmt::format("{{\"epoch\": {}, \"sample\": {}}}", epochsDone, position);
  if (position > 0) // JSON numbers round-trip doubles exactly
    info.extra["epoch_sums"] = nlohmann::json{
        {"loss", lossSum},
        {"correct", correct},
        {"batch", options_.batch},
        {"accumulate", options_.accumulate},
        {"shuffle",
         options_.shuffle}}.dump();
  info.extra["best_epoch"] = std::to_string(bestEpoch_);
  info.extra["best_score"] = fmt::format("{:.17g}", bestScore_);
  info.extra["rng"] =
      fmt::format("{{\"shuffle_seed\": {}, \"init_seed\": {}}}", options_.seed, options_.init.seed);
  info.extra["hyperparameters"] = nlohmann::json{{"learning_rate", options_.hyper.learningRate},
                                                 {"momentum", options_.hyper.momentum},
                                                 {"nesterov", options_.hyper.nesterov},
                                                 {"weight_decay", options_.hyper.weightDecay},
                                                 {"batch", options_.batch},
                                                 {"accumulate", options_.accumulate},
                                                 {"schedule", optim::formatSchedule(options_.schedule)}}
                                      .dump();
  return saveCheckpoint(path, plan_, backend_, info, /*withOptimizerState=*/true);
}

Expected<TrainSummary> Trainer::interrupt(TrainSummary summary, int64_t epoch, int64_t done, double lossSum,
                                          double correct, std::chrono::steady_clock::time_point runStart) {
  summary.interrupted = true;
  summary.stoppedEpoch = epoch + 1;
  summary.stoppedSample = done;
  summary.epochSamples = train_.count;
  summary.steps = step_;
  summary.bestEpoch = bestEpoch_;
  if (!options_.outDir.empty()) {
    const std::string last = (std::filesystem::path(options_.outDir) / kLastCheckpointName).string();
    // Stopped at an epoch end: last.safetensors already holds that epoch.
    if (done < train_.count)
      if (Status s = saveState(last, epoch, done, lossSum, correct); !s)
        return Error{s.message()};
    summary.checkpoint = last;
  }
  summary.seconds = secondsSince(runStart);
  return summary;
}

Status Trainer::readSums(EpochState &state, int64_t batchesRead, int64_t samplesRead,
                         TrainObserver &observer) {
  const auto sums = takeMetrics(plan_, backend_);
  const double loss = sums[static_cast<size_t>(plan::Metric::LossSum)];
  if (const double bad = sums[static_cast<size_t>(plan::Metric::FirstBadStep)];
      bad != 0 || !std::isfinite(loss))
    return diverged(bad != 0 ? static_cast<int64_t>(bad) : step_, state.epoch, state.lastBatch,
                    state.lastSlot, state.learningRate);
  state.lossSum += loss;
  state.correct += sums[static_cast<size_t>(plan::Metric::Correct)];
  const int64_t n = train_.count;
  const int64_t batches = (n + options_.batch - 1) / options_.batch;
  const int64_t window = std::max<int64_t>(1, batches / 20);
  // The flat-loss hint compares the mean loss of the first and the last
  // window of batches (each read's mean, by the batch it ends with).
  const double mean = samplesRead ? loss / double(samplesRead) : 0;
  if (state.batchIndex <= window) {
    state.firstLoss += mean;
    ++state.firstReads;
  }
  if (state.batchIndex - batchesRead >= batches - window) {
    state.lastLoss += mean;
    ++state.lastReads;
  }
  const double elapsed = secondsSince(state.start);
  Progress p{state.epoch + 1,
             options_.epochs,
             state.done,
             n,
             state.batchIndex,
             batches,
             state.lossSum / double(state.done),
             state.correct / double(state.done),
             elapsed > 0 ? double(state.done - state.skipped) / elapsed : 0,
             0};
  p.etaSeconds = p.imagesPerSecond > 0
                     ? (double(n - state.done) + double(options_.epochs - state.epoch - 1) * double(n)) /
                           p.imagesPerSecond
                     : 0;
  observer.onProgress(p);
  return Status::success();
}

Expected<bool> Trainer::runSteps(EpochState &state, TrainObserver &observer) {
  const int64_t n = train_.count;
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (options_.shuffle)
    order = data::epochPermutation(n, options_.seed, state.epoch);
  else
    std::iota(order.begin(), order.end(), int64_t{0});
  order.erase(order.begin(), order.begin() + state.skipped);
  data::BatchPrefetcher prefetcher(train_, std::move(order), options_.batch);
  const int64_t perStep = options_.batch * options_.accumulate;
  int slot = 0;
  auto stage = [&](int into, const data::Batch &batch) {
    backend_.writeInput(into, plan_.features, batch.features);
    backend_.writeInput(into, plan_.labels, batch.labels);
  };
  std::optional<data::Batch> current = prefetcher.next();
  if (current)
    stage(slot, *current);
  int64_t stepSamples = 0, stepDone = 0, stepsUnread = 0, batchesUnread = 0, samplesUnread = 0;
  while (current) {
    backend_.fence(); // the current batch is in `slot`
    const int64_t size = current->size;
    prefetcher.recycle(std::move(*current));
    const bool firstMicro = stepDone == 0;
    if (firstMicro) { // a new optimizer step over the next `stepSamples` samples
      stepSamples = std::min(perStep, n - state.done);
      state.learningRate = optim::scheduledLearningRate(options_.schedule, options_.hyper.learningRate,
                                                        state.epoch, double(state.done) / double(n));
      ++step_;
    }
    const bool lastMicro = stepDone + size >= stepSamples;
    writeStepScalars(plan_, backend_,
                     optim::stepScalars({options_.optimizer, options_.hyper}, state.learningRate, step_,
                                        stepSamples, size));
    backend_.run(firstMicro ? 0 : plan_.stepBegin, lastMicro ? plan_.ops.size() : plan_.backwardEnd, size,
                 slot);
    state.lastSlot = slot;
    current = prefetcher.next();
    if (current)
      stage(1 - slot, *current);
    slot = 1 - slot;
    stepDone = lastMicro ? 0 : stepDone + size;
    state.done += size;
    state.lastBatch = size;
    ++state.batchIndex;
    ++batchesUnread;
    samplesUnread += size;
    if (!lastMicro)
      continue;
    // Every --log-every steps, at the epoch's end and before a stop: the sums.
    auto read = [&]() -> Status {
      Status s = readSums(state, batchesUnread, samplesUnread, observer);
      stepsUnread = batchesUnread = samplesUnread = 0;
      return s;
    };
    if (++stepsUnread >= logEvery_ || !current)
      if (Status s = read(); !s)
        return Error{s.message()};
    if (state.done < n && observer.stopRequested()) {
      if (stepsUnread > 0)
        if (Status s = read(); !s)
          return Error{s.message()};
      backend_.synchronize();
      return true;
    }
  }
  backend_.synchronize();
  return false;
}

void Trainer::flatLossHint(const EpochState &state, const EpochReport &report, double previousLoss,
                           bool classification, TrainObserver &observer) {
  const int64_t batches = (train_.count + options_.batch - 1) / options_.batch;
  const double firstLoss = state.firstReads ? state.firstLoss / double(state.firstReads) : 0;
  const double lastLoss = state.lastReads ? state.lastLoss / double(state.lastReads) : 0;
  // Flat within the first epoch, or from one epoch to the next, while
  // still at chance (a converged loss is flat too, but not at chance).
  // (In the first epoch only when some read fell in each window: reads
  // coarser than a window, --log-every or --accumulate, leave nothing to compare.)
  bool flat = state.epoch == firstEpoch_
                  ? state.firstReads > 0 && state.lastReads > 0 &&
                        std::abs(firstLoss - lastLoss) <= 0.005 * std::abs(firstLoss)
                  : std::abs(report.trainLoss - previousLoss) <= 0.001 * std::abs(previousLoss);
  const double classes = plan_.outputNodes == 1 ? 2.0 : double(plan_.outputNodes);
  bool atChance = classification ? report.trainAccuracy <= 1.5 / classes : state.epoch == firstEpoch_;
  // Cross-entropy at chance is ln(classes): still there after an epoch is as telling as flat.
  bool chanceLoss =
      plan_.loss == plan::LossKind::CrossEntropy && report.trainLoss >= 0.97 * std::log(classes);
  if (!(flat || chanceLoss) || !atChance || batches < 2)
    return;
  hinted_ = true;
  const std::string &startedFrom = !options_.resumeFrom.empty() ? options_.resumeFrom : options_.initFrom;
  std::string init = !startedFrom.empty()
                         ? fmt::format("the weights of {} may not suit this data or these settings: "
                                       "check --normalize and --lr",
                                       startedFrom)
                     : options_.init.kind == InitKind::Uniform
                         ? fmt::format("with the initial-weights diameter {:g} (--init-diameter; Azure's "
                                       "default is 0.1) deep sigmoid networks start flat: try "
                                       "--init-diameter 1.0 or --init xavier",
                                       options_.init.diameter)
                         : fmt::format("check the initialisation (--init {})", initName(options_.init.kind));
  observer.onHint(fmt::format("the training loss has not moved in epoch {} ({:.4f}): the network's outputs "
                              "barely depend on its input; {}, add momentum (--momentum 0.9) or raise --lr "
                              "(now {:g})",
                              report.epoch, report.trainLoss, init, state.learningRate));
}

Expected<TrainSummary> Trainer::run(TrainObserver &observer) {
  if (Status s = start(observer); !s)
    return s.message().empty() ? fail("training could not start") : Error{s.message()};
  TrainSummary summary;
  summary.classification = isClassification(plan_);
  const auto runStart = Clock::now();
  const int64_t n = train_.count;
  logEvery_ =
      options_.logEvery > 0 ? options_.logEvery : std::max<int64_t>(1, backend_.describe().defaultLogEvery);
  observer.onStart(firstEpoch_, options_.epochs, n);
  takeMetrics(plan_, backend_); // start from clear sums
  double previousLoss = NAN;
  for (int64_t epoch = firstEpoch_; epoch < options_.epochs; ++epoch) {
    EpochState state;
    state.epoch = epoch;
    // A run resumed mid-epoch skips the samples its checkpoint has done.
    state.skipped = epoch == firstEpoch_ ? firstPosition_ : 0;
    state.done = state.skipped;
    state.batchIndex = (state.skipped + options_.batch - 1) / options_.batch;
    state.lossSum = state.skipped ? firstLossSum_ : 0;
    state.correct = state.skipped ? firstCorrect_ : 0;
    state.learningRate = options_.hyper.learningRate;
    state.start = Clock::now();
    auto stopped = runSteps(state, observer);
    if (!stopped)
      return stopped.error();
    if (*stopped)
      return interrupt(std::move(summary), epoch, state.done, state.lossSum, state.correct, runStart);
    const int64_t skipped = state.skipped;
    const float learningRate = state.learningRate;
    const double lossSum = state.lossSum, correct = state.correct;
    EpochReport report;
    report.epoch = epoch + 1;
    report.seconds = secondsSince(state.start);
    report.trainLoss = lossSum / double(n);
    report.trainAccuracy = correct / double(n);
    report.imagesPerSecond = report.seconds > 0 ? double(n - skipped) / report.seconds : 0;
    report.learningRate = learningRate;
    report.classification = summary.classification;
    report.validation = options_.evaluatesValidation;
    if (test_) {
      Evaluation e = evaluate(plan_, backend_, *test_, options_.batch);
      report.testLoss = e.loss;
      report.testAccuracy = e.accuracy;
      summary.finalTest = std::move(e);
    }
    // Best: highest test accuracy (classification), else lowest loss.
    double score = summary.classification && report.testAccuracy ? *report.testAccuracy
                   : report.testLoss                             ? -*report.testLoss
                   : summary.classification                      ? report.trainAccuracy
                                                                 : -report.trainLoss;
    if (bestEpoch_ == 0 || score > bestScore_) {
      bestScore_ = score;
      bestEpoch_ = report.epoch;
      report.best = true;
    }
    if (!hinted_)
      flatLossHint(state, report, previousLoss, summary.classification, observer);
    previousLoss = report.trainLoss;
    // Checkpoints first, then the metrics line: an interruption in between
    // leaves a checkpoint ahead of the metrics, never the other way round.
    if (!options_.outDir.empty()) {
      const std::filesystem::path dir(options_.outDir);
      if (Status s = saveState((dir / kLastCheckpointName).string(), report.epoch); !s)
        return Error{s.message()};
      if (report.best)
        if (Status s = saveState((dir / kBestCheckpointName).string(), report.epoch); !s)
          return Error{s.message()};
    }
    if (Status s = writeMetrics(metricsLine(report)); !s)
      return Error{s.message()};
    summary.epochs.push_back(report);
    observer.onEpoch(report);
    if (report.epoch < options_.epochs && observer.stopRequested())
      return interrupt(std::move(summary), epoch, n, lossSum, correct, runStart);
  }
  summary.steps = step_;
  summary.bestEpoch = bestEpoch_;
  summary.seconds = secondsSince(runStart);
  nlohmann::json end = {{"event", "end"},
                        {"epochs", options_.epochs},
                        {"steps", step_},
                        {"best_epoch", bestEpoch_},
                        {"seconds", summary.seconds}};
  if (!summary.epochs.empty()) {
    const EpochReport &last = summary.epochs.back();
    const std::string eval = last.validation ? "validation" : "test";
    end["train_loss"] = last.trainLoss;
    if (last.classification)
      end["train_accuracy"] = last.trainAccuracy;
    if (last.testLoss)
      end[eval + "_loss"] = *last.testLoss;
    if (last.testAccuracy && last.classification)
      end[eval + "_accuracy"] = *last.testAccuracy;
  }
  if (Status s = writeMetrics(end.dump()); !s)
    return Error{s.message()};
  return summary;
}

} // namespace netc::train
