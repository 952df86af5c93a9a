// Bf16DenseKernels.cpp -- the dense products of `--precision bf16`: the
// same three ops as DenseKernels.cpp (dense, input gradient, weight
// gradient) on the feature-major layout, with both factors of every product
// rounded to bfloat16 (round to nearest even, as VCVTNEPS2BF16 does) and the
// sums kept in FP32 by AVX512-BF16's VDPBF16PS, which multiplies two pairs
// of bf16 values per FP32 lane and adds both products to the lane's sum. Compiled
// only for AVX-512 with AVX512-BF16 (runtime/cpu/CMakeLists.txt); the
// backend runs it only where the processor has those instructions
// (bf16Refusal, DenseKernelChoice.h).
//
// Each call first packs its two factors into the pair layouts VDPBF16PS
// reads, in the op's workspace (bf16WorkspaceBytes):
// - A, the factor broadcast per row: a 32-bit word per row and pair of k
//   (bf16 of k = 2p in the low half, k = 2p + 1 in the high half);
// - B, the factor loaded per column vector: a word per pair of k and column.
// An odd k's last pair has a zero high half. Then one register tile, like
// DenseKernels.cpp's broadcast tile but a pair of k per step, computes
// C (+)= A · B. Every output value is one running sum over the pairs in
// ascending order (within a pair VDPBF16PS adds the odd k's product first,
// each addition rounded), on one thread: the bits do not depend on the
// thread count or the tiles.
#include "runtime/cpu/BalancedTiles.h"
#include "runtime/cpu/Bf16Pairs.h"
#include "runtime/cpu/LaneVector.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace netc::runtime::cpu::bf16 {

namespace {

// The register tile: 12 rows × 2 vectors of FP32 sums, 2 loaded vectors of
// B pairs and a broadcast of A: 27 of the 32 zmm registers.
constexpr int kTileRows = 12, kTileVectors = 2;
/// Pairs of k per pass over a column block (the B words a pass reads stay
/// in the first-level cache while the block's row tiles reuse them).
constexpr int64_t kPairBlock = 96;

int64_t roundUpToChunk(int64_t n) {
  return (n + kLaneChunk - 1) / kLaneChunk * kLaneChunk;
}

/// Rows `rows` of `n` floats (row stride ld) as pair words along the row:
/// out[r · outLd + p] for p < pairsOf(n).
void packRowPairs(const float *x, int64_t ld, int64_t n, int64_t r, uint32_t *out, int64_t outLd) {
  const float *row = x + r * ld;
  uint32_t *to = out + r * outLd;
  const int64_t pairs = pairsOf(n);
  for (int64_t p = 0; p < pairs; p += 16) {
    const __m512i words = adjacentPairs(row + 2 * p, n - 2 * p);
    _mm512_mask_storeu_epi32(to + p, firstOf16(pairs - p), words);
  }
}

/// Pair p of k (rows 2p and 2p + 1 of x, row stride ld, k rows in all) over
/// `columns` columns (a multiple of 16): out[p · outLd + j].
void packColumnPairs(const float *x, int64_t ld, int64_t k, int64_t p, int64_t columns, uint32_t *out,
                     int64_t outLd) {
  const float *even = x + 2 * p * ld, *odd = even + ld;
  const bool hasOdd = 2 * p + 1 < k;
  for (int64_t j = 0; j < columns; j += kLaneChunk)
    storeWords(
        out + p * outLd + j,
        interleavedPairs(_mm512_loadu_ps(even + j), hasOdd ? _mm512_loadu_ps(odd + j) : _mm512_setzero_ps()));
}

/// How A's words lie: A(r, p) = a[r · ld + p] (RowPairs) or a[p · ld + r]
/// (ColumnPairs).
enum class PairLayout { RowPairs, ColumnPairs };

/// C (+)= A · B over `Rows` rows and `Vectors` vectors of columns, pairs
/// [p0, p1): B(p, ·) = b + p · ldb, C(r, ·) = c + r · ldc, of whose last
/// vector only `lastWidth` columns exist. `load`: continue the sums in C.
template <PairLayout Layout, int Rows, int Vectors>
void pairTile(const uint32_t *a, int64_t lda, const uint32_t *b, int64_t ldb, float *c, int64_t ldc,
              int64_t p0, int64_t p1, int lastWidth, bool load) {
  __m512 acc[Rows][Vectors];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      acc[r][v] = load ? _mm512_maskz_loadu_ps(firstOf16(v + 1 == Vectors ? lastWidth : 16),
                                               c + r * ldc + v * kLaneChunk)
                       : _mm512_setzero_ps();
  const int64_t rowStride = Layout == PairLayout::RowPairs ? lda : 1;
  const int64_t pairStride = Layout == PairLayout::RowPairs ? 1 : lda;
  a += p0 * pairStride;
  b += p0 * ldb;
  for (int64_t p = p0; p < p1; ++p, a += pairStride, b += ldb) {
    __m512bh column[Vectors];
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      column[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + v * kLaneChunk));
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const __m512bh weight =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * rowStride])));
#pragma GCC unroll 16
      for (int v = 0; v < Vectors; ++v)
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], weight, column[v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      _mm512_mask_storeu_ps(c + r * ldc + v * kLaneChunk, firstOf16(v + 1 == Vectors ? lastWidth : 16),
                            acc[r][v]);
}

