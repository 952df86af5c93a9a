// Sharding.h -- how the ranks of a data-parallel run split the data. Every
// rank walks the same global shuffled order of an epoch, step by step: a
// step is the next `stepSamples` positions (per-rank batch × accumulation ×
// ranks; the epoch's last step may be shorter), and rank r takes the r-th of
// R consecutive shares of it, whose sizes differ by at most one (a share may
// be empty when a step has fewer samples than ranks). Together the shares
// are exactly the epoch, and a step covers the same samples at any rank
// count, so R ranks of batch B train on what one rank of batch R·B does.
// The same split shares the test set out for evaluation.
#pragma once

#include <cstdint>
#include <vector>

namespace netc::data {

/// Positions [first, end).
struct Share {
  int64_t first = 0, end = 0;
  int64_t size() const { return end - first; }
  bool operator==(const Share &) const = default;
};

/// Rank `rank`'s share of `count` positions split among `ranks`.
Share shareOf(int64_t count, int rank, int ranks);

/// One step of an epoch and this rank's share of it (absolute positions).
struct ShardedStep {
  int64_t begin = 0, samples = 0;
  Share mine;
  bool operator==(const ShardedStep &) const = default;
};

/// The steps of an epoch of `count` samples from position `from` on, of
/// `stepSamples` samples each (the last possibly fewer), with rank `rank`'s
/// share of each.
std::vector<ShardedStep> shardedSteps(int64_t count, int64_t from, int64_t stepSamples, int rank, int ranks);

} // namespace netc::data
