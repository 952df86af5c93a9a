// Analysis.h -- what the language server knows about one version of one
// document: the compilation `netc check` would run (same driver, same
// diagnostics), and an index of the names in it (layers, consts, lambda
// parameters: definitions and every use) built from the AST, which hover,
// go to definition, references, rename, completion, symbols, inlay hints and
// semantic tokens read.
#pragma once

#include "api/Driver.h"
#include "codegen/CostModel.h"
#include "lsp/Documents.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netc::lsp {

enum class NameKind { Layer, Const, Parameter };

/// One written occurrence of a name.
struct NameUse {
  NameKind kind = NameKind::Layer;
  std::string name;
  SourceRange range;
  bool definition = false;
  int declaration = -1; // index into Analysis::declarations, -1 when unresolved
};

/// A declared name: a layer, a const, or a `where` lambda's parameter.
struct Declaration {
  NameKind kind = NameKind::Layer;
  std::string name;
  SourceRange nameRange, fullRange;
  const ast::LayerDecl *layer = nullptr;    // Layer
  const ast::ConstItem *constant = nullptr; // Const
};

/// An attribute name written inside a bundle's or layer's block.
struct AttributeUse {
  std::string name;
  SourceRange range;
};

class Analysis {
public:
  /// Compiles `text` as `netc check` does (all passes) and indexes it. With
  /// a cost table, a layer's hover adds its training time on it. A text
  /// longer than `maxBytes` is not parsed: the analysis is that of an empty
  /// document with one NS0001 error saying it is too large (checking takes a
  /// large multiple of a text's size: CompileOptions::maxSourceBytes).
  Analysis(std::string name, std::string text, const cost::CostTable *costTable = nullptr,
           std::string costTableName = {}, uint64_t maxBytes = CompileOptions{}.maxSourceBytes);

  const Compilation &compilation() const { return *compilation_; }
  const SourceFile &file() const { return compilation_->file; }
  /// The text's lines as the protocol counts them.
  const LineIndex &lines() const { return lines_; }
  const std::vector<Declaration> &declarations() const { return declarations_; }
  const std::vector<NameUse> &uses() const { return uses_; }
  const std::vector<AttributeUse> &attributes() const { return attributes_; }

  /// The name use (definition or reference) covering `offset`, if any.
  const NameUse *useAt(uint32_t offset) const;
  /// Every use of declaration `index`, its definition first.
  std::vector<const NameUse *> usesOf(int index) const;
  /// Markdown describing what is at `offset` and the range it describes: a
  /// layer (its name anywhere, its shape or function), a const or a `where`
  /// parameter (at any use), a bundle attribute (its value as written and as
  /// used), a bundle (anywhere else inside it); nothing elsewhere.
  std::optional<std::pair<std::string, SourceRange>> hover(uint32_t offset) const;
  /// The IR layer of a layer declaration (null when Sema dropped it).
  const ir::Layer *irLayer(const Declaration &d) const;

private:
  void index();
  void indexExpr(const ast::Expr &expr, const std::vector<std::string> &parameters);
  std::string describeLayer(const ir::Layer &layer) const;
  std::string describeBundle(const ir::Layer &layer, const ir::Bundle &bundle) const;
  std::string describeAttribute(const ir::Layer &layer, const ir::Bundle &bundle, ir::Attr attr) const;

  /// Each layer's share of a training step on the cost table (computed on
  /// the first hover that needs it; empty when the network has errors).
  const std::vector<cost::LayerCost> &layerCosts() const;

  std::unique_ptr<Compilation> compilation_;
  const cost::CostTable *costTable_ = nullptr;
  std::string costTableName_;
  mutable std::optional<std::vector<cost::LayerCost>> layerCosts_;
  LineIndex lines_;
  std::vector<Declaration> declarations_;
  std::vector<NameUse> uses_;
  std::vector<AttributeUse> attributes_;
};

} // namespace netc::lsp
