// Lexer.cpp -- the hand-written Net# lexer. It implements the lexer rules of
// grammar/NetSharp.g4 exactly (longest match, keywords before identifiers),
// which tests check token by token against the ANTLR-generated lexer
// (ReferenceLexer.cpp) on the examples and on seeded random inputs.
#include "frontend/Lexer.h"

#include "NetSharpLexer.h"
#include "NetSharpParser.h"
#include "antlr4-runtime.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

namespace netc {

namespace {

using L = NetSharpLexer;

bool isDigit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool isIdentStart(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isIdentPart(unsigned char c) {
  return isIdentStart(c) || isDigit(c);
}

uint32_t keywordType(std::string_view word) {
  static const std::unordered_map<std::string_view, uint32_t> keywords = {
      {"const", L::CONST},       {"input", L::INPUT},     {"hidden", L::HIDDEN_LAYER},
      {"output", L::OUTPUT},     {"auto", L::AUTO},       {"from", L::FROM},
      {"all", L::ALL},           {"where", L::WHERE},     {"convolve", L::CONVOLVE},
      {"max", L::MAX},           {"mean", L::MEAN},       {"pool", L::POOL},
      {"response", L::RESPONSE}, {"norm", L::NORM},       {"share", L::SHARE},
      {"true", L::TRUE},         {"false", L::FALSE},     {"sigmoid", L::SIGMOID},
      {"linear", L::LINEAR},     {"softmax", L::SOFTMAX}, {"rlinear", L::RLINEAR},
      {"square", L::SQUARE},     {"sqrt", L::SQRT},       {"srlinear", L::SRLINEAR},
      {"abs", L::ABS},           {"tanh", L::TANH},       {"brlinear", L::BRLINEAR},
  };
  auto it = keywords.find(word);
  return it == keywords.end() ? static_cast<uint32_t>(L::IDENT) : it->second;
}

/// Length of a valid UTF-8 sequence at `i`, or 0 when the byte starts none.
size_t utf8Length(std::string_view text, size_t i) {
  auto c = static_cast<unsigned char>(text[i]);
  size_t length = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (length == 0 || i + length > text.size())
    return 0;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80)
      return 0;
  auto c1 = static_cast<unsigned char>(text[i + 1]);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 >= 0x90))
    return 0; // overlong, surrogate, or beyond U+10FFFF
  return length;
}

/// Length of the longest REAL or INT at `i` (which holds a digit or '.'),
/// and its type; 0 when '.' starts no number.
std::pair<size_t, uint32_t> scanNumber(std::string_view text, size_t i) {
  size_t n = text.size(), j = i;
  while (j < n && isDigit(static_cast<unsigned char>(text[j])))
    ++j;
  const bool intPart = j > i;
  bool real = false;
  size_t end = j;
  if (j < n && text[j] == '.') {
    size_t k = j + 1;
    while (k < n && isDigit(static_cast<unsigned char>(text[k])))
      ++k;
    if (intPart || k > j + 1) { // DIGIT+ '.' DIGIT*  or  '.' DIGIT+
      real = true;
      end = k;
    }
  }
  if (!intPart && !real)
    return {0, 0};
  // EXPONENT: [eE] [+-]? DIGIT+, taken only when complete (longest match).
  if (end < n && (text[end] == 'e' || text[end] == 'E')) {
    size_t k = end + 1;
    if (k < n && (text[k] == '+' || text[k] == '-'))
      ++k;
    size_t digits = k;
    while (k < n && isDigit(static_cast<unsigned char>(text[k])))
      ++k;
    if (k > digits) {
      real = true;
      end = k;
    }
  }
  return {end - i, real ? static_cast<uint32_t>(L::REAL) : static_cast<uint32_t>(L::INT)};
}

uint32_t singleCharType(unsigned char c) {
  switch (c) {
  case '=': return L::ASSIGN;
  case '<': return L::LT;
  case '>': return L::GT;
  case '!': return L::NOT;
  case '+': return L::PLUS;
  case '-': return L::MINUS;
  case '*': return L::MUL;
  case '/': return L::DIV;
  case '%': return L::MOD;
  case '^': return L::POW;
  case ';': return L::SEMI;
  case ',': return L::COMMA;
  case '{': return L::LBRACE;
  case '}': return L::RBRACE;
  case '[': return L::LBRACK;
  case ']': return L::RBRACK;
  case '(': return L::LPAREN;
  case ')': return L::RPAREN;
  default: return 0;
  }
}

uint32_t twoCharType(char a, char b) {
  if (b == '=') {
    switch (a) {
    case '=': return L::EQ;
    case '!': return L::NE;
    case '<': return L::LE;
    case '>': return L::GE;
    default: return 0;
    }
  }
  if (a == '=' && b == '>')
    return L::ARROW;
  if (a == '&' && b == '&')
    return L::AND;
  if (a == '|' && b == '|')
    return L::OR;
  return 0;
}

} // namespace

