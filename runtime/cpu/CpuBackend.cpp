// CpuBackend.cpp -- the CPU implementation of the Backend interface: host
// allocation with a size check (a plan too large for memory is an error that
// says how much it needs) -- the activation arena, the input arena times its
// slots, each own buffer, views into the flat arenas, and one workspace as
// large as the largest kernel needs, so nothing allocates in run -- copies,
// and op dispatch through the fast or reference kernel table. The fast table
// keeps batch-scaled buffers feature-major (Kernels.h), so write and read
// transpose to and from the interface's sample-major order. Input writes are
// complete on return (fence has nothing to wait for). Threads: OpenMP for
// the loops, OpenBLAS for the dense products where chosen
// (DenseKernelChoice.h): the run header names the kernels.
#include "runtime/cpu/CpuBackend.h"
#include "codegen/CostModel.h"
#include "runtime/comm/StageTransfers.h"
#include "runtime/cpu/DenseKernelChoice.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/PeakProbe.h"
#include "runtime/cpu/ThreadPolicy.h"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

extern "C" void openblas_set_num_threads(int);

namespace netc::runtime {

namespace cpu {

namespace {
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(&fast_baseline::Id, )
const Kernel kFastBaseline[] = {
#include "codegen/Ops.def"
};
#undef OP
#if defined(__x86_64__)
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(&fast_avx2::Id, )
const Kernel kFastAvx2[] = {
#include "codegen/Ops.def"
};
#undef OP
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(&fast_avx512::Id, )
const Kernel kFastAvx512[] = {
#include "codegen/Ops.def"
};
#undef OP
#endif
#define OP(Id, Name, Role, Backward) NETC_KERNEL_##Role(&reference::Id, )
const Kernel kReference[] = {
#include "codegen/Ops.def"
};
#undef OP

struct FastTable {
  KernelTable table;
  bool supported;
};

/// Every fast table, best first, with whether this processor runs it.
const std::vector<FastTable> &fastTables() {
  static const std::vector<FastTable> tables = [] {
    std::vector<FastTable> list;
#if defined(__x86_64__)
    const std::string_view best = bestInstructionSet(hostCpuFeatures());
    const bool avx512 = best == "avx512", avx2 = avx512 || best == "avx2";
    list.push_back({{"avx512", kFastAvx512, &fast_avx512::toFeatureMajor, &fast_avx512::fromFeatureMajor,
                     &fast_avx512::fmaProbe, &fast_avx512::fmaProbeChains},
                    avx512});
    list.push_back({{"avx2", kFastAvx2, &fast_avx2::toFeatureMajor, &fast_avx2::fromFeatureMajor,
                     &fast_avx2::fmaProbe, &fast_avx2::fmaProbeChains},
                    avx2});
#endif
    list.push_back(
        {{"baseline", kFastBaseline, &fast_baseline::toFeatureMajor, &fast_baseline::fromFeatureMajor,
          &fast_baseline::fmaProbe, &fast_baseline::fmaProbeChains},
         true});
    return list;
  }();
  return tables;
}

const KernelTable kReferenceTable{"reference", kReference, nullptr, nullptr};

int gThreads = 0;
} // namespace

std::vector<std::string_view> instructionSets() {
  std::vector<std::string_view> names;
  for (const FastTable &t : fastTables())
    if (t.supported)
      names.push_back(t.table.name);
  return names;
}

std::vector<std::string_view> knownInstructionSets() {
  std::vector<std::string_view> names;
  for (const FastTable &t : fastTables())
    names.push_back(t.table.name);
  return names;
}

const KernelTable *fastTable(std::string_view instructionSet) {
  for (const FastTable &t : fastTables())
    if (t.supported && (instructionSet.empty() || t.table.name == instructionSet))
      return &t.table;
  return nullptr;
}

const KernelTable *referenceTable() {
  return &kReferenceTable;
}

void setThreadCount(int threads) {
  if (threads <= 0)
    threads = omp_get_num_procs();
  gThreads = threads;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int threadCount() {
  return gThreads > 0 ? gThreads : omp_get_max_threads();
}

namespace {
/// A fast convolution kernel's workspace: each thread's cell row pointers,
/// then its weights re-laid for the map tiles (FastKernels.cpp,
/// ConvTables::packWeights).
size_t convolutionWorkspace(const plan::ConvAttrs &a, int threads) {
  return size_t(threads) * size_t(a.window) * sizeof(void *) +
         size_t(a.maps) * size_t(a.groups) * size_t(a.window) * sizeof(float);
}
} // namespace

size_t workspaceBytes(const plan::Op &op, int64_t lanes, int threads) {
  const bool fast = lanes > 0;
  switch (op.kind) {
  case plan::OpKind::DenseGradWeights: // fast: each thread's transposed panel of inputs
    return fast ? size_t(threads) * size_t(lanes) * size_t(kDenseGradPanel) * sizeof(float) : 0;
  case plan::OpKind::Convolution: // fast: each thread's cell rows, then the packed weights
    return fast ? convolutionWorkspace(op.get<plan::ConvAttrs>(), threads) : 0;
  case plan::OpKind::ConvolutionGradInput: // fast: the same; reference: a double per input
    return fast ? convolutionWorkspace(op.get<plan::ConvAttrs>(), threads)
                : size_t(op.get<plan::ConvAttrs>().inputs) * sizeof(double);
  case plan::OpKind::ConvolutionGradWeights: // reference: a double per window cell
    return fast ? 0 : size_t(op.get<plan::ConvAttrs>().window) * sizeof(double);
  case plan::OpKind::MaxPoolGrad: // fast: a byte per input (windowsAreDisjoint)
    return fast ? size_t(op.get<plan::WindowAttrs>().inputs) : 0;
  case plan::OpKind::SparseGradInput: // reference: a double per input
    return fast ? 0 : size_t(op.get<plan::SparseAttrs>().inputs) * sizeof(double);
  default: return 0;
  }
}

} // namespace cpu

namespace {

class CpuBackend final : public Backend {
public:
  CpuBackend(const BackendOptions &options, bool reference)
      : options_(options), reference_(reference), cores_(omp_get_num_procs()),
        others_(options.threads > 0 ? 0 : cpu::hostOtherRunnableTasks()),
        threads_(cpu::chooseThreadCount(options.threads, cores_, others_)) {}

