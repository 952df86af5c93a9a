// Formatter.cpp -- the canonical printer behind `netc fmt`. It walks the AST
// line by line; before each line it flushes the comments that came earlier
// in the source, keeping a comment on the same line as the code it trailed.
// Expressions print as written (parentheses are AST nodes, real literals keep
// their spelling), so the output parses to the same program.
#include "frontend/Formatter.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc {

namespace {

class Formatter {
public:
  Formatter(const ast::Program &program, const SourceFile &file) : program_(program), file_(file) {
    comments_ = program.comments;
    std::sort(comments_.begin(), comments_.end(),
              [](const ast::Comment &a, const ast::Comment &b) { return a.range.begin < b.range.begin; });
  }

  std::string run() {
    for (const ast::Statement &statement : program_.statements) {
      if (std::holds_alternative<ast::StraySemicolon>(statement))
        continue; // canonical form drops stray semicolons
      SourceRange range = std::visit([](const auto &s) { return s.range; }, statement);
      topLevelGap(range.begin);
      std::visit([&](const auto &s) { print(s); }, statement);
      previousTopEnd_ = range.end;
    }
    flushComments(file_.size() + 1, 0, true);
    if (!out_.empty() && out_.back() != '\n')
      out_ += '\n';
    return out_;
  }

private:
  // ---- lines and comments ---------------------------------------------------
  uint32_t lineOf(uint32_t offset) const { return file_.lineColumn(offset).line; }

  /// Emits comments that start before `before`: trailing ones on the last
  /// line, the others on lines of their own at `depth`.
  void flushComments(uint32_t before, int depth, bool topLevel = false) {
    while (next_ < comments_.size() && comments_[next_].range.begin < before) {
      const ast::Comment &c = comments_[next_++];
      std::string text(file_.slice(c.range));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
      uint32_t line = lineOf(c.range.begin);
      bool trailing = lastLine_ != 0 && line >= lastLine_ && line <= lastEndLine_ && !lastLineHasComment_ &&
                      !out_.empty() && out_.back() == '\n';
      if (trailing) {
        out_.pop_back();
        out_ += " " + text + "\n";
        lastLineHasComment_ = true;
      } else {
        if (topLevel)
          blankLineIfAny(c.range.begin);
        out_.append(static_cast<size_t>(depth) * 2, ' ');
        out_ += text + "\n";
        if (topLevel)
          previousTopEnd_ = c.range.end;
      }
      // A block comment may span lines; later trailing comments attach to its end.
      lastLine_ = lastEndLine_ = c.block ? lineOf(c.range.end) : 0;
      lastLineHasComment_ = !trailing && !c.block;
    }
  }

  /// Keeps one blank line between top-level items where the source had any.
  void topLevelGap(uint32_t begin) {
    flushComments(begin, 0, true);
    blankLineIfAny(begin);
  }
  void blankLineIfAny(uint32_t begin) {
    if (out_.empty())
      return;
    std::string_view between = file_.slice({std::min(previousTopEnd_, begin), begin});
    size_t newlines = static_cast<size_t>(std::count(between.begin(), between.end(), '\n'));
    if (newlines >= 2 && !endsWithBlankLine())
      out_ += "\n";
  }
  bool endsWithBlankLine() const { return out_.size() >= 2 && out_.substr(out_.size() - 2) == "\n\n"; }

  /// Starts an output line for the node at `range`, flushing earlier comments.
  void beginLine(SourceRange range, int depth) {
    flushComments(range.begin, depth);
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    lastLine_ = lastEndLine_ = lineOf(range.begin);
    lastLineHasComment_ = false;
  }
  /// Ends a line that opens a block: only comments on its first source line trail it.
  void endLine() { out_ += "\n"; }
  /// Ends a line holding a whole node: comments on any of its source lines trail it.
  void endLine(SourceRange node) {
    lastEndLine_ = lineOf(node.end > node.begin ? node.end - 1 : node.begin);
    out_ += "\n";
  }
  /// Closes a `{ }` block whose source ends at `end`.
  void closeBlock(uint32_t end, int depth) {
    flushComments(end, depth + 1);
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += "}";
    lastLine_ = lastEndLine_ = lineOf(end > 0 ? end - 1 : 0);
    lastLineHasComment_ = false;
    endLine();
  }

  // ---- statements ------------------------------------------------------------
  void print(const ast::ConstDecl &c) {
    if (!c.block && c.items.size() == 1) {
      beginLine(c.range, 0);
      out_ += "const " + item(c.items[0]) + ";";
      endLine(c.range);
      return;
    }
    beginLine(c.range, 0);
    out_ += "const {";
    endLine();
    for (const ast::ConstItem &i : c.items) {
      beginLine(i.range, 1);
      out_ += item(i) + ";";
      endLine(i.range);
    }
    closeBlock(c.range.end, 0);
  }
  std::string item(const ast::ConstItem &i) { return i.name.text + " = " + expr(i.value.get()); }

  void print(const ast::LayerGroup &g) {
    if (!g.grouped) {
      for (const ast::LayerDecl &layer : g.layers)
        printLayer(layer, g.keyword.text + " ", 0);
      return;
    }
    beginLine(g.range, 0);
    out_ += g.keyword.text + " {";
    endLine();
    for (const ast::LayerDecl &layer : g.layers)
      printLayer(layer, "", 1);
    closeBlock(g.range.end, 0);
  }

