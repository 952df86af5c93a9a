// EmitForwardOps.cpp -- the forward ops of codegen/Ops.def as IR over the lane
// layout (EmitModule.h): the same definitions as runtime/cpu's kernels (the
// Plan's index tables, dummy cells skipped, the first maximal cell, response
// normalization's divisor), with the loops over a network's shapes as
// constants. Dense and convolution ops keep up to kBlock outputs in
// registers while one input vector is loaded; the one-sample form marks its
// dot products reassociable so that LLVM vectorises them along the inputs.
#include "codegen/llvm/EmitModule.h"

#include <fmt/format.h>

#include <vector>

namespace netc::aot {

namespace {

/// Outputs computed together by dense and convolution ops.
constexpr int64_t kBlock = 8;

/// body(first, size) over [0, count) in blocks of at most `block`: a loop
/// over the full blocks, then the rest.
void forBlocks(LaneBuilder &lb, int64_t count, int64_t block,
               const std::function<void(llvm::Value *first, int64_t size)> &body) {
  const int64_t full = count / block;
  if (full > 0)
    lb.loop(full,
            [&](llvm::Value *i) { body(lb.ir().CreateMul(i, lb.index(block), "", true, true), block); });
  if (count % block)
    body(lb.index(full * block), count % block);
}

/// value, or value added to what `y` holds at `node` when the op accumulates.
void storeResult(LaneBuilder &lb, const plan::Op &op, llvm::Value *value, llvm::Value *y, llvm::Value *node) {
  if (op.accumulate)
    value = lb.ir().CreateFAdd(lb.load(y, node), value);
  lb.store(value, y, node);
}

std::vector<llvm::AllocaInst *> slots(LaneBuilder &lb, int64_t count, llvm::Type *type, const char *name) {
  std::vector<llvm::AllocaInst *> out;
  for (int64_t i = 0; i < count; ++i)
    out.push_back(lb.slot(type, name));
  return out;
}

void emitDense(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::DenseAttrs>();
  llvm::Value *x = address(op.in[0]), *w = address(op.in[1]), *y = address(op.out[0]);
  const int64_t block = lb.lanes() == 1 ? 1 : kBlock;
  forBlocks(lb, a.outputs, block, [&](llvm::Value *first, int64_t size) {
    auto acc = slots(lb, size, lb.laneType(), "acc");
    for (auto *s : acc)
      b.CreateStore(lb.splat(0.0f), s);
    lb.loop(a.inputs, [&](llvm::Value *i) {
      llvm::Value *xv = lb.load(x, i);
      for (int64_t r = 0; r < size; ++r) {
        llvm::Value *row = b.CreateAdd(first, lb.index(r), "", true, true);
        llvm::Value *wv =
            lb.loadFloat(w, b.CreateAdd(b.CreateMul(row, lb.index(a.inputs), "", true, true), i));
        llvm::Value *sum = b.CreateLoad(lb.laneType(), acc[static_cast<size_t>(r)]);
        if (lb.lanes() == 1)
          sum = lb.reassociable(b.CreateFAdd(sum, lb.reassociable(b.CreateFMul(wv, xv))));
        else
          sum = lb.mulAdd(lb.splat(wv), xv, sum);
        b.CreateStore(sum, acc[static_cast<size_t>(r)]);
      }
    });
    for (int64_t r = 0; r < size; ++r)
      storeResult(lb, op, b.CreateLoad(lb.laneType(), acc[static_cast<size_t>(r)]), y,
                  b.CreateAdd(first, lb.index(r), "", true, true));
  });
}

void emitSparse(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::SparseAttrs>();
  llvm::Value *x = address(op.in[0]), *w = address(op.in[1]), *rowStart = address(op.in[2]),
              *column = address(op.in[3]), *y = address(op.out[0]);
  lb.loop(a.outputs, [&](llvm::Value *d) {
    llvm::AllocaInst *acc = lb.slot(lb.laneType(), "acc");
    b.CreateStore(lb.splat(0.0f), acc);
    llvm::Value *end = lb.loadInt(rowStart, b.CreateAdd(d, lb.index(1), "", true, true));
    lb.loop(lb.loadInt(rowStart, d), end, [&](llvm::Value *e) {
      llvm::Value *xv = lb.load(x, lb.loadInt(column, e));
      b.CreateStore(lb.mulAdd(lb.splat(lb.loadFloat(w, e)), xv, b.CreateLoad(lb.laneType(), acc)), acc);
    });
    storeResult(lb, op, b.CreateLoad(lb.laneType(), acc), y, d);
  });
}

void emitConvolution(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::ConvAttrs>();
  llvm::Value *x = address(op.in[0]), *w = address(op.in[1]), *gather = address(op.in[2]),
              *scatter = address(op.in[3]), *bias = address(op.in[4]), *y = address(op.out[0]);
  const int64_t G = a.groups, P = a.positions, W = a.window;
  lb.loop(G, [&](llvm::Value *u) {
    lb.loop(P, [&](llvm::Value *p) {
      forBlocks(lb, a.maps, kBlock, [&](llvm::Value *first, int64_t size) {
        // Kernel (m, u): weights at row m·G + u, its bias at element m·G + u.
        std::vector<llvm::Value *> kernel;
        for (int64_t r = 0; r < size; ++r)
          kernel.push_back(b.CreateAdd(
              b.CreateMul(b.CreateAdd(first, lb.index(r), "", true, true), lb.index(G), "", true, true), u,
              "", true, true));
        auto acc = slots(lb, size, lb.laneType(), "acc");
        for (int64_t r = 0; r < size; ++r)
          b.CreateStore(lb.splat(lb.loadFloat(bias, kernel[static_cast<size_t>(r)])),
                        acc[static_cast<size_t>(r)]);
        llvm::Value *cells =
            b.CreateMul(b.CreateAdd(b.CreateMul(u, lb.index(P), "", true, true), p, "", true, true),
                        lb.index(W), "", true, true);
        lb.loop(W, [&](llvm::Value *k) {
          llvm::Value *source = lb.loadInt(gather, b.CreateAdd(cells, k, "", true, true));
          auto add = [&] {
            llvm::Value *xv = lb.load(x, source);
            for (int64_t r = 0; r < size; ++r) {
              llvm::Value *at =
                  b.CreateAdd(b.CreateMul(kernel[static_cast<size_t>(r)], lb.index(W), "", true, true), k, "",
                              true, true);
              llvm::Value *sum = b.CreateLoad(lb.laneType(), acc[static_cast<size_t>(r)]);
              b.CreateStore(lb.mulAdd(lb.splat(lb.loadFloat(w, at)), xv, sum), acc[static_cast<size_t>(r)]);
            }
          };
          if (a.padded)
            lb.when(b.CreateICmpSGE(source, lb.index(0)), add);
          else
            add();
        });
        for (int64_t r = 0; r < size; ++r) {
          llvm::Value *at = b.CreateAdd(
              b.CreateMul(kernel[static_cast<size_t>(r)], lb.index(P), "", true, true), p, "", true, true);
          storeResult(lb, op, b.CreateLoad(lb.laneType(), acc[static_cast<size_t>(r)]), y,
                      lb.loadInt(scatter, at));
        }
      });
    });
  });
}

/// Pools and response normalization: body(o, window) per output, where
/// window is the i64 index of its first cell in the window table.
void forEachWindow(LaneBuilder &lb, const plan::WindowAttrs &a,
                   const std::function<void(llvm::Value *o, llvm::Value *first)> &body) {
  lb.loop(a.outputs,
          [&](llvm::Value *o) { body(o, lb.ir().CreateMul(o, lb.index(a.window), "", true, true)); });
}

void emitMaxPool(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::WindowAttrs>();
  llvm::Value *x = address(op.in[0]), *window = address(op.in[1]), *y = address(op.out[0]);
  forEachWindow(lb, a, [&](llvm::Value *o, llvm::Value *first) {
    // The first maximal real cell (runtime/core/WindowMath.h's firstMaxCell);
    // 0 when every cell is a dummy.
    llvm::AllocaInst *best = lb.slot(lb.laneType(), "best");
    llvm::AllocaInst *seen = lb.slot(b.getInt1Ty(), "seen");
    b.CreateStore(lb.splat(0.0f), best);
    b.CreateStore(b.getFalse(), seen);
    lb.loop(a.window, [&](llvm::Value *k) {
      llvm::Value *source = lb.loadInt(window, b.CreateAdd(first, k, "", true, true));
      lb.when(b.CreateICmpSGE(source, lb.index(0)), [&] {
        llvm::Value *v = lb.load(x, source), *current = b.CreateLoad(lb.laneType(), best);
        llvm::Value *larger = b.CreateSelect(b.CreateFCmpOGT(v, current), v, current);
        b.CreateStore(b.CreateSelect(b.CreateLoad(b.getInt1Ty(), seen), larger, v), best);
        b.CreateStore(b.getTrue(), seen);
      });
    });
    storeResult(lb, op, b.CreateLoad(lb.laneType(), best), y, o);
  });
}

void emitMeanPool(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::WindowAttrs>();
  llvm::Value *x = address(op.in[0]), *window = address(op.in[1]), *y = address(op.out[0]);
  forEachWindow(lb, a, [&](llvm::Value *o, llvm::Value *first) {
    llvm::AllocaInst *sum = lb.slot(lb.laneType(), "sum");
    llvm::AllocaInst *real = lb.slot(b.getInt64Ty(), "real");
    b.CreateStore(lb.splat(0.0f), sum);
    b.CreateStore(lb.index(0), real);
    lb.loop(a.window, [&](llvm::Value *k) {
      llvm::Value *source = lb.loadInt(window, b.CreateAdd(first, k, "", true, true));
      lb.when(b.CreateICmpSGE(source, lb.index(0)), [&] {
        b.CreateStore(b.CreateFAdd(b.CreateLoad(lb.laneType(), sum), lb.load(x, source)), sum);
        b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), real), lb.index(1), "", true, true), real);
      });
    });
    // The mean over the real cells; 0 when there are none.
    llvm::Value *cells = b.CreateLoad(b.getInt64Ty(), real);
    llvm::Value *mean =
        b.CreateFDiv(b.CreateLoad(lb.laneType(), sum), lb.splat(b.CreateSIToFP(cells, lb.floatType())));
    storeResult(lb, op, b.CreateSelect(b.CreateICmpSGT(cells, lb.index(0)), mean, lb.splat(0.0f)), y, o);
  });
}