void foldNumberTuples(std::vector<LexedToken> &tokens, size_t minItems) {
  const size_t n = tokens.size();
  auto is = [&](size_t i, uint32_t type) { return i < n && !tokens[i].hidden && tokens[i].type == type; };
  size_t out = 0;
  uint32_t previous = 0; // the type of the last token the parser sees
  for (size_t i = 0; i < n;) {
    // After a name, '[' is an index (`T[3]`) or a layer's shape: never folded.
    if (is(i, L::LBRACK) && previous != L::IDENT) {
      // Scan `item (, item)* ]`; a tuple that is not all numbers stops the
      // scan at its first other token, so scans never overlap.
      size_t j = i + 1, items = 0;
      bool closed = false;
      while (true) {
        if (is(j, L::MINUS))
          ++j;
        if (!is(j, L::INT) && !is(j, L::REAL))
          break;
        ++j;
        ++items;
        if (is(j, L::COMMA)) {
          ++j;
          continue;
        }
        closed = is(j, L::RBRACK);
        break;
      }
      if (closed && items >= minItems) {
        tokens[out++] = {static_cast<uint32_t>(NetSharpParser::NUMBER_LIST), tokens[i].begin, tokens[j].end,
                         false};
        previous = NetSharpParser::NUMBER_LIST;
        i = j + 1;
        continue;
      }
    }
    if (!tokens[i].hidden)
      previous = tokens[i].type;
    tokens[out++] = tokens[i++];
  }
  tokens.resize(out);
}

std::vector<LexedToken> lexSource(std::string_view text) {
  std::vector<LexedToken> out;
  out.reserve(text.size() / 3 + 1);
  const size_t n = text.size();
  size_t i = 0;
  auto emit = [&](uint32_t type, size_t begin, size_t end, bool hidden) {
    out.push_back({type, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), hidden});
  };
  while (i < n) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
      ++i;
      continue;
    }
    if (isIdentStart(c)) {
      size_t j = i + 1;
      while (j < n && isIdentPart(static_cast<unsigned char>(text[j])))
        ++j;
      emit(keywordType(text.substr(i, j - i)), i, j, false);
      i = j;
      continue;
    }
    if (isDigit(c) || c == '.') {
      auto [length, type] = scanNumber(text, i);
      if (length > 0) {
        emit(type, i, i + length, false);
        i += length;
        continue;
      }
    }
    // `// ...`, and `# ...` (a comment in other languages' syntax: NS0111),
    // run to the end of the line.
    if ((c == '/' && i + 1 < n && text[i + 1] == '/') || c == '#') {
      size_t j = i + 1;
      while (j < n && text[j] != '\r' && text[j] != '\n')
        ++j;
      emit(c == '#' ? L::HASH_COMMENT : L::LINE_COMMENT, i, j, true);
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      size_t close = text.find("*/", i + 2);
      if (close == std::string_view::npos) {
        emit(L::UNTERMINATED_COMMENT, i, n, true);
        i = n;
      } else {
        emit(L::BLOCK_COMMENT, i, close + 2, true);
        i = close + 2;
      }
      continue;
    }
    if (i + 1 < n) {
      if (uint32_t type = twoCharType(text[i], text[i + 1])) {
        emit(type, i, i + 2, false);
        i += 2;
        continue;
      }
    }
    if (uint32_t type = singleCharType(c)) {
      emit(type, i, i + 1, false);
      ++i;
      continue;
    }
    // Anything else is one stray character: a whole code point when the
    // bytes are valid UTF-8, else the single offending byte.
    size_t length = c < 0x80 ? 1 : utf8Length(text, i);
    if (length == 0)
      length = 1;
    emit(L::ERROR_CHAR, i, i + length, true);
    i += length;
  }
  return out;
}

std::string_view tokenTypeName(uint32_t type) {
  // The generated lexer's vocabulary, read once into a table of its own.
  static const std::vector<std::string> names = [] {
    antlr4::ANTLRInputStream empty(std::string{});
    NetSharpLexer lexer(&empty);
    const antlr4::dfa::Vocabulary &vocabulary = lexer.getVocabulary();
    std::vector<std::string> table(vocabulary.getMaxTokenType() + 1);
    for (size_t t = 0; t < table.size(); ++t)
      table[t] = t == L::HIDDEN_LAYER ? "HIDDEN" : vocabulary.getSymbolicName(t);
    table.resize(std::max<size_t>(table.size(), NetSharpParser::NUMBER_LIST + 1));
    table[NetSharpParser::NUMBER_LIST] = "NUMBER_LIST"; // the parser's own token (foldNumberTuples)
    return table;
  }();
  return type < names.size() ? std::string_view(names[type]) : std::string_view("?");
}

bool isCommentToken(uint32_t type) {
  return type == L::LINE_COMMENT || type == L::BLOCK_COMMENT || type == L::UNTERMINATED_COMMENT;
}
bool isErrorToken(uint32_t type) {
  return type == L::ERROR_CHAR;
}
bool isUnterminatedCommentToken(uint32_t type) {
  return type == L::UNTERMINATED_COMMENT;
}
bool isHashCommentToken(uint32_t type) {
  return type == L::HASH_COMMENT;
}

} // namespace netc
