// NcclCommunicator.cpp -- NCCL loaded on demand, as a Communicator
// (NcclCommunicator.h).
#include "runtime/cuda/NcclCommunicator.h"
#include "runtime/comm/OpenCommunicator.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/SharedLibrary.h"

#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace netc::runtime::cuda {

static_assert(NCCL_UNIQUE_ID_BYTES == kNcclIdBytes);
static_assert(int(NcclType::Uint8) == ncclUint8 && int(NcclType::Int64) == ncclInt64 &&
              int(NcclType::Float32) == ncclFloat32 && int(NcclType::Float64) == ncclFloat64);
static_assert(int(NcclReduction::Sum) == ncclSum && int(NcclReduction::Max) == ncclMax &&
              int(NcclReduction::Avg) == ncclAvg);

/// NCCL's entry points, resolved once per process.
struct NcclLibrary {
  SharedLibrary library;
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRankConfig) initRankConfig = nullptr;
  decltype(&ncclCommGetAsyncError) asyncError = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclCommFinalize) finalize = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclGetErrorString) errorString = nullptr;
  decltype(&ncclGetLastError) lastError = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
  decltype(&ncclCommCount) count = nullptr;
  decltype(&ncclCommUserRank) userRank = nullptr;
  decltype(&ncclCommSplit) split = nullptr; // NCCL 2.18 or newer (pipeline stages)
  int version = 0;
};

namespace {

/// NCCL 2.14 brought nonblocking communicators, ncclCommInitRankConfig and ncclCommFinalize.
constexpr int kOldestNccl = 21400;

/// The host operations' staging at first: the loss and evaluation sums
/// fit; larger messages (the agreement, the initial broadcast of the
/// parameters, --deterministic's gradients) grow it, without waiting for the
/// device (stream-ordered device memory; outgrown pinned blocks are kept
/// until the end).
constexpr int64_t kInitialStagingBytes = int64_t{1} << 20;

/// The loaded library, or why it cannot be (kept for the life of the process).
Expected<const NcclLibrary *> loadNccl() {
  static std::mutex mutex;
  static std::unique_ptr<NcclLibrary> loaded;
  static std::string problem;
  std::lock_guard lock(mutex);
  if (loaded)
    return static_cast<const NcclLibrary *>(loaded.get());
  if (!problem.empty())
    return fail(problem);
  auto l = std::make_unique<NcclLibrary>();
  const std::string name = fmt::format("libnccl.so.{}", NCCL_MAJOR);
  if (!l->library.open(name)) {
    problem =
        fmt::format("cannot load NCCL ({}): {}. A job of several GPUs needs NCCL {}.x: install it "
                    "(NVIDIA's libnccl2 package, or the nvidia-nccl wheel) and put it on LD_LIBRARY_PATH",
                    name, l->library.why(), NCCL_MAJOR);
    return fail(problem);
  }
  auto resolve = [&](auto &function, const char *symbol) { l->library.resolve(function, symbol); };
  resolve(l->getVersion, "ncclGetVersion");
  resolve(l->getUniqueId, "ncclGetUniqueId");
  resolve(l->initRankConfig, "ncclCommInitRankConfig");
  resolve(l->asyncError, "ncclCommGetAsyncError");
  resolve(l->abort, "ncclCommAbort");
  resolve(l->finalize, "ncclCommFinalize");
  resolve(l->destroy, "ncclCommDestroy");
  resolve(l->errorString, "ncclGetErrorString");
  resolve(l->lastError, "ncclGetLastError");
  resolve(l->allReduce, "ncclAllReduce");
  resolve(l->broadcast, "ncclBroadcast");
  resolve(l->allGather, "ncclAllGather");
  resolve(l->send, "ncclSend");
  resolve(l->recv, "ncclRecv");
  resolve(l->groupStart, "ncclGroupStart");
  resolve(l->groupEnd, "ncclGroupEnd");
  resolve(l->count, "ncclCommCount");
  resolve(l->userRank, "ncclCommUserRank");
  l->library.resolveOptional(l->split, "ncclCommSplit");
  if (const std::string &missing = l->library.missing(); !missing.empty()) {
    problem = fmt::format("{} lacks {}: netc needs NCCL {}.{} or newer", name, missing, kOldestNccl / 10000,
                          kOldestNccl / 100 % 100);
    return fail(problem);
  }
  if (l->getVersion(&l->version) != ncclSuccess || l->version < kOldestNccl) {
    problem = fmt::format("{} is NCCL version code {}; netc needs {}.{} or newer", name, l->version,
                          kOldestNccl / 10000, kOldestNccl / 100 % 100);
    return fail(problem);
  }
  loaded = std::move(l);
  return static_cast<const NcclLibrary *>(loaded.get());
}

} // namespace

