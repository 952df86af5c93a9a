// ConstEvaluator.cpp -- const declaration, lazy evaluation with cycle
// detection, and the checked arithmetic of D2.
#include "frontend/ConstEvaluator.h"

#include "support/CheckedMath.h"
#include "support/Spelling.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace netc {

void ConstEvaluator::declare(const ast::ConstItem &item) {
  auto [it, inserted] = consts_.try_emplace(item.name.text);
  if (!inserted) {
    Diagnostic &d = diags_.report(DiagId::ConstRedefinition, item.name.range, item.name.text);
    withNote(d, it->second.item->name.range, "previous definition is here");
    return;
  }
  it->second.item = &item;
  order_.push_back(item.name.text);
  ordered_ = false; // the next evaluation orders the new const in too
}

bool ConstEvaluator::isDeclared(std::string_view name) const {
  return consts_.count(std::string(name)) > 0;
}

SourceRange ConstEvaluator::declaration(std::string_view name) const {
  auto it = consts_.find(std::string(name));
  return it == consts_.end() ? SourceRange{} : it->second.item->name.range;
}

std::vector<std::string_view> ConstEvaluator::names() const {
  return std::vector<std::string_view>(order_.begin(), order_.end());
}

void ConstEvaluator::evaluateAll() {
  for (const std::string &name : order_)
    resolved(name, declaration(name));
}

namespace {
/// The declared consts an expression names, with where it names them, in
/// the order evaluation meets them.
void collectUses(const ast::Expr &e, const std::unordered_map<std::string, size_t> &index,
                 std::vector<std::pair<size_t, SourceRange>> &uses) {
  if (e.kind == ast::ExprKind::Name || e.kind == ast::ExprKind::Index) {
    auto it = index.find(e.text);
    if (it != index.end())
      uses.emplace_back(it->second, e.kind == ast::ExprKind::Name ? e.range : e.nameRange);
  }
  for (const ast::ExprPtr &child : e.operands)
    if (child)
      collectUses(*child, index, uses);
}
} // namespace

void ConstEvaluator::evaluateInDependencyOrder() {
  ordered_ = true;
  // Depth-first search over "uses" edges without recursion: a chain of
  // thousands of consts must not exhaust the stack. Cycles are reported
  // here, at the use that closes them; the rest is then evaluated in
  // post-order, so evaluating a const never recurses into another.
  const size_t n = order_.size();
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i)
    index.emplace(order_[i], i);
  std::vector<std::vector<std::pair<size_t, SourceRange>>> uses(n);
  for (size_t i = 0; i < n; ++i)
    if (const ast::ConstItem *item = consts_[order_[i]].item; item && item->value)
      collectUses(*item->value, index, uses[i]);
  enum class Mark { White, Grey, Black };
  std::vector<Mark> mark(n, Mark::White);
  std::vector<size_t> postOrder;
  struct Frame {
    size_t node;
    size_t next;
  };
  for (size_t root = 0; root < n; ++root) {
    if (mark[root] != Mark::White)
      continue;
    std::vector<Frame> stack{{root, 0}};
    mark[root] = Mark::Grey;
    while (!stack.empty()) {
      Frame &top = stack.back();
      if (top.next == uses[top.node].size()) {
        mark[top.node] = Mark::Black;
        postOrder.push_back(top.node);
        stack.pop_back();
        continue;
      }
      auto [used, where] = uses[top.node][top.next++];
      if (mark[used] == Mark::White) {
        mark[used] = Mark::Grey;
        stack.push_back({used, 0});
      } else if (mark[used] == Mark::Grey && consts_[order_[used]].state != State::Done) {
        // A cycle: the frames from `used` to the top.
        size_t start = stack.size() - 1;
        while (stack[start].node != used)
          --start;
        Diagnostic &d = diags_.report(DiagId::ConstCycle, where, order_[used]);
        for (size_t k = start; k < stack.size(); ++k) {
          size_t next = k + 1 < stack.size() ? stack[k + 1].node : used;
          withNote(d, consts_[order_[stack[k].node]].item->name.range,
                   fmt::format("'{}' is defined here and uses '{}'", order_[stack[k].node], order_[next]));
        }
        for (size_t k = start; k < stack.size(); ++k) {
          Entry &e = consts_[order_[stack[k].node]];
          e.state = State::Done;
          e.value = Value::error(e.item->name.range);
        }
      }
    }
  }
  for (size_t i : postOrder)
    resolved(order_[i], declaration(order_[i]));
}

