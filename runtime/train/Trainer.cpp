// Trainer.cpp -- the training loop (see Trainer.h). runSteps is the step
// loop: per micro-batch it waits for the batch's input slot (fence), writes
// the step scalars, runs the plan once and starts writing the next batch
// into the other slot (or, with the training set held on the device, has
// the backend gather it there, with no wait on the host); every --log-every
// steps readSums takes the loss sums from the backend, reports progress and
// checks the loss is finite (the update op skips every step after a
// non-finite loss, so the parameters are still those before it and
// diverged() can locate the first non-finite layer). run wraps epochs
// around it: evaluation, the best epoch, the flat-loss hint, checkpoints and
// metrics. Checkpoints are written at epoch ends, and mid-epoch when the
// observer asks the run to stop; the data position and the partial epoch's
// running sums are saved with them, so a resumed run continues exactly. At
// an epoch end the checkpoints are written before the metrics line, so a
// metrics file never records an epoch that last.safetensors lacks.
#include "runtime/train/Trainer.h"
#include "runtime/comm/Agreement.h"
#include "runtime/data/Prefetcher.h"
#include "runtime/data/Sharding.h"
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

/// An all-reduce op or its wait (the replicas' exchange of a step, run with
/// its last micro-batch), not a pipeline stage's send or receive.
bool syncsReplicas(plan::OpKind kind) {
  return kind == plan::OpKind::AllReduce || kind == plan::OpKind::AllReduceWait;
}

/// 100 (estimate - measured) / measured, or null without a measurement.
nlohmann::json errorPercent(double estimated, double measured) {
  return measured > 0 ? nlohmann::json(100 * (estimated - measured) / measured) : nlohmann::json(nullptr);
}

std::string metricsLine(const EpochReport &r, const std::optional<TrainOptions::Estimate> &estimate) {
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
  if (estimate) { // the training steps' seconds: the epoch's evaluation comes after them
    j["estimated_seconds"] = estimate->epochSeconds;
    j["estimate_error_percent"] = errorPercent(estimate->epochSeconds, r.seconds);
  }
  return j.dump();
}

} // namespace

Trainer::Trainer(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &train,
                 const data::Dataset *test, TrainOptions options)
    : plan_(plan), backend_(backend), train_(train), test_(test), options_(std::move(options)) {}

Expected<TrainSummary> Trainer::interrupt(TrainSummary summary, int64_t epoch, int64_t done, double lossSum,
                                          double correct, std::chrono::steady_clock::time_point runStart,
                                          TrainObserver &observer) {
  if (done < train_.count && step_ % options_.syncEvery != 0) // local SGD: save one model
    if (Status s = averageReplicas(); !s)
      return Error{s.message()};
  summary.interrupted = true;
  summary.stopReason = stopReason_;
  summary.stoppedEpoch = epoch + 1;
  summary.stoppedSample = done;
  summary.epochSamples = train_.count;
  summary.steps = step_;
  summary.bestEpoch = bestEpoch_;
  Status saved = Status::success();
  if (savesState()) {
    const std::string last = lastCheckpointPath();
    // Stopped at an epoch end: last.safetensors already holds that epoch.
    if (done < train_.count) {
      saved = saveState(last, epoch, done, lossSum, correct);
      if (saved && !last.empty())
        observer.onCheckpoint(last, step_);
    }
    summary.checkpoint = last;
  }
  // No rank leaves before rank 0's checkpoint is whole (a rank that ends
  // makes mpirun end the others).
  if (Status s = agreeOnEpochEnd(saved); !s)
    return Error{s.message()};
  summary.seconds = secondsSince(runStart);
  return summary;
}

