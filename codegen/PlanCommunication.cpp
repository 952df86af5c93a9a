// PlanCommunication.cpp -- places the communication ops of a data-parallel
// plan (docs/architecture.md §Data parallelism). Synchronous SGD: an all-reduce of each gradient
// bucket right after the backward op that finishes it (Bucket::readyAfter),
// so the exchange runs while the backward pass goes on, and one wait as the
// last op of the backward range, before the update. Local SGD: after the
// update, an all-reduce (mean) of the trained range of the parameter arena
// and of each optimizer state arena, then a wait: the range [updateEnd, end)
// the trainer runs every H steps. Indices that name ops (readyAfter, the
// range ends) are moved with the ops they name.
#include "codegen/Codegen.h"

#include <algorithm>

namespace netc::plan {

namespace {

Op allReduce(int arena, int64_t offset, int64_t count, bool mean, int bucket) {
  Op op;
  op.kind = OpKind::AllReduce;
  op.in = {arena};
  op.out = {arena};
  op.attrs = CommAttrs{offset, count, mean, bucket};
  return op;
}

Op waitForAll() {
  Op op;
  op.kind = OpKind::AllReduceWait;
  op.attrs = CommAttrs{};
  return op;
}

void allReduceGradients(Plan &plan) {
  if (plan.buckets.empty())
    return;
  std::vector<Op> ops;
  std::vector<size_t> moved(plan.ops.size() + 1);
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (i == plan.backwardEnd) // the wait ends the backward pass
      ops.push_back(waitForAll());
    moved[i] = ops.size();
    ops.push_back(std::move(plan.ops[i]));
    for (size_t b = 0; b < plan.buckets.size(); ++b)
      if (plan.buckets[b].readyAfter == i)
        ops.push_back(allReduce(plan.gradientArena, plan.buckets[b].offset, plan.buckets[b].count, false,
                                static_cast<int>(b)));
  }
  if (plan.backwardEnd == plan.ops.size())
    ops.push_back(waitForAll());
  moved[plan.ops.size()] = ops.size();
  plan.ops = std::move(ops);
  for (Bucket &b : plan.buckets)
    b.readyAfter = moved[b.readyAfter];
  for (Parameter &p : plan.parameters)
    if (p.trained)
      p.readyAfter = moved[p.readyAfter];
  // The wait sits just before the first update op: the backward range ends after it.
  const size_t update = moved[plan.backwardEnd];
  for (size_t *end : {&plan.stepBegin, &plan.forwardEnd, &plan.lossEnd})
    *end = moved[*end];
  plan.backwardEnd = update;
  plan.updateEnd = moved[plan.updateEnd];
}

void averageReplicas(Plan &plan) {
  if (plan.trainedElements == 0)
    return;
  plan.updateEnd = plan.ops.size();
  plan.ops.push_back(allReduce(plan.parameterArena, 0, plan.trainedElements, true, -1));
  for (int arena : plan.stateArenas)
    plan.ops.push_back(allReduce(arena, 0, plan.trainedElements, true, -1));
  plan.ops.push_back(waitForAll());
}

} // namespace

void placeCommunication(Plan &plan, ReplicaSync sync) {
  plan.replicaSync = sync;
  if (!plan.training)
    return;
  if (sync == ReplicaSync::AllReduceGradients)
    allReduceGradients(plan);
  else if (sync == ReplicaSync::AverageReplicas)
    averageReplicas(plan);
}

} // namespace netc::plan
