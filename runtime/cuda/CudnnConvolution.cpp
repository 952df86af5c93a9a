// CudnnConvolution.cpp -- the cuDNN form of a Plan convolution, checked
// against the Plan's tables, and host evaluators of what cuDNN computes
// from it (CudnnConvolution.h).
#include "runtime/cuda/CudnnConvolution.h"

#include "support/MultiIndex.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace netc::runtime::cuda {

bool CudnnConvolution::identityLayout() const {
  if (fold != 1)
    return false;
  for (size_t c = 0; c < netChannel.size(); ++c)
    if (netChannel[c] != static_cast<int32_t>(c))
      return false;
  return true;
}

namespace {

int64_t product(const std::vector<int64_t> &v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, [](int64_t a, int64_t b) { return a * b; });
}

/// The Net# input node that cuDNN reads for item `item`, input channel
/// `channel`, output position `q` and filter cell `cell`, or -1 for padding.
int64_t sourceNode(const CudnnConvolution &c, int64_t item, int64_t channel, const std::vector<int64_t> &q,
                   const std::vector<int64_t> &cell) {
  int64_t node = c.viewOffset + item * c.itemStride + channel * c.channelStride;
  for (size_t d = 0; d < q.size(); ++d) {
    const int64_t coordinate = q[d] * c.stride[d] - c.pad[d] + cell[d];
    if (coordinate < 0 || coordinate >= c.inExtent[d])
      return -1;
    node += coordinate * c.spatialStride[d];
  }
  return node;
}

/// Calls body(item, outChannel, position q (index and flat), inChannel within
/// the group, filter cell (index and flat k within the row), source node) for
/// every term cuDNN sums, sample by sample.
template <class Body> void forEachTerm(const CudnnConvolution &c, Body body) {
  const int64_t perGroupIn = c.inChannels / c.groups, perGroupOut = c.outChannels / c.groups;
  const int64_t cells = product(c.kernel);
  std::vector<int64_t> q(c.outExtent.size(), 0), cell(c.kernel.size(), 0);
  for (int64_t f = 0; f < c.fold; ++f)
    for (int64_t oc = 0; oc < c.outChannels; ++oc) {
      const int64_t group = oc / perGroupOut;
      std::fill(q.begin(), q.end(), 0);
      int64_t qFlat = 0;
      do {
        for (int64_t ci = 0; ci < perGroupIn; ++ci) {
          std::fill(cell.begin(), cell.end(), 0);
          int64_t kcell = 0;
          do {
            const int64_t source = sourceNode(c, f, group * perGroupIn + ci, q, cell);
            body(f, oc, qFlat, ci * cells + kcell, source);
            ++kcell;
          } while (advanceRowMajor(cell, c.kernel));
        }
        ++qFlat;
      } while (advanceRowMajor(q, c.outExtent));
    }
}

/// Where cuDNN's output (sample b, item f, channel oc, position q) is in Net#'s layout.
int64_t outputNode(const CudnnConvolution &c, int64_t b, int64_t f, int64_t oc, int64_t q) {
  return b * c.outputs + int64_t(c.netChannel[static_cast<size_t>(f * c.outChannels + oc)]) * c.positions + q;
}

} // namespace

