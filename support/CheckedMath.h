// CheckedMath.h -- 64-bit integer arithmetic that reports overflow instead
// of wrapping; every shape, count and const computation goes through it.
#pragma once

#include <cstdint>
#include <optional>

namespace netc {

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
/// a^b for b >= 0, by repeated squaring with overflow checks.
inline std::optional<int64_t> checkedPow(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) {
      auto r = checkedMul(result, base);
      if (!r)
        return std::nullopt;
      result = *r;
    }
    exponent >>= 1;
    if (exponent > 0) {
      auto b = checkedMul(base, base);
      if (!b)
        return std::nullopt;
      base = *b;
    }
  }
  return result;
}

/// A running product that remembers overflow (for node and parameter counts).
class CheckedProduct {
public:
  void multiply(int64_t factor) {
    if (!overflow_ && __builtin_mul_overflow(value_, factor, &value_))
      overflow_ = true;
  }
  bool overflow() const { return overflow_; }
  int64_t value() const { return value_; }

private:
  int64_t value_ = 1;
  bool overflow_ = false;
};

} // namespace netc