Expected<std::string> newNcclJobId() {
  auto nccl = loadNccl();
  if (!nccl)
    return nccl.error();
  ncclUniqueId id;
  if (ncclResult_t r = (*nccl)->getUniqueId(&id); r != ncclSuccess)
    return fail(fmt::format("ncclGetUniqueId failed: {}", (*nccl)->errorString(r)));
  NcclId bytes;
  std::memcpy(bytes.data(), id.internal, kNcclIdBytes);
  return formatNcclId(bytes);
}

void registerNcclTransport() {
  comm::DeviceTransport t;
  t.name = "nccl";
  t.newJobId = newNcclJobId;
  t.deviceCount = []() -> Expected<int> {
    int count = 0;
    if (Status s = cudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"); !s)
      return Error{s.message()};
    return count;
  };
  t.join =
      [](const comm::LaunchInfo &launch, const std::string &jobId, int device,
         const comm::CommOptions &options,
         std::shared_ptr<comm::Communicator> bootstrap) -> Expected<std::shared_ptr<comm::Communicator>> {
    auto id = parseNcclId(jobId, comm::kJobIdVariable);
    if (!id)
      return id.error();
    auto joined = NcclCommunicator::join(launch, *id, device, options, std::move(bootstrap));
    if (!joined)
      return joined.error();
    return std::shared_ptr<comm::Communicator>(std::move(*joined));
  };
  comm::registerDeviceTransport(std::move(t));
}

Expected<std::unique_ptr<NcclCommunicator>>
NcclCommunicator::join(const comm::LaunchInfo &launch, const NcclId &id, int device,
                       const comm::CommOptions &options, std::shared_ptr<comm::Communicator> bootstrap) {
  auto nccl = loadNccl();
  if (!nccl)
    return nccl.error();
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(options));
  c->launch_ = launch;
  c->device_ = device;
  c->nccl_ = *nccl;
  c->bootstrap_ = std::move(bootstrap);
  c->jobRank_ = launch.rank;
  c->jobSize_ = launch.size;
  const std::string who = comm::rankName(launch.rank, launch.size);
  if (Status s = cudaStatus(cudaSetDevice(device), fmt::format("{}: selecting cuda:{}", who, device)); !s)
    return Error{s.message()};
  if (Status s = c->openStreams(); !s)
    return Error{s.message()};
  ncclUniqueId uid;
  std::memcpy(uid.internal, id.data(), kNcclIdBytes);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // every wait is ours, bounded by the timeout
  ncclComm_t comm = nullptr;
  const std::string what = fmt::format("joining the NCCL communicator of {} GPUs", launch.size);
  const ncclResult_t started = c->nccl_->initRankConfig(&comm, launch.size, uid, launch.rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (comm)
      c->nccl_->abort(comm);
    return fail(fmt::format("{}: {} failed: {}", who, what, c->nccl_->errorString(started)));
  }
  c->comm_ = comm;
  if (Status s = c->settle(what); !s)
    return Error{s.message()}; // it names the rank
  // Staging for the host operations, allocated now: growing it later
  // (cudaFree, cudaMalloc) would wait for the device.
  if (Status s = c->stage(kInitialStagingBytes); !s)
    return Error{s.message()};
  return c;
}

Status NcclCommunicator::openStreams() {
  if (Status s = cudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      !s)
    return s;
  for (cudaEvent_t *event : {&ready_, &done_, &hostDone_})
    if (Status s = cudaStatus(cudaEventCreateWithFlags(event, cudaEventDisableTiming), "cudaEventCreate"); !s)
      return s;
  return Status::success();
}

