// DeviceKernels.cu -- the CUDA side of the backend's kernels: one grid-stride
// kernel template that runs any host/device body (ElementBodies.h and its
// siblings) one element per thread, the one-block metrics reduction (the
// lane functions of LossBodies.h with a barrier between tree steps), the
// launcher's members (CudaLauncher.h), the op dispatch (runPlanOp,
// CudnnRunner.h) instantiated for that launcher, and the gather of a batch
// from a data set held on the device. The logic of every body runs in CI on
// the host (HostLauncher.h); this file only maps it onto threads.
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/CudaLauncher.h"
#include "runtime/cuda/CudnnRunner.h"
#include "runtime/cuda/OpRunner.h"

#include <string>

namespace netc::runtime::cuda {

namespace {

template <class Body> __global__ void elementKernel(Body body, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    body(i);
}

__global__ void metricsKernel(MetricsReduceBody body) {
  __shared__ float loss[kReduceLanes], correct[kReduceLanes];
  const int lane = static_cast<int>(threadIdx.x);
  body.laneSums(lane, loss[lane], correct[lane]);
  __syncthreads();
  for (int stride = kReduceLanes / 2; stride > 0; stride /= 2) {
    MetricsReduceBody::treeStep(loss, lane, stride);
    MetricsReduceBody::treeStep(correct, lane, stride);
    __syncthreads();
  }
  if (lane == 0)
    body.finish(loss[0], correct[0]);
}

} // namespace

/// Keeps the first failure: `what` failed with CUDA error `e`.
static Status cudaFailure(cudaError_t e, const char *what) {
  // No fmt here: its compile-time format checks do not build under nvcc.
  return fail(std::string(what) + " failed: " + cudaGetErrorString(e) + " (" +
              std::to_string(static_cast<int>(e)) + ")");
}

void CudaLauncher::record(Status failure) {
  // (void): nvcc's front end counts the assignment's result as a discarded [[nodiscard]] Status.
  static_cast<void>(status = std::move(failure));
}

template <class Body> void CudaLauncher::elements(const Body &body, int64_t n) {
  if (n <= 0 || !status)
    return;
  elementKernel<<<static_cast<unsigned>(elementBlocks(n)), kElementThreads, 0, stream>>>(body, n);
  ++launches;
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    record(cudaFailure(e, "a kernel launch"));
}

void CudaLauncher::gemm(const GemmCall &call) {
  if (!status)
    return;
  record(cublas->gemm(call));
  ++launches;
}

void CudaLauncher::zero(float *data, int64_t n) {
  if (n <= 0 || !status)
    return;
  if (cudaError_t e = cudaMemsetAsync(data, 0, static_cast<size_t>(n) * sizeof(float), stream);
      e != cudaSuccess)
    record(cudaFailure(e, "cudaMemsetAsync"));
  ++launches;
}

void CudaLauncher::reduceMetrics(const MetricsReduceBody &body) {
  if (!status)
    return;
  metricsKernel<<<1, kReduceLanes, 0, stream>>>(body);
  ++launches;
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    record(cudaFailure(e, "the metrics kernel launch"));
}

void gatherRowsOnDevice(const GatherRowsBody &body, int64_t n, CudaLauncher &launch) {
  launch.elements(body, n);
}

size_t runPlanOpOnDevice(const plan::Plan &plan, size_t i, size_t last, const OpResources &resources,
                         const CudnnOpResources *conv, const CudnnPoolResources *pool, CudaLauncher &launch) {
  return runPlanOp(plan, i, last, resources, conv, pool, launch);
}

} // namespace netc::runtime::cuda
