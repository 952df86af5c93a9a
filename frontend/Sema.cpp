// Sema.cpp -- lowers the AST to the network IR: declares layers and consts,
// evaluates shapes and attributes with their types (D2, D8 broadcasting is
// left to the geometry pass), resolves output functions, bundle sources and
// share items, and reports every local problem with a did-you-mean where a
// name is close to a known one (D1).
#include "frontend/Sema.h"

#include "frontend/ConstEvaluator.h"
#include "support/CheckedMath.h"
#include "support/Spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace netc {

namespace {

ir::LayerKind toIr(ast::LayerKind kind) {
  switch (kind) {
  case ast::LayerKind::Input: return ir::LayerKind::Input;
  case ast::LayerKind::Output: return ir::LayerKind::Output;
  case ast::LayerKind::Hidden: break;
  }
  return ir::LayerKind::Hidden;
}

std::optional<ir::BundleKind> toIr(ast::BundleSyntax kind) {
  switch (kind) {
  case ast::BundleSyntax::All: return ir::BundleKind::All;
  case ast::BundleSyntax::Where: return ir::BundleKind::Where;
  case ast::BundleSyntax::Convolve: return ir::BundleKind::Convolve;
  case ast::BundleSyntax::MaxPool: return ir::BundleKind::MaxPool;
  case ast::BundleSyntax::MeanPool: return ir::BundleKind::MeanPool;
  case ast::BundleSyntax::ResponseNorm: return ir::BundleKind::ResponseNorm;
  case ast::BundleSyntax::Unknown: break;
  }
  return std::nullopt;
}

class Sema {
public:
  Sema(const ast::Program &program, const CompileOptions &options, DiagnosticEngine &diags)
      : program_(program), options_(options), diags_(diags), consts_(diags) {}

  ir::Network run(std::string name) {
    ir::Network net;
    net.name = std::move(name);
    net.task = options_.task;
    collect();
    declareLayers(net);
    for (const ast::ConstItem *item : constItems_) {
      consts_.declare(*item);
      auto layer = layerIndex_.find(item->name.text);
      if (layer != layerIndex_.end()) {
        Diagnostic &d = diags_.report(DiagId::ConstNamedLikeLayer, item->name.range, item->name.text);
        withNote(d, layerDecls_[layer->second]->name.range, "the layer is declared here");
      }
    }
    // Evaluate every const once so errors in unused consts are reported too.
    consts_.evaluateAll();
    for (size_t i = 0; i < layerDecls_.size(); ++i)
      lowerLayer(*layerDecls_[i], net.layers[i]);
    for (const ast::ShareDecl *share : shares_)
      lowerShare(*share, net);
    return net;
  }

private:
  void collect() {
    for (const ast::Statement &statement : program_.statements) {
      if (auto *c = std::get_if<ast::ConstDecl>(&statement)) {
        for (const ast::ConstItem &item : c->items)
          constItems_.push_back(&item);
      } else if (auto *g = std::get_if<ast::LayerGroup>(&statement)) {
        for (const ast::LayerDecl &layer : g->layers)
          layerDecls_.push_back(&layer);
      } else if (auto *s = std::get_if<ast::ShareDecl>(&statement)) {
        shares_.push_back(s);
      }
    }
  }

  void declareLayers(ir::Network &net) {
    net.layers.resize(layerDecls_.size());
    for (size_t i = 0; i < layerDecls_.size(); ++i) {
      const ast::LayerDecl &decl = *layerDecls_[i];
      ir::Layer &layer = net.layers[i];
      layer.name = decl.name.text;
      layer.kind = toIr(decl.kind);
      layer.range = decl.range;
      layer.nameRange = decl.name.range;
      layer.shapeRange = decl.shape.range;
      auto [it, inserted] = layerIndex_.try_emplace(decl.name.text, static_cast<int>(i));
      if (!inserted) {
        layer.valid = false; // bundles name the first definition; this one is not "unused"
        Diagnostic &d = diags_.report(DiagId::LayerRedefinition, decl.name.range, decl.name.text);
        withNote(d, layerDecls_[it->second]->name.range, "previous definition is here");
      }
      layerNames_.push_back(decl.name.text);
    }
    // The did-you-mean of an unknown layer prefers, among equally close
    // names, one that no bundle reads: the end of a chain the bundle most
    // likely meant to continue (`from L2O` after L1..L20: L20, not L2).
    std::unordered_set<std::string_view> read;
    for (const ast::LayerDecl *decl : layerDecls_)
      for (const ast::BundleDecl &bundle : decl->bundles)
        read.insert(bundle.source.text);
    std::stable_partition(layerNames_.begin(), layerNames_.end(),
                          [&](const std::string &name) { return !read.count(name); });
  }

