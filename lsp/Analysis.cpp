// Analysis.cpp -- one document's compilation and name index (Analysis.h),
// and the hover texts: a layer's kind, shape, nodes, function (and whether it
// is the default), parameters, FLOPs and, with a cost table, its training
// time; a bundle's geometry; a const's value.
#include "lsp/Analysis.h"

#include "codegen/Codegen.h"
#include "frontend/ConstEvaluator.h"
#include "support/NumberText.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>

namespace netc::lsp {

namespace {

bool contains(SourceRange range, uint32_t offset) {
  return offset >= range.begin && offset <= range.end && !range.empty();
}

template <class Get> std::string perDim(const ir::Geometry &g, Get get) {
  std::vector<int64_t> values;
  for (const ir::DimGeometry &d : g.dims)
    values.push_back(get(d));
  return bracketed(values);
}

} // namespace

namespace {

/// The compilation of `text`, or for a text over `maxBytes` that of an
/// empty one with one NS0001 error, nothing parsed.
std::unique_ptr<Compilation> compileBounded(std::string name, std::string text, uint64_t maxBytes) {
  if (text.size() <= maxBytes)
    return compileSource(SourceFile(std::move(name), std::move(text)), CompileOptions{});
  auto c = std::make_unique<Compilation>(SourceFile(name, ""));
  c->diags.report(DiagId::CannotReadFile, SourceRange{0, 0}, name,
                  sourceTooLargeReason(text.size(), maxBytes));
  return c;
}

} // namespace

Analysis::Analysis(std::string name, std::string text, const cost::CostTable *costTable,
                   std::string costTableName, uint64_t maxBytes)
    : compilation_(compileBounded(std::move(name), std::move(text), maxBytes)), costTable_(costTable),
      costTableName_(std::move(costTableName)), lines_(compilation_->file.text()) {
  index();
}

const std::vector<cost::LayerCost> &Analysis::layerCosts() const {
  if (layerCosts_)
    return *layerCosts_;
  layerCosts_.emplace();
  if (!costTable_ || compilation_->diags.hasErrors())
    return *layerCosts_;
  plan::PlanOptions options; // SGD with momentum, sizes only: nothing is allocated or run
  options.update.hyper.momentum = 0.9f;
  options.buildTables = false;
  options.maxMemoryBytes = UINT64_MAX;
  if (auto plan = plan::buildPlan(compilation_->network, options))
    *layerCosts_ = cost::layerCosts(compilation_->network, *plan, costTable_->profileFor(1));
  return *layerCosts_;
}

void Analysis::indexExpr(const ast::Expr &expr, const std::vector<std::string> &parameters) {
  if ((expr.kind == ast::ExprKind::Name || expr.kind == ast::ExprKind::Index ||
       expr.kind == ast::ExprKind::Call) &&
      !expr.text.empty()) {
    const bool parameter = std::find(parameters.begin(), parameters.end(), expr.text) != parameters.end();
    if (parameter || expr.kind != ast::ExprKind::Call)
      uses_.push_back(
          {parameter ? NameKind::Parameter : NameKind::Const, expr.text, expr.nameRange, false, -1});
  }
  for (const ast::ExprPtr &operand : expr.operands)
    if (operand)
      indexExpr(*operand, parameters);
}

void Analysis::index() {
  const ast::Program &program = compilation_->parse.program;
  auto declare = [&](NameKind kind, const ast::Identifier &name, SourceRange full) {
    declarations_.push_back({kind, name.text, name.range, full, nullptr, nullptr});
    uses_.push_back({kind, name.text, name.range, true, static_cast<int>(declarations_.size() - 1)});
    return &declarations_.back();
  };
  // Declarations first (consts and layers may be used before they are written).
  for (const ast::Statement &statement : program.statements) {
    if (const auto *c = std::get_if<ast::ConstDecl>(&statement))
      for (const ast::ConstItem &item : c->items)
        if (item.name.present())
          declare(NameKind::Const, item.name, item.range)->constant = &item;
    if (const auto *g = std::get_if<ast::LayerGroup>(&statement))
      for (const ast::LayerDecl &layer : g->layers)
        if (layer.name.present())
          declare(NameKind::Layer, layer.name, layer.range)->layer = &layer;
  }
  auto layerUse = [&](const ast::Identifier &id) {
    if (id.present())
      uses_.push_back({NameKind::Layer, id.text, id.range, false, -1});
  };
  auto attributes = [&](const std::vector<ast::Attribute> &list, const std::vector<std::string> &parameters) {
    for (const ast::Attribute &a : list) {
      if (a.name.present())
        attributes_.push_back({a.name.text, a.name.range});
      if (a.value)
        indexExpr(*a.value, parameters);
    }
  };
  for (const ast::Statement &statement : program.statements) {
    if (const auto *c = std::get_if<ast::ConstDecl>(&statement))
      for (const ast::ConstItem &item : c->items)
        if (item.value)
          indexExpr(*item.value, {});
    if (const auto *s = std::get_if<ast::ShareDecl>(&statement))
      for (const ast::ShareItem &item : s->items) {
        if (item.form != ast::ShareItem::Form::Bias)
          layerUse(item.first);
        layerUse(item.second);
      }
    const auto *g = std::get_if<ast::LayerGroup>(&statement);
    if (!g)
      continue;
    for (const ast::LayerDecl &layer : g->layers) {
      for (const ast::ExprPtr &dim : layer.shape.dims)
        if (dim)
          indexExpr(*dim, {});
      attributes(layer.layerAttributes, {});
      for (const ast::BundleDecl &bundle : layer.bundles) {
        layerUse(bundle.source);
        std::vector<std::string> parameters;
        if (bundle.lambda) {
          for (const ast::Identifier *p : {&bundle.lambda->src, &bundle.lambda->dst})
            if (p->present()) {
              declare(NameKind::Parameter, *p, bundle.lambda->range);
              parameters.push_back(p->text);
            }
          if (bundle.lambda->body)
            indexExpr(*bundle.lambda->body, parameters);
        }
        attributes(bundle.attributes, {});
      }
    }
  }
  // Resolve references: a parameter to the lambda around it, others by name
  // (the first declaration of a name; a second one is an error Sema reports).
  std::unordered_map<std::string, int> layers, consts;
  std::vector<int> parameters;
  for (size_t d = 0; d < declarations_.size(); ++d) {
    const Declaration &decl = declarations_[d];
    if (decl.kind == NameKind::Parameter)
      parameters.push_back(static_cast<int>(d));
    else
      (decl.kind == NameKind::Layer ? layers : consts).emplace(decl.name, static_cast<int>(d));
  }
  for (NameUse &use : uses_) {
    if (use.definition)
      continue;
    if (use.kind == NameKind::Parameter) {
      for (int d : parameters) {
        const Declaration &decl = declarations_[static_cast<size_t>(d)];
        if (decl.name == use.name && contains(decl.fullRange, use.range.begin)) {
          use.declaration = d;
          break;
        }
      }
      continue;
    }
    const auto &names = use.kind == NameKind::Layer ? layers : consts;
    if (auto it = names.find(use.name); it != names.end())
      use.declaration = it->second;
  }
  std::sort(uses_.begin(), uses_.end(),
            [](const NameUse &a, const NameUse &b) { return a.range.begin < b.range.begin; });
}

const NameUse *Analysis::useAt(uint32_t offset) const {
  for (const NameUse &use : uses_)
    if (contains(use.range, offset))
      return &use;
  return nullptr;
}

std::vector<const NameUse *> Analysis::usesOf(int index) const {
  std::vector<const NameUse *> out;
  for (const NameUse &use : uses_)
    if (use.declaration == index)
      out.push_back(&use);
  std::stable_partition(out.begin(), out.end(), [](const NameUse *u) { return u->definition; });
  return out;
}

const ir::Layer *Analysis::irLayer(const Declaration &d) const {
  const ir::Network &net = compilation_->network;
  const int index = net.findLayer(d.name);
  if (index < 0)
    return nullptr;
  const ir::Layer &layer = net.layers[static_cast<size_t>(index)];
  return layer.nameRange == d.nameRange ? &layer : nullptr;
}

std::string Analysis::describeLayer(const ir::Layer &layer) const {
  const ir::Network &net = compilation_->network;
  std::string shape =
      layer.nodes > 0 ? bracketed(layer.shape) : (layer.shapeAuto ? "auto (not inferred)" : "invalid");
  std::string out = fmt::format("**{}** layer `{}` {}", ir::layerKindName(layer.kind), layer.name, shape);
  if (layer.shapeAuto && layer.nodes > 0)
    out += " (inferred from `auto`)";
  out += "\n\n";
  out += fmt::format("- nodes: {}\n", groupDigits(layer.nodes));
  if (layer.kind != ir::LayerKind::Input && layer.function)
    out += fmt::format("- function: {}{}\n", ir::activationName(*layer.function),
                       layer.functionIsDefault ? " (the default)" : "");
  if (layer.kind != ir::LayerKind::Input) {
    out += fmt::format("- parameters: {}\n", groupDigits(layer.params));
    out += fmt::format("- FLOPs: {} per sample\n", groupDigits(layer.flops));
  }
  for (const ir::Bundle &b : layer.bundles)
    out += fmt::format("- from `{}`: {}\n", b.sourceName, ir::bundleKindName(b.kind));
  const std::vector<cost::LayerCost> &costs = layerCosts();
  const auto index = static_cast<size_t>(&layer - net.layers.data());
  if (layer.kind != ir::LayerKind::Input && index < costs.size()) {
    // A step of kHoverBatch samples: forward, backward and the layer's share of the update.
    constexpr int64_t kHoverBatch = 32;
    const double us = costs[index].timeUs(kHoverBatch) + costs[index].updateUs;
    out +=
        fmt::format("- training time: about {:.3g} us per step of {} samples (forward, backward and update; "
                    "cost table '{}', {} thread(s))\n",
                    us, kHoverBatch, costTableName_, costTable_->profileFor(1).threads);
  }
  return out;
}

std::string Analysis::describeBundle(const ir::Layer &layer, const ir::Bundle &bundle) const {
  std::string out = fmt::format("**{}** bundle from `{}` to `{}`\n\n", ir::bundleKindName(bundle.kind),
                                bundle.sourceName, layer.name);
  if (ir::bundleIsGeometric(bundle.kind) && bundle.valid && !bundle.geometry.dims.empty()) {
    const ir::Geometry &g = bundle.geometry;
    out += fmt::format("- InputShape: {}\n", perDim(g, [](const ir::DimGeometry &d) { return d.input; }));
    out += fmt::format("- KernelShape: {}\n", perDim(g, [](const ir::DimGeometry &d) { return d.kernel; }));
    out += fmt::format("- Stride: {}\n", perDim(g, [](const ir::DimGeometry &d) { return d.stride; }));
    out +=
        fmt::format("- N per dimension: {}\n", perDim(g, [](const ir::DimGeometry &d) { return d.count; }));
    out += fmt::format("- padding (lower, upper): {}, {}\n",
                       perDim(g, [](const ir::DimGeometry &d) { return d.lowerPad; }),
                       perDim(g, [](const ir::DimGeometry &d) { return d.upperPad; }));
    if (bundle.kind == ir::BundleKind::Convolve) {
      out += fmt::format("- MapCount: {} ({} maps)\n",
                         perDim(g, [](const ir::DimGeometry &d) { return d.maps; }), g.maps);
      std::string sharing = "[";
      for (size_t i = 0; i < g.dims.size(); ++i)
        sharing += fmt::format("{}{}", i ? ", " : "", g.dims[i].sharing ? "true" : "false");
      out += fmt::format("- Sharing: {}]\n- kernels: {} of {} weights\n", sharing, groupDigits(g.kernels),
                         groupDigits(g.kernelSize));
    }
    out += fmt::format("- outputs: {}\n", groupDigits(g.outputNodes));
  }
  if (bundle.kind == ir::BundleKind::Where || bundle.kind == ir::BundleKind::All)
    out += fmt::format("- connections: {}\n", groupDigits(bundle.edges));
  if (bundle.lowering.lowered)
    out += fmt::format("- kernel: {}\n", ir::kernelKindName(bundle.lowering.kernel));
  out += fmt::format("- parameters: {}\n- FLOPs: {} per sample\n", groupDigits(bundle.params),
                     groupDigits(bundle.flops));
  return out;
}

std::string Analysis::describeAttribute(const ir::Layer &layer, const ir::Bundle &bundle,
                                        ir::Attr attr) const {
  std::string written = "(not evaluated)";
  if (auto it = bundle.intAttrs.find(attr); it != bundle.intAttrs.end())
    written = bracketed(it->second);
  else if (auto b = bundle.boolAttrs.find(attr); b != bundle.boolAttrs.end())
    written = fmt::format("[{}]", fmt::join(b->second, ", "));
  else if (auto n = bundle.numberAttrs.find(attr); n != bundle.numberAttrs.end())
    written = fmt::format("{}", n->second);
  else if (attr == ir::Attr::Weights && bundle.weights)
    written = fmt::format("{} values", bundle.weights->size());
  else if (attr == ir::Attr::AvgOverFullKernel)
    written = bundle.avgOverFullKernel ? "true" : "false";
  std::string out = fmt::format("`{}` of the **{}** bundle from `{}` to `{}`: {}", ir::attrName(attr),
                                ir::bundleKindName(bundle.kind), bundle.sourceName, layer.name, written);
  // What the geometry uses per dimension, after defaults and broadcasting (D7-D9).
  const ir::Geometry &g = bundle.geometry;
  if (bundle.valid && !g.dims.empty()) {
    std::string used;
    switch (attr) {
    case ir::Attr::Stride: used = perDim(g, [](const ir::DimGeometry &d) { return d.stride; }); break;
    case ir::Attr::MapCount: used = perDim(g, [](const ir::DimGeometry &d) { return d.maps; }); break;
    case ir::Attr::LowerPad: used = perDim(g, [](const ir::DimGeometry &d) { return d.lowerPad; }); break;
    case ir::Attr::UpperPad: used = perDim(g, [](const ir::DimGeometry &d) { return d.upperPad; }); break;
    case ir::Attr::Padding:
      used = perDim(g, [](const ir::DimGeometry &d) { return d.lowerPad; }) + " below, " +
             perDim(g, [](const ir::DimGeometry &d) { return d.upperPad; }) + " above";
      break;
    case ir::Attr::Sharing: {
      std::vector<std::string> flags;
      for (const ir::DimGeometry &d : g.dims)
        flags.push_back(d.sharing ? "true" : "false");
      used = fmt::format("[{}]", fmt::join(flags, ", "));
      break;
    }
    default: break;
    }
    if (!used.empty())
      out += fmt::format("\n\nper dimension, as used: {}", used);
  }
  return out;
}

std::optional<std::pair<std::string, SourceRange>> Analysis::hover(uint32_t offset) const {
  const ir::Network &net = compilation_->network;
  if (const NameUse *use = useAt(offset)) {
    if (use->declaration < 0)
      return std::make_pair(fmt::format("`{}`: not declared", use->name), use->range);
    const Declaration &d = declarations_[static_cast<size_t>(use->declaration)];
    if (d.kind == NameKind::Layer)
      if (const ir::Layer *layer = irLayer(d))
        return std::make_pair(describeLayer(*layer), use->range);
    if (d.kind == NameKind::Const && d.constant) {
      DiagnosticEngine quiet;
      ConstEvaluator consts(quiet);
      for (const ast::Statement &statement : compilation_->parse.program.statements)
        if (const auto *c = std::get_if<ast::ConstDecl>(&statement))
          for (const ast::ConstItem &item : c->items)
            if (item.name.present() && !consts.isDeclared(item.name.text))
              consts.declare(item);
      const Value value = consts.valueOf(d.name, use->range);
      return std::make_pair(fmt::format("**const** `{}` = {}{}", d.name,
                                        value.isError() ? "(invalid)" : value.toString(),
                                        value.isError() ? "" : " (" + describeType(value.type) + ")"),
                            use->range);
    }
    if (d.kind == NameKind::Parameter)
      return std::make_pair(
          fmt::format(
              "`{}`: a parameter of the `where` predicate, the coordinates of a source or destination node",
              d.name),
          use->range);
  }
  // An attribute name inside a bundle's block.
  for (const AttributeUse &attr : attributes_) {
    if (!contains(attr.range, offset))
      continue;
    for (const ir::Attr a : ir::allAttrs())
      if (ir::attrName(a) == attr.name)
        for (const ir::Layer &layer : net.layers)
          for (const ir::Bundle &bundle : layer.bundles)
            if (contains(bundle.range, offset))
              return std::make_pair(describeAttribute(layer, bundle, a), attr.range);
  }
  // A bundle: its kind keyword or anywhere in it that is not a name.
  for (const ir::Layer &layer : net.layers)
    for (const ir::Bundle &bundle : layer.bundles)
      if (contains(bundle.kindRange, offset) || contains(bundle.range, offset))
        return std::make_pair(describeBundle(layer, bundle),
                              bundle.kindRange.empty() ? bundle.range : bundle.kindRange);
  // A layer's function or shape.
  for (const ir::Layer &layer : net.layers)
    if (contains(layer.functionRange, offset) || contains(layer.shapeRange, offset))
      return std::make_pair(describeLayer(layer),
                            contains(layer.functionRange, offset) ? layer.functionRange : layer.shapeRange);
  return std::nullopt;
}

} // namespace netc::lsp
