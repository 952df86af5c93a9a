// EmitForwardOps.cpp -- the forward ops of codegen/Ops.def as IR over the lane
// layout (EmitModule.h): the same definitions as runtime/cpu's kernels (the
// Plan's index tables, dummy cells skipped, the first maximal cell, response
// normalization's divisor), with the loops over a network's shapes as
// constants. Dense and convolution ops keep up to kBlock outputs in
// registers while one input vector is loaded. In the one-sample form a dense
// op's dot products are reassociable, so that LLVM vectorises them along the
// inputs, and a convolution works on a vector of positions (consecutive
// sources) or of maps (scattered ones).
#include "codegen/llvm/EmitModule.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace netc::aot {

namespace {

/// Outputs computed together by dense and convolution ops.
constexpr int64_t kBlock = 8;
/// Maps a one-sample convolution sums at once (each a vector of positions).
constexpr int64_t kMapsPerPass = 16;
/// Independent sums per map in the one-sample convolution along maps.
constexpr int64_t kChains = 4;

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

/// The one-sample form along maps (MapMajorKernels), for convolutions whose
/// sources are scattered (strides above 1): per position, each source value
/// loaded once and multiplied into a vector of maps. Cells k, k + kChains,
/// ... go into sum k mod kChains: independent chains of multiply-adds the
/// processor overlaps, added together at the end.
void emitConvolutionByMaps(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address,
                           const MapMajorKernels &mm) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::ConvAttrs>();
  llvm::Value *x = address(op.in[0]), *gather = address(op.in[2]), *scatter = address(op.in[3]),
              *y = address(op.out[0]);
  const int64_t G = a.groups, P = a.positions, W = a.window, V = mm.width, blocks = mm.paddedMaps / V;
  const int64_t chains = std::min<int64_t>(kChains, W);
  auto *vector = llvm::FixedVectorType::get(lb.floatType(), static_cast<unsigned>(V));
  const llvm::Align align(static_cast<uint64_t>(std::min<int64_t>(4 * V, 64)));
  auto loadVector = [&](llvm::Value *array, llvm::Value *at) {
    return b.CreateAlignedLoad(vector, b.CreateGEP(lb.floatType(), array, at), align);
  };
  lb.loop(G, [&](llvm::Value *u) {
    lb.loop(P, [&](llvm::Value *p) {
      auto acc = slots(lb, blocks * chains, vector, "maps");
      auto sumOf = [&](int64_t blk, int64_t chain) { return acc[static_cast<size_t>(blk * chains + chain)]; };
      llvm::Value *biasRow = b.CreateMul(u, lb.index(mm.paddedMaps), "", true, true);
      for (int64_t blk = 0; blk < blocks; ++blk)
        for (int64_t chain = 0; chain < chains; ++chain) {
          llvm::Value *start =
              chain == 0 ? static_cast<llvm::Value *>(
                               loadVector(mm.bias, b.CreateAdd(biasRow, lb.index(blk * V), "", true, true)))
                         : llvm::Constant::getNullValue(vector);
          b.CreateStore(start, sumOf(blk, chain));
        }
      llvm::Value *cells =
          b.CreateMul(b.CreateAdd(b.CreateMul(u, lb.index(P), "", true, true), p, "", true, true),
                      lb.index(W), "", true, true);
      llvm::Value *kernelRows = b.CreateMul(u, lb.index(W), "", true, true);
      // Cell k into chain `chain`; a dummy cell reads a constant 0 (a select:
      // padding makes a branch unpredictable).
      auto cell = [&](llvm::Value *k, int64_t chain) {
        llvm::Value *source = lb.loadInt(gather, b.CreateAdd(cells, k, "", true, true));
        llvm::Value *from = b.CreateGEP(lb.floatType(), x, source);
        if (a.padded)
          from = b.CreateSelect(b.CreateICmpSGE(source, lb.index(0)), from, mm.zero);
        llvm::Value *xv = b.CreateVectorSplat(static_cast<unsigned>(V),
                                              b.CreateAlignedLoad(lb.floatType(), from, llvm::Align(4)));
        llvm::Value *row =
            b.CreateMul(b.CreateAdd(kernelRows, k, "", true, true), lb.index(mm.paddedMaps), "", true, true);
        for (int64_t blk = 0; blk < blocks; ++blk) {
          llvm::Value *w = loadVector(mm.weights, b.CreateAdd(row, lb.index(blk * V), "", true, true));
          llvm::Value *sum = b.CreateLoad(vector, sumOf(blk, chain));
          b.CreateStore(lb.mulAdd(w, xv, sum), sumOf(blk, chain));
        }
      };
      lb.loop(
          W / chains,
          [&](llvm::Value *step) {
            llvm::Value *first = b.CreateMul(step, lb.index(chains), "", true, true);
            for (int64_t chain = 0; chain < chains; ++chain)
              cell(b.CreateAdd(first, lb.index(chain), "", true, true), chain);
          },
          /*vectorize=*/false);
      for (int64_t k = W / chains * chains; k < W; ++k)
        cell(lb.index(k), k % chains);
      std::vector<llvm::Value *> total;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        llvm::Value *sum = b.CreateLoad(vector, sumOf(blk, 0));
        for (int64_t chain = 1; chain < chains; ++chain)
          sum = b.CreateFAdd(sum, b.CreateLoad(vector, sumOf(blk, chain)));
        total.push_back(sum);
      }
      for (int64_t m = 0; m < a.maps; ++m) {
        llvm::Value *value =
            b.CreateExtractElement(total[static_cast<size_t>(m / V)], static_cast<uint64_t>(m % V));
        llvm::Value *kernel = b.CreateAdd(lb.index(m * G), u, "", true, true);
        llvm::Value *at = b.CreateAdd(b.CreateMul(kernel, lb.index(P), "", true, true), p, "", true, true);
        storeResult(lb, op, value, y, lb.loadInt(scatter, at));
      }
    });
  });
}

