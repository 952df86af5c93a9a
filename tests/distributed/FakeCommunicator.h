// FakeCommunicator.h -- a communicator for tests: rank `rank` of `size`,
// in one process, whose peers' contributions are scripted. An all-reduce
// with Max returns the scripted maximum; an all-gather copies this rank's
// bytes into its place and the scripted bytes into the others'; every other
// operation succeeds and moves nothing. Lets a test feed hostile peer data
// to the helpers built on the interface (allGatherMessages, agree).
#pragma once

#include "runtime/comm/Communicator.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace netc::comm::testing {

class FakeCommunicator final : public Communicator {
public:
  FakeCommunicator(int rank, int size) : Communicator({}), rank_(rank), size_(size) {}
  /// What the other ranks contribute to the next all-gather (one entry each,
  /// rank order, this rank's skipped) and the maximum an all-reduce returns.
  std::vector<std::string> peers;
  int64_t maximum = 0;

  std::string_view kind() const override { return "fake"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return rank_; }
  int localSize() const override { return size_; }
  Expected<int64_t> startAllReduce(void *data, int64_t count, DataType type, ReduceOp op,
                                   std::string_view) override {
    if (op == ReduceOp::Max && type == DataType::I64 && count >= 1)
      *static_cast<int64_t *>(data) = std::max(*static_cast<int64_t *>(data), maximum);
    return 0;
  }
  Status wait(int64_t) override { return Status::success(); }
  Status broadcast(void *, int64_t, int, std::string_view) override { return Status::success(); }
  Status allGather(const void *mine, int64_t bytes, void *all, std::string_view) override {
    auto *out = static_cast<char *>(all);
    size_t peer = 0;
    for (int r = 0; r < size_; ++r) {
      char *at = out + static_cast<size_t>(r) * static_cast<size_t>(bytes);
      if (r == rank_) {
        std::memcpy(at, mine, static_cast<size_t>(bytes));
        continue;
      }
      const std::string &theirs = peer < peers.size() ? peers[peer] : std::string();
      ++peer;
      std::memset(at, 0, static_cast<size_t>(bytes));
      std::memcpy(at, theirs.data(), std::min(theirs.size(), static_cast<size_t>(bytes)));
    }
    return Status::success();
  }
  Status send(const void *, int64_t, int, std::string_view) override { return Status::success(); }
  Status receive(void *, int64_t, int, std::string_view) override { return Status::success(); }
  Status barrier(std::string_view) override { return Status::success(); }

private:
  int rank_, size_;
};

/// An all-gather entry as allGatherMessages frames it: 8 bytes of length
/// (the text's, or a given one), then the text.
inline std::string framed(const std::string &text, std::optional<int64_t> length = std::nullopt) {
  std::string entry(8, '\0');
  const int64_t n = length.value_or(static_cast<int64_t>(text.size()));
  std::memcpy(entry.data(), &n, 8);
  return entry + text;
}

} // namespace netc::comm::testing
