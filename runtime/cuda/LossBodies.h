// LossBodies.h -- the CUDA backend's loss kernels (docs/language.md §17), as
// host/device bodies (ElementBodies.h says how they run): a per-row body
// writes a sample's gradient row (the gradient of the loss sum times the
// step's loss scale, 1 / its samples) and that sample's loss and
// correctness into scratch; then one block of kReduceLanes lanes sums the
// scratch in a fixed order and adds the batch's sums to the metrics buffer,
// recording the step of the first non-finite loss. The reduction's lane
// logic (each lane's strided sum, one halving step of the tree) is written
// as plain functions, so the host simulates a block lane by lane with the
// very code each device lane runs. The formulas are runtime/cpu's
// (LossKernels.h), whose reference the tests compare against.
#pragma once

#include "codegen/UpdateRule.h"
#include "runtime/core/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace netc::runtime::cuda {

/// Which loss a loss op computes (its plan::OpKind).
enum class LossBodyKind { SoftmaxCrossEntropy, SigmoidCrossEntropy, SquaredError };

/// The target of node i of a sample with label `label`: the label itself for
/// one output node, else 1 at the class index and 0 elsewhere (a label that
/// is not a whole number is no class).
NETC_HOST_DEVICE inline float lossTarget(int64_t nodes, float label, int64_t i) {
  if (nodes == 1)
    return label;
  return static_cast<int64_t>(label) == i && label == std::floor(label) ? 1.0f : 0.0f;
}

/// Whether a sample's outputs classify it correctly: the first maximal node
/// is the label, or for one output node, output > 0.5 means class 1.
NETC_HOST_DEVICE inline bool classifiedCorrectly(const float *y, int64_t nodes, float label) {
  if (nodes == 1)
    return (y[0] > 0.5f ? 1.0f : 0.0f) == label;
  int64_t best = 0;
  for (int64_t i = 1; i < nodes; ++i)
    if (y[i] > y[best])
      best = i;
  return static_cast<float>(best) == label;
}

/// A loss op, row b: gradient row b, and scratch[b] = the sample's loss,
/// scratch[batch + b] = 1 if it is classified correctly, else 0.
struct LossRowBody {
  LossBodyKind kind;
  const float *y, *labels, *scalars;
  float *gradient, *scratch;
  int64_t nodes, batch;
  NETC_HOST_DEVICE void operator()(int64_t b) const {
    const float scale = 1.0f / scalars[static_cast<int>(plan::StepScalar::StepSamples)];
    const float tiny = 1e-30f, n = static_cast<float>(nodes);
    const float *yb = y + b * nodes;
    float *gb = gradient + b * nodes;
    float loss = 0;
    for (int64_t i = 0; i < nodes; ++i) {
      const float p = yb[i], t = lossTarget(nodes, labels[b], i);
      switch (kind) {
      case LossBodyKind::SoftmaxCrossEntropy:
        loss -= t * std::log(p > tiny ? p : tiny);
        gb[i] = (p - t) * scale;
        break;
      case LossBodyKind::SigmoidCrossEntropy:
        loss -= (t * std::log(p > tiny ? p : tiny) + (1 - t) * std::log(1 - p > tiny ? 1 - p : tiny)) / n;
        gb[i] = (p - t) * scale / n;
        break;
      case LossBodyKind::SquaredError:
        loss += (p - t) * (p - t) / n;
        gb[i] = 2 * (p - t) * scale / n;
        break;
      }
    }
    scratch[b] = loss;
    scratch[batch + b] = classifiedCorrectly(yb, nodes, labels[b]) ? 1.0f : 0.0f;
  }
};

/// Lanes of the block that sums a loss op's scratch (a power of two).
inline constexpr int kReduceLanes = 256;

/// The second half of a loss op: one block sums the losses and correct
/// counts of the batch and adds them to the metrics.
struct MetricsReduceBody {
  const float *scratch, *scalars;
  float *metrics;
  int64_t batch;

  /// Lane `lane`'s share: elements lane, lane + lanes, ... of the losses and
  /// of the correct flags.
  NETC_HOST_DEVICE void laneSums(int lane, float &loss, float &correct) const {
    loss = 0;
    correct = 0;
    for (int64_t i = lane; i < batch; i += kReduceLanes) {
      loss += scratch[i];
      correct += scratch[batch + i];
    }
  }
  /// One halving step of the tree over the lanes' partial sums.
  NETC_HOST_DEVICE static void treeStep(float *partial, int lane, int stride) {
    if (lane < stride)
      partial[lane] += partial[lane + stride];
  }
  /// Lane 0 at the end: adds the batch's sums to the metrics and records the
  /// first step whose loss sum is not finite.
  NETC_HOST_DEVICE void finish(float lossSum, float correct) const {
    float &lossMetric = metrics[static_cast<int>(plan::Metric::LossSum)];
    lossMetric += lossSum;
    metrics[static_cast<int>(plan::Metric::Correct)] += correct;
    float &firstBad = metrics[static_cast<int>(plan::Metric::FirstBadStep)];
    if (!finiteBits(lossMetric) && firstBad == 0) {
      const float step = scalars[static_cast<int>(plan::StepScalar::Step)];
      firstBad = step > 1.0f ? step : 1.0f;
    }
  }
};

} // namespace netc::runtime::cuda
