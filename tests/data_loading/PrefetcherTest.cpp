// PrefetcherTest.cpp -- the background batch gatherer: exactly the requested
// rows in the requested order, a partial last batch with its real size,
// reuse of recycled buffers, and a clean stop when destroyed early.
#include "runtime/data/Prefetcher.h"
#include "runtime/data/Shuffle.h"

#include <gtest/gtest.h>

namespace netc::data {
namespace {

/// count samples of 3 features: sample i is {10i, 10i+1, 10i+2}, label i.
Dataset numbered(int64_t count) {
  Dataset data;
  data.origin = "numbered";
  data.count = count;
  data.featureCount = 3;
  data.sampleShape = {3};
  for (int64_t i = 0; i < count; ++i) {
    for (int f = 0; f < 3; ++f)
      data.features.push_back(static_cast<float>(10 * i + f));
    data.labels.push_back(static_cast<float>(i));
  }
  computeLabelInfo(data);
  return data;
}

void expectRows(const Batch &batch, const std::vector<int64_t> &order) {
  ASSERT_EQ(batch.features.size(), static_cast<size_t>(batch.size * 3));
  ASSERT_EQ(batch.labels.size(), static_cast<size_t>(batch.size));
  for (int64_t r = 0; r < batch.size; ++r) {
    int64_t index = order[static_cast<size_t>(batch.first + r)];
    EXPECT_EQ(batch.labels[r], static_cast<float>(index));
    for (int f = 0; f < 3; ++f)
      EXPECT_EQ(batch.features[static_cast<size_t>(r * 3 + f)], static_cast<float>(10 * index + f));
  }
}

TEST(PrefetcherTest, DeliversTheRequestedRowsInOrder) {
  Dataset data = numbered(10);
  std::vector<int64_t> order = {9, 3, 0, 7, 7, 2, 5, 1, 8, 4};
  BatchPrefetcher prefetcher(data, order, 4);
  EXPECT_EQ(prefetcher.batchCount(), 3);
  std::vector<int64_t> sizes;
  while (std::optional<Batch> batch = prefetcher.next()) {
    EXPECT_EQ(batch->first, static_cast<int64_t>(sizes.size()) * 4);
    expectRows(*batch, order);
    sizes.push_back(batch->size);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_FALSE(prefetcher.next()); // stays finished
}

TEST(PrefetcherTest, RecycledBuffersAndAShuffledEpoch) {
  Dataset data = numbered(1000);
  EpochShuffler shuffler(data.count, 17);
  for (int epoch = 0; epoch < 3; ++epoch, shuffler.nextEpoch()) {
    std::vector<int64_t> order(shuffler.order().begin(), shuffler.order().end());
    BatchPrefetcher prefetcher(data, order, 64, 2);
    int64_t seen = 0;
    while (std::optional<Batch> batch = prefetcher.next()) {
      EXPECT_EQ(batch->first, seen);
      expectRows(*batch, order);
      seen += batch->size;
      prefetcher.recycle(std::move(*batch));
    }
    EXPECT_EQ(seen, 1000);
  }
}

TEST(PrefetcherTest, EmptyOrder) {
  Dataset data = numbered(3);
  BatchPrefetcher prefetcher(data, {}, 2);
  EXPECT_EQ(prefetcher.batchCount(), 0);
  EXPECT_FALSE(prefetcher.next());
}

TEST(PrefetcherTest, StopsCleanlyWhenDestroyedEarly) {
  Dataset data = numbered(5000);
  std::vector<int64_t> order = epochPermutation(data.count, 1, 0);
  for (int round = 0; round < 20; ++round) {
    BatchPrefetcher prefetcher(data, order, 1, 2);
    for (int k = 0; k < round; ++k) {
      std::optional<Batch> batch = prefetcher.next();
      ASSERT_TRUE(batch);
      expectRows(*batch, order);
    }
  } // the worker is blocked on a full queue (or still gathering) here
  BatchPrefetcher untouched(data, order, 7);
}

} // namespace
} // namespace netc::data
