// FuzzPipeline.cpp -- the invariants of FuzzPipeline.h, checked on one text:
// a parse-only compile and a full compile through every pass, the dumps and
// printers over their results, and the format-then-recompile round trip.
#include "tests/fuzz/FuzzPipeline.h"

#include "api/Driver.h"
#include "frontend/AstDump.h"
#include "frontend/Formatter.h"
#include "ir/IrPrinter.h"
#include "support/DiagnosticPrinter.h"

#include <fmt/format.h>

#include <exception>
#include <memory>

namespace netc::fuzz {

namespace {

/// The file name of every compile, so networks of different texts compare.
constexpr const char *kFileName = "fuzz.net";

std::string describe(SourceRange range) {
  return fmt::format("[{}, {})", range.begin, range.end);
}

bool inFile(SourceRange range, uint32_t size) {
  return range.begin <= range.end && range.end <= size;
}

/// Checks the ranges and counts of every diagnostic of one compilation.
std::optional<std::string> checkDiagnostics(const Compilation &c, std::string_view what) {
  uint32_t size = c.file.size();
  size_t errors = 0, warnings = 0;
  for (const Diagnostic &d : c.diags.diagnostics()) {
    if (!inFile(d.range, size))
      return fmt::format("{}: diagnostic {} '{}' has range {} outside the file of {} bytes", what, d.code(),
                         d.message, describe(d.range), size);
    for (const DiagNote &note : d.notes)
      if (!inFile(note.range, size))
        return fmt::format("{}: note '{}' of diagnostic {} has range {} outside the file of {} bytes", what,
                           note.message, d.code(), describe(note.range), size);
    for (const FixIt &fix : d.fixits)
      if (!inFile(fix.range, size))
        return fmt::format("{}: fix-it of diagnostic {} has range {} outside the file of {} bytes", what,
                           d.code(), describe(fix.range), size);
    if (d.severity == Severity::Error)
      ++errors;
    else if (d.severity == Severity::Warning)
      ++warnings;
  }
  if (errors != c.diags.errorCount() || warnings != c.diags.warningCount())
    return fmt::format("{}: the engine counts {} errors and {} warnings, its diagnostics hold {} and {}", what,
                       c.diags.errorCount(), c.diags.warningCount(), errors, warnings);
  return std::nullopt;
}

/// An error-free compile must leave a network the later stages can use.
std::optional<std::string> checkNetwork(const Compilation &c, std::string_view what) {
  const ir::Network &net = c.network;
  if (net.output < 0 || static_cast<size_t>(net.output) >= net.layers.size())
    return fmt::format("{}: compiled without errors but output index is {} of {} layers", what, net.output,
                       net.layers.size());
  for (const ir::Layer &layer : net.layers)
    if (layer.nodes <= 0)
      return fmt::format("{}: compiled without errors but layer '{}' has {} nodes", what, layer.name,
                         layer.nodes);
  return std::nullopt;
}

/// Renders everything a user or tool could ask for; the results are only
/// checked by the sanitizers, and for the JSON printer by its dump().
size_t renderAll(const Compilation &c) {
  size_t total = dumpTokens(c.parse.tokens, c.file).size();
  total += dumpAst(c.parse.program, c.file).size();
  total += ir::printNetwork(c.network).size();
  for (const Diagnostic &d : c.diags.sorted()) {
    total += formatDiagnosticText(c.file, d).size();
    total += formatDiagnosticText(c.file, d, TextPrintOptions{true}).size();
    total += diagnosticToJson(c.file, d).dump().size();
  }
  total += formatDiagnosticSummary(c.diags.errorCount(), c.diags.warningCount()).size();
  return total;
}

struct Compiled {
  std::unique_ptr<Compilation> parsed; // Stage::Parse
  std::unique_ptr<Compilation> full;   // Stage::Passes
};

std::optional<std::string> compileBoth(const std::string &text, const CompileOptions &options,
                                       std::string_view what, Compiled &out) {
  out.parsed = compileSource(SourceFile(kFileName, text), options, Stage::Parse);
  out.full = compileSource(SourceFile(kFileName, text), options, Stage::Passes);
  if (auto failure = checkDiagnostics(*out.parsed, fmt::format("{} (parse only)", what)))
    return failure;
  if (auto failure = checkDiagnostics(*out.full, what))
    return failure;
  // The full compile starts with the same parse, so with the same diagnostics.
  const auto &early = out.parsed->diags.diagnostics();
  const auto &all = out.full->diags.diagnostics();
  if (early.size() > all.size())
    return fmt::format("{}: parsing reports {} diagnostics, the full compile only {}", what, early.size(),
                       all.size());
  for (size_t i = 0; i < early.size(); ++i)
    if (early[i].id != all[i].id || early[i].range != all[i].range || early[i].message != all[i].message)
      return fmt::format("{}: parse diagnostic {} differs in the full compile: '{}' vs '{}'", what, i,
                         early[i].message, all[i].message);
  if (!out.full->diags.hasErrors())
    if (auto failure = checkNetwork(*out.full, what))
      return failure;
  renderAll(*out.parsed);
  renderAll(*out.full);
  return std::nullopt;
}

std::optional<std::string> firstError(const Compilation &c) {
  for (const Diagnostic &d : c.diags.sorted())
    if (d.severity == Severity::Error)
      return fmt::format("{} at {}: {}", d.code(), describe(d.range), d.message);
  return std::nullopt;
}

std::optional<std::string> checkPipelineImpl(std::string_view text, const CompileOptions &options,
                                             PipelineStats &stats) {
  Compiled original;
  if (auto failure = compileBoth(std::string(text), options, "input", original))
    return failure;
  stats.parseErrors = original.parsed->diags.hasErrors();
  stats.errors = original.full->diags.hasErrors();
  if (stats.parseErrors)
    return std::nullopt;

  // Formatting never changes meaning (Formatter.h).
  std::string formatted = formatProgram(original.parsed->parse.program, original.parsed->file);
  stats.formatted = true;
  Compiled again;
  if (auto failure = compileBoth(formatted, options, "formatted input", again))
    return failure;
  if (again.parsed->diags.hasErrors())
    return fmt::format("the formatted text does not parse: {}\n--- formatted text ---\n{}",
                       *firstError(*again.parsed), formatted);
  std::string reformatted = formatProgram(again.parsed->parse.program, again.parsed->file);
  if (reformatted != formatted)
    return fmt::format("formatting is not idempotent\n--- formatted once ---\n{}--- formatted twice ---\n{}",
                       formatted, reformatted);
  if (stats.errors)
    return std::nullopt;
  if (again.full->diags.hasErrors())
    return fmt::format("the input compiles without errors, its formatted text does not: {}\n"
                       "--- formatted text ---\n{}",
                       *firstError(*again.full), formatted);
  std::string before = ir::printNetwork(original.full->network);
  std::string after = ir::printNetwork(again.full->network);
  if (before != after)
    return fmt::format("formatting changed the IR\n--- IR of the input ---\n{}--- IR of the formatted text "
                       "---\n{}--- formatted text ---\n{}",
                       before, after, formatted);
  return std::nullopt;
}

} // namespace

CompileOptions fuzzOptions(uint64_t selector) {
  CompileOptions options;
  options.maxFilterPairs = int64_t{1} << 20;
  options.maxLayerNodes = int64_t{1} << 24;
  options.maxParams = int64_t{1} << 30;
  switch (selector & 3) {
  case 0: options.task = Task::Unspecified; break;
  case 1: options.task = Task::Multiclass; break;
  case 2: options.task = Task::Binary; break;
  default: options.task = Task::Regression; break;
  }
  selector >>= 2;
  // Positive, as the CLI enforces (CommandSupport.cpp), but up to absurd.
  static constexpr int64_t kSizes[] = {1, 2, 7, 784, 100000, int64_t{1} << 40};
  switch (selector % 4) {
  case 0: break; // leave inputSize and classCount unset
  case 1: options.inputSize = 784; options.classCount = 10; break;
  case 2:
    options.inputSize = kSizes[(selector >> 2) % 6];
    options.classCount = kSizes[(selector >> 5) % 6];
    break;
  default: options.hiddenNodes = kSizes[(selector >> 2) % 6]; break;
  }
  return options;
}

std::optional<std::string> checkPipeline(std::string_view text, const CompileOptions &options,
                                         PipelineStats *stats) {
  PipelineStats local;
  try {
    return checkPipelineImpl(text, options, stats ? *stats : local);
  } catch (const std::exception &e) {
    return fmt::format("an exception escaped: {}", e.what());
  } catch (...) {
    return std::string("a non-standard exception escaped");
  }
}

} // namespace netc::fuzz
