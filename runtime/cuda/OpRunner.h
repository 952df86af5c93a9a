// OpRunner.h -- how the CUDA backend computes each op of a Plan with a kernel
// (every role but communication): which body or library call, over how many
// elements, with which buffers. Written once as a template over a launcher,
// so the same dispatch runs on the GPU (CudaLauncher: CUDA kernels, cuBLAS)
// and on the host in CI (HostLauncher: loops, the host GEMM evaluator), where
// every op is compared with the reference kernels. A launcher provides
//   elements(body, n)   body(i) for every i in [0, n)
//   gemm(call)          one GemmCall (a dense op makes one per block of outputs)
//   zero(data, n)       n floats set to 0
//   reduceMetrics(body) one block of kReduceLanes lanes running MetricsReduceBody
// Buffers are sample-major at the loaded batch; `buffers` holds each plan
// buffer's address (views resolved, the current input slot's inputs).
#pragma once

#include "codegen/Plan.h"
#include "runtime/cuda/ElementBodies.h"
#include "runtime/cuda/GemmCall.h"
#include "runtime/cuda/LossBodies.h"
#include "runtime/cuda/OpTables.h"
#include "runtime/cuda/TableBodies.h"
#include "runtime/cuda/UpdateBody.h"
#include "runtime/cuda/WindowBodies.h"

#include <cassert>
#include <cstdint>

