// FastKernels.cpp -- the fast CPU kernels for matrix-shaped ops: dense
// (OpenBLAS GEMM), sparse (CSR loops), every convolution kind (one grouped
// im2col gather + GEMM per kernel group, driven by the Plan's index tables),
// biases, input slices and optimizer updates. Loops run across the batch
// with OpenMP; each sample's values are computed in a fixed order, so
// results do not depend on the thread count (OpenBLAS's own blocking may).
#include "runtime/cpu/Kernels.h"

#include <cblas.h>

#include <cstring>

namespace netc::runtime::cpu::fast {

namespace {

void zero(float *p, int64_t n) {
  std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
}

/// rows[b·P + p][k] = x[b][gather[p][k]] (0 for a dummy cell): one
/// contiguous row of window values per (sample, position).
void gatherRows(const float *x, int64_t inputs, const int32_t *gather, float *rows, int64_t batch,
                int64_t positions, int64_t window, bool padded) {
  const int64_t cells = positions * window;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    const float *xb = x + b * inputs;
    float *row = rows + b * cells;
    if (padded)
      for (int64_t i = 0; i < cells; ++i)
        row[i] = gather[i] >= 0 ? xb[gather[i]] : 0.0f;
    else // no dummy cells: a plain indexed load the compiler can vectorise
      for (int64_t i = 0; i < cells; ++i)
        row[i] = xb[gather[i]];
  }
}

/// products[m][b·P + p] = dy[b][scatter[m·U + u][p]] for group u.
void gatherOutputGradient(const float *dy, const plan::ConvAttrs &a, const int32_t *scatter, int64_t u,
                          float *products, int64_t batch) {
  const int64_t bp = batch * a.positions;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t m = 0; m < a.maps; ++m)
    for (int64_t b = 0; b < batch; ++b) {
      const int32_t *s = scatter + (m * a.groups + u) * a.positions;
      const float *dyb = dy + b * a.outputs;
      float *dst = products + m * bp + b * a.positions;
      for (int64_t p = 0; p < a.positions; ++p)
        dst[p] = dyb[s[p]];
    }
}

} // namespace

void SliceInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::SliceAttrs>();
  const float *x = c.in(0);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b)
    std::memcpy(y + b * a.width, x + b * a.total + a.offset, static_cast<size_t>(a.width) * sizeof(float));
}

void Dense(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(c.batch), static_cast<int>(a.outputs),
              static_cast<int>(a.inputs), 1.0f, c.in(0), static_cast<int>(a.inputs), c.in(1),
              static_cast<int>(a.inputs), c.op.accumulate ? 1.0f : 0.0f, c.out(),
              static_cast<int>(a.outputs));
}

void DenseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(a.outputs),
              static_cast<int>(a.inputs), static_cast<int>(c.batch), 1.0f, c.in(0),
              static_cast<int>(a.outputs), c.in(1), static_cast<int>(a.inputs), c.op.accumulate ? 1.0f : 0.0f,
              c.out(), static_cast<int>(a.inputs));
}

void DenseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(c.batch),
              static_cast<int>(a.inputs), static_cast<int>(a.outputs), 1.0f, c.in(0),
              static_cast<int>(a.outputs), c.in(1), static_cast<int>(a.inputs), c.op.accumulate ? 1.0f : 0.0f,
              c.out(), static_cast<int>(a.inputs));
}

void Sparse(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *x = c.in(0), *w = c.in(1);
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  float *y = c.out();
  const bool accumulate = c.op.accumulate;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *xb = x + b * a.inputs;
    float *yb = y + b * a.outputs;
    for (int64_t d = 0; d < a.outputs; ++d) {
      float sum = 0;
      for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e)
        sum += w[e] * xb[column[e]];
      yb[d] = accumulate ? yb[d] + sum : sum;
    }
  }
}

void SparseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  float *dw = c.out();
  const bool accumulate = c.op.accumulate;
#pragma omp parallel for schedule(static)
  for (int64_t d = 0; d < a.outputs; ++d)
    for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e) {
      float sum = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        sum += dy[b * a.outputs + d] * x[b * a.inputs + column[e]];
      dw[e] = accumulate ? dw[e] + sum : sum;
    }
}

void SparseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *dy = c.in(0), *w = c.in(1);
  const int32_t *colStart = c.inTable(2), *row = c.inTable(3), *edge = c.inTable(4);
  float *dx = c.out();
  const bool accumulate = c.op.accumulate;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b) {
    const float *dyb = dy + b * a.outputs;
    float *dxb = dx + b * a.inputs;
    for (int64_t s = 0; s < a.inputs; ++s) {
      float sum = 0;
      for (int32_t t = colStart[s]; t < colStart[s + 1]; ++t)
        sum += w[edge[t]] * dyb[row[t]];
      dxb[s] = accumulate ? dxb[s] + sum : sum;
    }
  }
}