void emitResponseNorm(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::WindowAttrs>();
  llvm::Value *x = address(op.in[0]), *window = address(op.in[1]), *centre = address(op.in[2]),
              *y = address(op.out[0]);
  forEachWindow(lb, a, [&](llvm::Value *o, llvm::Value *first) {
    // x[centre] · S^-beta, S = Offset + (Alpha / n) Σ x² over the real cells
    // (runtime/core/WindowMath.h's responseNormScale); 0 without a centre.
    llvm::AllocaInst *result = lb.slot(lb.laneType(), "result");
    b.CreateStore(lb.splat(0.0f), result);
    llvm::Value *c = lb.loadInt(centre, o);
    lb.when(b.CreateICmpSGE(c, lb.index(0)), [&] {
      llvm::AllocaInst *sum = lb.slot(lb.laneType(), "sum");
      llvm::AllocaInst *real = lb.slot(b.getInt64Ty(), "real");
      b.CreateStore(lb.splat(0.0f), sum);
      b.CreateStore(lb.index(0), real);
      lb.loop(a.window, [&](llvm::Value *k) {
        llvm::Value *source = lb.loadInt(window, b.CreateAdd(first, k, "", true, true));
        lb.when(b.CreateICmpSGE(source, lb.index(0)), [&] {
          llvm::Value *v = lb.load(x, source);
          b.CreateStore(b.CreateFAdd(b.CreateLoad(lb.laneType(), sum), b.CreateFMul(v, v)), sum);
          b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), real), lb.index(1), "", true, true), real);
        });
      });
      llvm::Value *n;
      if (a.averageOverFullKernel) {
        n = llvm::ConstantFP::get(lb.floatType(), static_cast<double>(a.window));
      } else {
        llvm::Value *cells = b.CreateLoad(b.getInt64Ty(), real);
        cells = b.CreateSelect(b.CreateICmpSGT(cells, lb.index(0)), cells, lb.index(1));
        n = b.CreateSIToFP(cells, lb.floatType());
      }
      llvm::Value *perCell = b.CreateFDiv(llvm::ConstantFP::get(lb.floatType(), a.alpha), n);
      llvm::Value *scale =
          b.CreateFAdd(lb.splat(a.offset), b.CreateFMul(lb.splat(perCell), b.CreateLoad(lb.laneType(), sum)));
      b.CreateStore(b.CreateFMul(lb.load(x, c), lb.pow(scale, -a.beta)), result);
    });
    storeResult(lb, op, b.CreateLoad(lb.laneType(), result), y, o);
  });
}

