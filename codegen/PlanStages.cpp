// PlanStages.cpp -- one pipeline stage's plan (docs/distributed.md §Pipeline
// stages): from the whole network's training plan, the ops of the stage's
// layers in their order, the receives and sends that carry values across
// its cuts, and only its parameters and buffers. A layer's values that an
// earlier stage makes and a later one reads are forwarded stage by stage
// (every stage in between receives them and sends them on) rather than
// sent directly, and so are their gradients backward: each stage adds its
// own contributions to a received gradient in the order the whole plan
// adds them, so that a pipeline computes the same bits as one process.
// Receives open a stage's forward pass (and its backward pass); sends close
// it; on each cut both sides list the layers in the same order. A stage of
// several ranks (a layer of it split over them, codegen/PlanSplit.cpp)
// receives on each of them from the neighbour's first rank, and only its
// first rank sends, to every rank of the neighbour: all its ranks hold the
// same values and gradients at its cuts.
#include "codegen/Codegen.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::plan {

namespace {

/// A values buffer that crosses at least one cut.
struct Crossing {
  int values = -1;
  int producer = 0;    // the stage that makes it
  int lastReader = 0;  // the last stage that reads it
  int gradient = -1;   // its gradient buffer (-1: none)
  int lastWriter = -1; // the last stage that adds to its gradient
  int layer = -1;
};

class StageCutter {
public:
  StageCutter(Plan &plan, const ir::Network &net, const std::vector<int> &stageOf, int stage,
              const std::vector<int> &widths, int part)
      : plan_(plan), net_(net), stageOf_(stageOf), stage_(stage), widths_(widths), part_(part) {}

  Expected<std::vector<int>> cut() {
    if (Status s = check(); !s)
      return Error{s.message()};
    findCrossings();
    std::vector<Op> ops = stageOps();
    std::vector<Parameter> parameters;
    std::vector<int> parameterIndex(plan_.parameters.size(), -1);
    for (size_t i = 0; i < plan_.parameters.size(); ++i)
      if (Parameter &p = plan_.parameters[i]; stageOfLayer(p.owners.front().layer) == stage_) {
        parameterIndex[i] = static_cast<int>(parameters.size());
        parameters.push_back(std::move(p));
      }
    for (Parameter &p : parameters) // a convolution's weights and kernel biases stay together
      for (int *link : {&p.kernelBias, &p.biasOf})
        if (*link >= 0)
          *link = parameterIndex[static_cast<size_t>(*link)];
    plan_.ops = std::move(ops);
    plan_.parameters = std::move(parameters);
    plan_.stage = stage_;
    plan_.stages = stages_;
    plan_.pipelineRank = pipelineRank(widths_, stage_, part_);
    plan_.pipelineRanks = widths_.empty() ? stages_ : pipelineRank(widths_, stages_, 0);
    return compactBuffers();
  }

private:
  int stageOfLayer(int layer) const { return stageOf_[static_cast<size_t>(layer)]; }

  Status check() {
    if (stageOf_.size() != net_.layers.size())
      return fail(fmt::format("the partition gives stages for {} layers; network '{}' has {}",
                              stageOf_.size(), net_.name, net_.layers.size()));
    stages_ = 1 + *std::max_element(stageOf_.begin(), stageOf_.end());
    if (stage_ < 0 || stage_ >= stages_)
      return fail(fmt::format("stage {} does not exist: the partition has {} stage(s)", stage_, stages_));
    if (!widths_.empty() && static_cast<int>(widths_.size()) != stages_)
      return fail(fmt::format("the pipeline's layout gives ranks for {} stages; the partition has {}",
                              widths_.size(), stages_));
    if (part_ < 0 || part_ >= width(stage_))
      return fail(
          fmt::format("part {} of stage {} does not exist: it has {} rank(s)", part_, stage_, width(stage_)));
    for (int input : net_.inputs)
      if (stageOfLayer(input) != 0)
        return fail(fmt::format("the input layer '{}' must be in the first stage",
                                net_.layers[static_cast<size_t>(input)].name));
    if (stageOfLayer(net_.output) != stages_ - 1)
      return fail(fmt::format("the output layer '{}' must be in the last stage",
                              net_.layers[static_cast<size_t>(net_.output)].name));
    // Stages must be contiguous runs of the plan's layers: each layer's
    // gradient is then added to in the same order as in one process.
    int previous = 0;
    for (size_t i = plan_.stepBegin; i < plan_.forwardEnd; ++i) {
      const int layer = plan_.ops[i].layer;
      if (layer < 0 || stageOfLayer(layer) >= previous) {
        previous = layer < 0 ? previous : stageOfLayer(layer);
        continue;
      }
      return fail(fmt::format("layer '{}' is in stage {} but comes after a layer of stage {} in the "
                              "network's order: stages must be consecutive runs of layers",
                              net_.layers[static_cast<size_t>(layer)].name, stageOfLayer(layer), previous));
    }
    for (const Parameter &p : plan_.parameters)
      for (const ir::ParamRef &owner : p.owners)
        if (stageOfLayer(owner.layer) != stageOfLayer(p.owners.front().layer))
          return fail(fmt::format(
              "layers '{}' (stage {}) and '{}' (stage {}) share the weights '{}': a cut cannot separate "
              "them; put both in one stage",
              net_.layers[static_cast<size_t>(p.owners.front().layer)].name,
              stageOfLayer(p.owners.front().layer), net_.layers[static_cast<size_t>(owner.layer)].name,
              stageOfLayer(owner.layer), p.name));
    return Status::success();
  }

