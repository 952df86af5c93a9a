// Parser.cpp -- the parser driver: lexes a source file with netc's lexer,
// runs the ANTLR-generated parser over the tokens and has ParseTreeToAst
// build the AST. Syntax errors become diagnostics with netc's own wording
// ("expected X, found Y") and did-you-mean fix-its for misspelled keywords.
// Parsing uses SLL prediction one statement at a time first and falls back to
// a whole-file LL parse with error recovery only when SLL fails, which keeps
// large files fast and small in memory.
#include "frontend/Parser.h"

#include "frontend/Lexer.h"
#include "frontend/ParseTreeToAst.h"
#include "frontend/TokenArrayStream.h"

#include "NetSharpLexer.h"
#include "NetSharpParser.h"
#include "antlr4-runtime.h"
#include "support/Spelling.h"

#include <set>

namespace netc {

using antlr4::Token;
using P = NetSharpParser;

namespace {

TokenInfo::Category categoryOf(uint32_t type) {
  switch (type) {
  case P::SIGMOID:
  case P::LINEAR:
  case P::SOFTMAX:
  case P::RLINEAR:
  case P::SQUARE:
  case P::SQRT:
  case P::SRLINEAR:
  case P::ABS:
  case P::TANH:
  case P::BRLINEAR: return TokenInfo::Category::Function;
  case P::IDENT: return TokenInfo::Category::Identifier;
  case P::INT: return TokenInfo::Category::Integer;
  case P::REAL: return TokenInfo::Category::Real;
  case P::LINE_COMMENT:
  case P::BLOCK_COMMENT:
  case P::UNTERMINATED_COMMENT:
  case P::HASH_COMMENT: return TokenInfo::Category::Comment; // an error too (NS0111), shown as what was meant
  case P::ERROR_CHAR: return TokenInfo::Category::Error;
  default:
    return type >= P::CONST && type <= P::FALSE ? TokenInfo::Category::Keyword
                                                : TokenInfo::Category::Punctuation;
  }
}

/// Human wording for a token type in "expected ..." messages.
std::string describeTokenType(const antlr4::dfa::Vocabulary &vocabulary, size_t type) {
  if (type == Token::EOF)
    return "end of file";
  switch (type) {
  case P::IDENT: return "a name";
  case P::INT: return "an integer";
  case P::REAL: return "a number";
  default: break;
  }
  std::string literal = vocabulary.getLiteralName(type);
  if (literal.empty())
    return vocabulary.getSymbolicName(type);
  return literal; // already quoted, e.g. 'from'
}

std::string describeExpected(const antlr4::dfa::Vocabulary &vocabulary,
                             const antlr4::misc::IntervalSet &expected) {
  std::vector<std::string> parts;
  std::set<size_t> types;
  for (size_t t : expected.toList())
    types.insert(t);
  auto takeGroup = [&](std::initializer_list<size_t> group, size_t needed, const char *name) {
    size_t present = 0;
    for (size_t t : group)
      present += types.count(t);
    if (present >= needed) {
      for (size_t t : group)
        types.erase(t);
      parts.emplace_back(name);
    }
  };
  types.erase(P::NUMBER_LIST); // a '[' that starts a folded tuple, never written as such
  takeGroup({P::INT, P::REAL, P::TRUE, P::FALSE, P::LPAREN, P::LBRACK, P::MINUS, P::NOT}, 5, "an expression");
  if (!parts.empty() && parts[0] == "an expression")
    for (size_t t : {P::IDENT, P::ABS, P::MAX, P::SIGMOID, P::LINEAR, P::SOFTMAX, P::RLINEAR, P::SQUARE,
                     P::SQRT, P::SRLINEAR, P::TANH, P::BRLINEAR})
      types.erase(t);
  takeGroup({P::SIGMOID, P::LINEAR, P::SOFTMAX, P::RLINEAR, P::SQUARE, P::SQRT, P::SRLINEAR, P::ABS, P::TANH,
             P::BRLINEAR},
            5, "an output function");
  takeGroup(
      {P::POW, P::MUL, P::DIV, P::MOD, P::PLUS, P::LT, P::LE, P::GT, P::GE, P::EQ, P::NE, P::AND, P::OR}, 8,
      "an operator");
  // Where a keyword is expected, the grammar also takes an identifier only to
  // catch misspellings; "a name" would mislead there.
  for (size_t keyword : {P::CONST, P::INPUT, P::HIDDEN_LAYER, P::OUTPUT, P::SHARE, P::AUTO, P::FROM, P::ALL,
                         P::WHERE, P::CONVOLVE})
    if (types.count(keyword)) {
      types.erase(P::IDENT);
      break;
    }
  for (size_t t : types)
    parts.push_back(describeTokenType(vocabulary, t));
  if (parts.empty())
    return "something else";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0)
      out += i + 1 == parts.size() ? " or " : ", ";
    out += parts[i];
  }
  return out;
}

