// MutationTest.cpp -- the deterministic robustness test (ctest `mutation`):
// it reads every examples/*.net, derives thousands of mutants from them with
// a fixed seeded PRNG (token deletion, duplication and swaps, hostile numbers,
// renamed identifiers and keywords, truncation, stray and invalid bytes,
// unterminated comments, deep nesting, repeated statements, long layer
// chains, splices) and runs each through checkPipeline (FuzzPipeline.h).
// A broken invariant prints the seed and iteration and writes the mutant to
// the working directory; a crash or sanitizer report does the same from a
// death callback. `--seed S --only I` replays one mutant, `--replay FILE`
// checks one file.
#include "tests/fuzz/FuzzPipeline.h"

#include "api/Driver.h"
#include "frontend/Parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

using namespace std::literals;
using netc::TokenInfo;

// ---- deterministic randomness -------------------------------------------------

/// splitmix64: tiny, fast, and the same on every platform and library.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n); n > 0.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  /// Uniform in [lo, hi].
  size_t between(size_t lo, size_t hi) { return lo + below(hi - lo + 1); }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <typename T, size_t N> const T &pick(const std::array<T, N> &items) { return items[below(N)]; }
  template <typename T> const T &pick(const std::vector<T> &items) { return items[below(items.size())]; }

private:
  uint64_t state_;
};

// ---- the seed corpus and its tokens -----------------------------------------------

struct Example {
  std::string name;
  std::string text;
};

std::vector<Example> loadExamples(const std::filesystem::path &dir) {
  std::vector<Example> examples;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".net")
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    examples.push_back({entry.path().filename().string(), buffer.str()});
  }
  // Directory order is unspecified; the mutants must not depend on it.
  std::sort(examples.begin(), examples.end(),
            [](const Example &a, const Example &b) { return a.name < b.name; });
  return examples;
}

/// The tokens of a (possibly already mutated) text, comments included.
std::vector<TokenInfo> tokensOf(const std::string &text) {
  netc::SourceFile file("mutant.net", text);
  netc::DiagnosticEngine ignored;
  return netc::lexTokens(file, ignored);
}

std::vector<const TokenInfo *> tokensWhere(const std::vector<TokenInfo> &tokens,
                                           std::initializer_list<TokenInfo::Category> categories) {
  std::vector<const TokenInfo *> out;
  for (const TokenInfo &t : tokens)
    if (std::find(categories.begin(), categories.end(), t.category) != categories.end())
      out.push_back(&t);
  return out;
}

/// A byte offset at a token boundary (or the end), or anywhere in the text.
uint32_t pickOffset(const std::string &text, const std::vector<TokenInfo> &tokens, Rng &rng) {
  if (tokens.empty() || rng.chance(25))
    return static_cast<uint32_t>(rng.below(text.size() + 1));
  const TokenInfo &t = rng.pick(tokens);
  return rng.chance(50) ? t.range.begin : t.range.end;
}

void replaceRange(std::string &text, netc::SourceRange range, std::string_view with) {
  text.replace(range.begin, range.end - range.begin, with);
}

// ---- vocabularies ---------------------------------------------------------------------

constexpr std::array kHostileNumbers = {
    "99999999999999999999"sv, "4611686018427387904"sv, "9223372036854775807"sv, "9223372036854775808"sv,
    "18446744073709551616"sv, "100000"sv,              "2147483648"sv,          "4294967296"sv,
    "65536"sv,                "-1"sv,                  "-100000"sv,             "0"sv,
    "00"sv,                   "1"sv,                   "2"sv,                   "3"sv,
    "0.0"sv,                  "0.5"sv,                 "1.5"sv,                 "2.0"sv,
    "1e308"sv,                "1e309"sv,               "1e-400"sv,              "1E5"sv,
    ".5"sv,                   "-0.0"sv,                "-9223372036854775808"sv, "3037000500"sv,
};

