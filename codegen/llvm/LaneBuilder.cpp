// LaneBuilder.cpp -- lane values, loops and output functions in IR (LaneBuilder.h).
#include "codegen/llvm/LaneBuilder.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <algorithm>

namespace netc::aot {

LaneBuilder::LaneBuilder(llvm::IRBuilder<> &builder, int64_t lanes)
    : b_(builder), lanes_(lanes),
      laneType_(lanes == 1 ? builder.getFloatTy()
                           : static_cast<llvm::Type *>(llvm::FixedVectorType::get(
                                 builder.getFloatTy(), static_cast<unsigned>(lanes)))),
      align_(llvm::Align(static_cast<uint64_t>(std::min<int64_t>(4 * lanes, 64)))) {}

llvm::Value *LaneBuilder::splat(float value) {
  llvm::Constant *c = llvm::ConstantFP::get(b_.getFloatTy(), value);
  if (lanes_ == 1)
    return c;
  return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(static_cast<unsigned>(lanes_)), c);
}

llvm::Value *LaneBuilder::splat(llvm::Value *scalar) {
  return lanes_ == 1 ? scalar : b_.CreateVectorSplat(static_cast<unsigned>(lanes_), scalar);
}

llvm::Value *LaneBuilder::load(llvm::Value *base, llvm::Value *node) {
  llvm::Value *at = b_.CreateGEP(b_.getFloatTy(), base, b_.CreateMul(node, index(lanes_), "", true, true));
  return b_.CreateAlignedLoad(laneType_, at, align_);
}

void LaneBuilder::store(llvm::Value *value, llvm::Value *base, llvm::Value *node) {
  llvm::Value *at = b_.CreateGEP(b_.getFloatTy(), base, b_.CreateMul(node, index(lanes_), "", true, true));
  b_.CreateAlignedStore(value, at, align_);
}

llvm::Value *LaneBuilder::loadFloat(llvm::Value *array, llvm::Value *i) {
  return b_.CreateAlignedLoad(b_.getFloatTy(), b_.CreateGEP(b_.getFloatTy(), array, i), llvm::Align(4));
}

llvm::Value *LaneBuilder::loadInt(llvm::Value *array, llvm::Value *i) {
  llvm::Value *v =
      b_.CreateAlignedLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), array, i), llvm::Align(4));
  return b_.CreateSExt(v, b_.getInt64Ty());
}

