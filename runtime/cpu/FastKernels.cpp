// FastKernels.cpp -- the fast CPU kernels for matrix-shaped ops on the
// feature-major layout (Kernels.h) but the dense products (DenseKernels.cpp):
// sparse (CSR loops over lane vectors), every convolution kind
// (direct, register-tiled over maps and window cells, each table index
// selecting a whole row of batch columns, so no im2col copy), biases, input
// slices and optimizer updates. Threads split outputs, or batch columns where
// outputs are shared; every value is summed in a fixed order, so results do
// not depend on the thread count.
#include "runtime/cpu/BalancedTiles.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/LaneVector.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/UpdateLoops.h"

#include <omp.h>

#ifndef NETC_FAST_NAMESPACE
#error "compile with NETC_FAST_NAMESPACE=fast_<instruction set> (runtime/cpu/CMakeLists.txt)"
#endif

#include <algorithm>
#include <cstring>
#include <optional>

namespace netc::runtime::cpu::NETC_FAST_NAMESPACE {

namespace {

int64_t chunksOf(const KernelCall &c) {
  return (c.batch + kLaneChunk - 1) / kLaneChunk;
}

/// Real-column mask of chunk `chunk` (all lanes but in the batch's last, partial chunk).
LaneMask chunkMask(const KernelCall &c, int64_t chunk) {
  return firstLanes(std::min(kLaneChunk, c.batch - chunk * kLaneChunk));
}

/// At most this many maps are computed together (accumulators in registers).
constexpr int64_t kMapTile = 12;
/// Weight-gradient tiles: at most kGradMapTile maps × kCellTile window cells.
constexpr int64_t kGradMapTile = 5, kCellTile = 4;

/// Chunks of batch columns a convolution tile computes at once: with
/// AVX-512's 32 registers, two chunks of up to 12 maps' accumulators, so each
/// cell's weights are read once for both; one elsewhere (a LaneVector takes
/// two AVX2 registers, four SSE ones). Each output sums its cells in the
/// same order either way.
#if defined(__AVX512F__)
constexpr int kConvChunks = 2;
#else
constexpr int kConvChunks = 1;
#endif

/// Convolution outputs at one (group, position), `Chunks` chunks from
/// column b0: maps [m0, m0 + Maps) of y = bias + Σ_k W[k] · x[cell k], where
/// rows[k] is the row of cell k (null for a dummy cell), packed[k * Maps + j]
/// map m0 + j's weight of cell k (ConvTables::packWeights), bias[j] its bias
/// and out[j] its output row.
template <int Maps, int Chunks>
inline void convolveChunks(const float *const *rows, int64_t window, const float *packed, const float *bias,
                           float *const *out, int64_t b0, bool accumulate) {
  LaneVector acc[Chunks][Maps];
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
      acc[c][j] = splat(bias[j]);
  for (int64_t k = 0; k < window; ++k) {
    if (!rows[k])
      continue;
    LaneVector v[Chunks];
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c)
      v[c] = loadLanes(rows[k] + b0 + c * kLaneChunk);
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j) {
      const float w = packed[k * Maps + j];
#pragma GCC unroll 16
      for (int c = 0; c < Chunks; ++c)
        acc[c][j] += w * v[c];
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j) {
      float *at = out[j] + b0 + c * kLaneChunk;
      storeLanes(at, accumulate ? loadLanes(at) + acc[c][j] : acc[c][j]);
    }
}

/// convolveChunks over all `chunks` chunks of columns, kConvChunks at a time.
template <int Maps>
void convolveTile(const float *const *rows, int64_t window, const float *packed, const float *bias,
                  float *const *out, int64_t chunks, bool accumulate) {
  int64_t chunk = 0;
  for (; chunk + kConvChunks <= chunks; chunk += kConvChunks)
    convolveChunks<Maps, kConvChunks>(rows, window, packed, bias, out, chunk * kLaneChunk, accumulate);
  for (; chunk < chunks; ++chunk)
    convolveChunks<Maps, 1>(rows, window, packed, bias, out, chunk * kLaneChunk, accumulate);
}

using ConvolveTile = void (*)(const float *const *, int64_t, const float *, const float *, float *const *,
                              int64_t, bool);
template <int... Maps> constexpr ConvolveTile kConvolveTiles[] = {nullptr, &convolveTile<Maps>...};
constexpr const ConvolveTile *convolveTiles = kConvolveTiles<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>;

/// Input gradients from one (group, position), `Chunks` chunks from column
/// b0: for every real cell k, dx[cell k] += Σ_j W_j[k] · dy_j over maps
/// [m0, m0 + Maps), W_j[k] at packed[k * Maps + j] (ConvTables::packWeights).
template <int Maps, int Chunks>
inline void convolveBackChunks(float *const *rows, int64_t window, const float *packed,
                               const float *const *dy, int64_t b0) {
  LaneVector g[Chunks][Maps];
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
      g[c][j] = loadLanes(dy[j] + b0 + c * kLaneChunk);
  for (int64_t k = 0; k < window; ++k) {
    if (!rows[k])
      continue;
    LaneVector sum[Chunks];
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c)
      sum[c] = packed[k * Maps] * g[c][0];
#pragma GCC unroll 16
    for (int j = 1; j < Maps; ++j) {
      const float w = packed[k * Maps + j];
#pragma GCC unroll 16
      for (int c = 0; c < Chunks; ++c)
        sum[c] += w * g[c][j];
    }
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c) {
      float *at = rows[k] + b0 + c * kLaneChunk;
      storeLanes(at, loadLanes(at) + sum[c]);
    }
  }
}