constexpr std::array kWords = {
    "const"sv,      "input"sv,       "hidden"sv,    "output"sv,   "auto"sv,       "from"sv,
    "all"sv,        "where"sv,       "convolve"sv,  "max"sv,      "mean"sv,       "pool"sv,
    "response"sv,   "norm"sv,        "share"sv,     "true"sv,     "false"sv,      "sigmoid"sv,
    "linear"sv,     "softmax"sv,     "rlinear"sv,   "square"sv,   "sqrt"sv,       "srlinear"sv,
    "abs"sv,        "tanh"sv,        "brlinear"sv,  "min"sv,      "InputShape"sv, "KernelShape"sv,
    "Stride"sv,     "Padding"sv,     "LowerPad"sv,  "UpperPad"sv, "Sharing"sv,    "MapCount"sv,
    "Weights"sv,    "Alpha"sv,       "Beta"sv,      "Offset"sv,   "Biases"sv,     "AvgOverFullKernel"sv,
    "x"sv,          "_"sv,           "s"sv,         "d"sv,        "Const"sv,      "hiden"sv,
    "convolv"sv,    "maxpool"sv,     "unknown"sv,   "_0"sv,
};

constexpr std::array kPunctuation = {
    "=>"sv, "=="sv, "!="sv, "<="sv, ">="sv, "&&"sv, "||"sv, "="sv, "<"sv, ">"sv, "!"sv, "+"sv, "-"sv,
    "*"sv,  "/"sv,  "%"sv,  "^"sv,  ";"sv,  ","sv,  "{"sv,  "}"sv,  "["sv,  "]"sv,  "("sv,  ")"sv,
};

constexpr std::array kStrayBytes = {
    "\0"sv,          "\xFF"sv,         "\xFE"sv,   "\x80"sv,   "\xC3"sv,          "\xC3\x28"sv,
    "\xE2\x82"sv,    "\xED\xA0\x80"sv, "\xF4\x90\x80\x80"sv,   "\xC0\xAF"sv,      "\xF0\x9F\x98\x80"sv,
    "\xEF\xBB\xBF"sv, "\xE2\x80\xAE"sv, "/*"sv,     "*/"sv,     "//"sv,            "/* never closed"sv,
    "/*/"sv,         "\r"sv,           "\r\n"sv,   "\n"sv,     "\t"sv,            "\f"sv,
    "\v"sv,          "\x7F"sv,         "\x1B[31m"sv, "\""sv,   "'"sv,             "#"sv,
    "@"sv,           "$"sv,            "`"sv,      "\\"sv,     "?"sv,             "~"sv,
    ":"sv,           "."sv,            "1."sv,     "1e"sv,     "0x1F"sv,          "\0\0\0\0"sv,
};

// ---- mutators ---------------------------------------------------------------------------

using Mutator = void (*)(std::string &, Rng &, const std::vector<Example> &);

void deleteToken(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  if (!tokens.empty())
    replaceRange(text, rng.pick(tokens).range, "");
}

void duplicateToken(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  if (tokens.empty())
    return;
  const TokenInfo &t = rng.pick(tokens);
  text.insert(t.range.end, " " + t.text);
}

void swapTokens(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  if (tokens.size() < 2)
    return;
  size_t i = rng.below(tokens.size()), j = rng.below(tokens.size());
  if (i == j)
    return;
  if (i > j)
    std::swap(i, j);
  // Replace the later one first so the earlier range stays valid.
  std::string first = tokens[i].text, second = tokens[j].text;
  replaceRange(text, tokens[j].range, first);
  replaceRange(text, tokens[i].range, second);
}

void replaceNumber(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  auto numbers = tokensWhere(tokens, {TokenInfo::Category::Integer, TokenInfo::Category::Real});
  if (numbers.empty())
    return;
  const TokenInfo &t = *rng.pick(numbers);
  std::string with;
  if (t.category == TokenInfo::Category::Integer && t.text.size() < 10 && rng.chance(40)) {
    long long v = std::atoll(t.text.c_str());
    switch (rng.below(5)) {
    case 0: with = std::to_string(v + 1); break;
    case 1: with = std::to_string(v - 1); break;
    case 2: with = std::to_string(v * 1000); break;
    case 3: with = std::to_string(v) + ".0"; break;
    default: with = std::to_string(v / 2); break;
    }
  } else {
    with = rng.pick(kHostileNumbers);
  }
  replaceRange(text, t.range, with);
}

