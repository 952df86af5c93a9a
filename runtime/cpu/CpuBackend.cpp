// CpuBackend.cpp -- the CPU implementation of the Backend interface: host
// allocation with a size check (a plan too large for memory is an error that
// says how much it needs), copies, and op dispatch through the fast or
// reference kernel table. Threads: OpenMP for the loops, OpenBLAS for GEMM.
#include "runtime/cpu/CpuBackend.h"
#include "runtime/cpu/Kernels.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <cstring>
#include <new>

extern "C" void openblas_set_num_threads(int);

namespace netc::runtime {

namespace cpu {

namespace {
const Kernel kFast[] = {
#define OP(Id, Name, Role, Backward) &fast::Id,
#include "codegen/Ops.def"
#undef OP
};
const Kernel kReference[] = {
#define OP(Id, Name, Role, Backward) &reference::Id,
#include "codegen/Ops.def"
#undef OP
};
int gThreads = 0;
} // namespace

Kernel kernelFor(plan::OpKind kind, bool referenceKernels) {
  return (referenceKernels ? kReference : kFast)[static_cast<int>(kind)];
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

} // namespace cpu

namespace {

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const BackendOptions &options) : options_(options) {}

  std::string_view name() const override { return options_.reference ? "cpu-reference" : "cpu"; }

  Status load(const plan::Plan &plan, int64_t maxBatch) override {
    if (maxBatch <= 0)
      return fail(fmt::format("batch size must be positive, got {}", maxBatch));
    cpu::setThreadCount(options_.threads);
    plan_ = &plan;
    maxBatch_ = maxBatch;
    // Size check before any allocation.
    const int64_t limit = int64_t{1} << 40; // 1 TiB of elements: beyond any host
    if (plan.memory.arenaPerSample > limit / maxBatch)
      return fail(fmt::format("the plan needs {} values per sample; with batch {} that exceeds what can be "
                              "allocated",
                              plan.memory.arenaPerSample, maxBatch));
    const int64_t arenaElements = plan.memory.arenaPerSample * maxBatch;
    try {
      arena_.assign(static_cast<size_t>(arenaElements), 0.0f);
      fixed_.clear();
      fixed_.resize(plan.buffers.size());
      pointers_.assign(plan.buffers.size(), nullptr);
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        const plan::Buffer &buffer = plan.buffers[b];
        if (buffer.batchScaled()) {
          pointers_[b] = arena_.data() + buffer.arenaOffset * maxBatch;
          continue;
        }
        fixed_[b].assign(static_cast<size_t>(std::max<int64_t>(buffer.fixed, 1)), 0.0f);
        if (buffer.type == plan::ElementType::I32)
          std::memcpy(fixed_[b].data(), buffer.table.data(), buffer.table.size() * sizeof(int32_t));
        pointers_[b] = fixed_[b].data();
      }
    } catch (const std::bad_alloc &) {
      return fail(fmt::format("out of memory: the plan needs {:.1f} MiB for batch {}",
                              double(plan.bytesPerBatch(maxBatch)) / (1 << 20), maxBatch));
    }
    return Status::success();
  }

  void write(int buffer, std::span<const float> values, int64_t offset) override {
    std::memcpy(static_cast<float *>(pointers_[static_cast<size_t>(buffer)]) + offset, values.data(),
                values.size_bytes());
  }

  void read(int buffer, std::span<float> values, int64_t offset) const override {
    std::memcpy(values.data(), static_cast<const float *>(pointers_[static_cast<size_t>(buffer)]) + offset,
                values.size_bytes());
  }

  void run(size_t first, size_t last, int64_t batch, const UpdateSettings &update) override {
    // The OpenMP and OpenBLAS thread counts are process-wide: apply this
    // backend's own before running (another backend may have changed them
    // since load, e.g. a reference and a fast backend side by side).
    const int threads = options_.threads > 0 ? options_.threads : omp_get_num_procs();
    if (cpu::threadCount() != threads)
      cpu::setThreadCount(threads);
    for (size_t i = first; i < last && i < plan_->ops.size(); ++i) {
      const plan::Op &op = plan_->ops[i];
      cpu::KernelCall call{op, batch, pointers_.data(), &update};
      cpu::kernelFor(op.kind, options_.reference)(call);
    }
  }

  void synchronize() override {}

private:
  BackendOptions options_;
  const plan::Plan *plan_ = nullptr;
  int64_t maxBatch_ = 0;
  std::vector<float> arena_;
  std::vector<std::vector<float>> fixed_; // float-sized cells; tables hold int32 bit patterns
  std::vector<void *> pointers_;
};

} // namespace

std::unique_ptr<Backend> makeCpuBackend(const BackendOptions &options) {
  return std::make_unique<CpuBackend>(options);
}

void registerCpuBackend() {
  registerBackend("cpu", [](const BackendOptions &o) { return makeCpuBackend(o); });
  registerBackend("cpu-reference", [](const BackendOptions &o) {
    BackendOptions reference = o;
    reference.reference = true;
    return makeCpuBackend(reference);
  });
}

} // namespace netc::runtime