  /// Resolves a layer name, reporting unknown names with a did-you-mean.
  int resolveLayer(const ast::Identifier &name) {
    auto it = layerIndex_.find(name.text);
    if (it != layerIndex_.end())
      return it->second;
    Diagnostic &d = diags_.report(DiagId::UnknownLayer, name.range, name.text);
    std::vector<std::string_view> candidates(layerNames_.begin(), layerNames_.end());
    if (auto match = closestMatch(name.text, candidates)) {
      d.message += fmt::format("; did you mean '{}'?", *match);
      withFixIt(d, name.range, *match);
    }
    return -1;
  }

  void lowerShape(const ast::LayerDecl &decl, ir::Layer &layer) {
    if (decl.incomplete)
      layer.valid = false; // part of the layer did not parse: spare it the follow-on checks
    if (decl.shape.invalid)
      return;
    if (decl.shape.isAuto) {
      layer.shapeAuto = true;
      return;
    }
    CheckedProduct nodes;
    bool valid = !decl.shape.dims.empty();
    for (const ast::ExprPtr &dim : decl.shape.dims) {
      Value v = consts_.evaluate(*dim);
      if (v.isError()) {
        valid = false;
        continue;
      }
      if (v.type != ValueType::Int || v.i <= 0) {
        diags_.report(DiagId::BadShapeComponent, dim->range,
                      v.type == ValueType::Int ? v.toString() : describeType(v.type));
        valid = false;
        continue;
      }
      layer.shape.push_back(v.i);
      nodes.multiply(v.i);
    }
    if (!valid) {
      layer.valid = false;
      return;
    }
    if (nodes.overflow() || nodes.value() > options_.maxLayerNodes) {
      std::string count = nodes.overflow() ? "more than 2^63" : std::to_string(nodes.value());
      diags_.report(DiagId::LayerTooLarge, decl.shape.range, layer.name, count, options_.maxLayerNodes);
      layer.valid = false;
      return;
    }
    layer.nodes = nodes.value();
  }

  void lowerFunction(const ast::LayerDecl &decl, ir::Layer &layer) {
    if (!decl.function)
      return;
    const ast::Identifier &fn = *decl.function;
    layer.functionRange = fn.range;
    for (ir::Activation a : ir::allActivations())
      if (ir::activationName(a) == fn.text) {
        layer.function = a;
        break;
      }
    if (!layer.function) {
      std::vector<std::string_view> names;
      for (ir::Activation a : ir::allActivations())
        names.push_back(ir::activationName(a));
      Diagnostic &d = diags_.report(DiagId::UnknownFunction, fn.range, fn.text);
      if (auto match = closestMatch(fn.text, names)) {
        d.message += fmt::format("; did you mean '{}'?", *match);
        withFixIt(d, fn.range, *match);
        for (ir::Activation a : ir::allActivations())
          if (ir::activationName(a) == *match)
            layer.function = a; // recover with the suggestion
      }
    }
    if (layer.kind == ir::LayerKind::Input)
      diags_.report(DiagId::InputWithFunction, fn.range, layer.name);
  }

  /// Reads a tuple of numbers (Weights, Biases).
  std::optional<std::vector<double>> numbers(const ast::Attribute &attr, std::string_view what) {
    if (!attr.value)
      return std::nullopt;
    Value v = consts_.evaluate(*attr.value);
    if (v.isError())
      return std::nullopt;
    std::vector<double> out;
    if (v.isNumber()) {
      out.push_back(v.asReal());
      return out;
    }
    if (v.type != ValueType::Tuple) {
      diags_.report(DiagId::AttributeType, attr.value->range, what, "a tuple of numbers",
                    describeType(v.type));
      return std::nullopt;
    }
    out.reserve(v.items.size());
    for (const Value &item : v.items) {
      if (!item.isNumber()) {
        diags_.report(DiagId::AttributeType, item.range, what, "a tuple of numbers",
                      "a tuple containing " + describeType(item.type));
        return std::nullopt;
      }
      out.push_back(item.asReal());
    }
    return out;
  }

