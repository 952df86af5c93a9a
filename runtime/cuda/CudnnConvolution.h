// CudnnConvolution.h -- how a Plan convolution is described to cuDNN, as a
// pure function of its geometry (plan::ConvAttrs::dims), and a host
// evaluator that computes exactly what cuDNN computes from that
// description. cuDNN convolves NC(D)HW tensors with symmetric pads; Net#
// lays out its outputs map-major along each dimension (NETSHARP §13 D9).
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
// rows are tables the permute bodies and the host evaluator share.
#pragma once

#include "codegen/Plan.h"

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

/// cuDNN's forward pass on the host, then the permutation into Net#'s order:
/// y (+)= conv(x, w) + bias for `batch` samples (Net# layout, sample-major,
/// weights and biases as the Plan keeps them). In double, rounded once.
void convolveOnHost(const CudnnConvolution &c, int64_t batch, const float *x, const float *weights,
                    const float *bias, float *y, bool accumulate);
/// cuDNN's backward-data pass on the host: dx (+)= convᵀ(dy, w).
void convolveDataGradOnHost(const CudnnConvolution &c, int64_t batch, const float *dy, const float *weights,
                            float *dx, bool accumulate);
/// cuDNN's backward-filter pass on the host: dW (+)= Σ dy ⊗ x, in the Plan's weight rows.
void convolveFilterGradOnHost(const CudnnConvolution &c, int64_t batch, const float *dy, const float *x,
                              float *dWeights, bool accumulate);

} // namespace netc::runtime::cuda
