// CommandSupport.cpp -- shared flag handling and output helpers.
#include "CommandSupport.h"

#include "support/DiagnosticPrinter.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace netc::cli {

void CompileFlags::addTo(CLI::App &app) {
  app.add_option("--input-size", inputSize, "Feature count of the data (sizes 'input X auto')")
      ->check(CLI::PositiveNumber);
  app.add_option("--hidden-nodes", hiddenNodes, "Size of 'hidden H auto' layers")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--task", task, "Learning task: auto, multiclass, binary or regression")
      ->check(CLI::IsMember({"auto", "multiclass", "binary", "regression"}))
      ->capture_default_str();
  app.add_option("--classes", classes, "Number of classes of a multiclass task")->check(CLI::PositiveNumber);
  app.add_option("--max-filter-pairs", maxFilterPairs,
                 "Most (source, destination) pairs a 'where' predicate may be tested on")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--error-limit", errorLimit, "Stop after this many errors (0: report every error)")
      ->capture_default_str();
}

CompileOptions CompileFlags::options() const {
  CompileOptions o;
  o.inputSize = inputSize;
  o.hiddenNodes = hiddenNodes;
  o.classCount = classes;
  o.maxFilterPairs = maxFilterPairs;
  o.maxErrors = errorLimit;
  o.task = task == "multiclass"   ? Task::Multiclass
           : task == "binary"     ? Task::Binary
           : task == "regression" ? Task::Regression
                                  : Task::Unspecified;
  return o;
}

void ColourFlag::addTo(CLI::App &app) {
  app.add_option("--color", mode, "Colour diagnostics: auto (on a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

bool ColourFlag::enabledFor(std::FILE *stream) const {
  if (mode == "always")
    return true;
  if (mode == "never")
    return false;
  return isatty(fileno(stream)) != 0;
}

std::optional<std::string> readFile(const std::string &path, std::string &error) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    error = std::strerror(EISDIR);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = "read error";
    return std::nullopt;
  }
  return text.str();
}

std::string unreadableMessage(const std::string &path, const std::string &reason) {
  return fmt::format(fmt::runtime(std::string(diagInfo(DiagId::CannotReadFile).format)), path, reason);
}

std::optional<std::string> readFileOrReport(const std::string &path) {
  std::string error;
  auto text = readFile(path, error);
  if (!text)
    std::fprintf(stderr, "%s: error: %s [%s]\n", path.c_str(), unreadableMessage(path, error).c_str(),
                 std::string(diagInfo(DiagId::CannotReadFile).code).c_str());
  return text;
}

void printDiagnostics(std::FILE *out, const Compilation &c, bool colour) {
  TextPrintOptions options;
  options.colour = colour;
  for (const Diagnostic &d : c.diags.sorted())
    std::fputs(formatDiagnosticText(c.file, d, options).c_str(), out);
  std::string summary = formatDiagnosticSummary(c.diags.errorCount(), c.diags.warningCount());
  if (!summary.empty())
    std::fprintf(out, "%s\n", summary.c_str());
}

std::optional<Model> loadModelOrReport(const std::string &file, const std::string &weights,
                                       const ModelOptions &options, int &exitCode) {
  exitCode = kUsageError;
  if (!readFileOrReport(file)) // NS0001, exit 2 like check/show/fmt/compile (docs/cli.md)
    return std::nullopt;
  ModelResult loaded = Model::load(file, weights, options);
  if (!loaded.diagnostics.empty())
    std::fputs(loaded.diagnostics.c_str(), stderr);
  if (!loaded.model) {
    std::fprintf(stderr, "netc: error: %s\n", loaded.error.c_str());
    exitCode = loaded.failure == FailureKind::Usage ? kUsageError : kInputError;
    return std::nullopt;
  }
  exitCode = kSuccess;
  return std::move(loaded.model);
}

} // namespace netc::cli