Expected<bool> Trainer::readSums(EpochState &state, int64_t batchesRead, int64_t samplesRead,
                                 TrainObserver &observer) {
  const auto sums = takeMetrics(plan_, backend_);
  // A split stage's parts all compute its loss: the first counts it.
  double loss = plan_.part == 0 ? sums[static_cast<size_t>(plan::Metric::LossSum)] : 0.0;
  double correct = plan_.part == 0 ? sums[static_cast<size_t>(plan::Metric::Correct)] : 0.0;
  const double bad = sums[static_cast<size_t>(plan::Metric::FirstBadStep)];
  bool stop = false;
  bool diverging = bad != 0 || !std::isfinite(loss);
  if (ranks() > 1) {
    // One small all-reduce: the sums, whether any rank diverged, and whether
    // any rank was asked to stop (so that all stop at the same step).
    std::array<double, 4> global = {loss, correct, diverging ? 1.0 : 0.0,
                                    observer.stopRequested() ? 1.0 : 0.0};
    if (Status s = options_.comm->allReduce(std::span<double>(global), comm::ReduceOp::Sum,
                                            "all-reduce of the loss sums");
        !s)
      return Error{s.message()};
    loss = global[0];
    correct = global[1];
    diverging = global[2] != 0 || !std::isfinite(loss);
    stop = global[3] != 0;
    if (stop && !diverging)
      if (Status s = agreeStopReason(observer); !s)
        return Error{s.message()};
  }
  errorOnEveryRank_ = diverging && ranks() > 1; // every rank sees it; rank 0's diagnosis is reported
  if (diverging)
    return Error{diverged(bad != 0 ? static_cast<int64_t>(bad) : step_, state.epoch, state.lastBatch,
                          state.lastSlot, state.learningRate)
                     .message()};
  state.lossSum += loss;
  state.correct += correct;
  const int64_t n = train_.count;
  const int64_t batches = batchesPerEpoch();
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
  return stop;
}

int64_t Trainer::batchesPerEpoch() const {
  const int64_t global = options_.batch * dataRanks();
  return (train_.count + global - 1) / global;
}

Status Trainer::runOps(size_t first, size_t last, int64_t size, int slot, bool communicate) {
  if (communicate)
    return backend_.run(first, last, size, slot, options_.pipeline ? slot : 0);
  // The runs between the all-reduce ops.
  for (size_t begin = first; begin < last;) {
    size_t end = begin;
    while (end < last && !syncsReplicas(plan_.ops[end].kind))
      ++end;
    if (end > begin)
      if (Status s = backend_.run(begin, end, size, slot, options_.pipeline ? slot : 0); !s)
        return s;
    begin = end + 1;
  }
  return Status::success();
}

Status Trainer::runEmptyStep() {
  // No forward or backward pass: zero gradients enter the all-reduces (the
  // others' gradients come back), then the update.
  zeroGradients_.resize(static_cast<size_t>(plan_.arenaElements));
  if (plan_.gradientArena >= 0)
    backend_.write(plan_.gradientArena, zeroGradients_);
  for (size_t i = plan_.lossEnd; i < plan_.backwardEnd; ++i)
    if (syncsReplicas(plan_.ops[i].kind))
      if (Status s = backend_.run(i, i + 1, 1, 0); !s)
        return s;
  return backend_.run(plan_.backwardEnd, plan_.updateEnd, 1, 0);
}

Status Trainer::averageReplicas() {
  if (plan_.replicaSync != plan::ReplicaSync::AverageReplicas)
    return Status::success();
  return backend_.run(plan_.updateEnd, plan_.ops.size(), 1, 0);
}

