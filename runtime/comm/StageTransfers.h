// StageTransfers.h -- a pipeline stage's sends and receives through a host
// communicator, as a backend makes them (the CPU backend, and the CUDA
// backend where the pipeline's ranks share a GPU): a send starts from a
// copy of the micro-batch's values that the caller fills, and completes at
// finish() (before the stage's update, or when the trainer asks); a receive
// completes at once into a buffer the caller copies out of. The copies are
// kept between steps, so a step allocates nothing once the first has run.
#pragma once

#include "runtime/comm/Communicator.h"
#include "support/Status.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace netc::comm {

class StageTransfers {
public:
  /// The pipeline's communicator (null: none yet; a transfer is then a bug, said so).
  void attach(Communicator *stages) { stages_ = stages; }
  Communicator *communicator() const { return stages_; }

  /// Room for the next send's `count` values; fill it, then call send().
  std::span<float> nextSend(int64_t count);
  /// Starts sending what nextSend() returned to `peer`.
  Status send(int peer, std::string_view what);
  /// Receives `count` values from `peer`, complete when it returns; the
  /// span lives until the next receive.
  Expected<std::span<const float>> receive(int64_t count, int peer, std::string_view what);
  /// Waits for every send started since the last time.
  Status finish();
  /// Lets the started sends go on (MPI moves data only inside its calls).
  void progress() {
    if (stages_ && !pending_.empty())
      stages_->progress();
  }
  bool pending() const { return !pending_.empty(); }
  /// Forgets the sends started (a new plan).
  void clear() { pending_.clear(); }

private:
  Communicator *stages_ = nullptr;
  std::vector<int64_t> pending_;           // sends started since the last finish
  std::vector<std::vector<float>> copies_; // what they send, one per pending send
  std::vector<float> received_;            // the last receive's values
};

} // namespace netc::comm
