// DiagnosticPrinter.cpp -- text and JSON rendering of diagnostics. In text,
// every piece of the user's text (file name, message, source line, fix-its)
// has its control bytes escaped (PrintableText.h); JSON escapes them itself.
#include "support/DiagnosticPrinter.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc {

namespace {

constexpr const char *kBold = "\033[1m";
constexpr const char *kRed = "\033[1;31m";
constexpr const char *kMagenta = "\033[1;35m";
constexpr const char *kCyan = "\033[1;36m";
constexpr const char *kGreen = "\033[1;32m";
constexpr const char *kReset = "\033[0m";

const char *severityColour(Severity severity) {
  switch (severity) {
  case Severity::Error: return kRed;
  case Severity::Warning: return kMagenta;
  case Severity::Note: return kCyan;
  }
  return kBold;
}

// Expands tabs and escapes control bytes (PrintableText.h: never raw ESC,
// BEL or NUL on the terminal) so the underline lines up with the echoed
// source line.
std::string printableLine(std::string_view line) {
  std::string out;
  for (char c : line) {
    if (c == '\t')
      out.append(4 - out.size() % 4, ' ');
    else if (isControlByte(static_cast<unsigned char>(c)))
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
    else
      out.push_back(c);
  }
  return out;
}

/// The column of byte `byteColumn` in printableLine(line), in characters.
size_t displayColumn(std::string_view line, size_t byteColumn) {
  size_t col = 0;
  for (size_t i = 0; i < byteColumn && i < line.size(); ++i) {
    auto c = static_cast<unsigned char>(line[i]);
    if (line[i] == '\t')
      col += 4 - col % 4;
    else if (isControlByte(c))
      col += 4;
    else if ((c & 0xC0) != 0x80)
      ++col;
  }
  return col;
}

void appendLocated(std::string &out, const SourceFile &file, SourceRange range, Severity severity,
                   std::string_view message, std::string_view code, const TextPrintOptions &opt) {
  LineColumn start = file.lineColumn(range.begin);
  const char *bold = opt.colour ? kBold : "";
  const char *reset = opt.colour ? kReset : "";
  const char *sevColour = opt.colour ? severityColour(severity) : "";
  // The file name and the message are the user's text too: a name such as
  // $'evil\e]0;PWNED\a.net' must not retitle or recolour the terminal.
  out += fmt::format("{}{}:{}:{}: {}{}{}: {}{}", bold, printableText(file.name()), start.line, start.column,
                     reset, sevColour, severityName(severity), reset, bold);
  out += printableText(message);
  if (!code.empty())
    out += fmt::format(" [{}]", code);
  out += reset;
  out += '\n';

  std::string_view line = file.lineText(start.line);
  std::string shown = printableLine(line);
  size_t from = displayColumn(line, start.column - 1);
  LineColumn end = file.lineColumn(range.end);
  size_t to = end.line == start.line ? displayColumn(line, end.column - 1) : shown.size();
  to = std::max(to, from + 1);
  // Very long lines are shown as a window around the range.
  constexpr size_t kWindow = 160, kBefore = 60;
  if (shown.size() > kWindow) {
    size_t first = from > kBefore ? from - kBefore : 0;
    std::string window = shown.substr(first, kWindow);
    std::string prefix = first > 0 ? "..." : "";
    std::string suffix = first + kWindow < shown.size() ? "..." : "";
    shown = prefix + window + suffix;
    from = from - first + prefix.size();
    to = std::min(to - first + prefix.size(), prefix.size() + window.size());
    to = std::max(to, from + 1);
  }
  out += fmt::format("{:>5} | {}\n", start.line, shown);
  std::string underline(from, ' ');
  underline += '^';
  if (to > from + 1)
    underline.append(to - from - 1, '~');
  out += fmt::format("      | {}{}{}\n", opt.colour ? kGreen : "", underline, reset);
}

} // namespace

std::string formatDiagnosticText(const SourceFile &file, const Diagnostic &diag,
                                 const TextPrintOptions &options) {
  std::string out;
  appendLocated(out, file, diag.range, diag.severity, diag.message, diag.code(), options);
  for (const FixIt &fix : diag.fixits) {
    LineColumn at = file.lineColumn(fix.range.begin);
    const std::string removed = printableText(file.slice(fix.range)), added = printableText(fix.replacement);
    if (fix.replacement.empty())
      out += fmt::format("      = fix-it: remove '{}' at {}:{}\n", removed, at.line, at.column);
    else if (fix.range.empty())
      out += fmt::format("      = fix-it: insert '{}' at {}:{}\n", added, at.line, at.column);
    else
      out += fmt::format("      = fix-it: replace '{}' with '{}' at {}:{}\n", removed, added, at.line,
                         at.column);
  }
  for (const DiagNote &note : diag.notes)
    appendLocated(out, file, note.range, Severity::Note, note.message, {}, options);
  return out;
}

std::string formatDiagnosticSummary(size_t errors, size_t warnings) {
  auto plural = [](size_t n, const char *word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); };
  if (errors && warnings)
    return plural(errors, "error") + " and " + plural(warnings, "warning") + " generated.";
  if (errors)
    return plural(errors, "error") + " generated.";
  if (warnings)
    return plural(warnings, "warning") + " generated.";
  return "";
}

nlohmann::json rangeToJson(const SourceFile &file, SourceRange range) {
  LineColumn start = file.lineColumn(range.begin);
  LineColumn end = file.lineColumn(range.end);
  return {{"start", {{"line", start.line}, {"column", start.column}}},
          {"end", {{"line", end.line}, {"column", end.column}}}};
}

nlohmann::json diagnosticToJson(const SourceFile &file, const Diagnostic &diag) {
  nlohmann::json notes = nlohmann::json::array();
  for (const DiagNote &note : diag.notes)
    notes.push_back(
        {{"severity", "note"}, {"message", note.message}, {"range", rangeToJson(file, note.range)}});
  nlohmann::json fixits = nlohmann::json::array();
  for (const FixIt &fix : diag.fixits)
    fixits.push_back({{"range", rangeToJson(file, fix.range)}, {"replacement", fix.replacement}});
  return {{"severity", std::string(severityName(diag.severity))},
          {"code", std::string(diag.code())},
          {"message", diag.message},
          {"file", file.name()},
          {"range", rangeToJson(file, diag.range)},
          {"notes", std::move(notes)},
          {"fixits", std::move(fixits)}};
}

} // namespace netc