void replaceWord(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  auto words = tokensWhere(tokens, {TokenInfo::Category::Identifier, TokenInfo::Category::Keyword,
                                    TokenInfo::Category::Function});
  if (words.empty())
    return;
  const TokenInfo &t = *rng.pick(words);
  std::string with;
  switch (rng.below(4)) {
  case 0:
  case 1: with = rng.pick(words)->text; break; // another name of this file
  case 2: with = rng.pick(kWords); break;
  default: with = rng.chance(50) ? std::string(rng.between(1, 3000), 'L') : "L" + std::to_string(rng.below(50));
  }
  replaceRange(text, t.range, with);
}

void changeKeywordCase(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  auto words = tokensWhere(tokens, {TokenInfo::Category::Keyword, TokenInfo::Category::Function,
                                    TokenInfo::Category::Identifier});
  if (words.empty())
    return;
  const TokenInfo &t = *rng.pick(words);
  std::string with = t.text;
  unsigned style = static_cast<unsigned>(rng.below(3));
  for (size_t i = 0; i < with.size(); ++i) {
    auto c = static_cast<unsigned char>(with[i]);
    bool upper = style == 0 || (style == 1 && i == 0) || (style == 2 && rng.chance(50));
    with[i] = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
  }
  replaceRange(text, t.range, with);
}

void truncate(std::string &text, Rng &rng, const std::vector<Example> &) {
  text.resize(rng.below(text.size() + 1));
}

void insertBytes(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  uint32_t at = pickOffset(text, tokens, rng);
  std::string bytes;
  if (rng.chance(70)) {
    bytes = rng.pick(kStrayBytes);
  } else {
    for (size_t n = rng.between(1, 8); n > 0; --n)
      bytes += static_cast<char>(rng.below(256));
  }
  text.insert(at, bytes);
}

void insertPunctuation(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  uint32_t at = pickOffset(text, tokens, rng);
  std::string with(rng.pick(kPunctuation));
  if (rng.chance(30))
    with = " " + std::string(rng.pick(kWords)) + " ";
  text.insert(at, with);
}

/// Deep nesting around, or instead of, an expression; depths straddle the
/// parser's limit of 1000 levels.
void insertNesting(std::string &text, Rng &rng, const std::vector<Example> &) {
  static constexpr std::array<size_t, 8> kDepths = {10, 100, 500, 990, 1000, 1001, 2000, 5000};
  size_t depth = rng.chance(70) ? rng.pick(kDepths) : rng.between(1, 4000);
  auto repeat = [](std::string_view s, size_t n) {
    std::string out;
    out.reserve(s.size() * n);
    for (size_t i = 0; i < n; ++i)
      out += s;
    return out;
  };
  std::string nest;
  switch (rng.below(11)) {
  case 0: nest = repeat("(", depth) + "1" + repeat(")", depth); break;
  case 1: nest = repeat("[", depth) + "1" + repeat("]", depth); break;
  case 2: nest = repeat("-", depth) + "1"; break;
  case 3: nest = repeat("!", depth) + "true"; break;
  case 4: nest = "1" + repeat("+1", depth); break;
  case 5: nest = "2" + repeat("^2", depth); break;
  case 6: nest = repeat("abs(", depth) + "1" + repeat(")", depth); break;
  case 7: nest = repeat("x[", depth) + "0" + repeat("]", depth); break;
  case 8: nest = repeat("(", depth); break;
  case 9: nest = repeat("{", depth); break;
  default: nest = repeat("(1,", depth) + "1" + repeat(")", depth); break;
  }
  // Prefer replacing a number, where an expression is expected.
  auto tokens = tokensOf(text);
  auto numbers = tokensWhere(tokens, {TokenInfo::Category::Integer, TokenInfo::Category::Real});
  if (!numbers.empty() && rng.chance(70))
    replaceRange(text, rng.pick(numbers)->range, nest);
  else
    text.insert(pickOffset(text, tokens, rng), nest);
}

