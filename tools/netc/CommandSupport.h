// CommandSupport.h -- what the netc subcommands share: reading files, the
// compile-option flags, colour detection and diagnostic output.
#pragma once

#include "api/CostTableChoice.h"
#include "api/Driver.h"
#include "netc/Training.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace netc::cli {

/// Exit statuses of every subcommand.
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2 };

/// The exit status of a rank after a failure every rank of the job agreed
/// on (a bad flag, a refusal of the settings), which rank 0 alone says:
/// rank 0 returns `code`, the others end cleanly. A non-zero status of
/// another rank makes mpirun end the job at once, at times before rank 0
/// has written its message; mpirun then exits with rank 0's status.
inline int agreedFailureStatus(bool rankZero, int code) {
  return rankZero ? code : kSuccess;
}

/// Prints "netc: error: MESSAGE" on stderr, the message's control bytes
/// escaped but its newlines kept (support/PrintableText.h): messages name the
/// user's files, whose names may hold terminal escapes.
void printError(const std::string &message);

/// Flags that become CompileOptions (task, sizes, limits).
struct CompileFlags {
  std::optional<int64_t> inputSize;
  int64_t hiddenNodes = 100;
  std::string task = "auto";
  std::optional<int64_t> classes;
  int64_t maxFilterPairs = int64_t{1} << 25;
  size_t errorLimit = 200;
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes;

  void addTo(CLI::App &app);
  CompileOptions options() const;
};

/// --max-memory SIZE (support/ByteSize.h) into `bytes`; 0 when not given
/// stands for the machine's memory.
void addMaxMemoryOption(CLI::App &app, uint64_t &bytes);

/// What is wrong with an integer flag's value `text`: "" when it is a
/// decimal integer in [min, max] (then stored in `value`), otherwise a
/// message naming the range. Out-of-range values and other notations
/// ("1e23", "-1" for an unsigned flag, "0x10") are refused, never clamped or
/// wrapped.
template <class Int> std::string integerFlagProblem(const std::string &text, Int min, Int max, Int &value) {
  const char *first = text.data(), *last = first + text.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (!text.empty() && error == std::errc() && end == last && value >= min && value <= max)
    return "";
  return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got '" + text +
         "'";
}

/// What is wrong with a positive number flag's value `text`: "" when it is a
/// finite number above 0 and at most `max`, otherwise a message naming the
/// range (as integerFlagProblem does for integers).
std::string positiveNumberFlagProblem(const std::string &text, double max);

/// Registers an integer option parsed by integerFlagProblem into `field`
/// (whose value is shown as the default).
template <class Int>
CLI::Option *addIntegerOption(CLI::App &app, const std::string &name, Int &field, Int min, Int max,
                              const std::string &help) {
  return app
      .add_option_function<std::string>(
          name, [&field, min, max](const std::string &text) { integerFlagProblem(text, min, max, field); },
          help)
      ->check([min, max](const std::string &text) {
        Int value{};
        return integerFlagProblem(text, min, max, value);
      })
      ->type_name("INT")
      ->default_str(std::to_string(field));
}

/// The same for an option that is unset unless given.
template <class Int>
CLI::Option *addIntegerOption(CLI::App &app, const std::string &name, std::optional<Int> &field, Int min,
                              Int max, const std::string &help) {
  return app
      .add_option_function<std::string>(
          name,
          [&field, min, max](const std::string &text) {
            Int value{};
            integerFlagProblem(text, min, max, value);
            field = value;
          },
          help)
      ->check([min, max](const std::string &text) {
        Int value{};
        return integerFlagProblem(text, min, max, value);
      })
      ->type_name("INT");
}

/// --threads N: 0 (all cores) to kMaxThreads; warns on stderr above the
/// machine's cores.
CLI::Option *addThreadsOption(CLI::App &app, int &threads);

/// --cpu-isa NAME into `isa`, which starts as $NETC_CPU_ISA (the only place
/// netc reads it): the CPU backend's instruction set; empty: the best the
/// processor supports. A flag value netc does not know, or one this
/// processor does not run, is a usage error (cpuIsaProblem); a bad
/// $NETC_CPU_ISA is reported, naming it, when the CPU backend loads.
CLI::Option *addCpuIsaOption(CLI::App &app, std::string &isa);
/// --dense-kernel NAME (auto, netc, openblas) into `kernel`, which starts as
/// $NETC_DENSE_KERNEL (the only place netc reads it).
CLI::Option *addDenseKernelOption(CLI::App &app, std::string &kernel);
/// "" when `name` is empty or an instruction set this processor runs,
/// otherwise why not, with the names to use.
std::string cpuIsaProblem(const std::string &name);

