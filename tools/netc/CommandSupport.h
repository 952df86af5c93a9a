// CommandSupport.h -- what the netc subcommands share: reading files, the
// compile-option flags, colour detection and diagnostic output.
#pragma once

#include "api/Driver.h"
#include "netc/Training.h"

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace netc::cli {

/// Exit statuses of every subcommand.
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2 };

/// Flags that become CompileOptions (task, sizes, limits).
struct CompileFlags {
  std::optional<int64_t> inputSize;
  int64_t hiddenNodes = 100;
  std::string task = "auto";
  std::optional<int64_t> classes;
  int64_t maxFilterPairs = int64_t{1} << 25;
  size_t errorLimit = 0;

  void addTo(CLI::App &app);
  CompileOptions options() const;
};

/// --color auto|always|never
struct ColourFlag {
  std::string mode = "auto";
  void addTo(CLI::App &app);
  bool enabledFor(std::FILE *stream) const;
};

/// Reads a whole file; an error message instead when it cannot.
std::optional<std::string> readFile(const std::string &path, std::string &error);

/// Reads a file or prints the NS0001 "cannot read" error for it on stderr.
std::optional<std::string> readFileOrReport(const std::string &path);
/// The NS0001 diagnostic for an unreadable file, as text and as JSON.
std::string unreadableMessage(const std::string &path, const std::string &reason);

/// Prints diagnostics (sorted) as compiler-style text to `out`.
void printDiagnostics(std::FILE *out, const Compilation &c, bool colour);

/// Loads a trained model for eval/predict, printing what went wrong
/// otherwise (exit 2 for an unreadable .net file or a usage error, else 1).
std::optional<Model> loadModelOrReport(const std::string &file, const std::string &weights,
                                       const ModelOptions &options, int &exitCode);

/// Registers the subcommands; each returns its exit code through `exitCode`.
void addCheckCommand(CLI::App &app, int &exitCode);
void addShowCommand(CLI::App &app, int &exitCode);
void addFmtCommand(CLI::App &app, int &exitCode);
void addCompileCommand(CLI::App &app, int &exitCode);
void addTrainCommand(CLI::App &app, int &exitCode);
void addEvalCommand(CLI::App &app, int &exitCode);
void addPredictCommand(CLI::App &app, int &exitCode);
void addBenchCommand(CLI::App &app, int &exitCode);
void addLspCommand(CLI::App &app, int &exitCode);

} // namespace netc::cli