/// Repeats one statement (from a statement keyword to the next) many times.
void repeatStatement(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  std::vector<size_t> starts;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i].category == TokenInfo::Category::Keyword &&
        (tokens[i].text == "const" || tokens[i].text == "input" || tokens[i].text == "hidden" ||
         tokens[i].text == "output" || tokens[i].text == "share"))
      starts.push_back(i);
  if (starts.empty())
    return;
  size_t k = rng.below(starts.size());
  uint32_t begin = tokens[starts[k]].range.begin;
  uint32_t end = k + 1 < starts.size() ? tokens[starts[k + 1]].range.begin : static_cast<uint32_t>(text.size());
  std::string statement = text.substr(begin, end - begin);
  static constexpr std::array<size_t, 5> kCounts = {2, 3, 20, 200, 1000};
  size_t count = rng.pick(kCounts);
  std::string copies;
  for (size_t i = 0; i < count; ++i)
    copies += statement;
  text.insert(end, copies);
}

/// Replaces the text with a long chain (or cycle, or fan-in) of layers: the
/// passes' graph walks must not recurse once per layer.
void layerChain(std::string &text, Rng &rng, const std::vector<Example> &) {
  static constexpr std::array<size_t, 4> kLengths = {50, 500, 2000, 5000};
  size_t n = rng.pick(kLengths);
  std::string out = "input I [2];\n";
  unsigned shape = static_cast<unsigned>(rng.below(3));
  for (size_t i = 0; i < n; ++i) {
    std::string source = i == 0 ? "I" : fmt::format("H{}", i - 1);
    if (shape == 1 && i == 0)
      source = fmt::format("H{}", n - 1); // a cycle through every layer
    if (shape == 2)
      source = "I"; // fan-out: every layer reads the input
    out += fmt::format("hidden H{} [2] from {} all;\n", i, source);
  }
  if (shape == 2) {
    out += "output O [2] {";
    for (size_t i = 0; i < n; ++i)
      out += fmt::format(" from H{} all;", i);
    out += " }\n";
  } else {
    out += fmt::format("output O [2] from H{} all;\n", n - 1);
  }
  if (rng.chance(50)) {
    out += "share {";
    for (size_t i = 0; i < n; ++i)
      out += fmt::format("{} H{}", i ? "," : "", i);
    out += " }\n";
  }
  text = std::move(out);
}

/// Splices a prefix of the text onto a suffix of another example.
void splice(std::string &text, Rng &rng, const std::vector<Example> &examples) {
  const std::string &other = rng.pick(examples).text;
  size_t cut = rng.below(text.size() + 1);
  size_t from = rng.below(other.size() + 1);
  text = text.substr(0, cut) + other.substr(from);
}

struct MutatorInfo {
  const char *name;
  Mutator run;
  unsigned weight;
};

constexpr std::array kMutators = {
    MutatorInfo{"delete-token", deleteToken, 12},
    MutatorInfo{"duplicate-token", duplicateToken, 8},
    MutatorInfo{"swap-tokens", swapTokens, 8},
    MutatorInfo{"replace-number", replaceNumber, 18},
    MutatorInfo{"replace-word", replaceWord, 12},
    MutatorInfo{"keyword-case", changeKeywordCase, 5},
    MutatorInfo{"truncate", truncate, 5},
    MutatorInfo{"insert-bytes", insertBytes, 8},
    MutatorInfo{"insert-punctuation", insertPunctuation, 6},
    MutatorInfo{"deep-nesting", insertNesting, 5},
    MutatorInfo{"repeat-statement", repeatStatement, 4},
    MutatorInfo{"layer-chain", layerChain, 1},
    MutatorInfo{"splice", splice, 4},
};

const MutatorInfo &pickMutator(Rng &rng) {
  unsigned total = 0;
  for (const MutatorInfo &m : kMutators)
    total += m.weight;
  size_t r = rng.below(total);
  for (const MutatorInfo &m : kMutators) {
    if (r < m.weight)
      return m;
    r -= m.weight;
  }
  return kMutators.back();
}

// ---- one mutant ------------------------------------------------------------------------

struct Mutant {
  std::string text;
  std::string recipe; // "mnist.net: replace-number, truncate"
  uint64_t optionsSelector = 0;
};

