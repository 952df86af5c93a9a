// CostModel.cpp -- the cost model's arithmetic (CostModel.h): each op's work
// from its attributes and buffers, its time on a cost table's profile, a
// step's time with the gradient all-reduces overlapping the backward pass,
// the memory a plan holds by kind, and each layer's share of a step.
#include "codegen/CostModel.h"

#include <algorithm>
#include <map>
#include <set>

namespace netc::cost {

using plan::OpKind;

WorkMeasure workMeasure(OpKind kind) {
  switch (kind) {
  case OpKind::Dense:
  case OpKind::DenseGradWeights:
  case OpKind::DenseGradInput:
  case OpKind::Sparse:
  case OpKind::SparseGradWeights:
  case OpKind::SparseGradInput:
  case OpKind::Convolution:
  case OpKind::ConvolutionGradWeights:
  case OpKind::ConvolutionGradInput:
  case OpKind::MaxPool:
  case OpKind::MaxPoolGrad:
  case OpKind::MeanPool:
  case OpKind::MeanPoolGrad:
  case OpKind::ResponseNorm:
  case OpKind::ResponseNormGrad:
  case OpKind::Activate:
  case OpKind::ActivateGrad: return WorkMeasure::Flops;
  default: return WorkMeasure::Bytes;
  }
}

OpKind rateKind(OpKind kind) {
  return kind == OpKind::ConcatNodes ? OpKind::SliceInput : kind;
}

bool hasRate(OpKind kind) {
  return plan::opRole(kind) != plan::OpRole::Communication && rateKind(kind) == kind;
}

namespace {

/// Arithmetic per node of an output function (its backward alike): the
/// functions built on exp, tanh or sqrt count as 8, the rest as 1.
double functionFlops(ir::Activation fn) {
  switch (fn) {
  case ir::Activation::Sigmoid:
  case ir::Activation::Softmax:
  case ir::Activation::Tanh:
  case ir::Activation::Sqrt:
  case ir::Activation::Srlinear: return 8;
  default: return 1;
  }
}

/// Multiply-adds per sample of a windowed or matrix op (2 FLOPs each).
double flopsPerSample(const plan::Op &op) {
  if (const auto *d = std::get_if<plan::DenseAttrs>(&op.attrs))
    return 2.0 * double(d->inputs) * double(d->outputs);
  if (const auto *s = std::get_if<plan::SparseAttrs>(&op.attrs))
    return 2.0 * double(s->edges);
  if (const auto *c = std::get_if<plan::ConvAttrs>(&op.attrs))
    return 2.0 * double(c->groups) * double(c->maps) * double(c->positions) * double(c->window);
  if (const auto *w = std::get_if<plan::WindowAttrs>(&op.attrs)) {
    const double cells = double(w->outputs) * double(w->window);
    const bool norm = op.kind == OpKind::ResponseNorm || op.kind == OpKind::ResponseNormGrad;
    return norm ? 3 * cells : cells;
  }
  if (const auto *a = std::get_if<plan::ActivationAttrs>(&op.attrs))
    return double(a->nodes) * functionFlops(a->function);
  return 0;
}

bool isFlatArena(plan::BufferRole role) {
  return role == plan::BufferRole::ParameterArena || role == plan::BufferRole::GradientArena ||
         role == plan::BufferRole::StateArena;
}

} // namespace

double OpWork::at(WorkMeasure measure, int64_t batch) const {
  const double b = static_cast<double>(batch);
  return measure == WorkMeasure::Flops ? flopsPerSample * b + fixedFlops : bytesPerSample * b + fixedBytes;
}

OpWork opWork(const plan::Plan &plan, const plan::Op &op) {
  OpWork work;
  if (op.kind == OpKind::Update) {
    // Parameters and state read and written, gradients read.
    const auto &u = op.get<plan::UpdateAttrs>();
    work.fixedBytes = 4.0 * double(u.count) * (3 + 2 * u.stateSlots);
    return work;
  }
  if (op.kind == OpKind::ZeroGradients) {
    work.fixedBytes = 4.0 * double(plan.arenaElements);
    return work;
  }
  if (const auto *c = std::get_if<plan::CommAttrs>(&op.attrs)) {
    work.fixedBytes = 4.0 * double(c->count);
    return work;
  }
  // Every buffer it reads or writes once; the flat arenas only through their views.
  std::set<int> seen;
  for (const std::vector<int> *list : {&op.in, &op.out})
    for (int b : *list) {
      if (b < 0 || !seen.insert(b).second)
        continue;
      const plan::Buffer &buffer = plan.buffers[static_cast<size_t>(b)];
      if (isFlatArena(buffer.role))
        continue;
      if (buffer.batchScaled())
        work.bytesPerSample += 4.0 * double(buffer.perSample);
      else
        work.fixedBytes += 4.0 * double(buffer.fixed);
    }
  work.flopsPerSample = flopsPerSample(op);
  return work;
}

double opMicroseconds(const plan::Plan &plan, size_t index, const ComputeProfile &profile, int64_t batch) {
  const plan::Op &op = plan.ops[index];
  if (!hasRate(rateKind(op.kind)))
    return 0;
  auto found = profile.ops.find(rateKind(op.kind));
  if (found == profile.ops.end())
    return 0;
  return opMicroseconds(op.kind, opWork(plan, op), found->second, batch);
}

double opMicroseconds(plan::OpKind kind, const OpWork &work, const OpRate &rate, int64_t batch) {
  double us = rate.overheadUs + work.at(workMeasure(kind), batch) / rate.rate * 1e6;
  if (rate.byteRate > 0 && workMeasure(kind) == WorkMeasure::Flops)
    us += work.at(WorkMeasure::Bytes, batch) / rate.byteRate * 1e6;
  return us;
}

namespace {
double sumOps(const plan::Plan &plan, size_t first, size_t last, const ComputeProfile &profile,
              int64_t batch) {
  double us = 0;
  for (size_t i = first; i < last && i < plan.ops.size(); ++i)
    us += opMicroseconds(plan, i, profile, batch);
  return us;
}
} // namespace

StepTime stepTime(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch, int replicas,
                  const Link &link) {
  StepTime t;
  t.forwardUs = sumOps(plan, plan.stepBegin, plan.forwardEnd, profile, batch);
  t.lossUs = sumOps(plan, plan.forwardEnd, plan.lossEnd, profile, batch);
  // Zeroing the gradients (gradient accumulation) belongs to the backward pass.
  t.backwardUs = sumOps(plan, 0, plan.stepBegin, profile, batch);
  // When each op of the backward pass ends, from its start.
  std::vector<double> endOf(plan.ops.size(), 0);
  double clock = 0;
  for (size_t i = plan.lossEnd; i < plan.backwardEnd && i < plan.ops.size(); ++i) {
    clock += opMicroseconds(plan, i, profile, batch);
    endOf[i] = clock;
  }
  t.backwardUs += clock;
  t.updateUs = sumOps(plan, plan.backwardEnd, plan.updateEnd, profile, batch);
  t.hostUs = profile.stepOverheadUs + profile.sampleOverheadUs * static_cast<double>(batch);
  if (replicas > 1 && plan.replicaSync != plan::ReplicaSync::AverageReplicas) {
    // One all-reduce at a time, each from when its bucket is final.
    double channel = 0;
    for (const plan::Bucket &bucket : plan.buckets) {
      const double ready = bucket.readyAfter < endOf.size() ? endOf[bucket.readyAfter] : clock;
      const double us = link.allReduceUs(4.0 * double(bucket.count), replicas);
      channel = std::max(channel, ready) + us;
      t.allReduceUs += us;
    }
    t.exposedCommUs = std::max(0.0, channel - clock);
  }
  return t;
}

double forwardMicroseconds(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch) {
  return sumOps(plan, plan.stepBegin, plan.lossEnd, profile, batch);
}

namespace {
/// a · b, or INT64_MAX when it does not fit (sizes of absurd batches).
int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
}
} // namespace

