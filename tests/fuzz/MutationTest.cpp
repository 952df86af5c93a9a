// MutationTest.cpp -- the deterministic robustness test (ctest `mutation`). It
// checks every examples/*.net, then fixed stress inputs, then thousands of
// seeded mutants of the examples (Mutators.h: deleted, duplicated and swapped
// tokens, hostile numbers, renamed words, changed keyword case, truncation,
// stray and invalid bytes, unterminated comments, deep nesting, repeated
// statements, layer chains, splices, meaning-preserving edits), each through
// checkPipeline (FuzzPipeline.h). A broken invariant prints the seed and
// iteration and writes the input to the working directory; a crash or
// sanitizer report saves it from a death callback. `--seed S --only I`
// replays one mutant, `--replay FILE` checks one file.
#include "tests/fuzz/FuzzPipeline.h"
#include "tests/fuzz/Mutators.h"

#include "api/Driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#ifndef NETC_SOURCE_DIR
#error "NETC_SOURCE_DIR must name the source tree (tests/fuzz/CMakeLists.txt defines it)"
#endif

// Present when a sanitizer runtime is linked; called before it exits.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

using netc::fuzz::Example;
using netc::fuzz::makeMutant;
using netc::fuzz::Mutant;
using netc::fuzz::StressCase;
using netc::fuzz::stressCases;

// ---- the seed corpus --------------------------------------------------------------------

std::optional<int64_t> inputSizeHint(const std::string &text) {
  static constexpr std::string_view kFlag = "--input-size ";
  size_t at = text.find(kFlag);
  if (at == std::string::npos)
    return std::nullopt;
  long long n = std::atoll(text.c_str() + at + kFlag.size());
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

std::vector<Example> loadExamples(const std::filesystem::path &dir) {
  std::vector<Example> examples;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".net")
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    examples.push_back({entry.path().filename().string(), text, inputSizeHint(text)});
  }
  // Directory order is unspecified; the mutants must not depend on it.
  std::sort(examples.begin(), examples.end(),
            [](const Example &a, const Example &b) { return a.name < b.name; });
  return examples;
}

netc::CompileOptions optionsFor(uint64_t selector, std::optional<int64_t> inputSize) {
  netc::CompileOptions options = netc::fuzz::fuzzOptions(selector);
  if (inputSize)
    options.inputSize = inputSize;
  return options;
}

std::string replayFlags(const std::string &path, uint64_t selector, std::optional<int64_t> inputSize) {
  std::string flags = fmt::format("--replay {} --options {}", path, selector);
  if (inputSize)
    flags += fmt::format(" --input-size {}", *inputSize);
  return flags;
}

// ---- crash reporting ------------------------------------------------------------------

// What the death callback needs; set before each check.
const std::string *gCurrentText = nullptr;
char gCurrentLabel[256] = "";

void writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0)
      return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

/// Called by a sanitizer before it exits, or on a fatal signal otherwise:
/// saves the mutant being checked with only async-signal-safe calls.
void onDeath() {
  static const char kFile[] = "mutation-crash.net";
  if (gCurrentText) {
    int fd = ::open(kFile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      writeAll(fd, gCurrentText->data(), gCurrentText->size());
      ::close(fd);
    }
  }
  static const char kPrefix[] = "\nnetc_mutation_test: died while checking ";
  static const char kSuffix[] = "; the input is in mutation-crash.net\n";
  writeAll(2, kPrefix, sizeof kPrefix - 1);
  writeAll(2, gCurrentLabel, std::strlen(gCurrentLabel));
  writeAll(2, kSuffix, sizeof kSuffix - 1);
}

