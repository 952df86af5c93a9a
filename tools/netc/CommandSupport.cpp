// CommandSupport.cpp -- shared flag handling and output helpers.
#include "CommandSupport.h"

#include "support/ByteSize.h"
#include "support/DiagnosticPrinter.h"
#include "support/PrintableText.h"

#include "runtime/core/Backend.h"
#include "runtime/cpu/Kernels.h"
#include "support/NumberText.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace netc::cli {

void CompileFlags::addTo(CLI::App &app) {
  // Integers are refused out of range, never clamped (integerFlagProblem).
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  addIntegerOption(app, "--input-size", inputSize, int64_t{1}, kMaxInt64,
                   "Feature count of the data (sizes 'input X auto')");
  addIntegerOption(app, "--hidden-nodes", hiddenNodes, int64_t{1}, kMaxInt64,
                   "Size of 'hidden H auto' layers");
  app.add_option("--task", task, "Learning task: auto, multiclass, binary or regression")
      ->check(CLI::IsMember({"auto", "multiclass", "binary", "regression"}))
      ->capture_default_str();
  addIntegerOption(app, "--classes", classes, int64_t{1}, kMaxInt64,
                   "Number of classes of a multiclass task");
  addIntegerOption(app, "--max-filter-pairs", maxFilterPairs, int64_t{1}, kMaxInt64,
                   "Most (source, destination) pairs a 'where' predicate may be tested on");
  addIntegerOption(app, "--error-limit", errorLimit, size_t{0}, static_cast<size_t>(kMaxInt64),
                   "Stop after this many errors (0: report every error)");
  addMaxSourceSizeOption(app, maxSourceBytes);
}

std::string positiveNumberFlagProblem(const std::string &text, double max) {
  double value = 0;
  const char *first = text.data(), *last = first + text.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (!text.empty() && error == std::errc() && end == last && value > 0 && value <= max)
    return "";
  const std::string most = max == std::floor(max) && max < 9e15 ? std::to_string(static_cast<int64_t>(max))
                                                                : fmt::format("{}", max);
  return fmt::format("expected a number above 0 and at most {}, got '{}'", most, printableText(text));
}

void addMaxSourceSizeOption(CLI::App &app, uint64_t &bytes) {
  app.add_option("--max-source-size")
      ->description("Largest Net# file read, e.g. 8M or 1GiB (default " + byteSizeText(bytes) + ", at most " +
                    byteSizeText(kMaxSourceBytesLimit) + ")")
      ->check(
          [](const std::string &text) -> std::string {
            auto size = parseByteSize(text);
            if (!size || *size == 0 || *size > kMaxSourceBytesLimit)
              return "'" + text + "' is not a size from 1 byte to " + byteSizeText(kMaxSourceBytesLimit) +
                     " (e.g. 64M, 1GiB)";
            return "";
          },
          "SIZE")
      ->each([&bytes](const std::string &text) { bytes = parseByteSize(text).value_or(bytes); });
}

CompileOptions CompileFlags::options() const {
  CompileOptions o;
  o.inputSize = inputSize;
  o.hiddenNodes = hiddenNodes;
  o.classCount = classes;
  o.maxFilterPairs = maxFilterPairs;
  o.maxErrors = errorLimit;
  o.maxSourceBytes = maxSourceBytes;
  o.task = task == "multiclass"   ? Task::Multiclass
           : task == "binary"     ? Task::Binary
           : task == "regression" ? Task::Regression
                                  : Task::Unspecified;
  return o;
}

void addMaxMemoryOption(CLI::App &app, uint64_t &bytes) {
  app.add_option("--max-memory")
      ->description("Most memory the planned network may take: parameters, index tables, optimizer state and "
                    "activations at the batch, e.g. 512M or 8GiB (default: the machine's memory, " +
                    byteSizeText(machineMemoryBytes()) + ")")
      ->check(
          [](const std::string &text) -> std::string {
            auto size = parseByteSize(text);
            return size && *size > 0
                       ? ""
                       : "'" + text + "' is not a size of at least 1 byte (e.g. 512M, 8GiB, 1000000)";
          },
          "SIZE")
      ->each([&bytes](const std::string &text) { bytes = parseByteSize(text).value_or(0); });
}

CLI::Option *addThreadsOption(CLI::App &app, int &threads) {
  return addIntegerOption(app, "--threads", threads, 0, kMaxThreads,
                          "CPU threads (0: the cores other running tasks leave free)")
      ->each([](const std::string &text) {
        const unsigned cores = std::thread::hardware_concurrency();
        int value = 0;
        if (integerFlagProblem(text, 0, kMaxThreads, value).empty() && cores > 0 && unsigned(value) > cores)
          std::fprintf(
              stderr,
              "netc: warning: --threads %d is more than the %u cores of this machine; the threads will "
              "take turns, which is usually slower (0 uses every core)\n",
              value, cores);
      });
}