// Convolution kernels: per kernel group u, the window values form rows
// [B·P × K]; the group's kernels W_u [M × K] sit at row stride groups·(1+K)
// in the weight tensor (bias first, D4), so each product is one GEMM.

void Convolution(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const float *x = c.in(0), *w = c.in(1);
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  float *y = c.out(), *rows = c.scratch(0), *products = c.scratch(1);
  const int64_t row = 1 + a.window, lda = a.groups * row, bp = c.batch * a.positions;
  // The scatter maps the (map, group, position) triples one to one onto the
  // outputs, so without accumulation every output is assigned exactly once.
  const bool accumulate = c.op.accumulate;
  for (int64_t u = 0; u < a.groups; ++u) {
    gatherRows(x, a.inputs, gather + u * a.positions * a.window, rows, c.batch, a.positions, a.window,
               a.padded);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.maps), static_cast<int>(bp),
                static_cast<int>(a.window), 1.0f, w + u * row + 1, static_cast<int>(lda), rows,
                static_cast<int>(a.window), 0.0f, products, static_cast<int>(bp));
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < c.batch; ++b) {
      float *yb = y + b * a.outputs;
      for (int64_t m = 0; m < a.maps; ++m) {
        const float bias = w[(m * a.groups + u) * row];
        const int32_t *s = scatter + (m * a.groups + u) * a.positions;
        const float *prod = products + m * bp + b * a.positions;
        if (accumulate)
          for (int64_t p = 0; p < a.positions; ++p)
            yb[s[p]] += prod[p] + bias;
        else
          for (int64_t p = 0; p < a.positions; ++p)
            yb[s[p]] = prod[p] + bias;
      }
    }
  }
}

void ConvolutionGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  float *dw = c.out(), *rows = c.scratch(0), *products = c.scratch(1);
  const int64_t row = 1 + a.window, lda = a.groups * row, bp = c.batch * a.positions;
  for (int64_t u = 0; u < a.groups; ++u) {
    gatherRows(x, a.inputs, gather + u * a.positions * a.window, rows, c.batch, a.positions, a.window,
               a.padded);
    gatherOutputGradient(dy, a, scatter, u, products, c.batch);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(a.maps),
                static_cast<int>(a.window), static_cast<int>(bp), 1.0f, products, static_cast<int>(bp), rows,
                static_cast<int>(a.window), c.op.accumulate ? 1.0f : 0.0f, dw + u * row + 1,
                static_cast<int>(lda));
    for (int64_t m = 0; m < a.maps; ++m) {
      float sum = 0;
      const float *prod = products + m * bp;
      for (int64_t i = 0; i < bp; ++i)
        sum += prod[i];
      float &bias = dw[(m * a.groups + u) * row];
      bias = c.op.accumulate ? bias + sum : sum;
    }
  }
}

void ConvolutionGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConvAttrs>();
  const float *dy = c.in(0), *w = c.in(1);
  const int32_t *gather = c.inTable(2), *scatter = c.inTable(3);
  float *dx = c.out(), *rows = c.scratch(0), *products = c.scratch(1);
  const int64_t row = 1 + a.window, lda = a.groups * row, bp = c.batch * a.positions;
  if (!c.op.accumulate)
    zero(dx, c.batch * a.inputs);
  for (int64_t u = 0; u < a.groups; ++u) {
    gatherOutputGradient(dy, a, scatter, u, products, c.batch);
    // Row gradients [B·P × K] = productsᵀ [B·P × M] · W_u [M × K].
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(bp), static_cast<int>(a.window),
                static_cast<int>(a.maps), 1.0f, products, static_cast<int>(bp), w + u * row + 1,
                static_cast<int>(lda), 0.0f, rows, static_cast<int>(a.window));
    const int32_t *g = gather + u * a.positions * a.window;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < c.batch; ++b) {
      float *dxb = dx + b * a.inputs;
      for (int64_t p = 0; p < a.positions; ++p) {
        const int32_t *gp = g + p * a.window;
        const float *r = rows + (b * a.positions + p) * a.window;
        for (int64_t k = 0; k < a.window; ++k)
          if (gp[k] >= 0)
            dxb[gp[k]] += r[k];
      }
    }
  }
}

void AddBias(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const float *bias = c.in(0);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < a.outputs; ++i)
      y[b * a.outputs + i] += bias[i];
}

void BiasGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const float *dy = c.in(0);
  float *db = c.out();
  if (!c.op.accumulate)
    zero(db, a.outputs);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < a.outputs; ++i)
      db[i] += dy[b * a.outputs + i];
}

void Update(const KernelCall &c) {
  const auto &a = c.op.get<plan::UpdateAttrs>();
  float *state[optim::kMaxStateSlots];
  c.optimizerState(state);
  const UpdateSettings &u = *c.update;
  optim::update(u.optimizer, c.out(0), c.in(0), state, a.count, u.hyper, u.step, u.learningRate);
}

} // namespace netc::runtime::cpu::fast
