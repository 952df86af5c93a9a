// PlanMemory.cpp -- memory planning (docs/architecture.md §Memory planning): every batch-scaled
// buffer gets an offset in the activation arena (in elements per sample; the
// backend multiplies by its batch), a multiple of kAlignElements so that it
// starts 256-byte aligned at any batch. A buffer lives from the first op
// that touches it to the last; buffers whose lifetimes do not overlap may
// share space. The output layer's values stay live throughout (the host
// reads them after the ops). Placement is greedy, largest first, at the
// lowest offset free over the buffer's lifetime. The features and labels
// have an arena of their own, which backends hold `inputSlots` times.
#include "codegen/Codegen.h"

#include <algorithm>
#include <numeric>

namespace netc::plan {

namespace {
struct Lifetime {
  size_t first = SIZE_MAX, last = 0;
  bool used() const { return first != SIZE_MAX; }
};
} // namespace

void planMemory(Plan &plan, bool reuse) {
  const size_t n = plan.buffers.size();
  std::vector<Lifetime> life(n);
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op &op = plan.ops[i];
    for (const std::vector<int> *list : {&op.in, &op.out})
      for (int b : *list) {
        Lifetime &l = life[static_cast<size_t>(b)];
        l.first = std::min(l.first, i);
        l.last = std::max(l.last, i);
      }
  }
  if (plan.output >= 0)
    life[static_cast<size_t>(plan.output)] = {0, plan.ops.size()};

  MemorySummary summary;
  std::vector<size_t> order;
  for (size_t b = 0; b < n; ++b) {
    Buffer &buffer = plan.buffers[b];
    if (!buffer.batchScaled()) {
      if (buffer.viewOf < 0) // views are counted with their arena
        summary.fixedElements += buffer.fixed;
      continue;
    }
    if (buffer.isInput()) {
      buffer.arenaOffset = summary.inputsPerSample;
      summary.inputsPerSample += alignElements(buffer.perSample);
      continue;
    }
    if (!life[b].used()) // created but never touched: give it its own space anyway
      life[b] = {0, plan.ops.size()};
    summary.unplannedPerSample += alignElements(buffer.perSample);
    order.push_back(b);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.buffers[a].perSample > plan.buffers[b].perSample; });

  std::vector<size_t> placed;
  for (size_t b : order) {
    Buffer &buffer = plan.buffers[b];
    const int64_t size = alignElements(buffer.perSample);
    int64_t offset = 0;
    if (!reuse) {
      offset = summary.arenaPerSample;
    } else {
      // Intervals already taken during this buffer's lifetime, by offset.
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (size_t other : placed) {
        const Lifetime &x = life[other], &y = life[b];
        if (x.first <= y.last && y.first <= x.last)
          taken.emplace_back(plan.buffers[other].arenaOffset,
                             plan.buffers[other].arenaOffset + alignElements(plan.buffers[other].perSample));
      }
      std::sort(taken.begin(), taken.end());
      for (const auto &[begin, end] : taken) {
        if (offset + size <= begin)
          break;
        offset = std::max(offset, end);
      }
    }
    buffer.arenaOffset = offset;
    summary.arenaPerSample = std::max(summary.arenaPerSample, offset + size);
    placed.push_back(b);
  }
  plan.memory = summary;
}

} // namespace netc::plan
