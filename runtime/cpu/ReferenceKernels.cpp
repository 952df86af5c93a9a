// ReferenceKernels.cpp -- the naive reference implementation of every op
// (docs/architecture.md §The CPU backend): straightforward loops over the definitions, in double,
// with no BLAS, no im2col and no threads; double sums that need an array use
// the backend's workspace (workspaceBytes). The numeric tests compare the fast
// kernels against these, and the finite-difference tests check the backward
// ops of this table against its forward ops.
#include "runtime/cpu/TemplateKernels.h"

#include "runtime/optim/Optimizer.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace netc::runtime::cpu::reference {

namespace {
void store(float &out, double value, bool accumulate) {
  out = static_cast<float>(accumulate ? double(out) + value : value);
}
} // namespace

void SliceInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::SliceAttrs>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < a.width; ++i)
      c.out()[b * a.width + i] = c.in(0)[b * a.total + a.offset + i];
}

void ConcatNodes(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConcatAttrs>();
  int64_t total = 0;
  for (int64_t w : a.widths)
    total += w;
  for (int64_t b = 0; b < c.batch; ++b) {
    int64_t offset = 0;
    for (size_t p = 0; p < a.widths.size(); ++p) {
      for (int64_t i = 0; i < a.widths[p]; ++i)
        c.out()[b * total + offset + i] = c.in(p)[b * a.widths[p] + i];
      offset += a.widths[p];
    }
  }
}

namespace {
float exactly(float x) {
  return x;
}

// The dense ops with each product's factors through Factor: exactly (FP32
// as stored) or roundToBf16 (the bf16 reference).
template <float (*Factor)(float)> void denseOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t o = 0; o < a.outputs; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < a.inputs; ++i)
        sum += double(Factor(c.in(0)[b * a.inputs + i])) * Factor(c.in(1)[o * a.inputs + i]);
      store(c.out()[b * a.outputs + o], sum, c.op.accumulate);
    }
}

template <float (*Factor)(float)> void denseGradWeightsOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  for (int64_t o = 0; o < a.outputs; ++o)
    for (int64_t i = 0; i < a.inputs; ++i) {
      double sum = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        sum += double(Factor(c.in(0)[b * a.outputs + o])) * Factor(c.in(1)[b * a.inputs + i]);
      store(c.out()[o * a.inputs + i], sum, c.op.accumulate);
    }
}

// Each block of outputs' sum (in double) is added to dx in turn, rounded
// once per block: the blocks' order and rounding of the fast kernel.
template <float (*Factor)(float)> void denseGradInputOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < a.inputs; ++i)
      plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
        double sum = 0;
        for (int64_t o = first; o < first + size; ++o)
          sum += double(Factor(c.in(0)[b * a.outputs + o])) * Factor(c.in(1)[o * a.inputs + i]);
        store(c.out()[b * a.inputs + i], sum, c.op.accumulate || first > 0);
      });
}
} // namespace

void Dense(const KernelCall &c) {
  denseOf<exactly>(c);
}
void DenseGradWeights(const KernelCall &c) {
  denseGradWeightsOf<exactly>(c);
}
void DenseGradInput(const KernelCall &c) {
  denseGradInputOf<exactly>(c);
}
void Bf16Dense(const KernelCall &c) {
  denseOf<roundToBf16>(c);
}
void Bf16DenseGradWeights(const KernelCall &c) {
  denseGradWeightsOf<roundToBf16>(c);
}
void Bf16DenseGradInput(const KernelCall &c) {
  denseGradInputOf<roundToBf16>(c);
}

void Sparse(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t d = 0; d < a.outputs; ++d) {
      double sum = 0;
      for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e)
        sum += double(c.in(1)[e]) * c.in(0)[b * a.inputs + column[e]];
      store(c.out()[b * a.outputs + d], sum, c.op.accumulate);
    }
}

void SparseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  for (int64_t d = 0; d < a.outputs; ++d)
    for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e) {
      double sum = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        sum += double(c.in(0)[b * a.outputs + d]) * c.in(1)[b * a.inputs + column[e]];
      store(c.out()[e], sum, c.op.accumulate);
    }
}

void SparseGradInput(const KernelCall &c) {
  // dx[s] = Σ over the edges e leaving s of w[e] · dy[destination of e].
  const auto &a = c.op.get<plan::SparseAttrs>();
  const int32_t *colStart = c.inTable(2), *row = c.inTable(3), *edge = c.inTable(4);
  double *sum = static_cast<double *>(c.workspace); // a.inputs
  for (int64_t b = 0; b < c.batch; ++b) {
    std::fill(sum, sum + a.inputs, 0.0);
    for (int64_t s = 0; s < a.inputs; ++s)
      for (int32_t t = colStart[s]; t < colStart[s + 1]; ++t)
        sum[static_cast<size_t>(s)] += double(c.in(1)[edge[t]]) * c.in(0)[b * a.outputs + row[t]];
    for (int64_t s = 0; s < a.inputs; ++s)
      store(c.out()[b * a.inputs + s], sum[static_cast<size_t>(s)], c.op.accumulate);
  }
}