Expected<bool> Trainer::runSteps(EpochState &state, TrainObserver &observer) {
  const int64_t n = train_.count;
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (options_.shuffle)
    order = data::epochPermutation(n, options_.seed, state.epoch);
  else
    std::iota(order.begin(), order.end(), int64_t{0});
  // The global steps of the rest of the epoch and this rank's share of each,
  // cut into micro-batches of --batch -- or with --deterministic, the
  // step's fixed chunks this rank owns (the micro-batch's leaf).
  const int64_t perStep = options_.batch * options_.accumulate * dataRanks();
  const std::vector<data::ShardedStep> steps =
      data::shardedSteps(n, state.skipped, perStep, dataRank(), dataRanks());
  struct Micro {
    int64_t first, size;
    int leaf; // --deterministic: the chunk
  };
  std::vector<std::vector<Micro>> micros(steps.size());
  std::vector<int64_t> mine, sizes;
  const int chunks = options_.deterministicChunks;
  const int64_t chunk = chunks ? (perStep + chunks - 1) / chunks : 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const data::ShardedStep &step = steps[k];
    if (chunks) {
      for (int j = fixedOrder_->first(); j < fixedOrder_->end(); ++j)
        if (const int64_t first = step.begin + j * chunk; first < step.begin + step.samples)
          micros[k].push_back({first, std::min(chunk, step.begin + step.samples - first), j});
    } else {
      for (int64_t first = step.mine.first; first < step.mine.end; first += options_.batch)
        micros[k].push_back({first, std::min(options_.batch, step.mine.end - first), -1});
    }
    for (const Micro &m : micros[k]) {
      mine.insert(mine.end(), order.begin() + m.first, order.begin() + m.first + m.size);
      sizes.push_back(m.size);
    }
  }
  // The micro-batches in order: gathered by the backend from the training
  // set it holds (--data-on-device), this rank's order uploaded once; or
  // gathered on the host by the prefetcher's thread and copied in.
  std::optional<data::BatchPrefetcher> prefetcher;
  std::optional<data::Batch> hostBatch; // the host batch last staged
  size_t nextMicro = 0;
  int64_t nextPosition = 0;
  if (options_.dataOnDevice) {
    const std::vector<int32_t> positions(mine.begin(), mine.end());
    if (Status st = backend_.setSampleOrder(positions); !st)
      return Error{st.message()};
  } else {
    prefetcher.emplace(train_, std::move(mine), sizes);
  }
  // Stages the next micro-batch into input slot `into`: its size, 0 after the last.
  auto stageNext = [&](int into) -> Expected<int64_t> {
    if (!prefetcher) {
      if (nextMicro == sizes.size())
        return int64_t{0};
      const int64_t size = sizes[nextMicro++];
      if (Status st = backend_.gatherInput(into, nextPosition, size); !st)
        return Error{st.message()};
      nextPosition += size;
      return size;
    }
    if (hostBatch) // copied in: the fence before its run waited for that
      prefetcher->recycle(std::move(*hostBatch));
    hostBatch = prefetcher->next();
    if (!hostBatch)
      return int64_t{0};
    backend_.writeInput(into, plan_.features, hostBatch->features);
    backend_.writeInput(into, plan_.labels, hostBatch->labels);
    return hostBatch->size;
  };
  int slot = 0;
  // The size of the batch in `slot` (a pipeline stage takes its batches as
  // its schedule's forwards come).
  Expected<int64_t> staged = options_.pipeline ? Expected<int64_t>(int64_t{0}) : stageNext(slot);
  if (!staged)
    return staged.error();
  const bool localSgd = plan_.replicaSync == plan::ReplicaSync::AverageReplicas;
  const int64_t warmup = optim::warmupSteps(options_.warmup, (n + perStep - 1) / perStep);
  int64_t stepsUnread = 0, batchesUnread = 0, samplesUnread = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const data::ShardedStep &step = steps[s];
    ++step_;
    if (options_.comm)
      options_.comm->setPosition(step_, state.epoch + 1);
    if (options_.pipeline) // their messages name the step too
      for (comm::Communicator *link : {options_.pipeline->stages, options_.pipeline->replicas})
        link->setPosition(step_, state.epoch + 1);
    state.learningRate =
        float(optim::scheduledLearningRate(options_.schedule,
                                           float(options_.hyper.learningRate * options_.learningRateScale),
                                           state.epoch, double(step.begin) / double(n)) *
              optim::warmupFactor(warmup, options_.learningRateScale, step_));
    // The loss scale 1 / this: the step's samples over every rank (their
    // gradients are summed), or for local SGD its share of them (each
    // replica steps on its own, then they are averaged).
    const double stepSamples = localSgd ? double(step.samples) / double(dataRanks()) : double(step.samples);
    const int64_t micro = static_cast<int64_t>(micros[s].size());
    if (chunks)
      fixedOrder_->reset();
    if (options_.pipeline && micro > 0) {
      std::vector<int64_t> microSizes;
      std::vector<int> leaves;
      for (const Micro &m : micros[s]) {
        microSizes.push_back(m.size);
        leaves.push_back(m.leaf);
      }
      if (Status st = runPipelineStep(microSizes, leaves, *prefetcher, stepSamples, state.learningRate); !st)
        return Error{st.message()};
      state.lastSlot = 0;
      state.lastBatch = 0; // diverged() cannot run the stages' forward again
    } else if (micro == 0 && !chunks) {
      writeStepScalars(plan_, backend_,
                       optim::stepScalars({options_.optimizer, options_.hyper}, state.learningRate, step_,
                                          stepSamples, 0));
      if (Status st = runEmptyStep(); !st)
        return Error{st.message()};
    }
    for (int64_t m = 0; m < (options_.pipeline ? 0 : micro); ++m) {
      if (prefetcher)
        backend_.fence(); // the current batch is in `slot` (a gather needs no wait on the host)
      const int64_t size = *staged;
      const bool firstMicro = m == 0, lastMicro = m + 1 == micro;
      writeStepScalars(plan_, backend_,
                       optim::stepScalars({options_.optimizer, options_.hyper}, state.learningRate, step_,
                                          stepSamples, size));
      if (chunks) { // this chunk's gradient alone, kept for the fixed-order sum
        if (Status st = backend_.run(0, plan_.backwardEnd, size, slot); !st)
          return Error{st.message()};
        backend_.read(plan_.gradientArena, fixedOrder_->leaf(micros[s][static_cast<size_t>(m)].leaf));
      } else if (Status st = runOps(firstMicro ? 0 : plan_.stepBegin,
                                    lastMicro ? plan_.updateEnd : plan_.backwardEnd, size, slot, lastMicro);
                 !st) {
        return Error{st.message()};
      }
      state.lastSlot = slot;
      state.lastBatch = size;
      staged = stageNext(1 - slot);
      if (!staged)
        return staged.error();
      slot = 1 - slot;
    }
    // Every rank's chunks added in the fixed tree, then the update (a
    // pipeline stage does so in its step, unless it had no micro-batch).
    if (chunks && !(options_.pipeline && micro > 0)) {
      if (Status st =
              fixedOrder_->sum(options_.pipeline ? options_.pipeline->replicas : options_.comm, fixedSum_);
          !st)
        return Error{st.message()};
      backend_.write(plan_.gradientArena, fixedSum_);
      if (micro == 0)
        writeStepScalars(plan_, backend_,
                         optim::stepScalars({options_.optimizer, options_.hyper}, state.learningRate, step_,
                                            stepSamples, 0));
      if (Status st = backend_.run(plan_.backwardEnd, plan_.updateEnd, 1, 0); !st)
        return Error{st.message()};
    }
    if (localSgd && step_ % options_.syncEvery == 0)
      if (Status st = averageReplicas(); !st)
        return Error{st.message()};
    state.done = step.begin + step.samples;
    const int64_t globalBatch = options_.batch * dataRanks();
    const int64_t batchIndex = (state.done + globalBatch - 1) / globalBatch;
    batchesUnread += batchIndex - state.batchIndex;
    state.batchIndex = batchIndex;
    samplesUnread += step.samples;
    // Every --log-every steps, at the epoch's end and before a stop: the sums.
    const bool last = s + 1 == steps.size();
    bool stop = false;
    if (++stepsUnread >= logEvery_ || last) {
      auto read = readSums(state, batchesUnread, samplesUnread, observer);
      if (!read)
        return read.error();
      stop = *read;
      stepsUnread = batchesUnread = samplesUnread = 0;
    }
    // One process polls its observer after every step; ranks agree on a stop
    // when they read the sums.
    if (ranks() == 1 && !last && observer.stopRequested()) {
      if (stepsUnread > 0) {
        auto read = readSums(state, batchesUnread, samplesUnread, observer);
        if (!read)
          return read.error();
        stepsUnread = batchesUnread = samplesUnread = 0;
      }
      stopReason_ = observer.stopReason();
      stop = true;
    }
    // --checkpoint-every: the same step on every rank, so all take part.
    if (!stop && !last && options_.checkpointEvery > 0 && step_ % options_.checkpointEvery == 0) {
      if (stepsUnread > 0) { // the sums the checkpoint keeps
        auto read = readSums(state, batchesUnread, samplesUnread, observer);
        if (!read)
          return read.error();
        stop = *read;
        stepsUnread = batchesUnread = samplesUnread = 0;
      }
      if (!stop)
        if (Status st = saveStepCheckpoint(state, observer); !st)
          return Error{st.message()};
    }
    if (stop && !last) {
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
  // Only what the run has not tried: momentum when it has none.
  const std::string momentum =
      options_.hyper.momentum > 0 ? std::string(",") : std::string(", add momentum (--momentum 0.9)");
  observer.onHint(fmt::format("the training loss has not moved in epoch {} ({:.4f}): the network's outputs "
                              "barely depend on its input; {}{} or raise --lr (now {:g})",
                              report.epoch, report.trainLoss, init, momentum, state.learningRate));
}

