// Csv.cpp -- the CSV reader (see Csv.h). Reads the whole file, then walks it
// line by line keeping the line number and each field's column so that every
// error can name file:line:column. A UTF-8 byte-order mark is skipped (a
// UTF-16 one refused); blank lines are skipped; fields may be surrounded by
// spaces or double quotes.
#include "runtime/data/Csv.h"

#include "support/ByteSize.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
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

/// A field's text for a message: at most 40 bytes of it, escaped, so that a
/// huge or hostile field cannot make a huge or harmful message.
std::string shownField(std::string_view text) {
  return printableText(text.substr(0, 40)) + (text.size() > 40 ? "..." : "");
}

/// The first field written as text, which makes a first row a header; -1
/// when every field is written as a number (NaN, infinities and numbers out
/// of float range included) or is empty: such a row is data whose bad values
/// get the usual located errors, never a guessed header.
int64_t firstTextField(const std::vector<Field> &fields) {
  float value;
  for (size_t i = 0; i < fields.size(); ++i)
    if (parseNumber(fields[i].text, value) == NumberError::NotANumber)
      return static_cast<int64_t>(i);
  return -1;
}

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

} // namespace

Expected<Dataset> parseCsv(std::string_view text, const std::string &name, const CsvOptions &options) {
  Dataset data;
  data.origin = name;
  data.labelsOrigin = name;
  data.sourceIsLines = true;
  // Spreadsheets save "UTF-8 CSV" with a byte-order mark: it is no part of
  // the first field. A UTF-16 file would read as fields of NUL bytes.
  if (text.starts_with(kUtf8ByteOrderMark))
    text.remove_prefix(kUtf8ByteOrderMark.size());
  else if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
    return fail(fmt::format("{}: UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 "
                            "or ASCII CSV",
                            name));
  std::vector<Field> fields;
  size_t width = 0;
  int64_t widthLine = 0;
  size_t labelColumn = 0;
  bool labelled = true;
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
      labelled = options.unlabelledWidth <= 0 || static_cast<int64_t>(width) != options.unlabelledWidth;
      if (labelled && width < 2)
        return fail(
            fmt::format("{}:{}: a row needs a label and at least one feature, but this one has {} field; "
                        "expected fields separated by '{}'",
                        name, lineNumber, width, options.separator));
      int64_t column =
          options.labelColumn < 0 ? static_cast<int64_t>(width) + options.labelColumn : options.labelColumn;
      if (labelled && (column < 0 || column >= static_cast<int64_t>(width)))
        return fail(fmt::format("{}:{}: label column {} is out of range: rows have {} fields", name,
                                lineNumber, options.labelColumn, width));
      labelColumn = labelled ? static_cast<size_t>(column) : width;
      data.featureCount = static_cast<int64_t>(width) - (labelled ? 1 : 0);
      if (options.header == CsvHeader::Present) {
        sawHeader = true;
        data.headerNote = fmt::format("line {} of {} is a header, as asked", lineNumber, name);
        continue;
      }
      if (options.header == CsvHeader::Auto)
        if (const int64_t textField = firstTextField(fields); textField >= 0) {
          sawHeader = true;
          data.headerNote =
              fmt::format("line {} of {} is a header: field {} '{}' is not a number", lineNumber, name,
                          textField + 1, shownField(fields[static_cast<size_t>(textField)].text));
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
        std::string what = i == labelColumn ? fmt::format("the label (field {})", i + 1)
                                            : fmt::format("feature field {}", i + 1);
        const std::string shown = shownField(fields[i].text);
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
    return fail(sawHeader ? fmt::format("{}: a header row but no data rows ({})", name, data.headerNote)
                          : fmt::format("{}: no data rows", name));
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
  // The text, then its values as floats (at most 4 bytes for every 2 bytes
  // of text: a digit and a separator): at most 3 times the file. Refused
  // before it is read when that is more than the machine has.
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    return fail(fmt::format("{}: cannot read: {}", path, ec.message()));
  if (const uint64_t memory = machineMemoryBytes(); size > memory / 3)
    return fail(fmt::format("{}: {} of CSV text take up to {} once read and parsed, more than this machine's "
                            "{} of memory; use a smaller file, or the data as IDX files",
                            path, byteSizeText(size), byteSizeText(uint64_t(size) * 3),
                            byteSizeText(memory)));
  // errno is read right after the call that set it: never a stale one.
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    const int error = errno;
    return fail(fmt::format("{}: cannot open: {}", path, std::strerror(error)));
  }
  std::string text;
  text.reserve(size);
  char buffer[1 << 16];
  while (const size_t got = std::fread(buffer, 1, sizeof buffer, file.get())) {
    text.append(buffer, got);
    if (text.size() > size + (uint64_t{1} << 20)) // growing while read: bounded by what was checked
      return fail(fmt::format("{}: the file grew while it was read (beyond {}); read it once it is complete",
                              path, byteSizeText(size)));
  }
  if (std::ferror(file.get())) {
    const int error = errno;
    return fail(fmt::format("{}: cannot read: {}", path, std::strerror(error)));
  }
  return parseCsv(text, path, options);
}

} // namespace netc::data
