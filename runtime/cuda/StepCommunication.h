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
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cuda/NcclCalls.h"
#include "support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
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

  /// Whether ops [first, last) may be captured as one graph although they
  /// communicate: through NCCL, with every all-reduce joined inside them.
  bool capturable(size_t first, size_t last) const;

  /// Runs communication op `index` of the plan on the buffers at `buffers`
  /// (device addresses by buffer index), after the work issued on `stream`;
  /// counts NCCL's kernels in `launches`.
  Status run(size_t index, void *const *buffers, cudaStream_t stream, int64_t &launches);

private:
  Status throughHost(size_t index, void *const *buffers, cudaStream_t stream);

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
};

} // namespace netc::runtime::cuda
