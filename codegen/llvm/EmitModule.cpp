// EmitModule.cpp -- the module of a `netc build` library (EmitModule.h):
// constants, one run function per lane count, the batch loop that moves
// samples between the caller's sample-major arrays and the lane layout
// (normalising them on the way in), and the four C entry points.
#include "codegen/llvm/EmitModule.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

#include <optional>

namespace netc::aot {

namespace {

class ModuleEmitter {
public:
  ModuleEmitter(llvm::LLVMContext &context, const Request &request, int64_t lanes)
      : r_(request), p_(*request.plan), lanes_(lanes),
        module_(std::make_unique<llvm::Module>(request.prefix, context)), b_(context) {}

  Expected<std::unique_ptr<llvm::Module>> emit() {
    module_->setModuleIdentifier(r_.prefix);
    createConstants();
    auto run = runFunction(lanes_);
    if (!run)
      return run.error();
    auto single = lanes_ == 1 ? run : runFunction(1);
    if (!single)
      return single.error();
    llvm::Function *infer = inferFunction(*run, *single);
    entryPoint(r_.prefix + "_infer", infer, /*normalize=*/true, /*scratch=*/false);
    entryPoint(r_.prefix + "_infer_normalized", infer, false, false);
    entryPoint(r_.prefix + "_infer_with_scratch", infer, true, true);
    entryPoint(r_.prefix + "_infer_normalized_with_scratch", infer, false, true);
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*module_, &os))
      return fail(fmt::format("the emitted module of network '{}' is invalid (a bug in netc): {}", p_.network,
                              os.str()));
    return std::move(module_);
  }

private:
  llvm::LLVMContext &ctx() { return module_->getContext(); }
  llvm::Type *f32() { return b_.getFloatTy(); }
  llvm::Type *ptr() { return b_.getPtrTy(); }

  llvm::GlobalVariable *constant(llvm::Constant *init, const std::string &name) {
    return new llvm::GlobalVariable(*module_, init->getType(), /*isConstant=*/true,
                                    llvm::GlobalValue::PrivateLinkage, init, r_.prefix + "." + name);
  }
  llvm::GlobalVariable *floats(std::span<const float> values, int64_t count, const std::string &name) {
    auto *type = llvm::ArrayType::get(f32(), static_cast<uint64_t>(count));
    if (values.empty())
      return constant(llvm::ConstantAggregateZero::get(type), name);
    return constant(llvm::ConstantDataArray::get(ctx(), llvm::ArrayRef<float>(values.data(), values.size())),
                    name);
  }