  std::string_view name() const override { return reference_ ? "cpu-reference" : "cpu"; }

  BackendInfo describe() const override {
    BackendInfo info;
    info.name = std::string(name());
    info.threads = threads();
    info.device =
        reference_ ? "host (reference kernels)" : fmt::format("host ({})", kernels_ ? kernels_->name : "");
    info.defaultLogEvery = 1; // reading the sums costs nothing here
    info.denseKernels = reference_ ? "" : dense_.label;
    info.kernelWarning = reference_ ? "" : dense_.warning;
    info.fusedOps = std::count(fusesNext_.begin(), fusesNext_.end(), true);
    info.threadNote = options_.threads > 0
                          ? cpu::hostWaitPolicy()
                          : fmt::format("--threads 0: {} of {} cores{}; {}", threads_, cores_,
                                        others_ > 0 ? fmt::format(", {} other task(s) running", others_) : "",
                                        cpu::hostWaitPolicy());
    if (threads_ > 1 && !reference_)
      info.threadNote += fmt::format("; each op on 1 or {} threads, whichever its first steps run faster, "
                                     "and all on one while whole steps run faster so (checked every {:g} s)",
                                     threads_, cpu::ShareCheck::kIntervalSeconds);
    return info;
  }

  Status load(const plan::Plan &plan, int64_t maxBatch) override {
    if (maxBatch <= 0)
      return fail(fmt::format("batch size must be positive, got {}", maxBatch));
    kernels_ = reference_ ? cpu::referenceTable() : cpu::fastTable(options_.variant);
    if (!kernels_)
      return fail(fmt::format("the CPU instruction set '{}' is unknown or not supported by this processor "
                              "(NETC_CPU_ISA); it supports: {}",
                              options_.variant, fmt::join(cpu::instructionSets(), ", ")));
    std::copy_n(kernels_->kernels, kernelList_.size(), kernelList_.begin());
    if (!reference_) {
      dense_ = cpu::chooseDenseKernel(cpu::hostCpuFeatures(), kernels_->name, cpu::hostBlas(),
                                      options_.denseKernel);
      if (dense_.kind == cpu::DenseKernelKind::Blas)
        setDenseKernels(&cpu::blas::Dense, &cpu::blas::DenseGradWeights, &cpu::blas::DenseGradInput);
    }
    if (options_.bf16Products && reference_) {
      setDenseKernels(&cpu::reference::Bf16Dense, &cpu::reference::Bf16DenseGradWeights,
                      &cpu::reference::Bf16DenseGradInput);
      setConvolutionKernels(&cpu::reference::Bf16Convolution, &cpu::reference::Bf16ConvolutionGradWeights,
                            &cpu::reference::Bf16ConvolutionGradInput);
    } else if (options_.bf16Products) {
      if (std::string refusal = cpu::bf16Refusal(cpu::hostCpuFeatures(), kernels_->name, dense_.kind);
          !refusal.empty())
        return fail(std::move(refusal));
#if defined(__x86_64__)
      setDenseKernels(&cpu::bf16::Dense, &cpu::bf16::DenseGradWeights, &cpu::bf16::DenseGradInput);
      setConvolutionKernels(&cpu::bf16::Convolution, &cpu::bf16::ConvolutionGradWeights,
                            &cpu::bf16::ConvolutionGradInput);
      dense_.label += " bf16";
#endif
    }
    cpu::setThreadCount(threads());
    plan_ = &plan;
    maxBatch_ = maxBatch;
    // Size check before any allocation.
    const int64_t limit = int64_t{1} << 40; // 1 TiB of elements: beyond any host
    // Feature-major rows of `lanes_` columns, padded to whole lane chunks.
    const int64_t padded =
        maxBatch > limit ? maxBatch : (maxBatch + cpu::kLaneChunk - 1) / cpu::kLaneChunk * cpu::kLaneChunk;
    lanes_ = reference_ ? 0 : padded;
    columns_ = lanes_ ? lanes_ : maxBatch;
    const int64_t perSample = plan.elementsPerSample();
    if (perSample > limit / columns_)
      return fail(fmt::format("the plan needs {} values per sample; with batch {} that exceeds what can be "
                              "allocated",
                              perSample, maxBatch));
    size_t workspace = 0;
    commNames_.assign(plan.ops.size(), std::string());
    opThreads_.assign(plan.ops.size(), threads());
    tuning_.assign(plan.ops.size(), OpTuning{});
    tuned_.assign(plan.ops.size(), false);
    fusesNext_.assign(plan.ops.size(), false);
    tuningLeft_ = 0;
    shareCheck_ = cpu::ShareCheck{};
    stepRange_ = {0, 0};
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      workspace = std::max(workspace, cpu::workspaceBytes(plan.ops[i], lanes_, threads()));
#if defined(__x86_64__)
      if (options_.bf16Products)
        workspace = std::max(workspace, cpu::bf16::workspaceBytes(plan.ops[i], lanes_, threads()));
#endif
      opThreads_[i] = opThreadCount(plan, plan.ops[i], maxBatch);
      // An op large enough to share has its thread count measured in its
      // first calls; not one OpenBLAS runs, whose sums may change with it.
      const bool blas =
          dense_.kind == cpu::DenseKernelKind::Blas &&
          (plan.ops[i].kind == plan::OpKind::Dense || plan.ops[i].kind == plan::OpKind::DenseGradWeights ||
           plan.ops[i].kind == plan::OpKind::DenseGradInput);
      tuning_[i].active = opThreads_[i] > 1 && !reference_ && !blas;
      // An op fused into the op before it has no calls of its own. The bf16
      // weight gradient (Bf16ConvolutionKernels.cpp) leaves the kernel-bias
      // gradient to its own FP32 op.
      if (i > 0 && fusesNext_[i - 1])
        tuning_[i].active = false;
      else if (!reference_ &&
               (fusableActivation(plan, i) || (!options_.bf16Products && fusableBiasGradient(plan, i))))
        fusesNext_[i] = true;
      tuningLeft_ += tuning_[i].active ? 1 : 0;
      if (plan::opRole(plan.ops[i].kind) == plan::OpRole::Communication)
        commNames_[i] = plan::communicationName(plan, plan.ops[i]);
    }
    started_.clear();
    started_.reserve(plan.buckets.size() + plan.stateArenas.size() + 1);
    transfers_.clear();
    try {
      // Over-allocated by a chunk so the arena can start on a 64-byte
      // boundary; every offset in it is a multiple of 256 bytes.
      arenaStorage_.assign(static_cast<size_t>(perSample * columns_ + cpu::kLaneChunk), 0.0f);
      float *arena = arenaStorage_.data();
      while (reinterpret_cast<uintptr_t>(arena) % 64 != 0)
        ++arena;
      arena_ = arena;
      activationSlot_ = 0;
      inputs_ = arena + plan.activationSlots * plan.memory.arenaPerSample * columns_;
      workspace_.assign((workspace + sizeof(double) - 1) / sizeof(double), 0.0);
      fixed_.clear();
      fixed_.resize(plan.buffers.size());
      pointers_.assign(plan.buffers.size(), nullptr);
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const plan::Buffer &buffer = plan.buffers[b];
        if (buffer.batchScaled()) {
          pointers_[b] = (buffer.isInput() ? inputs_ : arena) + buffer.arenaOffset * columns_;
          continue;
        }
        if (buffer.viewOf >= 0 || buffer.role == plan::BufferRole::Workspace)
          continue;
        fixed_[b].assign(static_cast<size_t>(std::max<int64_t>(buffer.fixed, 1)), 0.0f);
        if (buffer.type == plan::ElementType::I32)
          std::memcpy(fixed_[b].data(), buffer.table.data(), buffer.table.size() * sizeof(int32_t));
        pointers_[b] = fixed_[b].data();
      }
      for (size_t b = 0; b < plan.buffers.size(); ++b)
        if (const plan::Buffer &buffer = plan.buffers[b]; buffer.viewOf >= 0)
          pointers_[b] =
              static_cast<float *>(pointers_[static_cast<size_t>(buffer.viewOf)]) + buffer.viewOffset;
      if (plan.workspace >= 0)
        pointers_[static_cast<size_t>(plan.workspace)] = workspace_.data();
    } catch (const std::bad_alloc &) {
      return fail(fmt::format("out of memory: the plan needs {:.1f} MiB for batch {}",
                              double(plan.bytesPerBatch(maxBatch)) / (1 << 20), maxBatch));
    }
    return Status::success();
  }

