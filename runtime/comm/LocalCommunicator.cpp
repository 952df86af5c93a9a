// LocalCommunicator.cpp -- one rank (LocalCommunicator.h). Sending to or
// receiving from a peer is a bug in the caller: there is none.
#include "runtime/comm/LocalCommunicator.h"

#include <fmt/format.h>

#include <cstring>

namespace netc::comm {

namespace {

class LocalCommunicator final : public Communicator {
public:
  explicit LocalCommunicator(const CommOptions &options) : Communicator(options) {}
  std::string_view kind() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  Expected<int64_t> startAllReduce(void *, int64_t, DataType, ReduceOp, std::string_view) override {
    return 0;
  }
  Status wait(int64_t) override { return Status::success(); }
  Status broadcast(void *, int64_t, int root, std::string_view what) override {
    return checkPeer(root, what);
  }
  Status allGather(const void *mine, int64_t bytes, void *all, std::string_view) override {
    std::memmove(all, mine, static_cast<size_t>(bytes));
    return Status::success();
  }
  Status send(const void *, int64_t, int peer, std::string_view what) override { return noPeer(peer, what); }
  Status receive(void *, int64_t, int peer, std::string_view what) override { return noPeer(peer, what); }
  Status barrier(std::string_view) override { return Status::success(); }
  Expected<std::shared_ptr<Communicator>> split(int, int, std::string_view) override {
    return std::shared_ptr<Communicator>(std::make_shared<LocalCommunicator>(options()));
  }

private:
  static Status checkPeer(int peer, std::string_view what) {
    return peer == 0 ? Status::success() : noPeer(peer, what);
  }
  static Status noPeer(int peer, std::string_view what) {
    return fail(fmt::format("the {} names rank {}, but this run is one process", what, peer));
  }
};

} // namespace

std::unique_ptr<Communicator> makeLocalCommunicator(const CommOptions &options) {
  return std::make_unique<LocalCommunicator>(options);
}

} // namespace netc::comm
