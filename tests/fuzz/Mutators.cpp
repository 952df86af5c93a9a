// Mutators.cpp -- how the mutation test makes its inputs: a crude token
// splitter of its own (independent of the real lexer, and fast under the
// sanitizers), vocabularies of hostile numbers, words and bytes, the mutators
// themselves (each a small edit picked by a seeded PRNG), generators of deep
// nesting and long layer and const chains, and the fixed stress cases.
#include "tests/fuzz/Mutators.h"

#include "support/SourceRange.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace netc::fuzz {

namespace {

using namespace std::literals;

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

// ---- tokens ---------------------------------------------------------------------------

/// A token of the mutators' own splitter: cruder than the real lexer (and
/// independent of it, and much faster under the sanitizers), but it finds
/// the words, numbers, operators and comments the mutators work on.
struct Token {
  enum class Kind { Word, Integer, Real, Punct, Comment, Other };
  Kind kind = Kind::Other;
  netc::SourceRange range;
  std::string text;
};

constexpr std::array kTwoCharOperators = {"=>"sv, "=="sv, "!="sv, "<="sv, ">="sv, "&&"sv, "||"sv};

std::vector<Token> tokensOf(const std::string &text) {
  std::vector<Token> out;
  const size_t n = text.size();
  auto digit = [&](size_t k) { return k < n && text[k] >= '0' && text[k] <= '9'; };
  auto wordChar = [&](size_t k, bool first) {
    if (k >= n)
      return false;
    auto c = static_cast<unsigned char>(text[k]);
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
  };
  size_t i = 0;
  while (i < n) {
    char c = text[i];
    size_t start = i;
    Token::Kind kind = Token::Kind::Other;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
      ++i;
      continue;
    }
    if (text.compare(i, 2, "//") == 0) {
      i = std::min(text.find('\n', i), n);
      kind = Token::Kind::Comment;
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t close = text.find("*/", i + 2);
      i = close == std::string::npos ? n : close + 2;
      kind = Token::Kind::Comment;
    } else if (wordChar(i, true)) {
      while (wordChar(i, false))
        ++i;
      kind = Token::Kind::Word;
    } else if (digit(i) || (c == '.' && digit(i + 1))) {
      kind = Token::Kind::Integer;
      while (digit(i))
        ++i;
      if (i < n && text[i] == '.') {
        kind = Token::Kind::Real;
        for (++i; digit(i);)
          ++i;
      }
      if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        size_t k = i + 1;
        if (k < n && (text[k] == '+' || text[k] == '-'))
          ++k;
        if (digit(k)) {
          kind = Token::Kind::Real;
          for (i = k; digit(i);)
            ++i;
        }
      }
    } else if (std::find(kTwoCharOperators.begin(), kTwoCharOperators.end(),
                         std::string_view(text).substr(i, 2)) != kTwoCharOperators.end()) {
      i += 2;
      kind = Token::Kind::Punct;
    } else if (c != '\0' && std::string_view("=<>!+-*/%^;,{}[]()").find(c) != std::string_view::npos) {
      ++i;
      kind = Token::Kind::Punct;
    } else {
      ++i;
    }
    out.push_back(
        {kind, {static_cast<uint32_t>(start), static_cast<uint32_t>(i)}, text.substr(start, i - start)});
  }
  return out;
}

std::vector<const Token *> tokensWhere(const std::vector<Token> &tokens,
                                       std::initializer_list<Token::Kind> kinds) {
  std::vector<const Token *> out;
  for (const Token &t : tokens)
    if (std::find(kinds.begin(), kinds.end(), t.kind) != kinds.end())
      out.push_back(&t);
  return out;
}

/// A byte offset at a token boundary (or the end), or anywhere in the text.
uint32_t pickOffset(const std::string &text, const std::vector<Token> &tokens, Rng &rng) {
  if (tokens.empty() || rng.chance(25))
    return static_cast<uint32_t>(rng.below(text.size() + 1));
  const Token &t = rng.pick(tokens);
  return rng.chance(50) ? t.range.begin : t.range.end;
}

void replaceRange(std::string &text, netc::SourceRange range, std::string_view with) {
  text.replace(range.begin, range.end - range.begin, with);
}

// ---- vocabularies ---------------------------------------------------------------------

constexpr std::array kHostileNumbers = {
    "99999999999999999999"sv,
    "4611686018427387904"sv,
    "9223372036854775807"sv,
    "9223372036854775808"sv,
    "18446744073709551616"sv,
    "100000"sv,
    "2147483648"sv,
    "4294967296"sv,
    "65536"sv,
    "-1"sv,
    "-100000"sv,
    "0"sv,
    "00"sv,
    "1"sv,
    "2"sv,
    "3"sv,
    "0.0"sv,
    "0.5"sv,
    "1.5"sv,
    "2.0"sv,
    "1e308"sv,
    "1e309"sv,
    "1e-400"sv,
    "1E5"sv,
    ".5"sv,
    "-0.0"sv,
    "-9223372036854775808"sv,
    "3037000500"sv,
};