using PairTileFn = void (*)(const uint32_t *, int64_t, const uint32_t *, int64_t, float *, int64_t, int64_t,
                            int64_t, int, bool);
template <PairLayout Layout, int Vectors, int... Rows>
constexpr std::array<PairTileFn, sizeof...(Rows)> pairTileRow(std::integer_sequence<int, Rows...>) {
  return {&pairTile<Layout, Rows + 1, Vectors>...};
}
template <PairLayout Layout, int... Vectors>
constexpr auto pairTileTable(std::integer_sequence<int, Vectors...>) {
  return std::array<std::array<PairTileFn, kTileRows>, sizeof...(Vectors)>{
      pairTileRow<Layout, Vectors + 1>(std::make_integer_sequence<int, kTileRows>{})...};
}
/// pairTiles<Layout>[vectors - 1][rows - 1].
template <PairLayout Layout>
constexpr auto pairTiles = pairTileTable<Layout>(std::make_integer_sequence<int, kTileVectors>{});

/// One product C[m × 16·vectors] (+)= A[m × pairs] · B[pairs × 16·vectors].
struct PairProduct {
  const uint32_t *a = nullptr;
  int64_t lda = 0;
  const uint32_t *b = nullptr;
  int64_t ldb = 0;
  float *c = nullptr;
  int64_t ldc = 0;
  int64_t m = 0, vectors = 0, pairs = 0;
  bool load = false;
  int lastWidth = kLaneChunk;
};

int64_t unitsOf(const PairProduct &p) {
  return (p.m + kTileRows - 1) / kTileRows * ((p.vectors + kTileVectors - 1) / kTileVectors);
}

/// Units [first, last) of `p` (column blocks outer, row tiles inner),
/// kPairBlock pairs at a time over all of them.
template <PairLayout Layout> void runUnits(const PairProduct &p, int64_t first, int64_t last) {
  const int64_t rowTiles = (p.m + kTileRows - 1) / kTileRows;
  const int64_t rowStep = Layout == PairLayout::RowPairs ? p.lda : 1;
  for (int64_t p0 = 0; p0 < p.pairs; p0 += kPairBlock) {
    const int64_t p1 = std::min(p.pairs, p0 + kPairBlock);
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t v0 = (unit / rowTiles) * kTileVectors, r0 = (unit % rowTiles) * kTileRows;
      const int vectors = static_cast<int>(std::min<int64_t>(kTileVectors, p.vectors - v0));
      const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - r0));
      const int lastWidth = v0 + vectors == p.vectors ? p.lastWidth : kLaneChunk;
      pairTiles<Layout>[vectors - 1][rows - 1](p.a + r0 * rowStep, p.lda, p.b + v0 * kLaneChunk, p.ldb,
                                               p.c + r0 * p.ldc + v0 * kLaneChunk, p.ldc, p0, p1, lastWidth,
                                               p.load || p0 > 0);
    }
  }
}

