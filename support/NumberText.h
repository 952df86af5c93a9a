// NumberText.h -- numbers as the tools print them for people: thousands
// grouped ("127,495"), shapes in brackets ("[5, 13, 13]") and measured
// quantities to three significant digits without an exponent ("1000", not
// "1e+03"). Shared by `netc show`, the run's messages and the language
// server's hovers, so all read the same.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace netc {

/// 127495 -> "127,495"; -1234 -> "-1,234".
inline std::string groupDigits(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return (value < 0 ? "-" : "") + out;
}

/// The shortest text that reads back as the same float: 0.1f -> "0.1".
inline std::string shortestText(float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

/// {5, 13, 13} -> "[5, 13, 13]".
inline std::string bracketed(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

/// A measured quantity to three significant digits, without the exponent
/// form "{:.3g}" gives from 1000 up: 0.01234 -> "0.0123", 999.7 -> "1000",
/// 12345.6 -> "12346" (digits before the point are kept whole).
inline std::string threeDigits(double value) {
  if (std::isfinite(value) && std::fabs(value) >= 99.95)
    return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

} // namespace netc