/// Turns ANTLR's syntax errors into netc diagnostics.
/// Thrown out of the parser once the error limit is passed: parsing stops.
struct ErrorLimitReached {};

class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(DiagnosticEngine &diags, uint32_t fileSize) : diags_(diags), fileSize_(fileSize) {}

  void syntaxError(antlr4::Recognizer *recognizer, Token *offending, size_t, size_t, const std::string &,
                   std::exception_ptr error) override {
    if (diags_.errorLimitReached())
      throw ErrorLimitReached();
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    if (!parser)
      return;
    if (Token *word = strayStatementWord(parser, offending, error)) {
      reportStrayStatementWord(word);
      return;
    }
    SourceRange range = rangeOf(offending);
    // A folded tuple of numbers (foldNumberTuples) is reported at its '['.
    const bool foldedTuple = offending && offending->getType() == P::NUMBER_LIST;
    if (foldedTuple)
      range.end = range.begin + 1;
    // One error per position: ANTLR may report the same spot twice while recovering.
    if (!reported_.insert(range.begin).second)
      return;
    // One syntax error per statement: what follows the first in the same
    // statement is most often a consequence of ANTLR's repair (a
    // recognised misspelling is repaired exactly and does not count).
    size_t index = offending ? offending->getTokenIndex() : INVALID_INDEX;
    if (validIndex(index) && lastErrorToken_ && validIndex(*lastErrorToken_) && index > *lastErrorToken_ &&
        !statementEndsBetween(parser, *lastErrorToken_, index))
      return;
    lastErrorToken_ = validIndex(index) ? std::optional<size_t>(index) : std::nullopt;
    antlr4::misc::IntervalSet expected;
    try {
      expected = parser->getExpectedTokens();
    } catch (...) {
    }
    const auto &vocabulary = parser->getVocabulary();
    std::string found = foldedTuple                                       ? std::string("'['")
                        : offending && offending->getType() != Token::EOF ? "'" + offending->getText() + "'"
                                                                          : std::string("end of file");
    // A misspelled keyword where a keyword was expected: suggest it.
    if (offending && offending->getType() == P::IDENT) {
      std::vector<std::string> literals;
      for (size_t t : expected.toList()) {
        std::string literal = vocabulary.getLiteralName(t);
        if (literal.size() > 2 && std::isalpha(static_cast<unsigned char>(literal[1])))
          literals.push_back(literal.substr(1, literal.size() - 2));
      }
      std::vector<std::string_view> candidates(literals.begin(), literals.end());
      if (auto match = closestMatch(offending->getText(), candidates)) {
        Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, range, offending->getText(), *match);
        withFixIt(d, range, *match);
        lastErrorToken_.reset();
        return;
      }
    }
    // A keyword where a name belongs (`hidden max [5]`, `const all = 3`).
    if (offending && offending->getType() >= P::CONST && offending->getType() <= P::BRLINEAR &&
        validIndex(index) && index > 0) {
      size_t previous = parser->getTokenStream()->get(index - 1)->getType();
      if (previous == P::CONST || previous == P::INPUT || previous == P::HIDDEN_LAYER ||
          previous == P::OUTPUT || previous == P::FROM) {
        diags_.report(DiagId::SyntaxError, range,
                      "expected a name, found " + found + ", which is a keyword and cannot name anything");
        return;
      }
    }
    diags_.report(DiagId::SyntaxError, range,
                  "expected " + describeExpected(vocabulary, expected) + ", found " + found);
  }

  /// A word where a statement starts that no alternative can continue
  /// (`hash output O [2] ...`, `a b input X [2];`): ANTLR gives up on the
  /// token after it and names that one, though the word is the problem.
  static Token *strayStatementWord(antlr4::Parser *parser, Token *offending, std::exception_ptr error) {
    Token *start = nullptr;
    try {
      if (error)
        std::rethrow_exception(error);
    } catch (const antlr4::NoViableAltException &noViableAlternative) {
      start = noViableAlternative.getStartToken();
    } catch (...) {
    }
    if (!start || start == offending || start->getType() != P::IDENT || !validIndex(start->getTokenIndex()))
      return nullptr;
    antlr4::TokenStream *tokens = parser->getTokenStream();
    for (size_t i = start->getTokenIndex(); i-- > 0;) {
      Token *previous = tokens->get(i);
      if (previous->getChannel() != Token::DEFAULT_CHANNEL)
        continue;
      return previous->getType() == P::SEMI || previous->getType() == P::RBRACE ? start : nullptr;
    }
    return start; // the file's first word
  }

  /// Reports such a word: a misspelled statement keyword (with its fix-it),
  /// or a word that does not start a statement.
  void reportStrayStatementWord(Token *word) {
    const SourceRange range = rangeOf(word);
    if (!reported_.insert(range.begin).second)
      return;
    lastErrorToken_ = word->getTokenIndex();
    const std::string text = word->getText();
    if (auto match = closestMatch(text, {"const", "input", "hidden", "output", "share"})) {
      withFixIt(diags_.report(DiagId::MisspelledKeyword, range, text, *match), range, *match);
      return;
    }
    diags_.report(DiagId::UnknownStatement, range, text,
                  "'const', 'input', 'hidden', 'output', 'share' or ';'");
  }

  static bool statementEndsBetween(antlr4::Parser *parser, size_t from, size_t to) {
    antlr4::TokenStream *tokens = parser->getTokenStream();
    for (size_t i = from; i < to; ++i) {
      size_t type = tokens->get(i)->getType();
      if (type == P::SEMI || type == P::RBRACE)
        return true;
    }
    return false;
  }

  SourceRange rangeOf(Token *token) const { return tokenRange(token, fileSize_); }

