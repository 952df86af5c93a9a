// Estimate.h -- how long a training run will take before it runs
// (docs/estimate.md): `netc estimate`, the estimate `netc train` prints and
// checks, and `netc calibrate`, which measures the cost table the estimate
// reads.
#pragma once

#include "netc/Training.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netc {

/// Built-in cost tables: "cpu" (this project's machine kind, measured) and
/// "h100" (one H100 from public figures).
inline constexpr const char *kDefaultCpuCostTable = "cpu";
inline constexpr const char *kDefaultGpuCostTable = "h100";

/// Progress of a calibration: `done` of `total` measurements.
using CalibrateProgress = void (*)(void *context, int done, int total, const std::string &what);

struct EstimateSettings {
  /// The run: data folder, batch, epochs, optimizer, threads, validation
  /// fraction, bucket size -- as `netc train` takes them. `train.dataDir`
  /// may be empty when `samples` is given.
  TrainSettings train;
  int ranks = 1;                    ///< data-parallel ranks
  int64_t samples = 0;              ///< without a data folder: training samples per epoch (on paper)
  std::optional<int64_t> inputSize; ///< without a data folder: sizes `input X auto`
  /// A cost table file, or a built-in name; empty: the built-in table of
  /// `train.device` ("cpu" unless it names cuda).
  std::string costModel;
  int stages = 0;       ///< pipeline stages (0: no partition)
  int microBatches = 0; ///< per step with stages (0: 4 × stages, at most the batch)
  int maxRanks = 1024;  ///< the scaling table's last rank count
  /// Progress of measuring this machine's cost table, where the estimate
  /// does so (the first time on a machine the built-in table does not
  /// describe; docs/estimate.md).
  CalibrateProgress progress = nullptr;
  void *progressContext = nullptr;
};

struct EstimateStage {
  std::vector<std::string> layers;
  double computeSeconds = 0, transferSeconds = 0; ///< per micro-batch
  int64_t memoryBytes = 0, bytesIn = 0, bytesOut = 0;
  /// Of memoryBytes: parameters, gradients, optimizer state and index
  /// tables, and the activations of the micro-batches it holds in flight.
  int64_t weightsBytes = 0, activationBytes = 0;
};

struct EstimateScaling {
  int ranks = 1;
  double stepSeconds = 0, epochSeconds = 0, efficiency = 1;
};

struct EstimateResult {
  FailureKind failure = FailureKind::None;
  std::string error, diagnostics;
  std::string network;
  std::string costTable;       ///< the table used: its file or built-in name
  std::string costTableDevice; ///< what the table was measured on
  std::string costTableSource; ///< how the table was made
  std::string costTableFile;   ///< where this machine's table is kept (table "machine"), else empty
  /// The table was measured just now, or on another machine: a sentence.
  std::string costTableNote;
  std::string note; ///< an approximation the estimate made (another thread count's profile)
  int64_t batch = 0, epochs = 0, trainSamples = 0, evaluationSamples = 0, finalTestSamples = 0;
  int ranks = 1, threads = 0;
  int64_t stepsPerEpoch = 0;
  double stepSeconds = 0;
  double forwardSeconds = 0, lossSeconds = 0, backwardSeconds = 0, updateSeconds = 0, hostSeconds = 0;
  double allReduceSeconds = 0, exposedCommSeconds = 0; ///< per step
  double epochSeconds = 0, evaluationSeconds = 0, totalSeconds = 0, imagesPerSecond = 0;
  double checkpointSeconds = 0; ///< an epoch's checkpoint writes (0: the table has no storage figures)
  int64_t parameterBytes = 0, gradientBytes = 0, optimizerBytes = 0, tableBytes = 0, activationBytes = 0,
          inputBytes = 0, otherBytes = 0, memoryBytes = 0; ///< per rank
  uint64_t deviceMemoryBytes = 0;                          ///< the table's memory per device
  double efficiency = 1;
  int stopsPayingAt = 1;
  std::vector<EstimateScaling> scaling;
  /// Every op of one rank's step with its predicted time, in plan order (as
  /// `netc bench --profile` lists the measured ones).
  std::vector<OpProfile> ops;
  int64_t accumulate = 1;
  int stages = 0, microBatches = 0;
  int64_t microBatch = 0; ///< samples per micro-batch of the pipeline
  double bubble = 0;
  int64_t cutBytes = 0;
  std::vector<EstimateStage> partition;
  bool ok() const { return failure == FailureKind::None; }
};

/// Estimates a training run of the network in `netPath` (nothing is trained).
EstimateResult estimateTraining(const std::string &netPath, const EstimateSettings &settings);

struct CalibrateSettings {
  std::string outPath;          ///< where the table goes
  std::string device = "cpu";   ///< "cpu" (a GPU's calibration needs a GPU: "cuda")
  std::string cpuIsa;           ///< as TrainSettings::cpuIsa
  std::string denseKernel;      ///< as TrainSettings::denseKernel
  std::vector<int> threads;     ///< thread counts to measure (empty: 1 and all cores)
  std::vector<int64_t> batches; ///< batch sizes each network runs at, two or more (empty: 8, 32, 128, 256)
  int64_t iterations = 20;      ///< timed steps per op
  /// Rounds of every measurement, interleaved; a time is the median of its
  /// rounds' medians (a burst of load on a shared machine hits one round).
  int64_t rounds = 3;
  Launch launch; ///< several ranks: also measure the link between them
  double commTimeout = kDefaultCommTimeout;
  bool overwrite = false;
  std::string command; ///< the command line, recorded in the table
};

struct CalibrateResult {
  FailureKind failure = FailureKind::None;
  std::string error;
  std::string outPath;
  double seconds = 0;
  std::vector<std::string> lines;    ///< what was measured, one line each
  std::vector<std::string> warnings; ///< what may make the table wrong, one line each
  bool ok() const { return failure == FailureKind::None; }
};

/// Measures a cost table with short micro-benchmarks and writes it.
CalibrateResult calibrate(const CalibrateSettings &settings, CalibrateProgress progress = nullptr,
                          void *context = nullptr);

} // namespace netc