constexpr std::array kWords = {
    "const"sv,    "input"sv,   "hidden"sv,   "output"sv,   "auto"sv,       "from"sv,
    "all"sv,      "where"sv,   "convolve"sv, "max"sv,      "mean"sv,       "pool"sv,
    "response"sv, "norm"sv,    "share"sv,    "true"sv,     "false"sv,      "sigmoid"sv,
    "linear"sv,   "softmax"sv, "rlinear"sv,  "square"sv,   "sqrt"sv,       "srlinear"sv,
    "abs"sv,      "tanh"sv,    "brlinear"sv, "min"sv,      "InputShape"sv, "KernelShape"sv,
    "Stride"sv,   "Padding"sv, "LowerPad"sv, "UpperPad"sv, "Sharing"sv,    "MapCount"sv,
    "Weights"sv,  "Alpha"sv,   "Beta"sv,     "Offset"sv,   "Biases"sv,     "AvgOverFullKernel"sv,
    "x"sv,        "_"sv,       "s"sv,        "d"sv,        "Const"sv,      "hiden"sv,
    "convolv"sv,  "maxpool"sv, "unknown"sv,  "_0"sv,
};

constexpr std::array kPunctuation = {
    "=>"sv, "=="sv, "!="sv, "<="sv, ">="sv, "&&"sv, "||"sv, "="sv, "<"sv, ">"sv, "!"sv, "+"sv, "-"sv,
    "*"sv,  "/"sv,  "%"sv,  "^"sv,  ";"sv,  ","sv,  "{"sv,  "}"sv, "["sv, "]"sv, "("sv, ")"sv,
};

