// PlanPrinter.cpp -- the Plan as deterministic text for `netc compile
// --emit=plan` and the golden tests: a header with the loss and memory, the
// flat arenas and their buckets, the step scalars, the parameters with their
// arena offsets, the buffers with their shapes and planned places, then the
// ops of each phase with their attributes (geometry included) and buffers by
// name.
#include "codegen/Codegen.h"

#include <fmt/format.h>

namespace netc::plan {

namespace {

std::string shape(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", dims[i]);
  return out + "]";
}

/// Per dimension: input:kernel/stride pad low+high @offset ×windows
/// (convolution: maps, and "u" for an unshared dimension).
std::string geometry(const std::vector<WindowDim> &dims) {
  std::string out = " geometry=[";
  for (size_t i = 0; i < dims.size(); ++i) {
    const WindowDim &d = dims[i];
    out += fmt::format("{}{}:{}/{} pad {}+{} @{} x{}", i ? "; " : "", d.input, d.kernel, d.stride, d.padLow,
                       d.padHigh, d.offset, d.count);
    if (d.maps != 1)
      out += fmt::format(" maps {}", d.maps);
    if (!d.shared)
      out += " unshared";
  }
  return out + "]";
}

constexpr std::string_view kStepScalarNames[] = {"learning-rate",        "step",         "corrected-rate",
                                                 "inv-sqrt-correction2", "step-samples", "valid-count"};
static_assert(std::size(kStepScalarNames) == kStepScalarCount);

std::string attributes(const Op &op) {
  struct Visitor {
    std::string operator()(const NoAttrs &) const { return ""; }
    std::string operator()(const SliceAttrs &a) const {
      return fmt::format(" offset={} width={}", a.offset, a.width);
    }
    std::string operator()(const DenseAttrs &a) const {
      return fmt::format(" inputs={} outputs={}{}", a.inputs, a.outputs,
                         a.block > 0 ? fmt::format(" block={}", a.block) : std::string());
    }
    std::string operator()(const SparseAttrs &a) const {
      return fmt::format(" inputs={} outputs={} edges={}", a.inputs, a.outputs, a.edges);
    }
    std::string operator()(const ConvAttrs &a) const {
      return fmt::format(" kernel={} groups={} maps={} positions={} window={}{}",
                         ir::kernelKindName(a.kernel), a.groups, a.maps, a.positions, a.window,
                         geometry(a.dims));
    }
    std::string operator()(const WindowAttrs &a) const {
      return fmt::format(" outputs={} window={}{}", a.outputs, a.window, geometry(a.dims));
    }
    std::string operator()(const ActivationAttrs &a) const {
      return fmt::format(" function={}", ir::activationName(a.function));
    }
    std::string operator()(const LossAttrs &a) const { return fmt::format(" nodes={}", a.nodes); }
    std::string operator()(const CommAttrs &a) const {
      if (a.count == 0)
        return {};
      return fmt::format(" {} @{} count={}{}", a.mean ? "mean" : "sum", a.offset, a.count,
                         a.bucket >= 0 ? fmt::format(" bucket={}", a.bucket) : std::string());
    }
    std::string operator()(const TransferAttrs &a) const {
      static constexpr std::string_view kWhat[] = {"values", "gradient", "part", "partial-gradient"};
      const bool toPart = a.what == TransferKind::Part || a.what == TransferKind::PartialGradient ||
                          a.peerPart > 0 || a.peer != a.peerStage;
      return fmt::format(" {} stage={}{}", kWhat[static_cast<int>(a.what)], a.peerStage,
                         toPart ? fmt::format(" part={} rank={}", a.peerPart, a.peer) : std::string());
    }
    std::string operator()(const ConcatAttrs &a) const {
      std::string widths;
      for (int64_t w : a.widths)
        widths += fmt::format("{}{}", widths.empty() ? "" : ",", w);
      return fmt::format(" widths={}", widths);
    }
    std::string operator()(const UpdateAttrs &a) const {
      return fmt::format(" optimizer={} count={} state-slots={}", optimizerName(a.rule.optimizer), a.count,
                         a.stateSlots);
    }
  };
  std::string out = std::visit(Visitor{}, op.attrs);
  if (op.kind == OpKind::ResponseNorm || op.kind == OpKind::ResponseNormGrad) {
    const WindowAttrs &a = op.get<WindowAttrs>();
    out += fmt::format(" alpha={} beta={} offset={} avg-over-full-kernel={}", a.alpha, a.beta, a.offset,
                       a.averageOverFullKernel);
  }
  return out;
}

std::string names(const Plan &plan, const std::vector<int> &buffers) {
  std::string out;
  for (size_t i = 0; i < buffers.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", plan.buffers[static_cast<size_t>(buffers[i])].name);
  return out;
}

std::string_view phaseName(size_t index, const Plan &plan) {
  if (index < plan.stepBegin)
    return "zero";
  if (index < plan.forwardEnd)
    return "forward";
  if (index < plan.lossEnd)
    return "loss";
  if (index < plan.backwardEnd)
    return "backward";
  if (index < plan.updateEnd)
    return "update";
  return "average";
}

} // namespace

std::string printPlan(const Plan &plan) {
  std::string out = fmt::format("plan {} {} loss={} features={} outputs={}\n", plan.network,
                                plan.training ? "training" : "inference", lossName(plan.loss),
                                plan.featureCount, plan.outputNodes);
  out += fmt::format("memory arena={} floats/sample (without reuse {}) inputs={}x{} floats/sample fixed={} "
                     "values, offsets aligned to {} bytes\n",
                     plan.memory.arenaPerSample, plan.memory.unplannedPerSample, plan.inputSlots,
                     plan.memory.inputsPerSample, plan.memory.fixedElements, kAlignElements * 4);
  out += fmt::format("arenas parameters={} trained={}{}\n", plan.arenaElements, plan.trainedElements,
                     plan.gradientArena >= 0
                         ? fmt::format(" (gradients and {} state slot(s) alike)", plan.stateArenas.size())
                         : std::string());
  if (plan.stages > 1)
    out += fmt::format("pipeline stage {} of {}{}\n", plan.stage, plan.stages,
                       plan.activationSlots > 1 ? fmt::format(", {} activation slots", plan.activationSlots)
                                                : std::string());
  if (plan.parts > 1)
    out += fmt::format("split part {} of {}\n", plan.part, plan.parts);
  if (plan.replicaSync != ReplicaSync::None)
    out += fmt::format("replicas {}\n", replicaSyncName(plan.replicaSync));
  for (size_t i = 0; i < plan.buckets.size(); ++i) {
    const Bucket &b = plan.buckets[i];
    std::string names;
    for (int p : b.parameters)
      names += fmt::format("{}{}", names.empty() ? "" : ", ", plan.parameters[static_cast<size_t>(p)].name);
    out += fmt::format("bucket {} @{} count={} ready-after=#{} [{}]\n", i, b.offset, b.count, b.readyAfter,
                       names);
  }
  out += "step-scalars";
  for (size_t i = 0; i < std::size(kStepScalarNames); ++i)
    out += fmt::format(" {}={}", i, kStepScalarNames[i]);
  out += "\n";
  for (const Parameter &p : plan.parameters) {
    out += fmt::format("parameter {} {} count={} @{} init={}", p.name, shape(p.shape), p.count, p.offset,
                       p.givenValues.empty() ? "random" : "given");
    if (p.owners.size() > 1)
      out += fmt::format(" tied={}", p.owners.size());
    if (plan.training)
      out += p.trained ? fmt::format(" ready-after=#{}", p.readyAfter) : std::string(" untrained");
    out += "\n";
  }
  for (const Buffer &b : plan.buffers) {
    out += fmt::format("buffer {} {} {} ", b.name, bufferRoleName(b.role), shape(b.shape));
    if (b.batchScaled())
      out += fmt::format("{}/sample {}@{}", b.perSample, b.isInput() ? "inputs" : "arena", b.arenaOffset);
    else if (b.viewOf >= 0)
      out +=
          fmt::format("{} = {}@{}", b.fixed, plan.buffers[static_cast<size_t>(b.viewOf)].name, b.viewOffset);
    else if (b.role == BufferRole::Workspace)
      out += "sized by the backend";
    else
      out += fmt::format("{}{}", b.fixed, b.type == ElementType::I32 ? " i32" : "");
    out += "\n";
  }
  std::string_view phase;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op &op = plan.ops[i];
    if (phaseName(i, plan) != phase) {
      phase = phaseName(i, plan);
      out += fmt::format("{}:\n", phase);
    }
    out += fmt::format("  {}{}{} in=[{}] out=[{}]", opName(op.kind), attributes(op),
                       op.accumulate ? " accumulate" : "", names(plan, op.in), names(plan, op.out));
    out += "\n";
  }
  return out;
}

} // namespace netc::plan