  void writeInput(int slot, int buffer, std::span<const float> values) override {
    writeAt(inputPointer(slot, buffer), buffer, values, 0);
  }

  void fence() override {}

  void write(int buffer, std::span<const float> values, int64_t offset) override {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    writeAt(b.isInput() ? inputPointer(0, buffer)
                        : static_cast<float *>(pointers_[static_cast<size_t>(buffer)]),
            buffer, values, offset);
  }

  void read(int buffer, std::span<float> values, int64_t offset) const override {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    readAt(b.isInput() ? inputPointer(0, buffer)
                       : static_cast<const float *>(pointers_[static_cast<size_t>(buffer)]),
           buffer, values, offset);
  }

  void attach(comm::Communicator *communicator) override {
    communicator_ = communicator;
  }
  void attachStages(comm::Communicator *stages) override {
    transfers_.attach(stages);
  }

  Status run(size_t first, size_t last, int64_t batch, int inputSlot, int activationSlot) override {
    if (activationSlot < 0 || activationSlot >= plan_->activationSlots)
      return fail(fmt::format("activation slot {} of a plan with {} (a bug in netc)", activationSlot,
                              plan_->activationSlots));
    if (activationSlot != activationSlot_)
      useActivationSlot(activationSlot);
    // The OpenMP and OpenBLAS thread counts are process-wide: apply this
    // backend's own before running (another backend may have changed them
    // since load, e.g. a reference and a fast backend side by side).
    if (cpu::threadCount() != threads())
      cpu::setThreadCount(threads());
    omp_set_num_threads(threads()); // per calling thread: a run from another thread gets it too
    int regionThreads = threads();
    for (int input : {plan_->features, plan_->labels})
      if (input >= 0)
        pointers_[static_cast<size_t>(input)] = inputPointer(inputSlot, input);
    void *const *buffers = pointers_.data();
    // The step's calls (the widest range run at the loaded batch) are timed
    // while ShareCheck measures; while it finds one thread faster, every op
    // runs on one.
    if (batch == maxBatch_ && last - first > 1 && last - first > stepRange_.second - stepRange_.first) {
      stepRange_ = {first, last};
      if (shareCheck_.measuring()) { // a window of narrower calls starts again
        shareCheck_ = cpu::ShareCheck{};
        shareCheck_.start(seconds(), anyShared());
      }
    }
    const bool stepCall = std::pair{first, last} == stepRange_ && batch == maxBatch_;
    const bool timed = stepCall && shareCheck_.measuring();
    const bool alone = stepCall ? shareCheck_.alone() : shareCheck_.chosenAlone();
    double kernelMicros = 0;
    for (size_t i = first; i < last && i < plan_->ops.size(); ++i) {
      const plan::Op &op = plan_->ops[i];
      if (op.kind == plan::OpKind::Send || op.kind == plan::OpKind::Receive) {
        if (Status s = transfer(i, batch); !s)
          return s;
        continue;
      }
      if (op.kind == plan::OpKind::Update && transfers_.pending())
        if (Status s = transfers_.finish(); !s)
          return s;
      if (plan::opRole(op.kind) == plan::OpRole::Communication) {
        if (Status s = communicate(i); !s)
          return s;
        continue;
      }
      // An op too small to share runs on this thread alone (no region wakes another).
      const int callThreads = alone && tuned_[i] ? 1 : opThreads_[i];
      // Its first calls at the loaded batch alternate one thread and all,
      // timed, until fasterThreadCount chooses (the same bits either way).
      OpTuning *tuning = tuning_[i].active && batch == maxBatch_ ? &tuning_[i] : nullptr;
      int threadsNow = callThreads;
      if (tuning)
        threadsNow = tuning->calls % 2 == 0 ? 1 : threads();
      if (threadsNow != regionThreads) {
        omp_set_num_threads(threadsNow);
        regionThreads = threadsNow;
      }
      // A convolution applies the activation after it to each row it writes,
      // a convolution's weight gradient sums the kernel-bias gradient after
      // it (the two in one range: a call of the first alone, as the profile
      // makes, leaves the second to its own op).
      const bool fused = fusesNext_[i] && i + 1 < last;
      cpu::KernelCall call{
          op, batch, buffers, lanes_, workspace_.data(), threadsNow, fused ? &plan_->ops[i + 1] : nullptr};
      const auto started =
          tuning || timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      kernelList_[static_cast<size_t>(op.kind)](call);
      if (tuning || timed) {
        const double micros =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
        kernelMicros += micros;
        if (tuning)
          recordTuning(i, *tuning, micros);
      }
      if (fused)
        ++i;                 // the next op ran inside this one
      if (!started_.empty()) // the all-reduces started go on while the backward pass does
        communicator_->progress();
      // A started send goes on too: a transport that moves data only inside
      // its calls (MPI's rendezvous for a large message) would otherwise
      // keep the next stage waiting until this one's next communication op.
      transfers_.progress();
    }
    if (regionThreads != threads())
      omp_set_num_threads(threads());
    if (stepCall)
      shareCheck_.record(kernelMicros, seconds());
    return Status::success();
  }

