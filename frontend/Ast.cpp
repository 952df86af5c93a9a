// Ast.cpp -- spellings of AST enumerations.
#include "frontend/Ast.h"

namespace netc::ast {

const char *opSpelling(Op op) {
  switch (op) {
  case Op::Or: return "||";
  case Op::And: return "&&";
  case Op::Eq: return "==";
  case Op::Ne: return "!=";
  case Op::Lt: return "<";
  case Op::Le: return "<=";
  case Op::Gt: return ">";
  case Op::Ge: return ">=";
  case Op::Add: return "+";
  case Op::Sub: return "-";
  case Op::Mul: return "*";
  case Op::Div: return "/";
  case Op::Mod: return "%";
  case Op::Pow: return "^";
  case Op::Neg: return "-";
  case Op::Not: return "!";
  }
  return "?";
}

const char *bundleSyntaxName(BundleSyntax kind) {
  switch (kind) {
  case BundleSyntax::All: return "all";
  case BundleSyntax::Where: return "where";
  case BundleSyntax::Convolve: return "convolve";
  case BundleSyntax::MaxPool: return "max pool";
  case BundleSyntax::MeanPool: return "mean pool";
  case BundleSyntax::ResponseNorm: return "response norm";
  case BundleSyntax::Unknown: return "unknown";
  }
  return "unknown";
}

const char *layerKindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::Input: return "input";
  case LayerKind::Hidden: return "hidden";
  case LayerKind::Output: return "output";
  }
  return "hidden";
}

} // namespace netc::ast