/// The one-sample form (PositionBlocks): a vector of positions at a time,
/// each cell's sources loaded once -- one vector load where they are
/// consecutive (a row of a stride-1 convolution), a gather elsewhere, dummy
/// cells 0 -- and multiplied into up to kMapsPerPass maps' sums.
void emitConvolutionByPositions(LaneBuilder &lb, const plan::Op &op, const BufferAddress &address,
                                const PositionBlocks &pb) {
  auto &b = lb.ir();
  const auto &a = op.get<plan::ConvAttrs>();
  llvm::Value *x = address(op.in[0]), *w = address(op.in[1]), *scatter = address(op.in[3]),
              *bias = address(op.in[4]), *y = address(op.out[0]);
  const int64_t G = a.groups, P = a.positions, W = a.window, V = pb.width;
  const auto lanes = static_cast<unsigned>(V);
  auto *vector = llvm::FixedVectorType::get(lb.floatType(), lanes);
  auto *indices = llvm::FixedVectorType::get(b.getInt32Ty(), lanes);
  std::vector<llvm::Constant *> iota;
  for (int64_t j = 0; j < V; ++j)
    iota.push_back(b.getInt32(static_cast<uint32_t>(j)));
  llvm::Value *laneNumbers = llvm::ConstantVector::get(iota);
  llvm::Value *zero = llvm::Constant::getNullValue(vector);
  lb.loop(G, [&](llvm::Value *u) {
    lb.loop(pb.blocks, [&](llvm::Value *blk) {
      llvm::Value *first = lb.loadInt(pb.first, blk), *count = lb.loadInt(pb.count, blk);
      llvm::Value *used =
          b.CreateICmpSLT(laneNumbers, b.CreateVectorSplat(lanes, b.CreateTrunc(count, b.getInt32Ty())));
      llvm::Value *cellRows =
          b.CreateMul(b.CreateAdd(b.CreateMul(u, lb.index(pb.blocks), "", true, true), blk, "", true, true),
                      lb.index(W), "", true, true);
      for (int64_t m0 = 0; m0 < a.maps; m0 += kMapsPerPass) {
        const int64_t size = std::min(kMapsPerPass, a.maps - m0);
        std::vector<llvm::Value *> kernel;
        for (int64_t r = 0; r < size; ++r)
          kernel.push_back(b.CreateAdd(lb.index((m0 + r) * G), u, "", true, true));
        auto acc = slots(lb, size, vector, "positions");
        for (int64_t r = 0; r < size; ++r)
          b.CreateStore(b.CreateVectorSplat(lanes, lb.loadFloat(bias, kernel[static_cast<size_t>(r)])),
                        acc[static_cast<size_t>(r)]);
        llvm::AllocaInst *sources = lb.slot(vector, "sources");
        lb.loop(
            W,
            [&](llvm::Value *k) {
              llvm::Value *row = b.CreateAdd(cellRows, k, "", true, true);
              llvm::Value *start = lb.loadInt(pb.starts, row);
              lb.when(b.CreateICmpSGE(start, lb.index(0)), [&] {
                b.CreateStore(b.CreateMaskedLoad(vector, b.CreateGEP(lb.floatType(), x, start),
                                                 llvm::Align(4), used, zero),
                              sources);
              });
              lb.when(b.CreateICmpSLT(start, lb.index(0)), [&] {
                llvm::Value *at = b.CreateMul(row, lb.index(V), "", true, true);
                llvm::Value *cells =
                    b.CreateAlignedLoad(indices, b.CreateGEP(b.getInt32Ty(), pb.cells, at), llvm::Align(4));
                llvm::Value *real = b.CreateICmpSGE(cells, llvm::Constant::getNullValue(indices));
                llvm::Value *from =
                    b.CreateGEP(lb.floatType(), x,
                                b.CreateSExt(cells, llvm::FixedVectorType::get(b.getInt64Ty(), lanes)));
                b.CreateStore(b.CreateMaskedGather(vector, from, llvm::Align(4), real, zero), sources);
              });
              llvm::Value *xv = b.CreateLoad(vector, sources);
              for (int64_t r = 0; r < size; ++r) {
                llvm::Value *cell =
                    b.CreateAdd(b.CreateMul(kernel[static_cast<size_t>(r)], lb.index(W), "", true, true), k,
                                "", true, true);
                llvm::Value *sum = b.CreateLoad(vector, acc[static_cast<size_t>(r)]);
                b.CreateStore(lb.mulAdd(b.CreateVectorSplat(lanes, lb.loadFloat(w, cell)), xv, sum),
                              acc[static_cast<size_t>(r)]);
              }
            },
            /*vectorize=*/false);
        // The sums to memory once, then each used lane to its output node.
        auto *sumsType = llvm::ArrayType::get(vector, static_cast<uint64_t>(size));
        llvm::AllocaInst *sums = lb.slot(sumsType, "sums");
        for (int64_t r = 0; r < size; ++r)
          b.CreateStore(b.CreateLoad(vector, acc[static_cast<size_t>(r)]),
                        b.CreateConstInBoundsGEP2_64(sumsType, sums, 0, static_cast<uint64_t>(r)));
        lb.loop(
            lb.index(0), count,
            [&](llvm::Value *j) {
              llvm::Value *position = b.CreateAdd(first, j, "", true, true);
              for (int64_t r = 0; r < size; ++r) {
                llvm::Value *lane =
                    b.CreateGEP(lb.floatType(), sums, b.CreateAdd(lb.index(r * V), j, "", true, true));
                llvm::Value *value = b.CreateAlignedLoad(lb.floatType(), lane, llvm::Align(4));
                llvm::Value *at =
                    b.CreateAdd(b.CreateMul(kernel[static_cast<size_t>(r)], lb.index(P), "", true, true),
                                position, "", true, true);
                storeResult(lb, op, value, y, lb.loadInt(scatter, at));
              }
            },
            /*vectorize=*/false);
      }
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

/// body(source) for each real (non-dummy) cell of the window whose first
/// cell is at `first` in the window table.
void forEachRealCell(LaneBuilder &lb, const plan::WindowAttrs &a, llvm::Value *window, llvm::Value *first,
                     const std::function<void(llvm::Value *source)> &body) {
  auto &b = lb.ir();
  lb.loop(a.window, [&](llvm::Value *k) {
    llvm::Value *source = lb.loadInt(window, b.CreateAdd(first, k, "", true, true));
    lb.when(b.CreateICmpSGE(source, lb.index(0)), [&] { body(source); });
  });
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
    forEachRealCell(lb, a, window, first, [&](llvm::Value *source) {
      llvm::Value *v = lb.load(x, source), *current = b.CreateLoad(lb.laneType(), best);
      llvm::Value *larger = b.CreateSelect(b.CreateFCmpOGT(v, current), v, current);
      b.CreateStore(b.CreateSelect(b.CreateLoad(b.getInt1Ty(), seen), larger, v), best);
      b.CreateStore(b.getTrue(), seen);
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
    forEachRealCell(lb, a, window, first, [&](llvm::Value *source) {
      b.CreateStore(b.CreateFAdd(b.CreateLoad(lb.laneType(), sum), lb.load(x, source)), sum);
      b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), real), lb.index(1), "", true, true), real);
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
      forEachRealCell(lb, a, window, first, [&](llvm::Value *source) {
        llvm::Value *v = lb.load(x, source);
        b.CreateStore(b.CreateFAdd(b.CreateLoad(lb.laneType(), sum), b.CreateFMul(v, v)), sum);
        b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), real), lb.index(1), "", true, true), real);
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
                     const BufferAddress &address, const OneSampleConvolution *oneSample) {
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
  case plan::OpKind::Convolution:
    if (lb.lanes() == 1 && oneSample && oneSample->byPositions)
      emitConvolutionByPositions(lb, op, address, *oneSample->byPositions);
    else if (lb.lanes() == 1 && oneSample && oneSample->byMaps)
      emitConvolutionByMaps(lb, op, address, *oneSample->byMaps);
    else
      emitConvolution(lb, op, address);
    return Status::success();
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
