// DataFolder.h -- loads a data folder (`netc train --data DIR`): a training
// set and an optional test set, as IDX files under the standard MNIST names
// (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte, each raw or .gz) or as train.csv / test.csv; and
// the one set an evaluation reads (the test set, else the training set).
#pragma once

#include "runtime/data/Csv.h"
#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <optional>
#include <string>

namespace netc::data {

/// How to load a data folder.
struct LoadOptions {
  /// Used for train.csv and test.csv.
  CsvOptions csv;
  /// Whether to load the test set when there is one.
  bool loadTest = true;
  /// The memory IDX data may take once loaded (readIdxFile); 0: the machine's.
  uint64_t memoryLimit = 0;
};

/// A folder's data sets.
struct DataFolder {
  Dataset train;
  /// Present when the folder has a test set (and LoadOptions::loadTest).
  std::optional<Dataset> test;
};

/// Loads `dir`. IDX files are preferred to CSV when both are present; a test
/// set must have the training set's sample shape.
Expected<DataFolder> loadDataFolder(const std::string &dir, const LoadOptions &options = {});

/// Loads the set `netc eval` reads from `dir`: its test set when it has one
/// (the training set is then not read), else its training set.
Expected<Dataset> loadEvaluationSet(const std::string &dir, const LoadOptions &options = {});

} // namespace netc::data