std::optional<CudnnConvolution> describeForCudnn(const plan::ConvAttrs &a, const std::vector<int32_t> &gather,
                                                 const std::vector<int32_t> &scatter, std::string *reason) {
  auto refuse = [&](std::string why) -> std::optional<CudnnConvolution> {
    if (reason)
      *reason = std::move(why);
    return std::nullopt;
  };
  const std::vector<plan::WindowDim> &dims = a.dims;
  if (dims.empty())
    return refuse("the plan has no geometry for it");
  for (size_t d = 1; d < dims.size(); ++d) {
    if (dims[d].maps != 1)
      return refuse(fmt::format("MapCount on dimension {} (cuDNN's output channels are one dimension)", d));
    if (!dims[d].shared)
      return refuse(fmt::format("dimension {} is unshared (a locally connected kernel)", d));
  }
  const plan::WindowDim &d0 = dims[0];
  const int64_t maps = d0.maps;
  CudnnConvolution c;
  size_t firstSpatial = 1;
  enum class Form { Channels, Grouped, Folded, Spatial } form;
  const bool mapDimension = d0.offset == 0 && d0.padLow == 0 && d0.padHigh == 0;
  if (mapDimension && d0.shared && d0.kernel == d0.input && d0.count == 1) {
    form = Form::Channels; // the kernel spans every input map
    c.inChannels = d0.input;
    c.outChannels = maps;
  } else if (mapDimension && !d0.shared && d0.kernel == 1 && d0.stride == 1 && d0.count == d0.input) {
    form = Form::Grouped; // a bank of `maps` kernels per input map
    c.inChannels = d0.input;
    c.groups = d0.input;
    c.outChannels = d0.input * maps;
  } else if (mapDimension && d0.shared && d0.kernel == 1 && d0.stride == 1 && d0.count == d0.input &&
             d0.input > 1) {
    form = Form::Folded; // every input map through the same kernels: maps in the batch
    c.fold = d0.input;
    c.outChannels = maps;
  } else if (d0.shared) {
    form = Form::Spatial; // one input map; every dimension spatial
    firstSpatial = 0;
    c.outChannels = maps;
  } else {
    return refuse(
        "dimension 0 is unshared but not one kernel bank per input map (a locally connected kernel)");
  }
  if (dims.size() - firstSpatial > 3)
    return refuse("more than three spatial dimensions");

  // Row-major strides of the Net# input over every dimension.
  std::vector<int64_t> inputStride(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    inputStride[d - 1] = inputStride[d] * dims[d].input;
  c.inputs = a.inputs;
  c.outputs = a.outputs;
  c.channelStride = firstSpatial == 1 ? inputStride[0] : a.inputs;
  c.itemStride = form == Form::Folded ? inputStride[0] : a.inputs;
  for (size_t d = firstSpatial; d < dims.size(); ++d) {
    const plan::WindowDim &w = dims[d];
    // Net# reads source offset + j·S + k; cuDNN reads (view start) + j·S − pad + k.
    const int64_t start = std::max<int64_t>(w.offset, 0), pad = std::max<int64_t>(-w.offset, 0);
    const int64_t extent = w.input - start;
    if (extent + 2 * pad < w.kernel || (extent + 2 * pad - w.kernel) / w.stride + 1 != w.count)
      return refuse(fmt::format(
          "dimension {}: cuDNN's symmetric pad of {} gives {} windows, Net# has {} "
          "(asymmetric padding)",
          d, pad, extent + 2 * pad < w.kernel ? 0 : (extent + 2 * pad - w.kernel) / w.stride + 1, w.count));
    c.inExtent.push_back(extent);
    c.kernel.push_back(w.kernel);
    c.stride.push_back(w.stride);
    c.pad.push_back(pad);
    c.outExtent.push_back(w.count);
    c.spatialStride.push_back(inputStride[d]);
    c.viewOffset += start * inputStride[d];
  }
  while (c.inExtent.size() < 2) { // cuDNN convolves at least two spatial dimensions
    c.inExtent.push_back(1);
    c.kernel.push_back(1);
    c.stride.push_back(1);
    c.pad.push_back(0);
    c.outExtent.push_back(1);
    c.spatialStride.push_back(1);
  }
  c.positions = product(c.outExtent);
  c.window = c.inChannels / c.groups * product(c.kernel);
  if (c.window != a.window || c.outChannels * c.fold * c.positions != a.outputs)
    return refuse(fmt::format("its sizes ({} weights per kernel, {} outputs) are not the plan's ({}, {})",
                              c.window, c.outChannels * c.fold * c.positions, a.window, a.outputs));
  c.netChannel.resize(static_cast<size_t>(c.fold * c.outChannels));
  c.weightRow.resize(static_cast<size_t>(c.outChannels));
  for (int64_t f = 0; f < c.fold; ++f)
    for (int64_t oc = 0; oc < c.outChannels; ++oc) {
      int64_t net = oc, row = oc;
      if (form == Form::Grouped) { // cuDNN channel g·M + m is Net#'s kernel and channel m·G + g
        const int64_t g = oc / maps, m = oc % maps;
        net = row = m * c.groups + g;
      } else if (form == Form::Folded) { // item f, map m: Net# channel m·I0 + f
        net = oc * c.fold + f;
      }
      c.netChannel[static_cast<size_t>(f * c.outChannels + oc)] = static_cast<int32_t>(net);
      c.weightRow[static_cast<size_t>(oc)] = static_cast<int32_t>(row);
    }

  // The tables this description implies must be the Plan's.
  if (a.groups * a.positions * a.window != static_cast<int64_t>(gather.size()) ||
      a.maps * a.groups * a.positions != static_cast<int64_t>(scatter.size()))
    return refuse("its tables do not have the plan's sizes");
  bool same = true;
  forEachTerm(c, [&](int64_t f, int64_t oc, int64_t q, int64_t k, int64_t source) {
    if (!same)
      return;
    const int64_t row = c.weightRow[static_cast<size_t>(oc)], u = row % a.groups;
    const int64_t netPosition = f * c.positions + q;
    if (netPosition >= a.positions ||
        (u * a.positions + netPosition) * a.window + k >= int64_t(gather.size())) {
      same = false;
      return;
    }
    const int64_t out = outputNode(c, 0, f, oc, q);
    same = gather[static_cast<size_t>((u * a.positions + netPosition) * a.window + k)] == source &&
           scatter[static_cast<size_t>(row * a.positions + netPosition)] == out;
  });
  if (!same)
    return refuse("the tables it implies differ from the plan's");
  return c;
}

void convolveOnHost(const CudnnConvolution &c, int64_t batch, const float *x, const float *weights,
                    const float *bias, float *y, bool accumulate) {
  // cuDNN's output, packed [batch · fold][outChannels][positions], then Net#'s order with the biases.
  std::vector<double> out(static_cast<size_t>(batch * c.fold * c.outChannels * c.positions), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    forEachTerm(c, [&](int64_t f, int64_t oc, int64_t q, int64_t k, int64_t source) {
      if (source >= 0)
        out[static_cast<size_t>(((b * c.fold + f) * c.outChannels + oc) * c.positions + q)] +=
            double(weights[c.weightRow[static_cast<size_t>(oc)] * c.window + k]) * x[b * c.inputs + source];
    });
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < c.fold; ++f)
      for (int64_t oc = 0; oc < c.outChannels; ++oc)
        for (int64_t q = 0; q < c.positions; ++q) {
          const double v =
              out[static_cast<size_t>(((b * c.fold + f) * c.outChannels + oc) * c.positions + q)] +
              bias[c.weightRow[static_cast<size_t>(oc)]];
          float &dst = y[outputNode(c, b, f, oc, q)];
          dst = static_cast<float>(accumulate ? dst + v : v);
        }
}

void convolveDataGradOnHost(const CudnnConvolution &c, int64_t batch, const float *dy, const float *weights,
                            float *dx, bool accumulate) {
  std::vector<double> sum(static_cast<size_t>(batch * c.inputs), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    forEachTerm(c, [&](int64_t f, int64_t oc, int64_t q, int64_t k, int64_t source) {
      if (source < 0)
        return;
      const double g = dy[outputNode(c, b, f, oc, q)];
      sum[static_cast<size_t>(b * c.inputs + source)] +=
          g * weights[c.weightRow[static_cast<size_t>(oc)] * c.window + k];
    });
  for (size_t i = 0; i < sum.size(); ++i)
    dx[i] = static_cast<float>(accumulate ? dx[i] + sum[i] : sum[i]);
}

void convolveFilterGradOnHost(const CudnnConvolution &c, int64_t batch, const float *dy, const float *x,
                              float *dWeights, bool accumulate) {
  std::vector<double> sum(static_cast<size_t>(c.outChannels * c.window), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    forEachTerm(c, [&](int64_t f, int64_t oc, int64_t q, int64_t k, int64_t source) {
      if (source < 0)
        return;
      const double g = dy[outputNode(c, b, f, oc, q)];
      sum[static_cast<size_t>(c.weightRow[static_cast<size_t>(oc)] * c.window + k)] +=
          g * x[b * c.inputs + source];
    });
  for (int64_t r = 0; r < c.outChannels; ++r)
    for (int64_t k = 0; k < c.window; ++k) {
      float &dst = dWeights[r * c.window + k];
      const double v = sum[static_cast<size_t>(r * c.window + k)];
      dst = static_cast<float>(accumulate ? dst + v : v);
    }
}

} // namespace netc::runtime::cuda
