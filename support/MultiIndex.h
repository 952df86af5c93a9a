// MultiIndex.h -- stepping through a row-major multi-index (the last
// dimension fastest), as the index tables, filter enumeration and the cuDNN
// descriptions walk their coordinates, and through every element of a
// strided tensor (cuDNN's host evaluators). Header only.
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

/// Calls body(offset) for every element of the tensor of extents
/// dims[0 .. rank) and element strides strides[0 .. rank), in row-major
/// order of its coordinates (offset: Σ coordinate · stride).
template <class Dims, class Body>
void forEachStridedElement(const Dims &dims, const Dims &strides, int rank, Body body) {
  std::vector<int64_t> index(static_cast<size_t>(rank), 0), extent(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    extent[static_cast<size_t>(d)] = dims[static_cast<size_t>(d)];
    if (extent[static_cast<size_t>(d)] <= 0)
      return;
  }
  do {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d)
      offset += index[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
    body(offset);
  } while (advanceRowMajor(index, extent));
}

} // namespace netc
