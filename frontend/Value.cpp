// Value.cpp -- printing of values and the operator typing rules (D2).
#include "frontend/Value.h"

#include <fmt/format.h>

namespace netc {

std::string Value::toString() const {
  switch (type) {
  case ValueType::Error: return "<error>";
  case ValueType::Int: return std::to_string(i);
  case ValueType::Real: return fmt::format("{}", r);
  case ValueType::Bool: return i ? "true" : "false";
  case ValueType::Tuple: {
    std::string out = "[";
    for (size_t k = 0; k < items.size(); ++k) {
      if (k)
        out += ", ";
      if (k == 16 && items.size() > 20) {
        out += fmt::format("... ({} values)", items.size());
        break;
      }
      out += items[k].toString();
    }
    return out + "]";
  }
  }
  return "?";
}

std::string describeType(ValueType type) {
  switch (type) {
  case ValueType::Error: return "an invalid value";
  case ValueType::Int: return "an integer";
  case ValueType::Real: return "a real";
  case ValueType::Bool: return "a boolean";
  case ValueType::Tuple: return "a tuple";
  }
  return "a value";
}

std::string describeOperands(ValueType lhs, ValueType rhs) {
  if (lhs != rhs)
    return describeType(lhs) + " and " + describeType(rhs);
  switch (lhs) {
  case ValueType::Int: return "two integers";
  case ValueType::Real: return "two reals";
  case ValueType::Bool: return "two booleans";
  case ValueType::Tuple: return "two tuples";
  case ValueType::Error: break;
  }
  return "two invalid values";
}

static bool isNumber(ValueType t) {
  return t == ValueType::Int || t == ValueType::Real;
}

std::optional<ValueType> unaryResultType(ast::Op op, ValueType operand) {
  if (op == ast::Op::Neg && isNumber(operand))
    return operand;
  if (op == ast::Op::Not && operand == ValueType::Bool)
    return ValueType::Bool;
  return std::nullopt;
}

std::optional<ValueType> binaryResultType(ast::Op op, ValueType lhs, ValueType rhs) {
  switch (op) {
  case ast::Op::Add:
  case ast::Op::Sub:
  case ast::Op::Mul:
  case ast::Op::Div:
  case ast::Op::Mod:
  case ast::Op::Pow:
    if (!isNumber(lhs) || !isNumber(rhs))
      return std::nullopt;
    return lhs == ValueType::Int && rhs == ValueType::Int ? ValueType::Int : ValueType::Real;
  case ast::Op::Lt:
  case ast::Op::Le:
  case ast::Op::Gt:
  case ast::Op::Ge:
    if (!isNumber(lhs) || !isNumber(rhs))
      return std::nullopt;
    return ValueType::Bool;
  case ast::Op::Eq:
  case ast::Op::Ne:
    if ((isNumber(lhs) && isNumber(rhs)) || (lhs == ValueType::Bool && rhs == ValueType::Bool))
      return ValueType::Bool;
    return std::nullopt;
  case ast::Op::And:
  case ast::Op::Or:
    if (lhs == ValueType::Bool && rhs == ValueType::Bool)
      return ValueType::Bool;
    return std::nullopt;
  default: return std::nullopt;
  }
}

} // namespace netc
