// CudnnConvolution.cpp -- the cuDNN form of a Plan convolution, checked
// against the Plan's tables, the numbers of its cuDNN calls, and a host
// evaluator of what cuDNN computes from them (CudnnConvolution.h).
#include "runtime/cuda/CudnnConvolution.h"

#include "support/MultiIndex.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
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
  std::vector<int64_t> q, cell;
  q.resize(c.outExtent.size());
  cell.resize(c.kernel.size());
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

Expected<CudnnShapes> cudnnShapes(const CudnnConvolution &c, int64_t batch) {
  const size_t spatial = c.inExtent.size() + (c.fold > 1 ? 1 : 0);
  if (spatial > 3)
    return fail("maps in the batch with three spatial dimensions have no cuDNN form");
  CudnnShapes s;
  s.rank = static_cast<int>(spatial) + 2;
  std::vector<int64_t> xDims{batch, c.fold > 1 ? 1 : c.inChannels}, xStrides{c.inputs, c.channelStride},
      wDims{c.outChannels, c.inChannels / c.groups}, yDims{batch, c.outChannels};
  std::vector<int64_t> pad, stride;
  if (c.fold > 1) { // the items of a sample as a leading spatial dimension, kernel 1
    xStrides[1] = c.fold * c.itemStride;
    xDims.push_back(c.fold);
    xStrides.push_back(c.itemStride);
    wDims.push_back(1);
    yDims.push_back(c.fold);
    pad.push_back(0);
    stride.push_back(1);
  }
  for (size_t d = 0; d < c.inExtent.size(); ++d) {
    xDims.push_back(c.inExtent[d]);
    xStrides.push_back(c.spatialStride[d]);
    wDims.push_back(c.kernel[d]);
    yDims.push_back(c.outExtent[d]);
    pad.push_back(c.pad[d]);
    stride.push_back(c.stride[d]);
  }
  // cuDNN's output, packed.
  std::vector<int64_t> yStrides(yDims.size(), 1);
  for (size_t d = yDims.size() - 1; d-- > 0;)
    yStrides[d] = yStrides[d + 1] * yDims[d + 1];
  auto narrow = [&](const std::vector<int64_t> &from, auto &to, const char *what) -> Status {
    for (size_t d = 0; d < from.size(); ++d) {
      if (from[d] < 0 || from[d] > INT_MAX)
        return fail(fmt::format("the convolution's {} ({}) exceeds cuDNN's int sizes; use a smaller --batch",
                                what, from[d]));
      to[d] = static_cast<int>(from[d]);
    }
    return Status::success();
  };
  for (Status st : {narrow(xDims, s.xDims, "input dimensions"), narrow(xStrides, s.xStrides, "input strides"),
                    narrow(wDims, s.wDims, "filter dimensions"), narrow(yDims, s.yDims, "output dimensions"),
                    narrow(yStrides, s.yStrides, "output strides"), narrow(pad, s.pad, "pads"),
                    narrow(stride, s.stride, "strides")})
    if (!st)
      return fail(st.message());
  if (batch * c.inputs > INT_MAX || batch * c.outputs > INT_MAX)
    return fail(
        fmt::format("a batch of {} exceeds cuDNN's 2^31 elements per tensor; use a smaller --batch", batch));
  for (size_t d = 0; d < spatial; ++d)
    s.dilation[d] = 1;
  s.groups = static_cast<int>(c.groups);
  s.xOffset = c.viewOffset;
  s.weightsInPlace = true;
  for (size_t r = 0; r < c.weightRow.size(); ++r)
    s.weightsInPlace = s.weightsInPlace && c.weightRow[r] == static_cast<int32_t>(r);
  s.outputInPlace = c.fold > 1 || c.identityLayout();
  s.coversInput =
      c.viewOffset == 0 && product(std::vector<int64_t>(xDims.begin() + 1, xDims.end())) == c.inputs;
  s.channels = c.outChannels;
  s.channelLength = c.fold * c.positions;
  s.filterFloats = c.outChannels * c.window;
  return s;
}

