// Prefetcher.h -- prepares batches on a background thread while the trainer
// computes: for a given order of sample indices it gathers each batch's rows
// into one contiguous [size × featureCount] buffer plus its labels, keeping at
// most `depth` ready batches queued. Batches are of one size (the last may be
// partial and says its real size) or of the sizes given. Destroying the prefetcher stops and joins the
// thread, also mid-epoch.
#pragma once

#include "runtime/data/Dataset.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace netc::data {

/// One batch of gathered samples.
struct Batch {
  /// Samples in this batch (batchSize, or fewer for the last one).
  int64_t size = 0;
  /// Position of its first sample in the prefetcher's order.
  int64_t first = 0;
  /// Row-major size × featureCount.
  std::vector<float> features;
  /// size labels.
  std::vector<float> labels;
};

/// Gathers batches of `data` in a given order on a background thread.
class BatchPrefetcher {
public:
  /// Starts the thread. `data` must outlive the prefetcher and must not
  /// change while it runs; every index in `order` must lie in
  /// [0, data.count); batchSize >= 1, depth >= 1.
  BatchPrefetcher(const Dataset &data, std::vector<int64_t> order, int64_t batchSize, int depth = 2);
  /// Batches of the given sizes (each >= 1, summing to the order's length)
  /// instead of equal ones: a rank's micro-batches of a data-parallel epoch.
  BatchPrefetcher(const Dataset &data, std::vector<int64_t> order, std::vector<int64_t> sizes, int depth = 2);
  /// Stops the thread (whether or not every batch was taken) and joins it.
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher &) = delete;
  BatchPrefetcher &operator=(const BatchPrefetcher &) = delete;

  /// The next batch in order (waits for it), or nullopt after the last one.
  std::optional<Batch> next();
  /// Hands a used batch back so that its buffers are reused (optional).
  void recycle(Batch batch);
  /// The number of batches the order makes.
  int64_t batchCount() const;

private:
  void start();
  void produce();

  const Dataset &data_;
  const std::vector<int64_t> order_;
  const std::vector<int64_t> sizes_; // of each batch, in order
  const size_t depth_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;  // guarded by mutex_
  std::vector<Batch> spare_; // guarded by mutex_
  bool stopping_ = false;    // guarded by mutex_
  bool finished_ = false;    // guarded by mutex_
  std::thread worker_;       // started last, in the constructor body
};

} // namespace netc::data