private:
  DiagnosticEngine &diags_;
  uint32_t fileSize_;
  std::set<uint32_t> reported_;
  std::optional<size_t> lastErrorToken_; // token index of the last unrepaired syntax error
};

/// ANTLR's recovery, tuned for Net#: an identifier where a keyword was
/// expected and that is a misspelling of it (`max Pool`, `response Norm`) is
/// taken as that keyword after one diagnostic, and a statement keyword is
/// never deleted as "extraneous" (a missing `;` before it is inserted instead).
class NetSharpErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  Token *recoverInline(antlr4::Parser *recognizer) override {
    Token *current = recognizer->getCurrentToken();
    if (current && current->getType() == P::IDENT) {
      const auto &vocabulary = recognizer->getVocabulary();
      for (size_t type : recognizer->getExpectedTokens().toList()) {
        std::string literal = vocabulary.getLiteralName(type);
        if (literal.size() < 3 || !std::isalpha(static_cast<unsigned char>(literal[1])))
          continue;
        literal = literal.substr(1, literal.size() - 2);
        if (!closestMatch(current->getText(), {literal}))
          continue;
        if (!inErrorRecoveryMode(recognizer)) {
          beginErrorCondition(recognizer);
          recognizer->notifyErrorListeners(current, "misspelled keyword", nullptr);
        }
        if (auto *token = dynamic_cast<ArrayToken *>(current))
          token->setType(type);
        reportMatch(recognizer);
        recognizer->consume();
        return current;
      }
    }
    return DefaultErrorStrategy::recoverInline(recognizer);
  }

