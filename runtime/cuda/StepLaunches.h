// StepLaunches.h -- what the CUDA backend issues for a range of ops, as
// pure data: every kernel (by body), library call, memset, event and
// collective of one training step (or any range), in order,
// with its size. It comes from the same dispatch the backend issues and
// captures (runPlanOp, CudnnRunner.h), run through a launcher that records
// instead of launching, so it is the graph a step is captured as; CI tests
// it and golden-pins the seed network's (tests/numeric/StepLaunchesTest.cpp)
// without a GPU, and `launches` counts what netc bench reports on one.
// Which convolutions and pools go to cuDNN is decided from their pure
// descriptions (a cuDNN without an allowed algorithm would leave one to
// the table kernels at run time).
#pragma once

#include "codegen/Plan.h"
#include "support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

struct StepLaunch {
  enum class Kind {
    WaitForInput, // the compute stream waits for the input slot's copy (an event)
    Kernel,       // one of netc's kernels: a body over `elements` threads' work
    Gemm,         // a cuBLAS call
    Memset,       // cudaMemsetAsync of `elements` floats
    Metrics,      // the one-block loss and accuracy sums
    Cudnn,        // a cuDNN call
    AllReduce,    // a communication op through the host (MPI): the graph is split around it
    Collective,   // an NCCL all-reduce on the communication stream, after an event (in the graph)
    Join,         // the compute stream waits for the communication stream (an event, in the graph)
    SlotRead,     // the end of the run, recorded for the input slot's next copy
  };
  Kind kind = Kind::Kernel;
  int op = -1;      // the plan op it belongs to (-1: the run's own)
  std::string what; // the body, the call and its shape
  int64_t elements = 0;
};

/// What the backend issues for ops [first, last) of `plan` at `batch`
/// samples, with convolutions and pools on cuDNN where they have a form
/// (`cudnn`, as by default) or all on netc's kernels, and a data-parallel
/// plan's communication through the host communicator (MPI) or, `nccl`,
/// as NCCL collectives ordered by events (NcclCalls.h).
Expected<std::vector<StepLaunch>> stepLaunches(const plan::Plan &plan, int64_t batch, size_t first,
                                               size_t last, bool cudnn = true, bool nccl = false);

/// The kernels, library calls and NCCL collectives among `launches` (what
/// netc bench reports as launches_per_step).
int64_t launchCount(const std::vector<StepLaunch> &launches);

/// One line per launch: "#op name: what ×elements".
std::string formatLaunches(const plan::Plan &plan, const std::vector<StepLaunch> &launches);

} // namespace netc::runtime::cuda
