// PlanArenas.cpp -- lays out the flat arenas (docs/architecture.md §The Plan): parameters,
// their gradients and each optimizer state slot are three (or more) arenas
// with one layout, so the fused update op is one loop over all of them and a
// data-parallel run all-reduces contiguous ranges. Parameters are ordered by
// the backward op that finishes their gradient (the last one writing it),
// earliest first, so what the backward pass completes first is adjacent;
// parameters no backward op reaches (their layer does not lead to the
// output) come last, outside the trained range the update op covers. Each
// parameter starts on a 256-byte boundary. Buckets group consecutive trained
// parameters into ranges of at least `bucketBytes` and record the op after
// which each range is final.
#include "codegen/Codegen.h"

#include <algorithm>
#include <numeric>

namespace netc::plan {

void planArenas(Plan &plan, int64_t bucketBytes) {
  const size_t n = plan.parameters.size();
  std::vector<int> parameterOfGradient(plan.buffers.size(), -1);
  for (size_t p = 0; p < n; ++p)
    if (plan.parameters[p].gradient >= 0)
      parameterOfGradient[static_cast<size_t>(plan.parameters[p].gradient)] = static_cast<int>(p);
  std::vector<size_t> finishedBy(n, SIZE_MAX);
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (opRole(plan.ops[i].kind) == OpRole::Backward && plan.ops[i].kind != OpKind::ZeroGradients)
      for (int out : plan.ops[i].out)
        if (const int p = parameterOfGradient[static_cast<size_t>(out)]; p >= 0)
          finishedBy[static_cast<size_t>(p)] = i; // ops run in order: the last writer wins
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return finishedBy[a] < finishedBy[b]; });

  int64_t offset = 0;
  plan.trainedElements = 0;
  plan.buckets.clear();
  for (size_t p : order) {
    Parameter &param = plan.parameters[p];
    param.trained = finishedBy[p] != SIZE_MAX;
    param.readyAfter = param.trained ? finishedBy[p] : 0;
    param.offset = offset;
    offset += alignElements(param.count);
    if (!param.trained)
      continue;
    plan.trainedElements = offset;
    // A new bucket when there is none yet or the last one is full.
    if (plan.buckets.empty() || plan.buckets.back().count * 4 >= bucketBytes)
      plan.buckets.push_back({param.offset, 0, 0, {}});
    Bucket &bucket = plan.buckets.back();
    bucket.count = offset - bucket.offset;
    bucket.readyAfter = std::max(bucket.readyAfter, finishedBy[p]);
    bucket.parameters.push_back(static_cast<int>(p));
  }
  plan.arenaElements = offset;

  for (int arena : {plan.parameterArena, plan.gradientArena})
    if (arena >= 0) {
      Buffer &buffer = plan.buffers[static_cast<size_t>(arena)];
      buffer.fixed = offset;
      buffer.shape = {offset};
    }
  for (const Parameter &param : plan.parameters)
    for (auto [view, arena] :
         {std::pair{param.buffer, plan.parameterArena}, {param.gradient, plan.gradientArena}})
      if (view >= 0) {
        plan.buffers[static_cast<size_t>(view)].viewOf = arena;
        plan.buffers[static_cast<size_t>(view)].viewOffset = param.offset;
      }
}

} // namespace netc::plan
