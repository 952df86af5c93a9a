// FixedOrderSumTest.cpp -- the fixed tree of --deterministic
// (runtime/train/FixedOrderSum.h): the same chunk gradients give the same
// bits whether one rank holds all of them or 2, 4 or 8 ranks hold a share
// each -- while a plain sum in another order does not -- and short steps
// (leaves past the last chunk) add zeros exactly.
#include "runtime/train/FixedOrderSum.h"
#include "FakeCommunicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace netc::train {
namespace {

/// `chunks` leaves of `n` floats over many magnitudes (rounding matters).
std::vector<std::vector<float>> randomLeaves(int chunks, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 10);
  std::vector<std::vector<float>> leaves(static_cast<size_t>(chunks), std::vector<float>(n));
  for (auto &leaf : leaves)
    for (float &v : leaf)
      v = std::ldexp(mantissa(rng), exponent(rng));
  return leaves;
}

/// The sum as `ranks` ranks compute it: each rank's FixedOrderSum, with the
/// others' subtree sums delivered by a fake all-gather; returns rank 0's.
std::vector<float> sumOver(const std::vector<std::vector<float>> &leaves, int ranks) {
  const int chunks = static_cast<int>(leaves.size());
  const size_t n = leaves[0].size();
  std::vector<std::vector<float>> roots;
  for (int r = 0; r < ranks; ++r) {
    FixedOrderSum part(static_cast<int64_t>(n), chunks, r, ranks);
    for (int j = part.first(); j < part.end(); ++j)
      std::memcpy(part.leaf(j).data(), leaves[size_t(j)].data(), n * sizeof(float));
    std::vector<std::span<float>> mine;
    for (int j = part.first(); j < part.end(); ++j)
      mine.push_back(part.leaf(j));
    addPairwise(mine);
    roots.emplace_back(part.leaf(part.first()).begin(), part.leaf(part.first()).end());
  }
  FixedOrderSum rank0(static_cast<int64_t>(n), chunks, 0, ranks);
  for (int j = rank0.first(); j < rank0.end(); ++j)
    std::memcpy(rank0.leaf(j).data(), leaves[size_t(j)].data(), n * sizeof(float));
  comm::testing::FakeCommunicator fake(0, ranks);
  for (int r = 1; r < ranks; ++r)
    fake.peers.emplace_back(reinterpret_cast<const char *>(roots[size_t(r)].data()), n * sizeof(float));
  std::vector<float> out(n);
  EXPECT_TRUE(rank0.sum(ranks > 1 ? &fake : nullptr, out).ok());
  return out;
}

TEST(FixedOrderSum, TheSameBitsOnEveryRankCount) {
  const auto leaves = randomLeaves(8, 1000, 3);
  const std::vector<float> one = sumOver(leaves, 1);
  for (int ranks : {2, 4, 8})
    EXPECT_EQ(sumOver(leaves, ranks), one) << ranks << " ranks";
  // A sequential sum rounds differently: the order is what makes it exact.
  std::vector<float> sequential(leaves[0]);
  for (size_t j = 1; j < leaves.size(); ++j)
    for (size_t k = 0; k < sequential.size(); ++k)
      sequential[k] += leaves[j][k];
  EXPECT_NE(sequential, one);
}

TEST(FixedOrderSum, PairwiseIsABalancedTree) {
  std::vector<float> a = {1e8f}, b = {1}, c = {-1e8f}, d = {1};
  addPairwise({a, b, c, d});
  // ((1e8 + 1) + (-1e8 + 1)): each pair rounds to ±1e8 first.
  EXPECT_EQ(a[0], (1e8f + 1.0f) + (-1e8f + 1.0f));
}

TEST(FixedOrderSum, ZeroLeavesAddExactly) {
  auto leaves = randomLeaves(4, 100, 9);
  std::vector<std::vector<float>> padded = leaves;
  padded.resize(8, std::vector<float>(100, 0.0f)); // a short step: 4 of 8 chunks
  const std::vector<float> four = sumOver(leaves, 1);
  EXPECT_EQ(sumOver(padded, 1), four);
  EXPECT_EQ(sumOver(padded, 8), four); // ranks 4-7 hold only zeros
}

} // namespace
} // namespace netc::train