/// convolveBackChunks over columns [b0, b1), kConvChunks chunks at a time.
template <int Maps>
void convolveBackTile(float *const *rows, int64_t window, const float *packed, const float *const *dy,
                      int64_t b0, int64_t b1) {
  for (; b0 + kConvChunks * kLaneChunk <= b1; b0 += kConvChunks * kLaneChunk)
    convolveBackChunks<Maps, kConvChunks>(rows, window, packed, dy, b0);
  for (; b0 < b1; b0 += kLaneChunk)
    convolveBackChunks<Maps, 1>(rows, window, packed, dy, b0);
}

using ConvolveBackTile = void (*)(float *const *, int64_t, const float *, const float *const *, int64_t,
                                  int64_t);
template <int... Maps>
constexpr ConvolveBackTile kConvolveBackTiles[] = {nullptr, &convolveBackTile<Maps>...};
constexpr const ConvolveBackTile *convolveBackTiles =
    kConvolveBackTiles<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>;

/// Table lookups of one convolution, in the feature-major layout.
struct ConvTables {
  const plan::ConvAttrs &a;
  const int32_t *gather, *scatter;
  int64_t lanes;
  /// The source node of cell k at (group u, position p), -1 for a dummy.
  int32_t cell(int64_t u, int64_t p, int64_t k) const { return gather[(u * a.positions + p) * a.window + k]; }
  /// The output node of map m at (group u, position p).
  int32_t output(int64_t m, int64_t u, int64_t p) const {
    return scatter[(m * a.groups + u) * a.positions + p];
  }
  /// Kernel (m, u): its weight row is kernel·window, its bias element kernel.
  int64_t kernelOf(int64_t m, int64_t u) const { return m * a.groups + u; }
  int64_t kernelRow(int64_t m, int64_t u) const { return kernelOf(m, u) * a.window; }
  /// rows[k] = the row of cell (u, p, k) in `values`, null for a dummy cell.
  template <class T> void cellRows(int64_t u, int64_t p, T *values, T **rows) const {
    for (int64_t k = 0; k < a.window; ++k) {
      const int32_t node = cell(u, p, k);
      rows[k] = node >= 0 ? values + node * lanes : nullptr;
    }
  }
  /// The weights re-laid for the map tiles: for each group u and tile of
  /// maps [first, first + size), at packed + (u · maps + first) · window, the
  /// tile's weights cell by cell (packed[k · size + j] = W(first + j, u)[k]),
  /// so a tile reads each cell's weights from one place. As many floats as
  /// the weights (workspaceBytes).
  void packWeights(const float *weights, float *packed) const {
    for (int64_t u = 0; u < a.groups; ++u)
      for (int64_t i = 0; i < tileCount(a.maps, kMapTile); ++i) {
        const Tile tile = tileOf(i, a.maps, kMapTile);
        float *to = packed + (u * a.maps + tile.first) * a.window;
        for (int64_t j = 0; j < tile.size; ++j) {
          const float *row = weights + kernelRow(tile.first + j, u);
          for (int64_t k = 0; k < a.window; ++k)
            to[k * tile.size + j] = row[k];
        }
      }
  }
  /// Calls run(size, packedTile, rows, first) for each balanced tile of maps
  /// [first, first + size) at (u, p): packedTile is the tile's weights in
  /// `packed` (packWeights), rows[j] the output row of its map j in `values`
  /// (the outputs, or their gradients).
  template <class T, class Run>
  void forEachMapTile(const float *packed, int64_t u, int64_t p, T *values, Run run) const {
    T *rows[kMapTile];
    for (int64_t i = 0; i < tileCount(a.maps, kMapTile); ++i) {
      const Tile tile = tileOf(i, a.maps, kMapTile);
      for (int64_t j = 0; j < tile.size; ++j)
        rows[j] = values + output(tile.first + j, u, p) * lanes;
      run(tile.size, packed + (u * a.maps + tile.first) * a.window, rows, tile.first);
    }
  }
  /// Where packWeights puts the weights in a kernel's workspace: after the
  /// cell rows of `threads` threads (workspaceBytes).
  float *packedWeights(void *workspace, int threads) const {
    return reinterpret_cast<float *>(static_cast<char *>(workspace) +
                                     size_t(threads) * size_t(a.window) * sizeof(void *));
  }
};

