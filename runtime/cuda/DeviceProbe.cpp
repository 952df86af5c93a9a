// DeviceProbe.cpp -- finding a usable GPU and saying why there is none
// (DeviceProbe.h).
#include "runtime/cuda/DeviceProbe.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace netc::runtime::cuda {

std::span<const int> builtArchitectures() {
  // NETC_CUDA_ARCHITECTURE_LIST: CMAKE_CUDA_ARCHITECTURES, comma-separated (runtime/cuda/CMakeLists.txt).
  static constexpr int architectures[] = {NETC_CUDA_ARCHITECTURE_LIST};
  return architectures;
}

bool architectureRuns(std::span<const int> architectures, int major, int minor) {
  const int device = major * 10 + minor;
  for (int built : architectures) {
    // CMake's "90" is sm_90 machine code plus compute_90 PTX: the machine
    // code runs on 9.x with x >= 0, the PTX on anything from 9.0 on.
    if (built <= device)
      return true;
  }
  return false;
}

Expected<CudaDevice> probeCudaDevice(int index) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    if (driver == 0)
      return fail("no NVIDIA driver on this machine (libcuda.so.1 was not found); use --device cpu");
    if (e == cudaErrorInsufficientDriver)
      return fail(
          fmt::format("the NVIDIA driver supports CUDA {}.{}, older than the CUDA {}.{} netc was built with; "
                      "update the driver or use --device cpu",
                      driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10));
    return fail("the NVIDIA driver reports no GPU on this machine; use --device cpu");
  }
  if (e != cudaSuccess)
    return fail(fmt::format("cannot query the GPUs: {} ({}); use --device cpu", cudaGetErrorString(e),
                            static_cast<int>(e)));
  if (index < 0 || index >= count)
    return fail(fmt::format("there is no GPU cuda:{} on this machine: it has {} (cuda:0{})", index, count,
                            count > 1 ? fmt::format(" to cuda:{}", count - 1) : ""));
  cudaDeviceProp properties{};
  if (cudaError_t p = cudaGetDeviceProperties(&properties, index); p != cudaSuccess)
    return fail(fmt::format("cannot read the properties of cuda:{}: {}", index, cudaGetErrorString(p)));
  CudaDevice device;
  device.index = index;
  device.name = properties.name;
  device.major = properties.major;
  device.minor = properties.minor;
  device.memoryBytes = properties.totalGlobalMem;
  cudaDriverGetVersion(&device.driverVersion);
  cudaRuntimeGetVersion(&device.runtimeVersion);
  if (!architectureRuns(builtArchitectures(), device.major, device.minor)) {
    std::string built;
    for (int a : builtArchitectures())
      built += fmt::format("{}sm_{}", built.empty() ? "" : ", ", a);
    return fail(fmt::format("cuda:{} ({}) has compute capability {}.{}, and this netc has code only for {}; "
                            "rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{} or use --device cpu",
                            index, device.name, device.major, device.minor, built, device.major,
                            device.minor));
  }
  return device;
}

} // namespace netc::runtime::cuda
