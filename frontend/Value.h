// Value.h -- the value of a Net# constant expression (D2): an integer, a
// real, a boolean or a flat tuple of those, plus the typing rules shared by
// const evaluation and predicate compilation, so both agree on every operator.
#pragma once

#include "frontend/Ast.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netc {

enum class ValueType { Error, Int, Real, Bool, Tuple };

struct Value {
  ValueType type = ValueType::Error;
  int64_t i = 0;            // Int, Bool (0/1)
  double r = 0;             // Real
  std::vector<Value> items; // Tuple (scalars only)
  SourceRange range;

  static Value error(SourceRange range) { return Value{ValueType::Error, 0, 0, {}, range}; }
  static Value ofInt(int64_t v, SourceRange range) { return Value{ValueType::Int, v, 0, {}, range}; }
  static Value ofReal(double v, SourceRange range) { return Value{ValueType::Real, 0, v, {}, range}; }
  static Value ofBool(bool v, SourceRange range) { return Value{ValueType::Bool, v ? 1 : 0, 0, {}, range}; }

  bool isError() const { return type == ValueType::Error; }
  bool isNumber() const { return type == ValueType::Int || type == ValueType::Real; }
  double asReal() const { return type == ValueType::Int ? static_cast<double>(i) : r; }
  /// Printable value, e.g. "[5, 13, 13]" or "0.75".
  std::string toString() const;
};

/// "an integer", "a real", "a boolean", "a tuple".
std::string describeType(ValueType type);
/// The operands of a binary operator for messages: "two integers", "a real and a boolean".
std::string describeOperands(ValueType lhs, ValueType rhs);

/// The result type of a unary or binary operator on the given operand types,
/// or nothing when the operator does not apply (D2).
std::optional<ValueType> unaryResultType(ast::Op op, ValueType operand);
std::optional<ValueType> binaryResultType(ast::Op op, ValueType lhs, ValueType rhs);

} // namespace netc
