// Codegen.h -- builds the Plan of a checked network: forward ops per lowered
// bundle, the loss of NETSHARP §13 D16, the backward ops derived by
// Autodiff.cpp, update ops, then memory planning. Only a network without
// errors can be planned.
#pragma once

#include "codegen/Plan.h"
#include "support/Status.h"

namespace netc::plan {

struct PlanOptions {
  bool training = true;        // backward and update ops (otherwise inference only)
  int optimizerStateSlots = 0; // per-parameter optimizer slots for the update ops
  bool reuseMemory = true;     // memory planning reuses dead buffers
  /// Fill the index tables. Without them the plan has every buffer with its
  /// size, but its Table buffers are empty: enough for figures (`netc show`),
  /// not to run.
  bool buildTables = true;
  /// Most bytes the fixed buffers (parameters, gradients, optimizer state,
  /// index tables) may take, checked from their sizes before any of them is
  /// built; 0: the machine's memory.
  uint64_t maxMemoryBytes = 0;
};

/// The plan of `network`, which must have passed every check. A plan whose
/// fixed buffers would exceed the memory limit is an error that names the
/// size, the largest buffer and the limit.
Expected<Plan> buildPlan(const ir::Network &network, const PlanOptions &options = {});

/// Whether `plan` fits in `maxMemoryBytes` (0: the machine's memory) at
/// `batch` samples; the error gives the size, the limit and the largest
/// batch that fits. `purpose` starts the message, e.g. "training at batch".
Status checkPlanFits(const Plan &plan, int64_t batch, uint64_t maxMemoryBytes);

/// Appends the backward ops of the forward ops (codegen/Autodiff.cpp).
void appendBackward(Plan &plan);

/// Assigns arena offsets to batch-scaled buffers by liveness (codegen/PlanMemory.cpp).
void planMemory(Plan &plan, bool reuse);

/// The plan as deterministic text (`netc compile --emit=plan`).
std::string printPlan(const Plan &plan);

} // namespace netc::plan