  void synchronize() override {}

  Status finishTransfers() override {
    return transfers_.pending() ? transfers_.finish() : Status::success();
  }

  /// The peak probes of the fast kernels (PeakProbe.h); none for the reference.
  PeakRates measurePeak() override {
    if (reference_ || !kernels_ || !kernels_->fmaProbe)
      return {};
    return cpu::measurePeak(*kernels_, threads(), options_.bf16Products);
  }

private:
  void setDenseKernels(cpu::Kernel dense, cpu::Kernel gradWeights, cpu::Kernel gradInput) {
    kernelList_[static_cast<int>(plan::OpKind::Dense)] = dense;
    kernelList_[static_cast<int>(plan::OpKind::DenseGradWeights)] = gradWeights;
    kernelList_[static_cast<int>(plan::OpKind::DenseGradInput)] = gradInput;
  }

  void setConvolutionKernels(cpu::Kernel convolution, cpu::Kernel gradWeights, cpu::Kernel gradInput) {
    kernelList_[static_cast<int>(plan::OpKind::Convolution)] = convolution;
    kernelList_[static_cast<int>(plan::OpKind::ConvolutionGradWeights)] = gradWeights;
    kernelList_[static_cast<int>(plan::OpKind::ConvolutionGradInput)] = gradInput;
  }

