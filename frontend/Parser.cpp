// Parser.cpp -- runs the ANTLR-generated lexer and parser over a source file
// and builds the AST from the parse tree. Syntax errors become diagnostics
// with netc's own wording ("expected X, found Y") and did-you-mean fix-its
// for misspelled keywords. Parsing uses SLL prediction first and falls back
// to full LL only when SLL fails, which keeps large files fast.
#include "frontend/Parser.h"

#include "frontend/Lexer.h"
#include "frontend/TokenArrayStream.h"

#include "NetSharpLexer.h"
#include "NetSharpParser.h"
#include "antlr4-runtime.h"
#include "support/Spelling.h"

#include <cerrno>
#include <cstdlib>
#include <set>

namespace netc {

using antlr4::Token;
using P = NetSharpParser;

namespace {

bool validIndex(size_t index) {
  return index != INVALID_INDEX && index < (size_t{1} << 31);
}

/// The byte range of a token (indices are byte offsets in TokenArrayStream;
/// stop is inclusive); tokens ANTLR conjured while recovering have none, and
/// get the end of the file.
SourceRange tokenRange(Token *token, uint32_t fileSize) {
  if (!token || token->getType() == Token::EOF || !validIndex(token->getStartIndex()))
    return {fileSize, fileSize};
  auto begin = static_cast<uint32_t>(std::min<size_t>(token->getStartIndex(), fileSize));
  auto end = static_cast<uint32_t>(std::min<size_t>(token->getStopIndex() + 1, fileSize));
  return {begin, std::max(begin, end)};
}

TokenInfo::Category categoryOf(uint32_t type) {
  switch (type) {
  case P::SIGMOID:
  case P::LINEAR:
  case P::SOFTMAX:
  case P::RLINEAR:
  case P::SQUARE:
  case P::SQRT:
  case P::SRLINEAR:
  case P::ABS:
  case P::TANH:
  case P::BRLINEAR: return TokenInfo::Category::Function;
  case P::IDENT: return TokenInfo::Category::Identifier;
  case P::INT: return TokenInfo::Category::Integer;
  case P::REAL: return TokenInfo::Category::Real;
  case P::LINE_COMMENT:
  case P::BLOCK_COMMENT:
  case P::UNTERMINATED_COMMENT: return TokenInfo::Category::Comment;
  case P::ERROR_CHAR: return TokenInfo::Category::Error;
  default:
    return type >= P::CONST && type <= P::FALSE ? TokenInfo::Category::Keyword
                                                : TokenInfo::Category::Punctuation;
  }
}

/// Human wording for a token type in "expected ..." messages.
std::string describeTokenType(const antlr4::dfa::Vocabulary &vocabulary, size_t type) {
  if (type == Token::EOF)
    return "end of file";
  switch (type) {
  case P::IDENT: return "a name";
  case P::INT: return "an integer";
  case P::REAL: return "a number";
  default: break;
  }
  std::string literal = vocabulary.getLiteralName(type);
  if (literal.empty())
    return vocabulary.getSymbolicName(type);
  return literal; // already quoted, e.g. 'from'
}

std::string describeExpected(const antlr4::dfa::Vocabulary &vocabulary,
                             const antlr4::misc::IntervalSet &expected) {
  std::vector<std::string> parts;
  std::set<size_t> types;
  for (size_t t : expected.toList())
    types.insert(t);
  auto takeGroup = [&](std::initializer_list<size_t> group, size_t needed, const char *name) {
    size_t present = 0;
    for (size_t t : group)
      present += types.count(t);
    if (present >= needed) {
      for (size_t t : group)
        types.erase(t);
      parts.emplace_back(name);
    }
  };
  takeGroup({P::INT, P::REAL, P::TRUE, P::FALSE, P::LPAREN, P::LBRACK, P::MINUS, P::NOT}, 5, "an expression");
  if (!parts.empty() && parts[0] == "an expression")
    for (size_t t : {P::IDENT, P::ABS, P::MAX, P::SIGMOID, P::LINEAR, P::SOFTMAX, P::RLINEAR, P::SQUARE,
                     P::SQRT, P::SRLINEAR, P::TANH, P::BRLINEAR})
      types.erase(t);
  takeGroup({P::SIGMOID, P::LINEAR, P::SOFTMAX, P::RLINEAR, P::SQUARE, P::SQRT, P::SRLINEAR, P::ABS, P::TANH,
             P::BRLINEAR},
            5, "an output function");
  takeGroup(
      {P::POW, P::MUL, P::DIV, P::MOD, P::PLUS, P::LT, P::LE, P::GT, P::GE, P::EQ, P::NE, P::AND, P::OR}, 8,
      "an operator");
  // Where a keyword is expected, the grammar also takes an identifier only to
  // catch misspellings; "a name" would mislead there.
  for (size_t keyword : {P::CONST, P::INPUT, P::HIDDEN_LAYER, P::OUTPUT, P::SHARE, P::AUTO, P::FROM, P::ALL,
                         P::WHERE, P::CONVOLVE})
    if (types.count(keyword)) {
      types.erase(P::IDENT);
      break;
    }
  for (size_t t : types)
    parts.push_back(describeTokenType(vocabulary, t));
  if (parts.empty())
    return "something else";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0)
      out += i + 1 == parts.size() ? " or " : ", ";
    out += parts[i];
  }
  return out;
}

