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

} // namespace
} // namespace netc::runtime::cpu
