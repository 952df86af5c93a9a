// DenseKernels.cpp -- netc's own matrix products for the dense ops on the
// feature-major layout (Kernels.h), compiled once per instruction set like
// the other fast kernels, so they run the processor's widest vectors whatever
// BLAS the distribution ships (OpenBLAS 0.3.21 runs its generic SSE kernels
// on CPUs it does not know; BlasDenseKernels.cpp keeps it as a choice).
//
// One register-tiled kernel, the broadcast tile, computes all three:
// C[m × n] (+)= A[m × k] · B[k × n] with B's and C's rows runs of columns,
// Rows × Vectors lane vectors of C held in registers while k advances, each
// step one broadcast of A per row and one load of B per vector.
// - Dense: A the weights (row by row), B the inputs' batch columns.
// - The input gradient: A the transposed weights (the rows at one k are
//   consecutive values), B the output gradient's columns.
// - The weight gradient: A the output gradient (k runs over the batch), B
//   the inputs transposed, a panel of kGradPanel inputs at a time, into each
//   thread's workspace (transposeBlock), so its columns are inputs.
// Every output value is one running sum over k in ascending order, computed
// by one thread: results do not depend on the thread count or the tiles,
// and the input gradient's sum runs on through a layer's blocks
// (plan::DenseAttrs::block), so the parts of a split layer (--split)
// continue exactly the sum one process computes.
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/LaneVector.h"

#include <omp.h>

#ifndef NETC_FAST_NAMESPACE
#error "compile with NETC_FAST_NAMESPACE=fast_<instruction set> (runtime/cpu/CMakeLists.txt)"
#endif

#include <algorithm>
#include <array>
#include <utility>