/// Turns ANTLR's syntax errors into netc diagnostics.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(DiagnosticEngine &diags, uint32_t fileSize) : diags_(diags), fileSize_(fileSize) {}

  void syntaxError(antlr4::Recognizer *recognizer, Token *offending, size_t, size_t, const std::string &,
                   std::exception_ptr) override {
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    if (!parser)
      return;
    SourceRange range = rangeOf(offending);
    // One error per position: ANTLR may report the same spot twice while recovering.
    if (!reported_.insert(range.begin).second)
      return;
    // One syntax error per statement: what follows the first in the same
    // statement is most often a consequence of ANTLR's repair (a
    // recognised misspelling is repaired exactly and does not count).
    size_t index = offending ? offending->getTokenIndex() : INVALID_INDEX;
    if (validIndex(index) && lastErrorToken_ && validIndex(*lastErrorToken_) && index > *lastErrorToken_ &&
        !statementEndsBetween(parser, *lastErrorToken_, index))
      return;
    lastErrorToken_ = validIndex(index) ? std::optional<size_t>(index) : std::nullopt;
    antlr4::misc::IntervalSet expected;
    try {
      expected = parser->getExpectedTokens();
    } catch (...) {
    }
    const auto &vocabulary = parser->getVocabulary();
    std::string found = offending && offending->getType() != Token::EOF ? "'" + offending->getText() + "'"
                                                                        : std::string("end of file");
    // A misspelled keyword where a keyword was expected: suggest it.
    if (offending && offending->getType() == P::IDENT) {
      std::vector<std::string> literals;
      for (size_t t : expected.toList()) {
        std::string literal = vocabulary.getLiteralName(t);
        if (literal.size() > 2 && std::isalpha(static_cast<unsigned char>(literal[1])))
          literals.push_back(literal.substr(1, literal.size() - 2));
      }
      std::vector<std::string_view> candidates(literals.begin(), literals.end());
      if (auto match = closestMatch(offending->getText(), candidates)) {
        Diagnostic &d = diags_.report(DiagId::MisspelledKeyword, range, offending->getText(), *match);
        withFixIt(d, range, *match);
        lastErrorToken_.reset();
        return;
      }
    }
    // A keyword where a name belongs (`hidden max [5]`, `const all = 3`).
    if (offending && offending->getType() >= P::CONST && offending->getType() <= P::BRLINEAR &&
        validIndex(index) && index > 0) {
      size_t previous = parser->getTokenStream()->get(index - 1)->getType();
      if (previous == P::CONST || previous == P::INPUT || previous == P::HIDDEN_LAYER ||
          previous == P::OUTPUT || previous == P::FROM) {
        diags_.report(DiagId::SyntaxError, range,
                      "expected a name, found " + found + ", which is a keyword and cannot name anything");
        return;
      }
    }
    diags_.report(DiagId::SyntaxError, range,
                  "expected " + describeExpected(vocabulary, expected) + ", found " + found);
  }

  static bool statementEndsBetween(antlr4::Parser *parser, size_t from, size_t to) {
    antlr4::TokenStream *tokens = parser->getTokenStream();
    for (size_t i = from; i < to; ++i) {
      size_t type = tokens->get(i)->getType();
      if (type == P::SEMI || type == P::RBRACE)
        return true;
    }
    return false;
  }

  SourceRange rangeOf(Token *token) const { return tokenRange(token, fileSize_); }

private:
  DiagnosticEngine &diags_;
  uint32_t fileSize_;
  std::set<uint32_t> reported_;
  std::optional<size_t> lastErrorToken_; // token index of the last unrepaired syntax error
};

