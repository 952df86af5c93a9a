// Backends.cpp -- the built-in backends, registered once per process: the
// CPU ones always, "cuda" and the NCCL transport where this netc was built
// with CUDA (NETC_HAVE_CUDA);
// and the choice of backend and device from --device and --backend.
#include "api/Backends.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/cpu/DenseKernelChoice.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPolicy.h"
#include "support/Version.h"
#ifdef NETC_HAVE_CUDA
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/DeviceProbe.h"
#include "runtime/cuda/NcclCommunicator.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <mutex>
#include <thread>

namespace netc {

void registerBuiltinBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    runtime::registerCpuBackend();
#ifdef NETC_HAVE_CUDA
    runtime::registerCudaBackend();
    runtime::cuda::registerNcclTransport();
#endif
  });
}

std::optional<std::string> cudaProblem(int device) {
#ifdef NETC_HAVE_CUDA
  auto probed = runtime::cuda::probeCudaDevice(device);
  if (probed)
    return std::nullopt;
  return probed.message();
#else
  (void)device;
  return std::string("this netc was built without CUDA (NETC_WITH_CUDA=OFF, or no nvcc at build time)");
#endif
}

Expected<DeviceChoice> chooseDevice(std::string_view device, std::string_view backend, int localRank,
                                    const std::function<std::optional<std::string>(int)> &probe) {
  const bool cpuBackend = backend == "cpu" || backend == "cpu-reference";
  if (device.empty() || device == "auto") {
    if (cpuBackend)
      return DeviceChoice{std::string(backend), 0, ""};
    if (backend == "cuda")
      return chooseDevice("cuda", backend, localRank, probe);
    if (!backend.empty())
      return DeviceChoice{std::string(backend), localRank, ""}; // another registered backend: its own device
    if (std::optional<std::string> problem = probe(localRank))
      return DeviceChoice{"cpu", 0, fmt::format("--device auto: no usable GPU, {}", *problem)};
    return DeviceChoice{"cuda", localRank, fmt::format("--device auto: cuda:{}", localRank)};
  }
  if (device == "cpu") {
    if (!backend.empty() && !cpuBackend)
      return fail(fmt::format("--backend {} does not run on --device cpu (its backends: cpu, cpu-reference)",
                              backend));
    return DeviceChoice{backend.empty() ? "cpu" : std::string(backend), 0, ""};
  }
  if (device.starts_with("cuda")) {
    int index = 0;
    std::string_view rest = device.substr(4);
    if (!rest.empty()) {
      const char *first = rest.data() + 1, *last = rest.data() + rest.size();
      auto [end, ec] = std::from_chars(first, last, index);
      if (rest[0] != ':' || first == last || ec != std::errc() || end != last || index < 0)
        return fail(
            fmt::format("--device: '{}' is not cpu, cuda, cuda:N (N a GPU index from 0) or auto", device));
    }
    if (!backend.empty() && backend != "cuda")
      return fail(
          fmt::format("--backend {} does not run on --device {} (its backend: cuda)", backend, device));
    const int gpu = index + localRank;
    if (std::optional<std::string> problem = probe(gpu))
      return fail(fmt::format("--device {}: {}", device, *problem));
    return DeviceChoice{"cuda", gpu, ""};
  }
  return fail(fmt::format("--device: '{}' is not cpu, cuda, cuda:N (N a GPU index from 0) or auto", device));
}

int hostOtherRunnableTasks() {
  return runtime::cpu::hostOtherRunnableTasks();
}

std::optional<cost::MachineDescription> describeHostMachine(std::string_view cpuIsa,
                                                            std::string_view denseKernel) {
  const runtime::cpu::KernelTable *table = runtime::cpu::fastTable(cpuIsa);
  if (!table)
    return std::nullopt;
  cost::MachineDescription m;
  m.cpu = runtime::cpu::hostCpuModel();
  m.isa = table->name;
  m.dense = runtime::cpu::chooseDenseKernel(runtime::cpu::hostCpuFeatures(), table->name,
                                            runtime::cpu::hostBlas(), denseKernel)
                .label;
  m.netc = kVersion;
  m.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

Expected<BackendSetup> backendSetup(const DeviceSettings &s,
                                    const std::function<std::optional<std::string>(int)> &probe) {
  if (s.precision != "fp32" && s.precision != "tf32" && s.precision != "bf16")
    return fail(fmt::format("--precision: '{}' is not fp32, tf32 or bf16", s.precision));
  auto choice = chooseDevice(s.device, s.backend, s.localRank, probe);
  if (!choice)
    return choice.error();
  if (s.precision == "bf16" && choice->backend == "cuda")
    return fail("--precision bf16 runs on the CPU backends (AVX512-BF16); on a GPU, --precision takes fp32 "
                "or tf32");
  BackendSetup setup;
  setup.backend = choice->backend;
  setup.note = choice->note;
  setup.options.threads = s.threads;
  setup.options.device = choice->device;
  setup.options.variant = std::string(s.cpuIsa);
  setup.options.denseKernel = std::string(s.denseKernel);
  setup.options.checkEachOp = s.cudaDebug;
  setup.options.captureGraphs = s.cudaGraphs;
  setup.options.allowTf32 = s.precision == "tf32";
  setup.options.bf16Products = s.precision == "bf16";
  return setup;
}

} // namespace netc
