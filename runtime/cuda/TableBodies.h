// TableBodies.h -- the CUDA backend's kernels for the connectivity the
// libraries cannot express, as host/device bodies (ElementBodies.h says how
// they run): convolutions in the Plan's general table form (gather and
// scatter tables: locally connected kernels, asymmetric pads and offsets,
// and any form cuDNN is not given) and `where` bundles as sparse matrices
// (CSR by destination, and its transpose for the input gradient). Every
// body computes one output value completely, gathering what it needs;
// inputs shared by several outputs are reached through transposed tables
// (OpTables.h), so no two threads add into one value and results do not
// depend on thread order.
#pragma once

#include "runtime/cuda/ElementBodies.h"
#include "runtime/cuda/WindowBodies.h"

#include <cstdint>

namespace netc::runtime::cuda {

/// A convolution's tables and sizes (plan::ConvAttrs): kernel (m, u) has
/// weights at row m · groups + u; gather[(u · positions + p) · window + k]
/// is the source of cell k at position p of group u (-1: a dummy cell);
/// scatter[(m · groups + u) · positions + p] is the destination node.
struct ConvTables {
  const int32_t *gather, *scatter;
  int64_t inputs, outputs, groups, maps, positions, window;
  NETC_HOST_DEVICE int64_t kernels() const { return maps * groups; }
};

/// convolution, element i of [batch × kernels × positions]: the output at
/// scatter of kernel (m, u) at position p, bias plus the window's dot product.
struct ConvolutionBody {
  const float *x, *weights, *bias;
  float *y;
  ConvTables t;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t perSample = t.kernels() * t.positions;
    const int64_t b = i / perSample, kernel = (i % perSample) / t.positions, p = i % t.positions;
    const int64_t u = kernel % t.groups;
    const float *w = weights + kernel * t.window, *xb = x + b * t.inputs;
    const int32_t *g = t.gather + (u * t.positions + p) * t.window;
    float sum = bias[kernel];
    for (int64_t k = 0; k < t.window; ++k)
      if (g[k] >= 0)
        sum += w[k] * xb[g[k]];
    storeValue(y[b * t.outputs + t.scatter[kernel * t.positions + p]], sum, accumulate);
  }
};

/// convolution-grad-weights, element e of [kernels × window] in its chunk
/// (BatchChunks): Σ over the chunk's samples and the positions of dy at the
/// output times x at the cell.
struct ConvolutionGradWeightsBody {
  const float *dy, *x;
  float *out;
  ConvTables t;
  BatchChunks chunks; // over [kernels × window]
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t e = chunks.element(i);
    const int64_t kernel = e / t.window, k = e % t.window, u = kernel % t.groups;
    float sum = 0;
    for (int64_t b = chunks.first(i); b < chunks.last(i); ++b)
      for (int64_t p = 0; p < t.positions; ++p) {
        const int32_t s = t.gather[(u * t.positions + p) * t.window + k];
        if (s >= 0)
          sum += dy[b * t.outputs + t.scatter[kernel * t.positions + p]] * x[b * t.inputs + s];
      }
    storeValue(out[i], sum, accumulate);
  }
};

/// convolution-grad-bias, first pass, element i of [batch × blocks ×
/// kernels]: Σ dy over block i's positions of kernel k in sample b, so the
/// sum over the batch (BiasGradBody over batch × blocks "samples" of
/// `kernels` nodes) has many threads even where the kernels are few.
struct ConvolutionBiasPartialBody {
  const float *dy;
  const int32_t *scatter;
  float *partial;
  int64_t outputs, positions, kernels, blocks, perBlock;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t k = i % kernels, block = (i / kernels) % blocks, b = i / (kernels * blocks);
    const int64_t first = block * perBlock, end = first + perBlock < positions ? first + perBlock : positions;
    float sum = 0;
    for (int64_t p = first; p < end; ++p)
      sum += dy[b * outputs + scatter[k * positions + p]];
    partial[i] = sum;
  }
};

/// convolution-grad-input, element i of [batch × inputs]: over the gather
/// cells holding this input (the gather table by source) and every map,
/// Σ dy at the output times the cell's weight.
struct ConvolutionGradInputBody {
  const float *dy, *weights;
  float *dx;
  ConvTables t;
  SourceLists sources;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / t.inputs, s = i % t.inputs;
    const float *dyb = dy + b * t.outputs;
    float sum = 0;
    for (int32_t e = sources.start[s]; e < sources.start[s + 1]; ++e) {
      const int64_t cell = sources.entries[e], k = cell % t.window, position = cell / t.window;
      const int64_t u = position / t.positions, p = position % t.positions;
      for (int64_t m = 0; m < t.maps; ++m) {
        const int64_t kernel = m * t.groups + u;
        sum += dyb[t.scatter[kernel * t.positions + p]] * weights[kernel * t.window + k];
      }
    }
    storeValue(dx[i], sum, accumulate);
  }
};

/// A sparse bundle (plan::SparseAttrs): CSR by destination (rowStart,
/// column), edge weights in CSR order; the transpose is CSR by source
/// (colStart, row, and edge: the CSR position of each entry).
struct SparseTables {
  const int32_t *rowStart, *column;
  int64_t inputs, outputs;
};

/// sparse, element i of [batch × outputs]: Σ over the destination's edges.
struct SparseBody {
  const float *x, *weights;
  float *y;
  SparseTables t;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / t.outputs, d = i % t.outputs;
    float sum = 0;
    for (int32_t e = t.rowStart[d]; e < t.rowStart[d + 1]; ++e)
      sum += weights[e] * x[b * t.inputs + t.column[e]];
    storeValue(y[i], sum, accumulate);
  }
};

/// sparse-grad-weights, edge e of its chunk: Σ over the chunk's samples of
/// dy at the edge's destination times x at its source.
struct SparseGradWeightsBody {
  const float *dy, *x;
  const int32_t *destination; // per edge (OpTables.h: the CSR rows expanded)
  float *out;
  SparseTables t;
  BatchChunks chunks; // over the edges
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t e = chunks.element(i), d = destination[e], s = t.column[e];
    float sum = 0;
    for (int64_t b = chunks.first(i); b < chunks.last(i); ++b)
      sum += dy[b * t.outputs + d] * x[b * t.inputs + s];
    storeValue(out[i], sum, accumulate);
  }
};

/// sparse-grad-input, element i of [batch × inputs]: over the edges leaving
/// the source (the transpose), Σ weight times dy at the destination.
struct SparseGradInputBody {
  const float *dy, *weights;
  const int32_t *colStart, *row, *edge;
  float *dx;
  int64_t inputs, outputs;
  bool accumulate;
  NETC_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / inputs, s = i % inputs;
    float sum = 0;
    for (int32_t e = colStart[s]; e < colStart[s + 1]; ++e)
      sum += weights[edge[e]] * dy[b * outputs + row[e]];
    storeValue(dx[i], sum, accumulate);
  }
};

} // namespace netc::runtime::cuda