Status Trainer::writeEpochFiles(const EpochReport &report, TrainObserver &observer) {
  // The checkpoint keeps the line without its timings (a checkpoint's bytes
  // depend only on the run), marked as restored for the file it may go back into.
  const std::string line = metricsLine(report, options_.estimate);
  nlohmann::json kept = nlohmann::json::parse(line);
  for (const char *timing : {"images_per_sec", "seconds", "estimated_seconds", "estimate_error_percent"})
    kept.erase(timing);
  kept["restored"] = true;
  epochLine_ = kept.dump();
  if (savesState()) {
    const Status last = saveState(lastCheckpointPath(), report.epoch);
    if (last && !options_.outDir.empty())
      observer.onCheckpoint(lastCheckpointPath(), step_);
    // With pipeline stages every stage of rank 0's pipeline sends its tensors
    // for each file: rank 0 takes them for the best one too when it could
    // not write the last one, so that no stage is left waiting in a send
    // (the agreement after the epoch then says what failed).
    const Status best = report.best && (last || options_.pipeline) ? saveState(bestCheckpointPath(), report.epoch)
                                                                   : Status::success();
    if (!last)
      return last;
    if (!best)
      return best;
  }
  // The run's estimate goes in just before its first epoch line: after the
  // checkpoints, as every metrics line.
  if (!pendingEstimateLine_.empty()) {
    if (Status s = writeMetrics(pendingEstimateLine_); !s)
      return s;
    pendingEstimateLine_.clear();
  }
  return writeMetrics(line);
}