constexpr std::array kStrayBytes = {
    "\0"sv,
    "\xFF"sv,
    "\xFE"sv,
    "\x80"sv,
    "\xC3"sv,
    "\xC3\x28"sv,
    "\xE2\x82"sv,
    "\xED\xA0\x80"sv,
    "\xF4\x90\x80\x80"sv,
    "\xC0\xAF"sv,
    "\xF0\x9F\x98\x80"sv,
    "\xEF\xBB\xBF"sv,
    "\xE2\x80\xAE"sv,
    "/*"sv,
    "*/"sv,
    "//"sv,
    "/* never closed"sv,
    "/*/"sv,
    "\r"sv,
    "\r\n"sv,
    "\n"sv,
    "\t"sv,
    "\f"sv,
    "\v"sv,
    "\x7F"sv,
    "\x1B[31m"sv,
    "\""sv,
    "'"sv,
    "#"sv,
    "@"sv,
    "$"sv,
    "`"sv,
    "\\"sv,
    "?"sv,
    "~"sv,
    ":"sv,
    "."sv,
    "1."sv,
    "1e"sv,
    "0x1F"sv,
    "\0\0\0\0"sv,
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
  const Token &t = rng.pick(tokens);
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
  auto numbers = tokensWhere(tokens, {Token::Kind::Integer, Token::Kind::Real});
  if (numbers.empty())
    return;
  const Token &t = *rng.pick(numbers);
  std::string with;
  if (t.kind == Token::Kind::Integer && t.text.size() < 10 && rng.chance(40)) {
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
  auto words = tokensWhere(tokens, {Token::Kind::Word});
  if (words.empty())
    return;
  const Token &t = *rng.pick(words);
  std::string with;
  switch (rng.below(4)) {
  case 0:
  case 1: with = rng.pick(words)->text; break; // another name of this file
  case 2: with = rng.pick(kWords); break;
  default:
    with = rng.chance(50) ? std::string(rng.between(1, 3000), 'L') : "L" + std::to_string(rng.below(50));
  }
  replaceRange(text, t.range, with);
}

void changeKeywordCase(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  auto words = tokensWhere(tokens, {Token::Kind::Word});
  if (words.empty())
    return;
  const Token &t = *rng.pick(words);
  std::string with = t.text;
  unsigned style = static_cast<unsigned>(rng.below(3));
  for (size_t i = 0; i < with.size(); ++i) {
    auto c = static_cast<unsigned char>(with[i]);
    bool upper = style == 0 || (style == 1 && i == 0) || (style == 2 && rng.chance(50));
    with[i] = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
  }
  replaceRange(text, t.range, with);
}

/// Meaning-preserving edits (comments, blank space, parentheses, `+ 0`), so
/// that more mutants compile cleanly and get the full format round trip.
void benignEdit(std::string &text, Rng &rng, const std::vector<Example> &) {
  auto tokens = tokensOf(text);
  if (tokens.empty())
    return;
  auto numbers = tokensWhere(tokens, {Token::Kind::Integer});
  const Token &t = rng.pick(tokens);
  switch (rng.below(6)) {
  case 0: text.insert(t.range.end, " /* note */ "); break;
  case 1: text.insert(t.range.end, " // note\n"); break;
  case 2: text.insert(t.range.end, "\n\n\n"); break;
  case 3: text.insert(t.range.end, " \t "); break;
  case 4:
    if (!numbers.empty()) {
      const Token &number = *rng.pick(numbers);
      replaceRange(text, number.range, "(" + number.text + ")");
    }
    break;
  default:
    if (!numbers.empty()) {
      const Token &number = *rng.pick(numbers);
      text.insert(number.range.end, " + 0");
    }
    break;
  }
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

std::string repeated(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    out += s;
  return out;
}

/// The shapes of deep nesting: every construct the parser, the AST walkers,
/// the evaluator and the formatter recurse on.
constexpr size_t kNestingKinds = 11;
std::string nestingText(size_t kind, size_t depth) {
  switch (kind) {
  case 0: return repeated("(", depth) + "1" + repeated(")", depth);
  case 1: return repeated("[", depth) + "1" + repeated("]", depth);
  case 2: return repeated("-", depth) + "1";
  case 3: return repeated("!", depth) + "true";
  case 4: return "1" + repeated("+1", depth);
  case 5: return "2" + repeated("^2", depth);
  case 6: return repeated("abs(", depth) + "1" + repeated(")", depth);
  case 7: return repeated("x[", depth) + "0" + repeated("]", depth);
  case 8: return repeated("(", depth);
  case 9: return repeated("{", depth);
  default: return repeated("(1,", depth) + "1" + repeated(")", depth);
  }
}

/// Deep nesting around, or instead of, an expression; depths straddle the
/// parser's limit of 1000 levels (the stress cases go deeper).
void insertNesting(std::string &text, Rng &rng, const std::vector<Example> &) {
  // Near the limit the parser's error recovery takes a while under the
  // sanitizers, so those depths are rare here and certain in stressCases().
  static constexpr std::array<size_t, 5> kDepths = {3, 10, 50, 100, 300};
  size_t depth = rng.chance(95) ? rng.pick(kDepths) : rng.between(990, 1010);
  std::string nest = nestingText(rng.below(kNestingKinds), depth);
  // Prefer replacing a number, where an expression is expected.
  auto tokens = tokensOf(text);
  auto numbers = tokensWhere(tokens, {Token::Kind::Integer, Token::Kind::Real});
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
    if (tokens[i].kind == Token::Kind::Word &&
        (tokens[i].text == "const" || tokens[i].text == "input" || tokens[i].text == "hidden" ||
         tokens[i].text == "output" || tokens[i].text == "share"))
      starts.push_back(i);
  if (starts.empty())
    return;
  size_t k = rng.below(starts.size());
  uint32_t begin = tokens[starts[k]].range.begin;
  uint32_t end =
      k + 1 < starts.size() ? tokens[starts[k + 1]].range.begin : static_cast<uint32_t>(text.size());
  std::string statement = text.substr(begin, end - begin);
  static constexpr std::array<size_t, 4> kCounts = {2, 3, 20, 100};
  size_t count = rng.pick(kCounts);
  std::string copies;
  for (size_t i = 0; i < count; ++i)
    copies += statement;
  text.insert(end, copies);
}

/// A network of `n` hidden layers in a chain, a cycle through all of them,
/// or fanned out from the input and into the output; optionally all shared.
enum class ChainShape { Chain, Cycle, Fan };
std::string chainProgram(size_t n, ChainShape shape, bool share) {
  std::string out = "input I [2];\n";
  for (size_t i = 0; i < n; ++i) {
    std::string source = i == 0 ? "I" : fmt::format("H{}", i - 1);
    if (shape == ChainShape::Cycle && i == 0)
      source = fmt::format("H{}", n - 1);
    if (shape == ChainShape::Fan)
      source = "I";
    out += fmt::format("hidden H{} [2] from {} all;\n", i, source);
  }
  if (shape == ChainShape::Fan) {
    out += "output O [2] {";
    for (size_t i = 0; i < n; ++i)
      out += fmt::format(" from H{} all;", i);
    out += " }\n";
  } else {
    out += fmt::format("output O [2] from H{} all;\n", n - 1);
  }
  if (share) {
    out += "share {";
    for (size_t i = 0; i < n; ++i)
      out += fmt::format("{} H{}", i ? "," : "", i);
    out += " }\n";
  }
  return out;
}

/// Replaces the text with a chain, cycle or fan of layers (longer ones are
/// stress cases).
void layerChain(std::string &text, Rng &rng, const std::vector<Example> &) {
  static constexpr std::array<size_t, 4> kLengths = {2, 10, 50, 200};
  text = chainProgram(rng.pick(kLengths), static_cast<ChainShape>(rng.below(3)), rng.chance(50));
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
    MutatorInfo{"delete-token", deleteToken, 12},  MutatorInfo{"duplicate-token", duplicateToken, 8},
    MutatorInfo{"swap-tokens", swapTokens, 8},     MutatorInfo{"replace-number", replaceNumber, 18},
    MutatorInfo{"replace-word", replaceWord, 12},  MutatorInfo{"keyword-case", changeKeywordCase, 5},
    MutatorInfo{"benign-edit", benignEdit, 15},    MutatorInfo{"truncate", truncate, 5},
    MutatorInfo{"insert-bytes", insertBytes, 8},   MutatorInfo{"insert-punctuation", insertPunctuation, 6},
    MutatorInfo{"deep-nesting", insertNesting, 5}, MutatorInfo{"repeat-statement", repeatStatement, 4},
    MutatorInfo{"layer-chain", layerChain, 1},     MutatorInfo{"splice", splice, 4},
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

} // namespace

Mutant makeMutant(uint64_t seed, uint64_t iteration, const std::vector<Example> &examples) {
  Rng rng(seed ^ (iteration * 0xD1B54A32D192ED03ULL));
  rng.next();
  const Example &base = examples[iteration % examples.size()];
  Mutant m{base.text, base.name + ":", 0, std::nullopt};
  // Half the mutants compile with the example's own options, so the
  // error-free ones (which get the full round trip) stay common.
  m.optionsSelector = rng.chance(50) ? 0 : rng.next();
  if (m.optionsSelector == 0)
    m.inputSize = base.inputSize;
  size_t count = rng.chance(60) ? 1 : rng.between(2, 4);
  for (size_t i = 0; i < count; ++i) {
    const MutatorInfo &mutator = pickMutator(rng);
    mutator.run(m.text, rng, examples);
    m.recipe += fmt::format("{} {}", i ? "," : "", mutator.name);
  }
  return m;
}

std::vector<StressCase> stressCases(const std::vector<Example> &examples) {
  std::vector<StressCase> cases;
  for (size_t kind = 0; kind < kNestingKinds; ++kind)
    for (size_t depth : {998, 5000}) {
      std::string nest = nestingText(kind, depth);
      cases.push_back(
          {fmt::format("nesting-{}-{}-const", kind, depth),
           "const C = " + nest + ";\ninput I [2];\nhidden H [2] from I all;\noutput O [1] from H all;\n"});
      cases.push_back(
          {fmt::format("nesting-{}-{}-where", kind, depth),
           "input I [2];\nhidden H [2] from I where (s, d) => " + nest + ";\noutput O [1] from H all;\n"});
    }
  // Graph walks over layers must not recurse once per layer.
  cases.push_back({"layers-chain-5000", chainProgram(5000, ChainShape::Chain, true)});
  cases.push_back({"layers-cycle-5000", chainProgram(5000, ChainShape::Cycle, false)});
  cases.push_back({"layers-fan-2000", chainProgram(2000, ChainShape::Fan, true)});
  for (bool cycle : {false, true}) {
    std::string consts = "const {\n";
    for (size_t i = 0; i < 5000; ++i)
      consts += fmt::format("  C{} = C{} + 1;\n", i, i + 1 < 5000 ? i + 1 : 0);
    if (!cycle)
      consts.replace(consts.rfind("C0 + 1"), 6, "1");
    consts += "}\ninput I [C0];\nhidden H [2] from I all;\noutput O [1] from H all;\n";
    cases.push_back({cycle ? "const-cycle-5000" : "const-chain-5000", consts});
  }
  for (const Example &e : examples)
    cases.push_back({"repeated-100-" + std::filesystem::path(e.name).stem().string(), repeated(e.text, 100)});
  std::string bytes;
  for (int i = 0; i < 256 * 64; ++i)
    bytes += static_cast<char>(i % 256);
  cases.push_back({"all-bytes", bytes});
  cases.push_back({"nul-bytes", std::string(65536, '\0')});
  cases.push_back({"long-identifier", "input " + std::string(100000, 'x') + " [2];\n"});
  cases.push_back({"long-number", "input I [" + std::string(100000, '9') + "];\n"});
  cases.push_back({"long-comment", "//" + std::string(100000, '/') + "\n/*" + std::string(100000, '*')});
  for (std::string_view text :
       {""sv, " "sv, "\n\n"sv, "/*"sv, "//"sv, "\xEF\xBB\xBF"sv, ";"sv, "share { }"sv})
    cases.push_back({fmt::format("tiny-{}", cases.size()), std::string(text)});
  return cases;
}

} // namespace netc::fuzz