void emitActivate(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::ActivationAttrs>();
  llvm::Value *x = address(op.in[0]), *y = address(op.out[0]);
  if (a.function != ir::Activation::Softmax) {
    lb.loop(a.nodes, [&](llvm::Value *i) { lb.store(lb.apply(a.function, lb.load(x, i)), y, i); });
    return;
  }
  // Per sample (lane): e^(x - max) / Σ e^(x - max), as the CPU's kernels.
  llvm::AllocaInst *top = lb.slot(lb.laneType(), "top");
  llvm::AllocaInst *sum = lb.slot(lb.laneType(), "sum");
  b.CreateStore(lb.load(x, lb.index(0)), top);
  lb.loop(lb.index(1), lb.index(a.nodes), [&](llvm::Value *i) {
    b.CreateStore(lb.maximum(b.CreateLoad(lb.laneType(), top), lb.load(x, i)), top);
  });
  b.CreateStore(lb.splat(0.0f), sum);
  lb.loop(a.nodes, [&](llvm::Value *i) {
    llvm::Value *e = lb.exp(b.CreateFSub(lb.load(x, i), b.CreateLoad(lb.laneType(), top)));
    b.CreateStore(b.CreateFAdd(b.CreateLoad(lb.laneType(), sum), e), sum);
  });
  lb.loop(a.nodes, [&](llvm::Value *i) {
    llvm::Value *e = lb.exp(b.CreateFSub(lb.load(x, i), b.CreateLoad(lb.laneType(), top)));
    lb.store(b.CreateFDiv(e, b.CreateLoad(lb.laneType(), sum)), y, i);
  });
}

} // namespace

