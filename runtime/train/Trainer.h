// Trainer.h -- the training loop (DESIGN.md §6): epochs of shuffled
// mini-batches prepared on a background thread, one plan step per batch
// (forward, loss, backward, updates), test evaluation after each epoch,
// checkpoints (last and best) and metrics as JSON lines, each output path
// checked before anything is written (RunFiles.h). It watches itself:
// a non-finite loss stops training with the step, the layer and a hint; a
// loss that does not move prints a hint naming the initialisation. The
// library never prints: what happens is reported to a TrainObserver, which
// may also ask the run to stop (Ctrl-C): the trainer then finishes the current
// step and saves a checkpoint that resumes exactly, mid-epoch included.
#pragma once

#include "codegen/Plan.h"
#include "runtime/core/Backend.h"
#include "runtime/data/Dataset.h"
#include "runtime/optim/Schedule.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace netc::train {

struct TrainOptions {
  int64_t epochs = 100; // Azure ML: 100 learning iterations
  int64_t batch = 1;    // Azure ML / MicrosoftML: online SGD (miniBatchSize 1)
  optim::OptimizerKind optimizer = optim::OptimizerKind::Sgd;
  optim::Hyperparameters hyper; // learning rate 0.1, momentum 0 (Azure ML)
  optim::Schedule schedule;
  InitOptions init;  // D15: uniform, diameter 0.1
  uint64_t seed = 0; // shuffling (and initialisation through init.seed)
  bool shuffle = true;
  std::string outDir;                    // last.safetensors, best.safetensors, metrics.jsonl ("" = none)
  bool overwrite = false;                // replace a run already in outDir (RunFiles.h)
  std::vector<std::string> metricsFiles; // extra JSON-lines files
  std::string resumeFrom;                // a checkpoint to continue from
  std::string initFrom;                  // a checkpoint whose weights start a new run
  std::set<std::string> freshParameters; // with initFrom: parameters left as initialised
  bool evaluatesValidation = false;      // the per-epoch evaluation set is a validation split
  CheckpointInfo info;                   // network, source hash, normalizer... stored in checkpoints
};

struct Progress {
  int64_t epoch = 0, epochs = 0; // 1-based epoch
  int64_t samplesDone = 0, samplesTotal = 0;
  int64_t batchesDone = 0, batchesTotal = 0;
  double loss = 0, accuracy = 0; // running means over this epoch
  double imagesPerSecond = 0, etaSeconds = 0;
};

struct EpochReport {
  int64_t epoch = 0; // 1-based
  double trainLoss = 0, trainAccuracy = 0;
  std::optional<double> testLoss, testAccuracy;
  double imagesPerSecond = 0, seconds = 0, learningRate = 0;
  bool best = false;
  bool classification = true; // accuracy is meaningful
  bool validation = false;    // testLoss/testAccuracy are of a validation split
};

struct TrainSummary {
  std::vector<EpochReport> epochs;
  int64_t steps = 0;
  int bestEpoch = 0;
  double seconds = 0;
  bool classification = true;
  std::optional<Evaluation> finalTest;
  /// Stopped at the observer's request before the last epoch ended.
  bool interrupted = false;
  int64_t stoppedEpoch = 0;  // 1-based epoch in progress when stopped
  int64_t stoppedSample = 0; // samples of it done (the whole epoch when stopped at its end)
  int64_t epochSamples = 0;  // samples per epoch
  std::string checkpoint;    // where the state was saved ("" without an output folder)
};

class TrainObserver {
public:
  virtual ~TrainObserver() = default;
  virtual void onStart(int64_t /*firstEpoch*/, int64_t /*epochs*/, int64_t /*samples*/) {}
  virtual void onProgress(const Progress &) {}
  virtual void onEpoch(const EpochReport &) {}
  virtual void onHint(const std::string &) {}
  /// Polled after every step: true stops the run cleanly (TrainSummary::interrupted).
  virtual bool stopRequested() { return false; }
};

/// Trains the loaded `plan` on `backend`. `test` may be null.
class Trainer {
public:
  Trainer(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &train,
          const data::Dataset *test, TrainOptions options);
  /// Initialises (or resumes) and runs every remaining epoch.
  Expected<TrainSummary> run(TrainObserver &observer);

private:
  Status start(TrainObserver &observer);
  /// The error for a non-finite loss: which parameter or layer went bad first.
  Status diverged(int64_t step, int64_t epoch, int64_t batch, float learningRate);
  Status writeMetrics(const std::string &line);
  /// Ends the run at the observer's request after `done` samples of (0-based)
  /// `epoch`: saves last.safetensors there unless the epoch is complete.
  Expected<TrainSummary> interrupt(TrainSummary summary, int64_t epoch, int64_t done, double lossSum,
                                   double correct, std::chrono::steady_clock::time_point runStart);
  /// Saves the state after `epochsDone` epochs and `position` samples of the
  /// next one, with the running sums of that partial epoch.
  Status saveState(const std::string &path, int64_t epochsDone, int64_t position = 0, double lossSum = 0,
                   double correct = 0);

  const plan::Plan &plan_;
  runtime::Backend &backend_;
  const data::Dataset &train_;
  const data::Dataset *test_;
  TrainOptions options_;
  int64_t firstEpoch_ = 0, step_ = 0;
  // A checkpoint saved mid-epoch: samples of epoch firstEpoch_ done, and their sums.
  int64_t firstPosition_ = 0;
  double firstLossSum_ = 0, firstCorrect_ = 0;
  int64_t bestEpoch_ = 0;
  double bestScore_ = 0;
  std::vector<std::string> metricsPaths_;
};

} // namespace netc::train
