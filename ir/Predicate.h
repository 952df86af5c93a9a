// Predicate.h -- a compiled `where (s, d) => ...` predicate: a small typed
// expression tree over the source and destination coordinates, with consts
// already folded. Sema builds it; the filter pass evaluates it per pair.
#pragma once

#include "support/SourceRange.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace netc::ir {

enum class PredType { Int, Real, Bool };

struct PredicateNode {
  enum class Op {
    ConstInt,
    ConstReal,
    ConstBool,
    SrcCoord,
    DstCoord,
    IntToReal,
    Neg,
    Not,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Abs,
    Min,
    Max,
  };
  Op op = Op::ConstInt;
  PredType type = PredType::Int;
  int64_t intValue = 0; // ConstInt/ConstBool value; coordinate index for Src/DstCoord
  double realValue = 0;
  int lhs = -1, rhs = -1; // child node indices
  SourceRange range;
};

/// A scalar produced while evaluating a predicate.
struct PredValue {
  int64_t i = 0;
  double r = 0;
};

struct Predicate {
  std::vector<PredicateNode> nodes;
  int root = -1;
  SourceRange range;

  /// Adds a node and returns its index.
  int add(PredicateNode node) {
    nodes.push_back(node);
    return static_cast<int>(nodes.size()) - 1;
  }

  /// The outcome of one evaluation: the value, or the node that failed
  /// (division by zero, overflow) and why.
  struct Result {
    bool ok = true;
    bool value = false;
    int failedNode = -1;
    std::string problem;
  };
  Result evaluate(std::span<const int64_t> src, std::span<const int64_t> dst) const;
  /// Printable form (for IR dumps), e.g. "(s[0] == d[0])".
  std::string toString() const;

private:
  bool eval(int node, std::span<const int64_t> src, std::span<const int64_t> dst, PredValue &out,
            Result &result) const;
  std::string nodeToString(int node) const;
};

} // namespace netc::ir