/// Where a command computes: --device auto|cpu|cuda[:N], --backend (the
/// kernels on that device; default: the device's own), --precision fp32|tf32|bf16,
/// --cuda-debug and --cuda-graphs on|off, into the fields of the same names
/// (TrainSettings, ModelOptions, BenchSettings).
template <class Settings> void addDeviceOptions(CLI::App &app, Settings &s) {
  app.add_option("--device", s.device,
                 "Where to compute: auto (a GPU when one is usable, else the CPU; the header says which), "
                 "cpu, cuda or cuda:N")
      ->type_name("DEVICE")
      ->capture_default_str();
  app.add_option("--backend", s.backend,
                 "The kernels on the device: cpu or cpu-reference (naive, double precision) on the CPU, cuda "
                 "on a GPU (default: the device's own)")
      ->type_name("NAME");
  app.add_option(
         "--precision", s.precision,
         "fp32; tf32 to let a GPU's tensor cores round the inputs of matrix products to TF32; or "
         "bf16 (CPUs with AVX512-BF16) to round the dense and convolution products' inputs to bfloat16, "
         "FP32 sums")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  app.add_flag("--cuda-debug", s.cudaDebug,
               "On a GPU, wait for and check every op, so an error names the op and its layer (slow)");
  app.add_option_function<std::string>(
         "--cuda-graphs", [&s](const std::string &v) { s.cudaGraphs = v == "on"; },
         "On a GPU, capture each step once as a CUDA graph and replay it (on), or issue its ops one by one "
         "(off)")
      ->check(CLI::IsMember({"on", "off"}))
      ->type_name("on|off")
      ->default_str("on");
}

/// A path option that refuses an empty value (`--out ''`), which would
/// otherwise silently mean the default; `meaning` says what to give instead.
CLI::Option *addPathOption(CLI::App &app, const std::string &name, std::string &field,
                           const std::string &help, const std::string &meaning);

/// --color auto|always|never
struct ColourFlag {
  std::string mode = "auto";
  void addTo(CLI::App &app);
  bool enabledFor(std::FILE *stream) const;
};

/// Reads a whole Net# file of at most `maxBytes`; an error message instead
/// when it cannot (support/SourceFile.h readSourceText).
std::optional<std::string> readFile(const std::string &path, std::string &error,
                                    uint64_t maxBytes = CompileOptions{}.maxSourceBytes);

/// Reads a file or prints the NS0001 "cannot read" error for it on stderr.
std::optional<std::string> readFileOrReport(const std::string &path,
                                            uint64_t maxBytes = CompileOptions{}.maxSourceBytes);

/// --max-source-size SIZE into `bytes` (at most kMaxSourceBytesLimit).
void addMaxSourceSizeOption(CLI::App &app, uint64_t &bytes);
/// The NS0001 diagnostic for an unreadable file, as text and as JSON.
std::string unreadableMessage(const std::string &path, const std::string &reason);
/// Prints the NS0001 error for `path` on stderr, control bytes escaped.
void reportUnreadable(const std::string &path, const std::string &reason);

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
void addBuildCommand(CLI::App &app, int &exitCode);
/// `commandLine` (argv) is quoted back in the command that resumes an interrupted run.
void addTrainCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine);
void addEvalCommand(CLI::App &app, int &exitCode);
void addPredictCommand(CLI::App &app, int &exitCode);
/// `commandLine` (argv) starts the ranks of --ranks N.
void addBenchCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine);
void addEstimateCommand(CLI::App &app, int &exitCode);
void addCalibrateCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine);

/// A per-op table (`bench --profile`, `estimate --ops`): microseconds per
/// training step and each op's share of their sum, in plan order. With the
/// device's measured `peak` (bench): the roofline too -- each op's achieved
/// GFLOP/s and GB/s, whether its FLOPs or its bytes bound it at peak, the
/// fraction of that bound it reaches, and the step split into compute- and
/// memory-bound ops, each against its roof.
void printOpProfile(const std::vector<OpProfile> &profile, const PeakRates *peak = nullptr);

/// --cost-model FILE|NAME (estimate, show --partition, train).
void addCostModelOption(CLI::App &app, std::string &spec);
/// The cost table a command without its own device flags reads for `spec`
/// (--cost-model; empty: the default), on the CPU with the kernels that
/// $NETC_CPU_ISA and $NETC_DENSE_KERNEL choose; it never measures one.
Expected<training::CostTableChoice> commandCostTable(const std::string &spec);
/// A calibration's progress on stderr (CalibrateProgress): one line
/// rewritten where `terminal` (a bool *) is true, else a line each.
void printCalibrationProgress(void *terminal, int done, int total, const std::string &what);
/// Seconds as text at a readable unit: "812 us", "3.41 ms", "12.3 s", "2.4 h".
std::string durationText(double seconds);
/// Bytes as text at a readable unit ("1.5 MiB"); a negative count reads as 0 B.
std::string bytesText(int64_t bytes);
/// ... and a count too large to hold ("more bytes than can be counted").
std::string bytesText(std::optional<int64_t> bytes);
void addLspCommand(CLI::App &app, int &exitCode);

} // namespace netc::cli