extern "C" void onFatalSignal(int signal) {
  onDeath();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void installCrashReporting() {
  if (__sanitizer_set_death_callback) {
    __sanitizer_set_death_callback(onDeath);
    return; // the sanitizers handle the signals and report first
  }
  for (int s : {SIGSEGV, SIGABRT, SIGFPE, SIGILL, SIGBUS})
    std::signal(s, onFatalSignal);
}

void setLabel(const std::string &label) {
  std::snprintf(gCurrentLabel, sizeof gCurrentLabel, "%s", label.c_str());
}

// ---- driver ----------------------------------------------------------------------------

struct Flags {
  uint64_t iterations = 6000;
  uint64_t seed = 0x6E657463; // "netc"
  std::optional<uint64_t> start;
  std::optional<uint64_t> only;
  std::optional<std::string> dumpStress;
  std::optional<std::string> replay;
  uint64_t replayOptions = 0;
  std::optional<int64_t> replayInputSize;
  bool verbose = false;
};

[[noreturn]] void usage(const char *argv0, const std::string &problem) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--iterations N] [--seed S] [--start I | --only I] [--verbose]\n"
               "       %s --replay FILE [--options SEL] [--input-size N]\n"
               "       %s --dump-stress DIR\n"
               "A run checks the examples, the stress cases and mutants 0..N-1; --start I checks\n"
               "mutants I..N-1 only, --only I just mutant I (written to the working directory).\n",
               argv0, problem.c_str(), argv0, argv0, argv0);
  std::exit(2);
}

Flags parseFlags(int argc, char **argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(argv[0], fmt::format("{} needs a value", arg));
      return argv[++i];
    };
    auto number = [&]() -> uint64_t {
      std::string v = value();
      char *end = nullptr;
      errno = 0;
      uint64_t n = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || *end || errno)
        usage(argv[0], fmt::format("{} needs a number, not '{}'", arg, v));
      return n;
    };
    if (arg == "--iterations")
      flags.iterations = number();
    else if (arg == "--seed")
      flags.seed = number();
    else if (arg == "--start")
      flags.start = number();
    else if (arg == "--only")
      flags.only = number();
    else if (arg == "--replay")
      flags.replay = value();
    else if (arg == "--options")
      flags.replayOptions = number();
    else if (arg == "--input-size")
      flags.replayInputSize = static_cast<int64_t>(number());
    else if (arg == "--dump-stress")
      flags.dumpStress = value();
    else if (arg == "--verbose")
      flags.verbose = true;
    else
      usage(argv[0], fmt::format("unknown argument '{}'", arg));
  }
  return flags;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// Checks inputs one by one, counting what it saw and reporting failures.
class Runner {
public:
  explicit Runner(bool verbose) : verbose_(verbose) {}

  /// `stem` names the file a failing input is written to; `replay` says how
  /// to run it again.
  void check(const std::string &label, const std::string &text, const netc::CompileOptions &options,
             const std::string &stem, const std::string &replay) {
    gCurrentText = &text;
    setLabel(label);
    netc::fuzz::PipelineStats stats;
    auto before = std::chrono::steady_clock::now();
    auto failure = netc::fuzz::checkPipeline(text, options, &stats);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count();
    gCurrentText = nullptr;
    if (verbose_)
      std::printf("%s: %zu bytes, %.1f ms\n", label.c_str(), text.size(), ms);
    ++checked_;
    parseErrors_ += stats.parseErrors;
    errors_ += stats.errors;
    formatted_ += stats.formatted;
    if (!failure)
      return;
    if (++failures_ > kMaxReported)
      return;
    std::string path = stem + ".net";
    writeFile(path, text);
    std::fprintf(stderr, "FAIL: %s\n  %s\n  input written to %s; replay with: %s\n", label.c_str(),
                 failure->c_str(), path.c_str(), replay.c_str());
  }

  size_t failures() const { return failures_; }
  std::string summary() const {
    return fmt::format("{} inputs: {} with parse errors, {} with errors, {} error-free, {} formatted and "
                       "recompiled; {} failures",
                       checked_, parseErrors_, errors_, checked_ - errors_, formatted_, failures_);
  }

private:
  static constexpr size_t kMaxReported = 10;
  bool verbose_;
  size_t checked_ = 0, parseErrors_ = 0, errors_ = 0, formatted_ = 0, failures_ = 0;
};

