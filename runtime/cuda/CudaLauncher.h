// CudaLauncher.h -- runs the CUDA backend's op dispatch (OpRunner.h,
// CudnnRunner.h) on a GPU: bodies as CUDA kernels on one stream, GEMMs
// through cuBLAS and convolutions through cuDNN (loaded on demand, Cublas.h,
// Cudnn.h), zeroing with cudaMemsetAsync, the metrics reduction as one
// block. Declared here for host C++; the kernels and the instantiation of
// the dispatch live in DeviceKernels.cu, the only file nvcc compiles.
// Nothing here synchronises: a launch's own error (a bad configuration, no
// kernel image for this GPU) is kept as the launcher's status, and errors of
// the kernels themselves surface at the caller's next synchronisation (per
// op under --cuda-debug).
#pragma once

#include "codegen/Plan.h"
#include "runtime/cuda/CudnnConvolution.h"
#include "runtime/cuda/CudnnPooling.h"
#include "runtime/cuda/ElementBodies.h"
#include "runtime/cuda/GemmCall.h"
#include "runtime/cuda/LossBodies.h"
#include "support/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace netc::runtime::cuda {

struct OpResources;
struct CudnnOpResources;
struct CudnnPoolResources;
class Cublas;
class Cudnn;

struct CudaLauncher {
  cudaStream_t stream = nullptr;
  const Cublas *cublas = nullptr; // with its handle bound to `stream`
  Cudnn *cudnnLibrary = nullptr;  // likewise; null when the plan has no cuDNN convolution
  /// The first launch or library call that failed, in words (ok: none);
  /// once set, later calls do nothing.
  Status status;
  /// Kernels and library calls issued (a library call counted once).
  int64_t launches = 0;
  /// Keeps `failure` as the status.
  void record(Status failure);

  template <class Body> void elements(const Body &body, int64_t n);
  void gemm(const GemmCall &call);
  void cudnn(const CudnnCall &call);         // defined in Cudnn.cpp
  void cudnnPool(const CudnnPoolCall &call); // likewise
  void zero(float *data, int64_t n);
  void reduceMetrics(const MetricsReduceBody &body);
};

/// Threads per block of the element kernels.
inline constexpr int kElementThreads = 256;
/// The grid of an element kernel over n elements: one thread per element up
/// to `maxBlocks` blocks, beyond which each thread strides over several.
inline int64_t elementBlocks(int64_t n, int64_t maxBlocks = 65535 * 16) {
  const int64_t blocks = (n + kElementThreads - 1) / kElementThreads;
  return blocks < maxBlocks ? blocks : maxBlocks;
}

/// A gather of `n` elements (ElementBodies.h) as one kernel on launch.stream:
/// a batch from a data set held on the device.
void gatherRowsOnDevice(const GatherRowsBody &body, int64_t n, CudaLauncher &launch);

/// runPlanOp (CudnnRunner.h) on the GPU.
size_t runPlanOpOnDevice(const plan::Plan &plan, size_t i, size_t last, const OpResources &resources,
                         const CudnnOpResources *conv, const CudnnPoolResources *pool, CudaLauncher &launch);

} // namespace netc::runtime::cuda