/// Packs (pack(thread, count): this thread's share, all threads' shares
/// done before any product starts), then runs `p`'s units split over the
/// team.
template <PairLayout Layout, class Pack> void packAndRun(const PairProduct &p, int threads, Pack pack) {
  const int64_t units = p.m > 0 && p.vectors > 0 ? unitsOf(p) : 0;
  const int team = static_cast<int>(std::clamp<int64_t>(units, 1, threads));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    const int64_t thread = omp_get_thread_num(), count = omp_get_num_threads();
    pack(thread, count);
#pragma omp barrier
    runUnits<Layout>(p, units * thread / count, units * (thread + 1) / count);
  }
}

} // namespace

size_t workspaceBytes(const plan::Op &op, int64_t lanes, int threads) {
  if (lanes <= 0)
    return 0;
  const auto words = [](int64_t n) { return size_t(n) * sizeof(uint32_t); };
  switch (op.kind) {
  case plan::OpKind::Dense: { // W's row pairs, then X's column pairs
    const auto &a = op.get<plan::DenseAttrs>();
    return words(a.outputs * pairsOf(a.inputs) + pairsOf(a.inputs) * lanes);
  }
  case plan::OpKind::DenseGradInput: { // one block's Wᵀ pairs, then its dY pairs
    const auto &a = op.get<plan::DenseAttrs>();
    int64_t block = 0;
    plan::forEachDenseBlock(a, [&](int64_t, int64_t size) { block = std::max(block, size); });
    return words(pairsOf(block) * (roundUpToChunk(a.inputs) + lanes));
  }
  case plan::OpKind::DenseGradWeights: { // dY's row pairs over the batch, then Xᵀ's
    const auto &a = op.get<plan::DenseAttrs>();
    return words(pairsOf(lanes) * a.outputs + roundUpToChunk(pairsOf(lanes)) * roundUpToChunk(a.inputs));
  }
  default: return convolutionWorkspaceBytes(op, lanes, threads);
  }
}

// Y [outputs × lanes] (+)= W · X, block by block: A = W's row pairs, B = X's
// column pairs (both packed whole, once per call).
void Dense(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t pairs = pairsOf(a.inputs), vectors = (c.batch + kLaneChunk - 1) / kLaneChunk;
  uint32_t *weights = static_cast<uint32_t *>(c.workspace), *inputs = weights + a.outputs * pairs;
  bool packed = false;
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    const PairProduct p{weights + first * pairs,
                        pairs,
                        inputs,
                        c.lanes,
                        c.out() + first * c.lanes,
                        c.lanes,
                        size,
                        vectors,
                        pairs,
                        c.op.accumulate};
    packAndRun<PairLayout::RowPairs>(p, c.threads, [&](int64_t thread, int64_t count) {
      if (packed)
        return;
      const auto [r0, r1] = shareOf(a.outputs, thread, count);
      for (int64_t r = r0; r < r1; ++r)
        packRowPairs(c.in(1), a.inputs, a.inputs, r, weights, pairs);
      const auto [q0, q1] = shareOf(pairs, thread, count);
      for (int64_t q = q0; q < q1; ++q)
        packColumnPairs(c.in(0), c.lanes, a.inputs, q, vectors * kLaneChunk, inputs, c.lanes);
    });
    packed = true;
  });
}

// dX [inputs × lanes] (+)= Wᵀ · dY, the sums running on through the blocks
// of outputs in order: per block, A = the block's rows of W as pairs of
// outputs (column pairs: A(i, p) at p · ld + i), B = dY's rows as pairs.
void DenseGradInput(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t vectors = (c.batch + kLaneChunk - 1) / kLaneChunk, ld = roundUpToChunk(a.inputs);
  plan::forEachDenseBlock(a, [&](int64_t first, int64_t size) {
    const int64_t pairs = pairsOf(size);
    uint32_t *weights = static_cast<uint32_t *>(c.workspace), *gradient = weights + pairs * ld;
    const float *w = c.in(1) + first * a.inputs, *dy = c.in(0) + first * c.lanes;
    const PairProduct p{weights, ld,       gradient, c.lanes, c.out(),
                        c.lanes, a.inputs, vectors,  pairs,   c.op.accumulate || first > 0};
    packAndRun<PairLayout::ColumnPairs>(p, c.threads, [&](int64_t thread, int64_t count) {
      const auto [q0, q1] = shareOf(pairs, thread, count);
      for (int64_t q = q0; q < q1; ++q) {
        // W's rows have a.inputs values: the last vector is read masked.
        const float *even = w + 2 * q * a.inputs, *odd = even + a.inputs;
        const bool hasOdd = 2 * q + 1 < size;
        for (int64_t i = 0; i < ld; i += kLaneChunk) {
          const __mmask16 mask = firstOf16(a.inputs - i);
          storeWords(weights + q * ld + i,
                     interleavedPairs(_mm512_maskz_loadu_ps(mask, even + i),
                                      hasOdd ? _mm512_maskz_loadu_ps(mask, odd + i) : _mm512_setzero_ps()));
        }
        packColumnPairs(dy, c.lanes, size, q, vectors * kLaneChunk, gradient, c.lanes);
      }
    });
  });
}

