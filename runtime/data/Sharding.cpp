// Sharding.cpp -- the shares of each step (Sharding.h).
#include "runtime/data/Sharding.h"

#include <algorithm>
#include <cassert>

namespace netc::data {

Share shareOf(int64_t count, int rank, int ranks) {
  assert(ranks >= 1 && rank >= 0 && rank < ranks && count >= 0);
  // floor(count · r / ranks) without the product (which could overflow).
  const int64_t whole = count / ranks, rest = count % ranks;
  auto at = [&](int r) { return whole * r + rest * r / ranks; };
  return {at(rank), at(rank + 1)};
}

std::vector<ShardedStep> shardedSteps(int64_t count, int64_t from, int64_t stepSamples, int rank, int ranks) {
  assert(stepSamples >= 1 && from >= 0);
  std::vector<ShardedStep> steps;
  for (int64_t begin = from; begin < count; begin += stepSamples) {
    const int64_t samples = std::min(stepSamples, count - begin);
    const Share share = shareOf(samples, rank, ranks);
    steps.push_back({begin, samples, {begin + share.first, begin + share.end}});
  }
  return steps;
}

} // namespace netc::data
