// Dataset.cpp -- label bookkeeping and row selection for Dataset (see
// Dataset.h).
#include "runtime/data/Dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace netc::data {

bool isClassLabel(float label) {
  return label >= 0.0f && label < kMaxClassLabel && std::floor(label) == label;
}

void computeLabelInfo(Dataset &data) {
  bool integers = true;
  float maxLabel = -1.0f;
  for (float label : data.labels) {
    if (!isClassLabel(label)) {
      integers = false;
      break;
    }
    maxLabel = std::max(maxLabel, label);
  }
  data.integerLabels = integers;
  data.classCount = integers ? static_cast<int64_t>(maxLabel) + 1 : 0;
}

int64_t firstLabelOutside(const Dataset &data, int64_t classes) {
  for (int64_t i = 0; i < data.count; ++i) {
    const float label = data.labels[static_cast<size_t>(i)];
    if (!isClassLabel(label) || label >= static_cast<float>(classes))
      return i;
  }
  return -1;
}

namespace {

std::string location(const Dataset &data, const std::string &file, int64_t index) {
  const int64_t row = data.sourceRows.empty() ? index : data.sourceRows[static_cast<size_t>(index)];
  if (data.sourceIsLines)
    return fmt::format("{}:{}", file, row);
  return fmt::format("{}, item {}", file, row);
}

} // namespace

std::string labelLocation(const Dataset &data, int64_t index) {
  return location(data, data.labelsOrigin, index);
}

std::string sampleLocation(const Dataset &data, int64_t index) {
  return location(data, data.origin, index);
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
  out.sourceIsLines = data.sourceIsLines;
  out.headerNote = data.headerNote;
  out.sourceRows.resize(indices.size());
  out.features.resize(static_cast<size_t>(out.count * out.featureCount));
  out.labels.resize(indices.size());
  float *dst = out.features.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t index = indices[i];
    assert(index >= 0 && index < data.count);
    std::span<const float> row = data.row(index);
    dst = std::copy(row.begin(), row.end(), dst);
    out.labels[i] = data.labels[static_cast<size_t>(index)];
    out.sourceRows[i] = data.sourceRows.empty() ? index : data.sourceRows[static_cast<size_t>(index)];
  }
  return out;
}

} // namespace netc::data
