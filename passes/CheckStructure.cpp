// CheckStructure.cpp -- the whole-network rules of docs/language.md §6.6 and §8:
// one output, at least one input, bundles only into trainable layers, no
// self-bundles, the output never a source, no cycles (the error shows the
// cycle, with a note at each link), and warnings for hidden layers that do
// not reach the output (not for those cut off only by a wrong bundle source,
// which that error counts instead) and for two bundles from one source. It
// also fills in the network's input/output indices and each layer's depth
// from the output.
#include "passes/Pipeline.h"

#include <fmt/format.h>

#include <deque>
#include <functional>
#include <map>
#include <unordered_map>

namespace netc {

namespace {

void findEndpoints(ir::Network &net, DiagnosticEngine &diags) {
  net.inputs.clear();
  net.output = -1;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const ir::Layer &layer = net.layers[i];
    if (layer.kind == ir::LayerKind::Input) {
      net.inputs.push_back(static_cast<int>(i));
    } else if (layer.kind == ir::LayerKind::Output) {
      if (net.output < 0) {
        net.output = static_cast<int>(i);
      } else {
        Diagnostic &d = diags.report(DiagId::MultipleOutputLayers, layer.nameRange, layer.name);
        const ir::Layer &first = net.layers[static_cast<size_t>(net.output)];
        withNote(d, first.nameRange, fmt::format("'{}' is the first output layer", first.name));
      }
    }
  }
  if (net.fromIncompleteSource)
    return; // a syntax error may have swallowed the declaration
  if (net.output < 0)
    diags.report(DiagId::NoOutputLayer, {0, 0});
  if (net.inputs.empty())
    diags.report(DiagId::NoInputLayer, {0, 0});
}

void checkBundles(ir::Network &net, DiagnosticEngine &diags) {
  for (size_t i = 0; i < net.layers.size(); ++i) {
    ir::Layer &layer = net.layers[i];
    if (layer.kind != ir::LayerKind::Input && layer.bundles.empty() && layer.valid)
      diags.report(DiagId::LayerWithoutBundles, layer.nameRange, ir::layerKindName(layer.kind), layer.name);
    for (size_t b = 0; b < layer.bundles.size(); ++b) {
      ir::Bundle &bundle = layer.bundles[b];
      if (bundle.source < 0)
        continue;
      const ir::Layer &src = net.layers[static_cast<size_t>(bundle.source)];
      if (bundle.source == static_cast<int>(i)) {
        diags.report(DiagId::SelfBundle, bundle.sourceRange, layer.name);
        bundle.valid = false;
      } else if (src.kind == ir::LayerKind::Output) {
        Diagnostic &d = diags.report(DiagId::OutputAsSource, bundle.sourceRange, src.name);
        withNote(d, src.nameRange, fmt::format("'{}' is declared as the output here", src.name));
      }
      for (size_t earlier = 0; earlier < b; ++earlier)
        if (layer.bundles[earlier].source == bundle.source) {
          Diagnostic &d = diags.report(DiagId::DuplicateSource, bundle.sourceRange, layer.name, src.name);
          withNote(d, layer.bundles[earlier].sourceRange, "the first bundle from it is here");
          break;
        }
    }
  }
}

/// Finds cycles by depth-first search over source -> destination edges and
/// reports each once.
void checkCycles(ir::Network &net, DiagnosticEngine &diags) {
  const size_t n = net.layers.size();
  // consumers[src] = (destination layer, bundle index)
  std::vector<std::vector<std::pair<int, int>>> consumers(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < net.layers[i].bundles.size(); ++b) {
      int src = net.layers[i].bundles[b].source;
      // A bundle from the output is already an error (NS0308); it closes no
      // cycle worth a second report.
      if (src >= 0 && src != static_cast<int>(i) &&
          net.layers[static_cast<size_t>(src)].kind != ir::LayerKind::Output)
        consumers[static_cast<size_t>(src)].push_back({static_cast<int>(i), static_cast<int>(b)});
    }
  enum class Mark { White, Grey, Black };
  std::vector<Mark> mark(n, Mark::White);
  // Iterative DFS: a stack of (layer, next consumer index), plus the edge used to enter each.
  struct Frame {
    int layer;
    size_t next;
    std::pair<int, int> via; // bundle (dst layer, index) that entered this layer
  };
  for (size_t root = 0; root < n; ++root) {
    if (mark[root] != Mark::White)
      continue;
    std::vector<Frame> stack{{static_cast<int>(root), 0, {-1, -1}}};
    mark[root] = Mark::Grey;
    while (!stack.empty()) {
      Frame &top = stack.back();
      const auto &out = consumers[static_cast<size_t>(top.layer)];
      if (top.next == out.size()) {
        mark[static_cast<size_t>(top.layer)] = Mark::Black;
        stack.pop_back();
        continue;
      }
      auto edge = out[top.next++];
      int next = edge.first;
      if (mark[static_cast<size_t>(next)] == Mark::White) {
        mark[static_cast<size_t>(next)] = Mark::Grey;
        stack.push_back({next, 0, edge});
        continue;
      }
      if (mark[static_cast<size_t>(next)] != Mark::Grey)
        continue;
      // A back edge closes a cycle: the frames from `next` to the top.
      size_t start = stack.size() - 1;
      while (stack[start].layer != next)
        --start;
      std::vector<std::pair<int, int>> edges;
      for (size_t k = start + 1; k < stack.size(); ++k)
        edges.push_back(stack[k].via);
      edges.push_back(edge);
      std::string path = net.layers[static_cast<size_t>(next)].name;
      for (auto [dst, b] : edges)
        path += " -> " + net.layers[static_cast<size_t>(dst)].name;
      const ir::Bundle &closing =
          net.layers[static_cast<size_t>(edge.first)].bundles[static_cast<size_t>(edge.second)];
      Diagnostic &d = diags.report(DiagId::ConnectionCycle, closing.sourceRange, path);
      for (auto [dst, b] : edges) {
        const ir::Layer &layer = net.layers[static_cast<size_t>(dst)];
        const ir::Bundle &bundle = layer.bundles[static_cast<size_t>(b)];
        withNote(d, bundle.sourceRange,
                 fmt::format("'{}' takes input from '{}' here", layer.name, bundle.sourceName));
      }
      for (auto [dst, b] : edges)
        net.layers[static_cast<size_t>(dst)].bundles[static_cast<size_t>(b)].valid = false;
    }
  }
}

/// Finds the layers that do not lead to the output only because a bundle on
/// the way names its source wrongly: an unknown layer (NS0302) or its own
/// layer (NS0306), in a layer that leads to the output (or is itself cut off
/// only by such an error). The layer the bundle meant is the did-you-mean of
/// its NS0302 when that is a cut-off layer (or, when that hidden layer is in
/// the middle of a cut-off chain, the chain's end); otherwise (no suggestion,
/// one that leads to the output anyway, a self-reference) it may be any
/// cut-off layer that nothing reads. That layer and the cut-off layers leading to it are
/// claimed by the error, which gets a note with the number of hidden ones,
/// and get no NS0312. Every layer is claimed at most once: the work is linear
/// in layers, bundles and diagnostics.
std::vector<char> claimCutOffLayers(const ir::Network &net, const std::vector<int> &depth,
                                    DiagnosticEngine &diags) {
  const size_t n = net.layers.size();
  std::vector<char> claimed(n, 0);
  auto wrongSource = [&](size_t layer, const ir::Bundle &bundle) {
    return (bundle.source < 0 && !bundle.sourceName.empty()) || bundle.source == static_cast<int>(layer);
  };
  bool any = false;
  for (size_t i = 0; i < n && !any; ++i)
    if (depth[i] >= 0)
      for (const ir::Bundle &bundle : net.layers[i].bundles)
        any = any || wrongSource(i, bundle);
  if (!any)
    return claimed;

  std::unordered_map<std::string_view, int> indexOf;
  std::vector<char> read(n, 0);
  std::vector<int> readers(n, 0), reader(n, -1); // how many layers read each, and the last one
  for (size_t i = 0; i < n; ++i) {
    indexOf.try_emplace(net.layers[i].name, static_cast<int>(i));
    for (const ir::Bundle &bundle : net.layers[i].bundles)
      if (bundle.source >= 0 && bundle.source != static_cast<int>(i)) {
        read[static_cast<size_t>(bundle.source)] = 1;
        ++readers[static_cast<size_t>(bundle.source)];
        reader[static_cast<size_t>(bundle.source)] = static_cast<int>(i);
      }
  }
  // The end of the chain `layer` starts: the cut-off layers that each read
  // only the one before them and are the only reader of it; -1 when `layer`
  // is read by none or by several.
  auto chainEnd = [&](int layer) {
    int end = layer;
    for (size_t steps = 0; steps < n && readers[static_cast<size_t>(end)] == 1; ++steps) {
      const int next = reader[static_cast<size_t>(end)];
      if (depth[static_cast<size_t>(next)] >= 0)
        return -1;
      end = next;
    }
    return end != layer && readers[static_cast<size_t>(end)] == 0 ? end : -1;
  };
  // The layer Sema's did-you-mean (the fix-it of NS0302) suggests for an
  // unknown source, by the source's position.
  std::unordered_map<uint32_t, int> suggestions;
  for (const Diagnostic &d : diags.diagnostics())
    if (d.id == DiagId::UnknownLayer && d.fixits.size() == 1)
      if (auto it = indexOf.find(d.fixits.front().replacement); it != indexOf.end())
        suggestions.emplace(d.range.begin, it->second);
  std::vector<int> unread; // cut-off layers nothing reads: what an unnamed source may have meant
  for (size_t i = 0; i < n; ++i)
    if (depth[i] < 0 && !read[i])
      unread.push_back(static_cast<int>(i));

  struct WrongSource {
    DiagId id = DiagId::UnknownLayer;
    SourceRange range;
    int meant = -1; // the suggested layer, -1 when unknown
  };
  std::deque<WrongSource> named, unnamed; // suggestions first, so a guess does not take their layers
  auto enqueue = [&](size_t layer) {
    for (const ir::Bundle &bundle : net.layers[layer].bundles) {
      if (!wrongSource(layer, bundle))
        continue;
      if (bundle.source >= 0) {
        unnamed.push_back({DiagId::SelfBundle, bundle.sourceRange, -1});
        continue;
      }
      auto s = suggestions.find(bundle.sourceRange.begin);
      const int meant = s != suggestions.end() && depth[static_cast<size_t>(s->second)] < 0 ? s->second : -1;
      (meant >= 0 ? named : unnamed).push_back({DiagId::UnknownLayer, bundle.sourceRange, meant});
    }
  };
  // Claims `root` and the unclaimed cut-off layers leading to it; returns how
  // many of them are hidden (the NS0312 warnings the error stands for).
  auto claim = [&](int root) {
    if (depth[static_cast<size_t>(root)] >= 0 || claimed[static_cast<size_t>(root)])
      return size_t{0};
    size_t count = 0;
    std::vector<int> stack{root};
    claimed[static_cast<size_t>(root)] = 1;
    while (!stack.empty()) {
      const int layer = stack.back();
      stack.pop_back();
      count += net.layers[static_cast<size_t>(layer)].kind == ir::LayerKind::Hidden ? 1 : 0;
      enqueue(static_cast<size_t>(layer));
      for (const ir::Bundle &bundle : net.layers[static_cast<size_t>(layer)].bundles) {
        const int source = bundle.source;
        if (source >= 0 && source != layer && depth[static_cast<size_t>(source)] < 0 &&
            !claimed[static_cast<size_t>(source)]) {
          claimed[static_cast<size_t>(source)] = 1;
          stack.push_back(source);
        }
      }
    }
    return count;
  };
  for (size_t i = 0; i < n; ++i)
    if (depth[i] >= 0)
      enqueue(i);
  std::map<std::pair<DiagId, uint32_t>, size_t> cutOff; // (error, where) -> layers it cuts off
  while (!named.empty() || !unnamed.empty()) {
    WrongSource wrong;
    size_t count = 0;
    if (!named.empty()) {
      wrong = named.front();
      named.pop_front();
      // A suggestion in the middle of a cut-off chain (H99 of H1 ... H999)
      // would leave the rest of the chain cut off: the likelier fix is the
      // chain's end, so the error stands for the whole chain rather than
      // leaving a warning for each layer after the suggestion.
      const int end = net.layers[static_cast<size_t>(wrong.meant)].kind == ir::LayerKind::Hidden
                          ? chainEnd(wrong.meant)
                          : -1;
      count = claim(end >= 0 ? end : wrong.meant);
    } else {
      wrong = unnamed.front();
      unnamed.pop_front();
      for (int layer : unread)
        count += claim(layer);
      unread.clear(); // all claimed now
    }
    if (count > 0)
      cutOff[{wrong.id, wrong.range.begin}] += count;
  }
  if (!cutOff.empty())
    for (DiagId id : {DiagId::UnknownLayer, DiagId::SelfBundle})
      diags.addNotes(id, [&](const Diagnostic &d) {
        std::vector<DiagNote> notes;
        auto it = cutOff.find({id, d.range.begin});
        if (it != cutOff.end())
          notes.push_back({d.range, fmt::format("this cuts off {} hidden {} from the output", it->second,
                                                it->second == 1 ? "layer" : "layers")});
        return notes;
      });
  return claimed;
}

/// Depth from the output (longest path, output = 0) and the unused-layer
/// warning, except for layers cut off by a wrong source (claimCutOffLayers).
void computeDepths(ir::Network &net, DiagnosticEngine &diags) {
  if (net.output < 0)
    return;
  const size_t n = net.layers.size();
  // Breadth-first relaxation from the output backwards, bounded by n rounds
  // (on a cycle, already reported, depths are merely large).
  std::vector<int> depth(n, -1);
  depth[static_cast<size_t>(net.output)] = 0;
  std::vector<int> frontier{net.output};
  std::vector<char> queued(n, 0);
  for (size_t round = 0; round < n && !frontier.empty(); ++round) {
    std::vector<int> next;
    for (int layer : frontier)
      for (const ir::Bundle &bundle : net.layers[static_cast<size_t>(layer)].bundles) {
        // Invalid bundles still connect their layers (no unused-layer cascade).
        if (bundle.source < 0 || bundle.source == layer)
          continue;
        int candidate = depth[static_cast<size_t>(layer)] + 1;
        if (candidate > depth[static_cast<size_t>(bundle.source)]) {
          depth[static_cast<size_t>(bundle.source)] = candidate;
          if (!queued[static_cast<size_t>(bundle.source)]) {
            queued[static_cast<size_t>(bundle.source)] = 1;
            next.push_back(bundle.source);
          }
        }
      }
    for (int layer : next)
      queued[static_cast<size_t>(layer)] = 0;
    frontier.swap(next);
  }
  const std::vector<char> claimed = claimCutOffLayers(net, depth, diags);
  for (size_t i = 0; i < n; ++i) {
    ir::Layer &layer = net.layers[i];
    layer.depth = depth[i];
    if (depth[i] < 0 && layer.kind == ir::LayerKind::Hidden && layer.valid && !claimed[i])
      diags.report(DiagId::UnusedLayer, layer.nameRange, layer.name);
  }
}

} // namespace

void checkStructure(ir::Network &net, const CompileOptions &, DiagnosticEngine &diags) {
  findEndpoints(net, diags);
  checkBundles(net, diags);
  checkCycles(net, diags);
  computeDepths(net, diags);
}

} // namespace netc
