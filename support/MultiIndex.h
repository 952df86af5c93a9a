// MultiIndex.h -- stepping through a row-major multi-index (the last
// dimension fastest), as the index tables, filter enumeration and the cuDNN
// description of a convolution walk their coordinates. Header only.
#pragma once

#include <cstdint>
#include <vector>

namespace netc {

/// Advances `index` to the next row-major coordinate within `extent`;
/// false (and all zeros) after the last one.
inline bool advanceRowMajor(std::vector<int64_t> &index, const std::vector<int64_t> &extent) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < extent[d])
      return true;
    index[d] = 0;
  }
  return false;
}

} // namespace netc
