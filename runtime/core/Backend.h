// Backend.h -- the small interface every execution backend implements
// (docs/architecture.md §Backends): take a Plan and allocate its buffers and arenas, copy
// values in and out, run a range of its ops on a batch, fence and
// synchronise. A training step is one run: everything it needs per step
// (learning rate, loss scale, ...) is in the plan's step scalars buffer,
// written before it, and the loss and accuracy sums stay on the backend
// until read. Inputs are double-buffered: the host fills one input slot
// (asynchronously) while a run reads the other. A data-parallel plan's
// communication ops (all-reduce, wait) run through the communicator the
// backend was attached to, inside the same run. A device backend may also
// hold the whole training set in its memory (--data-on-device): the host
// then uploads each epoch's sample order once and asks for each batch to
// be gathered into an input slot there, instead of copying it in. Backends register
// themselves by name (BackendRegistry); nothing above this interface knows
// which one runs, and no op contains a backend switch.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "support/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::runtime {

/// How to create a backend; every field means the same to every backend.
/// The names BackendOptions::denseKernel takes (`--dense-kernel`).
inline constexpr std::string_view kDenseKernelNames[] = {"auto", "netc", "openblas"};

struct BackendOptions {
  int threads = 0; // host threads; 0: the backend's default (all cores)
  int device = 0;  // which device (backends with several)
  /// A backend-specific variant: for "cpu" the fast kernels' instruction
  /// set ("avx512", "avx2", "baseline"; empty: the best this processor
  /// supports), read at the edge (the CLI's NETC_CPU_ISA), never here; for
  /// "cuda", "no-cudnn" runs every convolution through netc's own kernels
  /// (empty: cuDNN where it can compute the op exactly).
  std::string variant;
  /// "cpu": the dense products' kernels (`--dense-kernel`: "auto" or empty,
  /// "netc", "openblas"; runtime/cpu/DenseKernelChoice.h). Other backends ignore it.
  std::string denseKernel = {};
  /// Check each op as it runs (`--cuda-debug`): a device backend waits for
  /// every op and names the op and layer of the first that fails. Slow.
  bool checkEachOp = false;
  /// Let float math use reduced-precision units where a library offers them
  /// (`--precision tf32`: TF32 tensor cores); off, FP32 means FP32.
  bool allowTf32 = false;
  /// `--precision bf16` (the CPU backends): the dense and convolution
  /// products take both factors rounded to bfloat16 and sum in FP32
  /// (AVX512-BF16), the reference backend the same factors summed in double;
  /// weights, biases, optimizer state and every other op stay FP32. A
  /// processor without AVX512-BF16 is refused at load.
  bool bf16Products = false;
  /// Replay a run's ops as one captured graph where the device has them
  /// (`--cuda-graphs`, on by default): a GPU captures each range of ops,
  /// batch size and input slot once, then launches it whole.
  bool captureGraphs = true;
};

/// A device's peak rates, measured: multiply-adds (two FLOPs each) per
/// second on the backend's threads, and the bytes per second a streaming
/// copy moves (read plus write) on one thread.
struct PeakRates {
  double gflops = 0, gbPerSecond = 0;
  double flopsPerCore = 0; ///< gflops / the threads (host backends)
  /// The same for the products a run rounds to bf16 (--precision bf16 on a
  /// host backend; 0 without), and the op kinds that run them.
  double bf16Gflops = 0, bf16FlopsPerCore = 0;
  std::vector<plan::OpKind> bf16Kinds;
  /// The same copy within each cache level (host backends: the second and
  /// third), smallest first: the ceiling of ops whose bytes fit there.
  struct CacheCeiling {
    int64_t bytes = 0;
    double gbPerSecond = 0;
  };
  std::vector<CacheCeiling> caches;
};

