// Evaluate.cpp -- evaluation and prediction over a loaded plan (Evaluate.h),
// and finding the layer where a sample's values first stop being finite.
#include "runtime/train/Evaluate.h"
#include "runtime/data/Sharding.h"
#include "runtime/optim/Optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
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

Expected<Evaluation> evaluate(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &data,
                              int64_t batch, comm::Communicator *comm, std::optional<data::Share> given) {
  Evaluation e;
  e.classification = isClassification(plan);
  e.classes = plan.outputNodes == 1 && e.classification ? 2 : plan.outputNodes;
  const size_t classes = e.classification ? static_cast<size_t>(e.classes) : 0;
  // The counts to sum over ranks: the confusion matrix, row-major.
  std::vector<int64_t> confusion(classes * classes, 0);
  std::vector<float> output;
  double lossSum = 0, correct = 0, nonFinite = 0;
  takeMetrics(plan, backend); // what a training step left
  const data::Share share = given                      ? *given
                            : comm && comm->size() > 1 ? data::shareOf(data.count, comm->rank(), comm->size())
                                                       : data::Share{0, data.count};
  // A pipeline stage: the first reads the features, the last the labels
  // and the outputs; a whole network's plan does all three. The parts of a
  // stage whose layers are split over its ranks all compute its outputs:
  // the first counts them.
  const bool scores = plan.output >= 0 && plan.part == 0;
  for (int64_t first = share.first; first < share.end; first += batch) {
    const int64_t size = std::min(batch, share.end - first);
    if (plan.features >= 0)
      backend.write(plan.features, std::span<const float>(data.features.data() + first * data.featureCount,
                                                          static_cast<size_t>(size * data.featureCount)));
    if (plan.labels >= 0)
      backend.write(plan.labels,
                    std::span<const float>(data.labels.data() + first, static_cast<size_t>(size)));
    writeStepScalars(plan, backend, optim::stepScalars({}, 0, 0, size, size));
    if (Status s = backend.run(plan.stepBegin, plan.lossEnd, size); !s)
      return Error{s.message()};
    if (Status s = backend.finishTransfers(); !s)
      return Error{s.message()};
    if (plan.output < 0)
      continue;
    const auto metrics = takeMetrics(plan, backend); // (taken on a part that does not count them too)
    if (!scores)
      continue;
    lossSum += metrics[static_cast<size_t>(plan::Metric::LossSum)];
    correct += metrics[static_cast<size_t>(plan::Metric::Correct)];
    output.resize(static_cast<size_t>(size * plan.outputNodes));
    backend.read(plan.output, output);
    // The loss of a NaN output is clamped, its class arbitrary: count them.
    for (int64_t i = 0; i < size; ++i) {
      const float *row = &output[static_cast<size_t>(i * plan.outputNodes)];
      if (std::all_of(row, row + plan.outputNodes, [](float v) { return std::isfinite(v); }))
        continue;
      ++nonFinite;
      if (e.firstNonFinite < 0)
        e.firstNonFinite = first + i;
    }
    if (!e.classification)
      continue;
    for (int64_t i = 0; i < size; ++i) {
      const float label = data.labels[static_cast<size_t>(first + i)];
      const int64_t actual = static_cast<int64_t>(label),
                    predicted = predictedClass(plan, &output[static_cast<size_t>(i * plan.outputNodes)]);
      if (actual >= 0 && actual < e.classes && predicted >= 0 && predicted < e.classes)
        ++confusion[static_cast<size_t>(actual) * classes + static_cast<size_t>(predicted)];
    }
  }
  backend.synchronize();
  if (comm && comm->size() > 1) {
    std::array<double, 3> sums = {lossSum, correct, nonFinite};
    if (Status s = comm->allReduce(std::span<double>(sums), comm::ReduceOp::Sum,
                                   "all-reduce of the evaluation's sums");
        !s)
      return Error{s.message()};
    if (!confusion.empty())
      if (Status s = comm->allReduce(std::span<int64_t>(confusion), comm::ReduceOp::Sum,
                                     "all-reduce of the confusion matrix");
          !s)
        return Error{s.message()};
    lossSum = sums[0];
    correct = sums[1];
    nonFinite = sums[2];
  }
  e.nonFiniteSamples = static_cast<int64_t>(nonFinite);
  e.samples = data.count;
  e.loss = data.count ? lossSum / double(data.count) : 0;
  e.accuracy = data.count ? correct / double(data.count) : 0;
  for (size_t c = 0; c < classes; ++c) {
    e.confusion.emplace_back(confusion.begin() + static_cast<ptrdiff_t>(c * classes),
                             confusion.begin() + static_cast<ptrdiff_t>((c + 1) * classes));
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
    // The forward ops hold no communication op: nothing in them can fail.
    [[maybe_unused]] const Status ran = backend.run(plan.stepBegin, plan.forwardEnd, size);
    assert(ran.ok());
    backend.read(plan.output, std::span<float>(out.data() + first * plan.outputNodes,
                                               static_cast<size_t>(size * plan.outputNodes)));
  }
  backend.synchronize();
  return out;
}

std::string firstNonFiniteLayer(const plan::Plan &plan, runtime::Backend &backend,
                                std::span<const float> sample) {
  backend.write(plan.features, sample);
  std::vector<float> values;
  // One op at a time: a later op may reuse an earlier one's memory.
  for (size_t i = plan.stepBegin; i < plan.forwardEnd; ++i) {
    // The forward ops hold no communication op: nothing in them can fail.
    [[maybe_unused]] const Status ran = backend.run(i, i + 1, 1);
    assert(ran.ok());
    const plan::Op &op = plan.ops[i];
    if (op.out.empty())
      continue;
    const plan::Buffer &buffer = plan.buffers[static_cast<size_t>(op.out[0])];
    if (!buffer.batchScaled())
      continue;
    values.resize(static_cast<size_t>(buffer.perSample));
    backend.synchronize();
    backend.read(op.out[0], values);
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad == values.end())
      continue;
    const std::string layer = buffer.name.substr(0, buffer.name.find('.'));
    return fmt::format("layer '{}' is the first to hold {} (node {})", layer,
                       std::isnan(*bad) ? "NaN" : "an infinity", bad - values.begin());
  }
  return {};
}

} // namespace netc::train
