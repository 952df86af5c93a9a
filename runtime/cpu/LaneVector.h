// LaneVector.h -- kLaneChunk consecutive batch columns as one GCC/Clang
// vector value, the unit the fast kernels compute on in the feature-major
// layout (Kernels.h). Written with vector extensions, so each instruction-set
// build of the fast kernels (runtime/cpu/CMakeLists.txt) maps it onto its own
// registers: one 512-bit register with AVX-512, two with AVX2, four with SSE2.
#pragma once

#include "runtime/cpu/Kernels.h"

#include <cstdint>

namespace netc::runtime::cpu {
// Internal linkage: each kernel table's translation unit compiles its own copy
// for its instruction set (runtime/cpu/CMakeLists.txt), so no copy built for
// one set is linked into another's code.
namespace {

typedef float LaneVector __attribute__((vector_size(kLaneChunk * sizeof(float))));
typedef int32_t LaneMask __attribute__((vector_size(kLaneChunk * sizeof(float))));
// Loads and stores through these may be unaligned and may alias float data.
typedef float LaneVectorUnaligned
    __attribute__((vector_size(kLaneChunk * sizeof(float)), aligned(alignof(float)), may_alias));

inline LaneVector loadLanes(const float *p) {
  return *reinterpret_cast<const LaneVectorUnaligned *>(p);
}
inline void storeLanes(float *p, LaneVector v) {
  *reinterpret_cast<LaneVectorUnaligned *>(p) = v;
}
inline LaneVector splat(float value) {
  return LaneVector{} + value;
}
/// All-ones in the first `count` lanes, zero in the others.
inline LaneMask firstLanes(int64_t count) {
  LaneMask mask{};
  for (int64_t j = 0; j < kLaneChunk; ++j)
    mask[j] = j < count ? -1 : 0;
  return mask;
}
/// v with the lanes outside `mask` set to +0 (whatever they held, NaN included).
inline LaneVector masked(LaneVector v, LaneMask mask) {
  return reinterpret_cast<LaneVector>(reinterpret_cast<LaneMask>(v) & mask);
}
/// The sum of the lanes, in a fixed order.
inline float sumLanes(LaneVector v) {
  float sum = 0;
  for (int64_t j = 0; j < kLaneChunk; ++j)
    sum += v[j];
  return sum;
}

/// Lanes of a where mask is set, of b elsewhere (mask from a vector comparison).
inline LaneVector select(LaneMask mask, LaneVector a, LaneVector b) {
  return reinterpret_cast<LaneVector>((reinterpret_cast<LaneMask>(a) & mask) |
                                      (reinterpret_cast<LaneMask>(b) & ~mask));
}

/// e^x per lane, inline so that consecutive vectors pipeline (a library call
/// per vector serialises them). Cody-Waite reduction x = n·ln 2 + r with
/// |r| <= ln 2 / 2, the degree-6 Cephes polynomial for e^r, and 2^n built in
/// the exponent bits; x is clamped to [-87.3, 88.3], where 2^n is a normal
/// float. Relative error below 2e-7 (a few float ulps), which the numeric
/// tests compare against the double reference.
inline LaneVector expLanes(LaneVector x) {
  x = select(x > 88.3f, splat(88.3f), x);
  x = select(x < -87.3f, splat(-87.3f), x);
  // n = round(x / ln 2), computed as floor(x / ln 2 + 0.5) through a positive bias.
  const LaneMask n = __builtin_convertvector(x * 1.44269504088896341f + 128.5f, LaneMask) - 128;
  const LaneVector nf = __builtin_convertvector(n, LaneVector);
  const LaneVector r = (x - nf * 0.693359375f) - nf * -2.12194440e-4f;
  LaneVector p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * reinterpret_cast<LaneVector>((n + 127) << 23);
}

/// Transposes rows [0, rows) (rows <= 16) of a 16-column block, row r at
/// x + r · ldx, into 16 rows at t + j · ldt: t(j)[r] = x(r)[j], and t's
/// columns from `rows` on are 0. Four perfect shuffles of the 16 vectors
/// (output 2k interleaves the first halves of v[k] and v[k + 8], output
/// 2k + 1 their second halves) transpose them.
inline void transposeBlock(const float *x, int64_t ldx, int rows, float *t, int64_t ldt) {
  LaneVector v[16];
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r)
    v[r] = r < rows ? loadLanes(x + r * ldx) : LaneVector{};
#pragma GCC unroll 16
  for (int stage = 0; stage < 4; ++stage) {
    LaneVector next[16];
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) {
      next[2 * k] =
          __builtin_shufflevector(v[k], v[k + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      next[2 * k + 1] = __builtin_shufflevector(v[k], v[k + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29,
                                                14, 30, 15, 31);
    }
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k)
      v[k] = next[k];
  }
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j)
    storeLanes(t + j * ldt, v[j]);
}
static_assert(kLaneChunk == 16, "transposeBlock is written for 16 lanes");

} // namespace
} // namespace netc::runtime::cpu
