// Formatter.h -- `netc fmt`: prints a program in canonical layout (block
// style, two-space indent, one statement per line), keeping every comment
// and at most one blank line where the user left some. Formatting never
// changes meaning: the IR of the output equals the IR of the input.
#pragma once

#include "frontend/Ast.h"
#include "support/SourceFile.h"

#include <string>

namespace netc {

/// Formats a program that parsed without errors.
std::string formatProgram(const ast::Program &program, const SourceFile &file);

} // namespace netc
