// Bf16ConvolutionKernels.cpp -- the convolutions of `--precision bf16`:
// the same three products as FastKernels.cpp's (output, input gradient,
// weight gradient), on the feature-major layout, with both factors of every
// product rounded to bfloat16 (as VCVTNEPS2BF16 rounds) and the sums kept
// in FP32 by AVX512-BF16's VDPBF16PS (two products per FP32 lane). The
// kernel biases and their gradients stay FP32. Compiled only for AVX-512
// with AVX512-BF16 (runtime/cpu/CMakeLists.txt).
//
// VDPBF16PS sums over pairs, so each op pairs the dimension it sums over,
// converting its FP32 rows into pair words as it reads them:
// - the output: pairs of window cells (k = 2q and 2q + 1, in window order);
// - the input gradient: pairs of maps;
// - the weight gradient: pairs of samples (neighbouring batch columns),
//   from bf16 copies of its two operands where its tiles read each row
//   often enough, converted as read elsewhere (rowReads).
// A bf16 copy of the output's input, made once per call, was measured
// slower on both of the seed network's convolutions (2026-12-03, AMD Zen
// 4): its writes cost more than the conversions it saves, each row being
// read only a few times. The input gradient reads each (group, position)'s
// output gradients once.
// Every output is one running sum in a fixed order on one thread (threads
// split outputs, or batch columns), so the bits do not depend on the
// thread count.
#include "runtime/cpu/BalancedTiles.h"
#include "runtime/cpu/Bf16Pairs.h"
#include "runtime/cpu/Kernels.h"

#include <immintrin.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace netc::runtime::cpu::bf16 {

namespace {

/// At most this many maps' sums per output tile (two chunks of columns:
/// 24 accumulators, two loaded pair vectors and a broadcast).
constexpr int64_t kMapTile = 12;
/// At most this many pairs of maps per input-gradient tile (two chunks:
/// 16 loaded pair vectors, two sums and a broadcast).
constexpr int64_t kPairTile = 8;
/// Weight-gradient tiles: at most kGradMapTile maps × kCellTile cells.
constexpr int64_t kGradMapTile = 5, kCellTile = 4;
/// Batch columns per chunk (16 FP32 lanes), and per bf16 vector (32 values).
constexpr int64_t kChunk = kLaneChunk, kBf16Vector = 2 * kLaneChunk;

/// The tables of one convolution (codegen/Plan.h, ConvAttrs).
struct ConvIndex {
  const plan::ConvAttrs &a;
  const int32_t *gather, *scatter;
  /// The source node of cell k at (group u, position p), -1 for a dummy.
  int32_t cell(int64_t u, int64_t p, int64_t k) const { return gather[(u * a.positions + p) * a.window + k]; }
  /// The output node of map m at (group u, position p).
  int32_t output(int64_t m, int64_t u, int64_t p) const {
    return scatter[(m * a.groups + u) * a.positions + p];
  }
  int64_t kernelOf(int64_t m, int64_t u) const { return m * a.groups + u; }
  int64_t steps() const { return pairsOf(a.window); }
};

__m512 loadOrZero(const float *row, int64_t at) {
  return row ? _mm512_loadu_ps(row + at) : _mm512_setzero_ps();
}
__m512bh asPairs(__m512i words) {
  return reinterpret_cast<__m512bh>(words);
}
__m512bh broadcastWord(uint32_t word) {
  return asPairs(_mm512_set1_epi32(static_cast<int>(word)));
}

// ---- Output ----

/// The input rows one pair of cells (step `step`: cells 2·step and
/// 2·step + 1) of a (group, position) reads: `low` and `high`, null for a
/// dummy cell or past the window's odd last cell.
struct PairSource {
  const float *low, *high;
  int64_t step;
};

/// The sources of (u, p)'s steps in `sources` (steps with no real cell
/// left out); returns their count.
int64_t pairSources(const ConvIndex &t, int64_t u, int64_t p, const float *x, int64_t lanes,
                    PairSource *sources) {
  int64_t count = 0;
  for (int64_t q = 0; q < t.steps(); ++q) {
    const int32_t low = t.cell(u, p, 2 * q), high = 2 * q + 1 < t.a.window ? t.cell(u, p, 2 * q + 1) : -1;
    if (low >= 0 || high >= 0)
      sources[count++] = {low >= 0 ? x + low * lanes : nullptr, high >= 0 ? x + high * lanes : nullptr, q};
  }
  return count;
}

/// Maps [0, Maps) of one tile at one (group, position), `Chunks` chunks
/// from column b0: out[j] (+)= bias[j] + Σ_q weights[q · Maps + j] · pair q.
template <int Maps, int Chunks>
void convolveChunks(const PairSource *sources, int64_t count, const uint32_t *weights, const float *bias,
                    float *const *out, int64_t b0, bool accumulate) {
  __m512 acc[Chunks][Maps];
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
      acc[c][j] = _mm512_set1_ps(bias[j]);
  for (int64_t i = 0; i < count; ++i) {
    const PairSource &s = sources[i];
    __m512bh v[Chunks];
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c) {
      const int64_t at = b0 + c * kChunk;
      v[c] = asPairs(interleavedPairs(loadOrZero(s.low, at), loadOrZero(s.high, at)));
    }
    const uint32_t *w = weights + s.step * Maps;
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j) {
      const __m512bh weight = broadcastWord(w[j]);
#pragma GCC unroll 16
      for (int c = 0; c < Chunks; ++c)
        acc[c][j] = _mm512_dpbf16_ps(acc[c][j], v[c], weight);
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j) {
      float *at = out[j] + b0 + c * kChunk;
      _mm512_storeu_ps(at, accumulate ? _mm512_add_ps(_mm512_loadu_ps(at), acc[c][j]) : acc[c][j]);
    }
}