Value ConstEvaluator::valueOf(std::string_view name, SourceRange useRange) {
  Value v = resolved(name, useRange);
  v.range = useRange;
  return v;
}

const Value &ConstEvaluator::resolved(std::string_view name, SourceRange useRange) {
  static const Value kError = Value::error({});
  if (!ordered_)
    evaluateInDependencyOrder();
  auto it = consts_.find(std::string(name));
  if (it == consts_.end())
    return kError;
  Entry &entry = it->second;
  if (entry.state == State::Done)
    return entry.value;
  if (entry.state == State::InProgress) {
    // A cycle: report it once, at the use that closes it, with a note per link.
    Diagnostic &d = diags_.report(DiagId::ConstCycle, useRange, std::string(name));
    auto start = std::find(evaluating_.begin(), evaluating_.end(), std::string(name));
    for (auto link = start; link != evaluating_.end(); ++link) {
      const Entry &e = consts_[*link];
      auto next = std::next(link) == evaluating_.end() ? std::string(name) : *std::next(link);
      withNote(d, e.item->name.range, fmt::format("'{}' is defined here and uses '{}'", *link, next));
    }
    // Every const on the cycle becomes an error value without further reports.
    for (auto link = start; link != evaluating_.end(); ++link) {
      Entry &e = consts_[*link];
      e.state = State::Done;
      e.value = Value::error(e.item->name.range);
    }
    return kError;
  }
  entry.state = State::InProgress;
  evaluating_.push_back(std::string(name));
  Value v = entry.item->value ? evaluate(*entry.item->value) : Value::error(useRange);
  evaluating_.pop_back();
  Entry &after = consts_[std::string(name)];
  if (after.state == State::InProgress) { // not already marked as part of a cycle
    after.state = State::Done;
    after.value = std::move(v);
  }
  return after.value;
}

Value ConstEvaluator::evaluate(const ast::Expr &e) {
  if (!ordered_)
    evaluateInDependencyOrder();
  switch (e.kind) {
  case ast::ExprKind::Int: return Value::ofInt(e.intValue, e.range);
  case ast::ExprKind::Real: return Value::ofReal(e.realValue, e.range);
  case ast::ExprKind::Bool: return Value::ofBool(e.intValue != 0, e.range);
  case ast::ExprKind::Name: return evalName(e);
  case ast::ExprKind::Index: return evalIndex(e);
  case ast::ExprKind::Call: return evalCall(e);
  case ast::ExprKind::Unary: return evalUnary(e);
  case ast::ExprKind::Binary: return evalBinary(e);
  case ast::ExprKind::Paren: {
    Value v = evaluate(*e.operands[0]);
    v.range = e.range;
    return v;
  }
  case ast::ExprKind::Tuple: return evalTuple(e);
  case ast::ExprKind::Error: break;
  }
  return Value::error(e.range);
}

Value ConstEvaluator::evalName(const ast::Expr &e) {
  if (isDeclared(e.text))
    return valueOf(e.text, e.range);
  // `True`/`FALSE`: a wrongly cased boolean keyword (D1); recover with its value.
  if (auto keyword = closestMatch(e.text, {"true", "false"}, 0)) {
    Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, e.range, e.text, *keyword);
    withFixIt(d, e.range, *keyword);
    return Value::ofBool(*keyword == "true", e.range);
  }
  Diagnostic &d = diags_.report(DiagId::UndeclaredName, e.range, e.text);
  std::vector<std::string_view> candidates = names();
  candidates.push_back("true");
  candidates.push_back("false");
  if (auto match = closestMatch(e.text, candidates)) {
    d.message += fmt::format("; did you mean '{}'?", *match);
    withFixIt(d, e.range, *match);
  }
  return Value::error(e.range);
}

