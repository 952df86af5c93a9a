// ConstEvaluator.h -- evaluates Net# constant expressions (D2, D12): consts
// may be used before they are defined; cycles, redefinitions, overflow,
// division by zero and type errors are located diagnostics. Error values
// propagate silently so one mistake is reported once.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Value.h"
#include "support/DiagnosticEngine.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace netc {

class ConstEvaluator {
public:
  explicit ConstEvaluator(DiagnosticEngine &diags) : diags_(diags) {}

  /// Registers a const; a second definition of a name is reported.
  void declare(const ast::ConstItem &item);
  bool isDeclared(std::string_view name) const;
  /// Where a const's name was written (for notes).
  SourceRange declaration(std::string_view name) const;
  std::vector<std::string_view> names() const;
  /// Evaluates every declared const once (so errors in unused consts are
  /// reported too), without copying any value.
  void evaluateAll();

  /// Evaluates an expression in const context.
  Value evaluate(const ast::Expr &expr);
  /// The value of a declared const (evaluated on first use).
  Value valueOf(std::string_view name, SourceRange useRange);

private:
  enum class State { Unvisited, InProgress, Done };
  struct Entry {
    const ast::ConstItem *item = nullptr;
    State state = State::Unvisited;
    Value value;
  };

  /// Evaluates every declared const, dependencies first (see the .cpp).
  void evaluateInDependencyOrder();
  /// The value of const `name`, evaluated on first use, without a copy (a
  /// tuple const may hold millions of items); an error value when it is
  /// undeclared or on a cycle closed at `useRange`.
  const Value &resolved(std::string_view name, SourceRange useRange);
  Value evalName(const ast::Expr &e);
  Value evalIndex(const ast::Expr &e);
  Value evalCall(const ast::Expr &e);
  Value evalUnary(const ast::Expr &e);
  Value evalBinary(const ast::Expr &e);
  Value evalTuple(const ast::Expr &e);

  DiagnosticEngine &diags_;
  std::unordered_map<std::string, Entry> consts_;
  std::vector<std::string> order_;
  std::vector<std::string> evaluating_; // the chain of consts being evaluated
  bool ordered_ = false;                // evaluateInDependencyOrder() has run
};

/// Applies a binary operator to two scalar values of the types that
/// binaryResultType accepts, with D2's checked semantics. Errors are
/// reported at `range` (the operator expression).
Value applyBinary(ast::Op op, const Value &lhs, const Value &rhs, SourceRange range, DiagnosticEngine &diags);
Value applyUnary(ast::Op op, const Value &operand, SourceRange range, DiagnosticEngine &diags);

/// The number of arguments of a callable function (abs: 1; min, max: 2). For
/// an unknown name, or a call with the wrong number of arguments, reports
/// the error and returns nothing.
std::optional<size_t> checkCall(const ast::Expr &call, DiagnosticEngine &diags);

} // namespace netc
