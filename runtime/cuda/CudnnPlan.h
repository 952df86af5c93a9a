// CudnnPlan.h -- which ops of a loaded plan the CUDA backend runs on cuDNN,
// and everything those calls need: each convolution and pooling op
// described for cuDNN where it computes the op exactly (CudnnConvolution.h,
// CudnnPooling.h), cuDNN opened if any is, each convolution's algorithm
// from the on-disk cache or measured now (CudnnAlgorithms.h), the
// workspace the largest needs, the permutation tables and scratch they
// take in the backend's one device block, and the call numbers at any
// batch (a partial batch is the same call on fewer samples). An op cuDNN
// has no allowed algorithm for stays on netc's kernels; note() counts
// those on cuDNN for the run header.
#pragma once

#include "codegen/Plan.h"
#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/Cudnn.h"
#include "runtime/cuda/CudnnRunner.h"
#include "runtime/cuda/DeviceProbe.h"
#include "support/Status.h"

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

class CudnnPlan {
public:
  /// Describes and prepares the ops of `plan` (kept by reference) for
  /// batches of up to `maxBatch` on `device`, calls on `stream`; with
  /// `useCudnn` false (the "no-cudnn" variant) none goes to cuDNN.
  Status prepare(const plan::Plan &plan, int64_t maxBatch, cudaStream_t stream, const CudaDevice &device,
                 Precision precision, bool useCudnn);
  /// Places the permutation tables the calls read through `place` (an
  /// offset in the device block, -1 for an empty table) and returns the
  /// scratch floats the largest call needs.
  int64_t placeTables(const std::function<int64_t(const std::vector<int32_t> &)> &place);
  /// Uploads the placed tables through `upload`.
  Status uploadTables(const std::function<Status(int64_t, const std::vector<int32_t> &)> &upload) const;
  /// The device block (where the tables were placed), the scratch of
  /// placeTables' size and the workspace of workspaceBytes() in it.
  void setBlock(float *block, float *scratch, void *workspace);
  size_t workspaceBytes() const { return workspaceBytes_; }
  /// The library (null: no op runs on cuDNN).
  Cudnn *library() const { return cudnn_.get(); }
  /// ", cuDNN 91900 for 5 of 5 convolution ops (...)" for the run header.
  const std::string &note() const { return note_; }

  /// Op `op`'s cuDNN call at `batch` samples, or nothing when netc's kernels run it.
  std::optional<CudnnOpResources> convolution(size_t op, int64_t batch);
  std::optional<CudnnPoolResources> pooling(size_t op, int64_t batch);
  void release();

private:
  /// A convolution op's cuDNN form (slot < 0: netc's kernels compute it).
  struct Convolution {
    CudnnConvolution description;
    CudnnShapes shapes, partial; // at the loaded batch; at partialBatch
    int64_t partialBatch = -1;
    int slot = -1;
    int64_t netChannelOffset = -1, weightRowOffset = -1; // its tables in the block (-1: none)
  };
  /// A pooling op's cuDNN form (slot < 0: netc's kernels compute it).
  struct Pool {
    CudnnPoolShapes shapes, partial; // at the loaded batch; at partialBatch
    int64_t partialBatch = -1;
    int slot = -1;
  };
  const int32_t *intsAt(int64_t offset) const {
    return offset >= 0 ? reinterpret_cast<const int32_t *>(block_ + offset) : nullptr;
  }

  const plan::Plan *plan_ = nullptr;
  int64_t maxBatch_ = 0;
  std::unique_ptr<Cudnn> cudnn_;
  std::vector<Convolution> convolutions_; // by op index
  std::vector<Pool> pools_;               // by op index
  std::string note_;
  size_t workspaceBytes_ = 0;
  float *block_ = nullptr, *scratch_ = nullptr;
};

} // namespace netc::runtime::cuda
