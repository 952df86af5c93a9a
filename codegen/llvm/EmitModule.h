// EmitModule.h -- the LLVM IR of a `netc build` library (DESIGN.md §7): one
// module holding the trained parameters and the index tables as constants,
// the forward ops specialised to the network's shapes in two forms (a whole
// vector of samples at a time, and one sample at a time for a batch's
// remainder), and the C entry points of codegen/AotLibrary.h.
#pragma once

#include "codegen/AotLibrary.h"
#include "codegen/llvm/LaneBuilder.h"
#include "support/Status.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <memory>

namespace netc::aot {

/// The first address of buffer `b` of the plan, for the run being emitted.
using BufferAddress = std::function<llvm::Value *(int buffer)>;

/// Emits op `op` (a forward op: codegen/Ops.def's Forward role) of `plan`
/// over the lane layout of `lanes`; fails naming an op it cannot compile.
Status emitForwardOp(LaneBuilder &lanes, const plan::Plan &plan, const plan::Op &op,
                     const BufferAddress &address);

/// The whole module of `request` with vectors of `lanes` samples (a power
/// of two, at most kLanes).
Expected<std::unique_ptr<llvm::Module>> emitModule(llvm::LLVMContext &context, const Request &request,
                                                   int64_t lanes);

} // namespace netc::aot
