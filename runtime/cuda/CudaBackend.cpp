// CudaBackend.cpp -- the CUDA implementation of the Backend interface
// (CudaBackend.h): load lays the plan out in one device block and uploads
// its tables, run dispatches each op on the compute stream, inputs come in
// on a copy stream, and errors are kept until a call that can return them.
#include "runtime/cuda/CudaBackend.h"
#include "runtime/core/MemoryLayout.h"
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/CudaLauncher.h"
#include "runtime/cuda/DeviceProbe.h"
#include "runtime/cuda/OpRunner.h"
#include "runtime/cuda/OpTables.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

namespace netc::runtime {

namespace {

using cuda::OpResources;

/// A CUDA status as a Status naming the call.
Status cudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess)
    return Status::success();
  return fail(fmt::format("{} failed: {} ({})", what, cudaGetErrorString(e), static_cast<int>(e)));
}

std::string mebibytes(int64_t bytes) {
  return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const BackendOptions &options) : options_(options) {}
  ~CudaBackend() override { release(); }

  std::string_view name() const override { return "cuda"; }

  BackendInfo describe() const override {
    BackendInfo info;
    info.name = "cuda";
    info.threads = 1;
    info.device =
        fmt::format("{} (cuda:{}, compute capability {}.{}, {:.1f} GiB, cuBLAS {})", device_.name,
                    device_.index, device_.major, device_.minor,
                    double(device_.memoryBytes) / double(int64_t{1} << 30), cublas_ ? cublas_->version() : 0);
    // Reading the sums waits for the GPU: every 50 steps, unless --log-every says otherwise.
    info.defaultLogEvery = 50;
    info.launchesLastRun = launchesLastRun_;
    info.deviceBytes = deviceBytes_;
    return info;
  }

  Status load(const plan::Plan &plan, int64_t maxBatch) override {
    release();
    auto device = cuda::probeCudaDevice(options_.device);
    if (!device)
      return device.error();
    device_ = *device;
    if (Status s = cudaStatus(cudaSetDevice(device_.index), fmt::format("selecting cuda:{}", device_.index));
        !s)
      return s;
    auto layout = layoutMemory(plan, maxBatch);
    if (!layout)
      return layout.error();
    auto derived = cuda::deriveTables(plan);
    if (!derived)
      return derived.error();
    plan_ = &plan;
    maxBatch_ = maxBatch;
    layout_ = std::move(*layout);
    derived_ = std::move(*derived);

    // After the plan's own buffers: the derived tables, then the loss scratch.
    int64_t next = layout_.planElements;
    derivedOffsets_.assign(plan.ops.size(), {});
    auto place = [&](const std::vector<int32_t> &table) {
      if (table.empty())
        return int64_t{-1};
      const int64_t at = next;
      next += plan::alignElements(static_cast<int64_t>(table.size()));
      return at;
    };
    int64_t scratch = 0;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const cuda::DerivedTables &d = derived_[i];
      derivedOffsets_[i] = {place(d.sources.start), place(d.sources.entries), place(d.centres.start),
                            place(d.centres.entries), place(d.destinations)};
      scratch = std::max(scratch, cuda::scratchElements(plan.ops[i], maxBatch));
    }
    scratchOffset_ = next;
    next += plan::alignElements(std::max<int64_t>(scratch, 1));
    const int64_t bytes = next * 4;
    deviceBytes_ = bytes;

    size_t freeBytes = 0, totalBytes = 0;
    if (Status s = cudaStatus(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo"); !s)
      return s;
    if (static_cast<size_t>(bytes) > freeBytes)
      return fail(fmt::format("at batch {} network '{}' needs {} on cuda:{} ({}), which has {} free of {}; "
                              "use a smaller --batch",
                              maxBatch, plan.network, mebibytes(bytes), device_.index, device_.name,
                              mebibytes(static_cast<int64_t>(freeBytes)),
                              mebibytes(static_cast<int64_t>(totalBytes))));
    if (Status s = cudaStatus(cudaMalloc(&block_, static_cast<size_t>(bytes)),
                              fmt::format("allocating {} on cuda:{}", mebibytes(bytes), device_.index));
        !s)
      return s;
    if (Status s = cudaStatus(cudaMemset(block_, 0, static_cast<size_t>(bytes)), "clearing device memory");
        !s)
      return s;
    pointers_.assign(plan.buffers.size(), nullptr);
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      if (layout_.offset[b] >= 0)
        pointers_[b] = at(layout_.offset[b]);
    // The tables, the plan's and the derived ones.
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      if (const plan::Buffer &buffer = plan.buffers[b]; buffer.role == plan::BufferRole::Table)
        if (Status s = upload(layout_.offset[b], buffer.table); !s)
          return s;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const cuda::DerivedTables &d = derived_[i];
      const DerivedOffsets &o = derivedOffsets_[i];
      for (auto [offset, table] : {std::pair{o.sourceStart, &d.sources.start},
                                   {o.sourceEntries, &d.sources.entries},
                                   {o.centreStart, &d.centres.start},
                                   {o.centreEntries, &d.centres.entries},
                                   {o.destinations, &d.destinations}})
        if (offset >= 0)
          if (Status s = upload(offset, *table); !s)
            return s;
    }
    for (cudaStream_t *stream : {&stream_, &copyStream_})
      if (Status s = cudaStatus(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking), "cudaStreamCreate");
          !s)
        return s;
    inputReady_.assign(static_cast<size_t>(std::max(plan.inputSlots, 1)), nullptr);
    std::vector<cudaEvent_t *> events{&runDone_};
    for (cudaEvent_t &event : inputReady_)
      events.push_back(&event);
    for (cudaEvent_t *event : events)
      if (Status s = cudaStatus(cudaEventCreateWithFlags(event, cudaEventDisableTiming), "cudaEventCreate");
          !s)
        return s;
    auto cublas =
        cuda::Cublas::open(stream_, options_.allowTf32 ? cuda::Precision::Tf32 : cuda::Precision::Fp32);
    if (!cublas)
      return cublas.error();
    cublas_ = std::move(*cublas);
    staging_.assign(static_cast<size_t>(std::max<int64_t>(plan.arenaElements, 0)), 0.0f);
    commNames_.assign(plan.ops.size(), std::string());
    for (size_t i = 0; i < plan.ops.size(); ++i)
      if (plan::opRole(plan.ops[i].kind) == plan::OpRole::Communication)
        commNames_[i] = plan::communicationName(plan, plan.ops[i]);
    return Status::success();
  }

  void write(int buffer, std::span<const float> values, int64_t offset) override {
    float *destination = bufferAddress(buffer, 0) + offset;
    keep(cudaStatus(
        cudaMemcpyAsync(destination, values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream_),
        "copying to the GPU"));
    keep(cudaStatus(cudaStreamSynchronize(stream_), "copying to the GPU"));
  }

  void read(int buffer, std::span<float> values, int64_t offset) const override {
    const float *source = const_cast<CudaBackend *>(this)->bufferAddress(buffer, 0) + offset;
    Status s = cudaStatus(
        cudaMemcpyAsync(values.data(), source, values.size_bytes(), cudaMemcpyDeviceToHost, stream_),
        "copying from the GPU");
    if (s)
      s = cudaStatus(cudaStreamSynchronize(stream_), "copying from the GPU");
    if (!s) {
      std::fill(values.begin(), values.end(), 0.0f);
      const_cast<CudaBackend *>(this)->keep(std::move(s));
    }
  }

  void writeInput(int slot, int buffer, std::span<const float> values) override {
    // After every run issued so far (one may still read this slot).
    keep(cudaStatus(cudaStreamWaitEvent(copyStream_, runDone_, 0), "ordering an input copy"));
    keep(cudaStatus(cudaMemcpyAsync(bufferAddress(buffer, slot), values.data(), values.size_bytes(),
                                    cudaMemcpyHostToDevice, copyStream_),
                    "copying an input batch to the GPU"));
    keep(cudaStatus(cudaEventRecord(inputReady_[static_cast<size_t>(slot)], copyStream_),
                    "recording an input copy"));
  }

  void fence() override { keep(cudaStatus(cudaStreamSynchronize(copyStream_), "waiting for input copies")); }

  void attach(comm::Communicator *communicator) override { communicator_ = communicator; }

  Status run(size_t first, size_t last, int64_t batch, int inputSlot) override {
    if (!error_.ok())
      return takeError();
    if (batch > maxBatch_)
      return fail(
          fmt::format("a batch of {} is larger than the {} the plan was loaded for", batch, maxBatch_));
    if (Status s = cudaStatus(cudaStreamWaitEvent(stream_, inputReady_[static_cast<size_t>(inputSlot)], 0),
                              "waiting for inputs");
        !s)
      return s;
    for (int input : {plan_->features, plan_->labels})
      if (input >= 0)
        pointers_[static_cast<size_t>(input)] = bufferAddress(input, inputSlot);
    cuda::CudaLauncher launch;
    launch.stream = stream_;
    launch.cublas = cublas_.get();
    for (size_t i = first; i < last && i < plan_->ops.size(); ++i) {
      const plan::Op &op = plan_->ops[i];
      size_t ran = i;
      if (plan::opRole(op.kind) == plan::OpRole::Communication) {
        if (Status s = communicate(i); !s)
          return s;
        continue;
      }
      if (i + 1 < last && cuda::fusesBiasAndActivation(*plan_, i)) {
        cuda::runBiasActivationOnDevice(op, plan_->ops[i + 1], resources(i, batch), launch);
        ran = ++i;
      } else {
        cuda::runOpOnDevice(op, resources(i, batch), launch);
      }
      if (!launch.status.ok())
        return fail(fmt::format("{}: {}", describeOp(ran), launch.status.message()));
      if (options_.checkEachOp) {
        cudaError_t e = cudaStreamSynchronize(stream_);
        if (e == cudaSuccess)
          e = cudaGetLastError();
        if (e != cudaSuccess)
          return fail(fmt::format("{} failed on the GPU: {} ({})", describeOp(ran), cudaGetErrorString(e),
                                  static_cast<int>(e)));
      }
    }
    launchesLastRun_ = launch.launches;
    return cudaStatus(cudaEventRecord(runDone_, stream_), "recording the end of a step");
  }

  void synchronize() override { keep(cudaStatus(cudaStreamSynchronize(stream_), "running on the GPU")); }

