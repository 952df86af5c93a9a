// Parser.h -- the front end's entry to the ANTLR-generated lexer and parser:
// text in, AST (and the token list) out, with every lexical and syntax problem
// reported as a located diagnostic. ANTLR types never leave Parser.cpp.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Lexer.h"
#include "support/DiagnosticEngine.h"
#include "support/SourceFile.h"

#include <string>
#include <vector>

namespace netc {

/// A lexed token, comments included (for dumps and the formatter).
struct TokenInfo {
  enum class Category : uint8_t { Keyword, Function, Identifier, Integer, Real, Punctuation, Comment, Error };
  Category category = Category::Punctuation;
  uint16_t type = 0; // NetSharpLexer token type
  SourceRange range;
  /// The type's name, e.g. "HIDDEN", "IDENT", "LINE_COMMENT" (12 bytes a
  /// token instead of 32: a file may have millions).
  std::string_view kind() const { return tokenTypeName(type); }
};

struct ParseResult {
  ast::Program program;
  std::vector<TokenInfo> tokens; // every token but whitespace and EOF
};

/// Lexes and parses one file. Always returns a program (possibly partial);
/// problems go to `diags`.
/// Tuples of `foldTuplesFrom` plain numbers or more are parsed through one
/// NUMBER_LIST token (Lexer.h); the AST is the same either way.
ParseResult parseProgram(const SourceFile &file, DiagnosticEngine &diags,
                         size_t foldTuplesFrom = kFoldNumberTuplesFrom);

/// Lexes only (for `netc compile --emit=tokens`); lexical problems go to diags.
std::vector<TokenInfo> lexTokens(const SourceFile &file, DiagnosticEngine &diags);

/// The keyword spellings of the language (D1), for suggestions and tools.
const std::vector<std::string_view> &statementKeywords();

} // namespace netc