/// One weight-gradient tile: maps [m0, m0 + Maps) × cells [k0, k0 + Cells)
/// of group u, summed over the positions and the batch's columns. With
/// `Bias` (a fused kernel-bias gradient, KernelCall::then), the tile also
/// sums its maps' output gradients, in the order ConvolutionGradBias does
/// (positions, then chunks, from +0), into dbias.
struct WeightGradTile {
  struct Rows {
    const float *dy, *x;
    int64_t lanes, batch;
  };
  template <int Maps, int Cells, bool Masked, bool Bias>
  static void accumulate(const float *const *g, const float *const *v, int64_t b0, LaneMask mask,
                         LaneVector (&acc)[Maps][Cells], LaneVector (&bias)[Maps]) {
    LaneVector gv[Maps], xv[Cells];
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
      gv[j] = Masked ? masked(loadLanes(g[j] + b0), mask) : loadLanes(g[j] + b0);
    if constexpr (Bias) {
#pragma GCC unroll 16
      for (int j = 0; j < Maps; ++j)
        bias[j] += gv[j];
    }
#pragma GCC unroll 16
    for (int k = 0; k < Cells; ++k)
      xv[k] = !v[k] ? LaneVector{} : Masked ? masked(loadLanes(v[k] + b0), mask) : loadLanes(v[k] + b0);
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
#pragma GCC unroll 16
      for (int k = 0; k < Cells; ++k)
        acc[j][k] += gv[j] * xv[k];
  }
  template <int Maps, int Cells, bool Bias>
  static void run(const ConvTables &t, const Rows &r, int64_t u, int64_t m0, int64_t k0, float *dw,
                  bool accumulateInto, float *dbias, bool biasInto) {
    LaneVector acc[Maps][Cells] = {};
    LaneVector bias[Maps] = {};
    const int64_t full = r.batch / kLaneChunk, rest = r.batch % kLaneChunk;
    const LaneMask tail = firstLanes(rest);
    for (int64_t p = 0; p < t.a.positions; ++p) {
      const float *g[Maps], *v[Cells];
#pragma GCC unroll 16
      for (int j = 0; j < Maps; ++j)
        g[j] = r.dy + t.output(m0 + j, u, p) * r.lanes;
#pragma GCC unroll 16
      for (int k = 0; k < Cells; ++k) {
        const int32_t node = t.cell(u, p, k0 + k);
        v[k] = node >= 0 ? r.x + node * r.lanes : nullptr;
      }
      for (int64_t chunk = 0; chunk < full; ++chunk)
        accumulate<Maps, Cells, false, Bias>(g, v, chunk * kLaneChunk, tail, acc, bias);
      if (rest)
        accumulate<Maps, Cells, true, Bias>(g, v, full * kLaneChunk, tail, acc, bias);
    }
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j) {
      float *row = dw + t.kernelRow(m0 + j, u) + k0;
#pragma GCC unroll 16
      for (int k = 0; k < Cells; ++k)
        row[k] = accumulateInto ? row[k] + sumLanes(acc[j][k]) : sumLanes(acc[j][k]);
    }
    if constexpr (Bias) {
      for (int j = 0; j < Maps; ++j) {
        float &b = dbias[t.kernelOf(m0 + j, u)];
        b = biasInto ? b + sumLanes(bias[j]) : sumLanes(bias[j]);
      }
    }
  }
};