std::string NcclCommunicator::who() const {
  std::string name = comm::rankName(jobRank_, jobSize_);
  if (const auto &roles = rankRoles(); jobRank_ >= 0 && static_cast<size_t>(jobRank_) < roles.size() &&
                                       !roles[static_cast<size_t>(jobRank_)].empty())
    name += fmt::format(" ({})", roles[static_cast<size_t>(jobRank_)]);
  return name;
}

Expected<std::shared_ptr<comm::Communicator>> NcclCommunicator::split(int color, int key,
                                                                      std::string_view what) {
  if (!failed_.ok())
    return Error{failed_.message()};
  if (!nccl_->split)
    return fail(
        fmt::format("{}: NCCL {}.{}.{} cannot split a communicator ({}): pipeline stages on GPUs need "
                    "NCCL 2.18 or newer (ncclCommSplit)",
                    who(), nccl_->version / 10000, nccl_->version / 100 % 100, nccl_->version % 100, what));
  // The host communicator the job started with (rank 0's id went through
  // it) splits alike, for the split communicator's own bootstrap.
  std::shared_ptr<comm::Communicator> host;
  if (bootstrap_) {
    auto part = bootstrap_->split(color, key, what);
    if (!part)
      return part.error();
    host = std::move(*part);
  }
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(options()));
  c->nccl_ = nccl_;
  c->device_ = device_;
  c->launch_ = launch_;
  c->jobRank_ = jobRank_;
  c->jobSize_ = jobSize_;
  c->bootstrap_ = std::move(host);
  c->setRankRoles(rankRoles());
  c->setPosition(step(), epoch());
  if (Status s = c->openStreams(); !s)
    return Error{fmt::format("{}: {}", who(), s.message())};
  ncclComm_t comm = nullptr;
  // The parent's configuration (nonblocking): settled below within the timeout.
  const ncclResult_t started = nccl_->split(static_cast<ncclComm_t>(comm_), color, key, &comm, nullptr);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (comm)
      nccl_->abort(comm);
    return fail(fmt::format("{}: ncclCommSplit for the {} {} failed: {}", who(), what, position(),
                            nccl_->errorString(started)));
  }
  c->comm_ = comm;
  if (Status s = c->settle(what); !s)
    return Error{s.message()};
  int rank = -1, size = 0;
  if (nccl_->userRank(comm, &rank) != ncclSuccess || nccl_->count(comm, &size) != ncclSuccess || rank < 0 ||
      rank >= size)
    return fail(fmt::format("{}: the {} gave no rank in a communicator of {} (NCCL)", who(), what, size));
  c->launch_.rank = rank;
  c->launch_.size = size;
  if (Status s = c->stage(kInitialStagingBytes); !s)
    return Error{s.message()};
  return std::shared_ptr<comm::Communicator>(std::move(c));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ && !failed_.ok()) // an abort left pending by a capture
    abort();
  if (comm_) {
    auto *comm = static_cast<ncclComm_t>(comm_);
    const ncclResult_t finalized = nccl_->finalize(comm);
    bool finished = finalized == ncclSuccess || finalized == ncclInProgress;
    if (finished) { // finalize is nonblocking: bounded like every other wait
      const auto start = std::chrono::steady_clock::now();
      for (ncclResult_t state = ncclInProgress; state == ncclInProgress;) {
        if (nccl_->asyncError(comm, &state) != ncclSuccess ||
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
                options().timeoutSeconds) {
          finished = false;
          break;
        }
        if (state == ncclInProgress)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        else
          finished = state == ncclSuccess;
      }
    }
    if (finished) {
      nccl_->destroy(comm);
      comm_ = nullptr;
    } else {
      abort();
    }
  }
  if (deviceStaging_)
    cudaFreeAsync(deviceStaging_, stream_);
  for (cudaEvent_t event : {ready_, done_, hostDone_})
    if (event)
      cudaEventDestroy(event);
  if (stream_)
    cudaStreamDestroy(stream_);
  retiredHostStaging_.push_back(hostStaging_);
  for (void *block : retiredHostStaging_)
    if (block)
      cudaFreeHost(block);
}

void NcclCommunicator::abort() {
  if (beforeAbort_)
    beforeAbort_();
  if (comm_)
    nccl_->abort(static_cast<ncclComm_t>(comm_));
  comm_ = nullptr;
  abortPending_ = false;
}