namespace {
// The convolution products with each product's factors through Factor
// (exactly, or roundToBf16 for the bf16 reference); the biases stay FP32.
// Convolution: output scatter[m·U+u][p] = bias(m,u) + Σ_k W(m,u)[k] · x[gather[u][p][k]].
template <float (*Factor)(float)> void convolutionOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const float *w = c.in(1), *bias = c.in(4);
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t m = 0; m < a.maps; ++m)
      for (int64_t u = 0; u < a.groups; ++u)
        for (int64_t p = 0; p < a.positions; ++p) {
          const float *kernel = w + (m * a.groups + u) * a.window;
          double sum = bias[m * a.groups + u];
          for (int64_t k = 0; k < a.window; ++k) {
            int32_t s = gather[(u * a.positions + p) * a.window + k];
            if (s >= 0)
              sum += double(Factor(kernel[k])) * Factor(c.in(0)[b * a.inputs + s]);
          }
          store(c.out()[b * a.outputs + scatter[(m * a.groups + u) * a.positions + p]], sum, c.op.accumulate);
        }
}

template <float (*Factor)(float)> void convolutionGradWeightsOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  double *sum = static_cast<double *>(c.workspace); // a.window
  for (int64_t m = 0; m < a.maps; ++m)
    for (int64_t u = 0; u < a.groups; ++u) {
      std::fill(sum, sum + a.window, 0.0);
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t p = 0; p < a.positions; ++p) {
          const double g = Factor(c.in(0)[b * a.outputs + scatter[(m * a.groups + u) * a.positions + p]]);
          for (int64_t k = 0; k < a.window; ++k) {
            int32_t s = gather[(u * a.positions + p) * a.window + k];
            if (s >= 0)
              sum[k] += g * Factor(c.in(1)[b * a.inputs + s]);
          }
        }
      for (int64_t k = 0; k < a.window; ++k)
        store(c.out()[(m * a.groups + u) * a.window + k], sum[k], c.op.accumulate);
    }
}

template <float (*Factor)(float)> void convolutionGradInputOf(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const float *w = c.in(1);
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  double *sum = static_cast<double *>(c.workspace); // a.inputs
  for (int64_t b = 0; b < c.batch; ++b) {
    std::fill(sum, sum + a.inputs, 0.0);
    for (int64_t m = 0; m < a.maps; ++m)
      for (int64_t u = 0; u < a.groups; ++u)
        for (int64_t p = 0; p < a.positions; ++p) {
          const double g = Factor(c.in(0)[b * a.outputs + scatter[(m * a.groups + u) * a.positions + p]]);
          for (int64_t k = 0; k < a.window; ++k) {
            int32_t s = gather[(u * a.positions + p) * a.window + k];
            if (s >= 0)
              sum[s] += g * Factor(w[(m * a.groups + u) * a.window + k]);
          }
        }
    for (int64_t s = 0; s < a.inputs; ++s)
      store(c.out()[b * a.inputs + s], sum[s], c.op.accumulate);
  }
}
} // namespace

void Convolution(const KernelCall &c) {
  convolutionOf<exactly>(c);
}
void ConvolutionGradWeights(const KernelCall &c) {
  convolutionGradWeightsOf<exactly>(c);
}
void ConvolutionGradInput(const KernelCall &c) {
  convolutionGradInputOf<exactly>(c);
}
void Bf16Convolution(const KernelCall &c) {
  convolutionOf<roundToBf16>(c);
}
void Bf16ConvolutionGradWeights(const KernelCall &c) {
  convolutionGradWeightsOf<roundToBf16>(c);
}
void Bf16ConvolutionGradInput(const KernelCall &c) {
  convolutionGradInputOf<roundToBf16>(c);
}

void ConvolutionGradBias(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const int32_t *scatter = c.inTable(1);
  for (int64_t m = 0; m < a.maps; ++m)
    for (int64_t u = 0; u < a.groups; ++u) {
      double sum = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t p = 0; p < a.positions; ++p)
          sum += c.in(0)[b * a.outputs + scatter[(m * a.groups + u) * a.positions + p]];
      store(c.out()[m * a.groups + u], sum, c.op.accumulate);
    }
}

void AddBias(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < a.outputs; ++i)
      store(c.out()[b * a.outputs + i], c.in(0)[i], true);
}

void BiasGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  for (int64_t i = 0; i < a.outputs; ++i) {
    double sum = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      sum += c.in(0)[b * a.outputs + i];
    store(c.out()[i], sum, c.op.accumulate);
  }
}

void ZeroGradients(const KernelCall &c) {
  std::fill(c.out(), c.out() + c.op.get<plan::UpdateAttrs>().count, 0.0f);
}

void Update(const KernelCall &c) {
  const auto &a = c.op.get<plan::UpdateAttrs>();
  if (c.in(2)[static_cast<int>(plan::Metric::FirstBadStep)] != 0)
    return;
  float *state[plan::kMaxStateSlots];
  c.optimizerState(state);
  optim::referenceUpdate(a.rule, c.out(0), c.in(0), state, a.count, c.in(1));
}

NETC_TEMPLATE_KERNELS(double)

} // namespace netc::runtime::cpu::reference

namespace netc::runtime::cpu {

float roundToBf16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7F800000u) == 0) // zero or denormal: a zero of x's sign
    return std::bit_cast<float>(bits & 0x80000000u);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: kept, made quiet
    return std::bit_cast<float>((bits | 0x00400000u) & 0xFFFF0000u);
  bits += 0x7FFFu + ((bits >> 16) & 1u); // to nearest, ties to even (may carry into infinity)
  return std::bit_cast<float>(bits & 0xFFFF0000u);
}

} // namespace netc::runtime::cpu