Value ConstEvaluator::evalIndex(const ast::Expr &e) {
  // A declared tuple is indexed in place, not copied for every use.
  Value named;
  if (!isDeclared(e.text)) {
    ast::Expr base;
    base.kind = ast::ExprKind::Name;
    base.text = e.text;
    base.range = e.nameRange;
    named = evalName(base);
  }
  const Value &tuple = isDeclared(e.text) ? resolved(e.text, e.nameRange) : named;
  Value index = evaluate(*e.operands[0]);
  if (tuple.isError() || index.isError())
    return Value::error(e.range);
  if (tuple.type != ValueType::Tuple) {
    diags_.report(DiagId::NotIndexable, e.nameRange, e.text, describeType(tuple.type));
    return Value::error(e.range);
  }
  if (index.type != ValueType::Int) {
    diags_.report(DiagId::TypeMismatch, index.range, "an integer index", describeType(index.type));
    return Value::error(e.range);
  }
  if (index.i < 0 || static_cast<uint64_t>(index.i) >= tuple.items.size()) {
    diags_.report(DiagId::IndexOutOfRange, index.range, index.i, tuple.items.size());
    return Value::error(e.range);
  }
  Value v = tuple.items[static_cast<size_t>(index.i)];
  v.range = e.range;
  return v;
}

std::optional<size_t> checkCall(const ast::Expr &e, DiagnosticEngine &diags) {
  size_t arity = e.text == "abs" ? 1 : (e.text == "min" || e.text == "max") ? 2 : 0;
  if (arity == 0) {
    Diagnostic &d = diags.report(DiagId::UnknownCallee, e.nameRange, e.text);
    if (auto match = closestMatch(e.text, {"abs", "min", "max"})) {
      d.message += fmt::format("; did you mean '{}'?", *match);
      withFixIt(d, e.nameRange, *match);
    }
    return std::nullopt;
  }
  if (e.operands.size() != arity) {
    diags.report(DiagId::WrongArgumentCount, e.range, e.text, arity == 1 ? "1 argument" : "2 arguments",
                 e.operands.size());
    return std::nullopt;
  }
  return arity;
}

Value ConstEvaluator::evalCall(const ast::Expr &e) {
  auto arity = checkCall(e, diags_);
  if (!arity)
    return Value::error(e.range);
  std::vector<Value> args;
  bool bad = false;
  for (const ast::ExprPtr &arg : e.operands) {
    args.push_back(evaluate(*arg));
    bad |= args.back().isError();
  }
  if (bad)
    return Value::error(e.range);
  for (const Value &a : args)
    if (!a.isNumber()) {
      diags_.report(DiagId::TypeMismatch, a.range, "a number", describeType(a.type));
      return Value::error(e.range);
    }
  if (*arity == 1) {
    const Value &x = args[0];
    if (x.type == ValueType::Real)
      return Value::ofReal(std::fabs(x.r), e.range);
    if (x.i == INT64_MIN) {
      diags_.report(DiagId::IntegerOverflow, e.range, "abs of the smallest integer");
      return Value::error(e.range);
    }
    return Value::ofInt(x.i < 0 ? -x.i : x.i, e.range);
  }
  const Value &a = args[0], &b = args[1];
  bool takeFirst = e.text == "min" ? a.asReal() <= b.asReal() : a.asReal() >= b.asReal();
  if (a.type == ValueType::Int && b.type == ValueType::Int)
    takeFirst = e.text == "min" ? a.i <= b.i : a.i >= b.i;
  Value pick = takeFirst ? a : b;
  if (a.type == ValueType::Real || b.type == ValueType::Real)
    return Value::ofReal(pick.asReal(), e.range);
  pick.range = e.range;
  return pick;
}

Value ConstEvaluator::evalUnary(const ast::Expr &e) {
  Value operand = evaluate(*e.operands[0]);
  if (operand.isError())
    return Value::error(e.range);
  return applyUnary(e.op, operand, e.range, diags_);
}

Value ConstEvaluator::evalBinary(const ast::Expr &e) {
  Value lhs = evaluate(*e.operands[0]);
  // Short-circuit: `false && x` and `true || x` do not need x (D2 logic).
  if ((e.op == ast::Op::And || e.op == ast::Op::Or) && lhs.type == ValueType::Bool &&
      (lhs.i != 0) == (e.op == ast::Op::Or))
    return Value::ofBool(lhs.i != 0, e.range);
  Value rhs = evaluate(*e.operands[1]);
  if (lhs.isError() || rhs.isError())
    return Value::error(e.range);
  return applyBinary(e.op, lhs, rhs, e.range, diags_);
}

Value ConstEvaluator::evalTuple(const ast::Expr &e) {
  Value tuple;
  tuple.type = ValueType::Tuple;
  tuple.range = e.range;
  tuple.items.reserve(e.operands.size());
  bool bad = false;
  for (const ast::ExprPtr &item : e.operands) {
    Value v = evaluate(*item);
    if (v.type == ValueType::Tuple) {
      diags_.report(DiagId::NestedTuple, v.range);
      bad = true;
    }
    bad |= v.isError();
    tuple.items.push_back(std::move(v));
  }
  if (bad)
    return Value::error(e.range);
  return tuple; // moved, not copied (a conditional expression would copy it)
}