void NcclCommunicator::abortIfPending() {
  if (abortPending_)
    abort();
}

int NcclCommunicator::version() const {
  return nccl_->version;
}

Status NcclCommunicator::failWith(std::string message) {
  // Not while a graph is being captured (a stream of this communicator
  // joined the capture): the caller aborts once the capture has ended.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
    abortPending_ = comm_ != nullptr;
  else
    abort();
  failed_ = fail(fmt::format("{}: {}", who(), message));
  return failed_;
}

Status NcclCommunicator::check(int result, std::string_view call, std::string_view what) {
  const auto r = static_cast<ncclResult_t>(result);
  if (r == ncclSuccess || r == ncclInProgress)
    return Status::success();
  const char *detail = comm_ ? nccl_->lastError(static_cast<ncclComm_t>(comm_)) : nullptr;
  return failWith(fmt::format("{} for {} {} failed: {}{}{}", call, what, position(), nccl_->errorString(r),
                              detail && *detail ? ": " : "", detail ? detail : ""));
}

Status NcclCommunicator::settle(std::string_view what) {
  // A nonblocking communicator may still be setting up the last call.
  const auto start = std::chrono::steady_clock::now();
  for (int spin = 0;; ++spin) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = nccl_->asyncError(static_cast<ncclComm_t>(comm_), &state); r != ncclSuccess)
      state = r;
    if (state == ncclSuccess)
      return Status::success();
    if (state != ncclInProgress)
      return check(state, "NCCL", what);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        options().timeoutSeconds)
      return failWith(fmt::format("{} {} did not finish within --comm-timeout {:g} s: another rank has not "
                                  "joined, or stopped (NCCL was aborted)",
                                  what, position(), options().timeoutSeconds));
    if (spin > 100)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Status NcclCommunicator::waitFor(cudaEvent_t event, std::string_view what, NcclCommunicator *also) {
  if (!failed_.ok())
    return failed_;
  if (also && !also->failed_.ok())
    return also->failed_;
  auto asyncState = [](const NcclCommunicator &c) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = c.nccl_->asyncError(static_cast<ncclComm_t>(c.comm_), &state); r != ncclSuccess)
      state = r;
    return state;
  };
  const auto start = std::chrono::steady_clock::now();
  for (int spin = 0;; ++spin) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess)
      return Status::success();
    if (e != cudaErrorNotReady)
      return failWith(fmt::format("waiting for {} {}: {} ({})", what, position(), cudaGetErrorString(e),
                                  static_cast<int>(e)));
    for (NcclCommunicator *c : {this, also})
      if (c)
        if (ncclResult_t state = asyncState(*c); state != ncclSuccess && state != ncclInProgress)
          return c->check(state, "NCCL",
                          c->lastDeviceWhat_.empty() ? what : std::string_view(c->lastDeviceWhat_));
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        options().timeoutSeconds) {
      std::string waited(lastDeviceWhat_.empty() ? what : std::string_view(lastDeviceWhat_));
      if (also && !also->lastDeviceWhat_.empty())
        waited += fmt::format(" (or the {} before it)", also->lastDeviceWhat_);
      const std::string message = fmt::format(
          "{} {} did not complete within --comm-timeout {:g} s: another rank stopped or hangs (NCCL was "
          "aborted; the other ranks report their own side)",
          waited, position(), options().timeoutSeconds);
      if (also) // its kernels may be the ones waiting: they end too
        static_cast<void>(also->failWith(message));
      return failWith(message);
    }
    if (spin > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
}

Status NcclCommunicator::afterCompute(cudaStream_t compute, std::string_view what) {
  lastDeviceWhat_ = what;
  if (Status s = cudaStatus(cudaEventRecord(ready_, compute), fmt::format("ordering the {}", what)); !s)
    return s;
  return cudaStatus(cudaStreamWaitEvent(stream_, ready_, 0), fmt::format("ordering the {}", what));
}

