// ResolveShares.cpp -- weight tying (docs/language.md §16). Each share item names
// a tensor: a bundle's weights, a layer's biases, or (layer form) both of a
// single-bundle layer. Items of one declaration are tied; declarations that
// overlap merge (union-find). Tied tensors must have the same structure,
// else an error with a note at each side. The network's parameter count is
// then the number of unique trainable values.
#include "passes/Pipeline.h"

#include <fmt/format.h>

#include <map>

namespace netc {

namespace {

class UnionFind {
public:
  int find(const ir::ParamRef &ref) {
    auto [it, inserted] = index_.try_emplace(ref, static_cast<int>(parent_.size()));
    if (inserted) {
      parent_.push_back(it->second);
      refs_.push_back(ref);
    }
    int x = it->second;
    while (parent_[static_cast<size_t>(x)] != x)
      x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    return x;
  }
  void unite(const ir::ParamRef &a, const ir::ParamRef &b) {
    int ra = find(a), rb = find(b);
    if (ra != rb)
      parent_[static_cast<size_t>(std::max(ra, rb))] = std::min(ra, rb);
  }
  std::vector<std::vector<ir::ParamRef>> groups() {
    std::map<int, std::vector<ir::ParamRef>> byRoot;
    for (size_t i = 0; i < refs_.size(); ++i)
      byRoot[find(refs_[i])].push_back(refs_[i]);
    std::vector<std::vector<ir::ParamRef>> out;
    for (auto &[root, members] : byRoot)
      if (members.size() >= 2)
        out.push_back(std::move(members));
    return out;
  }

private:
  std::map<ir::ParamRef, int> index_;
  std::vector<int> parent_;
  std::vector<ir::ParamRef> refs_;
};

std::string describe(const ir::Network &net, const ir::ParamRef &ref) {
  const ir::Layer &layer = net.layers[static_cast<size_t>(ref.layer)];
  if (ref.bundle < 0)
    return fmt::format("the biases of '{}'", layer.name);
  return fmt::format("the weights of '{} => {}'", layer.bundles[static_cast<size_t>(ref.bundle)].sourceName,
                     layer.name);
}

SourceRange rangeOf(const ir::Network &net, const ir::ParamRef &ref) {
  const ir::Layer &layer = net.layers[static_cast<size_t>(ref.layer)];
  return ref.bundle < 0 ? layer.nameRange : layer.bundles[static_cast<size_t>(ref.bundle)].range;
}

int64_t paramCount(const ir::Network &net, const ir::ParamRef &ref) {
  const ir::Layer &layer = net.layers[static_cast<size_t>(ref.layer)];
  return ref.bundle < 0 ? (layer.hasBias ? layer.nodes : 0)
                        : layer.bundles[static_cast<size_t>(ref.bundle)].params;
}

/// Why two tensors cannot be tied, or empty when they can.
std::string structureDifference(const ir::Network &net, const ir::ParamRef &a, const ir::ParamRef &b) {
  const ir::Layer &la = net.layers[static_cast<size_t>(a.layer)];
  const ir::Layer &lb = net.layers[static_cast<size_t>(b.layer)];
  if (a.bundle < 0 || b.bundle < 0) {
    if (la.nodes != lb.nodes)
      return fmt::format("{} nodes against {}", la.nodes, lb.nodes);
    return {};
  }
  const ir::Bundle &ba = la.bundles[static_cast<size_t>(a.bundle)];
  const ir::Bundle &bb = lb.bundles[static_cast<size_t>(b.bundle)];
  if (ba.kind != bb.kind)
    return fmt::format("{} bundle against {} bundle", ir::bundleKindWithArticle(ba.kind),
                       ir::bundleKindWithArticle(bb.kind));
  if (ba.source < 0 || bb.source < 0)
    return {}; // unresolved sources were reported; nothing to compare
  if (ba.kind == ir::BundleKind::All) {
    int64_t sa = net.layers[static_cast<size_t>(ba.source)].nodes,
            sb = net.layers[static_cast<size_t>(bb.source)].nodes;
    if (sa != sb || la.nodes != lb.nodes)
      return fmt::format("{} x {} weights against {} x {}", sa, la.nodes, sb, lb.nodes);
  } else if (ba.kind == ir::BundleKind::Convolve) {
    const ir::Geometry &ga = ba.geometry, &gb = bb.geometry;
    bool same = ga.dims.size() == gb.dims.size() && ga.kernels == gb.kernels;
    for (size_t d = 0; same && d < ga.dims.size(); ++d)
      same = ga.dims[d].kernel == gb.dims[d].kernel;
    if (!same)
      return fmt::format("{} kernels of {} weights against {} kernels of {}", ga.kernels, ga.kernelSize,
                         gb.kernels, gb.kernelSize);
  }
  if (ba.params != bb.params)
    return fmt::format("{} weights against {}", ba.params, bb.params);
  return {};
}

} // namespace

void resolveShares(ir::Network &net, const CompileOptions &, DiagnosticEngine &diags) {
  UnionFind tied;
  for (const ir::ShareDecl &share : net.shares) {
    // The tensors each item names, in the same order for every item.
    std::vector<std::vector<ir::ParamRef>> tensors;
    std::vector<SourceRange> itemRanges;
    for (const ir::ShareItem &item : share.items) {
      const ir::Layer &layer = net.layers[static_cast<size_t>(item.layer)];
      std::vector<ir::ParamRef> refs;
      switch (item.form) {
      case ir::ShareItem::Form::Layer:
        if (layer.bundles.empty()) {
          // An input has nothing to share; a layer without bundles was reported already.
          if (layer.kind == ir::LayerKind::Input)
            diags.report(DiagId::ShareNothing, item.range, fmt::format("input layer '{}'", layer.name),
                         "weights or biases");
          continue;
        }
        if (layer.bundles.size() != 1) {
          diags.report(DiagId::ShareNeedsSingleBundle, item.range, layer.name, layer.bundles.size());
          continue;
        }
        if (!layer.bundles[0].valid)
          continue; // its bundle is already in error
        if (!ir::bundleIsTrainable(layer.bundles[0].kind)) {
          diags.report(DiagId::ShareNothing, item.range, fmt::format("layer '{}'", layer.name), "weights");
          continue;
        }
        refs.push_back({item.layer, 0});
        if (layer.hasBias)
          refs.push_back({item.layer, -1});
        break;
      case ir::ShareItem::Form::Bundle:
        if (!layer.bundles[static_cast<size_t>(item.bundle)].valid)
          continue; // already in error
        if (!ir::bundleIsTrainable(layer.bundles[static_cast<size_t>(item.bundle)].kind)) {
          diags.report(DiagId::ShareNothing, item.range,
                       fmt::format("bundle '{} => {}'",
                                   layer.bundles[static_cast<size_t>(item.bundle)].sourceName, layer.name),
                       "weights");
          continue;
        }
        refs.push_back({item.layer, item.bundle});
        break;
      case ir::ShareItem::Form::Bias:
        if (!layer.hasBias) {
          diags.report(DiagId::ShareNothing, item.range, fmt::format("layer '{}'", layer.name),
                       "per-node biases");
          continue;
        }
        refs.push_back({item.layer, -1});
        break;
      }
      tensors.push_back(std::move(refs));
      itemRanges.push_back(item.range);
    }
    for (size_t i = 1; i < tensors.size(); ++i) {
      if (tensors[i].size() != tensors[0].size()) {
        Diagnostic &d = diags.report(DiagId::ShareMismatch, itemRanges[i],
                                     fmt::format("'{}' with '{}'",
                                                 net.layers[static_cast<size_t>(tensors[0][0].layer)].name,
                                                 net.layers[static_cast<size_t>(tensors[i][0].layer)].name),
                                     "one has per-node biases and the other does not");
        withNote(d, rangeOf(net, tensors[0][0]), "first shared item");
        withNote(d, rangeOf(net, tensors[i][0]), "second shared item");
        continue;
      }
      bool ok = true;
      for (size_t k = 0; k < tensors[i].size(); ++k) {
        std::string why = structureDifference(net, tensors[0][k], tensors[i][k]);
        if (why.empty())
          continue;
        Diagnostic &d =
            diags.report(DiagId::ShareMismatch, itemRanges[i],
                         describe(net, tensors[0][k]) + " and " + describe(net, tensors[i][k]), why);
        withNote(d, rangeOf(net, tensors[0][k]), describe(net, tensors[0][k]) + " come from here");
        withNote(d, rangeOf(net, tensors[i][k]), describe(net, tensors[i][k]) + " come from here");
        ok = false;
      }
      if (!ok)
        continue;
      for (size_t k = 0; k < tensors[i].size(); ++k)
        tied.unite(tensors[0][k], tensors[i][k]);
    }
  }
  net.shareGroups = tied.groups();
  int64_t duplicated = 0;
  for (const auto &group : net.shareGroups)
    duplicated += paramCount(net, group.front()) * static_cast<int64_t>(group.size() - 1);
  net.params = net.totalParams - duplicated;
}

} // namespace netc