protected:
  Token *singleTokenDeletion(antlr4::Parser *recognizer) override {
    switch (recognizer->getCurrentToken()->getType()) {
    case P::CONST:
    case P::INPUT:
    case P::HIDDEN_LAYER:
    case P::OUTPUT:
    case P::SHARE: return nullptr;
    default: return DefaultErrorStrategy::singleTokenDeletion(recognizer);
    }
  }
};

/// Converts lexed tokens to TokenInfos and reports stray characters (with
/// invalid UTF-8 named as such) and unterminated comments.
std::vector<TokenInfo> describeTokens(const SourceFile &file, const std::vector<LexedToken> &tokens,
                                      DiagnosticEngine &diags) {
  std::vector<TokenInfo> out;
  out.reserve(tokens.size());
  auto shownCharacter = [&](const LexedToken &t) {
    std::string text(file.slice({t.begin, t.end}));
    auto first = static_cast<unsigned char>(text[0]);
    if (text.size() == 1 && (first >= 0x80 || !std::isprint(first)))
      return fmt::format("\\x{:02X}", first);
    return text;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const LexedToken &token = tokens[i];
    SourceRange range{token.begin, token.end};
    if (isErrorToken(token.type)) {
      // A run of adjacent stray characters is one problem, not one per byte.
      size_t last = i;
      while (last + 1 < tokens.size() && isErrorToken(tokens[last + 1].type) &&
             tokens[last + 1].begin == tokens[last].end)
        ++last;
      if (last == i) {
        Diagnostic &d = diags.report(DiagId::UnexpectedCharacter, range, shownCharacter(token));
        if (token.end - token.begin == 1 && static_cast<unsigned char>(file.text()[token.begin]) >= 0x80)
          d.message += " (not valid UTF-8)";
      } else {
        diags.report(DiagId::UnexpectedCharacters, {token.begin, tokens[last].end}, last - i + 1,
                     shownCharacter(token));
      }
      for (size_t k = i; k <= last; ++k)
        out.push_back({categoryOf(tokens[k].type),
                       static_cast<uint16_t>(tokens[k].type),
                       {tokens[k].begin, tokens[k].end}});
      i = last;
      continue;
    }
    if (isUnterminatedCommentToken(token.type)) {
      diags.report(DiagId::UnterminatedComment, {range.begin, range.begin + 2});
    }
    if (isHashCommentToken(token.type)) {
      const SourceRange hash{range.begin, range.begin + 1};
      withFixIt(diags.report(DiagId::HashComment, hash), hash, "//");
    }
    out.push_back({categoryOf(token.type), static_cast<uint16_t>(token.type), range});
  }
  return out;
}

/// The parser and the AST walkers recurse once per nesting level; a bound on
/// the nesting keeps hostile input from exhausting the stack. The estimate
/// counts, per bracket level, the operators since the last separator.
constexpr size_t kMaxNesting = 1000;

std::optional<SourceRange> findExcessiveNesting(const std::vector<LexedToken> &tokens) {
  std::vector<size_t> opsPerLevel(1, 0);
  size_t total = 1;
  for (const LexedToken &token : tokens) {
    if (token.hidden)
      continue;
    switch (token.type) {
    case P::LPAREN:
    case P::LBRACK:
      opsPerLevel.push_back(0);
      ++total;
      break;
    case P::RPAREN:
    case P::RBRACK:
      if (opsPerLevel.size() > 1) {
        total -= opsPerLevel.back() + 1;
        opsPerLevel.pop_back();
      }
      break;
    case P::COMMA:
    case P::SEMI:
    case P::LBRACE:
    case P::RBRACE:
    case P::ASSIGN:
    case P::ARROW:
      total -= opsPerLevel.back();
      opsPerLevel.back() = 0;
      break;
    case P::OR:
    case P::AND:
    case P::EQ:
    case P::NE:
    case P::LT:
    case P::LE:
    case P::GT:
    case P::GE:
    case P::PLUS:
    case P::MINUS:
    case P::MUL:
    case P::DIV:
    case P::MOD:
    case P::POW:
    case P::NOT:
      ++opsPerLevel.back();
      ++total;
      break;
    default: break;
    }
    if (total > kMaxNesting)
      return SourceRange{token.begin, token.end};
  }
  return std::nullopt;
}

} // namespace