/// Mutant `iteration` of run `seed`: a pure function of the two, so a
/// failure replays with `--seed S --only I`.
Mutant makeMutant(uint64_t seed, uint64_t iteration, const std::vector<Example> &examples) {
  Rng rng(seed ^ (iteration * 0xD1B54A32D192ED03ULL));
  rng.next();
  const Example &base = examples[iteration % examples.size()];
  Mutant m{base.text, base.name + ":", 0};
  // Half the mutants compile with default options, so the error-free ones
  // (which get the full round trip) stay common.
  m.optionsSelector = rng.chance(50) ? 0 : rng.next();
  size_t count = rng.chance(60) ? 1 : rng.between(2, 4);
  for (size_t i = 0; i < count; ++i) {
    const MutatorInfo &mutator = pickMutator(rng);
    mutator.run(m.text, rng, examples);
    m.recipe += fmt::format("{} {}", i ? "," : "", mutator.name);
  }
  return m;
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
  std::optional<uint64_t> only;
  std::optional<std::string> replay;
  uint64_t replayOptions = 0;
  bool verbose = false;
};

[[noreturn]] void usage(const char *argv0, const std::string &problem) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--iterations N] [--seed S] [--only I] [--replay FILE [--options SEL]] "
               "[--verbose]\n",
               argv0, problem.c_str(), argv0);
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
    else if (arg == "--only")
      flags.only = number();
    else if (arg == "--replay")
      flags.replay = value();
    else if (arg == "--options")
      flags.replayOptions = number();
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

/// The corpus itself must compile cleanly, without even a warning (DESIGN.md §8).
bool checkExamples(const std::vector<Example> &examples) {
  bool ok = true;
  for (const Example &e : examples) {
    auto c = netc::compileSource(netc::SourceFile(e.name, e.text), netc::CompileOptions{});
    if (!c->diags.diagnostics().empty()) {
      const netc::Diagnostic &d = c->diags.diagnostics().front();
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
  if (auto failure = netc::fuzz::checkPipeline(text, netc::fuzz::fuzzOptions(flags.replayOptions))) {
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
  bool examplesOk = checkExamples(examples);

  auto start = std::chrono::steady_clock::now();
  uint64_t first = flags.only.value_or(0);
  uint64_t last = flags.only ? *flags.only + 1 : flags.iterations;
  size_t failures = 0, parseErrors = 0, errors = 0, formatted = 0, clean = 0;
  constexpr size_t kMaxReported = 10;
  for (uint64_t i = first; i < last; ++i) {
    Mutant m = makeMutant(flags.seed, i, examples);
    std::string label = fmt::format("seed {} iteration {} ({}; options {})", flags.seed, i, m.recipe,
                                    m.optionsSelector);
    gCurrentText = &m.text;
    setLabel(label);
    if (flags.verbose)
      std::printf("%s: %zu bytes\n", label.c_str(), m.text.size());
    netc::fuzz::PipelineStats stats;
    auto failure = netc::fuzz::checkPipeline(m.text, netc::fuzz::fuzzOptions(m.optionsSelector), &stats);
    gCurrentText = nullptr;
    parseErrors += stats.parseErrors;
    errors += stats.errors;
    formatted += stats.formatted;
    clean += !stats.errors;
    if (!failure)
      continue;
    if (++failures > kMaxReported)
      continue;
    std::string path = fmt::format("mutation-failure-{}-{}.net", flags.seed, i);
    writeFile(path, m.text);
    std::fprintf(stderr,
                 "FAIL: %s\n  %s\n  input written to %s; replay with: netc_mutation_test --seed %llu --only "
                 "%llu (or --replay %s --options %llu)\n",
                 label.c_str(), failure->c_str(), path.c_str(), static_cast<unsigned long long>(flags.seed),
                 static_cast<unsigned long long>(i), path.c_str(),
                 static_cast<unsigned long long>(m.optionsSelector));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("netc_mutation_test: %llu mutants of %zu examples (seed %llu) in %.1f s: %zu with parse errors, "
              "%zu with errors, %zu error-free, %zu formatted and recompiled; %zu failures\n",
              static_cast<unsigned long long>(last - first), examples.size(),
              static_cast<unsigned long long>(flags.seed), seconds, parseErrors, errors, clean, formatted,
              failures);
  return failures == 0 && examplesOk ? 0 : 1;
}
