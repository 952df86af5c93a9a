// ParseTreeToAst.h -- builds the AST from the ANTLR parse tree of a program
// or of one statement. Internal to the front end (it sees ANTLR types);
// Parser.cpp drives it.
#pragma once

#include "NetSharpParser.h"
#include "antlr4-runtime.h"
#include "frontend/Ast.h"
#include "support/DiagnosticEngine.h"

#include <memory>

namespace netc {

/// Whether a token index or offset from ANTLR is real (tokens ANTLR conjures
/// while recovering have none).
inline bool validIndex(size_t index) {
  return index != INVALID_INDEX && index < (size_t{1} << 31);
}

/// The byte range of a token (indices are byte offsets in TokenArrayStream;
/// stop is inclusive); a conjured token gets the end of the file.
SourceRange tokenRange(antlr4::Token *token, uint32_t fileSize);

/// Turns parse trees into AST. Every accessor of the generated contexts may
/// return null after error recovery, so every step checks; misspellings the
/// grammar tolerates (keywords, bundle kinds, shapes) are reported here.
class AstBuilder {
public:
  AstBuilder(DiagnosticEngine &diags, uint32_t fileSize);
  ~AstBuilder();

  /// The AST of a whole program (the error-recovering parse).
  ast::Program build(NetSharpParser::ProgramContext *program);
  /// Appends one statement's AST (the statement-at-a-time parse).
  void addStatement(NetSharpParser::StatementContext *statement, ast::Program &out);

private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace netc
