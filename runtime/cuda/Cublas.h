// Cublas.h -- cuBLAS, loaded on demand. cuBLAS is a shared library of
// hundreds of megabytes that only a GPU run needs, so netc does not link it:
// the CUDA backend opens it (dlopen) when it loads a plan on a GPU, and a
// machine without it still starts netc and trains on the CPU. The few entry
// points netc calls are resolved by name; every status becomes a message
// naming the call and cuBLAS's own words for the status. The math mode is
// chosen by a pure function of the precision, so FP32 never silently means
// TF32.
#pragma once

#include "runtime/cuda/GemmCall.h"
#include "runtime/cuda/SharedLibrary.h"
#include "support/Status.h"

#include <cublas_api.h>

#include <memory>
#include <string>

namespace netc::runtime::cuda {

/// Arithmetic the libraries may use for float work: exact FP32, or TF32
/// tensor cores where they are faster (`--precision tf32`).
enum class Precision { Fp32, Tf32 };

/// The cuBLAS math mode for `precision`: CUBLAS_DEFAULT_MATH never uses TF32
/// (since cuBLAS 11), CUBLAS_TF32_TENSOR_OP_MATH allows it.
cublasMath_t cublasMathMode(Precision precision);

/// The file names tried, in order, to load cuBLAS of this toolkit's major version.
std::string cublasLibraryName();

/// The cuBLAS column-major single-precision GEMM parameters of `call` as the
/// int arguments cublasSgemm takes; an error when a size exceeds them.
struct SgemmArguments {
  cublasOperation_t transA, transB;
  int m, n, k, lda, ldb, ldc;
};
Expected<SgemmArguments> sgemmArguments(const GemmCall &call);

/// A loaded cuBLAS with one handle bound to a stream.
class Cublas {
public:
  /// Opens cuBLAS, creates a handle on `stream` with `precision`'s math
  /// mode; an error says which library or call failed and what to do.
  static Expected<std::unique_ptr<Cublas>> open(cudaStream_t stream, Precision precision);
  ~Cublas();
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;

  /// Issues `call` on the handle's stream.
  Status gemm(const GemmCall &call) const;
  /// Gives cuBLAS `bytes` of device memory as its workspace, so it allocates
  /// nothing of its own while a graph is captured.
  Status setWorkspace(void *workspace, size_t bytes) const;
  /// The workspace netc gives it (cuBLAS asks for 32 MiB on Hopper, 4 MiB before).
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  /// cuBLAS's version as loaded (e.g. 130100), for the run header.
  int version() const { return version_; }

private:
  struct Functions;
  Cublas() = default;
  SharedLibrary library_; // closed last, after the handle is destroyed
  std::unique_ptr<Functions> functions_;
  cublasHandle_t handle_ = nullptr;
  int version_ = 0;
};

} // namespace netc::runtime::cuda
