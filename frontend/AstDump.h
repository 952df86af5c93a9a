// AstDump.h -- text dumps of the token stream and the AST, with locations,
// for `netc compile --emit=tokens|ast` and golden tests.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Parser.h"
#include "support/SourceFile.h"

#include <string>
#include <vector>

namespace netc {

std::string dumpAst(const ast::Program &program, const SourceFile &file);
std::string dumpTokens(const std::vector<TokenInfo> &tokens, const SourceFile &file);

} // namespace netc
