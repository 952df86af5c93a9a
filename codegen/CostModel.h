// CostModel.h -- how long a Plan's step takes and how much memory it holds,
// from the Plan's own work (FLOPs and bytes of every op) and a cost table
// (codegen/CostTable.h): per op, per layer, per step on N data-parallel
// replicas, and the bytes that cross a cut between layers. Pure arithmetic:
// nothing here runs a kernel or reads the clock.
#pragma once

#include "codegen/CostTable.h"
#include "codegen/Plan.h"
#include "ir/Network.h"

#include <cstdint>
#include <vector>

namespace netc::cost {

/// What an op does in one step, whatever the device: the part that grows
/// with the batch (per sample) and the part that does not (weights read, the
/// update's arenas).
struct OpWork {
  double flopsPerSample = 0, bytesPerSample = 0;
  double fixedFlops = 0, fixedBytes = 0;
  /// FLOPs or bytes (workMeasure of the op's kind) at `batch` samples.
  double at(WorkMeasure measure, int64_t batch) const;
};
OpWork opWork(const plan::Plan &plan, const plan::Op &op);

/// Microseconds op `index` of `plan` takes at `batch` samples on `profile`
/// (0 for communication ops: stepTime models those).
double opMicroseconds(const plan::Plan &plan, size_t index, const ComputeProfile &profile, int64_t batch);
/// Microseconds of an op of `kind` doing `work` at `batch` samples at `rate`.
double opMicroseconds(plan::OpKind kind, const OpWork &work, const OpRate &rate, int64_t batch);

/// One training step, in microseconds.
struct StepTime {
  double forwardUs = 0, lossUs = 0, backwardUs = 0, updateUs = 0;
  double hostUs = 0;        ///< the profile's step and per-sample overheads
  double allReduceUs = 0;   ///< the gradient all-reduces, end to end
  double exposedCommUs = 0; ///< the part of them the backward pass does not hide
  double computeUs() const { return forwardUs + lossUs + backwardUs + updateUs; }
  double totalUs() const { return computeUs() + hostUs + exposedCommUs; }
};

/// A step of `plan` (a training plan) at `batch` samples per replica on
/// `replicas` replicas joined by `link` (unused for one): the gradient
/// buckets are all-reduced one after another, each from the moment the
/// backward op that finishes it has run, while the backward pass goes on.
StepTime stepTime(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch, int replicas,
                  const Link &link);
/// A forward pass of `plan` (inference ops only) at `batch` samples.
double forwardMicroseconds(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch);

/// The bytes a plan holds at a batch, by kind.
struct MemoryUse {
  int64_t parameters = 0, gradients = 0, optimizerState = 0, tables = 0, activations = 0, inputs = 0,
          other = 0;
  /// Their sum, or INT64_MAX when it does not fit (an absurd batch).
  int64_t total() const;
};
MemoryUse memoryUse(const plan::Plan &plan, int64_t batch);

/// A layer's share of a step, for cutting the network into stages: its ops'
/// time per (micro-)batch as fixed + perSample · batch, its share of the
/// optimizer update (once per step), the memory of its parameters (with
/// their gradients and optimizer state) and index tables, its activations
/// per sample, and the bytes per sample of its output values that a cut
/// after it sends on (and whose gradient comes back).
struct LayerCost {
  int layer = -1; ///< index in ir::Network::layers
  std::string name;
  std::vector<int> sources; ///< the layers its bundles read (indices)
  double fixedUs = 0, perSampleUs = 0;
  double updateUs = 0; ///< its parameters' share of the update op, once per step
  int64_t fixedBytes = 0, activationBytesPerSample = 0, outputBytesPerSample = 0;
  /// What a pipeline stage's plan needs of a cut (codegen/PlanStages.cpp):
  /// layers with the same `tiedGroup` (>= 0) share weights and stay in one
  /// stage; an input stays in the first stage, the output in the last.
  int tiedGroup = -1;
  bool input = false, output = false;
  double timeUs(int64_t batch) const { return fixedUs + perSampleUs * static_cast<double>(batch); }
};
/// Every layer's cost, in the network's layer order. The fused update op
/// and the loss are shared out: the update by parameter bytes, the loss to
/// the output layer. Parameters shared by several layers count for each.
std::vector<LayerCost> layerCosts(const ir::Network &network, const plan::Plan &plan,
                                  const ComputeProfile &profile);

} // namespace netc::cost
