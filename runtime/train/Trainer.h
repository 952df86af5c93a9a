// Trainer.h -- the training loop (docs/architecture.md §Data, optimizers and training): epochs of shuffled
// mini-batches prepared on a background thread and written to the backend's
// two input slots in turn (or, with the training set held on the device,
// gathered into them there), one Backend::run per micro-batch (forward, loss,
// backward and, at the step's last micro-batch, the fused update; K
// micro-batches per optimizer step with --accumulate K), the loss sums read
// every --log-every steps, test evaluation after each epoch,
// checkpoints (last and best) and metrics as JSON lines, each output path
// checked before anything is written (RunFiles.h). It watches itself:
// a non-finite loss stops training with the step, the layer and a hint; a
// loss that does not move prints a hint naming the initialisation. The
// library never prints: what happens is reported to a TrainObserver, which
// may also ask the run to stop (Ctrl-C): the trainer then finishes the current
// step and saves a checkpoint that resumes exactly, mid-epoch included.
// Data parallelism: with a communicator of several ranks every rank runs its
// share of each step of the global shuffled order (data/Sharding.h), the
// plan's all-reduce ops sum the gradients while the backward pass goes on
// (or local SGD averages the replicas every few steps), rank 0's initial
// state reaches every rank by broadcast, the loss sums, evaluation and a stop
// request are summed over the ranks, and only rank 0 writes files (the
// caller gives the others no output paths).
// Pipeline stages (TrainOptions::pipeline): each rank runs one stage's plan;
// a step's micro-batches go through the stages in the schedule's order
// (PipelineSchedule.h), each in an activation slot of its own, the last
// stage says whether the step's loss was finite before any stage updates,
// each stage's replicas all-reduce its gradients, and the checkpoints
// gather every stage's tensors into rank 0's one file.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Backend.h"
#include "runtime/data/Dataset.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/Schedule.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/FixedOrderSum.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/PipelineSchedule.h"

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace netc::data {
class BatchPrefetcher;
}

