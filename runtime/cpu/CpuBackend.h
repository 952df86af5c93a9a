// CpuBackend.h -- the CPU backend: plan buffers in host memory (the
// activation and input arenas, the flat parameter, gradient and state
// arenas, tables), ops dispatched through the kernel table derived from
// Ops.def.
#pragma once

#include "runtime/core/Backend.h"

namespace netc::runtime {

/// A CPU backend: the fast kernels (options.variant picks the instruction
/// set), or the naive reference ones.
std::unique_ptr<Backend> makeCpuBackend(const BackendOptions &options, bool reference = false);

/// Registers "cpu" (and "cpu-reference") with the backend registry.
void registerCpuBackend();

} // namespace netc::runtime
