// EmitModule.h -- the LLVM IR of a `netc build` library (docs/codegen.md): one
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
#include <optional>

namespace netc::aot {

/// The first address of buffer `b` of the plan, for the run being emitted.
using BufferAddress = std::function<llvm::Value *(int buffer)>;

/// A convolution's positions in blocks of at most `width`, each within one
/// row (the last shared dimension), for the one-sample form: block b holds
/// positions [first[b], first[b] + count[b]); cells[((u·blocks + b)·window +
/// k)·width + j] is the source of cell k of its position j in group u (-1: a
/// dummy cell or an unused lane), and starts[(u·blocks + b)·window + k] that
/// of position 0 when the block's sources are consecutive and real, else -1.
struct PositionBlocks {
  llvm::Value *cells = nullptr, *starts = nullptr, *first = nullptr, *count = nullptr;
  int64_t width = 8, blocks = 1;
};

/// Emits op `op` (a forward op: codegen/Ops.def's Forward role) of `plan`
/// over the lane layout of `lanes`; fails naming an op it cannot compile.
/// A convolution's kernels relaid for the one-sample form along maps, so
/// that one vector holds `width` maps: weights[(u·window + k)·paddedMaps + m]
/// is cell k of kernel (m, u), bias[u·paddedMaps + m] its bias (zeros past
/// the maps); `zero` is a float 0 that dummy cells read.
struct MapMajorKernels {
  llvm::Value *weights = nullptr, *bias = nullptr, *zero = nullptr;
  int64_t width = 8, paddedMaps = 8;
};

/// How the one-sample form of a convolution is vectorised: along positions
/// where most of its cells' sources are consecutive, else along maps.
struct OneSampleConvolution {
  std::optional<PositionBlocks> byPositions;
  std::optional<MapMajorKernels> byMaps;
};

/// A convolution in the one-sample form uses `oneSample` where given.
Status emitForwardOp(LaneBuilder &lanes, const plan::Plan &plan, const plan::Op &op,
                     const BufferAddress &address, const OneSampleConvolution *oneSample = nullptr);

/// The whole module of `request` with vectors of `lanes` samples (a power
/// of two, at most kLanes).
Expected<std::unique_ptr<llvm::Module>> emitModule(llvm::LLVMContext &context, const Request &request,
                                                   int64_t lanes);

} // namespace netc::aot
