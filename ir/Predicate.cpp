// Predicate.cpp -- evaluation and printing of compiled `where` predicates.
// Integer arithmetic is checked (D2): overflow and division by zero fail the
// evaluation with the offending node, so the caller can report it located.
#include "ir/Predicate.h"

#include "support/CheckedMath.h"

#include <cmath>
#include <fmt/format.h>

namespace netc::ir {

using Op = PredicateNode::Op;

Predicate::Result Predicate::evaluate(std::span<const int64_t> src, std::span<const int64_t> dst) const {
  Result result;
  PredValue value;
  if (root < 0 || !eval(root, src, dst, value, result)) {
    result.ok = false;
    return result;
  }
  result.value = value.i != 0;
  return result;
}

bool Predicate::eval(int index, std::span<const int64_t> src, std::span<const int64_t> dst, PredValue &out,
                     Result &result) const {
  const PredicateNode &n = nodes[static_cast<size_t>(index)];
  auto fail = [&](std::string why) {
    result.failedNode = index;
    result.problem = std::move(why);
    return false;
  };
  switch (n.op) {
  case Op::ConstInt:
  case Op::ConstBool: out.i = n.intValue; return true;
  case Op::ConstReal: out.r = n.realValue; return true;
  case Op::SrcCoord:
    out.i = static_cast<size_t>(n.intValue) < src.size() ? src[static_cast<size_t>(n.intValue)] : 0;
    return true;
  case Op::DstCoord:
    out.i = static_cast<size_t>(n.intValue) < dst.size() ? dst[static_cast<size_t>(n.intValue)] : 0;
    return true;
  default: break;
  }
  PredValue a, b;
  if (!eval(n.lhs, src, dst, a, result))
    return false;
  const PredType operandType = nodes[static_cast<size_t>(n.lhs)].type;
  // Short-circuit logic before evaluating the right side.
  if (n.op == Op::And && a.i == 0) {
    out.i = 0;
    return true;
  }
  if (n.op == Op::Or && a.i != 0) {
    out.i = 1;
    return true;
  }
  if (n.rhs >= 0 && !eval(n.rhs, src, dst, b, result))
    return false;
  const bool real = operandType == PredType::Real;
  auto intResult = [&](std::optional<int64_t> r) {
    if (!r)
      return fail("integer overflow");
    out.i = *r;
    return true;
  };
  auto realResult = [&](double r) {
    if (!std::isfinite(r))
      return fail("the result is not a finite number");
    out.r = r;
    return true;
  };
  switch (n.op) {
  case Op::IntToReal: out.r = static_cast<double>(a.i); return true;
  case Op::Neg: return real ? realResult(-a.r) : intResult(checkedSub(0, a.i));
  case Op::Not: out.i = a.i == 0; return true;
  case Op::Abs: return real ? realResult(std::fabs(a.r)) : intResult(a.i < 0 ? checkedSub(0, a.i) : a.i);
  case Op::Add: return real ? realResult(a.r + b.r) : intResult(checkedAdd(a.i, b.i));
  case Op::Sub: return real ? realResult(a.r - b.r) : intResult(checkedSub(a.i, b.i));
  case Op::Mul: return real ? realResult(a.r * b.r) : intResult(checkedMul(a.i, b.i));
  case Op::Div:
    if (real)
      return b.r == 0 ? fail("division by zero") : realResult(a.r / b.r);
    if (b.i == 0)
      return fail("division by zero");
    if (a.i == INT64_MIN && b.i == -1)
      return fail("integer overflow");
    out.i = a.i / b.i;
    return true;
  case Op::Mod:
    if (real)
      return b.r == 0 ? fail("division by zero") : realResult(std::fmod(a.r, b.r));
    if (b.i == 0)
      return fail("division by zero");
    out.i = b.i == -1 ? 0 : a.i % b.i;
    return true;
  case Op::Pow:
    if (real)
      return realResult(std::pow(a.r, b.r));
    if (b.i < 0)
      return fail("negative exponent in an integer power");
    return intResult(checkedPow(a.i, b.i));
  case Op::Min:
    if (real)
      out.r = std::fmin(a.r, b.r);
    else
      out.i = std::min(a.i, b.i);
    return true;
  case Op::Max:
    if (real)
      out.r = std::fmax(a.r, b.r);
    else
      out.i = std::max(a.i, b.i);
    return true;
  case Op::Lt: out.i = real ? a.r < b.r : a.i < b.i; return true;
  case Op::Le: out.i = real ? a.r <= b.r : a.i <= b.i; return true;
  case Op::Gt: out.i = real ? a.r > b.r : a.i > b.i; return true;
  case Op::Ge: out.i = real ? a.r >= b.r : a.i >= b.i; return true;
  case Op::Eq: out.i = real ? a.r == b.r : a.i == b.i; return true;
  case Op::Ne: out.i = real ? a.r != b.r : a.i != b.i; return true;
  case Op::And:
  case Op::Or: out.i = b.i != 0; return true;
  default: return fail("malformed predicate");
  }
}

std::string Predicate::toString() const {
  return root < 0 ? "<invalid>" : nodeToString(root);
}

std::string Predicate::nodeToString(int index) const {
  const PredicateNode &n = nodes[static_cast<size_t>(index)];
  auto binary = [&](const char *op) {
    return "(" + nodeToString(n.lhs) + " " + op + " " + nodeToString(n.rhs) + ")";
  };
  switch (n.op) {
  case Op::ConstInt: return std::to_string(n.intValue);
  case Op::ConstReal: return fmt::format("{}", n.realValue);
  case Op::ConstBool: return n.intValue ? "true" : "false";
  case Op::SrcCoord: return fmt::format("s[{}]", n.intValue);
  case Op::DstCoord: return fmt::format("d[{}]", n.intValue);
  case Op::IntToReal: return nodeToString(n.lhs);
  case Op::Neg: return "-" + nodeToString(n.lhs);
  case Op::Not: return "!" + nodeToString(n.lhs);
  case Op::Abs: return "abs(" + nodeToString(n.lhs) + ")";
  case Op::Min: return "min(" + nodeToString(n.lhs) + ", " + nodeToString(n.rhs) + ")";
  case Op::Max: return "max(" + nodeToString(n.lhs) + ", " + nodeToString(n.rhs) + ")";
  case Op::Add: return binary("+");
  case Op::Sub: return binary("-");
  case Op::Mul: return binary("*");
  case Op::Div: return binary("/");
  case Op::Mod: return binary("%");
  case Op::Pow: return binary("^");
  case Op::Lt: return binary("<");
  case Op::Le: return binary("<=");
  case Op::Gt: return binary(">");
  case Op::Ge: return binary(">=");
  case Op::Eq: return binary("==");
  case Op::Ne: return binary("!=");
  case Op::And: return binary("&&");
  case Op::Or: return binary("||");
  }
  return "?";
}

} // namespace netc::ir
