// Dataset.h -- the in-memory form every loader produces
// (docs/architecture.md §Data, optimizers and training):
// a row-major float matrix of samples × features, one float label per sample,
// and what is known about the labels and the samples' shape. IDX, CSV and the
// data-folder loader fill it; the normalizers, the validation split and the
// batch prefetcher read it. Plain data, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netc::data {

/// A labelled data set held in memory.
struct Dataset {
  /// Where the samples came from (file paths), for messages.
  std::string origin;
  /// Where the labels came from (the labels file for IDX; origin for CSV).
  std::string labelsOrigin;
  /// Number of samples.
  int64_t count = 0;
  /// Features per sample (the product of sampleShape).
  int64_t featureCount = 0;
  /// Row-major count × featureCount features; IDX pixels are 0..255.
  std::vector<float> features;
  /// One label per sample.
  std::vector<float> labels;
  /// True when every label is a non-negative integer.
  bool integerLabels = false;
  /// max label + 1 when integerLabels, else 0.
  int64_t classCount = 0;
  /// The shape of one sample, e.g. {28, 28} for MNIST or {featureCount} for CSV.
  std::vector<int64_t> sampleShape;
  /// Where each sample is in its files, for messages: its 1-based line when
  /// `sourceIsLines` (CSV), else its 0-based record (IDX). Empty: sample i is
  /// record i (an IDX file read whole).
  std::vector<int64_t> sourceRows;
  bool sourceIsLines = false;
  /// Why the file's first row was taken as a header, for where the data set
  /// is described ("line 1 of train.csv is a header: field 2 'pixel0' is not
  /// a number"); empty when every row is data.
  std::string headerNote;

  /// The features of sample `index` (0 <= index < count).
  std::span<const float> row(int64_t index) const {
    return {features.data() + index * featureCount, static_cast<size_t>(featureCount)};
  }
};

/// Labels at or above this are not exactly representable as floats, so they
/// cannot be class indices.
inline constexpr float kMaxClassLabel = 16777216.0f;

/// Whether `label` can be a class index: an integer in [0, kMaxClassLabel).
bool isClassLabel(float label);

/// Sets `integerLabels` and `classCount` from `labels`.
void computeLabelInfo(Dataset &data);

/// The first sample whose label is not a class of `classes` (an integer
/// in [0, classes)), or -1 when every label is.
int64_t firstLabelOutside(const Dataset &data, int64_t classes);

/// Where the label of sample `index` is, for messages: "train.csv:12" for
/// CSV, "train-labels-idx1-ubyte, item 12" for IDX (0-based, as its items).
std::string labelLocation(const Dataset &data, int64_t index);

/// Where sample `index`'s features are, for messages: "train.csv:12" for
/// CSV, "train-images-idx3-ubyte, item 12" for IDX.
std::string sampleLocation(const Dataset &data, int64_t index);

/// The samples of `data` at `indices` (in that order), with the same
/// featureCount, sampleShape, integerLabels, classCount and headerNote (a subset keeps the
/// parent's class count even when it lacks the highest class). Indices must
/// lie in [0, data.count).
Dataset selectRows(const Dataset &data, std::span<const int64_t> indices);

} // namespace netc::data