namespace netc::train {

struct TrainOptions {
  int64_t epochs = 100; // Azure ML: 100 learning iterations
  int64_t batch = 1;    // per rank; Azure ML / MicrosoftML: online SGD (miniBatchSize 1)
  /// Micro-batches of `batch` per optimizer step (the plan must be built with
  /// accumulateGradients when above 1): equal to a batch `accumulate` times larger.
  int64_t accumulate = 1;
  /// Optimizer steps between reads of the loss sums (progress, the
  /// non-finite check); 0: the backend's default (BackendInfo::defaultLogEvery).
  int64_t logEvery = 0;
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
  /// The job's ranks (null: this process alone). A data-parallel plan's
  /// communication ops run through it; the backend must be attached to it.
  comm::Communicator *comm = nullptr;
  /// Local SGD (a plan built with ReplicaSync::AverageReplicas): average the
  /// replicas every this many steps, and at every epoch's end.
  int64_t syncEvery = 1;
  /// The base learning rate's factor for the ranks (--lr-scaling) and the
  /// warm-up (--lr-warmup).
  double learningRateScale = 1;
  optim::Warmup warmup;
  /// --deterministic K: each step is K chunks whose gradients are added in
  /// one fixed tree (FixedOrderSum.h), so that the weights are the same bits
  /// at any power-of-two rank count dividing K; the plan has no
  /// communication ops and must not accumulate. 0: off.
  int deterministicChunks = 0;
  /// Samples per evaluation run: at most what the backend was loaded for (0: batch).
  int64_t evaluationBatch = 0;
  /// --checkpoint-every: also save last.safetensors (resumable mid-epoch)
  /// after every this many steps, so that a restart loses little. 0: only at
  /// epoch ends.
  int64_t checkpointEvery = 0;
  /// --data-on-device: the backend holds the training set (Backend::holdDataset,
  /// once before the first step) and gathers each batch itself from the
  /// epoch's order (uploaded once per epoch), instead of batches gathered on
  /// the host and copied in; the same samples in the same order either way.
  bool dataOnDevice = false;
  /// The run's estimate of itself (api/RunEstimate.h): written to the
  /// metrics at the start, and next to each epoch's and the run's measured
  /// seconds with the error in percent.
  struct Estimate {
    std::string costTable;
    double stepSeconds = 0, epochSeconds = 0, evaluationSeconds = 0, checkpointSeconds = 0;
  };
  std::optional<Estimate> estimate;
  /// Pipeline stages (--partition): this rank runs one stage's plan
  /// (PlanOptions::stageOf) of one of the job's pipelines, and `comm` is
  /// the whole job's communicator (agreements, the loss sums, evaluation).
  /// `batch` is the micro-batch and `accumulate` the micro-batches of a step.
  struct Pipeline {
    /// The ranks of this rank's pipeline, stage s holding widths[s] of them
    /// from rank widths[0] + ... + widths[s - 1] (the backend's attachStages).
    comm::Communicator *stages = nullptr;
    /// The ranks holding this stage's part, one per pipeline (the backend's
    /// attach: its gradients' all-reduces); its rank is the data-parallel one.
    comm::Communicator *replicas = nullptr;
    PipelineScheduleKind schedule = PipelineScheduleKind::OneForwardOneBackward;
    /// This rank's stage of the pipeline's, and the ranks of each stage:
    /// more than 1 where layers of the stage are split over its ranks
    /// (`--split`; the plan is then part Plan::part of Plan::parts).
    int stage = 0;
    std::vector<int> widths = {1};
    /// `--split`'s layers and ranks ("Hidden:2"), as checkpoints record them.
    std::vector<std::string> splits = {};
  };
  std::optional<Pipeline> pipeline;
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
  /// Why it stopped: the largest TrainObserver::stopReason of the ranks
  /// (a signal number for netc train; 0: none given).
  int stopReason = 0;
};

class TrainObserver {
public:
  virtual ~TrainObserver() = default;
  virtual void onStart(int64_t /*firstEpoch*/, int64_t /*epochs*/, int64_t /*samples*/) {}
  virtual void onProgress(const Progress &) {}
  virtual void onEpoch(const EpochReport &) {}
  virtual void onHint(const std::string &) {}
  /// last.safetensors at `path` now holds the run after `step` steps.
  virtual void onCheckpoint(const std::string & /*path*/, int64_t /*step*/) {}
  /// Polled after every step: true stops the run cleanly (TrainSummary::interrupted).
  virtual bool stopRequested() { return false; }
  /// Why this rank asked to stop (a signal number, or 0), read once the
  /// ranks agree to stop: every rank learns the largest (TrainSummary::stopReason).
  virtual int stopReason() { return 0; }
};

/// Trains the loaded `plan` on `backend`. `test` may be null.
class Trainer {
public:
  Trainer(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &train,
          const data::Dataset *test, TrainOptions options);
  /// Initialises (or resumes) and runs every remaining epoch.
  Expected<TrainSummary> run(TrainObserver &observer);
  /// Whether run's error is the same on every rank (agreed, or a divergence
  /// all ranks saw), so that it is reported once; otherwise it is this rank's.
  bool errorOnEveryRank() const { return errorOnEveryRank_; }
  /// Evaluates `data` in batches of `batch` as the run does after each
  /// epoch (shared among the data-parallel ranks, through the stages).
  Expected<Evaluation> evaluateSet(const data::Dataset &data, int64_t batch);

private:
  /// The running sums of one epoch, as the steps report them.
  struct EpochState {
    int64_t epoch = 0, skipped = 0, done = 0, batchIndex = 0, lastBatch = 0;
    int lastSlot = 0; // the input slot of the last run
    double lossSum = 0, correct = 0;
    double firstLoss = 0, lastLoss = 0; // mean per-sample loss over the first / last window of batches
    int64_t firstReads = 0, lastReads = 0;
    float learningRate = 0;
    std::chrono::steady_clock::time_point start;
  };
  /// prepare(), then with several ranks the agreement that every rank
  /// prepared, and rank 0's state broadcast.
  Status start(TrainObserver &observer);
  /// Checks the outputs, resumes or initialises: this rank's own part.
  Status prepare(TrainObserver &observer);
  /// A run resumed at an epoch's end puts back what its checkpoint says
  /// exists, where the process ended before writing it: that epoch's
  /// metrics line, and best.safetensors when the best epoch is the
  /// checkpoint's own; a best checkpoint it cannot rewrite is named in a hint.
  Status reestablishRunFiles(TrainObserver &observer);
  /// Reads (and clears) the loss sums into `state` (summed over the ranks,
  /// with their stop requests: true when some rank's observer asked to
  /// stop), reports progress and checks the loss is finite; `batchesRead`
  /// batches ended since the last read.
  Expected<bool> readSums(EpochState &state, int64_t batchesRead, int64_t samplesRead,
                          TrainObserver &observer);
  /// The step loop of one epoch: true when the observer asked to stop.
  Expected<bool> runSteps(EpochState &state, TrainObserver &observer);
  /// Runs ops [first, last) for a micro-batch of `size` samples in `slot`;
  /// `communicate` false leaves out the communication ops (a micro-batch
  /// that does not end its step).
  Status runOps(size_t first, size_t last, int64_t size, int slot, bool communicate);
  /// A step of which this rank has no sample: zero gradients into the
  /// all-reduces, then the update.
  Status runEmptyStep();
  /// Local SGD: averages the replicas' parameters and optimizer state.
  Status averageReplicas();
  /// Rank 0's parameters and optimizer state on every rank.
  Status broadcastState();
  /// Global micro-batches (--batch × ranks samples) of an epoch: what progress counts.
  int64_t batchesPerEpoch() const;
  int rank() const { return options_.comm ? options_.comm->rank() : 0; }
  int ranks() const { return options_.comm ? options_.comm->size() : 1; }
  /// This rank's place among the data-parallel ranks (a pipeline's stages
  /// share one place), and their number.
  int dataRank() const { return options_.pipeline ? options_.pipeline->replicas->rank() : rank(); }
  int dataRanks() const { return options_.pipeline ? options_.pipeline->replicas->size() : ranks(); }
  /// This rank's pipeline stage, and the stages (0 of 1 without a pipeline).
  int stage() const { return options_.pipeline ? options_.pipeline->stage : 0; }
  int stages() const { return options_.pipeline ? static_cast<int>(options_.pipeline->widths.size()) : 1; }
  /// The rank of part `part` of stage `stage` in the pipeline's communicator.
  int pipelineRank(int stage, int part) const;
  /// What rank `rank` of the pipeline holds: "stage 2", "stage 0 part 1".
  std::string rankHolder(int rank) const;
  /// Whether this rank takes part in writing checkpoints: rank 0 with an
  /// output folder, and with pipeline stages the other stages of its pipeline.
  bool savesState() const;
  /// last.safetensors and best.safetensors in the output folder ("" without one).
  std::string lastCheckpointPath() const;
  std::string bestCheckpointPath() const;
  /// One step's micro-batches of `sizes` samples through this stage in the
  /// schedule's order (the prefetcher's batches, the first stage's features
  /// and the last's labels), then the update; `leaves`: --deterministic's
  /// chunk of each micro-batch.
  Status runPipelineStep(const std::vector<int64_t> &sizes, const std::vector<int> &leaves,
                         data::BatchPrefetcher &prefetcher, double stepSamples, float learningRate);
  /// The last stage's verdict on the step's loss (its metrics' FirstBadStep)
  /// in every stage's metrics before their updates, so that all skip it.
  Status shareLossVerdict();
  /// Writes the checkpoint at `path` with `info`: this plan's tensors, or
  /// with pipeline stages every stage's, gathered by stage 0 (rank 0, which
  /// writes) from the others of its pipeline, which call it at the same point.
  Status writeState(const std::string &path, const CheckpointInfo &info);
  /// With pipeline stages: checks that the stages together used every
  /// tensor of the checkpoint they started from (each loads its own).
  Status checkStagesClaimedCheckpoint();
  /// The flat-loss hint after an epoch, once per run.
  void flatLossHint(const EpochState &state, const EpochReport &report, double previousLoss,
                    bool classification, TrainObserver &observer);
  /// The error for a non-finite loss: which parameter or layer went bad
  /// first, on the last `batch` samples, in input slot `inputSlot`.
  Status diverged(int64_t step, int64_t epoch, int64_t batch, int inputSlot, float learningRate);
  Status writeMetrics(const std::string &line);
  /// At an epoch's end: last.safetensors (and best.safetensors), then the metrics line.
  Status writeEpochFiles(const EpochReport &report, TrainObserver &observer);
  /// Every rank learns whether any rank's `mine` failed (the first failure).
  Status agreeOnEpochEnd(const Status &mine);
  /// Whether any rank asks to stop (and then why: stopReason_).
  Expected<bool> anyRankStops(TrainObserver &observer);
  /// Once the ranks agree to stop: the largest of their stop reasons.
  Status agreeStopReason(TrainObserver &observer);
  /// --checkpoint-every: last.safetensors where the run stands after step_,
  /// mid-epoch (every rank takes part: rank 0 writes, all agree it did).
  Status saveStepCheckpoint(const EpochState &state, TrainObserver &observer);
  /// Ends the run at the observer's request after `done` samples of (0-based)
  /// `epoch`: saves last.safetensors there unless the epoch is complete.
  Expected<TrainSummary> interrupt(TrainSummary summary, int64_t epoch, int64_t done, double lossSum,
                                   double correct, std::chrono::steady_clock::time_point runStart,
                                   TrainObserver &observer);
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
  int64_t logEvery_ = 1;
  bool hinted_ = false;
  std::vector<std::string> metricsPaths_;
  /// The estimate's metrics line, written with the first epoch's.
  std::string pendingEstimateLine_;
  /// The metrics line of the epoch being saved, without its timings and
  /// with "restored": true: kept in its checkpoint, so that a run resumed
  /// from it writes the line again if the process ended between the
  /// checkpoint and the line.
  std::string epochLine_;
  /// A resumed run's checkpoint's epoch line ("" when none).
  std::string resumedEpochLine_;
  std::vector<float> zeroGradients_;        // runEmptyStep's (sized once)
  std::optional<FixedOrderSum> fixedOrder_; // --deterministic
  std::vector<float> fixedSum_;
  bool errorOnEveryRank_ = false;
  int stopReason_ = 0;
  /// Pipeline stages: whether rank 0 writes checkpoints (every rank learns
  /// it at the start), the tensors of the start checkpoint this stage used
  /// and the file's count, and whether best.safetensors is to be written
  /// again at the start (reestablishRunFiles on rank 0).
  bool stagesSave_ = false;
  int64_t claimedTensors_ = 0, startTensors_ = 0;
  bool rewriteBest_ = false;
};

} // namespace netc::train
