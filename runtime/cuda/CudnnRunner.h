// CudnnRunner.h -- how the CUDA backend computes a convolution or pooling op
// through cuDNN (the forms CudnnConvolution.h and CudnnPooling.h describe):
// the filter and channel permutations a grouped convolution needs around
// the call, the bias, the max-pool gradient's forward pass (cuDNN finds
// each window's maximum by comparing with the output), and the clearing of
// input nodes outside the op's view in a gradient. Written once as a template over a launcher, like
// OpRunner.h: on the GPU the call is cuDNN's (CudaLauncher), in CI it is cudnnCallOnHost, which computes from
// the same numbers what cuDNN does (HostLauncher), so the whole path is checked against the reference kernels
// without a GPU. A launcher adds to OpRunner.h's members
//   cudnn(call)       one CudnnCall
//   cudnnPool(call)   one CudnnPoolCall
#pragma once

#include "runtime/cuda/CudnnConvolution.h"
#include "runtime/cuda/CudnnPooling.h"
#include "runtime/cuda/ElementBodies.h"
#include "runtime/cuda/OpRunner.h"

#include <cstdint>

namespace netc::runtime::cuda {

/// One convolution op's cuDNN form where the kernels read it.
struct CudnnOpResources {
  CudnnShapes shapes;                  // at the call's batch
  const int32_t *netChannel = nullptr; // the description's tables (null: in place)
  const int32_t *weightRow = nullptr;
  float *filter = nullptr; // shapes.filterFloats of scratch (weights not in place)
  float *values = nullptr; // batch × channels × channelLength of scratch (output not in place)
  int slot = -1;           // the op's prepared call on the device
};

/// Whether op kind `kind` can run through cuDNN (with a description).
inline bool cudnnRuns(plan::OpKind kind) {
  return kind == plan::OpKind::Convolution || kind == plan::OpKind::ConvolutionGradInput ||
         kind == plan::OpKind::ConvolutionGradWeights;
}

/// Runs convolution op `op` (cudnnRuns) through cuDNN's form `c`.
template <class Launcher>
void runCudnnOp(const plan::Op &op, const OpResources &r, const CudnnOpResources &c, Launcher &launch) {
  using namespace detail;
  const CudnnShapes &s = c.shapes;
  const int64_t batch = r.batch, window = s.filterFloats / s.channels;
  const int64_t perSample = s.channels * s.channelLength;
  auto in = [&](size_t i) { return floats(r, op.in[i]); };
  float *out = floats(r, op.out[0]);
  auto call = [&](CudnnPass pass, const float *x, const float *w, const float *dy, float *to, bool add) {
    launch.cudnn(CudnnCall{pass, &s, x, w, dy, to, add ? 1.0f : 0.0f, c.slot});
  };
  // The weights as cuDNN's filter.
  auto filter = [&](const float *weights) -> const float * {
    if (s.weightsInPlace)
      return weights;
    launch.elements(
        PermuteRowsBody{weights, c.filter, c.weightRow, nullptr, nullptr, s.channels, window, true, false},
        s.filterFloats);
    return c.filter;
  };
  // The output gradient in cuDNN's order.
  auto outputGradient = [&](const float *dy) -> const float * {
    if (s.outputInPlace)
      return dy;
    launch.elements(PermuteRowsBody{dy, c.values, c.netChannel, nullptr, nullptr, s.channels, s.channelLength,
                                    true, false},
                    batch * perSample);
    return c.values;
  };
  switch (op.kind) {
  case plan::OpKind::Convolution: {
    const float *w = filter(in(1)), *bias = in(4);
    if (s.outputInPlace) {
      call(CudnnPass::Forward, in(0) + s.xOffset, w, nullptr, out, op.accumulate);
      launch.elements(
          PermuteRowsBody{out, out, nullptr, nullptr, bias, s.channels, s.channelLength, false, false},
          batch * perSample);
    } else {
      call(CudnnPass::Forward, in(0) + s.xOffset, w, nullptr, c.values, false);
      launch.elements(PermuteRowsBody{c.values, out, c.netChannel, c.weightRow, bias, s.channels,
                                      s.channelLength, false, op.accumulate},
                      batch * perSample);
    }
    return;
  }
  case plan::OpKind::ConvolutionGradInput: {
    const float *w = filter(in(1)), *dy = outputGradient(in(0));
    bool add = op.accumulate;
    if (!add && !s.coversInput) { // nodes outside the view get no gradient: zero, not stale values
      launch.zero(out, batch * op.get<plan::ConvAttrs>().inputs);
      add = true;
    }
    call(CudnnPass::BackwardData, nullptr, w, dy, out + s.xOffset, add);
    return;
  }
  case plan::OpKind::ConvolutionGradWeights: {
    const float *dy = outputGradient(in(0)), *x = in(1) + s.xOffset;
    if (s.weightsInPlace) {
      call(CudnnPass::BackwardFilter, x, nullptr, dy, out, op.accumulate);
    } else {
      call(CudnnPass::BackwardFilter, x, nullptr, dy, c.filter, false);
      launch.elements(PermuteRowsBody{c.filter, out, c.weightRow, nullptr, nullptr, s.channels, window, false,
                                      op.accumulate},
                      s.filterFloats);
    }
    return;
  }
  default: return;
  }
}

/// One pooling op's cuDNN form where the kernels read it.
struct CudnnPoolResources {
  CudnnPoolShapes shapes;  // at the call's batch
  float *values = nullptr; // batch × outputs of scratch (a max-pool gradient's forward output)
  int slot = -1;           // the op's prepared call on the device
};

/// Whether pooling op kind `kind` can run through cuDNN (with a
/// description). A mean-pool gradient stays on netc's kernel: cuDNN's
/// backward call takes the forward's input, which the plan does not keep
/// for it.
inline bool cudnnPools(plan::OpKind kind) {
  return kind == plan::OpKind::MaxPool || kind == plan::OpKind::MeanPool || kind == plan::OpKind::MaxPoolGrad;
}

/// Runs pooling op `op` (cudnnPools) through cuDNN's form `c`.
template <class Launcher>
void runCudnnPoolOp(const plan::Op &op, const OpResources &r, const CudnnPoolResources &c, Launcher &launch) {
  using namespace detail;
  const CudnnPoolShapes &s = c.shapes;
  float *out = floats(r, op.out[0]);
  auto call = [&](bool backward, const float *x, const float *y, const float *dy, float *to, bool add) {
    launch.cudnnPool(CudnnPoolCall{backward, &s, x, y, dy, to, add ? 1.0f : 0.0f, c.slot});
  };
  if (op.kind != plan::OpKind::MaxPoolGrad) {
    call(false, floats(r, op.in[0]) + s.xOffset, nullptr, nullptr, out, op.accumulate);
    return;
  }
  const float *dy = floats(r, op.in[0]), *x = floats(r, op.in[1]) + s.xOffset;
  call(false, x, nullptr, nullptr, c.values, false);
  bool add = op.accumulate;
  if (!add && !s.coversInput) { // nodes outside the view get no gradient
    launch.zero(out, r.batch * s.inputs);
    add = true;
  }
  call(true, x, c.values, dy, out + s.xOffset, add);
}

/// Runs op `i` of `plan` (any role but communication) as the CUDA backend
/// does: through cuDNN where the op has a form (`conv`, `pool`; null:
/// none), an add-bias and the activation after it as one body where both
/// are in [i, last), else runOp. Returns the last op it ran (i, or i + 1
/// when fused). The backend's launcher issues it; StepLaunches.h records it.
template <class Launcher>
size_t runPlanOp(const plan::Plan &plan, size_t i, size_t last, const OpResources &r,
                 const CudnnOpResources *conv, const CudnnPoolResources *pool, Launcher &launch) {
  const plan::Op &op = plan.ops[i];
  if (conv) {
    runCudnnOp(op, r, *conv, launch);
  } else if (pool) {
    runCudnnPoolOp(op, r, *pool, launch);
  } else if (i + 1 < last && fusesBiasAndActivation(plan, i)) {
    runBiasActivation(op, plan.ops[i + 1], r, launch);
    return i + 1;
  } else {
    runOp(op, r, launch);
  }
  return i;
}

} // namespace netc::runtime::cuda