Status NcclCommunicator::allReduceOnDevice(const NcclCollective &c, float *data, cudaStream_t compute,
                                           std::string_view what) {
  if (!failed_.ok())
    return failed_;
  if (Status s = afterCompute(compute, what); !s)
    return s;
  float *at = data + c.offset;
  if (Status s = check(
          nccl_->allReduce(at, at, static_cast<size_t>(c.count), static_cast<ncclDataType_t>(c.type),
                           static_cast<ncclRedOp_t>(c.reduction), static_cast<ncclComm_t>(comm_), stream_),
          "ncclAllReduce", what);
      !s)
    return s;
  return settle(what);
}

Status NcclCommunicator::transferOnDevice(std::span<const DeviceTransfer> transfers, cudaStream_t compute,
                                          std::string_view what) {
  if (!failed_.ok())
    return failed_;
  if (transfers.empty())
    return Status::success();
  if (Status s = afterCompute(compute, what); !s)
    return s;
  if (ncclResult_t started = nccl_->groupStart(); started != ncclSuccess)
    return check(started, "ncclGroupStart", what);
  // A call that fails inside the group is reported once the group is
  // closed (failing aborts the communicator, which an open group still uses).
  ncclResult_t refused = ncclSuccess;
  const char *refusedBy = "";
  for (const DeviceTransfer &t : transfers) {
    const auto count = static_cast<size_t>(t.count);
    auto *comm = static_cast<ncclComm_t>(comm_);
    const ncclResult_t r = t.send ? nccl_->send(t.data, count, ncclFloat32, t.peer, comm, stream_)
                                  : nccl_->recv(t.data, count, ncclFloat32, t.peer, comm, stream_);
    if (r != ncclSuccess && r != ncclInProgress) {
      refused = r;
      refusedBy = t.send ? "ncclSend" : "ncclRecv";
      break;
    }
  }
  const ncclResult_t ended = nccl_->groupEnd();
  if (refused != ncclSuccess)
    return check(refused, refusedBy, what);
  if (Status s = check(ended, "ncclGroupEnd", what); !s)
    return s;
  if (Status s = settle(what); !s)
    return s;
  if (Status s = cudaStatus(cudaEventRecord(done_, stream_), "recording the end of a pipeline transfer"); !s)
    return s;
  return cudaStatus(cudaStreamWaitEvent(compute, done_, 0), "waiting for a pipeline transfer");
}

Status NcclCommunicator::join(cudaStream_t compute) {
  if (!failed_.ok())
    return failed_;
  if (Status s = cudaStatus(cudaEventRecord(done_, stream_), "recording the end of the all-reduces"); !s)
    return s;
  return cudaStatus(cudaStreamWaitEvent(compute, done_, 0), "waiting for the all-reduces");
}

Status NcclCommunicator::stage(int64_t bytes) {
  if (bytes <= stagingBytes_)
    return Status::success();
  // cudaFree and cudaFreeHost would wait for the whole device, which may be
  // waiting for a peer: the device block is freed and allocated in stream
  // order, the pinned one kept until the end.
  if (deviceStaging_)
    cudaFreeAsync(deviceStaging_, stream_);
  if (hostStaging_)
    retiredHostStaging_.push_back(hostStaging_);
  deviceStaging_ = hostStaging_ = nullptr;
  stagingBytes_ = 0;
  const int64_t size = std::max<int64_t>(bytes, 4096);
  if (Status s = cudaStatus(cudaMallocAsync(&deviceStaging_, static_cast<size_t>(size), stream_),
                            "allocating NCCL staging");
      !s)
    return s;
  if (Status s = cudaStatus(cudaHostAlloc(&hostStaging_, static_cast<size_t>(size), cudaHostAllocDefault),
                            "allocating NCCL host staging");
      !s)
    return s;
  stagingBytes_ = size;
  return Status::success();
}