namespace netc::runtime::cuda {

/// Everything an op reads besides its description.
struct OpResources {
  int64_t batch = 0;
  void *const *buffers = nullptr; // by plan buffer index
  OpPointers derived;             // the op's derived tables (OpTables.h)
  float *scratch = nullptr;       // scratchElements(op, batch) floats of workspace
};

namespace detail {

inline float *floats(const OpResources &r, int buffer) {
  return static_cast<float *>(r.buffers[buffer]);
}
inline const int32_t *ints(const OpResources &r, int buffer) {
  return static_cast<const int32_t *>(r.buffers[buffer]);
}
inline WindowTable windowTable(const plan::WindowAttrs &a, const int32_t *window) {
  return {window, a.inputs, a.outputs, a.window};
}
inline ConvTables convTables(const plan::ConvAttrs &a, const int32_t *gather, const int32_t *scatter) {
  return {gather, scatter, a.inputs, a.outputs, a.groups, a.maps, a.positions, a.window};
}

} // namespace detail

/// A sum over the batch into `elements` outputs (`out`, added to when
/// `accumulate`): one launch of the body make(chunks, destination, add) when
/// the batch is small; otherwise each chunk of samples writes its partial
/// sums to the scratch and ChunkSumBody adds them, in order, into `out`
/// (more threads, and the same result for every launch configuration).
template <class Launcher, class MakeBody>
void runBatchReduction(Launcher &launch, const OpResources &r, int64_t elements, float *out, bool accumulate,
                       MakeBody make) {
  const int64_t chunks = reductionChunks(r.batch, elements);
  const int64_t batch = r.batch > 0 ? r.batch : 1;
  if (chunks <= 1) {
    launch.elements(make(BatchChunks{r.batch, batch, elements}, out, accumulate), elements);
    return;
  }
  const int64_t perChunk = (batch + chunks - 1) / chunks;
  launch.elements(make(BatchChunks{r.batch, perChunk, elements}, r.scratch, false), chunks * elements);
  launch.elements(ChunkSumBody{r.scratch, out, elements, chunks, accumulate}, elements);
}

/// Whether ops i and i + 1 of `plan` run as one BiasActivateBody: an
/// add-bias followed by a (non-softmax) activate of the values it wrote.
inline bool fusesBiasAndActivation(const plan::Plan &plan, size_t i) {
  if (i + 1 >= plan.ops.size())
    return false;
  const plan::Op &bias = plan.ops[i], &activate = plan.ops[i + 1];
  return bias.kind == plan::OpKind::AddBias && activate.kind == plan::OpKind::Activate &&
         activate.get<plan::ActivationAttrs>().function != ir::Activation::Softmax &&
         activate.in[0] == bias.out[0] && activate.out[0] != bias.out[0];
}

/// Runs an add-bias and the activate after it (fusesBiasAndActivation) as one body.
template <class Launcher>
void runBiasActivation(const plan::Op &bias, const plan::Op &activate, const OpResources &r,
                       Launcher &launch) {
  using namespace detail;
  const auto &a = activate.get<plan::ActivationAttrs>();
  launch.elements(BiasActivateBody{a.function, floats(r, bias.in[0]), floats(r, bias.out[0]),
                                   floats(r, activate.out[0]), a.nodes},
                  r.batch * a.nodes);
}

/// Runs op `op` (any role but communication) through `launch`.
template <class Launcher> void runOp(const plan::Op &op, const OpResources &r, Launcher &launch) {
  using namespace detail;
  using plan::OpKind;
  const int64_t batch = r.batch;
  const bool acc = op.accumulate;
  auto in = [&](size_t i) { return floats(r, op.in[i]); };
  auto table = [&](size_t i) { return ints(r, op.in[i]); };
  float *out = op.out.empty() ? nullptr : floats(r, op.out[0]);
  switch (op.kind) {
  case OpKind::SliceInput: {
    const auto &a = op.get<plan::SliceAttrs>();
    launch.elements(SliceBody{in(0), out, a.width, a.total, a.offset}, batch * a.width);
    return;
  }
  case OpKind::ConcatNodes: {
    const auto &a = op.get<plan::ConcatAttrs>();
    int64_t total = 0, offset = 0;
    for (int64_t width : a.widths)
      total += width;
    for (size_t p = 0; p < a.widths.size(); ++p) {
      launch.elements(PlaceBody{in(p), out, a.widths[p], total, offset}, batch * a.widths[p]);
      offset += a.widths[p];
    }
    return;
  }
  case OpKind::Dense:
  case OpKind::DenseGradWeights:
  case OpKind::DenseGradInput:
    plan::forEachDenseBlock(op.get<plan::DenseAttrs>(), [&](int64_t first, int64_t size) {
      launch.gemm(denseGemm(op, batch, r.buffers, first, size));
    });
    return;
  case OpKind::Sparse: {
    const auto &a = op.get<plan::SparseAttrs>();
    launch.elements(SparseBody{in(0), in(1), out, {table(2), table(3), a.inputs, a.outputs}, acc},
                    batch * a.outputs);
    return;
  }
  case OpKind::SparseGradWeights: {
    const auto &a = op.get<plan::SparseAttrs>();
    runBatchReduction(launch, r, a.edges, out, acc, [&](BatchChunks chunks, float *to, bool add) {
      return SparseGradWeightsBody{
          in(0), in(1), r.derived.destinations, to, {table(2), table(3), a.inputs, a.outputs}, chunks, add};
    });
    return;
  }
  case OpKind::SparseGradInput: {
    const auto &a = op.get<plan::SparseAttrs>();
    launch.elements(
        SparseGradInputBody{in(0), in(1), table(2), table(3), table(4), out, a.inputs, a.outputs, acc},
        batch * a.inputs);
    return;
  }
  case OpKind::Convolution: {
    const auto &a = op.get<plan::ConvAttrs>();
    launch.elements(ConvolutionBody{in(0), in(1), in(4), out, convTables(a, table(2), table(3)), acc},
                    batch * a.maps * a.groups * a.positions);
    return;
  }
  case OpKind::ConvolutionGradWeights: {
    const auto &a = op.get<plan::ConvAttrs>();
    runBatchReduction(
        launch, r, a.maps * a.groups * a.window, out, acc, [&](BatchChunks chunks, float *to, bool add) {
          return ConvolutionGradWeightsBody{in(0), in(1), to, convTables(a, table(2), table(3)), chunks, add};
        });
    return;
  }
  case OpKind::ConvolutionGradBias: {
    // Per sample and block of positions, then over those as a batch.
    const auto &a = op.get<plan::ConvAttrs>();
    const int64_t kernels = a.maps * a.groups, blocks = biasBlocks(a.positions);
    const int64_t perBlock = (a.positions + blocks - 1) / blocks;
    launch.elements(ConvolutionBiasPartialBody{in(0), table(1), r.scratch, a.outputs, a.positions, kernels,
                                               blocks, perBlock},
                    batch * blocks * kernels);
    OpResources partials = r;
    partials.batch = batch * blocks;
    partials.scratch = r.scratch + plan::alignElements(batch * blocks * kernels);
    runBatchReduction(launch, partials, kernels, out, acc, [&](BatchChunks chunks, float *to, bool add) {
      return BiasGradBody{r.scratch, to, chunks, add};
    });
    return;
  }
  case OpKind::ConvolutionGradInput: {
    const auto &a = op.get<plan::ConvAttrs>();
    launch.elements(ConvolutionGradInputBody{in(0), in(1), out, convTables(a, table(2), table(3)),
                                             r.derived.sources, acc},
                    batch * a.inputs);
    return;
  }
  case OpKind::MaxPool: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(MaxPoolBody{in(0), out, windowTable(a, table(1)), acc}, batch * a.outputs);
    return;
  }
  case OpKind::MeanPool: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(MeanPoolBody{in(0), out, windowTable(a, table(1)), acc}, batch * a.outputs);
    return;
  }
  case OpKind::ResponseNorm: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(ResponseNormBody{in(0), table(2), out, windowTable(a, table(1)), normConstants(a), acc},
                    batch * a.outputs);
    return;
  }
  case OpKind::MaxPoolGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(MaxPoolGradBody{in(0), in(1), out, windowTable(a, table(2)), r.derived.sources, acc},
                    batch * a.inputs);
    return;
  }
  case OpKind::MeanPoolGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(MeanPoolGradBody{in(0), out, windowTable(a, table(1)), r.derived.sources, acc},
                    batch * a.inputs);
    return;
  }
  case OpKind::ResponseNormGrad: {
    const auto &a = op.get<plan::WindowAttrs>();
    launch.elements(ResponseNormGradBody{in(0), in(1), table(3), out, windowTable(a, table(2)),
                                         r.derived.sources, r.derived.centres, normConstants(a), acc},
                    batch * a.inputs);
    return;
  }
  case OpKind::AddBias: {
    const auto &a = op.get<plan::DenseAttrs>();
    launch.elements(AddBiasBody{in(0), out, a.outputs}, batch * a.outputs);
    return;
  }
  case OpKind::Activate: {
    const auto &a = op.get<plan::ActivationAttrs>();
    if (a.function == ir::Activation::Softmax)
      launch.elements(SoftmaxRowBody{in(0), out, a.nodes}, batch);
    else
      launch.elements(ActivateBody{a.function, in(0), out}, batch * a.nodes);
    return;
  }
  case OpKind::SoftmaxCrossEntropy:
  case OpKind::SigmoidCrossEntropy:
  case OpKind::SquaredError: {
    const auto &a = op.get<plan::LossAttrs>();
    const LossBodyKind kind = op.kind == OpKind::SoftmaxCrossEntropy   ? LossBodyKind::SoftmaxCrossEntropy
                              : op.kind == OpKind::SigmoidCrossEntropy ? LossBodyKind::SigmoidCrossEntropy
                                                                       : LossBodyKind::SquaredError;
    launch.elements(LossRowBody{kind, in(0), in(1), in(2), out, r.scratch, a.nodes, batch}, batch);
    launch.reduceMetrics(MetricsReduceBody{r.scratch, in(2), floats(r, op.out[1]), batch});
    return;
  }
  case OpKind::BiasGrad: {
    const auto &a = op.get<plan::DenseAttrs>();
    runBatchReduction(launch, r, a.outputs, out, acc, [&](BatchChunks chunks, float *to, bool add) {
      return BiasGradBody{in(0), to, chunks, add};
    });
    return;
  }
  case OpKind::ActivateGrad: {
    const auto &a = op.get<plan::ActivationAttrs>();
    if (a.function == ir::Activation::Softmax)
      launch.elements(SoftmaxGradRowBody{in(0), in(1), out, a.nodes, acc}, batch);
    else
      launch.elements(ActivateGradBody{a.function, in(0), in(1), in(2), out, acc}, batch * a.nodes);
    return;
  }
  case OpKind::ZeroGradients: launch.zero(out, op.get<plan::UpdateAttrs>().count); return;
  case OpKind::Update: {
    const auto &a = op.get<plan::UpdateAttrs>();
    float *state0 = op.out.size() > 1 ? floats(r, op.out[1]) : nullptr;
    float *state1 = op.out.size() > 2 ? floats(r, op.out[2]) : nullptr;
    launch.elements(UpdateBody{a.rule, in(0), in(1), in(2), out, state0, state1}, a.count);
    return;
  }
  case OpKind::AllReduce:
  case OpKind::AllReduceWait:
  case OpKind::Send:
  case OpKind::Receive: assert(false && "communication ops run through the backend's communicator"); return;
  }
}

} // namespace netc::runtime::cuda
