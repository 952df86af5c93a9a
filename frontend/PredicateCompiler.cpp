// PredicateCompiler.cpp -- lowers a `where (s, d) => ...` lambda into an
// ir::Predicate. Sub-expressions that do not mention s or d are folded by the
// const evaluator; the rest is type-checked with the same rules as consts
// (Value.h), with integer-to-real conversions made explicit.
#include "frontend/ConstEvaluator.h"
#include "frontend/Sema.h"
#include "support/Spelling.h"

#include <fmt/format.h>

namespace netc {

namespace {

using Node = ir::PredicateNode;

class PredicateCompiler {
public:
  PredicateCompiler(const ast::Lambda &lambda, size_t srcRank, size_t dstRank, ConstEvaluator &consts,
                    DiagnosticEngine &diags)
      : lambda_(lambda), srcRank_(srcRank), dstRank_(dstRank), consts_(consts), diags_(diags) {}

  std::shared_ptr<ir::Predicate> run() {
    if (lambda_.src.text == lambda_.dst.text) {
      diags_.report(DiagId::LambdaParamClash, lambda_.dst.range, lambda_.dst.text);
      return nullptr;
    }
    if (!lambda_.body || !paramNamesSpelledRight(*lambda_.body))
      return nullptr;
    auto [root, type] = lower(*lambda_.body);
    if (root < 0)
      return nullptr;
    if (type != ValueType::Bool) {
      diags_.report(DiagId::PredicateNotBoolean, lambda_.body->range, describeType(type));
      return nullptr;
    }
    predicate_->root = root;
    predicate_->range = lambda_.range;
    return predicate_;
  }

private:
  using Lowered = std::pair<int, ValueType>; // node index (-1: error) and type

  bool isParam(const std::string &name) const { return name == lambda_.src.text || name == lambda_.dst.text; }
  /// A name that is neither a parameter nor a const but is close to a
  /// parameter is a misspelled parameter: suggest it (D1).
  bool paramNamesSpelledRight(const ast::Expr &e) {
    bool ok = true;
    if ((e.kind == ast::ExprKind::Name || e.kind == ast::ExprKind::Index) && !isParam(e.text) &&
        !consts_.isDeclared(e.text)) {
      if (auto match = closestMatch(e.text, {lambda_.src.text, lambda_.dst.text})) {
        Diagnostic &d = diags_.report(DiagId::UndeclaredName, e.nameRange, e.text);
        d.message += fmt::format("; did you mean '{}'?", *match);
        withFixIt(d, e.nameRange, *match);
        ok = false;
      }
    }
    for (const ast::ExprPtr &child : e.operands)
      if (child)
        ok = paramNamesSpelledRight(*child) && ok;
    return ok;
  }

  bool mentionsParams(const ast::Expr &e) const {
    if ((e.kind == ast::ExprKind::Name || e.kind == ast::ExprKind::Index) && isParam(e.text))
      return true;
    for (const ast::ExprPtr &child : e.operands)
      if (child && mentionsParams(*child))
        return true;
    return false;
  }

  int constant(const Value &v) {
    Node n;
    n.range = v.range;
    switch (v.type) {
    case ValueType::Int:
      n.op = Node::Op::ConstInt;
      n.type = ir::PredType::Int;
      n.intValue = v.i;
      break;
    case ValueType::Real:
      n.op = Node::Op::ConstReal;
      n.type = ir::PredType::Real;
      n.realValue = v.r;
      break;
    case ValueType::Bool:
      n.op = Node::Op::ConstBool;
      n.type = ir::PredType::Bool;
      n.intValue = v.i;
      break;
    default: return -1;
    }
    return predicate_->add(n);
  }

  int coordinate(bool source, int64_t index, SourceRange range) {
    Node n;
    n.op = source ? Node::Op::SrcCoord : Node::Op::DstCoord;
    n.type = ir::PredType::Int;
    n.intValue = index;
    n.range = range;
    return predicate_->add(n);
  }

  int toReal(int node, ValueType type) {
    if (type != ValueType::Int)
      return node;
    Node n;
    n.op = Node::Op::IntToReal;
    n.type = ir::PredType::Real;
    n.lhs = node;
    n.range = predicate_->nodes[static_cast<size_t>(node)].range;
    return predicate_->add(n);
  }

  static ir::PredType predType(ValueType t) {
    return t == ValueType::Real   ? ir::PredType::Real
           : t == ValueType::Bool ? ir::PredType::Bool
                                  : ir::PredType::Int;
  }

