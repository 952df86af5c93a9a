// GemmCall.h -- the parameters of the cuBLAS calls behind the Plan's dense
// ops (a full bundle's forward pass and its two gradients), as a pure
// function of the op, the batch and where its buffers are. The Plan's
// buffers are row-major (sample-major values, destination-major weights,
// docs/architecture.md §The Plan); cuBLAS is column-major, so each op is written as the
// transposed product, which reads the same memory with no copy. gemmOnHost
// evaluates a call with cuBLAS's exact semantics (column-major, op(A) and
// op(B), C = alpha op(A) op(B) + beta C, C not read when beta is 0), which is
// how CI checks the parameters against the reference kernels without a GPU.
#pragma once

#include "codegen/Plan.h"

#include <cstdint>

namespace netc::runtime::cuda {

/// One column-major single-precision GEMM: C[m × n] = alpha op(A)[m × k] ·
/// op(B)[k × n] + beta C, op(X) = Xᵀ where trans is set; leading dimensions
/// as cuBLAS counts them.
struct GemmCall {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
  const float *a = nullptr, *b = nullptr;
  float *c = nullptr;
};

/// The GEMM of outputs [first, first + size) -- one block
/// (plan::forEachDenseBlock) -- of a dense, dense-grad-weights or
/// dense-grad-input op over `batch` samples, its buffers at buffers[buffer
/// index]; the input gradient's blocks after the first add to dx.
GemmCall denseGemm(const plan::Op &op, int64_t batch, void *const *buffers, int64_t first, int64_t size);

/// Evaluates `call` on the host exactly as cuBLAS defines it (in double, each
/// result rounded once).
void gemmOnHost(const GemmCall &call);

} // namespace netc::runtime::cuda
