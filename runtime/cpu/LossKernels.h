// LossKernels.h -- the three losses of docs/language.md §17 as templates over the
// arithmetic type, shared by the fast (float) and reference (double) kernel
// tables so both report the same metrics. Each writes the gradient of the
// loss sum times the step's loss scale (1 / the samples of the optimizer
// step: the mean over a batch, or over all micro-batches of an accumulated
// step) and adds the batch's loss sum and correct count to the metrics,
// recording the step of the first non-finite loss.
// Labels are class indices (one-hot targets) or, for one output node, the
// target value itself; a class label outside [0, nodes) contributes no
// target (the trainer rejects such data before it gets here).
#pragma once

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace netc::runtime::cpu {
// Internal linkage: each kernel table's translation unit compiles its own copy
// for its instruction set (runtime/cpu/CMakeLists.txt), so no copy built for
// one set is linked into another's code.
namespace {

template <class T> struct LossTarget {
  int64_t nodes;
  float label;
  /// The target value of node i.
  T operator()(int64_t i) const {
    if (nodes == 1)
      return T(label);
    return static_cast<int64_t>(label) == i && label == std::floor(label) ? T(1) : T(0);
  }
};

/// Index of the largest of n values value(0..n-1) (the first on ties).
template <class Value> int64_t argmax(Value value, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (value(i) > value(best))
      best = i;
  return best;
}

template <class Value> bool isCorrect(Value value, int64_t n, float label) {
  if (n == 1)
    return (value(0) > 0.5f ? 1.0f : 0.0f) == label;
  return static_cast<float>(argmax(value, n)) == label;
}

/// kind: 0 softmax cross-entropy, 1 sigmoid binary cross-entropy, 2 squared error.
template <class T> void lossKernel(const KernelCall &c, int kind) {
  const int64_t n = c.op.get<plan::LossAttrs>().nodes, batch = c.batch;
  const float *y = c.in(0), *labels = c.in(1);
  float *grad = c.out(0), *metrics = c.out(1);
  const T scale = T(1) / T(c.scalar(2, plan::StepScalar::StepSamples));
  const T tiny = T(1e-30);
  T lossSum = 0, correct = 0;
  for (int64_t b = 0; b < batch; ++b) {
    auto value = [&](int64_t i) { return y[c.at(b, i, n)]; };
    LossTarget<T> target{n, labels[b]};
    T loss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T p = value(i), t = target(i);
      float &g = grad[c.at(b, i, n)];
      switch (kind) {
      case 0: // D16: mean categorical cross-entropy, gradient w.r.t. the logits
        loss -= t * std::log(std::max(p, tiny));
        g = static_cast<float>((p - t) * scale);
        break;
      case 1: // mean binary cross-entropy per node, gradient w.r.t. the logits
        loss -= (t * std::log(std::max(p, tiny)) + (1 - t) * std::log(std::max(1 - p, tiny))) / T(n);
        g = static_cast<float>((p - t) * scale / T(n));
        break;
      default: // mean squared error per node
        loss += (p - t) * (p - t) / T(n);
        g = static_cast<float>(2 * (p - t) * scale / T(n));
      }
    }
    lossSum += loss;
    correct += isCorrect(value, n, labels[b]) ? 1 : 0;
  }
  float &lossMetric = metrics[static_cast<int>(plan::Metric::LossSum)];
  lossMetric = static_cast<float>(lossMetric + lossSum);
  metrics[static_cast<int>(plan::Metric::Correct)] += static_cast<float>(correct);
  float &firstBad = metrics[static_cast<int>(plan::Metric::FirstBadStep)];
  // Not finite as stored (a loss beyond float's range counts), tested on the
  // bits: the fast table's unit is built with -ffast-math, where isfinite folds to true.
  const bool finite = (std::bit_cast<uint32_t>(lossMetric) & 0x7f800000u) != 0x7f800000u;
  if (!finite && firstBad == 0)
    firstBad = std::max(1.0f, c.scalar(2, plan::StepScalar::Step));
}

} // namespace
} // namespace netc::runtime::cpu
