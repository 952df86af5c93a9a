// Backends.h -- registers every execution backend built into this netc with
// the runtime's registry, once (the one place that names them), and chooses
// the backend and device of a run from --device and --backend: one flag
// picks the machine (auto, cpu, cuda[:N]), the other, optional, the kernels
// on it (cpu or cpu-reference on the CPU, cuda on a GPU).
#pragma once

#include "codegen/CostTable.h"
#include "runtime/core/Backend.h"
#include "support/Status.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace netc {

/// Registers "cpu" and "cpu-reference" (and "cuda" where built with CUDA) on first call.
void registerBuiltinBackends();

/// This machine as a CPU cost table describes it, with the fast kernels of
/// `cpuIsa` (empty: the best this processor runs) and the dense kernels of
/// `denseKernel` (as --cpu-isa and --dense-kernel take them); no peaks.
/// Nothing when this processor does not run `cpuIsa`.
std::optional<cost::MachineDescription> describeHostMachine(std::string_view cpuIsa,
                                                            std::string_view denseKernel);

/// The runnable tasks of this machine besides this process (the CPU
/// backend's count for --threads 0: /proc/loadavg, or NETC_OTHER_TASKS).
int hostOtherRunnableTasks();

/// Why GPU `device` cannot run netc's CUDA backend (no driver, no such
/// device, no code for its architecture, a netc built without CUDA), or
/// nothing when it can.
std::optional<std::string> cudaProblem(int device);

/// Where a run computes, and the words the run header adds about the choice.
struct DeviceChoice {
  std::string backend; // a registered backend: "cpu", "cpu-reference", "cuda"
  int device = 0;      // the GPU index (cuda)
  std::string note;    // "" for an explicit choice; else why auto chose it
};

/// The backend and device for `--device` (auto or empty, cpu, cuda, cuda:N)
/// and `--backend` (empty: the device's own) on the process of local rank
/// `localRank` (rank r of a node uses GPU N + r). `probe` says why a GPU is
/// unusable (cudaProblem). An error says which flag is wrong and why.
Expected<DeviceChoice>
chooseDevice(std::string_view device, std::string_view backend, int localRank,
             const std::function<std::optional<std::string>(int)> &probe = cudaProblem);

/// The settings of a run that say where and how it computes (the fields of
/// TrainSettings, ModelOptions and BenchSettings of the same names).
struct DeviceSettings {
  std::string_view device, backend, precision, cpuIsa, denseKernel;
  bool cudaDebug = false, cudaGraphs = true;
  int threads = 0, localRank = 0;
};

/// A backend to create: its name, its options, and the header note (DeviceChoice).
struct BackendSetup {
  std::string backend;
  runtime::BackendOptions options;
  std::string note;
};

/// chooseDevice, with --precision checked and the options filled in.
Expected<BackendSetup>
backendSetup(const DeviceSettings &settings,
             const std::function<std::optional<std::string>(int)> &probe = cudaProblem);

} // namespace netc