namespace netc::runtime::cpu::NETC_FAST_NAMESPACE {

namespace {

// Register tiles per instruction set: accumulators plus the values loaded
// per step fit the vector registers (32 zmm with AVX-512, 16 ymm with AVX2,
// 16 xmm with SSE2; a lane vector is 1, 2 or 4 of them).
#if defined(__AVX512F__)
constexpr int kBroadcastRows = 12, kBroadcastVectors = 2;
#elif defined(__AVX2__)
constexpr int kBroadcastRows = 6, kBroadcastVectors = 1;
#else
constexpr int kBroadcastRows = 3, kBroadcastVectors = 1;
#endif

/// Steps of k per pass over a column block: the B rows a pass reads
/// (kKBlock rows of kBroadcastVectors lane vectors) stay in the first-level
/// cache while the thread's row tiles reuse them.
constexpr int64_t kKBlock = 192;
/// How A is stored: A(r, k) = a[r · lda + k] (RowMajor: dense's weights,
/// the output gradient) or a[k · lda + r] (the input gradient's transposed
/// weights).
enum class ALayout { RowMajor, ColumnMajor };

/// C's first `width` columns from p (a vector's worth when width is 16).
inline LaneVector loadColumns(const float *p, int width) {
  if (width == kLaneChunk)
    return loadLanes(p);
  LaneVector v{};
  for (int j = 0; j < width; ++j)
    v[j] = p[j];
  return v;
}
inline void storeColumns(float *p, LaneVector v, int width) {
  if (width == kLaneChunk)
    return storeLanes(p, v);
  for (int j = 0; j < width; ++j)
    p[j] = v[j];
}

/// C (+)= A · B over `Rows` rows and `Vectors` lane vectors of columns, k in
/// [k0, k1): B(k, ·) = b + k · ldb, C(r, ·) = c + r · ldc, of whose last
/// vector only `lastWidth` columns exist. `load`: continue the sums already
/// in C; else start from 0.
template <ALayout Layout, int Rows, int Vectors>
void broadcastTile(const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                   int64_t k0, int64_t k1, int lastWidth, bool load) {
  // GCC unrolls these loops completely only when asked; rolled, the
  // accumulators live on the stack.
  LaneVector acc[Rows][Vectors];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      acc[r][v] = load ? loadColumns(c + r * ldc + v * kLaneChunk, v + 1 == Vectors ? lastWidth : kLaneChunk)
                       : LaneVector{};
  // A(r, k) = a[r · rowStride + k · kStride].
  const int64_t rowStride = Layout == ALayout::RowMajor ? lda : 1;
  const int64_t kStride = Layout == ALayout::RowMajor ? 1 : lda;
  a += k0 * kStride;
  b += k0 * ldb;
  for (int64_t k = k0; k < k1; ++k, b += ldb, a += kStride) {
    LaneVector column[Vectors];
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      column[v] = loadLanes(b + v * kLaneChunk);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const float weight = a[r * rowStride];
#pragma GCC unroll 16
      for (int v = 0; v < Vectors; ++v)
        acc[r][v] += weight * column[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      storeColumns(c + r * ldc + v * kLaneChunk, acc[r][v], v + 1 == Vectors ? lastWidth : kLaneChunk);
}

using BroadcastTileFn = void (*)(const float *, int64_t, const float *, int64_t, float *, int64_t, int64_t,
                                 int64_t, int, bool);

template <ALayout Layout, int Vectors, int... Rows>
constexpr std::array<BroadcastTileFn, sizeof...(Rows)> broadcastRow(std::integer_sequence<int, Rows...>) {
  return {&broadcastTile<Layout, Rows + 1, Vectors>...};
}
template <ALayout Layout, int... Vectors>
constexpr auto broadcastTable(std::integer_sequence<int, Vectors...>) {
  return std::array<std::array<BroadcastTileFn, kBroadcastRows>, sizeof...(Vectors)>{
      broadcastRow<Layout, Vectors + 1>(std::make_integer_sequence<int, kBroadcastRows>{})...};
}
/// broadcastTiles<Layout>[vectors - 1][rows - 1].
template <ALayout Layout>
constexpr auto broadcastTiles = broadcastTable<Layout>(std::make_integer_sequence<int, kBroadcastVectors>{});

/// One product C[m × n] (+)= A[m × k] · B[k × n], n = 16 · vectors, of
/// whose last vector only `lastWidth` columns exist in C.
struct BroadcastProduct {
  const float *a = nullptr;
  int64_t lda = 0;
  const float *b = nullptr;
  int64_t ldb = 0;
  float *c = nullptr;
  int64_t ldc = 0;
  int64_t m = 0, vectors = 0, k = 0;
  bool load = false;
  int lastWidth = kLaneChunk;
};

/// The units of `p`: (column block of kBroadcastVectors vectors, row tile
/// of kBroadcastRows rows), column blocks outer.
int64_t unitsOf(const BroadcastProduct &p) {
  return (p.m + kBroadcastRows - 1) / kBroadcastRows *
         ((p.vectors + kBroadcastVectors - 1) / kBroadcastVectors);
}

/// Units [first, last) of `p` on the calling thread, kKBlock steps of k at
/// a time over all of them (so a column block's B rows are reused by its
/// row tiles while in cache).
template <ALayout Layout> void runUnits(const BroadcastProduct &p, int64_t first, int64_t last) {
  const int64_t rowTiles = (p.m + kBroadcastRows - 1) / kBroadcastRows;
  const int64_t rowStep = Layout == ALayout::RowMajor ? p.lda : 1;
  for (int64_t k0 = 0; k0 < p.k; k0 += kKBlock) {
    const int64_t k1 = std::min(p.k, k0 + kKBlock);
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t v0 = (unit / rowTiles) * kBroadcastVectors, r0 = (unit % rowTiles) * kBroadcastRows;
      const int vectors = static_cast<int>(std::min<int64_t>(kBroadcastVectors, p.vectors - v0));
      const int rows = static_cast<int>(std::min<int64_t>(kBroadcastRows, p.m - r0));
      const int lastWidth = v0 + vectors == p.vectors ? p.lastWidth : kLaneChunk;
      broadcastTiles<Layout>[vectors - 1][rows - 1](p.a + r0 * rowStep, p.lda, p.b + v0 * kLaneChunk, p.ldb,
                                                    p.c + r0 * p.ldc + v0 * kLaneChunk, p.ldc, k0, k1,
                                                    lastWidth, p.load || k0 > 0);
    }
  }
}

/// `p` on up to `threads` threads, each a range of whole units.
template <ALayout Layout> void runBroadcastProduct(const BroadcastProduct &p, int threads) {
  const int64_t units = p.m > 0 && p.vectors > 0 ? unitsOf(p) : 0;
  if (units == 0)
    return;
  const int team = static_cast<int>(std::clamp<int64_t>(units, 1, threads));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    const int64_t thread = omp_get_thread_num(), count = omp_get_num_threads();
    runUnits<Layout>(p, units * thread / count, units * (thread + 1) / count);
  }
}

} // namespace

// Dense: Y [outputs × lanes] (+)= W · X, block by block.
void Dense(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t vectors = (c.batch + kLaneChunk - 1) / kLaneChunk;
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    runBroadcastProduct<ALayout::RowMajor>({c.in(1) + first * a.inputs, a.inputs, c.in(0), c.lanes,
                                            c.out() + first * c.lanes, c.lanes, size, vectors, a.inputs,
                                            c.op.accumulate},
                                           c.threads);
  });
}