  int threads() const {
    return threads_;
  }

  /// The threads op `op` runs on: the backend's, or 1 for an op whose work
  /// at the loaded batch (its FLOPs, for the ops priced by FLOPs, plus its
  /// bytes: codegen/CostModel.h) is below kMinParallelWork, where waking a
  /// second thread (about 10 us with idle threads asleep) costs more than
  /// it saves. Every kernel computes the same bits on any thread count.
  int opThreadCount(const plan::Plan &plan, const plan::Op &op, int64_t batch) const {
    if (threads() == 1 || reference_)
      return threads();
    const cost::OpWork work = cost::opWork(plan, op);
    double amount = work.bytesPerSample * double(batch) + work.fixedBytes;
    if (cost::workMeasure(op.kind) == cost::WorkMeasure::Flops)
      amount += work.flopsPerSample * double(batch) + work.fixedFlops;
    return amount < kMinParallelWork ? 1 : threads();
  }
  static constexpr double kMinParallelWork = double(1 << 20);

  /// An op's calls timed at one thread and at all (ThreadPolicy.h).
  struct OpTuning {
    bool active = false; // still measuring
    int calls = 0;       // calls at the loaded batch so far, warm-up included
    std::array<double, cpu::kOpTuningSamples> one{}, all{};
  };
  /// Whether op i is a convolution whose activation (the next op: every
  /// node of its output, not softmax, which mixes nodes, nor accumulating)
  /// the fast convolution kernel applies to each row it writes
  /// (KernelCall::then): the same bits, without reading the sums back. Not
  /// where the activation's output shares memory with the convolution's
  /// input: the memory plan may give it the input's place, which only the
  /// convolution still reads, and a fused write would overwrite it early.
  static bool fusableActivation(const plan::Plan &plan, size_t i) {
    if (i + 1 >= plan.ops.size())
      return false;
    const plan::Op &op = plan.ops[i], &next = plan.ops[i + 1];
    if (op.kind != plan::OpKind::Convolution || next.kind != plan::OpKind::Activate || next.accumulate ||
        next.in.empty() || next.out.empty() || next.in[0] != op.out[0] || next.out[0] == op.out[0])
      return false;
    const plan::Buffer &x = plan.buffers[static_cast<size_t>(op.in[0])],
                       &sums = plan.buffers[static_cast<size_t>(op.out[0])],
                       &y = plan.buffers[static_cast<size_t>(next.out[0])];
    auto overlap = [](const plan::Buffer &a, const plan::Buffer &b) {
      return a.isInput() == b.isInput() && a.arenaOffset < b.arenaOffset + b.perSample &&
             b.arenaOffset < a.arenaOffset + a.perSample;
    };
    // The output may sit exactly on the sums (in place, row by row, as the
    // op alone would run), not partly over them: the fused rows go in
    // position order, so a shifted output could overwrite sums not yet read.
    if (x.viewOf >= 0 || y.viewOf >= 0 || sums.viewOf >= 0 || !x.batchScaled() || !y.batchScaled() ||
        !sums.batchScaled() || overlap(x, y) || (overlap(sums, y) && sums.arenaOffset != y.arenaOffset))
      return false;
    const auto &conv = op.get<plan::ConvAttrs>();
    const auto &activation = next.get<plan::ActivationAttrs>();
    return activation.function != ir::Activation::Softmax &&
           activation.nodes == conv.maps * conv.groups * conv.positions;
  }

