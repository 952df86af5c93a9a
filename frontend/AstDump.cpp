// AstDump.cpp -- a deterministic tree dump of the AST with source ranges,
// for `netc compile --emit=ast` and golden tests.
#include "frontend/AstDump.h"

#include <fmt/format.h>

namespace netc {

namespace {

class AstDumper {
public:
  explicit AstDumper(const SourceFile &file) : file_(file) {}

  std::string run(const ast::Program &program) {
    line(0, "Program", {0, file_.size()});
    for (const ast::Statement &statement : program.statements)
      std::visit([&](const auto &s) { dump(1, s); }, statement);
    for (const ast::Comment &comment : program.comments)
      line(1, comment.block ? "BlockComment" : "LineComment", comment.range);
    return out_;
  }

private:
  std::string where(SourceRange range) const {
    LineColumn a = file_.lineColumn(range.begin), b = file_.lineColumn(range.end);
    return fmt::format("<{}:{}-{}:{}>", a.line, a.column, b.line, b.column);
  }
  void line(int depth, const std::string &text, SourceRange range) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += text + " " + where(range) + "\n";
  }

  void dump(int depth, const ast::ConstDecl &c) {
    line(depth, c.block ? "ConstDecl block" : "ConstDecl", c.range);
    for (const ast::ConstItem &item : c.items) {
      line(depth + 1, "ConstItem " + item.name.text, item.range);
      if (item.value)
        dump(depth + 2, *item.value);
    }
  }
  void dump(int depth, const ast::LayerGroup &g) {
    line(depth, fmt::format("LayerGroup {}{}", g.keyword.text, g.grouped ? " grouped" : ""), g.range);
    for (const ast::LayerDecl &layer : g.layers)
      dump(depth + 1, layer);
  }
  void dump(int depth, const ast::LayerDecl &l) {
    const char *tail = l.tail == ast::LayerDecl::Tail::Block   ? " block"
                       : l.tail == ast::LayerDecl::Tail::Short ? " short"
                                                               : "";
    line(depth, fmt::format("Layer {} {}{}", l.name.text, ast::layerKindName(l.kind), tail), l.range);
    line(depth + 1, l.shape.isAuto ? "Shape auto" : "Shape", l.shape.range);
    for (const ast::ExprPtr &dim : l.shape.dims)
      dump(depth + 2, *dim);
    if (l.function)
      line(depth + 1, "Function " + l.function->text, l.function->range);
    size_t attr = 0, bundle = 0;
    for (bool isAttr : l.itemIsAttribute) {
      if (isAttr)
        dump(depth + 1, l.layerAttributes[attr++], "LayerAttribute");
      else
        dump(depth + 1, l.bundles[bundle++]);
    }
  }
  void dump(int depth, const ast::Attribute &a, const char *label = "Attribute") {
    line(depth, fmt::format("{} {}", label, a.name.text), a.range);
    if (a.value)
      dump(depth + 1, *a.value);
  }
  void dump(int depth, const ast::BundleDecl &b) {
    line(depth, fmt::format("Bundle from {} {}", b.source.text, ast::bundleSyntaxName(b.kind)), b.range);
    if (b.lambda) {
      line(depth + 1, fmt::format("Lambda ({}, {})", b.lambda->src.text, b.lambda->dst.text),
           b.lambda->range);
      if (b.lambda->body)
        dump(depth + 2, *b.lambda->body);
    }
    for (const ast::Attribute &a : b.attributes)
      dump(depth + 1, a);
  }
  void dump(int depth, const ast::ShareDecl &s) {
    line(depth, "ShareDecl", s.range);
    for (const ast::ShareItem &item : s.items) {
      switch (item.form) {
      case ast::ShareItem::Form::Layer: line(depth + 1, "ShareLayer " + item.first.text, item.range); break;
      case ast::ShareItem::Form::Bundle:
        line(depth + 1, fmt::format("ShareBundle {} => {}", item.first.text, item.second.text), item.range);
        break;
      case ast::ShareItem::Form::Bias:
        line(depth + 1, fmt::format("ShareBias {} => {}", item.first.text, item.second.text), item.range);
        break;
      }
    }
  }
  void dump(int depth, const ast::StraySemicolon &s) { line(depth, "StraySemicolon", s.range); }

  void dump(int depth, const ast::Expr &e) {
    switch (e.kind) {
    case ast::ExprKind::Int: line(depth, "Int " + e.text, e.range); break;
    case ast::ExprKind::Real: line(depth, "Real " + e.text, e.range); break;
    case ast::ExprKind::Bool:
      line(depth, std::string("Bool ") + (e.intValue ? "true" : "false"), e.range);
      break;
    case ast::ExprKind::Name: line(depth, "Name " + e.text, e.range); break;
    case ast::ExprKind::Index: line(depth, "Index " + e.text, e.range); break;
    case ast::ExprKind::Call: line(depth, "Call " + e.text, e.range); break;
    case ast::ExprKind::Unary: line(depth, std::string("Unary ") + ast::opSpelling(e.op), e.range); break;
    case ast::ExprKind::Binary: line(depth, std::string("Binary ") + ast::opSpelling(e.op), e.range); break;
    case ast::ExprKind::Paren: line(depth, "Paren", e.range); break;
    case ast::ExprKind::Tuple: line(depth, fmt::format("Tuple {}", e.operands.size()), e.range); break;
    case ast::ExprKind::Error: line(depth, "Error", e.range); break;
    }
    for (const ast::ExprPtr &child : e.operands)
      if (child)
        dump(depth + 1, *child);
  }

  const SourceFile &file_;
  std::string out_;
};

} // namespace

std::string dumpAst(const ast::Program &program, const SourceFile &file) {
  return AstDumper(file).run(program);
}

std::string dumpTokens(const std::vector<TokenInfo> &tokens, const SourceFile &file) {
  std::string out;
  for (const TokenInfo &token : tokens) {
    LineColumn a = file.lineColumn(token.range.begin);
    std::string text(file.slice(token.range));
    for (char &c : text)
      if (c == '\n' || c == '\r' || c == '\t')
        c = ' ';
    out += fmt::format("{}:{} {} '{}'\n", a.line, a.column, token.kind(), text);
  }
  return out;
}

} // namespace netc
