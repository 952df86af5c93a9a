// CpuBackend.h -- the CPU backend: plan buffers in host memory (one arena for
// batch-scaled buffers, separate blocks for parameters, state and tables),
// ops dispatched through the kernel table derived from Ops.def.
#pragma once

#include "runtime/core/Backend.h"

namespace netc::runtime {

/// A CPU backend (fast kernels, or the reference ones with options.reference).
std::unique_ptr<Backend> makeCpuBackend(const BackendOptions &options);

/// Registers "cpu" (and "cpu-reference") with the backend registry.
void registerCpuBackend();

} // namespace netc::runtime