// dW [outputs × inputs] (+)= dY · Xᵀ over the batch's real columns, k the
// batch: A = dY's rows as pairs of samples, B = Xᵀ as pairs of samples per
// input (X's rows as pairs, transposed 16 × 16 words at a time). Columns
// from c.batch on count as 0.
void DenseGradWeights(const KernelCall &c) {
  const auto &a = c.op.get<plan::DenseAttrs>();
  const int64_t pairs = pairsOf(c.batch), ld = roundUpToChunk(a.inputs);
  const int64_t vectors = ld / kLaneChunk, pairChunks = (pairs + 15) / 16;
  uint32_t *gradient = static_cast<uint32_t *>(c.workspace),
           *inputs = gradient + a.outputs * pairsOf(c.lanes);
  const PairProduct p{gradient,
                      pairsOf(c.lanes),
                      inputs,
                      ld,
                      c.out(),
                      a.inputs,
                      a.outputs,
                      vectors,
                      pairs,
                      c.op.accumulate,
                      static_cast<int>(a.inputs - (vectors - 1) * kLaneChunk)};
  packAndRun<PairLayout::RowPairs>(p, c.threads, [&](int64_t thread, int64_t count) {
    const auto [r0, r1] = shareOf(a.outputs, thread, count);
    for (int64_t r = r0; r < r1; ++r)
      packRowPairs(c.in(0), c.lanes, c.batch, r, gradient, pairsOf(c.lanes));
    const auto [v0, v1] = shareOf(vectors, thread, count);
    alignas(64) uint32_t block[16 * 16];
    for (int64_t v = v0; v < v1; ++v)
      for (int64_t chunk = 0; chunk < pairChunks; ++chunk) {
        // block[i][j]: input v·16 + i, pair chunk·16 + j; then transposed
        // into B's rows chunk·16 + j, columns v·16 + i.
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t input = v * kLaneChunk + i;
          storeWords(block + i * 16, input < a.inputs ? adjacentPairs(c.in(1) + input * c.lanes + chunk * 32,
                                                                      c.batch - chunk * 32)
                                                      : _mm512_setzero_si512());
        }
        // transposeBlock moves 32-bit lanes whole, so the words pass as
        // floats; B has whole chunks of 16 rows (workspaceBytes), those past
        // the batch's pairs zero.
        transposeBlock(reinterpret_cast<const float *>(block), 16, 16,
                       reinterpret_cast<float *>(inputs + chunk * 16 * ld + v * kLaneChunk), ld);
      }
  });
}

// The bf16 products' peak probe (Kernels.h): the register tile's
// accumulators, each a chain of `steps` dependent VDPBF16PS (16 lanes × a
// pair of products each) on constant factors of 2^-20, all independent of
// one another, as the tile keeps them in registers.
float productProbe(int64_t steps) {
  constexpr int kChains = kTileRows * kTileVectors;
  __m512 acc[kChains];
#pragma GCC unroll 32
  for (int j = 0; j < kChains; ++j)
    acc[j] = _mm512_set1_ps(float(j) * 1e-3f);
  // Two bf16 values 0x3580 (2^-20) per word: each step adds 2^-39 per lane.
  const __m512bh factor = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x35803580));
  for (int64_t step = 0; step < steps; ++step)
#pragma GCC unroll 32
    for (int j = 0; j < kChains; ++j)
      acc[j] = _mm512_dpbf16_ps(acc[j], factor, factor);
  __m512 total = _mm512_setzero_ps();
  for (int j = 0; j < kChains; ++j)
    total = _mm512_add_ps(total, acc[j]);
  return sumOf16(total);
}

int productProbeChains() {
  return kTileRows * kTileVectors;
}

} // namespace netc::runtime::cpu::bf16