using WeightGradTileFn = void (*)(const ConvTables &, const WeightGradTile::Rows &, int64_t, int64_t, int64_t,
                                  float *, bool, float *, bool);
template <bool Bias, int Maps, int... Cells>
constexpr WeightGradTileFn kWeightGradRow[] = {nullptr, &WeightGradTile::run<Maps, Cells, Bias>...};
// weightGradTiles<Bias>[maps][cells], 1 <= maps <= kGradMapTile, 1 <= cells <= kCellTile.
template <bool Bias>
constexpr const WeightGradTileFn *weightGradTiles[] = {nullptr,
                                                       kWeightGradRow<Bias, 1, 1, 2, 3, 4>,
                                                       kWeightGradRow<Bias, 2, 1, 2, 3, 4>,
                                                       kWeightGradRow<Bias, 3, 1, 2, 3, 4>,
                                                       kWeightGradRow<Bias, 4, 1, 2, 3, 4>,
                                                       kWeightGradRow<Bias, 5, 1, 2, 3, 4>};

} // namespace

// Layout conversions, a chunk of samples at a time: whole 16 x 16 blocks
// through register transposes (transposeBlock), the features past the last
// whole block as strided chunks, which the compiler turns into a vector
// gather (or scatter) where the set has one.
void toFeatureMajor(const float *samples, int64_t count, int64_t n, float *rows, int64_t lanes,
                    int64_t first) {
  int64_t s0 = 0;
  for (; s0 + kLaneChunk <= count; s0 += kLaneChunk) {
    int64_t i0 = 0;
    for (; i0 + kLaneChunk <= n; i0 += kLaneChunk)
      transposeBlock(samples + s0 * n + i0, n, kLaneChunk, rows + i0 * lanes + first + s0, lanes);
    for (int64_t i = i0; i < n; ++i) {
      LaneVector v;
      for (int64_t j = 0; j < kLaneChunk; ++j)
        v[j] = samples[(s0 + j) * n + i];
      storeLanes(rows + i * lanes + first + s0, v);
    }
  }
  for (; s0 < count; ++s0)
    for (int64_t i = 0; i < n; ++i)
      rows[i * lanes + first + s0] = samples[s0 * n + i];
}

