// OpTables.h -- the index tables the CUDA backend derives from a Plan at
// load, beside the Plan's own (which it uploads as they are): the window and
// gather tables transposed by source, so a backward body can gather over
// the outputs that read an input instead of scattering into it, and each
// sparse edge's destination. Pure host functions, tested on the CPU; the
// device pointers to their uploaded copies reach the bodies as OpPointers.
#pragma once

#include "codegen/Plan.h"
#include "runtime/cuda/WindowBodies.h"
#include "support/Status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace netc::runtime::cuda {

/// A table of rows × width source nodes (-1: none) by source: source s's
/// cells are entries[start[s] .. start[s + 1]), each a flat index
/// row · width + k, ascending.
struct TransposedTable {
  std::vector<int32_t> start, entries;
  bool empty() const { return start.empty(); }
};

/// `table` (a multiple of `width` long, entries in [-1, sources)) by source;
/// an error names the first entry out of range.
Expected<TransposedTable> transposeTable(std::span<const int32_t> table, int64_t width, int64_t sources);

/// What one op needs besides the Plan's tables (empty where it needs nothing).
struct DerivedTables {
  TransposedTable sources;           // pool, norm and convolution input gradients: the window/gather table
  TransposedTable centres;           // response-norm-grad: the centre table
  std::vector<int32_t> destinations; // sparse-grad-weights: each edge's destination
};

/// The derived tables of every op of `plan`, by op index; an error says
/// which op's table is malformed.
Expected<std::vector<DerivedTables>> deriveTables(const plan::Plan &plan);

/// Where an op's derived tables are in the memory the kernels read (null
/// where absent).
struct OpPointers {
  SourceLists sources{nullptr, nullptr}, centres{nullptr, nullptr};
  const int32_t *destinations = nullptr;
};

/// Samples each chunk of a sum over the batch covers at most (weight and
/// bias gradients, OpRunner.h's runBatchReduction), and the most scratch
/// floats the chunks' partial sums may take.
inline constexpr int64_t kSamplesPerChunk = 8;
inline constexpr int64_t kMaxReductionScratch = int64_t{1} << 22;

/// Positions a convolution's bias gradient sums per thread in its first pass
/// (ConvolutionBiasPartialBody), and the blocks `positions` is split into.
inline constexpr int64_t kBiasPositionsPerBlock = 64;
inline int64_t biasBlocks(int64_t positions) {
  return positions > kBiasPositionsPerBlock
             ? (positions + kBiasPositionsPerBlock - 1) / kBiasPositionsPerBlock
             : 1;
}

/// How many chunks a sum over `batch` samples into `elements` outputs is
/// split into: one per kSamplesPerChunk samples, fewer where the partial
/// sums would exceed kMaxReductionScratch; at least 1.
int64_t reductionChunks(int64_t batch, int64_t elements);

/// Scratch floats op `op` needs at `batch` samples: a loss op's per-sample
/// losses, a chunked reduction's partial sums (a convolution's bias
/// gradient: its per-block sums first); 0 for other ops.
int64_t scratchElements(const plan::Op &op, int64_t batch);

} // namespace netc::runtime::cuda
