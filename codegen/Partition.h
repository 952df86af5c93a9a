// Partition.h -- the partitioning pass (docs/estimate.md): cuts a network's
// layers, in topological order, into K contiguous stages for pipeline
// execution, branches included (a stage may hold layers of several
// branches, and a cut may carry several layers' values). A stage's time per
// micro-batch is its layers' compute plus the transfers at its cuts (the
// values forward and their gradients back); the pass minimises the slowest
// stage's time, ties broken by fewer bytes at the cuts, under a per-device
// memory limit. (The optimizer update, once per step, is left out of the
// balance and added to the step.) The result is plain data for whoever executes or prints it.
#pragma once

#include "codegen/CostModel.h"
#include "codegen/CostTable.h"
#include "support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netc::cost {

struct PartitionRequest {
  std::vector<LayerCost> layers; ///< layerCosts(): any order, sources by layer index
  int stages = 2;                ///< K >= 1
  int64_t microBatch = 32;       ///< samples per micro-batch
  int microBatches = 8;          ///< M micro-batches per step (activations in flight)
  Link link;                     ///< between consecutive stages' devices
  uint64_t memoryLimit = 0;      ///< bytes per device; 0: none
};

struct Stage {
  std::vector<int> layers; ///< layer indices, in topological order
  double computeUs = 0;    ///< per micro-batch
  double transferUs = 0;   ///< per micro-batch: values in and out, gradients back
  double updateUs = 0;     ///< once per step: the optimizer update of its parameters
  double timeUs() const { return computeUs + transferUs; }
  /// Parameters, gradients, optimizer state and tables, plus the activations
  /// of the micro-batches in flight on it (min(M, K - stage) under 1F1B).
  int64_t memoryBytes = 0;
  /// Of it: the parameters, gradients, optimizer state and tables, and the
  /// activations of the micro-batches in flight.
  int64_t fixedBytes = 0, activationBytes = 0;
  int64_t bytesIn = 0, bytesOut = 0; ///< per micro-batch across its first and last cut
};

struct Partition {
  std::vector<Stage> stages;
  std::vector<int> stageOf; ///< per layer index: its stage
  double slowestUs = 0;     ///< max stage time per micro-batch
  int64_t cutBytes = 0;     ///< per micro-batch, over every cut, one way
  /// Time of one step of M micro-batches through K stages:
  /// every stage's time (the first micro-batch's way through) + (M - 1) ·
  /// slowest -- (M + K - 1) · slowest when balanced -- then the slowest
  /// stage's update.
  double stepUs(int microBatches) const;
};

/// The stage of every layer (by index) when a stage starts at each layer
/// named in `cuts` (`netc train --cut`), in the plan's order of the layers
/// (plan::dependencyOrder). An error names a name that is not a layer, an
/// input layer, a name given twice, or names out of that order.
Expected<std::vector<int>> stagesFromCuts(const ir::Network &network, const std::vector<std::string> &cuts);

/// The pipeline bubble (K - 1) / (M + K - 1): the share of a step a stage idles.
double pipelineBubble(int stages, int microBatches);

/// The best partition of `request`; an error when K exceeds the layers, or
/// when no cut fits the memory limit -- naming the layer that alone exceeds
/// it, or else the least memory per device any cut needs.
Expected<Partition> partitionLayers(const PartitionRequest &request);

} // namespace netc::cost
