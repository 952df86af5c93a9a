// Plan.cpp -- name tables for ops, buffer roles and losses, derived from
// Ops.def, and the Plan's small helpers.
#include "codegen/Plan.h"

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
  case BufferRole::Table: return "table";
  case BufferRole::Metrics: return "metrics";
  }
  return "values";
}

std::string_view lossName(LossKind kind) {
  switch (kind) {
  case LossKind::CrossEntropy: return "cross-entropy";
  case LossKind::BinaryCrossEntropy: return "binary-cross-entropy";
  case LossKind::SquaredError: return "squared-error";
  }
  return "squared-error";
}

int Plan::addBuffer(Buffer buffer) {
  buffers.push_back(std::move(buffer));
  return static_cast<int>(buffers.size()) - 1;
}

int64_t Plan::bytesPerBatch(int64_t batch) const {
  int64_t elements = memory.arenaPerSample * batch + memory.fixedElements;
  return elements * 4;
}

} // namespace netc::plan