Status emitForwardOp(LaneBuilder &lb, const plan::Plan &plan, const plan::Op &op,
                     const BufferAddress &address) {
  auto &b = lb.ir();
  switch (op.kind) {
  case plan::OpKind::SliceInput: {
    const auto &a = op.get<plan::SliceAttrs>();
    llvm::Value *x = address(op.in[0]), *y = address(op.out[0]);
    lb.loop(a.width, [&](llvm::Value *i) {
      lb.store(lb.load(x, b.CreateAdd(i, lb.index(a.offset), "", true, true)), y, i);
    });
    return Status::success();
  }
  case plan::OpKind::Dense: emitDense(lb, op, address); return Status::success();
  case plan::OpKind::Sparse: emitSparse(lb, op, address); return Status::success();
  case plan::OpKind::Convolution: emitConvolution(lb, op, address); return Status::success();
  case plan::OpKind::MaxPool: emitMaxPool(lb, op, address); return Status::success();
  case plan::OpKind::MeanPool: emitMeanPool(lb, op, address); return Status::success();
  case plan::OpKind::ResponseNorm: emitResponseNorm(lb, op, address); return Status::success();
  case plan::OpKind::AddBias: {
    const auto &a = op.get<plan::DenseAttrs>();
    llvm::Value *bias = address(op.in[0]), *y = address(op.out[0]);
    lb.loop(a.outputs, [&](llvm::Value *i) {
      lb.store(b.CreateFAdd(lb.load(y, i), lb.splat(lb.loadFloat(bias, i))), y, i);
    });
    return Status::success();
  }
  case plan::OpKind::Activate: emitActivate(lb, op, address); return Status::success();
  default: break;
  }
  return fail(fmt::format("network '{}': op {} cannot be compiled into a library (only inference ops can)",
                          plan.network, plan::opName(op.kind)));
}

} // namespace netc::aot