private:
  struct DerivedOffsets {
    int64_t sourceStart = -1, sourceEntries = -1, centreStart = -1, centreEntries = -1, destinations = -1;
  };

  float *at(int64_t offset) const { return static_cast<float *>(block_) + offset; }
  const int32_t *intsAt(int64_t offset) const {
    return offset >= 0 ? reinterpret_cast<const int32_t *>(at(offset)) : nullptr;
  }

  /// Where buffer `buffer` is (an input: in slot `slot`).
  float *bufferAddress(int buffer, int slot) {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    return b.isInput() ? at(layout_.inputOffset(buffer, slot))
                       : static_cast<float *>(pointers_[static_cast<size_t>(buffer)]);
  }

  OpResources resources(size_t op, int64_t batch) const {
    OpResources r;
    r.batch = batch;
    r.buffers = pointers_.data();
    r.scratch = at(scratchOffset_);
    const DerivedOffsets &o = derivedOffsets_[op];
    r.derived.sources = {intsAt(o.sourceStart), intsAt(o.sourceEntries)};
    r.derived.centres = {intsAt(o.centreStart), intsAt(o.centreEntries)};
    r.derived.destinations = intsAt(o.destinations);
    return r;
  }

  /// "op #12 dense-grad-input (writing dH2)" for messages.
  std::string describeOp(size_t index) const {
    const plan::Op &op = plan_->ops[index];
    std::string out = fmt::format("op #{} {}", index, plan::opName(op.kind));
    if (!op.out.empty())
      out += fmt::format(" (writing {})", plan_->buffers[static_cast<size_t>(op.out[0])].name);
    return out;
  }

  Status upload(int64_t offset, const std::vector<int32_t> &table) {
    if (table.empty())
      return Status::success();
    return cudaStatus(
        cudaMemcpy(at(offset), table.data(), table.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
        "uploading the plan's tables");
  }

  /// Op `index`, a communication op, through host staging: an all-reduce
  /// copies its range out and starts reducing it; the wait finishes every
  /// one started and copies them back (means divided).
  Status communicate(size_t index) {
    const plan::Op &op = plan_->ops[index];
    if (!communicator_)
      return fail(fmt::format("the plan's {} needs a communicator (a bug in netc: Backend::attach)",
                              plan::opName(op.kind)));
    if (op.kind == plan::OpKind::AllReduce) {
      const plan::CommAttrs &a = op.get<plan::CommAttrs>();
      float *device = static_cast<float *>(pointers_[static_cast<size_t>(op.in[0])]) + a.offset;
      float *host = staging_.data() + a.offset;
      if (Status s = cudaStatus(cudaMemcpyAsync(host, device, static_cast<size_t>(a.count) * sizeof(float),
                                                cudaMemcpyDeviceToHost, stream_),
                                "copying gradients for an all-reduce");
          !s)
        return s;
      if (Status s = cudaStatus(cudaStreamSynchronize(stream_), "copying gradients for an all-reduce"); !s)
        return s;
      auto request = communicator_->startAllReduce(host, a.count, comm::DataType::F32, comm::ReduceOp::Sum,
                                                   commNames_[index]);
      if (!request)
        return request.error();
      started_.push_back({*request, device, host, a.count, a.mean});
      return Status::success();
    }
    Status status = Status::success();
    for (const Started &s : started_) {
      if (status)
        status = communicator_->wait(s.request);
      if (!status)
        continue;
      if (s.mean) {
        const float scale = 1.0f / float(communicator_->size());
        for (int64_t k = 0; k < s.count; ++k)
          s.host[k] *= scale;
      }
      status = cudaStatus(cudaMemcpyAsync(s.device, s.host, static_cast<size_t>(s.count) * sizeof(float),
                                          cudaMemcpyHostToDevice, stream_),
                          "copying reduced gradients back to the GPU");
    }
    started_.clear();
    if (status)
      status = cudaStatus(cudaStreamSynchronize(stream_), "copying reduced gradients back to the GPU");
    return status;
  }

  /// Keeps the first failure of a call that cannot return one, for the next run.
  void keep(Status s) {
    if (!s.ok() && error_.ok())
      error_ = std::move(s);
  }
  Status takeError() {
    Status e = std::move(error_);
    error_ = Status::success();
    return e;
  }

  void release() {
    if (block_)
      cudaFree(block_);
    block_ = nullptr;
    cublas_.reset();
    if (runDone_)
      cudaEventDestroy(runDone_);
    runDone_ = nullptr;
    for (cudaEvent_t event : inputReady_)
      if (event)
        cudaEventDestroy(event);
    inputReady_.clear();
    for (cudaStream_t *stream : {&stream_, &copyStream_})
      if (*stream) {
        cudaStreamDestroy(*stream);
        *stream = nullptr;
      }
  }

  BackendOptions options_;
  cuda::CudaDevice device_;
  const plan::Plan *plan_ = nullptr;
  int64_t maxBatch_ = 0;
  MemoryLayout layout_;
  std::vector<cuda::DerivedTables> derived_;
  std::vector<DerivedOffsets> derivedOffsets_;
  int64_t scratchOffset_ = 0;
  int64_t deviceBytes_ = 0, launchesLastRun_ = 0;
  void *block_ = nullptr;
  std::vector<void *> pointers_;
  cudaStream_t stream_ = nullptr, copyStream_ = nullptr;
  cudaEvent_t runDone_ = nullptr;
  std::vector<cudaEvent_t> inputReady_; // per input slot: its last copy
  std::unique_ptr<cuda::Cublas> cublas_;
  Status error_;
  comm::Communicator *communicator_ = nullptr;
  std::vector<std::string> commNames_;
  std::vector<float> staging_; // host copies of the flat arenas' ranges being all-reduced
  struct Started {
    int64_t request;
    float *device, *host;
    int64_t count;
    bool mean;
  };
  std::vector<Started> started_;
};

} // namespace

std::unique_ptr<Backend> makeCudaBackend(const BackendOptions &options) {
  return std::make_unique<CudaBackend>(options);
}

void registerCudaBackend() {
  registerBackend("cuda", [](const BackendOptions &o) { return makeCudaBackend(o); });
}

} // namespace netc::runtime
