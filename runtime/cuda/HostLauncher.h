// HostLauncher.h -- runs the CUDA backend's op dispatch (OpRunner.h) on the
// host: each body as a plain loop, each GEMM and cuDNN convolution or
// pooling call through the host evaluators with cuBLAS's and cuDNN's
// semantics, and the metrics
// block by simulating its lanes step by step with the functions each device
// lane runs. This is how CI checks every
// hand-written kernel and every library call's parameters against the
// reference kernels without a GPU.
#pragma once

#include "runtime/cuda/CudnnConvolution.h"
#include "runtime/cuda/CudnnPooling.h"
#include "runtime/cuda/GemmCall.h"
#include "runtime/cuda/LossBodies.h"

#include <algorithm>
#include <cstdint>

namespace netc::runtime::cuda {

struct HostLauncher {
  template <class Body> void elements(const Body &body, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
  }
  void gemm(const GemmCall &call) { gemmOnHost(call); }
  void cudnn(const CudnnCall &call) { cudnnCallOnHost(call); }
  void cudnnPool(const CudnnPoolCall &call) { cudnnPoolCallOnHost(call); }
  void zero(float *data, int64_t n) { std::fill(data, data + n, 0.0f); }
  /// One block, lane by lane: every lane's strided sum, then each halving
  /// step of the tree over all lanes (the device separates the steps with
  /// a barrier), then lane 0's finish.
  void reduceMetrics(const MetricsReduceBody &body) {
    float loss[kReduceLanes], correct[kReduceLanes];
    for (int lane = 0; lane < kReduceLanes; ++lane)
      body.laneSums(lane, loss[lane], correct[lane]);
    for (int stride = kReduceLanes / 2; stride > 0; stride /= 2)
      for (int lane = 0; lane < kReduceLanes; ++lane) {
        MetricsReduceBody::treeStep(loss, lane, stride);
        MetricsReduceBody::treeStep(correct, lane, stride);
      }
    body.finish(loss[0], correct[0]);
  }
};

} // namespace netc::runtime::cuda
