// CudaBackend.cpp -- the CUDA implementation of the Backend interface
// (CudaBackend.h): load lays the plan out in one device block and uploads
// its tables, run dispatches each op on the compute stream, inputs come in
// on a copy stream, and errors are kept until a call that can return them.
// Host memory that copies start from is pinned (page-locked), so a copy is
// truly asynchronous: an input batch is staged in a pinned mirror of the
// input arena and waits only for the last run that read its slot, and small
// writes (the step scalars) go through a ring of pinned blocks, so the host
// can issue the next step while the GPU runs this one. With a training set
// held on the GPU (HeldDataset.h) a batch is instead gathered into its slot
// on the copy stream, ordered by the same events. A data-parallel plan's
// all-reduces go through NCCL on the GPU when the communicator is NCCL's
// (stream-ordered, inside the step's graph, every host wait bounded by
// --comm-timeout), else through host staging around the graphs. A
// pipeline stage's plan keeps one copy of its activations per micro-batch
// in flight (activation slots, each run points the batch-scaled buffers
// into its slot); its sends and receives go through NCCL in groups between
// the graphs of the ops around them, or through the host when the
// pipeline's ranks share a GPU (StepCommunication.h).
#include "runtime/cuda/CudaBackend.h"
#include "runtime/core/MemoryLayout.h"
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/CudaLauncher.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/cuda/CudnnPlan.h"
#include "runtime/cuda/CudnnRunner.h"
#include "runtime/cuda/DeviceProbe.h"
#include "runtime/cuda/HeldDataset.h"
#include "runtime/cuda/NcclCommunicator.h"
#include "runtime/cuda/OpRunner.h"
#include "runtime/cuda/OpTables.h"
#include "runtime/cuda/StepCommunication.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

namespace netc::runtime {

namespace {

using cuda::OpResources;

using cuda::cudaStatus;
using cuda::mebibytes;

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const BackendOptions &options) : options_(options) {}
  ~CudaBackend() override {
    release();
    if (nccl_) // the communicator outlives this backend
      nccl_->setBeforeAbort(nullptr);
  }

  std::string_view name() const override { return "cuda"; }

