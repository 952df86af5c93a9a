// PlanSplit.cpp -- one rank's part of a pipeline stage whose fully connected
// layers are split over the stage's ranks (`netc train --split LAYER:S`,
// docs/distributed.md §Layers wider than a rank): Megatron-style column
// parallelism. A split layer's nodes are cut into S parts of whole blocks
// of its dense ops (plan::DenseAttrs::block), so that each part computes
// exactly the products one process computes for those nodes: part t holds
// only its rows of the layer's weights and biases (their gradients and
// optimizer state), computes its nodes' pre-activation values, sends them
// to the other parts and puts the parts it receives together in order
// (concat-nodes); the layer's output function and every other layer of the
// stage run whole on every part. Backward, each part slices its nodes out
// of the layer's (whole) gradient, computes its weights' and biases'
// gradients, and adds its share of the input gradient to the running sum
// part t - 1 passes on, block after block as one process adds them; the
// last part sends the whole sum back to the others. Part 0 computes its
// share of the input gradient before its weights' gradient, so that the
// next part does not wait for it longer than it must.
#include "codegen/Codegen.h"
#include "support/PrintableText.h"
#include "support/Spelling.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace netc::plan {

namespace {

/// One split layer of the stage, as this part sees it.
struct SplitLayer {
  int layer = -1;
  std::vector<int64_t> first; // node ranges of the parts (splitNodes)
  int pre = -1;               // the layer's pre-activation values (whole)
  int gradient = -1;          // their gradient (whole; -1: none reaches the layer)
  std::vector<int> parts;     // each part's pre-activation values
  int partGradient = -1;      // this part's nodes of the gradient
  size_t lastForward = 0;     // the last op writing `pre` before the exchange
  bool sliced = false;        // the gradient's slice is emitted
};

class PartCutter {
public:
  PartCutter(Plan &plan, const ir::Network &net, const std::vector<int> &stageOf,
             const std::vector<int> &splitParts, int part)
      : plan_(plan), net_(net), stageOf_(stageOf), splitParts_(splitParts), part_(part) {}

  Status cut() {
    auto widths = stageWidths(net_, stageOf_, splitParts_);
    if (!widths)
      return Error{widths.message()};
    widths_ = std::move(*widths);
    const int parts = widths_[static_cast<size_t>(plan_.stage)];
    if (part_ < 0 || part_ >= parts)
      return fail(
          fmt::format("part {} of stage {} does not exist: it has {} rank(s)", part_, plan_.stage, parts));
    plan_.part = part_;
    plan_.parts = parts;
    parts_ = parts;
    for (size_t l = 0; l < net_.layers.size(); ++l)
      if (l < splitParts_.size() && splitParts_[l] > 1 && stageOfLayer(static_cast<int>(l)) == plan_.stage)
        if (Status s = addLayer(static_cast<int>(l)); !s)
          return s;
    if (splits_.empty())
      return Status::success();
    for (SplitLayer &split : splits_)
      sliceParameters(split);
    rewriteOps();
    return Status::success();
  }

private:
  int stageOfLayer(int layer) const { return stageOf_.empty() ? 0 : stageOf_[static_cast<size_t>(layer)]; }
  const ir::Layer &layer(int l) const { return net_.layers[static_cast<size_t>(l)]; }
  int64_t nodes(const SplitLayer &s, int part) const {
    return s.first[static_cast<size_t>(part) + 1] - s.first[static_cast<size_t>(part)];
  }

