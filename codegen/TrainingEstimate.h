// TrainingEstimate.h -- `netc estimate` and the estimate `netc train` checks
// (docs/estimate.md): a run's time per step, per epoch and in total, memory
// per rank, data-parallel scaling, and for a pipeline partition its bubble,
// from a training plan, a cost table and the data's sample counts. Pure
// arithmetic over the cost model.
#pragma once

#include "codegen/CostModel.h"
#include "codegen/Partition.h"

#include <optional>
#include <string>
#include <vector>

namespace netc::cost {

struct EstimateRequest {
  int64_t batch = 32;     ///< samples per rank per micro-batch (--batch)
  int64_t accumulate = 1; ///< micro-batches of `batch` per optimizer step (--accumulate)
  int ranks = 1;          ///< data-parallel replicas
  /// Host threads per rank; 0: the machine's cores (the table's
  /// devices_per_node) shared among the ranks on it, at every rank count.
  int threads = 0;
  int64_t trainSamples = 0;      ///< per epoch, over all ranks
  int64_t evaluationSamples = 0; ///< evaluated after every epoch (test or validation set)
  int64_t finalTestSamples = 0;  ///< evaluated once at the end (the test set)
  int64_t epochs = 1;
  int stages = 0;       ///< pipeline stages (0: no partition)
  int microBatches = 0; ///< per step with stages, at most `batch` (0: 4 · stages, at most `batch`)
  int maxRanks = 1024;  ///< where the scaling table ends
  /// Bytes of one checkpoint file; each epoch writes two (last and best,
  /// as when every epoch is the best so far). 0: no checkpoints.
  int64_t checkpointBytes = 0;
};

/// The run at one rank count, weak scaling (the same batch per rank).
struct ScalingPoint {
  int ranks = 1;
  double stepUs = 0, epochSeconds = 0;
  double efficiency = 1; ///< images/s over ranks × one rank's images/s
};

struct Estimate {
  std::string profileNote; ///< which thread profile was used, when not an exact one
  int threads = 0;         ///< threads per rank (0: a device's profile, whatever the host's threads)
  /// Each op of the plan at the batch on the profile used (0 for communication).
  std::vector<double> opMicroseconds;
  StepTime step;
  double stepUs = 0;
  int64_t stepsPerEpoch = 0;
  double epochSeconds = 0;      ///< the training steps of one epoch
  double evaluationSeconds = 0; ///< one evaluation of the evaluation samples
  double checkpointSeconds = 0; ///< an epoch's checkpoint writes (0 without the table's storage)
  double totalSeconds = 0;      ///< every epoch, its evaluation and checkpoints, and the final test
  double imagesPerSecond = 0;
  MemoryUse memory;                  ///< per rank
  std::vector<ScalingPoint> scaling; ///< 1, 2, 4, ... maxRanks and `ranks`
  double efficiency = 1;             ///< at `ranks`
  /// The rank count beyond which doubling shortens an epoch by less than
  /// 10% (or the largest in the table when it never stops paying).
  int stopsPayingAt = 1;
  std::optional<Partition> partition;
  int microBatches = 0;
  int64_t microBatch = 0; ///< samples per micro-batch (⌈batch / microBatches⌉)
  double bubble = 0;
};

/// The ranks of a job of `ranks` that share one machine's cores (the
/// profile measured with that many computing at once describes them).
int ranksOnNode(const CostTable &table, int ranks);

/// The partition request of a pipeline of `stages` stages: `plan`'s layer
/// costs on `profile`, `microBatches` (0: 4 · stages, at most `batch`)
/// micro-batches of ⌈batch / M⌉ samples, the table's link between the
/// stages' devices and its memory per device. An error when M exceeds the batch.
Expected<PartitionRequest> pipelineRequest(const ir::Network &network, const plan::Plan &plan,
                                           const CostTable &table, const ComputeProfile &profile, int stages,
                                           int microBatches, int64_t batch);

/// A network's partition into pipeline stages, as netc show --partition K
/// and netc train --partition K compute it, and what it was computed for.
struct NetworkPartition {
  Partition partition;
  int microBatches = 0;
  int64_t microBatch = 0;
  int threads = 0; ///< of the table's profile each stage runs on (0: a device)
};

/// Partitions `network` into `stages` stages for `microBatches` (0: 4 K)
/// micro-batches of a step of `batch` samples: the layer costs of its
/// training plan (with the optimizer state of `rule`) on the table's
/// one-thread profile, each stage on a core or a device of its own.
/// `memoryLimit` (bytes per stage; 0: the table's device memory) bounds each stage.
Expected<NetworkPartition> partitionNetwork(const ir::Network &network, const CostTable &table,
                                            const plan::UpdateRule &rule, int stages, int microBatches,
                                            int64_t batch, uint64_t memoryLimit = 0);

/// Estimates a run of `plan` (a training plan of one replica, at the run's
/// optimizer and bucket size) on `table`.
Expected<Estimate> estimateTraining(const ir::Network &network, const plan::Plan &plan,
                                    const CostTable &table, const EstimateRequest &request);

} // namespace netc::cost