int64_t MemoryUse::total() const {
  int64_t sum = 0;
  for (int64_t part : {parameters, gradients, optimizerState, tables, activations, inputs, other})
    if (__builtin_add_overflow(sum, part, &sum))
      return INT64_MAX;
  return sum;
}

MemoryUse memoryUse(const plan::Plan &plan, int64_t batch) {
  MemoryUse m;
  for (const plan::Buffer &buffer : plan.buffers) {
    if (buffer.batchScaled() || buffer.viewOf >= 0)
      continue; // the arenas below; views within their flat arena
    const int64_t bytes = buffer.fixed * 4;
    switch (buffer.role) {
    case plan::BufferRole::ParameterArena: m.parameters += bytes; break;
    case plan::BufferRole::GradientArena: m.gradients += bytes; break;
    case plan::BufferRole::StateArena: m.optimizerState += bytes; break;
    case plan::BufferRole::Table: m.tables += bytes; break;
    default: m.other += bytes; break;
    }
  }
  m.activations =
      saturatingMul(saturatingMul(int64_t{plan.activationSlots} * plan.memory.arenaPerSample, batch), 4);
  m.inputs = saturatingMul(saturatingMul(int64_t{plan.inputSlots} * plan.memory.inputsPerSample, batch), 4);
  return m;
}

