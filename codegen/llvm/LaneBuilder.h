// LaneBuilder.h -- the IR building blocks of the AOT emitter (docs/codegen.md):
// values of `lanes` samples at once (a float when lanes is 1, else a
// <lanes x float> vector whose lane j is sample j), the buffers of the lane
// layout (node i of a batch-scaled buffer at base + i * lanes floats),
// counted loops, and the output functions' arithmetic -- e^x as the CPU
// backend's inline polynomial (runtime/cpu/LaneVector.h's expLanes, the same
// constants and steps, so both round alike), the rest through libm per lane
// where netc's kernels call libm. Shared by the op emitters and the module
// emitter, and meant for the training JIT too.
#pragma once

#include "ir/Network.h"

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <string_view>

namespace netc::aot {

class LaneBuilder {
public:
  LaneBuilder(llvm::IRBuilder<> &builder, int64_t lanes);

  llvm::IRBuilder<> &ir() { return b_; }
  llvm::LLVMContext &context() { return b_.getContext(); }
  llvm::Module &module() { return *b_.GetInsertBlock()->getModule(); }
  int64_t lanes() const { return lanes_; }
  /// float, or <lanes x float>.
  llvm::Type *laneType() const { return laneType_; }
  llvm::Type *floatType() const { return b_.getFloatTy(); }
  llvm::Type *i64() const { return b_.getInt64Ty(); }
  llvm::Value *index(int64_t i) { return b_.getInt64(static_cast<uint64_t>(i)); }

  /// Every lane `value`.
  llvm::Value *splat(float value);
  llvm::Value *splat(llvm::Value *scalar);

  /// Node `node` (i64) of a lane-layout buffer at `base`.
  llvm::Value *load(llvm::Value *base, llvm::Value *node);
  void store(llvm::Value *value, llvm::Value *base, llvm::Value *node);
  /// Element `i` (i64) of a constant float or i32 array.
  llvm::Value *loadFloat(llvm::Value *array, llvm::Value *i);
  llvm::Value *loadInt(llvm::Value *array, llvm::Value *i); // sign-extended to i64

  /// body(i) for i in [begin, end) (i64 values), one basic block chain.
  /// `vectorize` false: a loop whose body is vector code already, which
  /// LLVM's loop vectoriser must leave alone (it would widen it again, with
  /// gathers).
  void loop(llvm::Value *begin, llvm::Value *end, const std::function<void(llvm::Value *)> &body,
            bool vectorize = true);
  void loop(int64_t count, const std::function<void(llvm::Value *)> &body, bool vectorize = true) {
    loop(index(0), index(count), body, vectorize);
  }
  /// then() when `condition` holds.
  void when(llvm::Value *condition, const std::function<void()> &then);

  /// A stack slot of the lane type in the function's entry block (promoted
  /// to a register by the optimiser).
  llvm::AllocaInst *slot(llvm::Type *type, const char *name);

  /// a * b + c, which the target may fuse.
  llvm::Value *mulAdd(llvm::Value *a, llvm::Value *b, llvm::Value *c);
  /// Marks `value` (an fadd or fmul) as reassociable, so that a sum over a
  /// loop can be vectorised (the one-lane form's dot products).
  llvm::Value *reassociable(llvm::Value *value);

  /// e^x, and Net#'s output functions (docs/language.md §7) lane by lane.
  llvm::Value *exp(llvm::Value *x);
  llvm::Value *apply(ir::Activation function, llvm::Value *x);
  /// A libm function of one float (tanhf, log1pf, expf, powf's x with a
  /// constant exponent through pow()) on each lane.
  llvm::Value *libm(std::string_view name, llvm::Value *x);
  llvm::Value *pow(llvm::Value *x, float exponent);
  llvm::Value *maximum(llvm::Value *a, llvm::Value *b); // a > b ? a : b, NaN-preserving like std::max's order

private:
  llvm::IRBuilder<> &b_;
  int64_t lanes_;
  llvm::Type *laneType_;
  llvm::Align align_;
};

} // namespace netc::aot
