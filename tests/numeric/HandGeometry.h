// HandGeometry.h -- the convolution, pooling and normalization geometry of
// docs/language.md §11-§13 written out directly from the text, with no
// code shared with the compiler: per dimension N and the first window's
// offset, the source node of each window cell (-1: a dummy), the grouped
// gather/scatter tables of a convolution (kernel (m, u) at weights row
// m·groups + u, D4), and the window and central-cell tables of pool/norm.
// The index-table and op-semantics tests compare the Plan against these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netc::numeric {

using std::size_t;

/// One dimension as the user wrote it.
struct Dim {
  int64_t input, kernel, stride = 1;
  bool padding = false;
  int64_t lower = 0, upper = 0;
  bool sharing = true;
  int64_t maps = 1;
};

/// N and the source coordinate of kernel 0's cell 0, from docs/language.md §11.2-§11.3.
struct DimCount {
  int64_t count, offset;
};
inline DimCount countOf(const Dim &d) {
  if (d.padding)
    return {(d.input - 1) / d.stride + 1, -((d.kernel - 1) / 2)};
  if (d.lower || d.upper)
    return {(d.input + d.lower + d.upper - d.kernel) / d.stride + 1, -d.lower};
  return {(d.input - d.kernel) / d.stride + 1, ((d.input - d.kernel) % d.stride) / 2};
}

/// Row-major index of `index` over `extent`.
inline int64_t flatten(const std::vector<int64_t> &index, const std::vector<int64_t> &extent) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d)
    flat = flat * extent[d] + index[d];
  return flat;
}
/// The row-major multi-index of `flat` over `extent`.
inline std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &extent) {
  std::vector<int64_t> index(extent.size());
  for (size_t d = extent.size(); d-- > 0;) {
    index[d] = flat % extent[d];
    flat /= extent[d];
  }
  return index;
}

/// The source node of cell `cell` of the window at position `j` (-1: dummy).
inline int32_t sourceOf(const std::vector<Dim> &dims, const std::vector<int64_t> &j,
                        const std::vector<int64_t> &cell) {
  std::vector<int64_t> coordinate(dims.size()), extent(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    coordinate[d] = countOf(dims[d]).offset + j[d] * dims[d].stride + cell[d];
    extent[d] = dims[d].input;
    if (coordinate[d] < 0 || coordinate[d] >= dims[d].input)
      return -1;
  }
  return static_cast<int32_t>(flatten(coordinate, extent));
}

struct ExpectedConvolution {
  int64_t groups = 1, positions = 1, maps = 1, window = 1;
  std::vector<int32_t> gather, scatter;
};

/// The convolution tables from the formulas: gather[u][p][k], scatter[m][u][p].
inline ExpectedConvolution expectedConvolution(const std::vector<Dim> &dims) {
  ExpectedConvolution e;
  std::vector<int64_t> counts, kernel, mapExtent, outExtent, sharedExtent, unsharedExtent;
  for (const Dim &d : dims) {
    const int64_t n = countOf(d).count;
    counts.push_back(n);
    kernel.push_back(d.kernel);
    mapExtent.push_back(d.maps);
    outExtent.push_back(d.maps * n);
    (d.sharing ? sharedExtent : unsharedExtent).push_back(n);
    (d.sharing ? e.positions : e.groups) *= n;
    e.maps *= d.maps;
    e.window *= d.kernel;
  }
  e.gather.assign(static_cast<size_t>(e.groups * e.positions * e.window), -2);
  e.scatter.assign(static_cast<size_t>(e.maps * e.groups * e.positions), -2);
  int64_t positionsTotal = 1;
  for (int64_t n : counts)
    positionsTotal *= n;
  for (int64_t flatJ = 0; flatJ < positionsTotal; ++flatJ) {
    const std::vector<int64_t> j = unflatten(flatJ, counts);
    std::vector<int64_t> shared, unshared;
    for (size_t d = 0; d < dims.size(); ++d)
      (dims[d].sharing ? shared : unshared).push_back(j[d]);
    const int64_t u = flatten(unshared, unsharedExtent), p = flatten(shared, sharedExtent);
    for (int64_t k = 0; k < e.window; ++k)
      e.gather[static_cast<size_t>((u * e.positions + p) * e.window + k)] =
          sourceOf(dims, j, unflatten(k, kernel));
    for (int64_t m = 0; m < e.maps; ++m) {
      const std::vector<int64_t> mIndex = unflatten(m, mapExtent);
      std::vector<int64_t> out(dims.size());
      for (size_t d = 0; d < dims.size(); ++d)
        out[d] = mIndex[d] * counts[d] + j[d];
      e.scatter[static_cast<size_t>((m * e.groups + u) * e.positions + p)] =
          static_cast<int32_t>(flatten(out, outExtent));
    }
  }
  return e;
}

/// Pool/norm tables from the formulas: window[o][k] and the centre cell (K−1)/2.
struct ExpectedWindow {
  std::vector<int32_t> window, centre;
};
inline ExpectedWindow expectedWindow(const std::vector<Dim> &dims) {
  ExpectedWindow e;
  std::vector<int64_t> counts, kernel, centreCell;
  int64_t outputs = 1, size = 1;
  for (const Dim &d : dims) {
    counts.push_back(countOf(d).count);
    kernel.push_back(d.kernel);
    centreCell.push_back((d.kernel - 1) / 2);
    outputs *= counts.back();
    size *= d.kernel;
  }
  for (int64_t o = 0; o < outputs; ++o) {
    const std::vector<int64_t> j = unflatten(o, counts);
    for (int64_t k = 0; k < size; ++k)
      e.window.push_back(sourceOf(dims, j, unflatten(k, kernel)));
    e.centre.push_back(sourceOf(dims, j, centreCell));
  }
  return e;
}

} // namespace netc::numeric