const std::vector<std::string_view> &statementKeywords() {
  static const std::vector<std::string_view> words = {"const", "input", "hidden", "output", "share"};
  return words;
}

std::vector<TokenInfo> lexTokens(const SourceFile &file, DiagnosticEngine &diags) {
  return describeTokens(file, lexSource(file.text()), diags);
}

ParseResult parseProgram(const SourceFile &file, DiagnosticEngine &diags, size_t foldTuplesFrom) {
  ParseResult result;
  // Binary data (an executable, an image, random bytes) is one error, not
  // millions: a NUL byte in the first 8 KiB, the rule of grep and git.
  const std::string_view head = std::string_view(file.text()).substr(0, 8192);
  if (size_t nul = head.find('\0'); nul != std::string_view::npos) {
    const uint32_t offset = static_cast<uint32_t>(nul);
    diags.report(DiagId::NotNetSharpText, {offset, offset + 1}, offset);
    return result;
  }
  std::vector<LexedToken> lexed = lexSource(file.text());
  result.tokens = describeTokens(file, lexed, diags);
  for (const TokenInfo &token : result.tokens)
    if (token.category == TokenInfo::Category::Comment)
      result.program.comments.push_back({token.range, token.kind() != "LINE_COMMENT"});
  if (diags.errorLimitReached())
    return result; // the lexical errors alone passed the limit
  if (auto deep = findExcessiveNesting(lexed)) {
    diags.report(DiagId::NestingTooDeep, *deep, kMaxNesting);
    return result;
  }

  foldNumberTuples(lexed, foldTuplesFrom);
  TokenArrayStream tokens(file.text(), lexed, file.name());
  lexed = {}; // the stream holds its own copy: free this one before parsing
  NetSharpParser parser(&tokens);
  parser.removeErrorListeners();

  // Stage 1: fast SLL prediction, one statement at a time, bailing out at the
  // first syntax error. Each statement's parse tree is turned into AST and
  // freed before the next, so memory stays small on huge files.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  std::vector<ast::Comment> comments = std::move(result.program.comments);
  DiagnosticEngine stageDiags; // kept only if the fast stage succeeds
  AstBuilder fastBuilder(stageDiags, file.size());
  bool parsed = true;
  try {
    while (tokens.LA(1) != Token::EOF) {
      fastBuilder.addStatement(parser.statement(), result.program);
      parser.getTreeTracker().reset();
    }
  } catch (const antlr4::ParseCancellationException &) {
    parsed = false;
  }
  parser.getTreeTracker().reset();
  if (parsed) {
    diags.absorb(std::move(stageDiags));
  } else {
    // Stage 2: the whole file again with full LL, error recovery and reporting.
    result.program = ast::Program{};
    tokens.seek(0);
    parser.reset();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    parser.setErrorHandler(std::make_shared<NetSharpErrorStrategy>());
    SyntaxErrorListener listener(diags, file.size());
    parser.addErrorListener(&listener);
    P::ProgramContext *tree = nullptr;
    try {
      tree = parser.program();
    } catch (const ErrorLimitReached &) {
      tree = nullptr; // NS0107 says so; what parsed so far is dropped
    } catch (const std::exception &e) {
      diags.report(DiagId::SyntaxError, {file.size(), file.size()},
                   std::string("the parser gave up: ") + e.what());
      tree = nullptr;
    }
    AstBuilder builder(diags, file.size());
    result.program = builder.build(tree);
    parser.removeErrorListeners();
  }
  result.program.comments = std::move(comments);
  return result;
}

} // namespace netc
