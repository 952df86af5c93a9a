// StepCommunication.h -- the communication ops of a data-parallel plan on
// the CUDA backend, run with the communicator the backend is attached to.
// Through NCCL (NcclCommunicator.h) an all-reduce is enqueued on NCCL's
// stream after the compute stream's work so far, and the plan's wait makes
// the compute stream wait for them: stream-ordered, so a step holding them
// is captured whole when every all-reduce is joined inside it
// (NcclCalls.h). Through a host communicator (MPI) an all-reduce copies its
// range into host staging -- each reduced buffer a range of its own -- and
// starts reducing it, and the wait finishes every one started and copies
// them back: host waits, around which the step's graph is split.
//
// A pipeline stage's sends and receives (the Send and Receive ops) go to
// the pipeline's communicator: through NCCL, a group of them at a time
// (ncclTransferRun says which go together) on device memory; through a
// host communicator (ranks that share a GPU), a send copies the
// micro-batch's values to the host and starts sending them, finished by
// finishHostSends, and a receive waits for its values and copies them in.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/StageTransfers.h"
#include "runtime/cuda/NcclCalls.h"
#include "support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

class NcclCommunicator;

class StepCommunication {
public:
  /// Prepares the communication ops of `plan` (kept by reference): their
  /// NCCL form, their names for messages, and host staging for each buffer
  /// an all-reduce reads.
  Status prepare(const plan::Plan &plan);
  void release();

  /// The communicator the ops reduce over (null: none yet).
  void attach(comm::Communicator *communicator);
  /// The attached communicator when it is NCCL's, else null.
  NcclCommunicator *nccl() const { return nccl_; }
  /// The pipeline's communicator (a stage plan's sends and receives).
  void attachStages(comm::Communicator *stages);
  /// The pipeline's communicator when it is NCCL's, else null.
  NcclCommunicator *ncclStages() const { return ncclStages_; }

  /// Issues `transfers` through NCCL as one group after the work on
  /// `stream`, which then waits for them; `address(buffer, slot)` is where
  /// a buffer of an activation slot lies.
  Status transferGroup(std::span<const NcclTransfer> transfers,
                       const std::function<float *(int buffer, int slot)> &address, cudaStream_t stream);
  /// Waits for every send started through the host since the last time.
  Status finishHostSends() { return hostTransfers_.finish(); }
  /// Lets the host sends started go on (MPI moves data only inside its calls).
  void progressHostSends() { hostTransfers_.progress(); }
  bool hostSendsPending() const { return hostTransfers_.pending(); }

  /// Whether ops [first, last) may be captured as one graph although they
  /// communicate: through NCCL, with every all-reduce joined inside them.
  bool capturable(size_t first, size_t last) const;

  /// Runs communication op `index` of the plan on the buffers at `buffers`
  /// (device addresses by buffer index), after the work issued on `stream`;
  /// counts NCCL's kernels in `launches`. A send or receive (through a host
  /// communicator) moves `batch` samples.
  Status run(size_t index, void *const *buffers, int64_t batch, cudaStream_t stream, int64_t &launches);

private:
  Status throughHost(size_t index, void *const *buffers, cudaStream_t stream);
  Status transferThroughHost(size_t index, void *const *buffers, int64_t batch, cudaStream_t stream);

  const plan::Plan *plan_ = nullptr;
  comm::Communicator *communicator_ = nullptr;
  NcclCommunicator *nccl_ = nullptr;
  std::vector<NcclCollective> collectives_; // the plan's, in order
  std::vector<int> collectiveOf_;           // by op index (-1: none)
  std::vector<std::string> names_;          // by op index: "all-reduce of gradient bucket 0"
  std::vector<float> staging_;              // host copies of the ranges being all-reduced
  std::vector<int64_t> stagingBase_;        // by buffer: where its range starts in staging_ (-1: none)
  struct Started {
    int64_t request;
    float *device, *host;
    int64_t count;
    bool mean;
  };
  std::vector<Started> started_;
  NcclCommunicator *ncclStages_ = nullptr;
  std::vector<DeviceTransfer> group_;  // transferGroup's, reused
  comm::StageTransfers hostTransfers_; // through a host communicator
};

} // namespace netc::runtime::cuda
