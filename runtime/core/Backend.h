// Backend.h -- the small interface every execution backend implements
// (DESIGN.md §6): take a Plan and allocate its buffers, copy values in and
// out, run a range of its ops on a batch, synchronise. Backends register
// themselves by name (BackendRegistry); nothing above this interface knows
// which one runs, and no op contains a backend switch.
#pragma once

#include "codegen/Plan.h"
#include "runtime/optim/Optimizer.h"
#include "support/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc::runtime {

/// What the update ops of one step use.
struct UpdateSettings {
  optim::OptimizerKind optimizer = optim::OptimizerKind::Sgd;
  optim::Hyperparameters hyper;
  float learningRate = 0.1f; // the scheduled rate for this step
  int64_t step = 1;          // 1-based update count
};

struct BackendOptions {
  int threads = 0;        // 0: the backend's default (all cores)
  bool reference = false; // the naive reference kernels (tests, debugging)
  /// CPU: the fast kernels' instruction set ("avx512", "avx2", "baseline");
  /// empty: $NETC_CPU_ISA if set, else the best this processor supports.
  std::string instructionSet;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Allocates every buffer of `plan` for batches of up to `maxBatch` samples
  /// and uploads its index tables; an error says how much memory was needed.
  virtual Status load(const plan::Plan &plan, int64_t maxBatch) = 0;
  /// Copies float values into buffer `buffer` starting at element `offset`.
  virtual void write(int buffer, std::span<const float> values, int64_t offset = 0) = 0;
  /// Copies float values out of buffer `buffer` starting at element `offset`.
  virtual void read(int buffer, std::span<float> values, int64_t offset = 0) const = 0;
  /// Runs ops [first, last) of the loaded plan on a batch of `batch` samples.
  virtual void run(size_t first, size_t last, int64_t batch, const UpdateSettings &update) = 0;
  /// Waits for everything issued so far.
  virtual void synchronize() = 0;
};

using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions &)>;

/// Makes `name` available to createBackend.
void registerBackend(std::string name, BackendFactory factory);
/// The backend called `name` ("cpu", ...), or an error listing the known ones.
Expected<std::unique_ptr<Backend>> createBackend(std::string_view name, const BackendOptions &options);
std::vector<std::string> backendNames();

} // namespace netc::runtime