  /// Whether op i is a convolution's weight gradient followed by its
  /// kernel-bias gradient (the same output gradient and scatter table, not
  /// accumulating into the weight gradient's rows), which the weight
  /// gradient's kernel sums from the rows it reads (KernelCall::then), in
  /// the bias kernel's order: the same bits.
  static bool fusableBiasGradient(const plan::Plan &plan, size_t i) {
    if (i + 1 >= plan.ops.size())
      return false;
    const plan::Op &op = plan.ops[i], &next = plan.ops[i + 1];
    if (op.kind != plan::OpKind::ConvolutionGradWeights || next.kind != plan::OpKind::ConvolutionGradBias ||
        op.in.size() < 4 || next.in.size() < 2 || next.in[0] != op.in[0] || next.in[1] != op.in[3] ||
        next.out.empty() || next.out[0] == op.out[0])
      return false;
    const auto &w = op.get<plan::ConvAttrs>(), &b = next.get<plan::ConvAttrs>();
    return w.maps == b.maps && w.groups == b.groups && w.positions == b.positions;
  }

  /// Whether an op measured faster on all threads (and so shares them unless ShareCheck says alone).
  bool anyShared() const {
    for (size_t i = 0; i < tuned_.size(); ++i)
      if (tuned_[i] && opThreads_[i] > 1)
        return true;
    return false;
  }
  static double seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  /// Keeps call `tuning.calls` of op `index`, which ran on one thread when
  /// even and on all when odd; after the warm-up and kOpTuningSamples of
  /// each, the op keeps the faster count.
  void recordTuning(size_t index, OpTuning &tuning, double microseconds) {
    const int sample = tuning.calls - 2 * cpu::kOpTuningWarmup;
    if (sample >= 0)
      (sample % 2 == 0 ? tuning.one : tuning.all)[static_cast<size_t>(sample / 2)] = microseconds;
    if (++tuning.calls == 2 * (cpu::kOpTuningWarmup + cpu::kOpTuningSamples)) {
      opThreads_[index] = cpu::fasterThreadCount(tuning.one, tuning.all, threads());
      tuning.active = false;
      tuned_[index] = true;
      if (--tuningLeft_ == 0) // every op has chosen: whole steps check the choice
        shareCheck_.start(seconds(), anyShared());
    }
  }

