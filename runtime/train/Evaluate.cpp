// Evaluate.cpp -- evaluation and prediction over a loaded plan (Evaluate.h).
#include "runtime/train/Evaluate.h"
#include "runtime/optim/Optimizer.h"

#include <algorithm>
#include <span>

namespace netc::train {

bool isClassification(const plan::Plan &plan) {
  return plan.outputNodes > 1 || plan.outputFunction == ir::Activation::Sigmoid ||
         plan.outputFunction == ir::Activation::Softmax;
}

int64_t predictedClass(const plan::Plan &plan, const float *output) {
  if (plan.outputNodes == 1)
    return output[0] > 0.5f ? 1 : 0;
  return std::max_element(output, output + plan.outputNodes) - output;
}

std::array<double, plan::kMetricCount> takeMetrics(const plan::Plan &plan, runtime::Backend &backend) {
  std::array<float, plan::kMetricCount> values{};
  backend.read(plan.metrics, values);
  static constexpr std::array<float, plan::kMetricCount> kZeros{};
  backend.write(plan.metrics, kZeros);
  std::array<double, plan::kMetricCount> sums{};
  for (size_t i = 0; i < sums.size(); ++i)
    sums[i] = values[i];
  return sums;
}

void writeStepScalars(const plan::Plan &plan, runtime::Backend &backend,
                      const std::array<float, plan::kStepScalarCount> &scalars) {
  backend.write(plan.scalars, scalars);
}

Evaluation evaluate(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &data,
                    int64_t batch) {
  Evaluation e;
  e.classification = isClassification(plan);
  e.classes = plan.outputNodes == 1 && e.classification ? 2 : plan.outputNodes;
  if (e.classification)
    e.confusion.assign(static_cast<size_t>(e.classes),
                       std::vector<int64_t>(static_cast<size_t>(e.classes), 0));
  std::vector<float> output;
  double lossSum = 0, correct = 0;
  takeMetrics(plan, backend); // what a training step left
  for (int64_t first = 0; first < data.count; first += batch) {
    const int64_t size = std::min(batch, data.count - first);
    backend.write(plan.features, std::span<const float>(data.features.data() + first * data.featureCount,
                                                        static_cast<size_t>(size * data.featureCount)));
    backend.write(plan.labels, std::span<const float>(data.labels.data() + first, static_cast<size_t>(size)));
    writeStepScalars(plan, backend, optim::stepScalars({}, 0, 0, size, size));
    backend.run(plan.stepBegin, plan.lossEnd, size);
    const auto metrics = takeMetrics(plan, backend);
    lossSum += metrics[static_cast<size_t>(plan::Metric::LossSum)];
    correct += metrics[static_cast<size_t>(plan::Metric::Correct)];
    if (!e.classification)
      continue;
    output.resize(static_cast<size_t>(size * plan.outputNodes));
    backend.read(plan.output, output);
    for (int64_t i = 0; i < size; ++i) {
      const float label = data.labels[static_cast<size_t>(first + i)];
      const int64_t actual = static_cast<int64_t>(label),
                    predicted = predictedClass(plan, &output[static_cast<size_t>(i * plan.outputNodes)]);
      if (actual >= 0 && actual < e.classes && predicted >= 0 && predicted < e.classes)
        ++e.confusion[static_cast<size_t>(actual)][static_cast<size_t>(predicted)];
    }
  }
  backend.synchronize();
  e.samples = data.count;
  e.loss = data.count ? lossSum / double(data.count) : 0;
  e.accuracy = data.count ? correct / double(data.count) : 0;
  for (size_t c = 0; c < e.confusion.size(); ++c) {
    int64_t total = 0;
    for (int64_t n : e.confusion[c])
      total += n;
    e.classAccuracy.push_back(total ? double(e.confusion[c][c]) / double(total) : 0.0);
  }
  return e;
}

std::vector<float> predict(const plan::Plan &plan, runtime::Backend &backend,
                           const std::vector<float> &features, int64_t count, int64_t batch) {
  std::vector<float> out(static_cast<size_t>(count * plan.outputNodes));
  for (int64_t first = 0; first < count; first += batch) {
    const int64_t size = std::min(batch, count - first);
    backend.write(plan.features, std::span<const float>(features.data() + first * plan.featureCount,
                                                        static_cast<size_t>(size * plan.featureCount)));
    backend.run(plan.stepBegin, plan.forwardEnd, size);
    backend.read(plan.output, std::span<float>(out.data() + first * plan.outputNodes,
                                               static_cast<size_t>(size * plan.outputNodes)));
  }
  backend.synchronize();
  return out;
}

} // namespace netc::train