  Lowered lower(const ast::Expr &e) {
    if (!mentionsParams(e)) {
      Value v = consts_.evaluate(e);
      if (v.isError())
        return {-1, ValueType::Error};
      if (v.type == ValueType::Tuple) {
        diags_.report(DiagId::TypeMismatch, e.range, "a number or boolean", "a tuple");
        return {-1, ValueType::Error};
      }
      return {constant(v), v.type};
    }
    switch (e.kind) {
    case ast::ExprKind::Name: {
      bool source = e.text == lambda_.src.text;
      size_t rank = source ? srcRank_ : dstRank_;
      if (rank != 1) {
        Diagnostic &d = diags_.report(
            DiagId::TypeMismatch, e.range, "a number",
            fmt::format("the {}-D coordinate tuple '{}'; index it, as in {}[0]", rank, e.text, e.text));
        (void)d;
        return {-1, ValueType::Error};
      }
      return {coordinate(source, 0, e.range), ValueType::Int};
    }
    case ast::ExprKind::Index: {
      bool source = e.text == lambda_.src.text;
      size_t rank = source ? srcRank_ : dstRank_;
      const ast::Expr &indexExpr = *e.operands[0];
      if (mentionsParams(indexExpr)) {
        diags_.report(DiagId::TypeMismatch, indexExpr.range, "a constant index",
                      "an index that depends on the lambda parameters");
        return {-1, ValueType::Error};
      }
      Value index = consts_.evaluate(indexExpr);
      if (index.isError())
        return {-1, ValueType::Error};
      if (index.type != ValueType::Int) {
        diags_.report(DiagId::TypeMismatch, index.range, "an integer index", describeType(index.type));
        return {-1, ValueType::Error};
      }
      if (index.i < 0 || static_cast<uint64_t>(index.i) >= rank) {
        diags_.report(DiagId::IndexOutOfRange, index.range, index.i, rank);
        return {-1, ValueType::Error};
      }
      return {coordinate(source, index.i, e.range), ValueType::Int};
    }
    case ast::ExprKind::Paren: return lower(*e.operands[0]);
    case ast::ExprKind::Unary: {
      auto [operand, type] = lower(*e.operands[0]);
      if (operand < 0)
        return {-1, ValueType::Error};
      auto result = unaryResultType(e.op, type);
      if (!result) {
        diags_.report(DiagId::InvalidOperands, e.range, ast::opSpelling(e.op), describeType(type));
        return {-1, ValueType::Error};
      }
      Node n;
      n.op = e.op == ast::Op::Not ? Node::Op::Not : Node::Op::Neg;
      n.type = predType(*result);
      n.lhs = operand;
      n.range = e.range;
      return {predicate_->add(n), *result};
    }
    case ast::ExprKind::Binary: return lowerBinary(e);
    case ast::ExprKind::Call: return lowerCall(e);
    case ast::ExprKind::Tuple:
      diags_.report(DiagId::TypeMismatch, e.range, "a number or boolean", "a tuple");
      return {-1, ValueType::Error};
    default: return {-1, ValueType::Error};
    }
  }

  static Node::Op binaryNodeOp(ast::Op op) {
    switch (op) {
    case ast::Op::Or: return Node::Op::Or;
    case ast::Op::And: return Node::Op::And;
    case ast::Op::Eq: return Node::Op::Eq;
    case ast::Op::Ne: return Node::Op::Ne;
    case ast::Op::Lt: return Node::Op::Lt;
    case ast::Op::Le: return Node::Op::Le;
    case ast::Op::Gt: return Node::Op::Gt;
    case ast::Op::Ge: return Node::Op::Ge;
    case ast::Op::Add: return Node::Op::Add;
    case ast::Op::Sub: return Node::Op::Sub;
    case ast::Op::Mul: return Node::Op::Mul;
    case ast::Op::Div: return Node::Op::Div;
    case ast::Op::Mod: return Node::Op::Mod;
    default: return Node::Op::Pow;
    }
  }

  Lowered lowerBinary(const ast::Expr &e) {
    auto [lhs, lt] = lower(*e.operands[0]);
    auto [rhs, rt] = lower(*e.operands[1]);
    if (lhs < 0 || rhs < 0)
      return {-1, ValueType::Error};
    auto result = binaryResultType(e.op, lt, rt);
    if (!result) {
      std::string operands = describeOperands(lt, rt);
      diags_.report(DiagId::InvalidOperands, e.range, ast::opSpelling(e.op), operands);
      return {-1, ValueType::Error};
    }
    if ((lt == ValueType::Real) != (rt == ValueType::Real)) {
      lhs = toReal(lhs, lt);
      rhs = toReal(rhs, rt);
    }
    Node n;
    n.op = binaryNodeOp(e.op);
    n.type = predType(*result);
    n.lhs = lhs;
    n.rhs = rhs;
    n.range = e.range;
    return {predicate_->add(n), *result};
  }

  Lowered lowerCall(const ast::Expr &e) {
    auto checked = checkCall(e, diags_);
    if (!checked)
      return {-1, ValueType::Error};
    const size_t arity = *checked;
    std::vector<Lowered> args;
    for (const ast::ExprPtr &arg : e.operands) {
      args.push_back(lower(*arg));
      if (args.back().first < 0)
        return {-1, ValueType::Error};
      if (args.back().second != ValueType::Int && args.back().second != ValueType::Real) {
        diags_.report(DiagId::TypeMismatch, arg->range, "a number", describeType(args.back().second));
        return {-1, ValueType::Error};
      }
    }
    Node n;
    n.range = e.range;
    ValueType type = args[0].second;
    if (arity == 2 && args[0].second != args[1].second) {
      type = ValueType::Real;
      args[0].first = toReal(args[0].first, args[0].second);
      args[1].first = toReal(args[1].first, args[1].second);
    }
    n.op = e.text == "abs" ? Node::Op::Abs : e.text == "min" ? Node::Op::Min : Node::Op::Max;
    n.type = predType(type);
    n.lhs = args[0].first;
    n.rhs = arity == 2 ? args[1].first : -1;
    return {predicate_->add(n), type};
  }

  const ast::Lambda &lambda_;
  size_t srcRank_, dstRank_;
  ConstEvaluator &consts_;
  DiagnosticEngine &diags_;
  std::shared_ptr<ir::Predicate> predicate_ = std::make_shared<ir::Predicate>();
};

} // namespace

std::shared_ptr<ir::Predicate> compilePredicate(const ast::Lambda &lambda, size_t srcRank, size_t dstRank,
                                                ConstEvaluator &consts, DiagnosticEngine &diags) {
  return PredicateCompiler(lambda, srcRank, dstRank, consts, diags).run();
}

} // namespace netc