  /// The stage an op belongs to; -1: every stage (zeroing the gradients).
  int opStage(const Op &op) const {
    if (op.kind == OpKind::ZeroGradients)
      return -1;
    return op.layer >= 0 ? stageOfLayer(op.layer) : 0;
  }

  void findCrossings() {
    const size_t n = plan_.buffers.size();
    std::vector<int> producer(n, -1), lastReader(n, -1), layerOf(n, -1);
    producer[static_cast<size_t>(plan_.features)] = 0;
    if (net_.inputs.size() == 1)
      layerOf[static_cast<size_t>(plan_.features)] = net_.inputs.front();
    for (size_t i = plan_.stepBegin; i < plan_.forwardEnd; ++i)
      for (int out : plan_.ops[i].out)
        if (plan_.buffers[static_cast<size_t>(out)].role == BufferRole::Values && producer[size_t(out)] < 0) {
          producer[static_cast<size_t>(out)] = opStage(plan_.ops[i]);
          layerOf[static_cast<size_t>(out)] = plan_.ops[i].layer;
        }
    for (const Op &op : plan_.ops)
      for (int in : op.in)
        if (producer[static_cast<size_t>(in)] >= 0)
          lastReader[static_cast<size_t>(in)] = std::max(lastReader[static_cast<size_t>(in)], opStage(op));
    std::vector<int> crossingOf(n, -1);
    for (size_t b = 0; b < n; ++b)
      if (producer[b] >= 0 && lastReader[b] > producer[b]) {
        crossingOf[b] = static_cast<int>(crossings_.size());
        crossings_.push_back({static_cast<int>(b), producer[b], lastReader[b], -1, -1, layerOf[b]});
      }
    for (size_t i = plan_.lossEnd; i < plan_.backwardEnd; ++i)
      for (int out : plan_.ops[i].out) {
        const Buffer &g = plan_.buffers[static_cast<size_t>(out)];
        if (g.role != BufferRole::Gradient || g.gradientOf < 0)
          continue;
        if (const int c = crossingOf[static_cast<size_t>(g.gradientOf)]; c >= 0) {
          Crossing &crossing = crossings_[static_cast<size_t>(c)];
          crossing.gradient = out;
          crossing.lastWriter = std::max(crossing.lastWriter, opStage(plan_.ops[i]));
        }
      }
  }

  int width(int stage) const { return widths_.empty() ? 1 : widths_[static_cast<size_t>(stage)]; }

  Op transfer(OpKind kind, int buffer, int peerStage, int peerPart, const Crossing &c, bool gradient) const {
    Op op;
    op.kind = kind;
    (kind == OpKind::Send ? op.in : op.out) = {buffer};
    op.attrs = TransferAttrs{pipelineRank(widths_, peerStage, peerPart), c.layer,
                             gradient ? TransferKind::Gradient : TransferKind::Values, peerStage, peerPart};
    op.layer = c.layer;
    return op;
  }

  /// The stage's first rank sends to every rank of stage `to`; the others send nothing.
  void sendTo(std::vector<Op> &ops, int to, int buffer, const Crossing &c, bool gradient) const {
    if (part_ == 0)
      for (int p = 0; p < width(to); ++p)
        ops.push_back(transfer(OpKind::Send, buffer, to, p, c, gradient));
  }