// dX [inputs × lanes] (+)= Wᵀ · dY: the sums run through the blocks of
// outputs in order (the first starts from 0 unless the op accumulates).
void DenseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t vectors = (c.batch + kLaneChunk - 1) / kLaneChunk;
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    runBroadcastProduct<ALayout::ColumnMajor>({c.in(1) + first * a.inputs, a.inputs,
                                               c.in(0) + first * c.lanes, c.lanes, c.out(), c.lanes, a.inputs,
                                               vectors, size, c.op.accumulate || first > 0},
                                              c.threads);
  });
}

// dW [outputs × inputs] (+)= dY · Xᵀ over the batch's real columns: each
// thread takes whole panels of kDenseGradPanel inputs, transposes the
// panel's rows of X into its workspace (batch rows of the panel's inputs)
// and runs the panel's product there (every output row is independent, so
// the blocks of plan::DenseAttrs::block need no pass of their own).
void DenseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t chunks = (c.batch + kLaneChunk - 1) / kLaneChunk;
  const int64_t panels = (a.inputs + kDenseGradPanel - 1) / kDenseGradPanel;
  const int team = static_cast<int>(std::clamp<int64_t>(panels, 1, c.threads));
  float *workspace = static_cast<float *>(c.workspace);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    const int64_t thread = omp_get_thread_num(), count = omp_get_num_threads();
    float *t = workspace + thread * c.lanes * kDenseGradPanel; // workspaceBytes
    for (int64_t panel = panels * thread / count; panel < panels * (thread + 1) / count; ++panel) {
      const int64_t i0 = panel * kDenseGradPanel, width = std::min(kDenseGradPanel, a.inputs - i0);
      const int64_t vectors = (width + kLaneChunk - 1) / kLaneChunk;
      for (int64_t v = 0; v < vectors; ++v)
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          transposeBlock(c.in(1) + (i0 + v * kLaneChunk) * c.lanes + chunk * kLaneChunk, c.lanes,
                         static_cast<int>(std::min<int64_t>(kLaneChunk, width - v * kLaneChunk)),
                         t + chunk * kLaneChunk * kDenseGradPanel + v * kLaneChunk, kDenseGradPanel);
      const BroadcastProduct p{c.in(0),
                               c.lanes,
                               t,
                               kDenseGradPanel,
                               c.out() + i0,
                               a.inputs,
                               a.outputs,
                               vectors,
                               c.batch,
                               c.op.accumulate,
                               static_cast<int>(width - (vectors - 1) * kLaneChunk)};
      runUnits<ALayout::RowMajor>(p, 0, unitsOf(p));
    }
  }
}

// The multiply-add peak probe (Kernels.h): the broadcast tile's accumulators,
// each a chain of `steps` dependent multiply-adds, all independent of one
// another, as the tile keeps them in registers.
float fmaProbe(int64_t steps, float scale) {
  constexpr int kChains = kBroadcastRows * kBroadcastVectors;
  LaneVector acc[kChains];
#pragma GCC unroll 32
  for (int j = 0; j < kChains; ++j)
    acc[j] = splat(float(j) * 1e-3f);
  const LaneVector addend = splat(scale * 1e-7f);
  for (int64_t step = 0; step < steps; ++step)
#pragma GCC unroll 32
    for (int j = 0; j < kChains; ++j)
      acc[j] = acc[j] * scale + addend;
  float sum = 0;
  for (int j = 0; j < kChains; ++j)
    sum += sumLanes(acc[j]);
  return sum;
}

int fmaProbeChains() {
  return kBroadcastRows * kBroadcastVectors;
}

} // namespace netc::runtime::cpu::NETC_FAST_NAMESPACE