  void lowerLayerAttributes(const ast::LayerDecl &decl, ir::Layer &layer) {
    bool seenBundle = false;
    size_t attrIndex = 0;
    for (bool isAttr : decl.itemIsAttribute) {
      if (!isAttr) {
        seenBundle = true;
        continue;
      }
      const ast::Attribute &attr = decl.layerAttributes[attrIndex++];
      if (attr.name.text != "Biases") {
        Diagnostic &d = diags_.report(DiagId::UnknownLayerAttribute, attr.name.range, attr.name.text);
        if (auto match = closestMatch(attr.name.text, {"Biases"})) {
          d.message += fmt::format("; did you mean '{}'?", *match);
          withFixIt(d, attr.name.range, *match);
        } else {
          continue;
        }
        // Misspelled `Biases`: recover as if it were written right.
      }
      if (layer.biases) {
        Diagnostic &d = diags_.report(DiagId::DuplicateAttribute, attr.name.range, "Biases");
        withNote(d, layer.biasesRange, "first given here");
        continue;
      }
      if (seenBundle)
        diags_.report(DiagId::MisplacedLayerAttribute, attr.name.range, layer.name);
      layer.biasesRange = attr.range;
      layer.biases = numbers(attr, "Biases");
      if (!layer.biases)
        layer.valid = false;
    }
  }

  void lowerLayer(const ast::LayerDecl &decl, ir::Layer &layer) {
    lowerShape(decl, layer);
    lowerFunction(decl, layer);
    lowerLayerAttributes(decl, layer);
    if (layer.kind == ir::LayerKind::Input && !decl.bundles.empty())
      diags_.report(DiagId::InputWithBundles, decl.bundles.front().range, layer.name);
    for (const ast::BundleDecl &b : decl.bundles) {
      ir::Bundle bundle;
      bundle.sourceName = b.source.text;
      bundle.sourceRange = b.source.range;
      bundle.range = b.range;
      bundle.kindRange = b.kindRange;
      bundle.source = resolveLayer(b.source);
      bundle.valid = bundle.source >= 0;
      auto kind = toIr(b.kind);
      if (!kind) {
        // A misspelled kind (reported by the parser). Keep the connection, so
        // its source is not "unused", but not the attributes, which belong to
        // no known kind.
        bundle.valid = false;
        layer.bundles.push_back(std::move(bundle));
        continue;
      }
      bundle.kind = *kind;
      lowerBundleAttributes(b, bundle);
      if (b.lambda && !b.lambda->incomplete && bundle.source >= 0) {
        size_t srcRank =
            std::max<size_t>(1, layerDecls_[static_cast<size_t>(bundle.source)]->shape.dims.size());
        size_t dstRank = std::max<size_t>(1, decl.shape.dims.size());
        bundle.predicate = compilePredicate(*b.lambda, srcRank, dstRank, consts_, diags_);
        if (!bundle.predicate)
          bundle.valid = false;
      } else if (b.kind == ast::BundleSyntax::Where) {
        // No lambda, or one that did not parse (reported): nothing to check.
        bundle.valid = false;
      }
      layer.bundles.push_back(std::move(bundle));
    }
  }

  std::optional<ir::Attr> findAttr(const std::string &name) {
    for (ir::Attr a : ir::allAttrs())
      if (ir::attrName(a) == name)
        return a;
    return std::nullopt;
  }