  /// Op `index`, a communication op: starts an all-reduce of its arena range
  /// in place, or waits for every one started (dividing the means).
  Status communicate(size_t index) {
    const plan::Op &op = plan_->ops[index];
    if (!communicator_)
      return fail(fmt::format("the plan's {} needs a communicator (a bug in netc: Backend::attach)",
                              plan::opName(op.kind)));
    if (op.kind == plan::OpKind::AllReduce) {
      const plan::CommAttrs &a = op.get<plan::CommAttrs>();
      float *data = static_cast<float *>(pointers_[static_cast<size_t>(op.in[0])]) + a.offset;
      auto request = communicator_->startAllReduce(data, a.count, comm::DataType::F32, comm::ReduceOp::Sum,
                                                   commNames_[index]);
      if (!request)
        return request.error();
      started_.push_back({*request, a.mean ? data : nullptr, a.count});
      return Status::success();
    }
    Status status = Status::success();
    for (const Started &s : started_) {
      if (status)
        status = communicator_->wait(s.request);
      if (status && s.mean) {
        const float scale = 1.0f / float(communicator_->size());
        for (int64_t k = 0; k < s.count; ++k)
          s.mean[k] *= scale;
      }
    }
    started_.clear();
    return status;
  }

  /// Points the batch-scaled buffers other than the inputs into activation slot `slot`.
  void useActivationSlot(int slot) {
    float *base = arena_ + slot * plan_->memory.arenaPerSample * columns_;
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (const plan::Buffer &buffer = plan_->buffers[b]; buffer.batchScaled() && !buffer.isInput())
        pointers_[b] = base + buffer.arenaOffset * columns_;
    activationSlot_ = slot;
  }

  /// Op `index`, a send or receive of a micro-batch of `batch` samples
  /// between pipeline stages: a send starts from a copy in sample-major
  /// order (transfers_.finish() completes it), a receive completes here.
  Status transfer(size_t index, int64_t batch) {
    const plan::Op &op = plan_->ops[index];
    const int peer = op.get<plan::TransferAttrs>().peer;
    const bool sending = op.kind == plan::OpKind::Send;
    const int buffer = sending ? op.in[0] : op.out[0];
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    const int64_t count = b.perSample * batch;
    float *base = static_cast<float *>(pointers_[static_cast<size_t>(buffer)]);
    if (sending) {
      readAt(base, buffer, transfers_.nextSend(count), 0);
      return transfers_.send(peer, commNames_[index]);
    }
    auto received = transfers_.receive(count, peer, commNames_[index]);
    if (!received)
      return received.error();
    writeAt(base, buffer, *received, 0);
    return Status::success();
  }

  /// Where input buffer `buffer` of slot `slot` starts.
  float *inputPointer(int slot, int buffer) const {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    return inputs_ + (slot * plan_->memory.inputsPerSample + b.arenaOffset) * columns_;
  }

  void writeAt(float *base, int buffer, std::span<const float> values, int64_t offset) {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    if (!lanes_ || !b.batchScaled()) {
      std::memcpy(base + offset, values.data(), values.size_bytes());
      return;
    }
    const Span span = wholeSamples(b, offset, static_cast<int64_t>(values.size()));
    for (int64_t j = 0; j < span.head; ++j)
      base[at(b, offset + j)] = values[static_cast<size_t>(j)];
    kernels_->toFeatureMajor(values.data() + span.head, span.samples, b.perSample, base, lanes_, span.first);
    for (int64_t j = span.tail; j < static_cast<int64_t>(values.size()); ++j)
      base[at(b, offset + j)] = values[static_cast<size_t>(j)];
  }