void fromFeatureMajor(const float *rows, int64_t lanes, int64_t first, int64_t count, int64_t n,
                      float *samples) {
  int64_t s0 = 0;
  for (; s0 + kLaneChunk <= count; s0 += kLaneChunk) {
    int64_t i0 = 0;
    for (; i0 + kLaneChunk <= n; i0 += kLaneChunk)
      transposeBlock(rows + i0 * lanes + first + s0, lanes, kLaneChunk, samples + s0 * n + i0, n);
    for (int64_t i = i0; i < n; ++i) {
      const LaneVector v = loadLanes(rows + i * lanes + first + s0);
      for (int64_t j = 0; j < kLaneChunk; ++j)
        samples[(s0 + j) * n + i] = v[j];
    }
  }
  for (; s0 < count; ++s0)
    for (int64_t i = 0; i < n; ++i)
      samples[s0 * n + i] = rows[i * lanes + first + s0];
}

void SliceInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::SliceAttrs>();
  const float *x = c.in(0);
  float *y = c.out();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.width; ++i)
    std::memcpy(y + i * c.lanes, x + (a.offset + i) * c.lanes, static_cast<size_t>(c.batch) * sizeof(float));
}

// Each part's rows after the previous part's (feature-major: a part is a
// run of whole rows).
void ConcatNodes(const KernelCall &c) {
  const auto &a = c.op.get<plan::ConcatAttrs>();
  float *y = c.out();
  for (size_t p = 0; p < a.widths.size(); ++p) {
    std::memcpy(y, c.in(p), static_cast<size_t>(a.widths[p] * c.lanes) * sizeof(float));
    y += a.widths[p] * c.lanes;
  }
}

void Sparse(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *x = c.in(0), *w = c.in(1);
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  float *y = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static)
  for (int64_t d = 0; d < a.outputs; ++d)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t b0 = chunk * kLaneChunk;
      LaneVector sum{};
      for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e)
        sum += w[e] * loadLanes(x + column[e] * c.lanes + b0);
      float *out = y + d * c.lanes + b0;
      storeLanes(out, c.op.accumulate ? loadLanes(out) + sum : sum);
    }
}

void SparseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *dy = c.in(0), *x = c.in(1);
  const int32_t *rowStart = c.inTable(2), *column = c.inTable(3);
  float *dw = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static)
  for (int64_t d = 0; d < a.outputs; ++d)
    for (int32_t e = rowStart[d]; e < rowStart[d + 1]; ++e) {
      LaneVector sum{};
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t b0 = chunk * kLaneChunk;
        const LaneMask mask = chunkMask(c, chunk);
        sum += masked(loadLanes(dy + d * c.lanes + b0), mask) *
               masked(loadLanes(x + column[e] * c.lanes + b0), mask);
      }
      dw[e] = c.op.accumulate ? dw[e] + sumLanes(sum) : sumLanes(sum);
    }
}

void SparseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::SparseAttrs>();
  const float *dy = c.in(0), *w = c.in(1);
  const int32_t *colStart = c.inTable(2), *row = c.inTable(3), *edge = c.inTable(4);
  float *dx = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < a.inputs; ++s)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t b0 = chunk * kLaneChunk;
      LaneVector sum{};
      for (int32_t t = colStart[s]; t < colStart[s + 1]; ++t)
        sum += w[edge[t]] * loadLanes(dy + row[t] * c.lanes + b0);
      float *out = dx + s * c.lanes + b0;
      storeLanes(out, c.op.accumulate ? loadLanes(out) + sum : sum);
    }
}

// Convolution: output(m, u, p) = bias(m, u) + Σ_k W(m, u)[k] · x[cell(u, p, k)],
// a chunk of batch columns at a time. The scatter maps the (map, group,
// position) triples one to one onto the outputs, so the (group, position)
// pairs write disjoint rows and can run on any thread.

void Convolution(const KernelCall &c) {
  const ConvTables t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3), c.lanes};
  const plan::ConvAttrs &a = t.a;
  const float *x = c.in(0), *w = c.in(1), *biases = c.in(4);
  float *y = c.out();
  const int64_t chunks = chunksOf(c);
  float *packed = t.packedWeights(c.workspace, c.threads);
  t.packWeights(w, packed);
  // A fused activation (KernelCall::then) runs on each output row once its
  // last map tile has written it: the rows of (u, p) are complete after
  // forEachMapTile, and no other (group, position) writes them.
  const std::optional<KernelCall> activation =
      c.then ? std::optional<KernelCall>(KernelCall{*c.then, c.batch, c.buffers, c.lanes, nullptr, 1})
             : std::nullopt;