  void lowerBundleAttributes(const ast::BundleDecl &decl, ir::Bundle &bundle) {
    const ir::AttrMask allowed = ir::bundleAllowedAttrs(bundle.kind);
    for (const ast::Attribute &attr : decl.attributes) {
      auto which = findAttr(attr.name.text);
      bool recovered = false;
      if (!which) {
        std::vector<std::string_view> names;
        for (ir::Attr a : ir::allAttrs())
          if (allowed & ir::attrBit(a))
            names.push_back(ir::attrName(a));
        for (ir::Attr a : ir::allAttrs())
          if (!(allowed & ir::attrBit(a)))
            names.push_back(ir::attrName(a));
        Diagnostic &d = diags_.report(DiagId::UnknownAttribute, attr.name.range, attr.name.text);
        auto match = closestMatch(attr.name.text, names);
        if (!match) {
          bundle.valid = false;
          continue;
        }
        d.message += fmt::format("; did you mean '{}'?", *match);
        withFixIt(d, attr.name.range, *match);
        which = findAttr(*match); // recover with the suggestion
        recovered = true;
      }
      ir::Attr a = *which;
      if (!(allowed & ir::attrBit(a))) {
        if (!recovered)
          diags_.report(DiagId::AttributeNotAllowed, attr.name.range, ir::attrName(a),
                        ir::bundleKindWithArticle(bundle.kind));
        continue;
      }
      if (bundle.has(a)) {
        if (recovered)
          continue; // `KernelShap` after `KernelShape`: the misspelling was the one mistake
        Diagnostic &d = diags_.report(DiagId::DuplicateAttribute, attr.name.range, ir::attrName(a));
        withNote(d, bundle.rangeOf(a), "first given here");
        continue;
      }
      bundle.attrRanges[a] = attr.range;
      if (!lowerAttributeValue(a, attr, bundle))
        bundle.valid = false;
    }
    const ir::AttrMask required = ir::bundleRequiredAttrs(bundle.kind);
    for (ir::Attr a : ir::allAttrs())
      if ((required & ir::attrBit(a)) && !bundle.has(a)) {
        diags_.report(DiagId::MissingAttribute, decl.kindRange, ir::bundleKindWithArticle(bundle.kind),
                      ir::attrName(a));
        bundle.valid = false;
      }
  }

  bool lowerAttributeValue(ir::Attr a, const ast::Attribute &attr, ir::Bundle &bundle) {
    if (!attr.value)
      return false;
    std::string_view name = ir::attrName(a);
    if (ir::attrValueKind(a) == ir::AttrValueKind::Numbers) {
      bundle.weights = numbers(attr, name);
      return bundle.weights.has_value();
    }
    Value v = consts_.evaluate(*attr.value);
    if (v.isError())
      return false;
    SourceRange at = attr.value->range;
    auto mismatch = [&](const char *expected, const Value &found) {
      diags_.report(DiagId::AttributeType, found.range.empty() ? at : found.range, name, expected,
                    describeType(found.type));
      return false;
    };
    switch (ir::attrValueKind(a)) {
    case ir::AttrValueKind::IntTuple:
    case ir::AttrValueKind::IntOrTuple: {
      std::vector<int64_t> ints;
      const bool scalarOk = ir::attrValueKind(a) == ir::AttrValueKind::IntOrTuple;
      if (v.type == ValueType::Int && scalarOk) {
        ints.push_back(v.i);
        bundle.intAttrs[a] = ints;
        bundle.givenAsScalar |= ir::attrBit(a); // MapCount = m broadcasts as [m, 1, ...]
        return true;
      }
      const char *expected = scalarOk ? "an integer or a tuple of integers" : "a tuple of integers";
      if (v.type != ValueType::Tuple)
        return mismatch(expected, v);
      for (const Value &item : v.items) {
        if (item.type != ValueType::Int)
          return mismatch(expected, item);
        ints.push_back(item.i);
      }
      bundle.intAttrs[a] = std::move(ints);
      return true;
    }
    case ir::AttrValueKind::BoolOrTuple: {
      std::vector<bool> bools;
      if (v.type == ValueType::Bool) {
        bundle.boolAttrs[a] = {v.i != 0};
        bundle.givenAsScalar |= ir::attrBit(a); // one bool applies to every dimension
        return true;
      }
      if (v.type != ValueType::Tuple)
        return mismatch("a boolean or a tuple of booleans", v);
      for (const Value &item : v.items) {
        if (item.type != ValueType::Bool)
          return mismatch("a boolean or a tuple of booleans", item);
        bools.push_back(item.i != 0);
      }
      bundle.boolAttrs[a] = std::move(bools);
      return true;
    }
    case ir::AttrValueKind::Number:
      if (!v.isNumber())
        return mismatch("a number", v);
      bundle.numberAttrs[a] = v.asReal();
      return true;
    case ir::AttrValueKind::Bool:
      if (v.type != ValueType::Bool)
        return mismatch("a boolean", v);
      bundle.avgOverFullKernel = v.i != 0;
      return true;
    case ir::AttrValueKind::Numbers: break;
    }
    return false;
  }

