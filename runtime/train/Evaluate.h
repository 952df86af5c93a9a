// Evaluate.h -- running a loaded plan over a data set without training:
// loss, accuracy, per-class accuracy and the confusion matrix (evaluate), and
// the output values of each sample (predict). Both run the plan's forward
// ops (and the loss ops for evaluate) batch by batch; evaluation is shared
// among the ranks of a data-parallel run. Also the two host
// steps around any run of the loss ops: writing the step scalars and taking
// (reading and clearing) the metrics sums.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Backend.h"
#include "runtime/data/Dataset.h"

#include <array>
#include <cstdint>
#include <vector>

namespace netc::train {

struct Evaluation {
  int64_t samples = 0;
  double loss = 0;     // mean over samples (D16)
  double accuracy = 0; // fraction correct (classification)
  bool classification = true;
  int64_t classes = 0;
  /// confusion[actual][predicted] (classification).
  std::vector<std::vector<int64_t>> confusion;
  std::vector<double> classAccuracy; // per actual class (NaN-free: 0 when absent)
};

/// Whether the plan's output is read as classes (several outputs, or a
/// sigmoid/softmax single output) rather than as a value.
bool isClassification(const plan::Plan &plan);

/// The predicted class of one output row.
int64_t predictedClass(const plan::Plan &plan, const float *output);

/// Reads the metrics sums the loss ops added since the last take
/// (plan::Metric order) and clears them on the backend.
std::array<double, plan::kMetricCount> takeMetrics(const plan::Plan &plan, runtime::Backend &backend);

/// Writes the step scalars (optim::stepScalars) before a run.
void writeStepScalars(const plan::Plan &plan, runtime::Backend &backend,
                      const std::array<float, plan::kStepScalarCount> &scalars);

/// Evaluates `data` on the loaded plan in batches of at most `batch`. With a
/// communicator of several ranks each evaluates its share of the samples
/// and the sums (loss, correct, confusion matrix) are all-reduced, so every
/// rank returns the evaluation of the whole set; the error is the
/// communicator's.
Expected<Evaluation> evaluate(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &data,
                              int64_t batch, comm::Communicator *comm = nullptr);

/// The output values of every sample of `features` (count × featureCount), row-major.
std::vector<float> predict(const plan::Plan &plan, runtime::Backend &backend,
                           const std::vector<float> &features, int64_t count, int64_t batch);

} // namespace netc::train