  void createConstants() {
    // The parameter arena: every bundle's weights and every bias, as the
    // checkpoint holds them (zeros when no weights were given).
    if (p_.parameterArena >= 0 && p_.arenaElements > 0) {
      auto *g = floats(r_.parameters, p_.arenaElements, "parameters");
      g->setAlignment(llvm::Align(64));
      parameters_ = g;
    }
    tables_.assign(p_.buffers.size(), nullptr);
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const plan::Buffer &buf = p_.buffers[i];
      if (buf.role != plan::BufferRole::Table)
        continue;
      std::vector<int32_t> values = buf.table;
      if (values.empty())
        values.push_back(0);
      tables_[i] = constant(llvm::ConstantDataArray::get(ctx(), llvm::ArrayRef<int32_t>(values)),
                            "table." + std::to_string(i));
    }
    // The one-sample form of each convolution: along positions where at
    // least half of the blocks' cells have consecutive sources (one vector
    // load each), else along maps.
    oneSample_.assign(p_.ops.size(), {});
    for (size_t i = p_.stepBegin; i < p_.forwardEnd; ++i) {
      if (p_.ops[i].kind != plan::OpKind::Convolution)
        continue;
      const std::string name = fmt::format("op.{}", i);
      const auto &a = p_.ops[i].get<plan::ConvAttrs>();
      int64_t consecutive = 0;
      const PositionBlocks counted = positionBlocks(p_.ops[i], name, consecutive, /*emit=*/false);
      if (2 * consecutive >= a.groups * counted.blocks * a.window)
        oneSample_[i].byPositions = positionBlocks(p_.ops[i], name, consecutive, /*emit=*/true);
      else
        oneSample_[i].byMaps = mapMajorKernels(p_.ops[i], name);
    }
    if (r_.normalizer.kind == InputNormalizer::Kind::Affine) {
      normOffset_ = floats(r_.normalizer.offset, p_.featureCount, "normalizer.offset");
      normScale_ = floats(r_.normalizer.scale, p_.featureCount, "normalizer.scale");
    }
  }

  /// The vector width of the one-sample form: the lanes of the batched one.
  int64_t vectorWidth() const { return lanes_ > 1 ? lanes_ : 8; }

  /// The position blocks of convolution `op`; `consecutiveRows` counts the
  /// (group, block, cell) rows whose sources are consecutive. Its tables
  /// are made only when `emit`.
  PositionBlocks positionBlocks(const plan::Op &op, const std::string &name, int64_t &consecutiveRows,
                                bool emit) {
    consecutiveRows = 0;
    const auto &a = op.get<plan::ConvAttrs>();
    PositionBlocks pb;
    pb.width = lanes_ > 1 ? lanes_ : 8;
    // A row: the positions along the last shared dimension.
    int64_t row = 1;
    for (const plan::WindowDim &d : a.dims)
      if (d.shared)
        row = d.count;
    std::vector<int32_t> first, count;
    for (int64_t start = 0; start < a.positions; start += row)
      for (int64_t p = start; p < std::min(start + row, a.positions); p += pb.width) {
        first.push_back(static_cast<int32_t>(p));
        count.push_back(static_cast<int32_t>(std::min({pb.width, start + row - p, a.positions - p})));
      }
    pb.blocks = static_cast<int64_t>(first.size());
    const std::vector<int32_t> &gather = p_.buffers[static_cast<size_t>(op.in[2])].table;
    std::vector<int32_t> cells(static_cast<size_t>(a.groups * pb.blocks * a.window * pb.width), -1);
    std::vector<int32_t> starts(static_cast<size_t>(a.groups * pb.blocks * a.window), -1);
    for (int64_t u = 0; u < a.groups; ++u)
      for (int64_t blk = 0; blk < pb.blocks; ++blk)
        for (int64_t k = 0; k < a.window; ++k) {
          const int64_t row = (u * pb.blocks + blk) * a.window + k;
          bool consecutive = true;
          for (int64_t j = 0; j < count[static_cast<size_t>(blk)]; ++j) {
            const auto from =
                static_cast<size_t>((u * a.positions + first[static_cast<size_t>(blk)] + j) * a.window + k);
            const int32_t source = from < gather.size() ? gather[from] : -1;
            cells[static_cast<size_t>(row * pb.width + j)] = source;
            consecutive =
                consecutive && source >= 0 && source == cells[static_cast<size_t>(row * pb.width)] + j;
          }
          if (consecutive) {
            starts[static_cast<size_t>(row)] = cells[static_cast<size_t>(row * pb.width)];
            ++consecutiveRows;
          }
        }
    if (!emit)
      return pb;
    auto table = [&](const std::vector<int32_t> &values, const std::string &what) {
      auto *g =
          constant(llvm::ConstantDataArray::get(ctx(), llvm::ArrayRef<int32_t>(values)), name + "." + what);
      g->setAlignment(llvm::Align(64));
      return g;
    };
    pb.cells = table(cells, "position-cells");
    pb.starts = table(starts, "position-starts");
    pb.first = table(first, "position-first");
    pb.count = table(count, "position-count");
    return pb;
  }

  MapMajorKernels mapMajorKernels(const plan::Op &op, const std::string &name) {
    const auto &a = op.get<plan::ConvAttrs>();
    MapMajorKernels mm;
    mm.width = lanes_ > 1 ? lanes_ : 8;
    mm.paddedMaps = (a.maps + mm.width - 1) / mm.width * mm.width;
    std::vector<float> weights, bias;
    if (!r_.parameters.empty()) {
      const float *w = r_.parameters.data() + p_.buffers[static_cast<size_t>(op.in[1])].viewOffset;
      const float *b = r_.parameters.data() + p_.buffers[static_cast<size_t>(op.in[4])].viewOffset;
      weights.assign(static_cast<size_t>(a.groups * a.window * mm.paddedMaps), 0.0f);
      bias.assign(static_cast<size_t>(a.groups * mm.paddedMaps), 0.0f);
      for (int64_t u = 0; u < a.groups; ++u)
        for (int64_t m = 0; m < a.maps; ++m) {
          const int64_t kernel = m * a.groups + u;
          bias[static_cast<size_t>(u * mm.paddedMaps + m)] = b[kernel];
          for (int64_t k = 0; k < a.window; ++k)
            weights[static_cast<size_t>((u * a.window + k) * mm.paddedMaps + m)] = w[kernel * a.window + k];
        }
    }
    auto *wg = floats(weights, a.groups * a.window * mm.paddedMaps, name + ".map-major-weights");
    auto *bg = floats(bias, a.groups * mm.paddedMaps, name + ".map-major-bias");
    wg->setAlignment(llvm::Align(64));
    bg->setAlignment(llvm::Align(64));
    mm.weights = wg;
    mm.bias = bg;
    if (!zero_)
      zero_ = constant(llvm::ConstantFP::get(f32(), 0.0), "zero");
    mm.zero = zero_;
    return mm;
  }

  /// The floats of the activation arena for `lanes` samples; the features follow.
  int64_t featuresAt(int64_t lanes) const { return p_.memory.arenaPerSample * lanes; }

  /// void run(ptr scratch): the forward ops on the lane layout in scratch.
  Expected<llvm::Function *> runFunction(int64_t lanes) {
    auto *type = llvm::FunctionType::get(b_.getVoidTy(), {ptr()}, false);
    auto *f = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                                     fmt::format("{}.run.{}", r_.prefix, lanes), *module_);
    f->setDoesNotThrow();
    f->addParamAttr(0, llvm::Attribute::NoAlias);
    llvm::Value *scratch = f->getArg(0);
    scratch->setName("scratch");
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx(), "entry", f));
    LaneBuilder lb(b_, lanes);
    BufferAddress address = [&](int index) -> llvm::Value * {
      const plan::Buffer &buf = p_.buffers[static_cast<size_t>(index)];
      if (buf.role == plan::BufferRole::Table)
        return tables_[static_cast<size_t>(index)];
      if (buf.role == plan::BufferRole::Features)
        return b_.CreateConstInBoundsGEP1_64(f32(), scratch, static_cast<uint64_t>(featuresAt(lanes)));
      if (buf.batchScaled())
        return b_.CreateConstInBoundsGEP1_64(f32(), scratch, static_cast<uint64_t>(buf.arenaOffset * lanes));
      // A parameter: a view into the parameter arena.
      return b_.CreateConstInBoundsGEP1_64(f32(), parameters_, static_cast<uint64_t>(buf.viewOffset));
    };
    for (size_t i = p_.stepBegin; i < p_.forwardEnd; ++i)
      if (Status s = emitForwardOp(lb, p_, p_.ops[i], address, &oneSample_[i]); !s)
        return fail(s.message());
    b_.CreateRetVoid();
    return f;
  }

  /// Samples [first, first + lanes) of `in` into the features' lane layout,
  /// normalised when `normalize`.
  void samplesIn(LaneBuilder &lb, llvm::Value *in, llvm::Value *scratch, llvm::Value *first, bool normalize) {
    const int64_t F = p_.featureCount, lanes = lb.lanes();
    llvm::Value *features =
        b_.CreateConstInBoundsGEP1_64(f32(), scratch, static_cast<uint64_t>(featuresAt(lanes)));
    lb.loop(F, [&](llvm::Value *f) {
      for (int64_t j = 0; j < lanes; ++j) {
        llvm::Value *sample = b_.CreateAdd(first, lb.index(j), "", true, true);
        llvm::Value *v = lb.loadFloat(in, b_.CreateAdd(b_.CreateMul(sample, lb.index(F), "", true, true), f));
        if (normalize && r_.normalizer.kind == InputNormalizer::Kind::Affine)
          v = b_.CreateFMul(b_.CreateFSub(v, lb.loadFloat(normOffset_, f)), lb.loadFloat(normScale_, f));
        else if (normalize && r_.normalizer.kind == InputNormalizer::Kind::Divide)
          v = b_.CreateFDiv(v, llvm::ConstantFP::get(f32(), r_.normalizer.divisor));
        llvm::Value *at = b_.CreateAdd(b_.CreateMul(f, lb.index(lanes), "", true, true), lb.index(j));
        b_.CreateAlignedStore(v, b_.CreateGEP(f32(), features, at), llvm::Align(4));
      }
    });
  }

  /// The output layer's lanes back into samples [first, first + lanes) of `out`.
  void samplesOut(LaneBuilder &lb, llvm::Value *out, llvm::Value *scratch, llvm::Value *first) {
    const int64_t O = p_.outputNodes, lanes = lb.lanes();
    const plan::Buffer &buf = p_.buffers[static_cast<size_t>(p_.output)];
    llvm::Value *values =
        b_.CreateConstInBoundsGEP1_64(f32(), scratch, static_cast<uint64_t>(buf.arenaOffset * lanes));
    lb.loop(O, [&](llvm::Value *o) {
      for (int64_t j = 0; j < lanes; ++j) {
        llvm::Value *at = b_.CreateAdd(b_.CreateMul(o, lb.index(lanes), "", true, true), lb.index(j));
        llvm::Value *v = lb.loadFloat(values, at);
        llvm::Value *sample = b_.CreateAdd(first, lb.index(j), "", true, true);
        b_.CreateAlignedStore(
            v, b_.CreateGEP(f32(), out, b_.CreateAdd(b_.CreateMul(sample, lb.index(O), "", true, true), o)),
            llvm::Align(4));
      }
    });
  }

  /// i32 infer(ptr in, ptr out, i32 batch, ptr scratch, i1 normalize).
  llvm::Function *inferFunction(llvm::Function *run, llvm::Function *single) {
    auto *type = llvm::FunctionType::get(b_.getInt32Ty(),
                                         {ptr(), ptr(), b_.getInt32Ty(), ptr(), b_.getInt1Ty()}, false);
    auto *f =
        llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, r_.prefix + ".infer", *module_);
    f->setDoesNotThrow();
    llvm::Value *in = f->getArg(0), *out = f->getArg(1), *batch = f->getArg(2), *scratch = f->getArg(3),
                *normalize = f->getArg(4);
    in->setName("inputs");
    out->setName("outputs");
    batch->setName("batch");
    scratch->setName("scratch");
    normalize->setName("normalize");
    auto *entry = llvm::BasicBlock::Create(ctx(), "entry", f);
    auto *refuse = llvm::BasicBlock::Create(ctx(), "refuse", f);
    auto *work = llvm::BasicBlock::Create(ctx(), "work", f);
    b_.SetInsertPoint(entry);
    llvm::Value *nullPointer =
        b_.CreateOr(b_.CreateOr(b_.CreateIsNull(in), b_.CreateIsNull(out)), b_.CreateIsNull(scratch));
    llvm::Value *bad = b_.CreateOr(b_.CreateICmpSLT(batch, b_.getInt32(0)),
                                   b_.CreateAnd(b_.CreateICmpSGT(batch, b_.getInt32(0)), nullPointer));
    b_.CreateCondBr(bad, refuse, work);
    b_.SetInsertPoint(refuse);
    b_.CreateRet(b_.getInt32(static_cast<uint32_t>(-1)));
    b_.SetInsertPoint(work);
    llvm::Value *n = b_.CreateSExt(batch, b_.getInt64Ty());
    auto chunks = [&](int64_t lanes, llvm::Value *begin, llvm::Value *end, llvm::Function *fn) {
      LaneBuilder lb(b_, lanes);
      lb.loop(begin, end, [&](llvm::Value *chunk) {
        llvm::Value *first = b_.CreateMul(chunk, lb.index(lanes), "", true, true);
        lb.when(normalize, [&] { samplesIn(lb, in, scratch, first, true); });
        lb.when(b_.CreateNot(normalize), [&] { samplesIn(lb, in, scratch, first, false); });
        b_.CreateCall(fn, {scratch});
        samplesOut(lb, out, scratch, first);
      });
    };
    llvm::Value *whole = b_.CreateSDiv(n, b_.getInt64(static_cast<uint64_t>(lanes_)));
    chunks(lanes_, b_.getInt64(0), whole, run);
    if (lanes_ > 1)
      chunks(1, b_.CreateMul(whole, b_.getInt64(static_cast<uint64_t>(lanes_))), n, single);
    b_.CreateRet(b_.getInt32(0));
    return f;
  }

  /// An exported entry point (AotLibrary.h's headerText declares it).
  void entryPoint(const std::string &name, llvm::Function *infer, bool normalize, bool withScratch) {
    std::vector<llvm::Type *> params = {ptr(), ptr(), b_.getInt32Ty()};
    if (withScratch)
      params.push_back(ptr());
    auto *f = llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), params, false),
                                     llvm::GlobalValue::ExternalLinkage, name, *module_);
    f->setDoesNotThrow();
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx(), "entry", f));
    llvm::Value *scratch;
    if (withScratch) {
      scratch = f->getArg(3);
    } else {
      auto *bytes = llvm::ArrayType::get(b_.getInt8Ty(), static_cast<uint64_t>(scratchBytes(p_)));
      auto *slot = b_.CreateAlloca(bytes, nullptr, "scratch");
      slot->setAlignment(llvm::Align(64));
      scratch = slot;
    }
    llvm::Value *result =
        b_.CreateCall(infer, {f->getArg(0), f->getArg(1), f->getArg(2), scratch, b_.getInt1(normalize)});
    b_.CreateRet(result);
  }

  const Request &r_;
  const plan::Plan &p_;
  int64_t lanes_;
  std::unique_ptr<llvm::Module> module_;
  llvm::IRBuilder<> b_;
  llvm::Value *parameters_ = nullptr;
  std::vector<llvm::GlobalVariable *> tables_;
  llvm::GlobalVariable *normOffset_ = nullptr, *normScale_ = nullptr;
  std::vector<OneSampleConvolution> oneSample_; // by op index
  llvm::GlobalVariable *zero_ = nullptr;
};

} // namespace

Expected<std::unique_ptr<llvm::Module>> emitModule(llvm::LLVMContext &context, const Request &request,
                                                   int64_t lanes) {
  const plan::Plan &p = *request.plan;
  if (p.training)
    return fail("a library is made from an inference plan (a bug in netc)");
  if (lanes < 1 || lanes > kLanes || (lanes & (lanes - 1)))
    return fail(fmt::format("{} lanes: a power of two up to {} (a bug in netc)", lanes, kLanes));
  if (!request.parameters.empty() && static_cast<int64_t>(request.parameters.size()) != p.arenaElements)
    return fail(fmt::format("network '{}': {} parameter values given for an arena of {} (a bug in netc)",
                            p.network, request.parameters.size(), p.arenaElements));
  if (p.output < 0 || p.features < 0)
    return fail(fmt::format("network '{}' has no input or output layer", p.network));
  return ModuleEmitter(context, request, lanes).emit();
}

} // namespace netc::aot
