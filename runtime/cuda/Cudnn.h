// Cudnn.h -- cuDNN, loaded on demand (like cuBLAS, Cublas.h: hundreds of
// megabytes that only a GPU run with convolutions needs), and the
// convolution and pooling calls the backend prepares at load and issues per
// step. Each
// call's descriptors come from CudnnShapes (pure, tested on the CPU); its
// algorithm is chosen by measurement (cudnnFind*) or taken from the on-disk
// cache (CudnnAlgorithms.h). FP32 sets CUDNN_FMA_MATH, which excludes
// TF32, and only FMA-math algorithms are accepted; `--precision tf32`
// allows tensor-op math. Every status becomes a message naming the call.
#pragma once

#include "runtime/cuda/Cublas.h"
#include "runtime/cuda/CudnnAlgorithms.h"
#include "runtime/cuda/CudnnConvolution.h"
#include "runtime/cuda/CudnnPooling.h"
#include "runtime/cuda/SharedLibrary.h"
#include "support/Status.h"

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

/// The descriptor math type for `precision`: FMA only for FP32 (cuDNN's
/// default math lets FP32 convolutions use TF32 on sm_80 and later).
cudnnMathType_t cudnnMathType(Precision precision);
/// The math types an algorithm may report and be used at `precision`.
std::vector<int> allowedMathTypes(Precision precision);

/// The file name tried to load cuDNN of this build's major version.
std::string cudnnLibraryName();

class Cudnn {
public:
  /// Opens cuDNN and creates a handle on `stream`; an error says which
  /// library or call failed and what to do.
  static Expected<std::unique_ptr<Cudnn>> open(cudaStream_t stream);
  ~Cudnn();
  Cudnn(const Cudnn &) = delete;
  Cudnn &operator=(const Cudnn &) = delete;

  /// cuDNN's version as loaded (e.g. 91900).
  size_t version() const { return version_; }

  /// Prepares a call of `pass` on `shapes` (the loaded batch) and chooses
  /// its algorithm: `cache`'s choice under `key`, else the fastest allowed
  /// by measurement, which `cache` then remembers. Returns the call's slot.
  /// Measuring allocates temporary device memory (cuDNN's own), so it is
  /// done at load.
  Expected<int> prepare(CudnnPass pass, const CudnnShapes &shapes, Precision precision,
                        const std::string &key, AlgorithmCache &cache);
  /// The workspace the slot's algorithm needs at its prepared shapes.
  size_t workspaceBytes(int slot) const;
  /// Where every call's workspace is (the device block), and its size.
  void setWorkspace(void *workspace, size_t bytes) {
    workspace_ = workspace;
    workspaceBytes_ = bytes;
  }
  /// Whether the slot's algorithm was measured now (not cached).
  bool measured(int slot) const;
  /// Issues `call` on the handle's stream (its shapes may have another batch
  /// than the prepared one: the tensors are described again, and a
  /// workspace that would not fit is an error naming the sizes).
  Status run(const CudnnCall &call);

  /// Prepares a pooling op's calls on `shapes` (the loaded batch): max
  /// pooling in cuDNN's deterministic mode, mean over the whole window.
  /// Returns the slot.
  Expected<int> preparePooling(const CudnnPoolShapes &shapes);
  /// Issues `call` (its shapes may have another batch than the prepared one).
  Status runPooling(const CudnnPoolCall &call);

private:
  struct Functions;
  struct Prepared;
  Cudnn();
  Status check(cudnnStatus_t status, const char *call) const;
  Status describe(Prepared &p, const CudnnShapes &shapes);
  Status describeTensors(Prepared &p, int rank, const int *xDims, const int *xStrides, const int *yDims,
                         const int *yStrides);
  SharedLibrary library_; // closed last, after the handle is destroyed
  std::unique_ptr<Functions> functions_;
  cudnnHandle_t handle_ = nullptr;
  size_t version_ = 0;
  std::vector<std::unique_ptr<Prepared>> prepared_;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
};

} // namespace netc::runtime::cuda
