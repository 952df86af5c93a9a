// Csv.cpp -- the CSV reader (see Csv.h). Reads the whole file, then walks it
// line by line keeping the line number and each field's column so that every
// error can name file:line:column. Blank lines are skipped; fields may be
// surrounded by spaces or double quotes.
#include "runtime/data/Csv.h"

#include "support/PrintableText.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace netc::data {
namespace {

/// One field of a line: its text (trimmed, unquoted) and 1-based column.
struct Field {
  std::string_view text;
  int64_t column;
};

bool isBlank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text, int64_t &column) {
  while (!text.empty() && isBlank(text.front())) {
    text.remove_prefix(1);
    ++column;
  }
  while (!text.empty() && isBlank(text.back()))
    text.remove_suffix(1);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
    ++column;
  }
  return text;
}

void splitFields(std::string_view line, char separator, std::vector<Field> &fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    size_t end = line.find(separator, start);
    std::string_view piece =
        line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    int64_t column = static_cast<int64_t>(start) + 1;
    std::string_view text = trim(piece, column);
    // An empty field is located at its start.
    fields.push_back({text, text.empty() ? static_cast<int64_t>(start) + 1 : column});
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
}

enum class NumberError { None, Empty, NotANumber, NotFinite, OutOfRange };

NumberError parseNumber(std::string_view text, float &value) {
  if (text.empty())
    return NumberError::Empty;
  if (text.front() == '+' && text.size() > 1 && text[1] != '-' && text[1] != '+')
    text.remove_prefix(1);
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range)
    return NumberError::OutOfRange;
  if (ec != std::errc() || ptr != end)
    return NumberError::NotANumber;
  if (!std::isfinite(value))
    return NumberError::NotFinite;
  return NumberError::None;
}

/// Whether every field is written as a number. NaN and infinities count:
/// a row of them is data with a bad value, not a header.
bool allNumbers(const std::vector<Field> &fields) {
  float value;
  for (const Field &field : fields)
    if (NumberError error = parseNumber(field.text, value);
        error != NumberError::None && error != NumberError::NotFinite)
      return false;
  return true;
}

} // namespace

Expected<Dataset> parseCsv(std::string_view text, const std::string &name, const CsvOptions &options) {
  Dataset data;
  data.origin = name;
  data.labelsOrigin = name;
  data.sourceIsLines = true;
  std::vector<Field> fields;
  size_t width = 0;
  int64_t widthLine = 0;
  size_t labelColumn = 0;
  bool sawHeader = false;
  bool first = true;
  int64_t lineNumber = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    splitFields(line, options.separator, fields);

    if (first) {
      first = false;
      width = fields.size();
      widthLine = lineNumber;
      if (width < 2)
        return fail(
            fmt::format("{}:{}: a row needs a label and at least one feature, but this one has {} field; "
                        "expected fields separated by '{}'",
                        name, lineNumber, width, options.separator));
      int64_t column =
          options.labelColumn < 0 ? static_cast<int64_t>(width) + options.labelColumn : options.labelColumn;
      if (column < 0 || column >= static_cast<int64_t>(width))
        return fail(fmt::format("{}:{}: label column {} is out of range: rows have {} fields", name,
                                lineNumber, options.labelColumn, width));
      labelColumn = static_cast<size_t>(column);
      data.featureCount = static_cast<int64_t>(width) - 1;
      bool header =
          options.header == CsvHeader::Present || (options.header == CsvHeader::Auto && !allNumbers(fields));
      if (header) {
        sawHeader = true;
        continue;
      }
    }

    if (fields.size() != width)
      return fail(fmt::format("{}:{}: expected {} fields (as in line {}) but found {}", name, lineNumber,
                              width, widthLine, fields.size()));
    for (size_t i = 0; i < fields.size(); ++i) {
      float value = 0;
      NumberError error = parseNumber(fields[i].text, value);
      if (error != NumberError::None) {
        std::string what = i == labelColumn ? "the label" : fmt::format("feature field {}", i + 1);
        // At most 40 bytes of the field: a huge one must not make a huge message.
        const std::string shown =
            printableText(fields[i].text.substr(0, 40)) + (fields[i].text.size() > 40 ? "..." : "");
        std::string problem;
        switch (error) {
        case NumberError::Empty: problem = fmt::format("{} is empty; expected a number", what); break;
        case NumberError::NotANumber: problem = fmt::format("{} '{}' is not a number", what, shown); break;
        case NumberError::NotFinite:
          problem = fmt::format("{} '{}' is not a finite number", what, shown);
          break;
        case NumberError::OutOfRange:
          problem = fmt::format("{} '{}' is out of range for a 32-bit float", what, shown);
          break;
        case NumberError::None: break;
        }
        return fail(fmt::format("{}:{}:{}: {}", name, lineNumber, fields[i].column, problem));
      }
      if (i == labelColumn)
        data.labels.push_back(value);
      else
        data.features.push_back(value);
    }
    data.sourceRows.push_back(lineNumber);
    ++data.count;
  }

  if (first)
    return fail(
        fmt::format("{}: empty file; expected one row per sample: a label and numeric features", name));
  if (data.count == 0)
    return fail(fmt::format("{}: {} but no data rows", name, sawHeader ? "a header row" : "no rows"));
  data.sampleShape = {data.featureCount};
  computeLabelInfo(data);
  return data;
}

Expected<Dataset> loadCsv(const std::string &path, const CsvOptions &options) {
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return fail(fmt::format("{}: no such file", path));
  if (!std::filesystem::is_regular_file(status))
    return fail(fmt::format("{}: not a regular file", path));
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return fail(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  return parseCsv(text.view(), path, options);
}

} // namespace netc::data