std::string cpuIsaProblem(const std::string &name) {
  using runtime::cpu::instructionSets, runtime::cpu::knownInstructionSets;
  auto listed = [](const std::vector<std::string_view> &names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return out;
  };
  const std::vector<std::string_view> known = knownInstructionSets(), supported = instructionSets();
  if (name.empty() || std::find(supported.begin(), supported.end(), name) != supported.end())
    return "";
  if (std::find(known.begin(), known.end(), name) == known.end())
    return fmt::format("'{}' is not an instruction set netc knows; use {}", printableText(name),
                       listed(known));
  return fmt::format("this processor does not run {}; use {}", name, listed(supported));
}

CLI::Option *addCpuIsaOption(CLI::App &app, std::string &isa) {
  // $NETC_CPU_ISA is checked where it is used (the CPU backend names it); a
  // --cpu-isa value here, as the command line is parsed (exit 2).
  if (const char *env = std::getenv("NETC_CPU_ISA"))
    isa = env;
  return app
      .add_option("--cpu-isa", isa,
                  "CPU backend: the fast kernels' instruction set, avx512, avx2 or baseline (default: "
                  "$NETC_CPU_ISA, else the best this processor supports)")
      ->check(cpuIsaProblem)
      ->type_name("NAME");
}

CLI::Option *addDenseKernelOption(CLI::App &app, std::string &kernel) {
  if (const char *env = std::getenv("NETC_DENSE_KERNEL"))
    kernel = env;
  std::vector<std::string> names(std::begin(runtime::kDenseKernelNames),
                                 std::end(runtime::kDenseKernelNames));
  return app
      .add_option("--dense-kernel", kernel,
                  "CPU backend: the dense products' kernels, auto (netc's own where it has vector kernels "
                  "for the processor, else OpenBLAS), netc or openblas (default: $NETC_DENSE_KERNEL, else "
                  "auto); the run header names them")
      ->check(CLI::IsMember(names))
      ->type_name("NAME");
}