  BackendInfo describe() const override {
    BackendInfo info;
    info.name = "cuda";
    info.threads = 1;
    info.device = fmt::format(
        "{} (cuda:{}, compute capability {}.{}, {:.1f} GiB, cuBLAS {}{})", device_.name, device_.index,
        device_.major, device_.minor, double(device_.memoryBytes) / double(int64_t{1} << 30),
        cublas_ ? cublas_->version() : 0,
        cudnnPlan_.note() + (options_.captureGraphs ? ", CUDA graphs" : ", CUDA graphs off") + graphNote_ +
            (nccl_ ? fmt::format(", NCCL {} on {} GPU(s)", ncclVersionText(nccl_->version()), nccl_->size())
                   : std::string()) +
            stageNote());
    // Reading the sums waits for the GPU: every 50 steps, unless --log-every says otherwise.
    info.defaultLogEvery = 50;
    info.launchesLastRun = launchesLastRun_;
    info.deviceBytes = deviceBytes_;
    info.graphsCaptured = graphsCaptured_;
    info.lastRunReplayed = lastRunReplayed_;
    info.holdsData = true;
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
    for (cudaStream_t *stream : {&stream_, &copyStream_})
      if (Status s = cudaStatus(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking), "cudaStreamCreate");
          !s)
        return s;
    if (Status s = cudnnPlan_.prepare(plan, maxBatch, stream_, device_,
                                      options_.allowTf32 ? cuda::Precision::Tf32 : cuda::Precision::Fp32,
                                      options_.variant != "no-cudnn");
        !s)
      return s;

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
    // cuDNN's permutation tables, its permutation scratch and its workspace.
    const int64_t cudnnScratch = cudnnPlan_.placeTables(place);
    cudnnScratchOffset_ = next;
    next += plan::alignElements(cudnnScratch);
    workspaceOffset_ = next;
    next += plan::alignElements((static_cast<int64_t>(cudnnPlan_.workspaceBytes()) + 3) / 4);
    cublasWorkspaceOffset_ = next;
    next += static_cast<int64_t>(cuda::Cublas::kWorkspaceBytes / 4);
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
    if (Status s = cudnnPlan_.uploadTables(
            [this](int64_t offset, const std::vector<int32_t> &table) { return upload(offset, table); });
        !s)
      return s;
    cudnnPlan_.setBlock(at(0), at(cudnnScratchOffset_), at(workspaceOffset_));
    inputSlotCount_ = static_cast<size_t>(std::max(plan.inputSlots, 1));
    inputReady_.assign(inputSlotCount_, nullptr);
    slotRead_.assign(inputSlotCount_, nullptr);
    std::vector<cudaEvent_t *> events;
    for (std::vector<cudaEvent_t> *list : {&inputReady_, &slotRead_})
      for (cudaEvent_t &event : *list)
        events.push_back(&event);
    for (SmallWrite &block : smallWrites_)
      events.push_back(&block.copied);
    for (cudaEvent_t &event : runEnded_)
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
    if (Status s = cublas_->setWorkspace(at(cublasWorkspaceOffset_), cuda::Cublas::kWorkspaceBytes); !s)
      return s;
    if (Status s = allocatePinned(); !s)
      return s;
    if (Status s =
            cudaStatus(cudaEventCreateWithFlags(&hostWait_, cudaEventDisableTiming), "cudaEventCreate");
        !s)
      return s;
    return communication_.prepare(plan);
  }

  void write(int buffer, std::span<const float> values, int64_t offset) override {
    float *destination = bufferAddress(buffer, 0) + offset;
    if (values.size() <= kSmallWriteFloats) { // through the pinned ring: no wait for the stream
      SmallWrite &block = smallWrites_[nextSmallWrite_++ % smallWrites_.size()];
      keep(waitForEvent(block.copied, "reusing a pinned staging block"));
      std::copy(values.begin(), values.end(), block.values);
      keep(cudaStatus(
          cudaMemcpyAsync(destination, block.values, values.size_bytes(), cudaMemcpyHostToDevice, stream_),
          "copying to the GPU"));
      keep(cudaStatus(cudaEventRecord(block.copied, stream_), "recording a copy to the GPU"));
      return;
    }
    keep(cudaStatus(
        cudaMemcpyAsync(destination, values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream_),
        "copying to the GPU"));
    keep(waitForStream(stream_, "copying to the GPU"));
  }

  void read(int buffer, std::span<float> values, int64_t offset) const override {
    const float *source = const_cast<CudaBackend *>(this)->bufferAddress(buffer, 0) + offset;
    Status s = cudaStatus(
        cudaMemcpyAsync(values.data(), source, values.size_bytes(), cudaMemcpyDeviceToHost, stream_),
        "copying from the GPU");
    if (s)
      s = const_cast<CudaBackend *>(this)->waitForStream(stream_, "copying from the GPU");
    if (!s) {
      std::fill(values.begin(), values.end(), 0.0f);
      const_cast<CudaBackend *>(this)->keep(std::move(s));
    }
  }

  void writeInput(int slot, int buffer, std::span<const float> values) override {
    issueHeldSendsReadingInputs(slot);
    const size_t s = static_cast<size_t>(slot);
    const int64_t offset = layout_.inputOffset(buffer, slot);
    const void *source = values.data();
    if (pinnedInputs_ && offset - layout_.inputBegin + static_cast<int64_t>(values.size()) <=
                             static_cast<int64_t>(inputSlotCount_) * layout_.inputSlotElements) {
      // The slot's previous copies have left the pinned mirror (fence waited
      // for them before the run that read it; this is a formality then).
      float *pinned = pinnedInputs_ + (offset - layout_.inputBegin);
      keep(waitForEvent(inputReady_[s], "reusing pinned input memory"));
      std::copy(values.begin(), values.end(), pinned);
      source = pinned;
    }
    // After the last run that read this slot (it may still be running).
    keep(cudaStatus(cudaStreamWaitEvent(copyStream_, slotRead_[s], 0), "ordering an input copy"));
    keep(cudaStatus(
        cudaMemcpyAsync(at(offset), source, values.size_bytes(), cudaMemcpyHostToDevice, copyStream_),
        "copying an input batch to the GPU"));
    keep(cudaStatus(cudaEventRecord(inputReady_[static_cast<size_t>(slot)], copyStream_),
                    "recording an input copy"));
  }

  void fence() override { keep(waitForStream(copyStream_, "waiting for input copies")); }

  Status holdDataset(std::span<const float> features, std::span<const float> labels, int64_t count) override {
    if (!plan_)
      return fail("holding a data set before loading a plan (a bug in netc)");
    auto width = [&](int buffer) {
      return buffer >= 0 ? plan_->buffers[static_cast<size_t>(buffer)].perSample : int64_t{0};
    };
    const int64_t labelWidth = width(plan_->labels);
    return heldData_.hold(features, labelWidth > 0 ? labels : std::span<const float>(), count,
                          width(plan_->features), labelWidth, copyStream_,
                          fmt::format("cuda:{} ({})", device_.index, device_.name), deviceBytes_);
  }

  Status setSampleOrder(std::span<const int32_t> order) override {
    return heldData_.setOrder(order, copyStream_, [this](cudaStream_t stream, std::string_view what) {
      return waitForStream(stream, what);
    });
  }

  Status gatherInput(int slot, int64_t first, int64_t count) override {
    if (count > maxBatch_)
      return fail(
          fmt::format("gathering {} samples into a slot loaded for {} (a bug in netc)", count, maxBatch_));
    const size_t s = static_cast<size_t>(slot);
    // After the last run that read this slot (it may still be running), as writeInput.
    if (Status st = cudaStatus(cudaStreamWaitEvent(copyStream_, slotRead_[s], 0), "ordering an input gather");
        !st)
      return st;
    cuda::CudaLauncher launch;
    launch.stream = copyStream_;
    const cuda::GatherTarget to{bufferAddress(plan_->features, slot),
                                plan_->labels >= 0 ? bufferAddress(plan_->labels, slot) : nullptr};
    if (Status st = heldData_.gather(first, count, to, launch); !st)
      return st;
    return cudaStatus(cudaEventRecord(inputReady_[s], copyStream_), "recording an input gather");
  }

  void attachStages(comm::Communicator *stages) override {
    communication_.attachStages(stages);
    ncclStages_ = communication_.ncclStages();
  }

  void attach(comm::Communicator *communicator) override {
    if (nccl_)
      nccl_->setBeforeAbort(nullptr);
    communication_.attach(communicator);
    nccl_ = communication_.nccl();
    // ncclCommAbort waits for every graph holding one of its collectives to
    // be destroyed: these are destroyed first (a replay in flight finishes
    // once the abort has ended NCCL's kernels).
    if (nccl_)
      nccl_->setBeforeAbort([this] { destroyGraphs(); });
  }

  Status run(size_t first, size_t last, int64_t batch, int inputSlot, int activationSlot) override {
    if (!error_.ok())
      return takeError();
    if (activationSlot < 0 || activationSlot >= plan_->activationSlots)
      return fail(fmt::format("activation slot {} of a plan with {} (a bug in netc)", activationSlot,
                              plan_->activationSlots));
    // A stage's micro-batch keeps its inputs in the input slot of its
    // activations (slotAddress finds a held send's buffers so).
    if (plan_->stages > 1 && inputSlot != activationSlot)
      return fail(fmt::format("input slot {} with activation slot {} in a pipeline stage (a bug in netc)",
                              inputSlot, activationSlot));
    if (activationSlot != activationSlot_)
      useActivationSlot(activationSlot);
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
    lastRunReplayed_ = false;
    // A stage's sends through the host complete before its update at the
    // latest, as on the CPU.
    if (communication_.hostSendsPending() && first <= plan_->backwardEnd && plan_->backwardEnd < last &&
        plan_->backwardEnd < plan_->updateEnd)
      if (Status s = communication_.finishHostSends(); !s)
        return s;
    for (cuda::NcclCommunicator *c : {nccl_, ncclStages_})
      if (c && c->device() != device_.index)
        return fail(fmt::format("the NCCL communicator is on cuda:{} but the plan on cuda:{} (a bug in netc)",
                                c->device(), device_.index));
    // With NCCL, the host stays at most two runs ahead of the GPU, so that a
    // wait bounded by --comm-timeout waits for little more than one run.
    cudaEvent_t &twoRunsAgo = runEnded_[runCount_++ % runEnded_.size()];
    if (bound())
      if (Status s = waitForEvent(twoRunsAgo, "waiting for the run before last"); !s)
        return s;
    Status ran =
        ncclStages_ ? runStageRange(first, last, batch, inputSlot) : runRange(first, last, batch, inputSlot);
    if (nccl_) // an abort a failure asked for during a capture (not allowed inside one)
      nccl_->abortIfPending();
    if (!ran)
      return ran;
    if (Status s = cudaStatus(cudaEventRecord(twoRunsAgo, stream_), "recording the end of a run"); !s)
      return s;
    return cudaStatus(cudaEventRecord(slotRead_[static_cast<size_t>(inputSlot)], stream_),
                      "recording the end of a step");
  }

  void synchronize() override { keep(waitForStream(stream_, "running on the GPU")); }

  Status finishTransfers() override {
    if (!error_.ok())
      return takeError();
    if (ncclStages_) {
      // The held sends go alone, and the host waits for them: the next
      // inputs are copied in on another stream, which may overwrite what
      // they send. (The loss verdict and the other host operations follow
      // them on the communicator's stream anyway.)
      if (held_.empty())
        return Status::success();
      std::vector<cuda::NcclTransfer> held = std::move(held_);
      held_.clear();
      if (Status s = communication_.transferGroup(held, slotAddress(), stream_); !s)
        return s;
      return waitForStream(stream_, "finishing the pipeline's sends");
    }
    return communication_.hostSendsPending() ? communication_.finishHostSends() : Status::success();
  }