std::string shapeKey(const CudnnShapes &s) {
  auto list = [&](const auto &v, int n) {
    std::string out;
    for (int d = 0; d < n; ++d)
      out += fmt::format("{}{}", d ? "," : "", v[static_cast<size_t>(d)]);
    return out;
  };
  return fmt::format("x={}/{} w={} y={}/{} pad={} stride={} groups={}", list(s.xDims, s.rank),
                     list(s.xStrides, s.rank), list(s.wDims, s.rank), list(s.yDims, s.rank),
                     list(s.yStrides, s.rank), list(s.pad, s.rank - 2), list(s.stride, s.rank - 2), s.groups);
}

const char *passName(CudnnPass pass) {
  switch (pass) {
  case CudnnPass::Forward: return "forward";
  case CudnnPass::BackwardData: return "backward-data";
  case CudnnPass::BackwardFilter: return "backward-filter";
  }
  return "?";
}

void cudnnCallOnHost(const CudnnCall &call) {
  const CudnnShapes &s = *call.shapes;
  const int spatial = s.rank - 2;
  const int64_t batch = s.xDims[0], outChannels = s.wDims[0], perGroup = s.wDims[1];
  const int64_t outPerGroup = outChannels / s.groups;
  std::vector<int64_t> outExtent, kernel, inExtent;
  for (int d = 0; d < spatial; ++d) {
    outExtent.push_back(s.yDims[static_cast<size_t>(d + 2)]);
    kernel.push_back(s.wDims[static_cast<size_t>(d + 2)]);
    inExtent.push_back(s.xDims[static_cast<size_t>(d + 2)]);
  }
  const int64_t cells = product(kernel);
  // Every term: (x element, w element, y element), in cuDNN's indexing.
  auto forEach = [&](auto body) {
    std::vector<int64_t> q(static_cast<size_t>(spatial)), cell(static_cast<size_t>(spatial));
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t k = 0; k < outChannels; ++k) {
        const int64_t group = k / outPerGroup;
        std::fill(q.begin(), q.end(), 0);
        do {
          int64_t y = n * s.yStrides[0] + k * s.yStrides[1];
          for (int d = 0; d < spatial; ++d)
            y += q[static_cast<size_t>(d)] * s.yStrides[static_cast<size_t>(d + 2)];
          for (int64_t ci = 0; ci < perGroup; ++ci) {
            std::fill(cell.begin(), cell.end(), 0);
            int64_t flat = 0;
            do {
              int64_t x = n * s.xStrides[0] + (group * perGroup + ci) * s.xStrides[1];
              bool inside = true;
              for (int d = 0; d < spatial; ++d) {
                const size_t u = static_cast<size_t>(d);
                const int64_t at = q[u] * s.stride[u] - s.pad[u] + cell[u];
                inside = inside && at >= 0 && at < inExtent[u];
                x += at * s.xStrides[u + 2];
              }
              if (inside)
                body(x, (k * perGroup + ci) * cells + flat, y);
              ++flat;
            } while (advanceRowMajor(cell, kernel));
          }
        } while (advanceRowMajor(q, outExtent));
      }
  };
  std::map<int64_t, double> sums; // by output element: every element the call writes
  auto store = [&](float &dst, double sum) { dst = static_cast<float>(sum + double(call.beta) * dst); };
  switch (call.pass) {
  case CudnnPass::Forward:
    forEach([&](int64_t x, int64_t w, int64_t y) { sums[y] += double(call.x[x]) * call.w[w]; });
    // Outputs with no term (all padding) are written too.
    forEachStridedElement(s.yDims, s.yStrides, s.rank, [&](int64_t y) { sums.try_emplace(y, 0.0); });
    break;
  case CudnnPass::BackwardData:
    forEach([&](int64_t x, int64_t w, int64_t y) { sums[x] += double(call.dy[y]) * call.w[w]; });
    forEachStridedElement(s.xDims, s.xStrides, s.rank, [&](int64_t x) { sums.try_emplace(x, 0.0); });
    break;
  case CudnnPass::BackwardFilter:
    forEach([&](int64_t x, int64_t w, int64_t y) { sums[w] += double(call.x[x]) * call.dy[y]; });
    for (int64_t w = 0; w < outChannels * perGroup * cells; ++w)
      sums.try_emplace(w, 0.0);
    break;
  }
  for (const auto &[at, sum] : sums)
    store(call.out[at], sum);
}

} // namespace netc::runtime::cuda