Status Trainer::agreeOnEpochEnd(const Status &mine) {
  if (ranks() == 1)
    return mine;
  comm::Outcome outcome;
  outcome.ok = mine.ok();
  outcome.message = mine.ok() ? std::string() : mine.message();
  auto verdict = comm::agree(*options_.comm, outcome, "agreement at the epoch's end");
  if (!verdict)
    return Error{verdict.message()};
  errorOnEveryRank_ = !verdict->ok;
  return verdict->ok ? Status::success() : fail(verdict->message);
}

Expected<bool> Trainer::anyRankStops(TrainObserver &observer) {
  const bool mine = observer.stopRequested();
  if (ranks() == 1) {
    if (mine)
      stopReason_ = observer.stopReason();
    return mine;
  }
  std::array<double, 1> stops = {mine ? 1.0 : 0.0};
  if (Status s = options_.comm->allReduce(std::span<double>(stops), comm::ReduceOp::Sum,
                                          "all-reduce of the stop requests");
      !s)
    return Error{s.message()};
  if (stops[0] != 0)
    if (Status s = agreeStopReason(observer); !s)
      return Error{s.message()};
  return stops[0] != 0;
}

Status Trainer::agreeStopReason(TrainObserver &observer) {
  std::array<double, 1> reason = {double(observer.stopReason())};
  if (ranks() > 1)
    if (Status s = options_.comm->allReduce(std::span<double>(reason), comm::ReduceOp::Max,
                                            "all-reduce of the stop reasons");
        !s)
      return s;
  stopReason_ = static_cast<int>(reason[0]);
  return Status::success();
}

