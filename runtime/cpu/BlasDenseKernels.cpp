// BlasDenseKernels.cpp -- the dense products through OpenBLAS's cblas_sgemm
// on the feature-major layout (Kernels.h): the dense kernel choice
// (DenseKernelChoice.h) runs them instead of netc's own (DenseKernels.cpp)
// where it picks OpenBLAS: on processors netc has no vector kernels for, or
// when asked (--dense-kernel openblas). OpenBLAS's blocking may depend on
// the thread count, so these results may too.
#include "runtime/cpu/Kernels.h"

#include <cblas.h>

namespace netc::runtime::cpu::blas {

// Dense: with X [inputs × lanes] and Y [outputs × lanes], Y = W · X, one
// product per block of outputs (plan::DenseAttrs::block).
void Dense(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(size), static_cast<int>(c.batch),
                static_cast<int>(a.inputs), 1.0f, c.in(1) + first * a.inputs, static_cast<int>(a.inputs),
                c.in(0), static_cast<int>(c.lanes), c.op.accumulate ? 1.0f : 0.0f, c.out() + first * c.lanes,
                static_cast<int>(c.lanes));
  });
}

// dW [outputs × inputs] = dY · Xᵀ over the batch columns, block by block.
void DenseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(size), static_cast<int>(a.inputs),
                static_cast<int>(c.batch), 1.0f, c.in(0) + first * c.lanes, static_cast<int>(c.lanes),
                c.in(1), static_cast<int>(c.lanes), c.op.accumulate ? 1.0f : 0.0f, c.out() + first * a.inputs,
                static_cast<int>(a.inputs));
  });
}

// dX [inputs × lanes] = Wᵀ · dY: each block of outputs' product added to
// dX in turn (the first overwrites it unless the op accumulates).
void DenseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(a.inputs),
                static_cast<int>(c.batch), static_cast<int>(size), 1.0f, c.in(1) + first * a.inputs,
                static_cast<int>(a.inputs), c.in(0) + first * c.lanes, static_cast<int>(c.lanes),
                c.op.accumulate || first > 0 ? 1.0f : 0.0f, c.out(), static_cast<int>(c.lanes));
  });
}

} // namespace netc::runtime::cpu::blas
