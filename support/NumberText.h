// NumberText.h -- numbers as the tools print them for people: thousands
// grouped ("127,495") and shapes in brackets ("[5, 13, 13]"). Shared by
// `netc show` and the language server's hovers, so both read the same.
#pragma once

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

/// {5, 13, 13} -> "[5, 13, 13]".
inline std::string bracketed(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

} // namespace netc