template <int Maps>
void convolveTile(const PairSource *sources, int64_t count, const uint32_t *weights, const float *bias,
                  float *const *out, int64_t chunks, bool accumulate) {
  int64_t chunk = 0;
  for (; chunk + 2 <= chunks; chunk += 2)
    convolveChunks<Maps, 2>(sources, count, weights, bias, out, chunk * kChunk, accumulate);
  for (; chunk < chunks; ++chunk)
    convolveChunks<Maps, 1>(sources, count, weights, bias, out, chunk * kChunk, accumulate);
}
using ConvolveTile = void (*)(const PairSource *, int64_t, const uint32_t *, const float *, float *const *,
                              int64_t, bool);
template <int... Maps> constexpr ConvolveTile kConvolveTiles[] = {nullptr, &convolveTile<Maps>...};
constexpr const ConvolveTile *convolveTiles = kConvolveTiles<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>;

/// The output's workspace: the weights as pair words per map tile, then
/// each thread's sources.
struct ConvolutionSpace {
  uint32_t *weights;
  PairSource *sources;
  static size_t bytes(const plan::ConvAttrs &a, int threads, ConvolutionSpace *at = nullptr,
                      void *base = nullptr) {
    const size_t weights = (size_t(a.groups * a.maps * pairsOf(a.window)) * sizeof(uint32_t) + 63) / 64 * 64;
    if (at) {
      char *p = static_cast<char *>(base);
      *at = {reinterpret_cast<uint32_t *>(p), reinterpret_cast<PairSource *>(p + weights)};
    }
    return weights + size_t(threads) * size_t(pairsOf(a.window)) * sizeof(PairSource);
  }
};

/// Weights of group u's map tile [first, first + size) at
/// weights + (u · maps + first) · steps: word q · size + j holds cells 2q
/// and 2q + 1 of map first + j.
void packOutputWeights(const ConvIndex &t, const float *w, uint32_t *weights) {
  const plan::ConvAttrs &a = t.a;
  for (int64_t u = 0; u < a.groups; ++u)
    for (int64_t i = 0; i < tileCount(a.maps, kMapTile); ++i) {
      const Tile tile = tileOf(i, a.maps, kMapTile);
      uint32_t *to = weights + (u * a.maps + tile.first) * t.steps();
      for (int64_t j = 0; j < tile.size; ++j) {
        const float *kernel = w + t.kernelOf(tile.first + j, u) * a.window;
        for (int64_t q = 0; q < t.steps(); ++q)
          to[q * tile.size + j] = pairWord(kernel[2 * q], 2 * q + 1 < a.window ? kernel[2 * q + 1] : 0.0f);
      }
    }
}

// ---- Input gradient ----

