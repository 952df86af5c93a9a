// SourceRange.h -- byte offsets into one source buffer, and values that carry
// the range they were written at (Located<T>). Every AST node, IR value and
// diagnostic is located this way; line/column conversion lives in SourceFile.
#pragma once

#include <cstdint>
#include <utility>

namespace netc {

/// A half-open byte range [begin, end) within one SourceFile.
struct SourceRange {
  uint32_t begin = 0;
  uint32_t end = 0;

  bool empty() const { return begin == end; }
  bool operator==(const SourceRange &) const = default;

  /// The smallest range covering both.
  static SourceRange cover(SourceRange a, SourceRange b) {
    return {a.begin < b.begin ? a.begin : b.begin, a.end > b.end ? a.end : b.end};
  }
};

/// A value together with the source range it came from.
template <typename T> struct Located {
  T value{};
  SourceRange range;

  Located() = default;
  Located(T v, SourceRange r) : value(std::move(v)), range(r) {}
};

} // namespace netc
