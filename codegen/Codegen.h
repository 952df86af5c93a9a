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
};

/// The plan of `network`, which must have passed every check.
Expected<Plan> buildPlan(const ir::Network &network, const PlanOptions &options = {});

/// Appends the backward ops of the forward ops (codegen/Autodiff.cpp).
void appendBackward(Plan &plan);

/// Assigns arena offsets to batch-scaled buffers by liveness (codegen/PlanMemory.cpp).
void planMemory(Plan &plan, bool reuse);

/// The plan as deterministic text (`netc compile --emit=plan`).
std::string printPlan(const Plan &plan);

} // namespace netc::plan
