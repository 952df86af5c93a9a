// CudaBackend.h -- the CUDA backend (docs/gpu.md): the same Plan as the CPU
// run on one NVIDIA GPU. One device allocation holds the whole plan
// (runtime/core/MemoryLayout.h) with the derived tables and the loss
// scratch, so nothing is allocated inside a step; one stream runs the ops
// and a second copies input batches, ordered by events. Ops run through the
// dispatch of OpRunner.h on CudaLauncher: cuBLAS (loaded on demand) for full
// bundles, host/device bodies for the rest. Communication ops stage their
// range through host memory to the attached communicator (the NCCL
// communicator, which reduces device memory directly, comes with the next
// issue). Every CUDA and cuBLAS failure becomes a message; with
// BackendOptions::checkEachOp each op is waited for, so the message names
// the op and its layer.
#pragma once

#include "runtime/core/Backend.h"

namespace netc::runtime {

/// A CUDA backend on GPU options.device.
std::unique_ptr<Backend> makeCudaBackend(const BackendOptions &options);

/// Registers "cuda" with the backend registry.
void registerCudaBackend();

} // namespace netc::runtime