  Status addLayer(int l) {
    const ir::Layer &target = layer(l);
    if (target.kind == ir::LayerKind::Input)
      return fail(
          fmt::format("--split {}:{}: '{}' is an input layer; only a hidden or output layer computes its "
                      "nodes, and can share them out",
                      target.name, parts_, target.name));
    for (const ir::Bundle &b : target.bundles)
      if (b.kind != ir::BundleKind::All || b.lowering.kernel != ir::KernelKind::Dense)
        return fail(fmt::format("--split {}:{}: layer '{}' has {} bundle from '{}'; only fully connected "
                                "layers (every bundle into them `all`) are split",
                                target.name, parts_, target.name, ir::bundleKindWithArticle(b.kind),
                                b.sourceName));
    for (const Parameter &p : plan_.parameters) {
      const bool owned = std::any_of(p.owners.begin(), p.owners.end(),
                                     [&](const ir::ParamRef &owner) { return owner.layer == l; });
      if (!owned || p.owners.size() == 1)
        continue;
      int other = l;
      for (const ir::ParamRef &owner : p.owners)
        if (owner.layer != l)
          other = owner.layer;
      return fail(fmt::format("--split {}:{}: layer '{}' shares '{}' with {} (share): a split layer's "
                              "weights and biases must be its own",
                              target.name, parts_, target.name, p.name,
                              other == l ? std::string("another of its bundles")
                                         : fmt::format("layer '{}'", layer(other).name)));
    }
    auto first = splitNodes(target.nodes, parts_);
    if (!first)
      return fail(
          fmt::format("--split {}:{}: layer '{}': {}", target.name, parts_, target.name, first.message()));
    SplitLayer split;
    split.layer = l;
    split.first = std::move(*first);
    for (size_t i = plan_.stepBegin; i < plan_.forwardEnd; ++i) {
      const Op &op = plan_.ops[i];
      if (op.layer == l && (op.kind == OpKind::Dense || op.kind == OpKind::AddBias)) {
        split.pre = op.out[0];
        split.lastForward = i;
      }
    }
    if (split.pre < 0)
      return fail(fmt::format("--split: layer '{}' has no dense op in stage {}'s plan (a bug in netc)",
                              target.name, plan_.stage));
    for (size_t b = 0; b < plan_.buffers.size(); ++b)
      if (plan_.buffers[b].role == BufferRole::Gradient && plan_.buffers[b].gradientOf == split.pre)
        split.gradient = static_cast<int>(b);
    const Buffer pre = plan_.buffers[static_cast<size_t>(split.pre)];
    for (int p = 0; p < parts_; ++p) {
      Buffer part;
      part.name = fmt::format("{}.part{}", pre.name, p);
      part.role = BufferRole::Values;
      part.perSample = nodes(split, p);
      part.shape = {part.perSample};
      split.parts.push_back(plan_.addBuffer(std::move(part)));
    }
    if (split.gradient >= 0) {
      Buffer g;
      g.name = fmt::format("d{}.part{}", pre.name, part_);
      g.role = BufferRole::Gradient;
      g.perSample = nodes(split, part_);
      g.shape = {g.perSample};
      g.gradientOf = split.parts[static_cast<size_t>(part_)];
      split.partGradient = plan_.addBuffer(std::move(g));
    }
    splits_.push_back(std::move(split));
    return Status::success();
  }

  /// The layer's weights (one tensor per bundle, [nodes × source nodes])
  /// and biases ([nodes]) keep this part's rows, drawn from their places in
  /// the network's one random sequence (initialisation draws each tensor
  /// row by row).
  void sliceParameters(const SplitLayer &split) {
    const int64_t first = split.first[static_cast<size_t>(part_)], rows = nodes(split, part_);
    const int64_t whole = layer(split.layer).nodes;
    for (Parameter &p : plan_.parameters) {
      if (p.owners.front().layer != split.layer)
        continue;
      const int64_t row = p.isBias ? 1 : p.shape[1];
      if (!p.givenValues.empty()) { // `Weights =` or `Biases =`: this part's rows, no random draws
        p.givenValues =
            std::vector<double>(p.givenValues.begin() + static_cast<ptrdiff_t>(first * row),
                                p.givenValues.begin() + static_cast<ptrdiff_t>((first + rows) * row));
      } else {
        p.uniformDrawsBefore += first * row;
        if (!p.isBias) // Xavier and He draw none for biases
          p.scaledDrawsBefore += first * row;
      }
      p.shape[0] = rows;
      p.count = rows * row;
      p.rowOffset = first;
      p.wholeRows = whole;
      for (int b : {p.buffer, p.gradient})
        if (b >= 0) {
          plan_.buffers[static_cast<size_t>(b)].shape = p.shape;
          plan_.buffers[static_cast<size_t>(b)].fixed = p.count;
        }
    }
  }

  SplitLayer *splitOf(const Op &op) {
    for (SplitLayer &s : splits_)
      if (op.layer == s.layer)
        return &s;
    return nullptr;
  }

  Op transfer(OpKind kind, int buffer, int peerPart, TransferKind what, int layer) const {
    Op op;
    op.kind = kind;
    (kind == OpKind::Send ? op.in : op.out) = {buffer};
    op.attrs =
        TransferAttrs{pipelineRank(widths_, plan_.stage, peerPart), layer, what, plan_.stage, peerPart};
    op.layer = layer;
    return op;
  }

  /// After the layer's last dense or bias op: this part's values to every
  /// other part, theirs from each, and the parts put together in order.
  void exchange(std::vector<Op> &ops, const SplitLayer &split) const {
    const int mine = split.parts[static_cast<size_t>(part_)];
    for (int p = 0; p < parts_; ++p)
      if (p != part_)
        ops.push_back(transfer(OpKind::Send, mine, p, TransferKind::Part, split.layer));
    for (int p = 0; p < parts_; ++p)
      if (p != part_)
        ops.push_back(transfer(OpKind::Receive, split.parts[static_cast<size_t>(p)], p, TransferKind::Part,
                               split.layer));
    Op concat;
    concat.kind = OpKind::ConcatNodes;
    concat.in = split.parts;
    concat.out = {split.pre};
    ConcatAttrs attrs;
    for (int p = 0; p < parts_; ++p)
      attrs.widths.push_back(nodes(split, p));
    concat.attrs = std::move(attrs);
    concat.layer = split.layer;
    ops.push_back(std::move(concat));
  }

