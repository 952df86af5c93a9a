// FuzzPipeline.cpp -- the invariants of FuzzPipeline.h, checked on one text:
// a compile through every pass, the dumps and printers over its result, a
// parse-only compile of some inputs, parsing with every number tuple folded
// (frontend/Lexer.h) against parsing with none, and the format-then-recompile
// round trip.
// Whether parsing failed comes from Network::fromIncompleteSource, so most
// inputs are parsed once (parsing dominates the cost under the sanitizers).
#include "tests/fuzz/FuzzPipeline.h"

#include "api/Driver.h"
#include "frontend/AstDump.h"
#include "frontend/Formatter.h"
#include "frontend/Parser.h"
#include "ir/IrPrinter.h"
#include "support/DiagnosticPrinter.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <vector>

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
    return fmt::format("{}: the engine counts {} errors and {} warnings, its diagnostics hold {} and {}",
                       what, c.diags.errorCount(), c.diags.warningCount(), errors, warnings);
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

constexpr size_t kRenderedAtEachEnd = 20;

/// Renders everything a user or tool could ask for; the results are only
/// checked by the sanitizers, and for the JSON printer by its dump().
size_t renderAll(const Compilation &c) {
  size_t total = dumpTokens(c.parse.tokens, c.file).size();
  total += dumpAst(c.parse.program, c.file).size();
  total += ir::printNetwork(c.network).size();
  // Each text diagnostic echoes its source line, so rendering all of them is
  // quadratic in a long line full of stray bytes; the first and last few
  // exercise the printers just as well.
  std::vector<Diagnostic> sorted = c.diags.sorted();
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i == kRenderedAtEachEnd && sorted.size() > 2 * kRenderedAtEachEnd)
      i = sorted.size() - kRenderedAtEachEnd;
    total += formatDiagnosticText(c.file, sorted[i]).size();
    total += formatDiagnosticText(c.file, sorted[i], TextPrintOptions{true}).size();
    total += diagnosticToJson(c.file, sorted[i]).dump().size();
  }
  total += formatDiagnosticSummary(c.diags.errorCount(), c.diags.warningCount()).size();
  return total;
}

/// The checks every compilation must pass, whatever its input.
std::optional<std::string> checkCompilation(const Compilation &c, std::string_view what) {
  if (auto failure = checkDiagnostics(c, what))
    return failure;
  if (!c.diags.hasErrors())
    if (auto failure = checkNetwork(c, what))
      return failure;
  return std::nullopt;
}

std::string describe(const Diagnostic &d) {
  return fmt::format("{} {} at {}: {}", severityName(d.severity), d.code(), describe(d.range), d.message);
}

std::string firstError(const Compilation &c) {
  for (const Diagnostic &d : c.diags.sorted())
    if (d.severity == Severity::Error)
      return describe(d);
  return "no error";
}

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char ch : text)
    h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001B3ULL;
  return h;
}

/// A parse-only compile must report exactly the parse errors the full one
/// recorded (Network::fromIncompleteSource), as its first diagnostics.
std::optional<std::string> checkParseStage(std::string_view text, const CompileOptions &options,
                                           const Compilation &full) {
  auto parsed = compileSource(SourceFile(kFileName, std::string(text)), options, Stage::Parse);
  if (parsed->diags.hasErrors() != full.network.fromIncompleteSource)
    return fmt::format("parsing alone reports {} errors, but the full compile has fromIncompleteSource = {}",
                       parsed->diags.errorCount(), full.network.fromIncompleteSource);
  const auto &early = parsed->diags.diagnostics(), &all = full.diags.diagnostics();
  for (size_t i = 0; i < early.size(); ++i)
    if (i >= all.size() || early[i].id != all[i].id || early[i].range != all[i].range ||
        early[i].message != all[i].message)
      return fmt::format("parse diagnostic {} ('{}') is not the full compile's diagnostic {} ('{}')", i,
                         describe(early[i]), i, i < all.size() ? describe(all[i]) : "none");
  return std::nullopt;
}

