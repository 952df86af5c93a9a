// Sema.h -- semantic analysis: resolves names (layers, consts, bundle
// sources, share items), evaluates consts, shapes and attributes, checks
// types, and lowers the AST into the network IR. Whole-network rules
// (geometry, structure, defaults, share, counts) are passes over the IR.
#pragma once

#include "frontend/Ast.h"
#include "ir/CompileOptions.h"
#include "ir/Network.h"
#include "support/DiagnosticEngine.h"

#include <string>
#include <utility>
#include <vector>

namespace netc {

class ConstEvaluator;

/// Lowers a parsed program to IR. Always returns a network; problems are
/// reported to `diags`, and invalid pieces are marked so passes skip them.
ir::Network analyzeProgram(const ast::Program &program, std::string networkName,
                           const CompileOptions &options, DiagnosticEngine &diags);

/// Compiles a `where` lambda into a predicate over coordinates of the given
/// ranks; nothing (after reporting) when it is invalid.
std::shared_ptr<ir::Predicate> compilePredicate(const ast::Lambda &lambda, size_t srcRank, size_t dstRank,
                                                ConstEvaluator &consts, DiagnosticEngine &diags);

} // namespace netc
