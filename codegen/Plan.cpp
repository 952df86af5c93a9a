// Plan.cpp -- name tables for ops, buffer roles and losses, derived from
// Ops.def, and the Plan's small helpers.
#include "codegen/Codegen.h"
#include "support/ByteSize.h"
#include "support/NumberText.h"

#include <fmt/format.h>

namespace netc::plan {

namespace {
struct OpInfo {
  std::string_view name;
  OpRole role;
};
const OpInfo kOps[] = {
#define OP(Id, Name, Role, Backward) {Name, OpRole::Role},
#include "codegen/Ops.def"
#undef OP
};
} // namespace

std::string_view opName(OpKind kind) {
  return kOps[static_cast<int>(kind)].name;
}
OpRole opRole(OpKind kind) {
  return kOps[static_cast<int>(kind)].role;
}

std::string_view bufferRoleName(BufferRole role) {
  switch (role) {
  case BufferRole::Features: return "features";
  case BufferRole::Labels: return "labels";
  case BufferRole::Values: return "values";
  case BufferRole::Gradient: return "gradient";
  case BufferRole::Parameter: return "parameter";
  case BufferRole::ParameterGrad: return "parameter-gradient";
  case BufferRole::OptimizerState: return "optimizer-state";
  case BufferRole::ParameterArena: return "parameter-arena";
  case BufferRole::GradientArena: return "gradient-arena";
  case BufferRole::StateArena: return "state-arena";
  case BufferRole::Table: return "table";
  case BufferRole::Metrics: return "metrics";
  case BufferRole::StepScalars: return "step-scalars";
  case BufferRole::Workspace: return "workspace";
  }
  return "values";
}

std::string communicationName(const Plan &plan, const Op &op) {
  if (op.kind == OpKind::AllReduceWait)
    return "wait for the all-reduces";
  if (const auto *t = std::get_if<TransferAttrs>(&op.attrs)) {
    const bool send = op.kind == OpKind::Send;
    const Buffer &b = plan.buffers[static_cast<size_t>(send ? op.in[0] : op.out[0])];
    const std::string &of =
        t->gradient() && b.gradientOf >= 0 ? plan.buffers[static_cast<size_t>(b.gradientOf)].name : b.name;
    const std::string peer =
        t->peerStage != plan.stage
            ? fmt::format("stage {}{}", t->peerStage,
                          t->peerPart > 0 ? fmt::format(" (part {})", t->peerPart) : std::string())
            : fmt::format("part {}", t->peerPart);
    const char *to = send ? "to" : "from";
    switch (t->what) {
    case TransferKind::Values:
    case TransferKind::Gradient:
      return fmt::format("{} of {} '{}' {} {}", send ? "send" : "receive",
                         t->gradient() ? "the gradient of" : "the values of", of, to, peer);
    case TransferKind::Part: { // of buffer "L.pre.partP": part P of L.pre
      const size_t dot = of.rfind(".part");
      return fmt::format("{} of {} of '{}' {} {}", send ? "send" : "receive",
                         dot == std::string::npos ? std::string("a part") : "part " + of.substr(dot + 5),
                         of.substr(0, dot), to, peer);
    }
    case TransferKind::PartialGradient: // summed over the parts so far, or (from the last) all of them
      return fmt::format("{} of the gradient of '{}' summed over the parts {} {}", send ? "send" : "receive",
                         of, to, peer);
    }
  }
  const CommAttrs &a = op.get<CommAttrs>();
  const std::string values = groupDigits(a.count);
  if (a.bucket >= 0)
    return fmt::format("all-reduce of gradient bucket {} ({} values)", a.bucket, values);
  const BufferRole role = plan.buffers[static_cast<size_t>(op.in[0])].role;
  return fmt::format("all-reduce of the {} ({} values, averaging the replicas)",
                     role == BufferRole::ParameterArena ? "parameters" : "optimizer state", values);
}

std::string_view replicaSyncName(ReplicaSync sync) {
  switch (sync) {
  case ReplicaSync::None: return "none";
  case ReplicaSync::AllReduceGradients: return "all-reduce-gradients";
  case ReplicaSync::AverageReplicas: return "average-replicas";
  }
  return "none";
}

std::string_view lossName(LossKind kind) {
  switch (kind) {
  case LossKind::CrossEntropy: return "cross-entropy";
  case LossKind::BinaryCrossEntropy: return "binary-cross-entropy";
  case LossKind::SquaredError: return "squared-error";
  }
  return "squared-error";
}

int64_t denseBlockSize(int64_t outputs) {
  if (outputs <= kMaxDenseBlock)
    return 0;
  const int64_t blocks = (outputs + kMaxDenseBlock - 1) / kMaxDenseBlock;
  return (outputs + blocks - 1) / blocks;
}

int Plan::addBuffer(Buffer buffer) {
  buffers.push_back(std::move(buffer));
  return static_cast<int>(buffers.size()) - 1;
}

std::string_view optimizerName(OptimizerKind kind) {
  switch (kind) {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1)                                                  \
  case OptimizerKind::Id:                                                                                    \
    return Name;
#include "codegen/Optimizers.def"
#undef OPTIMIZER
  }
  return "sgd";
}

int stateSlots(const UpdateRule &rule) {
  [[maybe_unused]] const Hyperparameters &hp = rule.hyper;
  switch (rule.optimizer) {
#define OPTIMIZER(Id, Name, Slots, DefaultLr, Slot0, Slot1)                                                  \
  case OptimizerKind::Id:                                                                                    \
    return Slots;
#include "codegen/Optimizers.def"
#undef OPTIMIZER
  }
  return 0;
}

int64_t Plan::bytesPerBatch(int64_t batch) const {
  int64_t elements = elementsPerSample() * batch + memory.fixedElements;
  return elements * 4;
}

Status checkPlanFits(const Plan &plan, int64_t batch, uint64_t maxMemoryBytes) {
  const uint64_t limit = maxMemoryBytes ? maxMemoryBytes : machineMemoryBytes();
  const uint64_t fixedBytes = static_cast<uint64_t>(plan.memory.fixedElements) * 4;
  const uint64_t perSampleBytes = static_cast<uint64_t>(plan.elementsPerSample()) * 4;
  uint64_t batchBytes = 0, total = 0;
  const bool overflow = __builtin_mul_overflow(perSampleBytes, static_cast<uint64_t>(batch), &batchBytes) ||
                        __builtin_add_overflow(batchBytes, fixedBytes, &total);
  if (!overflow && total <= limit)
    return Status::success();
  const uint64_t room = limit > fixedBytes ? limit - fixedBytes : 0;
  const uint64_t fits = perSampleBytes ? room / perSampleBytes : 0;
  return fail(fmt::format(
      "at batch {} network '{}' needs {} ({} per sample and {} of parameters and tables); the limit is {} "
      "(--max-memory): {}",
      groupDigits(batch), plan.network, overflow ? "more bytes than can be counted" : byteSizeText(total),
      byteSizeText(perSampleBytes), byteSizeText(fixedBytes), byteSizeText(limit),
      fits ? fmt::format("the largest batch that fits is {}",
                         groupDigits(static_cast<int64_t>(std::min<uint64_t>(fits, INT64_MAX))))
           : std::string("not even one sample fits")));
}

} // namespace netc::plan
