// ParseTreeToAst.cpp -- the AST builder: one function per grammar rule,
// reading the labelled tokens and child contexts of the generated parser.
#include "frontend/ParseTreeToAst.h"

#include "frontend/Lexer.h"
#include "frontend/TokenArrayStream.h"

#include "support/Spelling.h"

#include <cerrno>
#include <cstdlib>
#include <fmt/format.h>

namespace netc {

using antlr4::Token;
using P = NetSharpParser;

SourceRange tokenRange(Token *token, uint32_t fileSize) {
  if (!token || token->getType() == Token::EOF || !validIndex(token->getStartIndex()))
    return {fileSize, fileSize};
  auto begin = static_cast<uint32_t>(std::min<size_t>(token->getStartIndex(), fileSize));
  auto end = static_cast<uint32_t>(std::min<size_t>(token->getStopIndex() + 1, fileSize));
  return {begin, std::max(begin, end)};
}

class AstBuilder::Impl {
public:
  Impl(DiagnosticEngine &diags, uint32_t fileSize) : diags_(diags), fileSize_(fileSize) {}

  ast::Program build(P::ProgramContext *program) {
    ast::Program out;
    if (program)
      for (P::StatementContext *statement : program->statement())
        addStatement(statement, out);
    return out;
  }

  void addStatement(P::StatementContext *statement, ast::Program &out) {
    if (!statement)
      return;
    if (auto *c = statement->constDecl())
      out.statements.emplace_back(buildConst(c));
    else if (auto *s = statement->shareDecl())
      out.statements.emplace_back(buildShare(s));
    else if (auto *l = statement->layerDecl())
      out.statements.emplace_back(buildLayerGroup(l));
    else if (statement->SEMI())
      out.statements.emplace_back(ast::StraySemicolon{rangeOf(statement)});
  }

private:
  SourceRange rangeOf(Token *token) const { return tokenRange(token, fileSize_); }
  SourceRange rangeOf(antlr4::ParserRuleContext *ctx) const {
    if (!ctx)
      return {fileSize_, fileSize_};
    SourceRange start = rangeOf(ctx->getStart());
    Token *stop = ctx->getStop();
    if (!stop || !validIndex(stop->getStartIndex()) || stop->getType() == Token::EOF ||
        stop->getTokenIndex() < ctx->getStart()->getTokenIndex())
      return start;
    return SourceRange::cover(start, rangeOf(stop));
  }
  SourceRange rangeOf(antlr4::tree::TerminalNode *node) const {
    return node ? rangeOf(node->getSymbol()) : SourceRange{fileSize_, fileSize_};
  }
  static bool real(Token *token) {
    return token && token->getType() != Token::EOF && validIndex(token->getStartIndex()) &&
           validIndex(token->getTokenIndex());
  }
  /// Whether error recovery repaired the rule itself (gave up on it, or
  /// conjured or skipped one of its own tokens): `(s s)` read as `(s, s)`.
  static bool repaired(antlr4::ParserRuleContext *ctx) {
    if (ctx->exception)
      return true;
    for (antlr4::tree::ParseTree *child : ctx->children)
      if (dynamic_cast<antlr4::tree::ErrorNode *>(child))
        return true;
    return false;
  }
  ast::Identifier ident(Token *token) const {
    if (!real(token))
      return {};
    return {token->getText(), rangeOf(token)};
  }

  /// Reports an identifier written where a statement keyword belongs.
  /// Returns whether the word was recognised as a misspelling of a candidate.
  bool reportKeyword(Token *kw, const std::vector<std::string_view> &candidates, const char *expected) {
    if (!real(kw))
      return false;
    std::string text = kw->getText();
    if (auto match = closestMatch(text, candidates)) {
      Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, rangeOf(kw), text, *match);
      withFixIt(d, rangeOf(kw), *match);
      return true;
    }
    diags_.report(DiagId::UnknownStatement, rangeOf(kw), text, expected);
    return false;
  }

  ast::ConstDecl buildConst(P::ConstDeclContext *ctx) {
    ast::ConstDecl decl;
    decl.range = rangeOf(ctx);
    decl.keyword = ident(ctx->kw);
    if (ctx->kw && ctx->kw->getType() == P::IDENT && !reportKeyword(ctx->kw, {"const"}, "'const'"))
      return decl; // not a const declaration: nothing in it is declared
    decl.keyword.text = "const";
    decl.block = ctx->LBRACE() != nullptr;
    for (P::ConstItemContext *item : ctx->constItem()) {
      if (!item || !real(item->name))
        continue;
      ast::ConstItem ci;
      ci.name = ident(item->name);
      ci.value = buildExpr(item->expr());
      ci.range = rangeOf(item);
      decl.items.push_back(std::move(ci));
    }
    return decl;
  }

