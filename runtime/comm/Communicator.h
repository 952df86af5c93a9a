// Communicator.h -- the one interface every parallel scheme moves data
// through (docs/architecture.md §Data parallelism): ranks, an in-place all-reduce that starts at once
// and completes at a wait, broadcast, point-to-point send and receive, and a
// barrier. Implementations: "local" (one process, LocalCommunicator.h) and
// "mpi" (a plugin library loaded only when more than one rank is asked for,
// runtime/comm/mpi); NCCL joins them for GPU tensors. Every wait has a
// timeout (CommOptions::timeoutSeconds, `--comm-timeout`); a failed wait is
// an error naming the operation, the step and the peer rank that did not
// answer, and the communicator stays failed afterwards (every later call
// returns the same error at once). Operations are named by the caller with a
// short text ("all-reduce of gradient bucket 0") that must stay valid until
// the operation completes; it is only formatted into a message on failure.
#pragma once

#include "support/Status.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace netc::comm {

enum class DataType { F32, F64, I64, U8 };
/// Bytes per element of `type`.
size_t dataTypeSize(DataType type);

enum class ReduceOp { Sum, Max };

/// How a communicator behaves; the same on every rank.
struct CommOptions {
  /// Longest wait for any operation before the peers are asked which of them
  /// is missing (`--comm-timeout`).
  double timeoutSeconds = 60;
};

/// The largest message the helpers below accept from a peer (a fingerprint,
/// a verdict): anything longer is refused, not allocated.
inline constexpr int64_t kMaxMessageBytes = int64_t{1} << 20;

class Communicator {
public:
  virtual ~Communicator() = default;
  /// "local", "mpi", ...
  virtual std::string_view kind() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's index among the ranks of its machine, and their number.
  virtual int localRank() const = 0;
  virtual int localSize() const = 0;

  /// Starts reducing `count` elements at `data` over every rank, in place;
  /// `data` must not be touched until wait(request) returns. Returns the
  /// request to wait for.
  virtual Expected<int64_t> startAllReduce(void *data, int64_t count, DataType type, ReduceOp op,
                                           std::string_view what) = 0;
  /// Waits (at most the timeout) for a started all-reduce, send or receive.
  virtual Status wait(int64_t request) = 0;
  /// Lets started all-reduces advance without waiting for them: a transport
  /// that moves data only inside its own calls (MPI over shared memory) is
  /// given one between the ops of a step, so that an all-reduce started after
  /// one op goes on while the next ones compute. No-op by default.
  virtual void progress() {}
  /// Copies `bytes` bytes at `data` from rank `root` to every rank.
  virtual Status broadcast(void *data, int64_t bytes, int root, std::string_view what) = 0;
  /// Gathers `bytes` bytes from every rank into `all` (size() × bytes, rank
  /// order) on every rank; `bytes` must be the same everywhere.
  virtual Status allGather(const void *mine, int64_t bytes, void *all, std::string_view what) = 0;
  /// Sends `bytes` bytes to rank `peer`; messages between two ranks arrive in order.
  virtual Status send(const void *data, int64_t bytes, int peer, std::string_view what) = 0;
  /// Receives exactly `bytes` bytes from rank `peer`.
  virtual Status receive(void *data, int64_t bytes, int peer, std::string_view what) = 0;
  /// Starts sending `bytes` bytes at `data` to rank `peer` (pipeline
  /// stages); `data` must not change until wait(request) returns. Messages
  /// from one rank to another arrive in the order they were started. By
  /// default refused: a communicator without non-blocking transfers.
  virtual Expected<int64_t> startSend(const void *data, int64_t bytes, int peer, std::string_view what);
  /// Starts receiving exactly `bytes` bytes from rank `peer` into `data`,
  /// complete once wait(request) returns.
  virtual Expected<int64_t> startReceive(void *data, int64_t bytes, int peer, std::string_view what);
  /// Returns once every rank has called it.
  virtual Status barrier(std::string_view what) = 0;
  /// A communicator of the ranks that give the same `color`, ranked by
  /// `key` (then by rank): a pipeline's stages, or the replicas of one
  /// stage. Every rank must call it. Its messages name the ranks by their
  /// place in this communicator's job (rank 3 of 4, not 1 of 2). By default
  /// refused: a communicator that cannot be split.
  virtual Expected<std::shared_ptr<Communicator>> split(int color, int key, std::string_view what);
  /// Ends this rank's part in the job once every rank has called it; no
  /// other call may follow. A transport may shut down here (MPI finalizes,
  /// and later calls fail), so that a rank with more to do alone does it
  /// while the others exit instead of polling in their shutdown (netc
  /// calibrate's rank 0). By default a barrier.
  virtual Status finish(std::string_view what) { return barrier(what); }

  /// Whether an operation failed (a wait timed out, a peer died): the
  /// communicator stays failed, and the job has lost a rank.
  virtual bool failed() const { return false; }

  /// Where the run stands, named in messages: training step `step` (1-based;
  /// 0: before the first) of epoch `epoch` (1-based).
  void setPosition(int64_t step, int64_t epoch) {
    step_ = step;
    epoch_ = epoch;
  }
  /// "at step 120 (epoch 3)", or "before the first training step".
  std::string position() const;
  int64_t step() const { return step_; }
  int64_t epoch() const { return epoch_; }
  /// What each rank of the job does, by its rank in the job ("stage 1"),
  /// named next to it in messages ("rank 1 (stage 1) did not answer");
  /// empty: nothing more than its number. A split communicator keeps them.
  void setRankRoles(std::vector<std::string> roles) { roles_ = std::move(roles); }
  const std::vector<std::string> &rankRoles() const { return roles_; }
  const CommOptions &options() const { return options_; }

  /// start + wait on a span.
  template <class T> Status allReduce(std::span<T> values, ReduceOp op, std::string_view what) {
    auto request =
        startAllReduce(values.data(), static_cast<int64_t>(values.size()), dataTypeOf<T>(), op, what);
    if (!request)
      return request.error();
    return wait(*request);
  }

protected:
  explicit Communicator(CommOptions options) : options_(options) {}

private:
  template <class T> static constexpr DataType dataTypeOf() {
    if constexpr (std::is_same_v<T, float>)
      return DataType::F32;
    else if constexpr (std::is_same_v<T, double>)
      return DataType::F64;
    else if constexpr (std::is_same_v<T, int64_t>)
      return DataType::I64;
    else {
      static_assert(std::is_same_v<T, uint8_t>, "all-reduce of float, double, int64_t or uint8_t");
      return DataType::U8;
    }
  }

  CommOptions options_;
  int64_t step_ = 0, epoch_ = 0;
  std::vector<std::string> roles_;
};

/// Every rank's `text`, in rank order, on every rank (the longest length by
/// an all-reduce, then the texts padded to it by an all-gather). A text
/// longer than `maxBytes` is refused on every rank, naming the longest.
Expected<std::vector<std::string>> allGatherMessages(Communicator &comm, std::string_view text,
                                                     std::string_view what,
                                                     int64_t maxBytes = kMaxMessageBytes);

/// "rank 1 of 4" (the prefix of every message that names a rank).
std::string rankName(int rank, int size);

} // namespace netc::comm