Status NcclCommunicator::hostCollective(const void *in, int64_t inBytes, void *out, int64_t outBytes,
                                        std::string_view what, const std::function<int(void *device)> &call) {
  if (!failed_.ok())
    return failed_;
  if (Status s = stage(std::max(inBytes, outBytes)); !s)
    return s;
  if (in && inBytes > 0) {
    std::memcpy(hostStaging_, in, static_cast<size_t>(inBytes));
    if (Status s = cudaStatus(cudaMemcpyAsync(deviceStaging_, hostStaging_, static_cast<size_t>(inBytes),
                                              cudaMemcpyHostToDevice, stream_),
                              "staging host data for NCCL");
        !s)
      return s;
  }
  if (Status s = check(call(deviceStaging_), "NCCL", what); !s)
    return s;
  if (Status s = settle(what); !s)
    return s;
  if (out && outBytes > 0)
    if (Status s = cudaStatus(cudaMemcpyAsync(hostStaging_, deviceStaging_, static_cast<size_t>(outBytes),
                                              cudaMemcpyDeviceToHost, stream_),
                              "copying NCCL's result to the host");
        !s)
      return s;
  if (Status s = cudaStatus(cudaEventRecord(hostDone_, stream_), "recording a host collective"); !s)
    return s;
  const std::string saved = std::move(lastDeviceWhat_);
  lastDeviceWhat_.clear();
  Status waited = waitFor(hostDone_, what);
  lastDeviceWhat_ = saved;
  if (!waited)
    return waited;
  if (out && outBytes > 0)
    std::memcpy(out, hostStaging_, static_cast<size_t>(outBytes));
  return Status::success();
}

Expected<int64_t> NcclCommunicator::startAllReduce(void *data, int64_t count, comm::DataType type,
                                                   comm::ReduceOp op, std::string_view what) {
  const int64_t bytes = count * static_cast<int64_t>(comm::dataTypeSize(type));
  Status s = hostCollective(data, bytes, data, bytes, what, [&](void *device) {
    return nccl_->allReduce(
        device, device, static_cast<size_t>(count), static_cast<ncclDataType_t>(ncclTypeOf(type)),
        static_cast<ncclRedOp_t>(ncclReductionOf(op)), static_cast<ncclComm_t>(comm_), stream_);
  });
  if (!s)
    return Error{s.message()};
  return nextRequest_++;
}

Status NcclCommunicator::wait(int64_t) {
  return failed_;
}

Status NcclCommunicator::broadcast(void *data, int64_t bytes, int root, std::string_view what) {
  return hostCollective(launch_.rank == root ? data : nullptr, bytes, data, bytes, what, [&](void *device) {
    return nccl_->broadcast(device, device, static_cast<size_t>(bytes), ncclUint8, root,
                            static_cast<ncclComm_t>(comm_), stream_);
  });
}

Status NcclCommunicator::allGather(const void *mine, int64_t bytes, void *all, std::string_view what) {
  const int64_t total = bytes * launch_.size;
  if (Status s = stage(total); !s)
    return s;
  // In place: this rank's part of the gathered buffer is its input.
  return hostCollective(nullptr, 0, all, total, what, [&](void *device) {
    const size_t at = static_cast<size_t>(bytes * launch_.rank);
    char *mineOnDevice = static_cast<char *>(device) + at;
    std::memcpy(static_cast<char *>(hostStaging_) + at, mine, static_cast<size_t>(bytes));
    if (cudaMemcpyAsync(mineOnDevice, static_cast<char *>(hostStaging_) + at, static_cast<size_t>(bytes),
                        cudaMemcpyHostToDevice, stream_) != cudaSuccess)
      return static_cast<int>(ncclUnhandledCudaError);
    return static_cast<int>(nccl_->allGather(mineOnDevice, device, static_cast<size_t>(bytes), ncclUint8,
                                             static_cast<ncclComm_t>(comm_), stream_));
  });
}

Status NcclCommunicator::send(const void *data, int64_t bytes, int peer, std::string_view what) {
  return hostCollective(data, bytes, nullptr, 0, what, [&](void *device) {
    return nccl_->send(device, static_cast<size_t>(bytes), ncclUint8, peer, static_cast<ncclComm_t>(comm_),
                       stream_);
  });
}

Status NcclCommunicator::receive(void *data, int64_t bytes, int peer, std::string_view what) {
  return hostCollective(nullptr, 0, data, bytes, what, [&](void *device) {
    return nccl_->recv(device, static_cast<size_t>(bytes), ncclUint8, peer, static_cast<ncclComm_t>(comm_),
                       stream_);
  });
}

Status NcclCommunicator::barrier(std::string_view what) {
  int64_t one = 1;
  auto request = startAllReduce(&one, 1, comm::DataType::I64, comm::ReduceOp::Sum, what);
  return request ? Status::success() : request.error();
}

} // namespace netc::runtime::cuda