/// ANTLR's recovery, tuned for Net#: an identifier where a keyword was
/// expected and that is a misspelling of it (`max Pool`, `response Norm`) is
/// taken as that keyword after one diagnostic, and a statement keyword is
/// never deleted as "extraneous" (a missing `;` before it is inserted instead).
class NetSharpErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  Token *recoverInline(antlr4::Parser *recognizer) override {
    Token *current = recognizer->getCurrentToken();
    if (current && current->getType() == P::IDENT) {
      const auto &vocabulary = recognizer->getVocabulary();
      for (size_t type : recognizer->getExpectedTokens().toList()) {
        std::string literal = vocabulary.getLiteralName(type);
        if (literal.size() < 3 || !std::isalpha(static_cast<unsigned char>(literal[1])))
          continue;
        literal = literal.substr(1, literal.size() - 2);
        if (!closestMatch(current->getText(), {literal}))
          continue;
        if (!inErrorRecoveryMode(recognizer)) {
          beginErrorCondition(recognizer);
          recognizer->notifyErrorListeners(current, "misspelled keyword", nullptr);
        }
        if (auto *token = dynamic_cast<ArrayToken *>(current))
          token->setType(type);
        reportMatch(recognizer);
        recognizer->consume();
        return current;
      }
    }
    return DefaultErrorStrategy::recoverInline(recognizer);
  }

protected:
  Token *singleTokenDeletion(antlr4::Parser *recognizer) override {
    switch (recognizer->getCurrentToken()->getType()) {
    case P::CONST:
    case P::INPUT:
    case P::HIDDEN_LAYER:
    case P::OUTPUT:
    case P::SHARE: return nullptr;
    default: return DefaultErrorStrategy::singleTokenDeletion(recognizer);
    }
  }
};

/// Builds the AST from the parse tree. Every accessor may return null after
/// error recovery, so every step checks.
class AstBuilder {
public:
  AstBuilder(DiagnosticEngine &diags, uint32_t fileSize) : diags_(diags), fileSize_(fileSize) {}

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
      e->kind = ast::ExprKind::Int;
      e->text = i->INT() ? i->INT()->getSymbol()->getText() : std::string();
      errno = 0;
      char *end = nullptr;
      long long v = std::strtoll(e->text.c_str(), &end, 10);
      if (errno == ERANGE) {
        diags_.report(DiagId::NumberOutOfRange, e->range, e->text);
        e->kind = ast::ExprKind::Error;
      }
      e->intValue = v;
    } else if (auto *r = dynamic_cast<P::RealLiteralContext *>(ctx)) {
      e->kind = ast::ExprKind::Real;
      e->text = r->REAL() ? r->REAL()->getSymbol()->getText() : std::string();
      errno = 0;
      double v = std::strtod(e->text.c_str(), nullptr);
      if (errno == ERANGE && (v > 1 || v < -1)) {
        diags_.report(DiagId::NumberOutOfRange, e->range, e->text);
        e->kind = ast::ExprKind::Error;
      }
      e->realValue = v;
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

  DiagnosticEngine &diags_;
  uint32_t fileSize_;
};

/// Converts lexed tokens to TokenInfos and reports stray characters (with
/// invalid UTF-8 named as such) and unterminated comments.
std::vector<TokenInfo> describeTokens(const SourceFile &file, const std::vector<LexedToken> &tokens,
                                      DiagnosticEngine &diags) {
  std::vector<TokenInfo> out;
  out.reserve(tokens.size());
  auto shownCharacter = [&](const LexedToken &t) {
    std::string text(file.slice({t.begin, t.end}));
    auto first = static_cast<unsigned char>(text[0]);
    if (text.size() == 1 && (first >= 0x80 || !std::isprint(first)))
      return fmt::format("\\x{:02X}", first);
    return text;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const LexedToken &token = tokens[i];
    SourceRange range{token.begin, token.end};
    if (isErrorToken(token.type)) {
      // A run of adjacent stray characters is one problem, not one per byte.
      size_t last = i;
      while (last + 1 < tokens.size() && isErrorToken(tokens[last + 1].type) &&
             tokens[last + 1].begin == tokens[last].end)
        ++last;
      if (last == i) {
        Diagnostic &d = diags.report(DiagId::UnexpectedCharacter, range, shownCharacter(token));
        if (token.end - token.begin == 1 && static_cast<unsigned char>(file.text()[token.begin]) >= 0x80)
          d.message += " (not valid UTF-8)";
      } else {
        diags.report(DiagId::UnexpectedCharacters, {token.begin, tokens[last].end}, last - i + 1,
                     shownCharacter(token));
      }
      for (size_t k = i; k <= last; ++k)
        out.push_back(
            {tokenTypeName(tokens[k].type), categoryOf(tokens[k].type), {tokens[k].begin, tokens[k].end}});
      i = last;
      continue;
    }
    if (isUnterminatedCommentToken(token.type)) {
      diags.report(DiagId::UnterminatedComment, {range.begin, range.begin + 2});
    }
    TokenInfo info;
    info.kind = tokenTypeName(token.type);
    info.category = categoryOf(token.type);
    info.range = range;
    out.push_back(std::move(info));
  }
  return out;
}

