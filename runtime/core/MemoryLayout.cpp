// MemoryLayout.cpp -- one block for a whole Plan (MemoryLayout.h).
#include "runtime/core/MemoryLayout.h"

#include <fmt/format.h>

namespace netc::runtime {

Expected<MemoryLayout> layoutMemory(const plan::Plan &plan, int64_t columns) {
  if (columns <= 0)
    return fail(fmt::format("batch size must be positive, got {}", columns));
  const int64_t limit = int64_t{1} << 40; // elements: far beyond any device
  const int64_t perSample = plan.elementsPerSample();
  if (perSample > limit / columns)
    return fail(
        fmt::format("the plan needs {} values per sample; with batch {} that exceeds what can be allocated",
                    perSample, columns));
  MemoryLayout out;
  out.columns = columns;
  out.offset.assign(plan.buffers.size(), -1);
  out.activationSlotElements = plan.memory.arenaPerSample * columns;
  out.inputBegin = plan.activationSlots * out.activationSlotElements;
  out.inputSlotElements = plan.memory.inputsPerSample * columns;
  int64_t next = out.inputBegin + plan.inputSlots * out.inputSlotElements;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const plan::Buffer &buffer = plan.buffers[b];
    if (buffer.batchScaled()) {
      out.offset[b] = (buffer.isInput() ? out.inputBegin : 0) + buffer.arenaOffset * columns;
      continue;
    }
    if (buffer.viewOf >= 0 || buffer.role == plan::BufferRole::Workspace)
      continue;
    if (buffer.fixed > limit - next)
      return fail(fmt::format("the plan's fixed buffers exceed {} values", limit));
    out.offset[b] = next;
    next += plan::alignElements(std::max<int64_t>(buffer.fixed, 1));
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (const plan::Buffer &buffer = plan.buffers[b]; buffer.viewOf >= 0)
      out.offset[b] = out.offset[static_cast<size_t>(buffer.viewOf)] + buffer.viewOffset;
  out.planElements = next;
  return out;
}

int64_t MemoryLayout::slotOffset(const plan::Plan &plan, int buffer, int slot) const {
  const plan::Buffer &b = plan.buffers[static_cast<size_t>(buffer)];
  if (b.isInput())
    return inputOffset(buffer, slot);
  const int64_t at = offset[static_cast<size_t>(buffer)];
  return b.batchScaled() ? at + slot * activationSlotElements : at;
}

} // namespace netc::runtime