  static ast::LayerKind layerKindOfToken(size_t type) {
    return type == P::INPUT    ? ast::LayerKind::Input
           : type == P::OUTPUT ? ast::LayerKind::Output
                               : ast::LayerKind::Hidden;
  }

  ast::LayerGroup buildLayerGroup(P::LayerDeclContext *ctx) {
    ast::LayerGroup group;
    group.range = rangeOf(ctx);
    group.keyword = ident(ctx->kw);
    group.grouped = ctx->LBRACE() != nullptr;
    if (P::BareLayerContext *bare = ctx->bareLayer()) {
      // `H2 [5] from X all;`: a layer without its keyword.
      if (real(bare->name)) {
        diags_.report(DiagId::UnknownStatement, rangeOf(bare->name), bare->name->getText(),
                      "'input', 'hidden' or 'output' before the layer's name");
        group.kind = ast::LayerKind::Hidden;
        group.keyword.text = ast::layerKindName(group.kind);
        group.layers.push_back(buildLayer(bare, group.kind));
      }
      return group;
    }
    if (!ctx->kw) {
      return group;
    } else if (ctx->kw->getType() == P::IDENT) {
      std::string text = ctx->kw->getText();
      auto match = closestMatch(text, {"input", "hidden", "output"});
      reportKeyword(ctx->kw, {"input", "hidden", "output"}, "'input', 'hidden' or 'output'");
      group.kind = !match               ? ast::LayerKind::Hidden
                   : *match == "input"  ? ast::LayerKind::Input
                   : *match == "output" ? ast::LayerKind::Output
                                        : ast::LayerKind::Hidden;
    } else if (ctx->kw) {
      group.kind = layerKindOfToken(ctx->kw->getType());
    }
    group.keyword.text = ast::layerKindName(group.kind);
    for (P::LayerBodyContext *body : ctx->layerBody())
      if (body && real(body->name))
        group.layers.push_back(buildLayer(body, group.kind));
    return group;
  }

