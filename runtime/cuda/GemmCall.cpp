// GemmCall.cpp -- cuBLAS parameters of the dense ops and a host evaluator
// with cuBLAS's semantics (GemmCall.h).
#include "runtime/cuda/GemmCall.h"

#include <cassert>

namespace netc::runtime::cuda {

GemmCall denseGemm(const plan::Op &op, int64_t batch, void *const *buffers, int64_t first, int64_t size) {
  const auto &a = op.get<plan::DenseAttrs>();
  auto in = [&](size_t i) { return static_cast<const float *>(buffers[op.in[i]]); };
  GemmCall g;
  g.c = static_cast<float *>(buffers[op.out[0]]);
  g.beta = op.accumulate ? 1.0f : 0.0f;
  // Outputs [first, first + size): rows first.. of W (whose rows are
  // `inputs` long) and columns first.. of the sample-major y or dy (whose
  // rows are `outputs` long, the leading dimension).
  const float *w = in(1) + first * a.inputs;
  switch (op.kind) {
  case plan::OpKind::Dense:
    // y[B × O] = x[B × I] · Wᵀ, W [O × I]; column-major: yᵀ[O × B] = W · xᵀ,
    // where W's memory is Wᵀ [I × O] (transposed back) and x's is xᵀ [I × B].
    g.transA = true;
    g.m = size, g.n = batch, g.k = a.inputs;
    g.a = w, g.lda = a.inputs;
    g.b = in(0), g.ldb = a.inputs;
    g.c += first, g.ldc = a.outputs;
    break;
  case plan::OpKind::DenseGradWeights:
    // dW[O × I] = dyᵀ · x; column-major: dWᵀ[I × O] = xᵀ · dy, where x's
    // memory is xᵀ [I × B] and dy's is dyᵀ [O × B] (transposed back).
    g.transB = true;
    g.m = a.inputs, g.n = size, g.k = batch;
    g.a = in(1), g.lda = a.inputs;
    g.b = in(0) + first, g.ldb = a.outputs;
    g.c += first * a.inputs, g.ldc = a.inputs;
    break;
  case plan::OpKind::DenseGradInput:
    // dx[B × I] = dy · W; column-major: dxᵀ[I × B] = Wᵀ · dyᵀ, both as stored;
    // the blocks after the first add to dx.
    g.m = a.inputs, g.n = batch, g.k = size;
    g.a = w, g.lda = a.inputs;
    g.b = in(0) + first, g.ldb = a.outputs;
    g.ldc = a.inputs;
    if (first > 0)
      g.beta = 1.0f;
    break;
  default: assert(false && "denseGemm: not a dense op");
  }
  return g;
}

void gemmOnHost(const GemmCall &g) {
  // Element (r, c) of a column-major matrix with leading dimension ld is at c · ld + r.
  auto opA = [&](int64_t row, int64_t col) {
    return g.transA ? g.a[row * g.lda + col] : g.a[col * g.lda + row];
  };
  auto opB = [&](int64_t row, int64_t col) {
    return g.transB ? g.b[row * g.ldb + col] : g.b[col * g.ldb + row];
  };
  for (int64_t col = 0; col < g.n; ++col)
    for (int64_t row = 0; row < g.m; ++row) {
      double sum = 0;
      for (int64_t i = 0; i < g.k; ++i)
        sum += double(opA(row, i)) * double(opB(i, col));
      float &c = g.c[col * g.ldc + row];
      c = static_cast<float>(double(g.alpha) * sum + (g.beta != 0 ? double(g.beta) * double(c) : 0.0));
    }
}

} // namespace netc::runtime::cuda