#pragma omp parallel num_threads(c.threads)
  {
    // This thread's cell rows, in the workspace (workspaceBytes).
    const float **rows = static_cast<const float **>(c.workspace) + omp_get_thread_num() * a.window;
#pragma omp for schedule(static) collapse(2)
    for (int64_t u = 0; u < a.groups; ++u)
      for (int64_t p = 0; p < a.positions; ++p) {
        t.cellRows(u, p, x, rows);
        t.forEachMapTile(packed, u, p, y,
                         [&](int64_t maps, const float *kernel, float *const *out, int64_t first) {
                           float bias[kMapTile];
                           for (int64_t j = 0; j < maps; ++j)
                             bias[j] = biases[t.kernelOf(first + j, u)];
                           convolveTiles[maps](rows, a.window, kernel, bias, out, chunks, c.op.accumulate);
                         });
        if (activation)
          for (int64_t m = 0; m < a.maps; ++m)
            activateRows(*activation, t.output(m, u, p), 1);
      }
  }
}

// dW(m, u)[k] = Σ_p Σ_b dy(m, u, p) · x[cell(u, p, k)]: tiles of maps ×
// window cells accumulate in registers (weightGradTile), threads take whole
// tiles. A fused kernel-bias gradient (KernelCall::then) is summed by the
// first cell tile of each map tile, from the rows it reads anyway.
void ConvolutionGradWeights(const KernelCall &c) {
  const ConvTables t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3), c.lanes};
  const plan::ConvAttrs &a = t.a;
  const float *dy = c.in(0), *x = c.in(1);
  float *dw = c.out();
  float *dbias = c.then ? c.f(c.then->out[0]) : nullptr;
  const bool biasInto = c.then && c.then->accumulate;
  const int64_t mapTiles = tileCount(a.maps, kGradMapTile), cellTiles = tileCount(a.window, kCellTile);
  const WeightGradTile::Rows rows{dy, x, c.lanes, c.batch};
#pragma omp parallel for schedule(static) collapse(3)
  for (int64_t u = 0; u < a.groups; ++u)
    for (int64_t mt = 0; mt < mapTiles; ++mt)
      for (int64_t ct = 0; ct < cellTiles; ++ct) {
        const Tile maps = tileOf(mt, a.maps, kGradMapTile), cells = tileOf(ct, a.window, kCellTile);
        const bool bias = dbias && ct == 0;
        (bias ? weightGradTiles<true> : weightGradTiles<false>)[maps.size][cells.size](
            t, rows, u, maps.first, cells.first, dw, c.op.accumulate, dbias, biasInto);
      }
}

// The kernel biases' gradients: dBias(m, u) = Σ_p Σ_b dy(m, u, p).
void ConvolutionGradBias(const KernelCall &c) {
  const ConvTables t{c.op.get<plan::ConvAttrs>(), nullptr, c.inTable(1), c.lanes};
  const plan::ConvAttrs &a = t.a;
  const float *dy = c.in(0);
  float *dbias = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t m = 0; m < a.maps; ++m)
    for (int64_t u = 0; u < a.groups; ++u) {
      LaneVector sum{};
      for (int64_t p = 0; p < a.positions; ++p) {
        const float *g = dy + t.output(m, u, p) * c.lanes;
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          sum += masked(loadLanes(g + chunk * kLaneChunk), chunkMask(c, chunk));
      }
      float &bias = dbias[t.kernelOf(m, u)];
      bias = c.op.accumulate ? bias + sumLanes(sum) : sumLanes(sum);
    }
}