/// Input gradients from one (group, position), `Chunks` chunks from column
/// b0: for every real cell k, dx[cell k] += Σ_q weights[k · stride + q] ·
/// pair q of the tile's maps' output gradients (rows even[q] and odd[q],
/// null past an odd last map).
template <int Pairs, int Chunks>
void convolveBackChunks(const ConvIndex &t, int64_t u, int64_t p, float *dx, int64_t lanes,
                        const uint32_t *weights, int64_t stride, const float *const *even,
                        const float *const *odd, int64_t b0) {
  __m512bh g[Chunks][Pairs];
#pragma GCC unroll 16
  for (int c = 0; c < Chunks; ++c)
#pragma GCC unroll 16
    for (int q = 0; q < Pairs; ++q) {
      const int64_t at = b0 + c * kChunk;
      g[c][q] = asPairs(interleavedPairs(_mm512_loadu_ps(even[q] + at), loadOrZero(odd[q], at)));
    }
  for (int64_t k = 0; k < t.a.window; ++k) {
    const int32_t node = t.cell(u, p, k);
    if (node < 0)
      continue;
    const uint32_t *w = weights + k * stride;
    __m512 sum[Chunks];
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c)
      sum[c] = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int q = 0; q < Pairs; ++q) {
      const __m512bh weight = broadcastWord(w[q]);
#pragma GCC unroll 16
      for (int c = 0; c < Chunks; ++c)
        sum[c] = _mm512_dpbf16_ps(sum[c], g[c][q], weight);
    }
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c) {
      float *at = dx + node * lanes + b0 + c * kChunk;
      _mm512_storeu_ps(at, _mm512_add_ps(_mm512_loadu_ps(at), sum[c]));
    }
  }
}

template <int Pairs>
void convolveBackTile(const ConvIndex &t, int64_t u, int64_t p, float *dx, int64_t lanes,
                      const uint32_t *weights, int64_t stride, const float *const *even,
                      const float *const *odd, int64_t b0, int64_t b1) {
  for (; b0 + 2 * kChunk <= b1; b0 += 2 * kChunk)
    convolveBackChunks<Pairs, 2>(t, u, p, dx, lanes, weights, stride, even, odd, b0);
  for (; b0 < b1; b0 += kChunk)
    convolveBackChunks<Pairs, 1>(t, u, p, dx, lanes, weights, stride, even, odd, b0);
}
using ConvolveBackTile = void (*)(const ConvIndex &, int64_t, int64_t, float *, int64_t, const uint32_t *,
                                  int64_t, const float *const *, const float *const *, int64_t, int64_t);
template <int... Pairs>
constexpr ConvolveBackTile kConvolveBackTiles[] = {nullptr, &convolveBackTile<Pairs>...};
constexpr const ConvolveBackTile *convolveBackTiles = kConvolveBackTiles<1, 2, 3, 4, 5, 6, 7, 8>;

/// The input gradient's workspace: the weights as pairs of maps (word
/// (u · window + k) · pairs + q: cell k of maps 2q and 2q + 1 of group u).
size_t gradInputBytes(const plan::ConvAttrs &a) {
  return size_t(a.groups * a.window * pairsOf(a.maps)) * sizeof(uint32_t);
}

// ---- Weight gradient ----

/// The weight gradient's rows as pair words of neighbouring samples (zero
/// past the batch): made from the FP32 rows as a tile reads them, or read
/// from bf16 copies made once per call. Both give the same words, so the
/// same bits.
struct SampleRows {
  /// Converted as read: rows of `lanes` floats, `batch` real columns.
  struct Converted {
    const float *dy, *x;
    int64_t lanes, batch;
    using Row = const float *;
    Row gradient(int64_t node) const { return dy + node * lanes; }
    Row input(int64_t node) const { return node >= 0 ? x + node * lanes : nullptr; }
    __m512bh at(Row row, int64_t column) const {
      return asPairs(row ? adjacentPairs(row + column, batch - column) : _mm512_setzero_si512());
    }
  };
  /// Copied: rows of `words` pair words, `zero` a row of zeros for dummy cells.
  struct Copied {
    const uint32_t *dy, *x, *zero;
    int64_t words;
    using Row = const uint32_t *;
    Row gradient(int64_t node) const { return dy + node * words; }
    Row input(int64_t node) const { return node >= 0 ? x + node * words : zero; }
    __m512bh at(Row row, int64_t column) const { return asPairs(_mm512_loadu_si512(row + column / 2)); }
  };
};