  /// The stage's ops in the whole plan's order, with its receives and
  /// sends, and the range ends moved to match.
  std::vector<Op> stageOps() {
    std::vector<Op> ops;
    auto keep = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        if (const int s = opStage(plan_.ops[i]); s == stage_ || s == -1)
          ops.push_back(std::move(plan_.ops[i]));
    };
    const size_t stepBegin = plan_.stepBegin, forwardEnd = plan_.forwardEnd, lossEnd = plan_.lossEnd,
                 backwardEnd = plan_.backwardEnd;
    keep(0, stepBegin);
    plan_.stepBegin = ops.size();
    for (const Crossing &c : crossings_)
      if (c.producer < stage_ && stage_ <= c.lastReader)
        ops.push_back(transfer(OpKind::Receive, c.values, stage_ - 1, 0, c, false));
    keep(stepBegin, forwardEnd);
    for (const Crossing &c : crossings_)
      if (c.producer <= stage_ && stage_ < c.lastReader)
        sendTo(ops, stage_ + 1, c.values, c, false);
    plan_.forwardEnd = ops.size();
    keep(forwardEnd, lossEnd);
    plan_.lossEnd = ops.size();
    for (const Crossing &c : crossings_)
      if (c.gradient >= 0 && c.producer <= stage_ && stage_ < c.lastWriter)
        ops.push_back(transfer(OpKind::Receive, c.gradient, stage_ + 1, 0, c, true));
    keep(lossEnd, backwardEnd);
    for (const Crossing &c : crossings_)
      if (c.gradient >= 0 && c.producer < stage_ && stage_ <= c.lastWriter)
        sendTo(ops, stage_ - 1, c.gradient, c, true);
    plan_.backwardEnd = ops.size();
    keep(backwardEnd, plan_.ops.size());
    plan_.updateEnd = ops.size();
    return ops;
  }

  /// Drops the buffers nothing in the stage refers to and renumbers the
  /// rest; returns each old index's new one (-1: dropped).
  std::vector<int> compactBuffers() {
    const size_t n = plan_.buffers.size();
    std::vector<bool> used(n, false);
    auto use = [&](int b) {
      if (b >= 0)
        used[static_cast<size_t>(b)] = true;
    };
    for (const Op &op : plan_.ops) {
      for (int b : op.in)
        use(b);
      for (int b : op.out)
        use(b);
    }
    for (const Parameter &p : plan_.parameters) {
      use(p.buffer);
      use(p.gradient);
    }
    const bool first = stage_ == 0, last = stage_ == stages_ - 1;
    if (!first && plan_.features >= 0) // a later stage's copy of the features is received values
      plan_.buffers[static_cast<size_t>(plan_.features)].role = BufferRole::Values;
    if (!first)
      plan_.features = -1;
    if (!last) {
      plan_.labels = -1;
      plan_.output = -1;
    }
    for (int b : {plan_.features, plan_.labels, plan_.metrics, plan_.scalars, plan_.workspace, plan_.output,
                  plan_.parameterArena, plan_.gradientArena})
      use(b);
    std::vector<int> remap(n, -1);
    std::vector<Buffer> kept;
    for (size_t b = 0; b < n; ++b)
      if (used[b]) {
        remap[b] = static_cast<int>(kept.size());
        kept.push_back(std::move(plan_.buffers[b]));
      }
    auto to = [&](int &b) {
      if (b >= 0)
        b = remap[static_cast<size_t>(b)];
    };
    for (Buffer &b : kept)
      to(b.gradientOf);
    plan_.buffers = std::move(kept);
    for (Op &op : plan_.ops) {
      for (int &b : op.in)
        to(b);
      for (int &b : op.out)
        to(b);
      if (auto *loss = std::get_if<LossAttrs>(&op.attrs))
        to(loss->gradientOf);
    }
    for (Parameter &p : plan_.parameters) {
      to(p.buffer);
      to(p.gradient);
    }
    for (int *b : {&plan_.features, &plan_.labels, &plan_.metrics, &plan_.scalars, &plan_.workspace,
                   &plan_.output, &plan_.parameterArena, &plan_.gradientArena})
      to(*b);
    return remap;
  }

  Plan &plan_;
  const ir::Network &net_;
  const std::vector<int> &stageOf_;
  int stage_ = 0, stages_ = 1;
  const std::vector<int> &widths_;
  int part_ = 0;
  std::vector<Crossing> crossings_;
};

} // namespace

int pipelineRank(const std::vector<int> &widths, int stage, int part) {
  if (widths.empty())
    return stage + part;
  int rank = 0;
  for (int s = 0; s < stage && s < static_cast<int>(widths.size()); ++s)
    rank += widths[static_cast<size_t>(s)];
  return rank + part;
}

Expected<std::vector<int>> keepStage(Plan &plan, const ir::Network &network, const std::vector<int> &stageOf,
                                     int stage, const std::vector<int> &widths, int part) {
  return StageCutter(plan, network, stageOf, stage, widths, part).cut();
}

} // namespace netc::plan