private:
  /// The NCCL communicator that bounds host waits, or null: the pipeline's
  /// (its transfers are what a stage waits for most; the replicas' is
  /// watched alongside), else the replicas'.
  cuda::NcclCommunicator *bound() const { return ncclStages_ ? ncclStages_ : nccl_; }

  std::string stageNote() const {
    if (!plan_ || (plan_->stages <= 1 && plan_->parts <= 1))
      return std::string();
    return fmt::format(", stage {} of {}{} ({} activation slot{}, transfers {})", plan_->stage, plan_->stages,
                       plan_->parts > 1 ? fmt::format(" part {} of {}", plan_->part, plan_->parts)
                                        : std::string(),
                       plan_->activationSlots, plan_->activationSlots == 1 ? "" : "s",
                       ncclStages_ ? "through NCCL" : "through the host");
  }

  /// Points the batch-scaled buffers other than the inputs into activation slot `slot`.
  void useActivationSlot(int slot) {
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (const plan::Buffer &buffer = plan_->buffers[b]; buffer.batchScaled() && !buffer.isInput())
        pointers_[b] = at(layout_.slotOffset(*plan_, static_cast<int>(b), slot));
    activationSlot_ = slot;
  }

  /// Where buffer `buffer` of activation slot `slot` lies (an input: in input slot `slot`).
  std::function<float *(int, int)> slotAddress() {
    return [this](int buffer, int slot) { return at(layout_.slotOffset(*plan_, buffer, slot)); };
  }

  /// Issues the held sends (NCCL) when one reads an input of input slot
  /// `slot`, which a copy is about to overwrite: the copy stream waits for
  /// the slot's last reader, which then includes them. The schedules never
  /// need it (a slot is written again only after a backward that opens with
  /// a receive, which took the held sends along); it keeps the backend safe.
  void issueHeldSendsReadingInputs(int slot) {
    const bool reads = std::any_of(held_.begin(), held_.end(), [&](const cuda::NcclTransfer &t) {
      return t.slot == slot && plan_->buffers[static_cast<size_t>(t.buffer)].isInput();
    });
    if (!reads)
      return;
    std::vector<cuda::NcclTransfer> held = std::move(held_);
    held_.clear();
    keep(communication_.transferGroup(held, slotAddress(), stream_));
    keep(cudaStatus(cudaEventRecord(slotRead_[static_cast<size_t>(slot)], stream_),
                    "recording the end of a pipeline send"));
  }

  /// A pipeline stage's ops [first, last) with its transfers through NCCL:
  /// the ops between them as runRange runs any range, the transfers in the
  /// groups ncclTransferRun makes (the sends that close the range held for
  /// the next one's receives).
  Status runStageRange(size_t first, size_t last, int64_t batch, int inputSlot) {
    auto made = cuda::ncclTransferRun(*plan_, first, last, batch, activationSlot_, std::move(held_));
    held_.clear();
    if (!made)
      return made.error();
    for (const cuda::NcclRunPart &part : made->parts) {
      Status s = part.group ? communication_.transferGroup(part.transfers, slotAddress(), stream_)
                            : runRange(part.first, part.last, batch, inputSlot);
      if (!s)
        return s;
    }
    held_ = std::move(made->held);
    return Status::success();
  }

  /// Ops [first, last), as graphs where they may be: the whole range when
  /// its communication (if any) is NCCL's and joined inside it -- the
  /// buckets' all-reduces are then nodes of the step's graph; with a host
  /// communicator (MPI) the graph is split at each communication op, which
  /// waits on the host between the graphs of the ranges around it.
  Status runRange(size_t first, size_t last, int64_t batch, int inputSlot) {
    last = std::min(last, plan_->ops.size());
    if (!options_.captureGraphs || options_.checkEachOp)
      return issue(first, last, batch);
    bool communicates = false;
    for (size_t i = first; i < last; ++i)
      communicates = communicates || plan::opRole(plan_->ops[i].kind) == plan::OpRole::Communication;
    if (!communicates)
      return runAsGraph(first, last, batch, inputSlot);
    if (nccl_)
      return communication_.capturable(first, last) ? runAsGraph(first, last, batch, inputSlot)
                                                    : issue(first, last, batch);
    for (size_t begin = first; begin < last;) {
      size_t end = begin;
      while (end < last && plan::opRole(plan_->ops[end].kind) != plan::OpRole::Communication)
        ++end;
      if (end > begin)
        if (Status s = runAsGraph(begin, end, batch, inputSlot); !s)
          return s;
      int64_t launches = 0; // a host communicator launches nothing
      communication_.progressHostSends();
      if (end < last)
        if (Status s = communication_.run(end, pointers_.data(), batch, stream_, launches); !s)
          return s;
      begin = end + 1;
    }
    return Status::success();
  }

  /// Waits on the host for `event`: with NCCL at most --comm-timeout, and
  /// failing on NCCL's asynchronous errors (a hung collective aborted, not
  /// waited for forever); otherwise as long as it takes.
  Status waitForEvent(cudaEvent_t event, std::string_view what) {
    if (cuda::NcclCommunicator *c = bound())
      return c->waitFor(event, what, c == ncclStages_ ? nccl_ : nullptr);
    return cudaStatus(cudaEventSynchronize(event), what);
  }
  /// waitForEvent for everything issued on `stream` so far.
  Status waitForStream(cudaStream_t stream, std::string_view what) {
    cuda::NcclCommunicator *c = bound();
    if (!c)
      return cudaStatus(cudaStreamSynchronize(stream), what);
    if (Status s = cudaStatus(cudaEventRecord(hostWait_, stream), what); !s)
      return s;
    return c->waitFor(hostWait_, what, c == ncclStages_ ? nccl_ : nullptr);
  }

  static std::string ncclVersionText(int code) {
    return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  }

  /// Runs ops [first, last) as a graph: the first run of a range, batch and
  /// input slot is issued op by op (libraries load what they load lazily),
  /// the second is captured and launched, and later ones launch the graph.
  /// A capture the driver or a library refuses leaves that key op by op for
  /// good, said in the run header. Past kMaxGraphs keys per activation slot
  /// (a caller running many batch sizes), new ones run op by op: the graphs
  /// stay bounded.
  Status runAsGraph(size_t first, size_t last, int64_t batch, int inputSlot) {
    const GraphKey key{first, last, batch, inputSlot, activationSlot_};
    // A pipeline stage's ranges are kept for each of its activation slots.
    const size_t maxGraphs = kMaxGraphs * static_cast<size_t>(std::max(plan_->activationSlots, 1));
    if (graphs_.size() >= maxGraphs && !graphs_.count(key))
      return issue(first, last, batch);
    Graph &g = graphs_[key];
    if (!g.exec && (g.failed || g.eagerRuns++ == 0))
      return issue(first, last, batch);
    if (!g.exec) {
      if (Status s = cudaStatus(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                                "starting a graph capture");
          !s)
        return s;
      Status issued = issue(first, last, batch);
      cudaGraph_t graph = nullptr;
      Status ended = cudaStatus(cudaStreamEndCapture(stream_, &graph), "ending a graph capture");
      Status made = issued && ended
                        ? cudaStatus(cudaGraphInstantiate(&g.exec, graph, 0), "instantiating a graph")
                        : Status::success();
      if (graph)
        cudaGraphDestroy(graph);
      if (!issued || !ended || !made) {
        static_cast<void>(cudaGetLastError()); // the capture's error is not the next kernel's
        g.failed = true;
        g.exec = nullptr;
        const Status &why = !issued ? issued : !ended ? ended : made;
        if (graphNote_.empty())
          graphNote_ = fmt::format(", a capture failed ({}): those ops run one by one", why.message());
        return issue(first, last, batch); // nothing of the failed capture ran
      }
      g.launches = launchesLastRun_;
      ++graphsCaptured_;
    }
    launchesLastRun_ = g.launches;
    lastRunReplayed_ = true;
    return cudaStatus(cudaGraphLaunch(g.exec, stream_), "launching a graph");
  }

  /// Issues ops [first, last) one by one on the compute stream.
  Status issue(size_t first, size_t last, int64_t batch) {
    cuda::CudaLauncher launch;
    launch.stream = stream_;
    launch.cublas = cublas_.get();
    launch.cudnnLibrary = cudnnPlan_.library();
    for (size_t i = first; i < last && i < plan_->ops.size(); ++i) {
      if (plan::opRole(plan_->ops[i].kind) == plan::OpRole::Communication) {
        if (Status s = communication_.run(i, pointers_.data(), batch, stream_, launch.launches); !s)
          return s;
        continue;
      }
      communication_.progressHostSends(); // a started host send goes on while this range computes
      std::optional<cuda::CudnnOpResources> conv = cudnnPlan_.convolution(i, batch);
      std::optional<cuda::CudnnPoolResources> pool = conv ? std::nullopt : cudnnPlan_.pooling(i, batch);
      const size_t ran = cuda::runPlanOpOnDevice(*plan_, i, last, resources(i, batch),
                                                 conv ? &*conv : nullptr, pool ? &*pool : nullptr, launch);
      i = ran; // past a fused activation
      if (!launch.status.ok())
        return fail(fmt::format("{}: {}", describeOp(ran), launch.status.message()));
      if (options_.checkEachOp) {
        if (Status s = waitForStream(stream_, describeOp(ran)); !s)
          return fail(fmt::format("{} failed on the GPU: {}", describeOp(ran), s.message()));
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
          return fail(fmt::format("{} failed on the GPU: {} ({})", describeOp(ran), cudaGetErrorString(e),
                                  static_cast<int>(e)));
      }
    }
    launchesLastRun_ = launch.launches;
    return Status::success();
  }

  struct DerivedOffsets {
    int64_t sourceStart = -1, sourceEntries = -1, centreStart = -1, centreEntries = -1, destinations = -1;
  };
  float *at(int64_t offset) const { return static_cast<float *>(block_) + offset; }

  /// One pinned host block: the small-write ring, then a mirror of the input arena.
  Status allocatePinned() {
    const int64_t ring = static_cast<int64_t>(smallWrites_.size() * kSmallWriteFloats);
    const int64_t inputs = static_cast<int64_t>(inputSlotCount_) * layout_.inputSlotElements;
    if (Status s = cudaStatus(
            cudaHostAlloc(&pinned_, static_cast<size_t>(ring + inputs) * sizeof(float), cudaHostAllocDefault),
            fmt::format("allocating {} of pinned host memory", mebibytes((ring + inputs) * 4)));
        !s)
      return s;
    float *next = static_cast<float *>(pinned_);
    for (SmallWrite &block : smallWrites_) {
      block.values = next;
      next += kSmallWriteFloats;
    }
    pinnedInputs_ = inputs > 0 ? next : nullptr;
    return Status::success();
  }
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

  /// Destroys every captured graph (a replay in flight still completes).
  void destroyGraphs() {
    for (auto &[key, graph] : graphs_)
      if (graph.exec)
        cudaGraphExecDestroy(graph.exec);
    graphs_.clear();
  }

  void release() {
    destroyGraphs();
    held_.clear();
    activationSlot_ = 0;
    // Freeing waits for the whole device; with NCCL, wait for this stream
    // first, bounded (a collective whose peers are gone is aborted).
    if (bound() && stream_ && hostWait_)
      static_cast<void>(waitForStream(stream_, "finishing the GPU's work"));
    heldData_.release();
    graphsCaptured_ = 0;
    graphNote_.clear();
    if (hostWait_)
      cudaEventDestroy(hostWait_);
    hostWait_ = nullptr;
    communication_.release();
    if (block_)
      cudaFree(block_);
    block_ = nullptr;
    cublas_.reset();
    cudnnPlan_.release();

    for (std::vector<cudaEvent_t> *list : {&inputReady_, &slotRead_}) {
      for (cudaEvent_t event : *list)
        if (event)
          cudaEventDestroy(event);
      list->clear();
    }
    for (cudaEvent_t &event : runEnded_) {
      if (event)
        cudaEventDestroy(event);
      event = nullptr;
    }
    for (SmallWrite &block : smallWrites_) {
      if (block.copied)
        cudaEventDestroy(block.copied);
      block.copied = nullptr;
      block.values = nullptr;
    }
    if (pinned_)
      cudaFreeHost(pinned_);
    pinned_ = nullptr;
    pinnedInputs_ = nullptr;
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
  size_t inputSlotCount_ = 0;
  std::vector<cudaEvent_t> inputReady_; // per input slot: its last copy
  std::vector<cudaEvent_t> slotRead_;   // per input slot: the end of the last run that read it
  void *pinned_ = nullptr;              // page-locked host memory (allocatePinned)
  float *pinnedInputs_ = nullptr;       // the input arena's host mirror, inside pinned_
  static constexpr size_t kSmallWriteFloats = 1024;
  struct SmallWrite {
    float *values = nullptr;      // kSmallWriteFloats floats of pinned_
    cudaEvent_t copied = nullptr; // its last copy's completion
  };
  std::array<SmallWrite, 16> smallWrites_;
  std::array<cudaEvent_t, 2> runEnded_{}; // the ends of the last two runs (NCCL bounds the run-ahead)
  int64_t runCount_ = 0;
  size_t nextSmallWrite_ = 0;
  cuda::HeldDataset heldData_; // the training set, with --data-on-device
  std::unique_ptr<cuda::Cublas> cublas_;
  cuda::CudnnPlan cudnnPlan_; // the ops cuDNN runs
  int64_t cudnnScratchOffset_ = 0, workspaceOffset_ = 0, cublasWorkspaceOffset_ = 0;
  /// The captured graphs, by range of ops, batch and input slot.
  struct GraphKey {
    size_t first, last;
    int64_t batch;
    int slot, activationSlot; // the graph holds their addresses
    auto operator<=>(const GraphKey &) const = default;
  };
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    int64_t launches = 0; // kernels and library calls inside
    int eagerRuns = 0;
    bool failed = false; // the capture was refused: op by op
  };
  std::map<GraphKey, Graph> graphs_;
  static constexpr size_t kMaxGraphs = 64;
  int64_t graphsCaptured_ = 0;
  bool lastRunReplayed_ = false;
  std::string graphNote_; // why a capture failed, for describe()
  Status error_;
  cuda::StepCommunication communication_;        // the plan's all-reduces and waits
  cuda::NcclCommunicator *nccl_ = nullptr;       // communication_'s communicator when it is NCCL's
  cuda::NcclCommunicator *ncclStages_ = nullptr; // the pipeline's when it is NCCL's
  int activationSlot_ = 0;                       // the slot pointers_ point into
  std::vector<cuda::NcclTransfer> held_;         // sends held for the next run's receives (NCCL)
  cudaEvent_t hostWait_ = nullptr;               // recorded where the host waits for a stream
};

} // namespace

std::unique_ptr<Backend> makeCudaBackend(const BackendOptions &options) {
  return std::make_unique<CudaBackend>(options);
}

void registerCudaBackend() {
  registerBackend("cuda", [](const BackendOptions &o) { return makeCudaBackend(o); });
}

} // namespace netc::runtime