CLI::Option *addPathOption(CLI::App &app, const std::string &name, std::string &field,
                           const std::string &help, const std::string &meaning) {
  return app.add_option(name, field, help)->check([meaning](const std::string &text) -> std::string {
    return text.empty() ? "an empty path names no file or folder; " + meaning : "";
  });
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

std::optional<std::string> readFile(const std::string &path, std::string &error, uint64_t maxBytes) {
  return readSourceText(path, maxBytes, error);
}

std::string unreadableMessage(const std::string &path, const std::string &reason) {
  return fmt::format(fmt::runtime(std::string(diagInfo(DiagId::CannotReadFile).format)), path, reason);
}

void reportUnreadable(const std::string &path, const std::string &reason) {
  // The path is the user's text: escaped, as source lines are (PrintableText.h).
  std::fprintf(stderr, "%s: error: %s [%s]\n", printableText(path).c_str(),
               printableText(unreadableMessage(path, reason)).c_str(),
               std::string(diagInfo(DiagId::CannotReadFile).code).c_str());
}

void printError(const std::string &message) {
  std::fprintf(stderr, "netc: error: %s\n", printableMessage(message).c_str());
}

std::optional<std::string> readFileOrReport(const std::string &path, uint64_t maxBytes) {
  std::string error;
  auto text = readFile(path, error, maxBytes);
  if (!text)
    reportUnreadable(path, error);
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
  if (!readFileOrReport(file, options.maxSourceBytes)) // NS0001, exit 2 (docs/cli.md)
    return std::nullopt;
  ModelResult loaded = Model::load(file, weights, options);
  if (!loaded.diagnostics.empty())
    std::fputs(loaded.diagnostics.c_str(), stderr);
  if (!loaded.model) {
    printError(loaded.error);
    exitCode = loaded.failure == FailureKind::Usage ? kUsageError : kInputError;
    return std::nullopt;
  }
  exitCode = kSuccess;
  return std::move(loaded.model);
}

namespace {
/// An op's place on the roofline: the time it would take at the device's
/// peak (the slower of its FLOPs at the multiply-add peak, the bf16 one for
/// products rounded to bf16, and its bytes at
/// the copy bandwidth of where they fit: the second-level cache or memory),
/// and which of the two bounds it.
struct RoofPoint {
  double roofUs = 0;
  bool computeBound = false;
};
RoofPoint roofOf(const OpProfile &p, const PeakRates &peak) {
  double bandwidth = peak.gbPerSecond;
  for (auto level = peak.caches.rbegin(); level != peak.caches.rend(); ++level)
    if (p.bytes <= double(level->bytes))
      bandwidth = level->gbPerSecond;
  const double gflops = p.bf16 && peak.bf16Gflops > 0 ? peak.bf16Gflops : peak.gflops;
  const double computeUs = gflops > 0 ? p.flops / (gflops * 1e3) : 0;
  const double memoryUs = bandwidth > 0 ? p.bytes / (bandwidth * 1e3) : 0;
  return {std::max(computeUs, memoryUs), computeUs >= memoryUs};
}
} // namespace

void printOpProfile(const std::vector<OpProfile> &profile, const PeakRates *peak) {
  if (profile.empty())
    return;
  double total = 0;
  for (const OpProfile &p : profile)
    total += p.microseconds;
  const bool roofline = peak && peak->gflops > 0 && peak->gbPerSecond > 0;
  std::string header =
      fmt::format("{:<9} {:<26} {:<32} {:>10} {:>6}", "section", "op", "output", "us/step", "share");
  if (roofline)
    header += fmt::format(" {:>9} {:>8} {:>7} {:>7}", "GFLOP/s", "GB/s", "bound", "of roof");
  std::printf("%s\n", header.c_str());
  double boundUs[2] = {0, 0}, roofUs[2] = {0, 0}; // [memory, compute]
  for (const OpProfile &p : profile) {
    std::string line = fmt::format("{:<9} {:<26} {:<32} {:>10.1f} {:>5.1f}%", p.section, p.op, p.output,
                                   p.microseconds, total > 0 ? 100 * p.microseconds / total : 0.0);
    if (roofline) {
      const RoofPoint roof = roofOf(p, *peak);
      const double us = std::max(p.microseconds, 1e-3);
      if (roof.roofUs > 0) {
        boundUs[roof.computeBound] += p.microseconds;
        roofUs[roof.computeBound] += roof.roofUs;
        line += fmt::format(" {:>9.1f} {:>8.1f} {:>7} {:>6.0f}%", p.flops / (us * 1e3), p.bytes / (us * 1e3),
                            roof.computeBound ? "compute" : "memory", 100 * roof.roofUs / us);
      } else {
        line += fmt::format(" {:>9} {:>8} {:>7} {:>7}", "-", "-", "-", "-");
      }
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf("%s", fmt::format("{:<9} {:<26} {:<32} {:>10.1f}\n\n", "total", "", "", total).c_str());
  if (!roofline)
    return;
  std::string cacheText;
  for (const PeakRates::CacheCeiling &level : peak->caches)
    cacheText += fmt::format(", {:.1f} within {}", level.gbPerSecond, bytesText(level.bytes));
  const std::string bf16Text = peak->bf16Gflops > 0 ? fmt::format(", bf16 products {:.1f} ({:.1f} a core)",
                                                                  peak->bf16Gflops, peak->bf16GflopsPerCore)
                                                    : std::string();
  std::printf("%s", fmt::format("roofline: peak {:.1f} GFLOP/s ({:.1f} a core, multiply-adds of this run's "
                                "kernels{}); copies (one thread) {:.1f} GB/s in memory{}; measured now\n",
                                peak->gflops, peak->gflopsPerCore, bf16Text, peak->gbPerSecond, cacheText)
                        .c_str());
  for (int bound : {1, 0})
    if (boundUs[bound] > 0)
      std::printf("%s", fmt::format("{}-bound ops: {:.1f} us ({:.1f}% of the step), at {:.0f}% of their roof "
                                    "({:.1f} us at peak)\n",
                                    bound ? "compute" : "memory", boundUs[bound],
                                    total > 0 ? 100 * boundUs[bound] / total : 0.0,
                                    100 * roofUs[bound] / boundUs[bound], roofUs[bound])
                            .c_str());
  std::printf("\n");
}

std::string bytesText(int64_t bytes) {
  return byteSizeText(static_cast<uint64_t>(std::max<int64_t>(0, bytes)));
}

std::string bytesText(std::optional<int64_t> bytes) {
  return bytes ? bytesText(*bytes) : "more bytes than can be counted";
}

std::string durationText(double seconds) {
  if (!std::isfinite(seconds))
    return "-";
  if (seconds > 0 && seconds < 0.5e-6)
    return "<1 us";
  if (seconds < 1e-3)
    return fmt::format("{:.0f} us", seconds * 1e6);
  if (seconds < 1)
    return threeDigits(seconds * 1e3) + " ms";
  if (seconds < 600)
    return threeDigits(seconds) + " s";
  if (seconds < 3 * 3600)
    return fmt::format("{:.1f} min", seconds / 60);
  if (seconds < 3 * 86400)
    return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} days", seconds / 86400);
}

} // namespace netc::cli

namespace netc::cli {

Expected<training::CostTableChoice> commandCostTable(const std::string &spec) {
  auto environment = [](const char *name) {
    const char *value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return training::chooseCostTable(
      {spec, "cpu", environment("NETC_CPU_ISA"), environment("NETC_DENSE_KERNEL"), false, nullptr, nullptr});
}

void printCalibrationProgress(void *terminal, int done, int total, const std::string &what) {
  const bool rewrite = *static_cast<bool *>(terminal);
  if (rewrite)
    std::fprintf(stderr, "\r\033[Kcalibrating: %d/%d %s", done, total, done == total ? "" : what.c_str());
  else
    std::fprintf(stderr, "calibrating: %d/%d %s\n", done, total, done == total ? "" : what.c_str());
  if (rewrite && done == total)
    std::fprintf(stderr, "\n");
}

} // namespace netc::cli
