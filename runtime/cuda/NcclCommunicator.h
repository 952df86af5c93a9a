// NcclCommunicator.h -- NCCL as a Communicator (docs/architecture.md §Where CUDA plugs in): the ranks of
// a GPU job, one GPU each, reduce the gradients in device memory. NCCL is
// loaded on demand (libnccl.so.2) like cuBLAS and cuDNN, so netc starts
// without it. The communicator is nonblocking: every wait polls NCCL's
// asynchronous error state and gives up after --comm-timeout, when it
// aborts the communicator (ending its kernels) and fails, naming the
// operation and the step; from then on every call returns that error.
//
// Two kinds of operation:
//  - device collectives (allReduceOnDevice, join): the CUDA backend's step,
//    ordered by events between its compute stream and this communicator's
//    stream. They are stream-ordered, never waited for on the host, and so
//    are captured into the step's CUDA graph with everything else;
//  - a pipeline stage's sends and receives of device memory
//    (transferOnDevice), one group at a time, stream-ordered in the same way;
//  - the Communicator interface's host-memory operations (the agreement,
//    loss sums, evaluation): staged through pinned host and device memory
//    on the same stream, and waited for with the timeout.
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/comm/Launch.h"
#include "runtime/cuda/NcclCalls.h"

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

/// NCCL's entry points, loaded once per process (NcclCommunicator.cpp).
struct NcclLibrary;

/// A new NCCL unique id as text (NcclCalls.h), or why NCCL cannot make one.
Expected<std::string> newNcclJobId();

/// Registers "nccl" as a device transport (runtime/comm/OpenCommunicator.h).
void registerNcclTransport();

class NcclCommunicator final : public comm::Communicator {
public:
  /// Joins the `launch.size`-rank communicator of `id` as `launch.rank` on
  /// GPU `device`, waiting at most the timeout for the others.
  static Expected<std::unique_ptr<NcclCommunicator>> join(const comm::LaunchInfo &launch, const NcclId &id,
                                                          int device, const comm::CommOptions &options,
                                                          std::shared_ptr<comm::Communicator> bootstrap);
  ~NcclCommunicator() override;

  std::string_view kind() const override { return "nccl"; }
  int rank() const override { return launch_.rank; }
  int size() const override { return launch_.size; }
  int localRank() const override { return launch_.localRank; }
  int localSize() const override { return launch_.localSize; }
  /// Host memory: reduced before it returns (the request is already complete).
  Expected<int64_t> startAllReduce(void *data, int64_t count, comm::DataType type, comm::ReduceOp op,
                                   std::string_view what) override;
  Status wait(int64_t request) override;
  Status broadcast(void *data, int64_t bytes, int root, std::string_view what) override;
  Status allGather(const void *mine, int64_t bytes, void *all, std::string_view what) override;
  Status send(const void *data, int64_t bytes, int peer, std::string_view what) override;
  Status receive(void *data, int64_t bytes, int peer, std::string_view what) override;
  Status barrier(std::string_view what) override;
  /// ncclCommSplit (NCCL 2.18 or newer): the ranks of one color on their
  /// GPUs, with the host communicator the job started with (if any) split
  /// alike; its messages name the job's rank.
  Expected<std::shared_ptr<comm::Communicator>> split(int color, int key, std::string_view what) override;
  bool failed() const override { return !failed_.ok(); }

  /// The GPU it runs on.
  int device() const { return device_; }
  int version() const;
  /// Enqueues `collective` (an all-reduce) on `data`, the start of its
  /// buffer in device memory, after the work issued so far on `compute`.
  Status allReduceOnDevice(const NcclCollective &collective, float *data, cudaStream_t compute,
                           std::string_view what);
  /// Issues `transfers` as one group (ncclGroupStart/End: they progress
  /// together) after the work issued so far on `compute`, and makes
  /// `compute` wait for all of them: sent buffers may be written and
  /// received ones read after it. `what` names the group in messages.
  Status transferOnDevice(std::span<const DeviceTransfer> transfers, cudaStream_t compute,
                          std::string_view what);
  /// Makes `compute` wait for every device collective enqueued before.
  Status join(cudaStream_t compute);
  /// Waits on the host for `event` (recorded on a stream that may wait for
  /// device collectives): at most the timeout, failing on NCCL's errors.
  /// `also`: another communicator of this rank whose device operations the
  /// event may wait for too (a pipeline's stages and a stage's copies): its
  /// errors end the wait, and a timeout aborts both.
  Status waitFor(cudaEvent_t event, std::string_view what, NcclCommunicator *also = nullptr);
  /// Called before the communicator is aborted: ncclCommAbort waits until
  /// every CUDA graph that captured one of its collectives is destroyed, so
  /// the backend that owns such graphs destroys them here (null: none).
  void setBeforeAbort(std::function<void()> beforeAbort) { beforeAbort_ = std::move(beforeAbort); }
  /// Carries out an abort a failure asked for while a graph was being
  /// captured (aborting is not allowed during a capture); the caller calls
  /// it once the capture has ended.
  void abortIfPending();

private:
  NcclCommunicator(const comm::CommOptions &options) : Communicator(options) {}
  Status openStreams();
  /// Orders this communicator's stream after the work issued so far on
  /// `compute`, for the device operation `what` (named when a wait fails).
  Status afterCompute(cudaStream_t compute, std::string_view what);
  std::string who() const;
  Status check(int result, std::string_view call, std::string_view what);
  Status settle(std::string_view what);
  Status failWith(std::string message);
  Status stage(int64_t bytes);
  void abort();
  Status hostCollective(const void *in, int64_t inBytes, void *out, int64_t outBytes, std::string_view what,
                        const std::function<int(void *device)> &call);

  comm::LaunchInfo launch_;
  int jobRank_ = 0, jobSize_ = 1; // this rank in the job (a split communicator's launch_ is its own)
  int device_ = 0;
  const NcclLibrary *nccl_ = nullptr;
  void *comm_ = nullptr; // ncclComm_t
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr, hostDone_ = nullptr;
  void *deviceStaging_ = nullptr, *hostStaging_ = nullptr;
  int64_t stagingBytes_ = 0;
  std::vector<void *> retiredHostStaging_; // outgrown pinned blocks, freed at the end (cudaFreeHost waits)
  std::function<void()> beforeAbort_;
  bool abortPending_ = false;
  std::string lastDeviceWhat_; // the last device collective, named when a wait for it fails
  Status failed_;              // once set, every call returns it
  std::shared_ptr<comm::Communicator> bootstrap_;
  int64_t nextRequest_ = 0;
};

} // namespace netc::runtime::cuda
