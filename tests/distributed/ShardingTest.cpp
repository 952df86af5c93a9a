// ShardingTest.cpp -- how ranks split an epoch (runtime/data/Sharding.h):
// shares differ by at most one sample, the shares of every step are exactly
// the step, the steps exactly the epoch (from any starting position), and a
// step covers the same samples at any rank count.
#include "runtime/data/Sharding.h"

#include <gtest/gtest.h>

namespace netc::data {
namespace {

TEST(Sharding, SharesAreConsecutiveAndBalanced) {
  for (int64_t count : {0, 1, 2, 7, 64, 193, 1000})
    for (int ranks : {1, 2, 3, 4, 7}) {
      int64_t next = 0, smallest = count, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const Share s = shareOf(count, r, ranks);
        EXPECT_EQ(s.first, next) << count << " " << ranks << " " << r;
        next = s.end;
        smallest = std::min(smallest, s.size());
        largest = std::max(largest, s.size());
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1) << count << " over " << ranks;
    }
  EXPECT_EQ(shareOf(1, 0, 2), (Share{0, 0})); // a step of one sample: rank 0's share is empty
  EXPECT_EQ(shareOf(1, 1, 2), (Share{0, 1}));
  // No overflow for huge counts.
  EXPECT_EQ(shareOf(int64_t{1} << 62, 3, 4).end, int64_t{1} << 62);
}

TEST(Sharding, TheStepsOfEveryRankAreExactlyTheEpoch) {
  for (int64_t count : {1, 63, 64, 65, 193, 200, 500})
    for (int64_t perRank : {1, 4, 32})
      for (int ranks : {1, 2, 3, 4})
        for (int64_t from : {int64_t{0}, perRank * ranks}) {
          if (from >= count)
            continue;
          std::vector<int> seen(static_cast<size_t>(count), 0);
          std::vector<std::vector<ShardedStep>> steps;
          for (int r = 0; r < ranks; ++r)
            steps.push_back(shardedSteps(count, from, perRank * ranks, r, ranks));
          for (int r = 0; r < ranks; ++r) {
            ASSERT_EQ(steps[size_t(r)].size(), steps[0].size()) << "every rank takes part in every step";
            for (size_t k = 0; k < steps[size_t(r)].size(); ++k) {
              const ShardedStep &s = steps[size_t(r)][k];
              EXPECT_EQ(s.begin, steps[0][k].begin);
              EXPECT_EQ(s.samples, steps[0][k].samples);
              EXPECT_GE(s.mine.first, s.begin);
              EXPECT_LE(s.mine.end, s.begin + s.samples);
              for (int64_t p = s.mine.first; p < s.mine.end; ++p)
                ++seen[size_t(p)];
            }
          }
          for (int64_t p = 0; p < count; ++p)
            EXPECT_EQ(seen[size_t(p)], p < from ? 0 : 1)
                << "position " << p << " of " << count << ", " << ranks << " ranks of " << perRank << " from "
                << from;
        }
}

TEST(Sharding, AStepCoversTheSameSamplesAtAnyRankCount) {
  // 2 ranks of 32 and 1 rank of 64: the same steps of the global order.
  const auto one = shardedSteps(200, 0, 64, 0, 1);
  const auto two = shardedSteps(200, 0, 64, 1, 2);
  ASSERT_EQ(one.size(), 4u);
  ASSERT_EQ(two.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(one[k].begin, two[k].begin);
    EXPECT_EQ(one[k].samples, two[k].samples);
  }
  EXPECT_EQ(two[3].samples, 8);
  EXPECT_EQ(two[3].mine, (Share{196, 200}));
}

} // namespace
} // namespace netc::data
