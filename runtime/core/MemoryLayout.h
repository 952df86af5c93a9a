// MemoryLayout.h -- where each buffer of a Plan lies in one block of memory,
// for backends that allocate a single arena (the CUDA backend: one device
// allocation per plan, nothing allocated inside a step) and for tests that
// stand in for them. The block holds, in order: the activation arena, the
// input arena's slots, every buffer with memory of its own (parameters'
// flat arenas, tables, metrics, step scalars), then the backend's extra
// regions (derived tables, workspace). Batch-scaled buffers hold `columns`
// samples, sample-major (their offsets are activation slot 0's; slot j's
// copy is j × activationSlotElements further); views resolve into their flat arena; every offset
// is a multiple of 64 elements (256 bytes). A pure function of the Plan.
#pragma once

#include "codegen/Plan.h"
#include "support/Status.h"

#include <cstdint>
#include <vector>

namespace netc::runtime {

struct MemoryLayout {
  int64_t columns = 0; // samples each batch-scaled buffer holds
  /// Offsets in 4-byte elements from the start of the block; -1 where a
  /// buffer has no memory here (the workspace, whose place the backend picks).
  std::vector<int64_t> offset;
  int64_t activationSlotElements = 0; // one activation slot (a pipeline stage's micro-batch in flight)
  int64_t inputSlotElements = 0;      // one input slot: the next slot's copy of an input is this much further
  int64_t inputBegin = 0;             // the input arena's first slot
  int64_t planElements = 0;           // everything the Plan itself lays out
  /// The offset of input buffer `buffer` (features or labels) in slot `slot`.
  int64_t inputOffset(int buffer, int slot) const {
    return offset[static_cast<size_t>(buffer)] + slot * inputSlotElements;
  }
  /// Where buffer `buffer` of `plan` lies for a micro-batch in slot `slot`:
  /// an input in input slot `slot`, another batch-scaled buffer in
  /// activation slot `slot`, any other buffer at its one place.
  int64_t slotOffset(const plan::Plan &plan, int buffer, int slot) const;
};

/// The layout of `plan` with batch-scaled buffers of `columns` samples; an
/// error when the sizes overflow.
Expected<MemoryLayout> layoutMemory(const plan::Plan &plan, int64_t columns);

} // namespace netc::runtime
