// Bf16Pairs.h -- the conversions of FP32 values into the pair words that
// AVX512-BF16's VDPBF16PS reads (two bf16 values per 32-bit lane, the even
// element in the low half), rounded to nearest even as VCVTNEPS2BF16
// rounds, and the sum of a vector's FP32 lanes. Shared by the bf16 dense
// products (Bf16DenseKernels.cpp) and convolutions
// (Bf16ConvolutionKernels.cpp), the only files built with -mavx512bf16.
#pragma once

#include <immintrin.h>

#include <cstdint>

#if !defined(__AVX512BF16__)
#error "compile with -mavx512bf16 (runtime/cpu/CMakeLists.txt)"
#endif

namespace netc::runtime::cpu::bf16 {
// Internal linkage, as LaneVector.h's: each file has its own copy.
namespace {

/// The pairs of k values (the last one's high half 0 where k is odd).
inline int64_t pairsOf(int64_t k) {
  return (k + 1) / 2;
}

/// Mask of the first `count` of 16 lanes (count may exceed 16 or be ≤ 0).
inline __mmask16 firstOf16(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

/// Word j = bf16(even[j]) | bf16(odd[j]) << 16: two rows of k interleaved
/// (one conversion of both into 32 bf16 values, even's first, then one
/// permutation of the 16-bit halves).
inline __m512i interleavedPairs(__m512 even, __m512 odd) {
  const __m512i converted = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));
  // Half 2j of the result is even's j (half j), half 2j + 1 odd's (half 16 + j).
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                         22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, converted);
}

/// Word j = bf16(x[2j]) | bf16(x[2j + 1]) << 16 for the 32 values from x, of
/// which only the first `count` are read (the others count as 0).
inline __m512i adjacentPairs(const float *x, int64_t count) {
  const __m512 low = _mm512_maskz_loadu_ps(firstOf16(count), x);
  const __m512 high = _mm512_maskz_loadu_ps(firstOf16(count - 16), x + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low));
}

inline void storeWords(uint32_t *p, __m512i words) {
  _mm512_storeu_si512(p, words);
}

/// The word of two scalars: bf16(even) | bf16(odd) << 16.
inline uint32_t pairWord(float even, float odd) {
  alignas(64) uint32_t words[16];
  storeWords(words, interleavedPairs(_mm512_set1_ps(even), _mm512_set1_ps(odd)));
  return words[0];
}

/// The sum of v's 16 lanes, in lane order (a fixed order: the same bits on
/// any thread count).
inline float sumOf16(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0;
  for (float lane : lanes)
    sum += lane;
  return sum;
}

} // namespace
} // namespace netc::runtime::cpu::bf16