  /// Before the layer's first gradient op: this part's nodes of its gradient.
  void sliceGradient(std::vector<Op> &ops, SplitLayer &split) const {
    if (split.sliced)
      return;
    split.sliced = true;
    Op slice;
    slice.kind = OpKind::SliceInput;
    slice.in = {split.gradient};
    slice.out = {split.partGradient};
    slice.attrs =
        SliceAttrs{split.first[static_cast<size_t>(part_)], nodes(split, part_), layer(split.layer).nodes};
    slice.layer = split.layer;
    ops.push_back(std::move(slice));
  }

  /// A split layer's op, on this part's nodes.
  void narrow(Op &op, SplitLayer &split) const {
    const int64_t mine = nodes(split, part_);
    auto &a = std::get<DenseAttrs>(op.attrs);
    a.outputs = mine;
    if (op.kind == OpKind::AddBias || op.kind == OpKind::BiasGrad)
      a.inputs = mine;
    if (op.kind == OpKind::Dense || op.kind == OpKind::AddBias)
      op.out[0] = split.parts[static_cast<size_t>(part_)];
    else
      op.in[0] = split.partGradient;
  }

  /// Part 0 adds its share of the input gradient before it computes its
  /// weights' gradient (the next part waits for that share).
  void inputGradientFirst() {
    if (part_ != 0)
      return;
    for (size_t i = plan_.lossEnd; i + 1 < plan_.backwardEnd; ++i) {
      Op &a = plan_.ops[i], &b = plan_.ops[i + 1];
      if (a.kind == OpKind::DenseGradWeights && b.kind == OpKind::DenseGradInput && a.layer == b.layer &&
          a.bundle == b.bundle && splitOf(a)) {
        std::swap(a, b);
        ++i;
      }
    }
  }

  void rewriteOps() {
    inputGradientFirst();
    std::vector<Op> ops;
    std::vector<size_t> moved(plan_.ops.size() + 1);
    for (size_t i = 0; i < plan_.ops.size(); ++i) {
      moved[i] = ops.size();
      Op op = std::move(plan_.ops[i]);
      SplitLayer *split = splitOf(op);
      if (!split) {
        ops.push_back(std::move(op));
        continue;
      }
      switch (op.kind) {
      case OpKind::Dense:
      case OpKind::AddBias:
        narrow(op, *split);
        ops.push_back(std::move(op));
        if (i == split->lastForward)
          exchange(ops, *split);
        break;
      case OpKind::BiasGrad:
      case OpKind::DenseGradWeights:
        sliceGradient(ops, *split);
        narrow(op, *split);
        ops.push_back(std::move(op));
        break;
      case OpKind::DenseGradInput: {
        sliceGradient(ops, *split);
        narrow(op, *split);
        const int dx = op.out[0], last = parts_ - 1;
        if (part_ > 0) { // the sum over the parts before this one, to add to
          ops.push_back(
              transfer(OpKind::Receive, dx, part_ - 1, TransferKind::PartialGradient, split->layer));
          op.accumulate = true;
        }
        ops.push_back(std::move(op));
        if (part_ < last) {
          ops.push_back(transfer(OpKind::Send, dx, part_ + 1, TransferKind::PartialGradient, split->layer));
          ops.push_back(transfer(OpKind::Receive, dx, last, TransferKind::PartialGradient, split->layer));
        } else {
          for (int p = 0; p < last; ++p)
            ops.push_back(transfer(OpKind::Send, dx, p, TransferKind::PartialGradient, split->layer));
        }
        break;
      }
      default: ops.push_back(std::move(op)); break; // the output function and the loss: whole
      }
    }
    moved[plan_.ops.size()] = ops.size();
    for (size_t *end :
         {&plan_.stepBegin, &plan_.forwardEnd, &plan_.lossEnd, &plan_.backwardEnd, &plan_.updateEnd})
      *end = moved[std::min(*end, plan_.ops.size())];
    plan_.ops = std::move(ops);
  }

  Plan &plan_;
  const ir::Network &net_;
  const std::vector<int> &stageOf_;
  const std::vector<int> &splitParts_;
  int part_ = 0, parts_ = 1;
  std::vector<int> widths_;
  std::vector<SplitLayer> splits_;
};

} // namespace