void LaneBuilder::loop(llvm::Value *begin, llvm::Value *end, const std::function<void(llvm::Value *)> &body,
                       bool vectorize) {
  llvm::BasicBlock *before = b_.GetInsertBlock();
  llvm::Function *f = before->getParent();
  auto *head = llvm::BasicBlock::Create(context(), "loop", f);
  auto *inside = llvm::BasicBlock::Create(context(), "body", f);
  auto *after = llvm::BasicBlock::Create(context(), "done", f);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(begin, before);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), inside, after);
  b_.SetInsertPoint(inside);
  body(i);
  llvm::Value *next = b_.CreateAdd(i, index(1), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst *latch = b_.CreateBr(head);
  if (!vectorize) {
    // !{self, !{"llvm.loop.vectorize.width", 1}}: LoopVectorize's "do not".
    llvm::LLVMContext &c = context();
    llvm::Metadata *width[] = {llvm::MDString::get(c, "llvm.loop.vectorize.width"),
                               llvm::ConstantAsMetadata::get(b_.getInt32(1))};
    llvm::Metadata *parts[] = {nullptr, llvm::MDNode::get(c, width)};
    llvm::MDNode *id = llvm::MDNode::getDistinct(c, parts);
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(after);
}

void LaneBuilder::when(llvm::Value *condition, const std::function<void()> &then) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  auto *yes = llvm::BasicBlock::Create(context(), "then", f);
  auto *after = llvm::BasicBlock::Create(context(), "next", f);
  b_.CreateCondBr(condition, yes, after);
  b_.SetInsertPoint(yes);
  then();
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

llvm::AllocaInst *LaneBuilder::slot(llvm::Type *type, const char *name) {
  llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> at(&entry, entry.begin());
  return at.CreateAlloca(type, nullptr, name);
}

llvm::Value *LaneBuilder::mulAdd(llvm::Value *a, llvm::Value *b, llvm::Value *c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
}

llvm::Value *LaneBuilder::reassociable(llvm::Value *value) {
  if (auto *inst = llvm::dyn_cast<llvm::Instruction>(value)) {
    inst->setHasAllowReassoc(true);
    inst->setHasAllowContract(true);
  }
  return value;
}

llvm::Value *LaneBuilder::exp(llvm::Value *x) {
  // expLanes (runtime/cpu/LaneVector.h), step for step and without
  // contraction, as netc's own kernels are compiled.
  auto &b = b_;
  x = b.CreateSelect(b.CreateFCmpOGT(x, splat(88.3f)), splat(88.3f), x);
  x = b.CreateSelect(b.CreateFCmpOLT(x, splat(-87.3f)), splat(-87.3f), x);
  llvm::Type *intType = lanes_ == 1
                            ? static_cast<llvm::Type *>(b.getInt32Ty())
                            : llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(lanes_));
  auto intSplat = [&](int32_t v) -> llvm::Value * {
    llvm::Constant *c = b.getInt32(static_cast<uint32_t>(v));
    return lanes_ == 1 ? c
                       : llvm::ConstantVector::getSplat(
                             llvm::ElementCount::getFixed(static_cast<unsigned>(lanes_)), c);
  };
  llvm::Value *biased = b.CreateFAdd(b.CreateFMul(x, splat(1.44269504088896341f)), splat(128.5f));
  llvm::Value *n = b.CreateSub(b.CreateFPToSI(biased, intType), intSplat(128));
  llvm::Value *nf = b.CreateSIToFP(n, laneType_);
  llvm::Value *r = b.CreateFSub(b.CreateFSub(x, b.CreateFMul(nf, splat(0.693359375f))),
                                b.CreateFMul(nf, splat(-2.12194440e-4f)));
  llvm::Value *p = splat(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = b.CreateFAdd(b.CreateFMul(p, r), splat(c));
  p = b.CreateFAdd(b.CreateFAdd(b.CreateFMul(b.CreateFMul(p, r), r), r), splat(1.0f));
  llvm::Value *scale = b.CreateBitCast(b.CreateShl(b.CreateAdd(n, intSplat(127)), intSplat(23)), laneType_);
  return b.CreateFMul(p, scale);
}

llvm::Value *LaneBuilder::libm(std::string_view name, llvm::Value *x) {
  llvm::FunctionCallee f =
      module().getOrInsertFunction(llvm::StringRef(name.data(), name.size()),
                                   llvm::FunctionType::get(b_.getFloatTy(), {b_.getFloatTy()}, false));
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee()))
    fn->setDoesNotThrow();
  if (lanes_ == 1)
    return b_.CreateCall(f, {x});
  llvm::Value *out = llvm::PoisonValue::get(laneType_);
  for (int64_t j = 0; j < lanes_; ++j) {
    llvm::Value *lane = b_.CreateExtractElement(x, static_cast<uint64_t>(j));
    out = b_.CreateInsertElement(out, b_.CreateCall(f, {lane}), static_cast<uint64_t>(j));
  }
  return out;
}

llvm::Value *LaneBuilder::pow(llvm::Value *x, float exponent) {
  return b_.CreateIntrinsic(llvm::Intrinsic::pow, {laneType_}, {x, splat(exponent)});
}

llvm::Value *LaneBuilder::maximum(llvm::Value *a, llvm::Value *b) {
  return b_.CreateSelect(b_.CreateFCmpOLT(a, b), b, a);
}

llvm::Value *LaneBuilder::apply(ir::Activation function, llvm::Value *x) {
  auto &b = b_;
  llvm::Value *zero = splat(0.0f), *one = splat(1.0f);
  auto positive = [&](llvm::Value *v) { return b.CreateSelect(b.CreateFCmpOGT(v, zero), v, zero); };
  switch (function) {
  case ir::Activation::Sigmoid: return b.CreateFDiv(one, b.CreateFAdd(one, exp(b.CreateFNeg(x))));
  case ir::Activation::Tanh: return libm("tanhf", x);
  case ir::Activation::Linear: return x;
  case ir::Activation::Rlinear: return positive(x);
  case ir::Activation::Brlinear:
    return b.CreateSelect(b.CreateFCmpOGT(x, zero), b.CreateSelect(b.CreateFCmpOLT(x, one), x, one), zero);
  case ir::Activation::Srlinear: {
    llvm::Value *magnitude = b.CreateIntrinsic(llvm::Intrinsic::fabs, {laneType_}, {x});
    return b.CreateFAdd(positive(x), libm("log1pf", libm("expf", b.CreateFNeg(magnitude))));
  }
  case ir::Activation::Square: return b.CreateFMul(x, x);
  case ir::Activation::Sqrt: return b.CreateIntrinsic(llvm::Intrinsic::sqrt, {laneType_}, {positive(x)});
  case ir::Activation::Abs: return b.CreateIntrinsic(llvm::Intrinsic::fabs, {laneType_}, {x});
  case ir::Activation::Softmax: return x; // a whole row: the activate op's emitter
  }
  return x;
}

} // namespace netc::aot