/// One weight-gradient tile: maps [m0, m0 + Maps) × cells [k0, k0 + Cells)
/// of group u, summed over the positions and pairs of samples, 32 batch
/// columns a step.
template <class Rows, int Maps, int Cells>
void weightGradTile(const ConvIndex &t, const Rows rows, int64_t batch, int64_t u, int64_t m0, int64_t k0,
                    float *dw, bool accumulate) {
  __m512 acc[Maps][Cells];
#pragma GCC unroll 16
  for (int j = 0; j < Maps; ++j)
#pragma GCC unroll 16
    for (int k = 0; k < Cells; ++k)
      acc[j][k] = _mm512_setzero_ps();
  for (int64_t p = 0; p < t.a.positions; ++p) {
    typename Rows::Row g[Maps], v[Cells];
#pragma GCC unroll 16
    for (int j = 0; j < Maps; ++j)
      g[j] = rows.gradient(t.output(m0 + j, u, p));
#pragma GCC unroll 16
    for (int k = 0; k < Cells; ++k)
      v[k] = rows.input(t.cell(u, p, k0 + k));
    for (int64_t column = 0; column < batch; column += kBf16Vector) {
      __m512bh gv[Maps], xv[Cells];
#pragma GCC unroll 16
      for (int j = 0; j < Maps; ++j)
        gv[j] = rows.at(g[j], column);
#pragma GCC unroll 16
      for (int k = 0; k < Cells; ++k)
        xv[k] = rows.at(v[k], column);
#pragma GCC unroll 16
      for (int j = 0; j < Maps; ++j)
#pragma GCC unroll 16
        for (int k = 0; k < Cells; ++k)
          acc[j][k] = _mm512_dpbf16_ps(acc[j][k], gv[j], xv[k]);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < Maps; ++j) {
    float *row = dw + t.kernelOf(m0 + j, u) * t.a.window + k0;
#pragma GCC unroll 16
    for (int k = 0; k < Cells; ++k) {
      const float sum = sumOf16(acc[j][k]);
      row[k] = accumulate ? row[k] + sum : sum;
    }
  }
}
template <class Rows>
using WeightGradTileFn = void (*)(const ConvIndex &, const Rows, int64_t, int64_t, int64_t, int64_t, float *,
                                  bool);
template <class Rows, int Maps, int... Cells>
constexpr WeightGradTileFn<Rows> kWeightGradRow[] = {nullptr, &weightGradTile<Rows, Maps, Cells>...};
// weightGradTiles<Rows>[maps][cells], 1 <= maps <= kGradMapTile, 1 <= cells <= kCellTile.
template <class Rows>
constexpr const WeightGradTileFn<Rows> *weightGradTiles[] = {nullptr,
                                                             kWeightGradRow<Rows, 1, 1, 2, 3, 4>,
                                                             kWeightGradRow<Rows, 2, 1, 2, 3, 4>,
                                                             kWeightGradRow<Rows, 3, 1, 2, 3, 4>,
                                                             kWeightGradRow<Rows, 4, 1, 2, 3, 4>,
                                                             kWeightGradRow<Rows, 5, 1, 2, 3, 4>};

/// Pair words a row of the weight gradient's bf16 copies has: the batch's
/// pairs of samples, in whole vectors.
int64_t sampleWords(int64_t batch) {
  return (pairsOf(batch) + kChunk - 1) / kChunk * kChunk;
}
/// The copies: the output gradient's rows, the input's, a row of zeros.
size_t gradWeightsBytes(const plan::ConvAttrs &a, int64_t lanes) {
  return size_t(a.outputs + a.inputs + 1) * size_t(sampleWords(lanes)) * sizeof(uint32_t);
}
/// How many times the tiles read each row of the output gradient and the
/// input, on average: where it is below kMinCopyReads, converting the rows
/// as they are read costs less than writing bf16 copies of them (measured on
/// the seed network's first convolution, 3.7 reads a row: 34 against 42 µs
/// at batch 128; its second, 7.2 reads, and LeNet-5's, 13 and 43, run
/// faster from copies).
double rowReads(const plan::ConvAttrs &a) {
  const double inputReads = double(tileCount(a.maps, kGradMapTile) * a.window * a.positions * a.groups);
  const double gradientReads = double(tileCount(a.window, kCellTile) * a.outputs);
  return (inputReads + gradientReads) / double(a.inputs + a.outputs);
}
constexpr double kMinCopyReads = 5;

/// Row r of feature-major rows as bf16 pairs of samples, zero past the batch.
void copySamples(const float *rows, int64_t lanes, int64_t batch, int64_t r, uint32_t *out, int64_t words) {
  const float *row = rows + r * lanes;
  for (int64_t at = 0; at < words; at += kChunk)
    storeWords(out + r * words + at, adjacentPairs(row + 2 * at, batch - 2 * at));
}

/// Every tile of the weight gradient, split over the team.
template <class Rows> void weightGradTilesOf(const KernelCall &c, const ConvIndex &t, const Rows &rows) {
  const plan::ConvAttrs &a = t.a;
  const int64_t mapTiles = tileCount(a.maps, kGradMapTile), cellTiles = tileCount(a.window, kCellTile);
#pragma omp for schedule(static) collapse(3)
  for (int64_t u = 0; u < a.groups; ++u)
    for (int64_t mt = 0; mt < mapTiles; ++mt)
      for (int64_t ct = 0; ct < cellTiles; ++ct) {
        const Tile maps = tileOf(mt, a.maps, kGradMapTile), cells = tileOf(ct, a.window, kCellTile);
        weightGradTiles<Rows>[maps.size][cells.size](t, rows, c.batch, u, maps.first, cells.first, c.out(),
                                                     c.op.accumulate);
      }
}

} // namespace