Expected<SplitSpec> parseSplitSpec(std::string_view text) {
  const size_t colon = text.rfind(':');
  const std::string shown = printableText(text.substr(0, 80));
  if (colon == std::string_view::npos || colon == 0)
    return fail(fmt::format("--split '{}': give LAYER:RANKS, a layer and the ranks its nodes are shared "
                            "among (e.g. Hidden:2)",
                            shown));
  const std::string_view count = text.substr(colon + 1);
  int parts = 0;
  auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), parts);
  if (count.empty() || error != std::errc() || end != count.data() + count.size() || parts < 2 ||
      parts > kMaxSplitRanks)
    return fail(fmt::format("--split '{}': the ranks after ':' must be a whole number from 2 to {}", shown,
                            kMaxSplitRanks));
  return SplitSpec{std::string(text.substr(0, colon)), parts};
}

Expected<std::vector<int>> splitPartsOf(const ir::Network &network, const std::vector<std::string> &specs) {
  std::vector<int> parts(network.layers.size(), 0);
  for (const std::string &text : specs) {
    auto spec = parseSplitSpec(text);
    if (!spec)
      return spec.error();
    const int layer = network.findLayer(spec->layer);
    if (layer < 0) {
      std::vector<std::string_view> names;
      for (const ir::Layer &l : network.layers)
        names.push_back(l.name);
      const auto near = closestMatch(spec->layer, names);
      return fail(fmt::format("--split {}: network '{}' has no layer '{}'{}", printableText(text),
                              network.name, printableText(spec->layer),
                              near ? fmt::format("; did you mean '{}'?", *near) : std::string()));
    }
    if (parts[static_cast<size_t>(layer)] > 0)
      return fail(fmt::format("--split names layer '{}' twice", spec->layer));
    parts[static_cast<size_t>(layer)] = spec->parts;
  }
  return parts;
}

Expected<std::vector<int64_t>> splitNodes(int64_t nodes, int parts) {
  const int64_t block = denseBlockSize(nodes);
  const int64_t blocks = block > 0 ? (nodes + block - 1) / block : 1;
  if (parts < 2)
    return fail(fmt::format("a split takes 2 or more ranks, not {}", parts));
  if (blocks < parts)
    return fail(fmt::format(
        "its {} nodes are computed in {} (a dense op computes at most {} outputs at once, and a split gives "
        "each rank whole blocks, so that it computes what one process does): {}",
        nodes, blocks == 1 ? std::string("one product") : fmt::format("{} blocks of {}", blocks, block),
        kMaxDenseBlock,
        blocks == 1   ? fmt::format("only a layer of more than {} nodes is split", kMaxDenseBlock)
        : blocks == 2 ? std::string("split it over 2 ranks")
                      : fmt::format("split it over 2 to {} ranks", blocks)));
  std::vector<int64_t> first(static_cast<size_t>(parts) + 1);
  for (int p = 0; p < parts; ++p)
    first[static_cast<size_t>(p)] = std::min(nodes, int64_t{p} * blocks / parts * block);
  first[static_cast<size_t>(parts)] = nodes;
  return first;
}

Expected<std::vector<int>> stageWidths(const ir::Network &network, const std::vector<int> &stageOf,
                                       const std::vector<int> &splitParts) {
  const int stages = stageOf.empty() ? 1 : 1 + *std::max_element(stageOf.begin(), stageOf.end());
  std::vector<int> widths(static_cast<size_t>(stages), 1);
  int first = -1;
  for (size_t l = 0; l < splitParts.size() && l < network.layers.size(); ++l) {
    if (splitParts[l] < 2)
      continue;
    const int stage = stageOf.empty() ? 0 : stageOf[l];
    if (first < 0) {
      first = static_cast<int>(l);
      widths[static_cast<size_t>(stage)] = splitParts[l];
      continue;
    }
    const ir::Layer &a = network.layers[static_cast<size_t>(first)], &b = network.layers[l];
    if (splitParts[l] != splitParts[static_cast<size_t>(first)])
      return fail(
          fmt::format("--split: layers '{}' and '{}' are split over {} and {} ranks; the split layers "
                      "share one stage's ranks, so give them the same count",
                      a.name, b.name, splitParts[static_cast<size_t>(first)], splitParts[l]));
    const int firstStage = stageOf.empty() ? 0 : stageOf[static_cast<size_t>(first)];
    if (stage != firstStage)
      return fail(
          fmt::format("--split: layers '{}' (stage {}) and '{}' (stage {}) are split, but split layers "
                      "must lie in one stage (a pipeline then has its stages + {} ranks): cut so that "
                      "both fall in one stage, or split only one",
                      a.name, firstStage, b.name, stage, splitParts[l] - 1));
  }
  return widths;
}

Status keepPart(Plan &plan, const ir::Network &network, const std::vector<int> &stageOf,
                const std::vector<int> &splitParts, int part) {
  return PartCutter(plan, network, stageOf, splitParts, part).cut();
}

} // namespace netc::plan
