// DeviceProbe.h -- whether this machine can run netc's CUDA kernels, and if
// not, why, in words a user can act on: no NVIDIA driver, no device, a
// device index out of range, or a GPU whose compute capability the binary
// has no code for. The CUDA runtime is linked statically and finds the
// driver (libcuda) at run time, so this works, and says "no driver", on any
// machine. The architecture rule is a pure function, tested on the CPU.
#pragma once

#include "support/Status.h"

#include <span>
#include <string>

namespace netc::runtime::cuda {

/// The compute capabilities this binary has code for (CMAKE_CUDA_ARCHITECTURES:
/// 90 means sm_90 machine code and compute_90 PTX).
std::span<const int> builtArchitectures();

/// Whether code built for `architectures` runs on a GPU of compute
/// capability major.minor: machine code for the same major version and a
/// minor no newer, or PTX of an architecture no newer, which the driver
/// compiles for newer GPUs.
bool architectureRuns(std::span<const int> architectures, int major, int minor);

/// One usable GPU.
struct CudaDevice {
  int index = 0;
  std::string name; // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;
  size_t memoryBytes = 0;
  int driverVersion = 0, runtimeVersion = 0;
};

/// GPU `index`, or why netc cannot use it.
Expected<CudaDevice> probeCudaDevice(int index);

} // namespace netc::runtime::cuda