Value applyUnary(ast::Op op, const Value &operand, SourceRange range, DiagnosticEngine &diags) {
  auto type = unaryResultType(op, operand.type);
  if (!type) {
    diags.report(DiagId::InvalidOperands, range, ast::opSpelling(op), describeType(operand.type));
    return Value::error(range);
  }
  if (op == ast::Op::Not)
    return Value::ofBool(operand.i == 0, range);
  if (operand.type == ValueType::Real)
    return Value::ofReal(-operand.r, range);
  auto negated = checkedSub(0, operand.i);
  if (!negated) {
    diags.report(DiagId::IntegerOverflow, range, fmt::format("-({})", operand.i));
    return Value::error(range);
  }
  return Value::ofInt(*negated, range);
}

Value applyBinary(ast::Op op, const Value &lhs, const Value &rhs, SourceRange range,
                  DiagnosticEngine &diags) {
  auto type = binaryResultType(op, lhs.type, rhs.type);
  if (!type) {
    std::string operands = describeOperands(lhs.type, rhs.type);
    diags.report(DiagId::InvalidOperands, range, ast::opSpelling(op), operands);
    return Value::error(range);
  }
  const bool ints = lhs.type != ValueType::Real && rhs.type != ValueType::Real;
  auto intResult = [&](std::optional<int64_t> v, const char *sym) {
    if (!v) {
      diags.report(DiagId::IntegerOverflow, range, fmt::format("{} {} {}", lhs.i, sym, rhs.i));
      return Value::error(range);
    }
    return Value::ofInt(*v, range);
  };
  auto realResult = [&](double v) {
    if (!std::isfinite(v)) {
      diags.report(DiagId::RealNotFinite, range, std::isnan(v) ? "NaN" : "an infinity");
      return Value::error(range);
    }
    return Value::ofReal(v, range);
  };
  const double a = lhs.asReal(), b = rhs.asReal();
  switch (op) {
  case ast::Op::Add: return ints ? intResult(checkedAdd(lhs.i, rhs.i), "+") : realResult(a + b);
  case ast::Op::Sub: return ints ? intResult(checkedSub(lhs.i, rhs.i), "-") : realResult(a - b);
  case ast::Op::Mul: return ints ? intResult(checkedMul(lhs.i, rhs.i), "*") : realResult(a * b);
  case ast::Op::Div:
  case ast::Op::Mod:
    if (ints ? rhs.i == 0 : b == 0) {
      diags.report(DiagId::DivisionByZero, range);
      return Value::error(range);
    }
    if (!ints)
      return realResult(op == ast::Op::Div ? a / b : std::fmod(a, b));
    if (lhs.i == INT64_MIN && rhs.i == -1)
      return op == ast::Op::Mod ? Value::ofInt(0, range) : intResult(std::nullopt, "/");
    return Value::ofInt(op == ast::Op::Div ? lhs.i / rhs.i : lhs.i % rhs.i, range);
  case ast::Op::Pow:
    if (ints) {
      if (rhs.i < 0) {
        diags.report(DiagId::NegativeExponent, range, rhs.i, lhs.i);
        return Value::error(range);
      }
      return intResult(checkedPow(lhs.i, rhs.i), "^");
    }
    return realResult(std::pow(a, b));
  case ast::Op::Lt: return Value::ofBool(ints ? lhs.i < rhs.i : a < b, range);
  case ast::Op::Le: return Value::ofBool(ints ? lhs.i <= rhs.i : a <= b, range);
  case ast::Op::Gt: return Value::ofBool(ints ? lhs.i > rhs.i : a > b, range);
  case ast::Op::Ge: return Value::ofBool(ints ? lhs.i >= rhs.i : a >= b, range);
  case ast::Op::Eq: return Value::ofBool(ints ? lhs.i == rhs.i : a == b, range);
  case ast::Op::Ne: return Value::ofBool(ints ? lhs.i != rhs.i : a != b, range);
  case ast::Op::And: return Value::ofBool(lhs.i && rhs.i, range);
  case ast::Op::Or: return Value::ofBool(lhs.i || rhs.i, range);
  default: return Value::error(range);
  }
}

} // namespace netc
