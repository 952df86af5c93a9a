// CudnnConvolution.h -- how a Plan convolution is described to cuDNN, as a
// pure function of its geometry (plan::ConvAttrs::dims), and a host
// evaluator that computes exactly what cuDNN computes from that
// description. cuDNN convolves NC(D)HW tensors with symmetric pads; Net#
// lays out its outputs map-major along each dimension (docs/language.md §11.5).
// The forms cuDNN can express:
//   - ordinary: dimension 0 spans all input maps (K0 = I0), or there is no
//     map dimension (one input map; every dimension spatial);
//   - grouped: dimension 0 unshared with K0 = 1 (a bank of kernels per input
//     map), whose output channels Net# numbers m · G + g where cuDNN numbers
//     them g · M + m;
//   - maps in batch: dimension 0 shared with K0 = 1, the input maps folded
//     into the batch;
// in two or three spatial dimensions (one is padded to two), with MapCount
// on dimension 0 only, a first window that starts at -pad (padding) or
// inside the source (uncovered low-end nodes: a view that starts later),
// and cuDNN's output count equal to Net#'s on every dimension (so a pad
// that is larger at the high end is refused). Everything else -- locally
// connected kernels, asymmetric pads, MapCount on other dimensions -- runs
// through the table kernels (TableBodies.h). A description is accepted only
// if the gather and scatter tables it implies equal the Plan's, so it can
// never disagree with the reference. The channel permutation and the weight
// rows are tables the permutation body (ElementBodies.h) reads; the call
// numbers (CudnnShapes) and cuDNN's semantics on the host (cudnnCallOnHost)
// let CI run the backend's whole cuDNN path (CudnnRunner.h) without a GPU.
#pragma once

#include "codegen/Plan.h"
#include "support/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netc::runtime::cuda {

/// A convolution as cuDNN sees it. Input: `fold` items per sample (maps in
/// batch: each input map is an item of the batch), each with `inChannels`
/// channels of spatial extents `inExtent`, read through a view of the Net#
/// buffer (element strides `itemStride`, `channelStride`, `spatialStride`,
/// first element `viewOffset`). Filter: [outChannels][inChannels / groups]
/// [kernel...], packed. Output: packed [batch · fold][outChannels][outExtent...]
/// (cuDNN's order), which `netChannel` maps to Net#'s.
struct CudnnConvolution {
  int64_t fold = 1;
  int64_t inChannels = 1, outChannels = 1, groups = 1;
  std::vector<int64_t> inExtent, kernel, stride, pad, outExtent; // per spatial dimension (2 or 3)
  int64_t itemStride = 0, channelStride = 0, viewOffset = 0;
  std::vector<int64_t> spatialStride;
  int64_t inputs = 0, outputs = 0; // Net# nodes per sample
  int64_t positions = 1;           // Π outExtent
  /// Net# output channel of cuDNN output (item f of a sample, channel c):
  /// netChannel[f · outChannels + c]; the Net# node is netChannel · positions + p.
  std::vector<int32_t> netChannel;
  /// The Net# weight row (and kernel-bias element) of cuDNN filter channel c.
  std::vector<int32_t> weightRow;
  int64_t window = 1; // weights per row: (inChannels / groups) · Π kernel
  /// Whether cuDNN's output order is Net#'s (no permutation, one item).
  bool identityLayout() const;
};

/// The cuDNN form of convolution `attrs` with its Plan tables, or why it
/// has none (`reason`): the form is unsupported, or the implied tables
/// differ from `gather` / `scatter`.
std::optional<CudnnConvolution> describeForCudnn(const plan::ConvAttrs &attrs,
                                                 const std::vector<int32_t> &gather,
                                                 const std::vector<int32_t> &scatter,
                                                 std::string *reason = nullptr);

/// The numbers a cuDNN convolution call takes for `batch` samples of `c`:
/// NC + 2 or 3 spatial dimensions, element strides, the filter, pads,
/// strides and groups. Maps in batch (fold > 1) become a third spatial
/// dimension of extent `fold` with a kernel of 1, so cuDNN's packed NCDHW
/// output is Net#'s channel order (channel m · fold + f) and needs no
/// permutation; with three spatial dimensions already that is refused.
struct CudnnShapes {
  int rank = 4; // tensor rank: 4 or 5
  std::array<int, 5> xDims{}, xStrides{}, wDims{}, yDims{}, yStrides{};
  std::array<int, 3> pad{}, stride{}, dilation{}; // rank − 2 used
  int groups = 1;
  int64_t xOffset = 0;        // a sample's first input element (the view's start)
  bool outputInPlace = true;  // cuDNN's output order is Net#'s: no output permutation
  bool weightsInPlace = true; // the Plan's weight rows are cuDNN's filter rows
  bool coversInput = true;    // the view reads every input node (else backward data clears the rest)
  int64_t channels = 1;       // output channels (rows of the permutation and of the bias)
  int64_t channelLength = 1;  // floats per output channel per sample (bias added to each)
  int64_t filterFloats = 0;   // channels × weights per row
};

/// `c`'s call numbers for `batch` samples; an error when a size exceeds
/// cuDNN's int dimensions or the form cannot be described.
Expected<CudnnShapes> cudnnShapes(const CudnnConvolution &c, int64_t batch);

/// The shapes as text, one line (the algorithm cache's key; golden in tests).
std::string shapeKey(const CudnnShapes &s);

/// Which cuDNN convolution routine a call is.
enum class CudnnPass { Forward, BackwardData, BackwardFilter };
const char *passName(CudnnPass pass);

/// One cuDNN convolution call, as the device runs it: out = conv + beta · out
/// for the forward pass (reads x, w), the data gradient (reads w, dy; out at
/// the input view) or the filter gradient (reads x, dy). `slot` names the
/// op's prepared descriptors and algorithm on the device.
struct CudnnCall {
  CudnnPass pass = CudnnPass::Forward;
  const CudnnShapes *shapes = nullptr;
  const float *x = nullptr, *w = nullptr, *dy = nullptr;
  float *out = nullptr;
  float beta = 0.0f;
  int slot = -1;
};

/// What cudnnConvolution{Forward,BackwardData,BackwardFilter} computes for
/// `call`, on the host, straight from its shapes and strides (in double,
/// rounded once): how CI checks the call numbers without a GPU.
void cudnnCallOnHost(const CudnnCall &call);

} // namespace netc::runtime::cuda