// dx[cell(u, p, k)] += Σ_m W(m, u)[k] · dy(m, u, p): several (group, position)
// pairs reach the same input, so threads split the batch columns and each
// input sums its contributions in one fixed order.
void ConvolutionGradInput(const KernelCall &c) {
  const ConvTables t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3), c.lanes};
  const plan::ConvAttrs &a = t.a;
  const float *dy = c.in(0), *w = c.in(1);
  float *dx = c.out();
  const int64_t chunks = chunksOf(c);
  float *packed = t.packedWeights(c.workspace, c.threads);
  t.packWeights(w, packed);
#pragma omp parallel num_threads(c.threads)
  {
    // Each thread owns a range of whole chunks of columns.
    const int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    const int64_t per = (chunks + threads - 1) / threads;
    const int64_t b0 = std::min(chunks, thread * per) * kLaneChunk,
                  b1 = std::min(chunks, (thread + 1) * per) * kLaneChunk;
    if (!c.op.accumulate)
      for (int64_t i = 0; i < a.inputs; ++i)
        std::memset(dx + i * c.lanes + b0, 0,
                    static_cast<size_t>(std::max<int64_t>(b1 - b0, 0)) * sizeof(float));
    float **rows = static_cast<float **>(c.workspace) + thread * a.window; // workspaceBytes
    for (int64_t u = 0; b0 < b1 && u < a.groups; ++u)
      for (int64_t p = 0; p < a.positions; ++p) {
        t.cellRows(u, p, dx, rows);
        t.forEachMapTile(packed, u, p, dy,
                         [&](int64_t maps, const float *kernel, const float *const *g, int64_t) {
                           convolveBackTiles[maps](rows, a.window, kernel, g, b0, b1);
                         });
      }
  }
}

void AddBias(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const float *bias = c.in(0);
  float *y = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.outputs; ++i)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      float *row = y + i * c.lanes + chunk * kLaneChunk;
      storeLanes(row, loadLanes(row) + bias[i]);
    }
}

void BiasGrad(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const float *dy = c.in(0);
  float *db = c.out();
  const int64_t chunks = chunksOf(c);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < a.outputs; ++i) {
    LaneVector sum{};
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      sum += masked(loadLanes(dy + i * c.lanes + chunk * kLaneChunk), chunkMask(c, chunk));
    db[i] = c.op.accumulate ? db[i] + sumLanes(sum) : sumLanes(sum);
  }
}

void ZeroGradients(const KernelCall &c) {
  std::memset(c.out(), 0, static_cast<size_t>(c.op.get<plan::UpdateAttrs>().count) * sizeof(float));
}

/// The update splits its arenas into ranges of whole 64-byte lines (of
/// floats), one per thread (kMinUpdatePerThread).
constexpr int64_t kUpdateLine = 16;

// The fused update over the trained range of the flat arenas, unless a loss
// of this logging interval was not finite (the trainer then reports where).
// The update is element-wise, so each thread's range gives the same result;
// its loops (UpdateLoops.h) vectorise for this file's instruction set.
void Update(const KernelCall &c) {
  const auto &a = c.op.get<plan::UpdateAttrs>();
  if (c.in(2)[static_cast<int>(plan::Metric::FirstBadStep)] != 0)
    return;
  float *state[plan::kMaxStateSlots];
  c.optimizerState(state);
  const int64_t lines = (a.count + kUpdateLine - 1) / kUpdateLine;
  const int threads = static_cast<int>(std::clamp<int64_t>(a.count / kMinUpdatePerThread, 1, c.threads));
#pragma omp parallel num_threads(threads)
  {
    const int64_t thread = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t first = std::min(a.count, lines * thread / team * kUpdateLine);
    const int64_t last = std::min(a.count, lines * (thread + 1) / team * kUpdateLine);
    float *range[plan::kMaxStateSlots];
    for (size_t s = 0; s < plan::kMaxStateSlots; ++s)
      range[s] = state[s] ? state[s] + first : nullptr;
    optim::updateLoops(a.rule, c.out(0) + first, c.in(0) + first, range, last - first, c.in(1));
  }
}

} // namespace netc::runtime::cpu::NETC_FAST_NAMESPACE
