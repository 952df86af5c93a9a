// Csv.h -- the CSV reader for tabular data: one row per sample, a label
// column and numeric features. A header row is optional: the first row is one
// when some field of it is text (neither a number, even one out of float
// range, nor empty), and the Dataset says which field decided. A UTF-8
// byte-order mark is skipped. Errors are located as file:line:column.
#pragma once

#include "runtime/data/Dataset.h"
#include "support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace netc::data {

/// Whether the first row holds column names.
enum class CsvHeader {
  Auto,    ///< a header when some field of the first row is text (not a number, not empty)
  Present, ///< the first row is a header
  Absent   ///< every row is data
};

/// How to read a CSV file.
struct CsvOptions {
  /// The label's column, 0-based; negative counts from the end (-1 = last).
  int64_t labelColumn = 0;
  CsvHeader header = CsvHeader::Auto;
  /// The field separator.
  char separator = ',';
  /// When positive: a first row of exactly this many fields means the rows
  /// have no label (netc predict: rows of the network's input size, with or
  /// without a leading label); every field is then a feature, `labels` stays
  /// empty and messages name fields, not "the label".
  int64_t unlabelledWidth = 0;
};

/// Reads a CSV file into a Dataset (sampleShape = {featureCount}).
Expected<Dataset> loadCsv(const std::string &path, const CsvOptions &options = {});

/// Parses CSV text; `name` is the file name used in messages.
Expected<Dataset> parseCsv(std::string_view text, const std::string &name, const CsvOptions &options = {});

} // namespace netc::data
