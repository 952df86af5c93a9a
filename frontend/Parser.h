// Parser.h -- the front end's entry to the ANTLR-generated lexer and parser:
// text in, AST (and the token list) out, with every lexical and syntax problem
// reported as a located diagnostic. ANTLR types never leave Parser.cpp.
#pragma once

#include "frontend/Ast.h"
#include "support/DiagnosticEngine.h"
#include "support/SourceFile.h"

#include <string>
#include <vector>

namespace netc {

/// A lexed token, comments included (for dumps and the formatter).
struct TokenInfo {
  enum class Category { Keyword, Function, Identifier, Integer, Real, Punctuation, Comment, Error };
  std::string_view kind; // e.g. "HIDDEN", "IDENT", "LINE_COMMENT" (static storage)
  Category category = Category::Punctuation;
  SourceRange range;
};

struct ParseResult {
  ast::Program program;
  std::vector<TokenInfo> tokens; // every token but whitespace and EOF
};

/// Lexes and parses one file. Always returns a program (possibly partial);
/// problems go to `diags`.
ParseResult parseProgram(const SourceFile &file, DiagnosticEngine &diags);

/// Lexes only (for `netc compile --emit=tokens`); lexical problems go to diags.
std::vector<TokenInfo> lexTokens(const SourceFile &file, DiagnosticEngine &diags);

/// The keyword spellings of the language (D1), for suggestions and tools.
const std::vector<std::string_view> &statementKeywords();

} // namespace netc