  void printLayer(const ast::LayerDecl &l, const std::string &keyword, int depth) {
    beginLine(l.range, depth);
    out_ += keyword + l.name.text + " " + shape(l.shape);
    if (l.function)
      out_ += " " + l.function->text;
    switch (l.tail) {
    case ast::LayerDecl::Tail::None:
      out_ += ";";
      endLine(l.range);
      return;
    case ast::LayerDecl::Tail::Short:
      if (!l.bundles.empty()) {
        out_ += " ";
        bundleBody(l.bundles.front(), depth);
      } else {
        out_ += ";";
        endLine(l.range);
      }
      return;
    case ast::LayerDecl::Tail::Block: break;
    }
    out_ += " {";
    endLine();
    size_t attr = 0, bundle = 0;
    for (bool isAttr : l.itemIsAttribute) {
      if (isAttr) {
        const ast::Attribute &a = l.layerAttributes[attr++];
        beginLine(a.range, depth + 1);
        out_ += a.name.text + " = " + expr(a.value.get()) + ";";
        endLine(a.range);
      } else {
        const ast::BundleDecl &b = l.bundles[bundle++];
        beginLine(b.range, depth + 1);
        bundleBody(b, depth + 1);
      }
    }
    closeBlock(l.range.end, depth);
  }

  /// Prints `from X kind ...` from the current position to the end of its line(s).
  void bundleBody(const ast::BundleDecl &b, int depth) {
    out_ += "from " + b.source.text + " " + ast::bundleSyntaxName(b.kind);
    if (b.lambda)
      out_ += " (" + b.lambda->src.text + ", " + b.lambda->dst.text + ") => " + expr(b.lambda->body.get());
    if (!b.hasBlock) {
      out_ += ";";
      endLine(b.range);
      return;
    }
    out_ += " {";
    endLine();
    for (const ast::Attribute &a : b.attributes) {
      beginLine(a.range, depth + 1);
      out_ += a.name.text + " = " + expr(a.value.get()) + ";";
      endLine(a.range);
    }
    closeBlock(b.range.end, depth);
  }

  void print(const ast::ShareDecl &s) {
    beginLine(s.range, 0);
    out_ += "share {";
    for (size_t i = 0; i < s.items.size(); ++i) {
      const ast::ShareItem &item = s.items[i];
      out_ += i ? ", " : " ";
      out_ += item.form == ast::ShareItem::Form::Layer ? item.first.text
                                                       : item.first.text + " => " + item.second.text;
    }
    out_ += " }";
    endLine(s.range);
  }
  void print(const ast::StraySemicolon &) {}

  // ---- expressions -------------------------------------------------------------
  std::string shape(const ast::ShapeSpec &s) {
    if (s.isAuto)
      return "auto";
    std::string out = "[";
    for (size_t i = 0; i < s.dims.size(); ++i)
      out += (i ? ", " : "") + expr(s.dims[i].get());
    return out + "]";
  }

  std::string expr(const ast::Expr *e) {
    if (!e)
      return "";
    switch (e->kind) {
    case ast::ExprKind::Int:
    case ast::ExprKind::Real: return e->text;
    case ast::ExprKind::Bool: return e->intValue ? "true" : "false";
    case ast::ExprKind::Name: return e->text;
    case ast::ExprKind::Index: return e->text + "[" + expr(e->operands[0].get()) + "]";
    case ast::ExprKind::Call: {
      std::string out = e->text + "(";
      for (size_t i = 0; i < e->operands.size(); ++i)
        out += (i ? ", " : "") + expr(e->operands[i].get());
      return out + ")";
    }
    case ast::ExprKind::Unary: {
      std::string operand = expr(e->operands[0].get());
      // `- -3`, not `--3`: same tokens, but it should not read like a decrement.
      bool separate = !operand.empty() && (operand[0] == '-' || operand[0] == '!');
      return ast::opSpelling(e->op) + std::string(separate ? " " : "") + operand;
    }
    case ast::ExprKind::Binary:
      if (e->op == ast::Op::Pow)
        return expr(e->operands[0].get()) + "^" + expr(e->operands[1].get());
      return expr(e->operands[0].get()) + " " + ast::opSpelling(e->op) + " " + expr(e->operands[1].get());
    case ast::ExprKind::Paren: return "(" + expr(e->operands[0].get()) + ")";
    case ast::ExprKind::Tuple: {
      std::string out = "[";
      for (size_t i = 0; i < e->operands.size(); ++i)
        out += (i ? ", " : "") + expr(e->operands[i].get());
      return out + "]";
    }
    case ast::ExprKind::Error: break;
    }
    return std::string(file_.slice(e->range));
  }

  const ast::Program &program_;
  const SourceFile &file_;
  std::vector<ast::Comment> comments_;
  size_t next_ = 0;
  uint32_t lastLine_ = 0; // source lines of what the last output line printed
  uint32_t lastEndLine_ = 0;
  bool lastLineHasComment_ = false; // a line comment already ends the last output line
  uint32_t previousTopEnd_ = 0;
  std::string out_;
};

} // namespace

std::string formatProgram(const ast::Program &program, const SourceFile &file) {
  return Formatter(program, file).run();
}

} // namespace netc
