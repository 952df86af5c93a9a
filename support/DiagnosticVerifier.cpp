// DiagnosticVerifier.cpp -- parses `expected-*` comments and matches them
// against reported diagnostics and notes.
#include "support/DiagnosticVerifier.h"

#include <fmt/format.h>

#include <regex>

namespace netc {

namespace {

struct Expectation {
  Severity severity = Severity::Error;
  uint32_t line = 0;
  std::optional<uint32_t> startColumn, endColumn;
  std::string code;
  std::string text;
  uint32_t writtenAt = 0; // line of the comment
  bool matched = false;
};

struct Reported {
  Severity severity;
  std::string code;
  std::string message;
  SourceRange range;
  bool matched = false;
};

std::string describe(const SourceFile &file, const Reported &r) {
  LineColumn a = file.lineColumn(r.range.begin), b = file.lineColumn(r.range.end);
  std::string range = a.line == b.line ? fmt::format("{}:{}-{}", a.line, a.column, b.column)
                                       : fmt::format("{}:{}-{}:{}", a.line, a.column, b.line, b.column);
  return fmt::format("{} {} {} '{}'", range, severityName(r.severity), r.code.empty() ? "(note)" : r.code,
                     r.message);
}

} // namespace

std::vector<std::string> verifyDiagnostics(const SourceFile &file,
                                           const std::vector<Diagnostic> &diagnostics) {
  std::vector<std::string> problems;
  std::vector<Expectation> expected;
  static const std::regex pattern(
      R"(expected-(error|warning|note)(?:@([+-]?\d+)?)?(?::(\d+)-(\d*))?\s*(NS\d{4})?\s*\{\{(.*?)\}\})");
  for (uint32_t line = 1; line <= file.lineCount(); ++line) {
    std::string text(file.lineText(line));
    for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator();
         ++it) {
      const std::smatch &m = *it;
      Expectation e;
      e.writtenAt = line;
      e.severity = m[1] == "error" ? Severity::Error : m[1] == "warning" ? Severity::Warning : Severity::Note;
      e.line = line;
      if (m[2].matched) {
        std::string spec = m[2];
        int64_t value = std::stoll(spec);
        e.line = spec[0] == '+' || spec[0] == '-' ? static_cast<uint32_t>(line + value)
                                                  : static_cast<uint32_t>(value);
      }
      if (m[3].matched)
        e.startColumn = static_cast<uint32_t>(std::stoul(m[3]));
      if (m[4].matched && m[4].length() > 0)
        e.endColumn = static_cast<uint32_t>(std::stoul(m[4]));
      e.code = m[5];
      e.text = m[6];
      if (e.severity != Severity::Note && e.code.empty())
        problems.push_back(fmt::format("line {}: expectation without a diagnostic code", line));
      expected.push_back(std::move(e));
    }
  }

  std::vector<Reported> reported;
  for (const Diagnostic &d : diagnostics) {
    reported.push_back({d.severity, std::string(d.code()), d.message, d.range});
    for (const DiagNote &n : d.notes)
      reported.push_back({Severity::Note, "", n.message, n.range});
  }

  auto matches = [&](const Expectation &e, const Reported &r) {
    if (e.severity != r.severity || r.message.find(e.text) == std::string::npos)
      return false;
    if (!e.code.empty() && e.code != r.code)
      return false;
    LineColumn a = file.lineColumn(r.range.begin), b = file.lineColumn(r.range.end);
    if (a.line != e.line)
      return false;
    if (e.startColumn && a.column != *e.startColumn)
      return false;
    if (e.endColumn && (b.line != a.line || b.column != *e.endColumn))
      return false;
    return true;
  };
  for (Expectation &e : expected)
    for (Reported &r : reported)
      if (!r.matched && matches(e, r)) {
        e.matched = r.matched = true;
        break;
      }
  for (const Expectation &e : expected)
    if (!e.matched)
      problems.push_back(fmt::format(
          "line {}: expected {} {} on line {}{} '{}' was not reported", e.writtenAt, severityName(e.severity),
          e.code, e.line, e.startColumn ? fmt::format(" at column {}", *e.startColumn) : "", e.text));
  for (const Reported &r : reported)
    if (!r.matched)
      problems.push_back("unexpected " + describe(file, r));
  return problems;
}

} // namespace netc
