// Evaluate.h -- running a loaded plan over a data set without training:
// loss, accuracy, per-class accuracy and the confusion matrix (evaluate), and
// the output values of each sample (predict). Both run the plan's forward
// ops (and the loss ops for evaluate) batch by batch; evaluation is shared
// among the ranks of a data-parallel run. Also the two host
// steps around any run of the loss ops: writing the step scalars and taking
// (reading and clearing) the metrics sums. Outputs that are not finite are
// counted, and firstNonFiniteLayer says where a sample's first became so.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Backend.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/Sharding.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
  /// Samples with an output that is NaN or infinite (over every rank): the
  /// loss and accuracy then mean nothing.
  int64_t nonFiniteSamples = 0;
  /// The first such sample this rank evaluated (an index into the data set),
  /// or -1.
  int64_t firstNonFinite = -1;
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
/// communicator's. `share` (default: this rank's among the communicator's)
/// names the samples this rank evaluates: a pipeline stage evaluates its
/// replica's share, stage by stage -- the first stage reads the features,
/// the last the labels and outputs (the others add nothing to the sums),
/// each batch's sends received before the next.
Expected<Evaluation> evaluate(const plan::Plan &plan, runtime::Backend &backend, const data::Dataset &data,
                              int64_t batch, comm::Communicator *comm = nullptr,
                              std::optional<data::Share> share = std::nullopt);

/// The output values of every sample of `features` (count × featureCount), row-major.
std::vector<float> predict(const plan::Plan &plan, runtime::Backend &backend,
                           const std::vector<float> &features, int64_t count, int64_t batch);

/// Runs the forward ops on one sample's (normalised) features one op at a
/// time and names the first layer whose values hold NaN or an infinity:
/// "layer 'H' is the first to hold an infinity (node 3)"; "" when every
/// value is finite.
std::string firstNonFiniteLayer(const plan::Plan &plan, runtime::Backend &backend,
                                std::span<const float> sample);

} // namespace netc::train
