// Ast.h -- the Net# abstract syntax tree. It mirrors what the user wrote
// (including grouped layer blocks, parentheses and the single-bundle short
// form) so the formatter can print it back; every node carries its range.
// Sema turns it into the IR; nothing below the front end sees these types.
#pragma once

#include "support/SourceRange.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace netc::ast {

enum class ExprKind { Int, Real, Bool, Name, Index, Call, Unary, Binary, Paren, Tuple, Error };

enum class Op {
  // binary
  Or,
  And,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Pow,
  // unary
  Neg,
  Not,
};

/// The spelling of an operator ("+", "&&", ...).
const char *opSpelling(Op op);

/// One expression node. A single struct (rather than a class hierarchy)
/// keeps the tree easy to build from the parse tree, walk and print.
struct Expr {
  ExprKind kind = ExprKind::Error;
  SourceRange range;
  int64_t intValue = 0;                        // Int; also Bool (0/1)
  double realValue = 0;                        // Real
  std::string text;                            // literal spelling (Int, Real), name (Name, Index, Call)
  SourceRange nameRange;                       // Name, Index, Call: the identifier
  Op op = Op::Add;                             // Unary, Binary
  std::vector<std::unique_ptr<Expr>> operands; // Index: [index]; Call: args; Unary: [x];
                                               // Binary: [lhs, rhs]; Paren: [x]; Tuple: items
};
using ExprPtr = std::unique_ptr<Expr>;

struct Identifier {
  std::string text;
  SourceRange range;
  bool present() const { return !text.empty(); }
};

struct ConstItem {
  Identifier name;
  ExprPtr value;
  SourceRange range;
};

struct ConstDecl {
  SourceRange range;
  Identifier keyword; // "const" (or a misspelling, already reported)
  bool block = false;
  std::vector<ConstItem> items;
};

/// `Name = expr;` inside a bundle's or layer's `{ }` block.
struct Attribute {
  Identifier name;
  ExprPtr value;
  SourceRange range;
};

/// Bundle kinds as written; Unknown when the kind was misspelled.
enum class BundleSyntax { All, Where, Convolve, MaxPool, MeanPool, ResponseNorm, Unknown };

struct Lambda {
  Identifier src;
  Identifier dst;
  ExprPtr body;
  SourceRange range;
  /// A parameter or the body is missing, or error recovery repaired the
  /// lambda (a syntax error, already reported): its parameter names may be
  /// empty or not what was written, so Sema does not check it.
  bool incomplete = false;
};

struct BundleDecl {
  SourceRange range;
  Identifier source;
  BundleSyntax kind = BundleSyntax::Unknown;
  SourceRange kindRange;
  std::optional<Lambda> lambda;
  bool hasBlock = false;
  std::vector<Attribute> attributes;
};

enum class LayerKind { Input, Hidden, Output };

struct ShapeSpec {
  bool isAuto = false;
  bool invalid = false; // not a shape (already reported)
  SourceRange range;
  std::vector<ExprPtr> dims;
};

struct LayerDecl {
  SourceRange range;
  LayerKind kind = LayerKind::Hidden;
  Identifier name;
  ShapeSpec shape;
  std::optional<Identifier> function; // as written; resolved by Sema
  enum class Tail { None, Short, Block } tail = Tail::None;
  std::vector<Attribute> layerAttributes; // `Biases = C;`
  std::vector<BundleDecl> bundles;
  /// Position among layerAttributes/bundles, for order checks and printing:
  /// true entries are attributes. Same length as the two lists together.
  std::vector<bool> itemIsAttribute;
  bool incomplete = false; // a bundle or the shape did not parse (already reported)
};

/// `input X ...;` alone, or `hidden { A ...; B ...; }` as a group.
struct LayerGroup {
  SourceRange range;
  Identifier keyword;
  LayerKind kind = LayerKind::Hidden;
  bool grouped = false;
  std::vector<LayerDecl> layers;
};

struct ShareItem {
  enum class Form { Layer, Bundle, Bias } form = Form::Layer;
  Identifier first;  // layer; bundle source; "1" for biases
  Identifier second; // bundle destination or bias layer
  SourceRange range;
};

struct ShareDecl {
  SourceRange range;
  Identifier keyword;
  std::vector<ShareItem> items;
  bool incomplete = false; // an item did not parse (already reported)
};

struct StraySemicolon {
  SourceRange range;
};

using Statement = std::variant<ConstDecl, LayerGroup, ShareDecl, StraySemicolon>;

/// A comment as it appeared in the source (kept for the formatter).
struct Comment {
  SourceRange range;
  bool block = false;
};

struct Program {
  std::vector<Statement> statements;
  std::vector<Comment> comments;
};

const char *bundleSyntaxName(BundleSyntax kind);
const char *layerKindName(LayerKind kind);

} // namespace netc::ast
