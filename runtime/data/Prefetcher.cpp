// Prefetcher.cpp -- the background batch gatherer (see Prefetcher.h). One
// mutex guards the queue of ready batches, the spare buffers and the two
// flags; one condition variable signals every change in either direction.
// The worker gathers a batch without holding the lock: it only reads the
// Dataset (immutable while the prefetcher lives) and its own order, and the
// batch it fills is not shared until it is pushed under the lock.
#include "runtime/data/Prefetcher.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace netc::data {

namespace {

std::vector<int64_t> equalBatches(int64_t total, int64_t batchSize) {
  assert(batchSize >= 1);
  std::vector<int64_t> sizes;
  for (int64_t first = 0; first < total; first += batchSize)
    sizes.push_back(std::min(batchSize, total - first));
  return sizes;
}

} // namespace

BatchPrefetcher::BatchPrefetcher(const Dataset &data, std::vector<int64_t> order, int64_t batchSize,
                                 int depth)
    : data_(data), order_(std::move(order)), // order_ is declared before sizes_
      sizes_(equalBatches(static_cast<int64_t>(order_.size()), batchSize)),
      depth_(static_cast<size_t>(std::max(depth, 1))) {
  start();
}

BatchPrefetcher::BatchPrefetcher(const Dataset &data, std::vector<int64_t> order, std::vector<int64_t> sizes,
                                 int depth)
    : data_(data), order_(std::move(order)), sizes_(std::move(sizes)),
      depth_(static_cast<size_t>(std::max(depth, 1))) {
  start();
}

void BatchPrefetcher::start() {
  assert(std::all_of(order_.begin(), order_.end(), [&](int64_t i) { return i >= 0 && i < data_.count; }));
  assert(std::all_of(sizes_.begin(), sizes_.end(), [](int64_t n) { return n >= 1; }));
  assert(std::accumulate(sizes_.begin(), sizes_.end(), int64_t{0}) == static_cast<int64_t>(order_.size()));
  worker_ = std::thread([this] { produce(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable())
    worker_.join();
}

int64_t BatchPrefetcher::batchCount() const {
  return static_cast<int64_t>(sizes_.size());
}

void BatchPrefetcher::produce() {
  const int64_t features = data_.featureCount;
  int64_t first = 0;
  for (const int64_t size : sizes_) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < depth_; });
      if (stopping_)
        return;
      if (!spare_.empty()) {
        batch = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    batch.size = size;
    batch.first = first;
    batch.features.resize(static_cast<size_t>(size * features));
    batch.labels.resize(static_cast<size_t>(size));
    float *dst = batch.features.data();
    for (int64_t r = 0; r < size; ++r) {
      const int64_t index = order_[static_cast<size_t>(first + r)];
      std::span<const float> row = data_.row(index);
      dst = std::copy(row.begin(), row.end(), dst);
      batch.labels[static_cast<size_t>(r)] = data_.labels[static_cast<size_t>(index)];
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_)
        return;
      ready_.push_back(std::move(batch));
    }
    changed_.notify_all();
    first += size;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

std::optional<Batch> BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (ready_.empty())
    return std::nullopt;
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return batch;
}

void BatchPrefetcher::recycle(Batch batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.size() <= depth_)
      spare_.push_back(std::move(batch));
  }
}

} // namespace netc::data
