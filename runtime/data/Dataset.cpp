// Dataset.cpp -- label bookkeeping and row selection for Dataset (see
// Dataset.h).
#include "runtime/data/Dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace netc::data {

void computeLabelInfo(Dataset &data) {
  // Labels above 2^24 are not exactly representable as floats, so they
  // cannot be class indices.
  constexpr float kMaxClassLabel = 16777216.0f;
  bool integers = true;
  float maxLabel = -1.0f;
  for (float label : data.labels) {
    if (!(label >= 0.0f && label < kMaxClassLabel && std::floor(label) == label)) {
      integers = false;
      break;
    }
    maxLabel = std::max(maxLabel, label);
  }
  data.integerLabels = integers;
  data.classCount = integers ? static_cast<int64_t>(maxLabel) + 1 : 0;
}

Dataset selectRows(const Dataset &data, std::span<const int64_t> indices) {
  Dataset out;
  out.origin = data.origin;
  out.labelsOrigin = data.labelsOrigin;
  out.count = static_cast<int64_t>(indices.size());
  out.featureCount = data.featureCount;
  out.sampleShape = data.sampleShape;
  out.integerLabels = data.integerLabels;
  out.classCount = data.classCount;
  out.features.resize(static_cast<size_t>(out.count * out.featureCount));
  out.labels.resize(indices.size());
  float *dst = out.features.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t index = indices[i];
    assert(index >= 0 && index < data.count);
    std::span<const float> row = data.row(index);
    dst = std::copy(row.begin(), row.end(), dst);
    out.labels[i] = data.labels[static_cast<size_t>(index)];
  }
  return out;
}

} // namespace netc::data