  template <typename Context> ast::LayerDecl buildLayer(Context *ctx, ast::LayerKind kind) {
    ast::LayerDecl layer;
    layer.kind = kind;
    layer.range = rangeOf(ctx);
    layer.name = ident(ctx->name);
    if (P::ShapeContext *shape = ctx->shape()) {
      layer.shape.range = rangeOf(shape);
      layer.shape.isAuto = shape->AUTO() != nullptr;
      if (antlr4::tree::TerminalNode *word = shape->IDENT()) {
        std::string text = word->getText();
        if (auto match = closestMatch(text, {"auto"})) {
          Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, rangeOf(word), text, *match);
          withFixIt(d, rangeOf(word), *match);
          layer.shape.isAuto = true;
        } else {
          diags_.report(DiagId::SyntaxError, rangeOf(word), "expected 'auto' or '[', found '" + text + "'");
          layer.shape.invalid = true;
          layer.incomplete = true;
        }
      }
      for (P::ExprContext *e : shape->expr())
        layer.shape.dims.push_back(buildExpr(e));
    } else {
      // No shape at all: report it at what came instead.
      Token *next = ctx->activation()  ? ctx->activation()->getStart()
                    : ctx->layerTail() ? ctx->layerTail()->getStart()
                                       : nullptr;
      SourceRange at = real(next) ? rangeOf(next) : SourceRange{layer.name.range.end, layer.name.range.end};
      std::string found = real(next) ? "'" + next->getText() + "'" : std::string("end of file");
      diags_.report(DiagId::SyntaxError, at, "expected 'auto' or '[', found " + found);
      layer.shape.range = layer.name.range;
      layer.shape.invalid = true;
      layer.incomplete = true;
    }
    if (P::ActivationContext *fn = ctx->activation())
      if (real(fn->fn))
        layer.function = ident(fn->fn);
    if (P::LayerTailContext *tail = ctx->layerTail()) {
      if (P::BundleContext *b = tail->bundle()) {
        layer.tail = ast::LayerDecl::Tail::Short;
        if (auto bundle = buildBundle(b)) {
          layer.bundles.push_back(std::move(*bundle));
          layer.itemIsAttribute.push_back(false);
        } else {
          layer.incomplete = true;
        }
      } else if (tail->LBRACE()) {
        layer.tail = ast::LayerDecl::Tail::Block;
        for (P::LayerItemContext *item : tail->layerItem()) {
          if (!item)
            continue;
          if (P::LayerAttrContext *attr = item->layerAttr()) {
            if (!real(attr->name))
              continue;
            layer.layerAttributes.push_back({ident(attr->name), buildExpr(attr->expr()), rangeOf(attr)});
            layer.itemIsAttribute.push_back(true);
          } else if (P::BundleContext *b = item->bundle()) {
            if (auto bundle = buildBundle(b)) {
              layer.bundles.push_back(std::move(*bundle));
              layer.itemIsAttribute.push_back(false);
            } else {
              layer.incomplete = true;
            }
          }
        }
      }
    }
    return layer;
  }

  std::optional<ast::BundleDecl> buildBundle(P::BundleContext *ctx) {
    if (!real(ctx->source))
      return std::nullopt;
    ast::BundleDecl bundle;
    bundle.range = rangeOf(ctx);
    bundle.source = ident(ctx->source);
    if (ctx->kw && ctx->kw->getType() == P::IDENT) {
      std::string text = ctx->kw->getText();
      Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, rangeOf(ctx->kw), text, "from");
      withFixIt(d, rangeOf(ctx->kw), "from");
    }
    P::BundleKindContext *kind = ctx->bundleKind();
    if (!kind)
      return std::nullopt;
    bundle.kindRange = rangeOf(kind->getStart());
    P::AttrBlockContext *block = nullptr;
    if (auto *k = dynamic_cast<P::AllBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::All;
      block = k->attrBlock();
    } else if (auto *k = dynamic_cast<P::WhereBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::Where;
      block = k->attrBlock();
      if (P::LambdaContext *lambda = k->lambda()) {
        ast::Lambda l;
        l.src = ident(lambda->src);
        l.dst = ident(lambda->dst);
        l.incomplete = !real(lambda->src) || !real(lambda->dst) || !lambda->expr() || repaired(lambda);
        l.body = buildExpr(lambda->expr());
        l.range = rangeOf(lambda);
        bundle.lambda = std::move(l);
      }
    } else if (auto *k = dynamic_cast<P::ConvolveBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::Convolve;
      block = k->attrBlock();
    } else if (auto *k = dynamic_cast<P::MaxPoolBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::MaxPool;
      block = k->attrBlock();
      bundle.kindRange = SourceRange::cover(bundle.kindRange, rangeOf(k->POOL()));
    } else if (auto *k = dynamic_cast<P::MeanPoolBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::MeanPool;
      block = k->attrBlock();
      bundle.kindRange = SourceRange::cover(bundle.kindRange, rangeOf(k->POOL()));
    } else if (auto *k = dynamic_cast<P::ResponseNormBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::ResponseNorm;
      block = k->attrBlock();
      bundle.kindRange = SourceRange::cover(bundle.kindRange, rangeOf(k->NORM()));
    } else if (auto *k = dynamic_cast<P::UnknownBundleContext *>(kind)) {
      bundle.kind = ast::BundleSyntax::Unknown;
      block = k->attrBlock();
      (void)k->lambda(); // a lambda after a misspelled `where` is parsed and ignored
      if (real(k->kind)) {
        // `MAX pool`, `Response norm`: judge the two words together.
        std::string text = k->kind->getText();
        SourceRange words = rangeOf(k->kind);
        if (real(k->second)) {
          text += " " + k->second->getText();
          words = SourceRange::cover(words, rangeOf(k->second));
        }
        static const std::vector<std::string_view> kinds = {"all",      "where",     "convolve",
                                                            "max pool", "mean pool", "response norm"};
        Diagnostic &d = diags_.report(DiagId::UnknownBundleKind, rangeOf(k->kind), k->kind->getText());
        if (auto match = closestMatch(text, kinds)) {
          d.message += fmt::format("; did you mean '{}'?", *match);
          withFixIt(d, words, *match);
        }
      }
    }
    if (block) {
      bundle.hasBlock = true;
      for (P::AttrContext *attr : block->attr())
        if (attr && real(attr->name))
          bundle.attributes.push_back({ident(attr->name), buildExpr(attr->expr()), rangeOf(attr)});
    }
    return bundle;
  }

  ast::ShareDecl buildShare(P::ShareDeclContext *ctx) {
    ast::ShareDecl decl;
    decl.range = rangeOf(ctx);
    decl.keyword = ident(ctx->kw);
    if (ctx->kw && ctx->kw->getType() == P::IDENT && !reportKeyword(ctx->kw, {"share"}, "'share'")) {
      decl.incomplete = true; // not a share declaration: nothing in it is shared
      return decl;
    }
    decl.keyword.text = "share";
    for (P::ShareItemContext *item : ctx->shareItem()) {
      ast::ShareItem si;
      si.range = rangeOf(item);
      if (auto *l = dynamic_cast<P::LayerShareContext *>(item)) {
        si.form = ast::ShareItem::Form::Layer;
        si.first = ident(l->layer);
      } else if (auto *b = dynamic_cast<P::BundleShareContext *>(item)) {
        si.form = ast::ShareItem::Form::Bundle;
        si.first = ident(b->src);
        si.second = ident(b->dst);
      } else if (auto *b = dynamic_cast<P::BiasShareContext *>(item)) {
        si.form = ast::ShareItem::Form::Bias;
        si.first = ident(b->one);
        si.second = ident(b->dst);
      } else {
        decl.incomplete = true;
        continue;
      }
      if (!si.first.present() || (si.form != ast::ShareItem::Form::Layer && !si.second.present())) {
        decl.incomplete = true;
        continue;
      }
      decl.items.push_back(std::move(si));
    }
    return decl;
  }

  ast::ExprPtr errorExpr(antlr4::ParserRuleContext *ctx) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = ast::ExprKind::Error;
    e->range = rangeOf(ctx);
    return e;
  }

  static ast::Op binaryOp(size_t type) {
    switch (type) {
    case P::OR: return ast::Op::Or;
    case P::AND: return ast::Op::And;
    case P::EQ: return ast::Op::Eq;
    case P::NE: return ast::Op::Ne;
    case P::LT: return ast::Op::Lt;
    case P::LE: return ast::Op::Le;
    case P::GT: return ast::Op::Gt;
    case P::GE: return ast::Op::Ge;
    case P::PLUS: return ast::Op::Add;
    case P::MINUS: return ast::Op::Sub;
    case P::MUL: return ast::Op::Mul;
    case P::DIV: return ast::Op::Div;
    case P::MOD: return ast::Op::Mod;
    default: return ast::Op::Pow;
    }
  }

  ast::ExprPtr buildExpr(P::ExprContext *ctx) {
    if (!ctx)
      return errorExpr(nullptr);
    // Most expressions are atoms: test for them first (dynamic_cast is not free).
    if (auto *p = dynamic_cast<P::PrimaryExprContext *>(ctx))
      return buildPrimary(p->primary());
    if (auto *b = dynamic_cast<P::BinaryExprContext *>(ctx)) {
      if (!b->op || !b->lhs || !b->rhs)
        return errorExpr(ctx);
      auto e = std::make_unique<ast::Expr>();
      e->kind = ast::ExprKind::Binary;
      e->range = rangeOf(ctx);
      e->op = binaryOp(b->op->getType());
      e->nameRange = rangeOf(b->op);
      e->operands.push_back(buildExpr(b->lhs));
      e->operands.push_back(buildExpr(b->rhs));
      return e;
    }
    if (auto *u = dynamic_cast<P::UnaryExprContext *>(ctx)) {
      if (!u->op || !u->operand)
        return errorExpr(ctx);
      auto e = std::make_unique<ast::Expr>();
      e->kind = ast::ExprKind::Unary;
      e->range = rangeOf(ctx);
      e->op = u->op->getType() == P::NOT ? ast::Op::Not : ast::Op::Neg;
      e->nameRange = rangeOf(u->op);
      e->operands.push_back(buildExpr(u->operand));
      return e;
    }
    return errorExpr(ctx);
  }

  ast::ExprPtr buildPrimary(P::PrimaryContext *ctx) {
    if (!ctx)
      return errorExpr(nullptr);
    auto e = std::make_unique<ast::Expr>();
    e->range = rangeOf(ctx);
    if (auto *i = dynamic_cast<P::IntLiteralContext *>(ctx)) {
      return numberExpr(P::INT, i->INT() ? i->INT()->getSymbol()->getText() : std::string(), e->range);
    } else if (auto *r = dynamic_cast<P::RealLiteralContext *>(ctx)) {
      return numberExpr(P::REAL, r->REAL() ? r->REAL()->getSymbol()->getText() : std::string(), e->range);
    } else if (auto *l = dynamic_cast<P::NumberListExprContext *>(ctx)) {
      return buildNumberList(l->NUMBER_LIST()->getSymbol());
    } else if (auto *b = dynamic_cast<P::BoolLiteralContext *>(ctx)) {
      e->kind = ast::ExprKind::Bool;
      e->intValue = b->value && b->value->getType() == P::TRUE ? 1 : 0;
      e->text = e->intValue ? "true" : "false";
    } else if (auto *c = dynamic_cast<P::CallExprContext *>(ctx)) {
      if (!real(c->callee))
        return errorExpr(ctx);
      e->kind = ast::ExprKind::Call;
      e->text = c->callee->getText();
      e->nameRange = rangeOf(c->callee);
      for (P::ExprContext *arg : c->expr())
        e->operands.push_back(buildExpr(arg));
    } else if (auto *x = dynamic_cast<P::IndexExprContext *>(ctx)) {
      if (!real(x->name))
        return errorExpr(ctx);
      e->kind = ast::ExprKind::Index;
      e->text = x->name->getText();
      e->nameRange = rangeOf(x->name);
      e->operands.push_back(buildExpr(x->index));
    } else if (auto *n = dynamic_cast<P::NameExprContext *>(ctx)) {
      if (!real(n->name))
        return errorExpr(ctx);
      e->kind = ast::ExprKind::Name;
      e->text = n->name->getText();
      e->nameRange = rangeOf(n->name);
    } else if (auto *p = dynamic_cast<P::ParenExprContext *>(ctx)) {
      e->kind = ast::ExprKind::Paren;
      e->operands.push_back(buildExpr(p->expr()));
    } else if (auto *t = dynamic_cast<P::TupleExprContext *>(ctx)) {
      e->kind = ast::ExprKind::Tuple;
      for (P::ExprContext *item : t->expr())
        e->operands.push_back(buildExpr(item));
    } else {
      e->kind = ast::ExprKind::Error;
    }
    return e;
  }

  /// An INT or REAL literal with the text `text` at `range`; one out of
  /// range is reported (NS0106) and becomes an Error expression.
  ast::ExprPtr numberExpr(size_t type, std::string text, SourceRange range) {
    auto e = std::make_unique<ast::Expr>();
    e->range = range;
    e->text = std::move(text);
    errno = 0;
    if (type == P::INT) {
      e->kind = ast::ExprKind::Int;
      char *end = nullptr;
      e->intValue = std::strtoll(e->text.c_str(), &end, 10);
      if (errno == ERANGE) {
        diags_.report(DiagId::NumberOutOfRange, e->range, e->text);
        e->kind = ast::ExprKind::Error;
      }
    } else {
      e->kind = ast::ExprKind::Real;
      e->realValue = std::strtod(e->text.c_str(), nullptr);
      if (errno == ERANGE && (e->realValue > 1 || e->realValue < -1)) {
        diags_.report(DiagId::NumberOutOfRange, e->range, e->text);
        e->kind = ast::ExprKind::Error;
      }
    }
    return e;
  }

  /// The tuple a NUMBER_LIST token stands for (foldNumberTuples): the AST
  /// the parse tree of `[1, -2.5, ...]` would give, item by item, read back
  /// from the token's text.
  ast::ExprPtr buildNumberList(Token *token) {
    auto tuple = std::make_unique<ast::Expr>();
    tuple->kind = ast::ExprKind::Tuple;
    tuple->range = rangeOf(token);
    auto *array = dynamic_cast<ArrayToken *>(token);
    const std::string_view text = array ? array->sourceText() : std::string_view();
    const uint32_t base = tuple->range.begin;
    const std::vector<LexedToken> items = lexSource(text);
    for (size_t i = 0; i < items.size(); ++i) {
      const LexedToken &t = items[i];
      if (t.type != P::INT && t.type != P::REAL && t.type != P::MINUS)
        continue; // '[', ',' and ']'
      auto shifted = [base](const LexedToken &x) { return SourceRange{base + x.begin, base + x.end}; };
      if (t.type == P::MINUS && i + 1 < items.size()) {
        const LexedToken &number = items[++i];
        auto negation = std::make_unique<ast::Expr>();
        negation->kind = ast::ExprKind::Unary;
        negation->op = ast::Op::Neg;
        negation->range = SourceRange::cover(shifted(t), shifted(number));
        negation->nameRange = shifted(t);
        negation->operands.push_back(numberExpr(
            number.type, std::string(text.substr(number.begin, number.end - number.begin)), shifted(number)));
        tuple->operands.push_back(std::move(negation));
        continue;
      }
      tuple->operands.push_back(
          numberExpr(t.type, std::string(text.substr(t.begin, t.end - t.begin)), shifted(t)));
    }
    return tuple;
  }

  DiagnosticEngine &diags_;
  uint32_t fileSize_;
};

AstBuilder::AstBuilder(DiagnosticEngine &diags, uint32_t fileSize)
    : impl_(std::make_unique<Impl>(diags, fileSize)) {}
AstBuilder::~AstBuilder() = default;

ast::Program AstBuilder::build(P::ProgramContext *program) {
  return impl_->build(program);
}

void AstBuilder::addStatement(P::StatementContext *statement, ast::Program &out) {
  impl_->addStatement(statement, out);
}

} // namespace netc