Status Trainer::saveStepCheckpoint(const EpochState &state, TrainObserver &observer) {
  Status saved = Status::success();
  // (With local SGD the replicas were just averaged: --checkpoint-every is a
  // multiple of its period.)
  if (savesState()) {
    const std::string last = lastCheckpointPath();
    saved = saveState(last, state.epoch, state.done, state.lossSum, state.correct);
    if (saved && !last.empty())
      observer.onCheckpoint(last, step_);
  }
  return agreeOnEpochEnd(saved);
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
  if (options_.estimate) {
    const TrainOptions::Estimate &e = *options_.estimate;
    nlohmann::json line = {{"event", "estimate"},
                           {"cost_table", e.costTable},
                           {"step_seconds", e.stepSeconds},
                           {"epoch_seconds", e.epochSeconds},
                           {"evaluation_seconds", e.evaluationSeconds},
                           {"checkpoint_seconds", e.checkpointSeconds},
                           {"epochs", options_.epochs - firstEpoch_},
                           {"seconds", double(options_.epochs - firstEpoch_) *
                                           (e.epochSeconds + e.evaluationSeconds + e.checkpointSeconds)}};
    pendingEstimateLine_ = line.dump();
  }
  takeMetrics(plan_, backend_); // start from clear sums
  double previousLoss = NAN;
  for (int64_t epoch = firstEpoch_; epoch < options_.epochs; ++epoch) {
    EpochState state;
    state.epoch = epoch;
    // A run resumed mid-epoch skips the samples its checkpoint has done.
    state.skipped = epoch == firstEpoch_ ? firstPosition_ : 0;
    state.done = state.skipped;
    state.batchIndex = (state.skipped + options_.batch * dataRanks() - 1) / (options_.batch * dataRanks());
    state.lossSum = state.skipped ? firstLossSum_ : 0;
    state.correct = state.skipped ? firstCorrect_ : 0;
    state.learningRate = options_.hyper.learningRate;
    state.start = Clock::now();
    auto stopped = runSteps(state, observer);
    if (!stopped)
      return stopped.error();
    if (*stopped)
      return interrupt(std::move(summary), epoch, state.done, state.lossSum, state.correct, runStart,
                       observer);
    // Local SGD: the replicas agree at every epoch's end (evaluation and checkpoints see one model).
    if (step_ % options_.syncEvery != 0)
      if (Status s = averageReplicas(); !s)
        return Error{s.message()};
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
      auto e = evaluateSet(*test_, options_.evaluationBatch ? options_.evaluationBatch : options_.batch);
      if (!e)
        return e.error();
      report.testLoss = e->loss;
      report.testAccuracy = e->accuracy;
      summary.finalTest = std::move(*e);
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
    // (Only rank 0 has an output folder and metrics files; every rank
    // learns whether its writes failed.)
    Status written = writeEpochFiles(report, observer);
    if (Status agreed = agreeOnEpochEnd(written); !agreed)
      return Error{agreed.message()};
    summary.epochs.push_back(report);
    observer.onEpoch(report);
    if (report.epoch < options_.epochs) {
      auto stop = anyRankStops(observer);
      if (!stop)
        return stop.error();
      if (*stop)
        return interrupt(std::move(summary), epoch, n, lossSum, correct, runStart, observer);
    }
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
  if (options_.estimate) {
    const TrainOptions::Estimate &e = *options_.estimate;
    const double estimated =
        double(summary.epochs.size()) * (e.epochSeconds + e.evaluationSeconds + e.checkpointSeconds);
    end["estimated_seconds"] = estimated;
    end["estimate_error_percent"] = errorPercent(estimated, summary.seconds);
  }
  if (Status s = writeMetrics(end.dump()); !s)
    return Error{s.message()};
  return summary;
}

} // namespace netc::train
