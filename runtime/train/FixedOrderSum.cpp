// FixedOrderSum.cpp -- the fixed tree of --deterministic (FixedOrderSum.h).
#include "runtime/train/FixedOrderSum.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace netc::train {

void addPairwise(std::vector<std::span<float>> leaves) {
  assert(!leaves.empty() && (leaves.size() & (leaves.size() - 1)) == 0);
  for (size_t width = leaves.size(); width > 1; width /= 2)
    for (size_t i = 0; i < width / 2; ++i) {
      std::span<float> left = leaves[2 * i], right = leaves[2 * i + 1];
      for (size_t k = 0; k < left.size(); ++k)
        left[k] += right[k];
      leaves[i] = left;
    }
}

FixedOrderSum::FixedOrderSum(int64_t elements, int chunks, int rank, int ranks)
    : elements_(elements), ranks_(ranks), first_(chunks / ranks * rank), end_(chunks / ranks * (rank + 1)) {
  assert(chunks % ranks == 0);
  leaves_.assign(static_cast<size_t>(end_ - first_), std::vector<float>(static_cast<size_t>(elements), 0.0f));
  roots_.resize(static_cast<size_t>(elements * ranks));
}

std::span<float> FixedOrderSum::leaf(int chunk) {
  assert(chunk >= first_ && chunk < end_);
  return leaves_[static_cast<size_t>(chunk - first_)];
}

void FixedOrderSum::reset() {
  for (std::vector<float> &l : leaves_)
    std::fill(l.begin(), l.end(), 0.0f);
}

Status FixedOrderSum::sum(comm::Communicator *comm, std::span<float> out) {
  assert(static_cast<int64_t>(out.size()) == elements_);
  std::vector<std::span<float>> mine(leaves_.begin(), leaves_.end());
  addPairwise(mine);
  if (ranks_ == 1) {
    std::memcpy(out.data(), leaves_[0].data(), out.size_bytes());
    return Status::success();
  }
  if (Status s = comm->allGather(leaves_[0].data(), elements_ * int64_t(sizeof(float)), roots_.data(),
                                 "all-gather of the chunk gradients (--deterministic)");
      !s)
    return s;
  std::vector<std::span<float>> roots;
  for (int r = 0; r < ranks_; ++r)
    roots.emplace_back(roots_.data() + static_cast<size_t>(r) * static_cast<size_t>(elements_),
                       static_cast<size_t>(elements_));
  addPairwise(roots);
  std::memcpy(out.data(), roots_.data(), out.size_bytes());
  return Status::success();
}

} // namespace netc::train
