// CudnnPooling.cpp -- the cuDNN form of a Plan pooling op, checked against
// the Plan's window table, and a host evaluator of cuDNN's pooling calls
// (CudnnPooling.h).
#include "runtime/cuda/CudnnPooling.h"

#include "support/MultiIndex.h"

#include <fmt/format.h>

#include <climits>
#include <map>

namespace netc::runtime::cuda {

namespace {

/// Calls body(y element, x element, cell index in the window) for every cell
/// of every window of `s`, window by window, cells in row-major order.
template <class Body> void forEachCell(const CudnnPoolShapes &s, Body body) {
  const size_t spatial = static_cast<size_t>(s.rank - 2);
  std::vector<int64_t> counts(spatial), kernel(spatial), q(spatial), cell(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    counts[d] = s.yDims[d + 2];
    kernel[d] = s.window[d];
  }
  for (int64_t n = 0; n < s.xDims[0]; ++n) {
    std::fill(q.begin(), q.end(), 0);
    do {
      int64_t y = n * s.yStrides[0];
      for (size_t d = 0; d < spatial; ++d)
        y += q[d] * s.yStrides[d + 2];
      std::fill(cell.begin(), cell.end(), 0);
      int64_t k = 0;
      do {
        int64_t x = n * s.xStrides[0];
        for (size_t d = 0; d < spatial; ++d)
          x += (q[d] * s.stride[d] - s.pad[d] + cell[d]) * s.xStrides[d + 2];
        body(y, x, k++);
      } while (advanceRowMajor(cell, kernel));
    } while (advanceRowMajor(q, counts));
  }
}

} // namespace

std::optional<CudnnPoolShapes> describePoolingForCudnn(const plan::WindowAttrs &a,
                                                       const std::vector<int32_t> &window, bool max,
                                                       int64_t batch, std::string *reason) {
  auto refuse = [&](std::string why) -> std::optional<CudnnPoolShapes> {
    if (reason)
      *reason = std::move(why);
    return std::nullopt;
  };
  const std::vector<plan::WindowDim> &dims = a.dims;
  if (dims.empty() || dims.size() > 3)
    return refuse(dims.empty() ? "the plan has no geometry for it" : "more than three dimensions");
  if (batch < 1 || batch * a.inputs > INT_MAX || batch * a.outputs > INT_MAX)
    return refuse("a batch beyond cuDNN's int sizes");
  CudnnPoolShapes s;
  s.max = max;
  s.inputs = a.inputs;
  s.outputs = a.outputs;
  std::vector<int64_t> inputStride(dims.size(), 1), outputStride(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) {
    inputStride[d - 1] = inputStride[d] * dims[d].input;
    outputStride[d - 1] = outputStride[d] * dims[d].count;
  }
  int64_t viewNodes = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const plan::WindowDim &w = dims[d];
    if (w.offset < 0 || w.padLow != 0 || w.padHigh != 0)
      return refuse(fmt::format("dimension {} is padded (its windows hold dummy cells)", d));
    const int64_t extent = w.input - w.offset;
    if (extent < w.kernel || (extent - w.kernel) / w.stride + 1 != w.count)
      return refuse(fmt::format("dimension {}: cuDNN's window count differs from Net#'s {}", d, w.count));
    s.xDims[d + 2] = static_cast<int>(extent);
    s.xStrides[d + 2] = static_cast<int>(inputStride[d]);
    s.yDims[d + 2] = static_cast<int>(w.count);
    s.yStrides[d + 2] = static_cast<int>(outputStride[d]);
    s.window[d] = static_cast<int>(w.kernel);
    s.stride[d] = static_cast<int>(w.stride);
    s.xOffset += w.offset * inputStride[d];
    viewNodes *= extent;
  }
  s.rank = static_cast<int>(std::max<size_t>(dims.size(), 2)) + 2;
  for (size_t d = dims.size(); d < 2; ++d) { // cuDNN pools at least two dimensions
    s.xDims[d + 2] = s.yDims[d + 2] = s.window[d] = s.stride[d] = 1;
    s.xStrides[d + 2] = s.yStrides[d + 2] = 1;
  }
  s.xDims[0] = s.yDims[0] = static_cast<int>(batch);
  s.xDims[1] = s.yDims[1] = 1;
  s.xStrides[0] = s.xStrides[1] = static_cast<int>(a.inputs);
  s.yStrides[0] = s.yStrides[1] = static_cast<int>(a.outputs);
  s.coversInput = s.xOffset == 0 && viewNodes == a.inputs;
  // The window table it implies must be the Plan's.
  if (static_cast<int64_t>(window.size()) != a.outputs * a.window)
    return refuse("its window table does not have the plan's size");
  CudnnPoolShapes one = s;
  one.xDims[0] = one.yDims[0] = 1;
  bool same = true;
  forEachCell(one, [&](int64_t y, int64_t x, int64_t k) {
    same = same && k < a.window && window[static_cast<size_t>(y * a.window + k)] == s.xOffset + x;
  });
  if (!same)
    return refuse("the window table it implies differs from the plan's");
  return s;
}

std::string poolShapeKey(const CudnnPoolShapes &s) {
  auto list = [](const auto &v, int n) {
    std::string out;
    for (int d = 0; d < n; ++d)
      out += fmt::format("{}{}", d ? "," : "", v[static_cast<size_t>(d)]);
    return out;
  };
  return fmt::format("{} x={}/{} y={}/{} window={} stride={}", s.max ? "max" : "mean", list(s.xDims, s.rank),
                     list(s.xStrides, s.rank), list(s.yDims, s.rank), list(s.yStrides, s.rank),
                     list(s.window, s.rank - 2), list(s.stride, s.rank - 2));
}

void cudnnPoolCallOnHost(const CudnnPoolCall &call) {
  const CudnnPoolShapes &s = *call.shapes;
  int64_t cells = 1;
  for (int d = 0; d < s.rank - 2; ++d)
    cells *= s.window[static_cast<size_t>(d)];
  std::map<int64_t, double> sums;
  if (!call.backward) {
    std::map<int64_t, float> best;
    forEachCell(s, [&](int64_t y, int64_t x, int64_t k) {
      const float v = call.x[x];
      if (s.max) {
        if (k == 0 || v > best[y])
          best[y] = v;
      } else {
        sums[y] += v;
      }
    });
    if (s.max)
      for (const auto &[y, v] : best)
        sums[y] = v;
    else
      for (auto &[y, v] : sums)
        v /= double(cells);
  } else {
    // Every element of the view is written, read by a window or not; each
    // window's gradient goes to its first maximal cell (max) or is shared by
    // its cells (mean).
    forEachStridedElement(s.xDims, s.xStrides, s.rank, [&](int64_t x) { sums.try_emplace(x, 0.0); });
    std::map<int64_t, std::pair<int64_t, float>> first; // window: (x, value)
    forEachCell(s, [&](int64_t y, int64_t x, int64_t k) {
      if (s.max) {
        const float v = call.x[x];
        if (k == 0 || v > first[y].second)
          first[y] = {x, v};
      } else {
        sums[x] += double(call.dy[y]) / double(cells);
      }
    });
    for (const auto &[y, at] : first)
      sums[at.first] += call.dy[y];
  }
  for (const auto &[at, sum] : sums)
    call.out[at] = static_cast<float>(sum + double(call.beta) * call.out[at]);
}

} // namespace netc::runtime::cuda
