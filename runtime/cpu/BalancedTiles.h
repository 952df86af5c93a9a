// BalancedTiles.h -- how the fast kernels split a count of items (maps,
// window cells, pairs of maps) into register tiles: the fewest tiles of at
// most a limit, their sizes differing by at most one, so no tile is left
// with a sliver; and how they split items over threads. Shared by
// FastKernels.cpp (one copy per instruction set) and the bf16 products
// (Bf16DenseKernels.cpp, Bf16ConvolutionKernels.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace netc::runtime::cpu {
// Internal linkage, as LaneVector.h's: each kernel file has its own copy.
namespace {

/// [first, first + size) of one tile.
struct Tile {
  int64_t first, size;
};
inline int64_t tileCount(int64_t count, int64_t limit) {
  return (count + limit - 1) / limit;
}
/// Tile `index` of `count` items split into tileCount(count, limit) tiles.
inline Tile tileOf(int64_t index, int64_t count, int64_t limit) {
  const int64_t tiles = tileCount(count, limit), base = count / tiles, extra = count % tiles;
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

/// Items [first, last) of `total` for thread `thread` of `count`.
inline std::pair<int64_t, int64_t> shareOf(int64_t total, int64_t thread, int64_t count) {
  return {total * thread / count, total * (thread + 1) / count};
}

} // namespace
} // namespace netc::runtime::cpu