  void lowerShare(const ast::ShareDecl &decl, ir::Network &net) {
    ir::ShareDecl share;
    share.range = decl.range;
    if (decl.items.size() < 2) {
      if (!decl.incomplete) // an item that did not parse was already reported
        diags_.report(DiagId::ShareTooFewItems, decl.range);
      return;
    }
    auto formName = [](ast::ShareItem::Form f) {
      switch (f) {
      case ast::ShareItem::Form::Layer: return "layer name";
      case ast::ShareItem::Form::Bundle: return "bundle 'Source => Layer'";
      case ast::ShareItem::Form::Bias: return "bias item '1 => Layer'";
      }
      return "item";
    };
    bool ok = true;
    std::map<std::pair<int, int>, SourceRange> seen;
    for (const ast::ShareItem &item : decl.items) {
      if (item.form != decl.items.front().form) {
        diags_.report(DiagId::ShareMixedForms, item.range, formName(item.form),
                      formName(decl.items.front().form));
        ok = false;
        continue;
      }
      ir::ShareItem out;
      out.range = item.range;
      switch (item.form) {
      case ast::ShareItem::Form::Layer:
        out.form = ir::ShareItem::Form::Layer;
        out.layer = resolveLayer(item.first);
        break;
      case ast::ShareItem::Form::Bias:
        out.form = ir::ShareItem::Form::Bias;
        if (item.first.text != "1") {
          Diagnostic &d = diags_.report(DiagId::ShareBadBiasForm, item.first.range, item.first.text);
          withFixIt(d, item.first.range, "1");
        }
        out.layer = resolveLayer(item.second);
        break;
      case ast::ShareItem::Form::Bundle: {
        out.form = ir::ShareItem::Form::Bundle;
        out.layer = resolveLayer(item.second);
        int source = resolveLayer(item.first);
        if (out.layer >= 0 && source >= 0) {
          const ir::Layer &dst = net.layers[static_cast<size_t>(out.layer)];
          for (size_t b = 0; b < dst.bundles.size(); ++b)
            if (dst.bundles[b].source == source) {
              out.bundle = static_cast<int>(b);
              break;
            }
          if (out.bundle < 0) {
            Diagnostic &d = diags_.report(DiagId::ShareUnknownBundle, item.range, dst.name, item.first.text);
            withNote(d, dst.nameRange, fmt::format("'{}' is declared here", dst.name));
            out.layer = -1;
          }
        }
        if (source < 0)
          out.layer = -1;
        break;
      }
      }
      if (out.layer < 0) {
        ok = false;
        continue;
      }
      auto key = std::make_pair(out.layer, out.bundle);
      auto [it, inserted] = seen.try_emplace(key, item.range);
      if (!inserted) {
        Diagnostic &d = diags_.report(DiagId::ShareDuplicateItem, item.range,
                                      net.layers[static_cast<size_t>(out.layer)].name);
        withNote(d, it->second, "first listed here");
        continue;
      }
      share.items.push_back(out);
    }
    if (ok || share.items.size() >= 2)
      net.shares.push_back(std::move(share));
  }

  const ast::Program &program_;
  const CompileOptions &options_;
  DiagnosticEngine &diags_;
  ConstEvaluator consts_;
  std::vector<const ast::ConstItem *> constItems_;
  std::vector<const ast::LayerDecl *> layerDecls_;
  std::vector<const ast::ShareDecl *> shares_;
  std::unordered_map<std::string, int> layerIndex_;
  std::vector<std::string> layerNames_;
};

} // namespace

ir::Network analyzeProgram(const ast::Program &program, std::string networkName,
                           const CompileOptions &options, DiagnosticEngine &diags) {
  return Sema(program, options, diags).run(std::move(networkName));
}

} // namespace netc