size_t convolutionWorkspaceBytes(const plan::Op &op, int64_t lanes, int threads) {
  if (lanes <= 0)
    return 0;
  switch (op.kind) {
  case plan::OpKind::Convolution: return ConvolutionSpace::bytes(op.get<plan::ConvAttrs>(), threads);
  case plan::OpKind::ConvolutionGradInput: return gradInputBytes(op.get<plan::ConvAttrs>());
  case plan::OpKind::ConvolutionGradWeights: return gradWeightsBytes(op.get<plan::ConvAttrs>(), lanes);
  default: return 0;
  }
}

// output(m, u, p) (+)= bias(m, u) + Σ_q W(m, u)[2q, 2q + 1] · x[cells 2q, 2q + 1]:
// threads take whole (group, position) pairs, which write disjoint rows. A
// fused activation (KernelCall::then) runs on each (u, p)'s rows once all
// its map tiles have written them, as in FastKernels.cpp.
void Convolution(const KernelCall &c) {
  const ConvIndex t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3)};
  const plan::ConvAttrs &a = t.a;
  const float *x = c.in(0), *biases = c.in(4);
  float *y = c.out();
  const int64_t chunks = (c.batch + kChunk - 1) / kChunk;
  ConvolutionSpace space{};
  ConvolutionSpace::bytes(a, c.threads, &space, c.workspace);
  packOutputWeights(t, c.in(1), space.weights);
  const std::optional<KernelCall> activation =
      c.then ? std::optional<KernelCall>(KernelCall{*c.then, c.batch, c.buffers, c.lanes, nullptr, 1})
             : std::nullopt;
#pragma omp parallel num_threads(c.threads)
  {
    PairSource *sources = space.sources + omp_get_thread_num() * t.steps();
#pragma omp for schedule(static) collapse(2)
    for (int64_t u = 0; u < a.groups; ++u)
      for (int64_t p = 0; p < a.positions; ++p) {
        const int64_t count = pairSources(t, u, p, x, c.lanes, sources);
        for (int64_t i = 0; i < tileCount(a.maps, kMapTile); ++i) {
          const Tile tile = tileOf(i, a.maps, kMapTile);
          float *out[kMapTile];
          float bias[kMapTile];
          for (int64_t j = 0; j < tile.size; ++j) {
            out[j] = y + t.output(tile.first + j, u, p) * c.lanes;
            bias[j] = biases[t.kernelOf(tile.first + j, u)];
          }
          convolveTiles[tile.size](sources, count, space.weights + (u * a.maps + tile.first) * t.steps(),
                                   bias, out, chunks, c.op.accumulate);
        }
        if (activation)
          for (int64_t m = 0; m < a.maps; ++m)
            fast_avx512::activateRows(*activation, t.output(m, u, p), 1);
      }
  }
}

