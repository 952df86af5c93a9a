// CudnnPooling.h -- how a Plan pooling op is described to cuDNN, as a pure
// function of its geometry (plan::WindowAttrs::dims), and a host evaluator
// of what cuDNN computes from that description. cuDNN pools where its rules
// are Net#'s: every window lies inside the source (no dummy cells, so no
// padding, and a mean divides by the whole window as Net#'s does by its
// real cells), the windows start at the view's first node or later (nodes
// no window reads are outside the view), and cuDNN's window count equals
// Net#'s on every dimension. Net#'s dimensions (up to three; one or two are
// padded with extent 1) are cuDNN's spatial ones over one channel, so the
// output is packed in Net#'s order. A description is accepted only if the
// window table it implies equals the Plan's. A max-pool gradient must go to
// the first maximal cell of its window, as the reference's does: the host
// evaluator does exactly that, and the GPU tests check cuDNN's own choice
// on ties (tests/gpu/CudaBackendTest.cpp).
#pragma once

#include "codegen/Plan.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

/// The numbers of cuDNN's pooling calls for one op at one batch.
struct CudnnPoolShapes {
  int rank = 4; // tensor rank: 4 or 5 (N, C = 1, spatial...)
  std::array<int, 5> xDims{}, xStrides{}, yDims{}, yStrides{};
  std::array<int, 3> window{}, pad{}, stride{}; // rank − 2 used; pads are 0
  bool max = true;                              // max pooling (else mean)
  int64_t xOffset = 0;                          // a sample's first input element (the view's start)
  bool coversInput = true;         // the view is every input node (else the gradient clears the rest)
  int64_t inputs = 0, outputs = 0; // Net# nodes per sample
};

/// The cuDNN form of pooling op `attrs` (window table `window`) at `batch`
/// samples, or why it has none (`reason`).
std::optional<CudnnPoolShapes> describePoolingForCudnn(const plan::WindowAttrs &attrs,
                                                       const std::vector<int32_t> &window, bool max,
                                                       int64_t batch, std::string *reason = nullptr);

/// The shapes as text, one line.
std::string poolShapeKey(const CudnnPoolShapes &s);

/// One cuDNN pooling call: the forward pass (reads x) or the backward pass
/// (reads x, y -- the forward's output -- and dy; out at the input view).
/// out = result + beta · out.
struct CudnnPoolCall {
  bool backward = false;
  const CudnnPoolShapes *shapes = nullptr;
  const float *x = nullptr, *y = nullptr, *dy = nullptr;
  float *out = nullptr;
  float beta = 0.0f;
  int slot = -1;
};

/// What cudnnPoolingForward / cudnnPoolingBackward compute for `call`, on
/// the host (the max gradient to the first maximal cell, in double).
void cudnnPoolCallOnHost(const CudnnPoolCall &call);

} // namespace netc::runtime::cuda