/// What a backend says about itself (the run header, the defaults it picks).
struct BackendInfo {
  std::string name;            // "cpu", "cpu-reference", ...
  int threads = 1;             // host threads it runs
  std::string device;          // "AMD EPYC (avx2)", "NVIDIA H100", ...
  int64_t defaultLogEvery = 1; // steps between reads of the loss sums (--log-every)
  /// The kernels of the dense products ("netc avx512", "OpenBLAS 0.3.21
  /// Haswell", "cuBLAS"; empty where the backend does not say), and a
  /// warning when they run generic code on a processor with wider vectors.
  std::string denseKernels, kernelWarning;
  /// How the host threads were chosen and wait ("--threads 0: 1 of 2 cores,
  /// 1 other task running; idle threads spin 1000 then sleep (netc's
  /// default)"; empty where the backend does not say).
  std::string threadNote;
  /// Ops the backend runs inside the op before them (the CPU's: a
  /// convolution's activation), of the loaded plan.
  int64_t fusedOps = 0;
  /// Device backends: the kernels and library calls the last run issued
  /// (a library call counted once), and the device memory the plan holds.
  int64_t launchesLastRun = 0;
  int64_t deviceBytes = 0;
  /// Device backends: the runs captured as graphs so far, and whether the
  /// last run was a graph's replay.
  int64_t graphsCaptured = 0;
  bool lastRunReplayed = false;
  /// Whether holdDataset can keep a training set in this backend's memory
  /// (a device's); the others read every batch from host memory anyway.
  bool holdsData = false;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Valid after load.
  virtual BackendInfo describe() const = 0;
  /// Allocates every buffer of `plan` for batches of up to `maxBatch` samples
  /// (its inputs `plan.inputSlots` times, its workspace as large as this
  /// backend's kernels need) and uploads its index tables; an error says how
  /// much memory was needed. Nothing is allocated after load but by
  /// holdDataset.
  virtual Status load(const plan::Plan &plan, int64_t maxBatch) = 0;
  /// Copies float values into buffer `buffer` starting at element `offset`
  /// (an input buffer: its slot 0), complete on return.
  virtual void write(int buffer, std::span<const float> values, int64_t offset = 0) = 0;
  /// Copies float values out of buffer `buffer` starting at element `offset`
  /// after the ops issued so far.
  virtual void read(int buffer, std::span<float> values, int64_t offset = 0) const = 0;
  /// Starts copying a batch into input buffer `buffer` (features or labels)
  /// of input slot `slot`, ordered after every run issued before it (which
  /// may still read that slot); `values` must stay valid until fence() returns.
  virtual void writeInput(int slot, int buffer, std::span<const float> values) = 0;
  /// Waits until every writeInput issued so far is complete.
  virtual void fence() = 0;
  /// Keeps a data set of `count` samples in this backend's memory for
  /// gatherInput, in place of one kept before: `features` holds count rows
  /// of the plan's features per sample, `labels` count rows of its labels
  /// per sample, exactly as writeInput would receive them. Valid after
  /// load; an error says how much memory it needs and how much is free. The
  /// default refuses (BackendInfo::holdsData).
  virtual Status holdDataset(std::span<const float> /*features*/, std::span<const float> /*labels*/,
                             int64_t /*count*/) {
    return fail("the " + std::string(name()) + " backend cannot hold a data set in its memory");
  }
  /// The order gatherInput reads the held data set in (an epoch's, or this
  /// rank's share of it): position p is sample order[p], each in [0, count)
  /// of holdDataset; at most `count` positions. Ordered after every
  /// gatherInput issued before it.
  virtual Status setSampleOrder(std::span<const int32_t> /*order*/) {
    return fail("the " + std::string(name()) + " backend holds no data set to order");
  }
  /// What writeInput does for the features and the labels of input slot
  /// `slot`, from the held data set: the samples at positions [first,
  /// first + count) of the sample order, gathered where the data is held,
  /// ordered after every run issued before it (which may still read that
  /// slot); a later run of that slot waits for it, and nothing on the host
  /// needs to stay valid (no fence). Fails at once for positions outside
  /// the order or more samples than load's batch; a device's own failure
  /// comes back from the next run.
  virtual Status gatherInput(int /*slot*/, int64_t /*first*/, int64_t /*count*/) {
    return fail("the " + std::string(name()) + " backend holds no data set to gather from");
  }
  /// The communicator the plan's communication ops reduce over (its arenas
  /// in this backend's memory); null: none (a plan without such ops). Must
  /// outlive every run.
  virtual void attach(comm::Communicator *communicator) = 0;
  /// A pipeline stage's plan (Plan::stages > 1): the communicator of its
  /// pipeline, where rank r holds stage r; its send and receive ops go
  /// through it. A receive completes inside its op; a send starts there,
  /// from a copy, and completes before the plan's update op runs (stage
  /// plans are training plans: every step ends with one), so that
  /// neighbouring stages sending to each other never wait for each other.
  /// Values move in the interface's sample-major order whatever each
  /// backend holds. A backend that cannot run stages refuses their plans at
  /// load. Must outlive every run.
  virtual void attachStages(comm::Communicator * /*stages*/) {}
  /// Runs ops [first, last) of the loaded plan on a batch of `batch` samples
  /// read from input slot `inputSlot`, with the activations of activation
  /// slot `activationSlot` (a pipeline stage keeps each micro-batch in
  /// flight in a slot of its own: Plan::activationSlots). Fails in a
  /// communication op (its communicator's error: a rank that did not
  /// answer, ...) or, on a device, when the device reports an error (that
  /// op's, or one kept from an earlier call that could not return it); the
  /// ops after it are not run.
  virtual Status run(size_t first, size_t last, int64_t batch, int inputSlot = 0, int activationSlot = 0) = 0;
  /// Waits for everything issued so far.
  virtual void synchronize() = 0;
  /// Issues every send a pipeline stage's ops left (a backend may hold the
  /// sends that close a run back, to issue them with the next run's
  /// receives) and waits until they have been received (a send otherwise
  /// completes at the next update op): what the trainer calls at the end of
  /// a step's micro-batches and evaluation after each batch, so that the
  /// stage never holds more than a step's or a batch's sends, and nothing
  /// else uses the pipeline's communicator before them.
  virtual Status finishTransfers() { return Status::success(); }

  /// A short probe of what the device can do at best (the roofline of
  /// `netc bench --profile`): zero where the backend does not measure it.
  virtual PeakRates measurePeak() { return {}; }
};

using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions &)>;

/// Makes `name` available to createBackend.
void registerBackend(std::string name, BackendFactory factory);
/// The backend called `name` ("cpu", ...), or an error listing the known ones.
Expected<std::unique_ptr<Backend>> createBackend(std::string_view name, const BackendOptions &options);
std::vector<std::string> backendNames();

} // namespace netc::runtime
