// HostDevice.h -- NETC_HOST_DEVICE marks a function that both the host
// compiler and CUDA device code call (`__host__ __device__` under nvcc,
// nothing otherwise), and a few helpers such functions need where the
// standard library's are host-only: the bits of a float (std::bit_cast is
// not available in device code) and a finite test that -ffast-math cannot
// fold away. Header only; the update math (runtime/optim/UpdateMath.h), the
// output functions (ActivationMath.h) and the CUDA backend's kernel bodies
// (runtime/cuda/) include it.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

#if defined(__CUDACC__)
#define NETC_HOST_DEVICE __host__ __device__
#else
#define NETC_HOST_DEVICE
#endif

namespace netc::runtime {
// Internal linkage, for the same reason as ActivationMath.h's: the CPU's
// per-instruction-set kernel tables may include these.
namespace {

/// The IEEE-754 bits of `value`.
NETC_HOST_DEVICE inline uint32_t floatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  return std::bit_cast<uint32_t>(value);
#endif
}

/// Whether `value` is neither infinite nor NaN, tested on its bits (under
/// -ffast-math std::isfinite folds to true).
NETC_HOST_DEVICE inline bool finiteBits(float value) {
  return (floatBits(value) & 0x7f800000u) != 0x7f800000u;
}

} // namespace
} // namespace netc::runtime
