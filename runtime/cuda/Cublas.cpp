// Cublas.cpp -- loading cuBLAS on demand and calling it (Cublas.h).
#include "runtime/cuda/Cublas.h"

#include <fmt/format.h>

#include <climits>

namespace netc::runtime::cuda {

cublasMath_t cublasMathMode(Precision precision) {
  return precision == Precision::Tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
}

std::string cublasLibraryName() {
  return fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
}

Expected<SgemmArguments> sgemmArguments(const GemmCall &call) {
  for (int64_t v : {call.m, call.n, call.k, call.lda, call.ldb, call.ldc})
    if (v < 0 || v > INT_MAX)
      return fail(fmt::format("a GEMM of {} × {} × {} is beyond cuBLAS's 32-bit sizes; use a smaller --batch",
                              call.m, call.n, call.k));
  return SgemmArguments{call.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                        call.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                        static_cast<int>(call.m),
                        static_cast<int>(call.n),
                        static_cast<int>(call.k),
                        static_cast<int>(call.lda),
                        static_cast<int>(call.ldb),
                        static_cast<int>(call.ldc)};
}

struct Cublas::Functions {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSetMathMode) setMathMode = nullptr;
  decltype(&cublasGetVersion_v2) getVersion = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSetWorkspace_v2) setWorkspace = nullptr;
};

namespace {

std::string statusText(const decltype(&cublasGetStatusString) statusString, cublasStatus_t status) {
  const char *text = statusString ? statusString(status) : nullptr;
  return text ? fmt::format("{} ({})", text, static_cast<int>(status))
              : fmt::format("status {}", static_cast<int>(status));
}

} // namespace

Expected<std::unique_ptr<Cublas>> Cublas::open(cudaStream_t stream, Precision precision) {
  std::unique_ptr<Cublas> out(new Cublas());
  const std::string name = cublasLibraryName();
  if (!out->library_.open(name))
    return fail(fmt::format("cannot load cuBLAS ({}): {}. Put the CUDA {} libraries on LD_LIBRARY_PATH, or "
                            "run on the CPU with --device cpu",
                            name, out->library_.why(), CUBLAS_VER_MAJOR));
  out->functions_ = std::make_unique<Functions>();
  Functions &f = *out->functions_;
  auto resolve = [&](auto &function, const char *symbol) { out->library_.resolve(function, symbol); };
  resolve(f.create, "cublasCreate_v2");
  resolve(f.destroy, "cublasDestroy_v2");
  resolve(f.setStream, "cublasSetStream_v2");
  resolve(f.setMathMode, "cublasSetMathMode");
  resolve(f.getVersion, "cublasGetVersion_v2");
  resolve(f.statusString, "cublasGetStatusString");
  resolve(f.sgemm, "cublasSgemm_v2");
  resolve(f.setWorkspace, "cublasSetWorkspace_v2");
  if (const std::string &missing = out->library_.missing(); !missing.empty())
    return fail(fmt::format("{} lacks {}: it is not the cuBLAS netc was built for (CUDA {})", name, missing,
                            CUBLAS_VER_MAJOR));
  auto check = [&](cublasStatus_t status, const char *call) -> Status {
    if (status == CUBLAS_STATUS_SUCCESS)
      return Status::success();
    return fail(fmt::format("{} failed: {}", call, statusText(f.statusString, status)));
  };
  if (Status s = check(f.create(&out->handle_), "cublasCreate"); !s)
    return fail(s.message());
  if (Status s = check(f.setStream(out->handle_, stream), "cublasSetStream"); !s)
    return fail(s.message());
  if (Status s = check(f.setMathMode(out->handle_, cublasMathMode(precision)), "cublasSetMathMode"); !s)
    return fail(s.message());
  if (Status s = check(f.getVersion(out->handle_, &out->version_), "cublasGetVersion"); !s)
    return fail(s.message());
  return out;
}

Cublas::~Cublas() {
  if (handle_ && functions_ && functions_->destroy)
    functions_->destroy(handle_);
}

Status Cublas::gemm(const GemmCall &call) const {
  auto arguments = sgemmArguments(call);
  if (!arguments)
    return arguments.error();
  const SgemmArguments &g = *arguments;
  const cublasStatus_t status = functions_->sgemm(handle_, g.transA, g.transB, g.m, g.n, g.k, &call.alpha,
                                                  call.a, g.lda, call.b, g.ldb, &call.beta, call.c, g.ldc);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(fmt::format("cublasSgemm ({} × {} × {}) failed: {}", g.m, g.n, g.k,
                            statusText(functions_->statusString, status)));
  return Status::success();
}

Status Cublas::setWorkspace(void *workspace, size_t bytes) const {
  const cublasStatus_t status = functions_->setWorkspace(handle_, workspace, bytes);
  if (status != CUBLAS_STATUS_SUCCESS)
    return fail(fmt::format("cublasSetWorkspace ({} bytes) failed: {}", bytes,
                            statusText(functions_->statusString, status)));
  return Status::success();
}

} // namespace netc::runtime::cuda