  void readAt(const float *base, int buffer, std::span<float> values, int64_t offset) const {
    const plan::Buffer &b = plan_->buffers[static_cast<size_t>(buffer)];
    if (!lanes_ || !b.batchScaled()) {
      std::memcpy(values.data(), base + offset, values.size_bytes());
      return;
    }
    const Span span = wholeSamples(b, offset, static_cast<int64_t>(values.size()));
    for (int64_t j = 0; j < span.head; ++j)
      values[static_cast<size_t>(j)] = base[at(b, offset + j)];
    kernels_->fromFeatureMajor(base, lanes_, span.first, span.samples, b.perSample,
                               values.data() + span.head);
    for (int64_t j = span.tail; j < static_cast<int64_t>(values.size()); ++j)
      values[static_cast<size_t>(j)] = base[at(b, offset + j)];
  }

  /// Elements [offset, offset + count) of the interface's sample-major order:
  /// `head` elements finishing a partial sample, then `samples` whole samples
  /// from sample `first`, then the elements from index `tail` on.
  struct Span {
    int64_t head, first, samples, tail;
  };
  static Span wholeSamples(const plan::Buffer &buffer, int64_t offset, int64_t count) {
    const int64_t n = buffer.perSample;
    const int64_t head = std::min(count, (n - offset % n) % n);
    const int64_t samples = (count - head) / n;
    return {head, (offset + head) / n, samples, head + samples * n};
  }
  /// Where element `index` of the sample-major order lies in the feature-major layout.
  int64_t at(const plan::Buffer &buffer, int64_t index) const {
    return (index % buffer.perSample) * lanes_ + index / buffer.perSample;
  }

  BackendOptions options_;
  bool reference_;
  int cores_, others_, threads_; // the machine's cores, the other runnable tasks seen, the threads run
  const plan::Plan *plan_ = nullptr;
  int64_t maxBatch_ = 0;
  const cpu::KernelTable *kernels_ = nullptr;
  std::array<cpu::Kernel, cpu::kKernelOpCount> kernelList_{}; // kernels_'s, the dense ones as dense_ chose
                                                              // (bf16 ones with --precision bf16)
  cpu::DenseKernelChoice dense_;
  std::vector<int> opThreads_;   // per op: the threads it runs on (opThreadCount, then measured)
  std::vector<OpTuning> tuning_; // per op: its thread count's measurement
  std::vector<bool> tuned_;      // per op: its thread count was measured
  std::vector<bool> fusesNext_;  // per op: it runs the op after it (fusableActivation, ...BiasGradient)
  int tuningLeft_ = 0;           // ops still measuring
  cpu::ShareCheck shareCheck_;   // whether the measured ops share the threads now
  std::pair<size_t, size_t> stepRange_{0, 0}; // the calls ShareCheck times
  int64_t lanes_ = 0;               // feature-major row length (fast kernels); 0: sample-major (reference)
  int64_t columns_ = 0;             // values per feature row: lanes_, or the batch (reference)
  std::vector<float> arenaStorage_; // the activation arena's slots, then the input arena's
  float *arena_ = nullptr;          // activation slot 0
  int activationSlot_ = 0;          // the slot the pointers point into
  float *inputs_ = nullptr;
  std::vector<double> workspace_;
  std::vector<std::vector<float>> fixed_; // float-sized cells; tables hold int32 bit patterns
  std::vector<void *> pointers_;
  comm::Communicator *communicator_ = nullptr;
  comm::StageTransfers transfers_;     // a pipeline stage's: rank r of its communicator holds stage r
  std::vector<std::string> commNames_; // per op: what a communication op exchanges (messages)
  /// All-reduces started since the last wait (`mean`: their values, to divide).
  struct Started {
    int64_t request;
    float *mean;
    int64_t count;
  };
  std::vector<Started> started_;
};

} // namespace

std::unique_ptr<Backend> makeCpuBackend(const BackendOptions &options, bool reference) {
  return std::make_unique<CpuBackend>(options, reference);
}

void registerCpuBackend() {
  registerBackend("cpu", [](const BackendOptions &o) { return makeCpuBackend(o, false); });
  registerBackend("cpu-reference", [](const BackendOptions &o) { return makeCpuBackend(o, true); });
}

} // namespace netc::runtime