/// The parser and the AST walkers recurse once per nesting level; a bound on
/// the nesting keeps hostile input from exhausting the stack. The estimate
/// counts, per bracket level, the operators since the last separator.
constexpr size_t kMaxNesting = 1000;

std::optional<SourceRange> findExcessiveNesting(const std::vector<LexedToken> &tokens) {
  std::vector<size_t> opsPerLevel(1, 0);
  size_t total = 1;
  for (const LexedToken &token : tokens) {
    if (token.hidden)
      continue;
    switch (token.type) {
    case P::LPAREN:
    case P::LBRACK:
      opsPerLevel.push_back(0);
      ++total;
      break;
    case P::RPAREN:
    case P::RBRACK:
      if (opsPerLevel.size() > 1) {
        total -= opsPerLevel.back() + 1;
        opsPerLevel.pop_back();
      }
      break;
    case P::COMMA:
    case P::SEMI:
    case P::LBRACE:
    case P::RBRACE:
    case P::ASSIGN:
    case P::ARROW:
      total -= opsPerLevel.back();
      opsPerLevel.back() = 0;
      break;
    case P::OR:
    case P::AND:
    case P::EQ:
    case P::NE:
    case P::LT:
    case P::LE:
    case P::GT:
    case P::GE:
    case P::PLUS:
    case P::MINUS:
    case P::MUL:
    case P::DIV:
    case P::MOD:
    case P::POW:
    case P::NOT:
      ++opsPerLevel.back();
      ++total;
      break;
    default: break;
    }
    if (total > kMaxNesting)
      return SourceRange{token.begin, token.end};
  }
  return std::nullopt;
}

} // namespace

const std::vector<std::string_view> &statementKeywords() {
  static const std::vector<std::string_view> words = {"const", "input", "hidden", "output", "share"};
  return words;
}

std::vector<TokenInfo> lexTokens(const SourceFile &file, DiagnosticEngine &diags) {
  return describeTokens(file, lexSource(file.text()), diags);
}

ParseResult parseProgram(const SourceFile &file, DiagnosticEngine &diags) {
  ParseResult result;
  std::vector<LexedToken> lexed = lexSource(file.text());
  result.tokens = describeTokens(file, lexed, diags);
  for (const TokenInfo &token : result.tokens)
    if (token.category == TokenInfo::Category::Comment)
      result.program.comments.push_back({token.range, token.kind != "LINE_COMMENT"});
  if (auto deep = findExcessiveNesting(lexed)) {
    diags.report(DiagId::NestingTooDeep, *deep, kMaxNesting);
    return result;
  }

  TokenArrayStream tokens(file.text(), lexed, file.name());
  NetSharpParser parser(&tokens);
  parser.removeErrorListeners();

  // Stage 1: fast SLL prediction, one statement at a time, bailing out at the
  // first syntax error. Each statement's parse tree is turned into AST and
  // freed before the next, so memory stays small on huge files.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  std::vector<ast::Comment> comments = std::move(result.program.comments);
  DiagnosticEngine stageDiags; // kept only if the fast stage succeeds
  AstBuilder fastBuilder(stageDiags, file.size());
  bool parsed = true;
  try {
    while (tokens.LA(1) != Token::EOF) {
      fastBuilder.addStatement(parser.statement(), result.program);
      parser.getTreeTracker().reset();
    }
  } catch (const antlr4::ParseCancellationException &) {
    parsed = false;
  }
  parser.getTreeTracker().reset();
  if (parsed) {
    diags.absorb(std::move(stageDiags));
  } else {
    // Stage 2: the whole file again with full LL, error recovery and reporting.
    result.program = ast::Program{};
    tokens.seek(0);
    parser.reset();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    parser.setErrorHandler(std::make_shared<NetSharpErrorStrategy>());
    SyntaxErrorListener listener(diags, file.size());
    parser.addErrorListener(&listener);
    P::ProgramContext *tree = nullptr;
    try {
      tree = parser.program();
    } catch (const std::exception &e) {
      diags.report(DiagId::SyntaxError, {file.size(), file.size()},
                   std::string("the parser gave up: ") + e.what());
      tree = nullptr;
    }
    AstBuilder builder(diags, file.size());
    result.program = builder.build(tree);
    parser.removeErrorListeners();
  }
  result.program.comments = std::move(comments);
  return result;
}

} // namespace netc