/// Folding tuples of numbers into NUMBER_LIST tokens changes nothing in a
/// text that parses: the same AST and no diagnostics, when every tuple is
/// folded as when none is. A text with syntax errors keeps them (ANTLR's
/// recovery may skip a folded tuple as one token, so later errors can move).
std::optional<std::string> checkTupleFolding(std::string_view text) {
  auto parse = [&](size_t foldFrom, bool &errors) {
    SourceFile file(kFileName, std::string(text));
    DiagnosticEngine diags;
    ParseResult result = parseProgram(file, diags, foldFrom);
    errors = diags.hasErrors();
    std::string out = dumpAst(result.program, file);
    for (const Diagnostic &d : diags.sorted())
      out += describe(d) + "\n";
    return out;
  };
  bool foldedErrors = false, plainErrors = false;
  const std::string folded = parse(1, foldedErrors), plain = parse(SIZE_MAX, plainErrors);
  if (plainErrors ? !foldedErrors : folded != plain)
    return fmt::format("folding number tuples changed the parse\n--- folded ---\n{}--- not folded ---\n{}",
                       folded, plain);
  return std::nullopt;
}

std::optional<std::string> checkPipelineImpl(std::string_view text, const CompileOptions &options,
                                             PipelineStats &stats) {
  auto compiled = compileSource(SourceFile(kFileName, std::string(text)), options, Stage::Passes);
  const Compilation &c = *compiled;
  if (auto failure = checkCompilation(c, "input"))
    return failure;
  renderAll(c);
  stats.parseErrors = c.network.fromIncompleteSource;
  stats.errors = c.diags.hasErrors();
  // One input in eight (picked by its text, so runs repeat) is also parsed
  // alone, to check the parse stage agrees with what the full compile says.
  if (fnv1a(text) % 8 == 0)
    if (auto failure = checkParseStage(text, options, c))
      return failure;
  if (fnv1a(text) % 8 == 1)
    if (auto failure = checkTupleFolding(text))
      return failure;
  if (stats.parseErrors)
    return std::nullopt;

  // Formatting never changes meaning (Formatter.h): the formatted text gets
  // the same diagnostics (by kind and message; the ranges move), formats to
  // itself, and compiles to the same IR.
  std::string formatted = formatProgram(c.parse.program, c.file);
  stats.formatted = true;
  auto again = compileSource(SourceFile(kFileName, formatted), options, Stage::Passes);
  if (auto failure = checkCompilation(*again, "formatted input"))
    return failure;
  if (again->network.fromIncompleteSource)
    return fmt::format("the formatted text does not parse: {}\n--- formatted text ---\n{}",
                       firstError(*again), formatted);
  const auto &before = c.diags.diagnostics(), &after = again->diags.diagnostics();
  for (size_t i = 0; i < std::max(before.size(), after.size()); ++i)
    if (i >= before.size() || i >= after.size() || before[i].id != after[i].id ||
        before[i].message != after[i].message)
      return fmt::format("formatting changed diagnostic {}: '{}' became '{}'\n--- formatted text ---\n{}", i,
                         i < before.size() ? describe(before[i]) : "none",
                         i < after.size() ? describe(after[i]) : "none", formatted);
  std::string reformatted = formatProgram(again->parse.program, again->file);
  if (reformatted != formatted)
    return fmt::format("formatting is not idempotent\n--- formatted once ---\n{}--- formatted twice ---\n{}",
                       formatted, reformatted);
  if (stats.errors)
    return std::nullopt;
  std::string irBefore = ir::printNetwork(c.network), irAfter = ir::printNetwork(again->network);
  if (irBefore != irAfter)
    return fmt::format("formatting changed the IR\n--- IR of the input ---\n{}--- IR of the formatted text "
                       "---\n{}--- formatted text ---\n{}",
                       irBefore, irAfter, formatted);
  return std::nullopt;
}

} // namespace

CompileOptions fuzzOptions(uint64_t selector) {
  CompileOptions options;
  options.maxFilterPairs = int64_t{1} << 16;
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
  case 1:
    options.inputSize = 784;
    options.classCount = 10;
    break;
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