/// The corpus itself must compile without even a warning (docs/architecture.md §Tests).
bool checkExamples(const std::vector<Example> &examples) {
  bool ok = true;
  for (const Example &e : examples) {
    netc::CompileOptions options;
    options.inputSize = e.inputSize;
    auto c = netc::compileSource(netc::SourceFile(e.name, e.text), options);
    for (const netc::Diagnostic &d : c->diags.diagnostics()) {
      std::fprintf(stderr, "FAIL: example %s is not diagnostic-free: %s [%s]\n", e.name.c_str(),
                   d.message.c_str(), std::string(d.code()).c_str());
      ok = false;
    }
  }
  return ok;
}

int replayFile(const Flags &flags) {
  std::ifstream in(*flags.replay, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", flags.replay->c_str());
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  gCurrentText = &text;
  setLabel(*flags.replay);
  auto options = optionsFor(flags.replayOptions, flags.replayInputSize);
  if (auto failure = netc::fuzz::checkPipeline(text, options)) {
    std::fprintf(stderr, "FAIL: %s: %s\n", flags.replay->c_str(), failure->c_str());
    return 1;
  }
  std::printf("%s: ok\n", flags.replay->c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Flags flags = parseFlags(argc, argv);
  installCrashReporting();
  if (flags.replay)
    return replayFile(flags);

  std::filesystem::path dir = std::filesystem::path(NETC_SOURCE_DIR) / "examples";
  std::vector<Example> examples = loadExamples(dir);
  if (examples.empty()) {
    std::fprintf(stderr, "FAIL: no .net files in %s\n", dir.c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  Runner runner(flags.verbose);
  bool examplesOk = true;
  if (flags.dumpStress) {
    std::filesystem::create_directories(*flags.dumpStress);
    for (const StressCase &c : stressCases(examples))
      writeFile((std::filesystem::path(*flags.dumpStress) / (c.name + ".net")).string(), c.text);
    return 0;
  }
  bool fullRun = !flags.only && !flags.start;
  if (fullRun) {
    examplesOk = checkExamples(examples);
    for (const Example &e : examples)
      runner.check("example " + e.name, e.text, optionsFor(0, e.inputSize), "mutation-failure-" + e.name,
                   replayFlags(NETC_SOURCE_DIR "/examples/" + e.name, 0, e.inputSize));
    for (const StressCase &c : stressCases(examples)) {
      std::string stem = "mutation-failure-" + c.name;
      runner.check("stress case " + c.name, c.text, optionsFor(0, std::nullopt), stem,
                   replayFlags(stem + ".net", 0, std::nullopt));
    }
  }

  uint64_t first = flags.only.value_or(flags.start.value_or(0));
  uint64_t last = flags.only ? *flags.only + 1 : std::max(first, flags.iterations);
  for (uint64_t i = first; i < last; ++i) {
    Mutant m = makeMutant(flags.seed, i, examples);
    std::string label =
        fmt::format("seed {} iteration {} ({}; options {})", flags.seed, i, m.recipe, m.optionsSelector);
    std::string stem = fmt::format("mutation-failure-{}-{}", flags.seed, i);
    if (flags.only) // replaying one mutant: keep it for inspection
      writeFile(fmt::format("mutation-{}-{}.net", flags.seed, i), m.text);
    runner.check(label, m.text, optionsFor(m.optionsSelector, m.inputSize), stem,
                 fmt::format("netc_mutation_test --seed {} --only {} (or {})", flags.seed, i,
                             replayFlags(stem + ".net", m.optionsSelector, m.inputSize)));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("netc_mutation_test: seed %llu, mutants %llu..%llu of %zu examples, %.1f s: %s\n",
              static_cast<unsigned long long>(flags.seed), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(last), examples.size(), seconds, runner.summary().c_str());
  return runner.failures() == 0 && examplesOk ? 0 : 1;
}