std::vector<LayerCost> layerCosts(const ir::Network &network, const plan::Plan &plan,
                                  const ComputeProfile &profile) {
  const size_t n = network.layers.size();
  std::vector<LayerCost> costs(n);
  for (size_t l = 0; l < n; ++l) {
    const ir::Layer &layer = network.layers[l];
    LayerCost &c = costs[l];
    c.layer = static_cast<int>(l);
    c.name = layer.name;
    std::set<int> sources;
    for (const ir::Bundle &bundle : layer.bundles)
      if (bundle.source >= 0 && static_cast<size_t>(bundle.source) < n)
        sources.insert(bundle.source);
    c.sources.assign(sources.begin(), sources.end());
    c.outputBytesPerSample = layer.nodes * 4;
    c.input = layer.kind == ir::LayerKind::Input;
    c.output = static_cast<int>(l) == network.output;
  }
  // Layers tied by a parameter (share) form a group, named by its first layer.
  for (const plan::Parameter &p : plan.parameters)
    for (const ir::ParamRef &owner : p.owners) {
      const int a = p.owners.front().layer, b = owner.layer;
      if (a == b || a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n)
        continue;
      const int from = costs[static_cast<size_t>(b)].tiedGroup >= 0 ? costs[size_t(b)].tiedGroup : b;
      const int to = costs[static_cast<size_t>(a)].tiedGroup >= 0 ? costs[size_t(a)].tiedGroup : a;
      const int group = std::min(from, to);
      for (LayerCost &c : costs) // merge both groups (networks share few tensors)
        if (c.layer == a || c.layer == b || c.tiedGroup == from || c.tiedGroup == to)
          c.tiedGroup = group;
    }
  // Each op's time and buffers go to its layer (the loss to the output layer).
  std::vector<std::set<int>> tablesOf(n), activationsOf(n);
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    const plan::OpRole role = plan::opRole(op.kind);
    if (role == plan::OpRole::Update || role == plan::OpRole::Communication ||
        op.kind == OpKind::ZeroGradients)
      continue;
    const int layer = op.layer >= 0 ? op.layer : role == plan::OpRole::Loss ? network.output : -1;
    if (layer < 0 || static_cast<size_t>(layer) >= n)
      continue;
    auto rate = profile.ops.find(op.kind);
    if (rate == profile.ops.end())
      continue;
    // Linear in the batch: the time at 0 samples, and what one more adds.
    const OpWork work = opWork(plan, op);
    LayerCost &c = costs[static_cast<size_t>(layer)];
    const double atZero = opMicroseconds(op.kind, work, rate->second, 0);
    c.fixedUs += atZero;
    c.perSampleUs += opMicroseconds(op.kind, work, rate->second, 1) - atZero;
    for (int b : op.in)
      if (b >= 0 && plan.buffers[static_cast<size_t>(b)].role == plan::BufferRole::Table)
        tablesOf[static_cast<size_t>(layer)].insert(b);
    for (int b : op.out)
      if (b >= 0 && plan.buffers[static_cast<size_t>(b)].batchScaled() && b != plan.labels &&
          b != plan.features)
        activationsOf[static_cast<size_t>(layer)].insert(b);
  }
  for (size_t l = 0; l < n; ++l) {
    for (int b : tablesOf[l])
      costs[l].fixedBytes += plan.buffers[static_cast<size_t>(b)].fixed * 4;
    for (int b : activationsOf[l])
      costs[l].activationBytesPerSample += plan.buffers[static_cast<size_t>(b)].perSample * 4;
  }
  // The update: each parameter's share of the update op's time goes to its
  // owners (split among them); its values, gradients and state to each.
  double updateUs = 0, updateElements = 0;
  int slots = 0;
  for (size_t i = plan.backwardEnd; i < plan.updateEnd && i < plan.ops.size(); ++i)
    if (plan.ops[i].kind == OpKind::Update) {
      updateUs += opMicroseconds(plan, i, profile, 1);
      slots = std::max(slots, plan.ops[i].get<plan::UpdateAttrs>().stateSlots);
    }
  // Shared out by the trained values (the arena's alignment padding goes with them).
  for (const plan::Parameter &p : plan.parameters)
    if (p.trained)
      updateElements += double(p.count);
  const bool training = plan.gradientArena >= 0;
  for (const plan::Parameter &p : plan.parameters) {
    std::set<int> owners;
    for (const ir::ParamRef &owner : p.owners)
      if (owner.layer >= 0 && static_cast<size_t>(owner.layer) < n)
        owners.insert(owner.layer);
    for (int owner : owners) {
      LayerCost &c = costs[static_cast<size_t>(owner)];
      c.fixedBytes += p.count * 4 * (training ? 2 + slots : 1);
      if (p.trained && updateElements > 0)
        c.updateUs += updateUs * double(p.count) / updateElements / double(owners.size());
    }
  }
  return costs;
}

} // namespace netc::cost
