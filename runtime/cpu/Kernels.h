// Kernels.h -- the CPU implementations of every Plan op (codegen/Ops.def):
// a fast one (OpenBLAS for GEMM-shaped work, specialised loops for the rest,
// OpenMP across the batch) and a naive reference one computing in double,
// which the numeric tests compare the fast kernels against. Both tables are
// derived from Ops.def, so every op has both.
#pragma once

#include "codegen/Plan.h"
#include "runtime/core/Backend.h"

#include <cstdint>

namespace netc::runtime::cpu {

/// One op to run: its description, the batch size, and the buffers' memory
/// (indexed by buffer id).
struct KernelCall {
  const plan::Op &op;
  int64_t batch = 0;
  void *const *buffers = nullptr;
  const UpdateSettings *update = nullptr;

  float *f(int buffer) const { return static_cast<float *>(buffers[buffer]); }
  const int32_t *table(int buffer) const { return static_cast<const int32_t *>(buffers[buffer]); }
  const float *in(size_t i) const { return f(op.in[i]); }
  const int32_t *inTable(size_t i) const { return table(op.in[i]); }
  float *out(size_t i = 0) const { return f(op.out[i]); }
  float *scratch(size_t i) const { return f(op.scratch[i]); }
  /// An update op's optimizer state arrays (out[1..]), null where absent.
  void optimizerState(float *(&state)[optim::kMaxStateSlots]) const {
    for (size_t s = 0; s < optim::kMaxStateSlots; ++s)
      state[s] = s + 1 < op.out.size() ? out(s + 1) : nullptr;
  }
};

using Kernel = void (*)(const KernelCall &);

namespace fast {
#define OP(Id, Name, Role, Backward) void Id(const KernelCall &call);
#include "codegen/Ops.def"
#undef OP
} // namespace fast

namespace reference {
#define OP(Id, Name, Role, Backward) void Id(const KernelCall &call);
#include "codegen/Ops.def"
#undef OP
} // namespace reference

/// The kernel of `kind` (fast or reference).
Kernel kernelFor(plan::OpKind kind, bool referenceKernels);

/// The number of threads the fast loops use (OpenMP) and OpenBLAS uses.
void setThreadCount(int threads);
int threadCount();

} // namespace netc::runtime::cpu
