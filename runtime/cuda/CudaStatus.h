// CudaStatus.h -- the CUDA backend's host files' words for failures: a CUDA
// runtime result as a Status that names the call, and a size in MiB for
// the messages about device and pinned memory.
#pragma once

#include "support/Status.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace netc::runtime::cuda {

/// `e` as a Status: success, or "<what> failed: <CUDA's words> (<code>)".
inline Status cudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess)
    return Status::success();
  return fail(fmt::format("{} failed: {} ({})", what, cudaGetErrorString(e), static_cast<int>(e)));
}

/// `bytes` as "12.5 MiB".
inline std::string mebibytes(int64_t bytes) {
  return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

} // namespace netc::runtime::cuda