// dx[cell(u, p, k)] += Σ_q W(2q, 2q + 1; u)[k] · dy(2q, 2q + 1; u, p): threads
// split the batch columns (several (group, position) pairs reach one input)
// and each input sums its contributions in one fixed order. The output
// gradient's pairs of maps are made as each (u, p) reads them (once).
void ConvolutionGradInput(const KernelCall &c) {
  const ConvIndex t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3)};
  const plan::ConvAttrs &a = t.a;
  const float *dy = c.in(0), *w = c.in(1);
  float *dx = c.out();
  const int64_t pairs = pairsOf(a.maps), chunks = (c.batch + kChunk - 1) / kChunk;
  uint32_t *weights = static_cast<uint32_t *>(c.workspace);
  for (int64_t u = 0; u < a.groups; ++u)
    for (int64_t k = 0; k < a.window; ++k)
      for (int64_t q = 0; q < pairs; ++q)
        weights[(u * a.window + k) * pairs + q] =
            pairWord(w[t.kernelOf(2 * q, u) * a.window + k],
                     2 * q + 1 < a.maps ? w[t.kernelOf(2 * q + 1, u) * a.window + k] : 0.0f);
#pragma omp parallel num_threads(c.threads)
  {
    const auto [c0, c1] = shareOf(chunks, omp_get_thread_num(), omp_get_num_threads());
    const int64_t b0 = c0 * kChunk, b1 = c1 * kChunk;
    if (!c.op.accumulate)
      for (int64_t i = 0; b0 < b1 && i < a.inputs; ++i)
        std::memset(dx + i * c.lanes + b0, 0, size_t(b1 - b0) * sizeof(float));
    for (int64_t u = 0; b0 < b1 && u < a.groups; ++u)
      for (int64_t p = 0; p < a.positions; ++p)
        for (int64_t i = 0; i < tileCount(pairs, kPairTile); ++i) {
          const Tile tile = tileOf(i, pairs, kPairTile);
          const float *even[kPairTile], *odd[kPairTile];
          for (int64_t q = 0; q < tile.size; ++q) {
            const int64_t m = 2 * (tile.first + q);
            even[q] = dy + t.output(m, u, p) * c.lanes;
            odd[q] = m + 1 < a.maps ? dy + t.output(m + 1, u, p) * c.lanes : nullptr;
          }
          convolveBackTiles[tile.size](t, u, p, dx, c.lanes, weights + u * a.window * pairs + tile.first,
                                       pairs, even, odd, b0, b1);
        }
  }
}

// dW(m, u)[k] (+)= Σ_p Σ_b dy(m, u, p) · x[cell(u, p, k)] over pairs of
// samples: tiles of maps × cells accumulate in registers, threads take whole
// tiles. The rows are copied to bf16 first where the tiles read each often
// enough (rowReads). The kernel biases' gradient runs as its own op (FP32).
void ConvolutionGradWeights(const KernelCall &c) {
  const ConvIndex t{c.op.get<plan::ConvAttrs>(), c.inTable(2), c.inTable(3)};
  const plan::ConvAttrs &a = t.a;
  if (rowReads(a) < kMinCopyReads) {
    const SampleRows::Converted rows{c.in(0), c.in(1), c.lanes, c.batch};
#pragma omp parallel num_threads(c.threads)
    weightGradTilesOf(c, t, rows);
    return;
  }
  const int64_t words = sampleWords(c.batch);
  uint32_t *dy = static_cast<uint32_t *>(c.workspace), *x = dy + a.outputs * words,
           *zero = x + a.inputs * words;
  std::memset(zero, 0, size_t(words) * sizeof(uint32_t));
  const SampleRows::Copied rows{dy, x, zero, words};
#pragma omp parallel num_threads(c.threads)
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < a.outputs + a.inputs; ++r) {
      if (r < a.outputs)
        copySamples(c.in(0), c.lanes, c.batch, r, dy, words);
      else
        copySamples(c.in(1), c.lanes, c.batch, r - a.outputs, x, words);
    }
    weightGradTilesOf(c, t, rows);
  }
}

} // namespace netc::runtime::cpu::bf16
