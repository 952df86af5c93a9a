// IndexTables.cpp -- builds the gather/scatter/window/CSR tables of lowered
// bundles from the geometry computed by the passes (docs/language.md §11.2-§11.5):
// along dimension d, kernel position j covers source coordinates
// offset + j·S + c for c < K (outside [0, I) is a dummy cell), and the
// destination coordinate of map m_d at position j_d is m_d·N[d] + j_d.
#include "codegen/IndexTables.h"

#include "support/CheckedMath.h"
#include "support/MultiIndex.h"

namespace netc::plan {

namespace {

int64_t rowMajor(const std::vector<int64_t> &index, const std::vector<int64_t> &extent) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d)
    flat = flat * extent[d] + index[d];
  return flat;
}

/// The source node of window cell `cell` at kernel position `position`, or -1.
int32_t sourceNode(const ir::Geometry &g, const std::vector<int64_t> &position,
                   const std::vector<int64_t> &cell) {
  int64_t flat = 0;
  for (size_t d = 0; d < g.dims.size(); ++d) {
    const ir::DimGeometry &dim = g.dims[d];
    int64_t coordinate = dim.offset + position[d] * dim.stride + cell[d];
    if (coordinate < 0 || coordinate >= dim.input)
      return -1;
    flat = flat * dim.input + coordinate;
  }
  return static_cast<int32_t>(flat);
}

} // namespace

ConvolutionTables convolutionTables(const ir::Bundle &bundle) {
  const ir::Geometry &g = bundle.geometry;
  const ir::Lowering &low = bundle.lowering;
  const size_t rank = g.dims.size();
  std::vector<int64_t> counts(rank), kernel(rank), maps(rank), outExtent(rank);
  for (size_t d = 0; d < rank; ++d) {
    counts[d] = g.dims[d].count;
    kernel[d] = g.dims[d].kernel;
    maps[d] = g.dims[d].maps;
    outExtent[d] = g.dims[d].maps * g.dims[d].count;
  }
  ConvolutionTables t;
  t.gather.assign(static_cast<size_t>(low.groups * low.positions * low.window), -1);
  t.scatter.assign(static_cast<size_t>(low.maps * low.groups * low.positions), -1);
  // Walk every kernel position j; split it into the unshared part (group u)
  // and the shared part (position p), each row-major over its dimensions.
  std::vector<int64_t> j(rank, 0), cell(rank, 0), m(rank, 0), out(rank, 0);
  do {
    int64_t u = 0, p = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (g.dims[d].sharing)
        p = p * counts[d] + j[d];
      else
        u = u * counts[d] + j[d];
    }
    int32_t *gather = &t.gather[static_cast<size_t>((u * low.positions + p) * low.window)];
    std::fill(cell.begin(), cell.end(), 0);
    int64_t k = 0;
    do
      gather[k++] = sourceNode(g, j, cell);
    while (advanceRowMajor(cell, kernel));
    std::fill(m.begin(), m.end(), 0);
    int64_t mapIndex = 0;
    do {
      for (size_t d = 0; d < rank; ++d)
        out[d] = m[d] * counts[d] + j[d];
      t.scatter[static_cast<size_t>((mapIndex * low.groups + u) * low.positions + p)] =
          static_cast<int32_t>(rowMajor(out, outExtent));
      ++mapIndex;
    } while (advanceRowMajor(m, maps));
  } while (advanceRowMajor(j, counts));
  return t;
}

WindowTables windowTables(const ir::Bundle &bundle) {
  const ir::Geometry &g = bundle.geometry;
  const size_t rank = g.dims.size();
  std::vector<int64_t> counts(rank), kernel(rank), centreCell(rank);
  for (size_t d = 0; d < rank; ++d) {
    counts[d] = g.dims[d].count;
    kernel[d] = g.dims[d].kernel;
    centreCell[d] = (g.dims[d].kernel - 1) / 2; // centre (docs/language.md §11.3): K/2 − 1 for even K
  }
  WindowTables t;
  t.window.reserve(static_cast<size_t>(g.outputNodes * g.kernelSize));
  t.centre.reserve(static_cast<size_t>(g.outputNodes));
  std::vector<int64_t> j(rank, 0), cell(rank, 0);
  do {
    std::fill(cell.begin(), cell.end(), 0);
    do
      t.window.push_back(sourceNode(g, j, cell));
    while (advanceRowMajor(cell, kernel));
    t.centre.push_back(sourceNode(g, j, centreCell));
  } while (advanceRowMajor(j, counts));
  return t;
}

SparseTables sparseTables(const ir::Bundle &bundle, const ir::Layer &source, const ir::Layer &destination) {
  SparseTables t;
  t.rowStart.push_back(0);
  std::vector<int64_t> s(source.shape.size(), 0), d(destination.shape.size(), 0);
  do {
    std::fill(s.begin(), s.end(), 0);
    int32_t sourceIndex = 0;
    do {
      if (bundle.predicate->evaluate(s, d).value)
        t.column.push_back(sourceIndex);
      ++sourceIndex;
    } while (advanceRowMajor(s, source.shape));
    t.rowStart.push_back(static_cast<int32_t>(t.column.size()));
  } while (advanceRowMajor(d, destination.shape));
  // Transpose: count per source, prefix sums, then place edges in order.
  t.colStart.assign(static_cast<size_t>(source.nodes + 1), 0);
  for (int32_t c : t.column)
    ++t.colStart[static_cast<size_t>(c) + 1];
  for (size_t i = 1; i < t.colStart.size(); ++i)
    t.colStart[i] += t.colStart[i - 1];
  t.row.resize(t.column.size());
  t.edge.resize(t.column.size());
  std::vector<int32_t> next(t.colStart.begin(), t.colStart.end() - 1);
  for (size_t r = 0; r + 1 < t.rowStart.size(); ++r)
    for (int32_t e = t.rowStart[r]; e < t.rowStart[r + 1]; ++e) {
      int32_t slot = next[static_cast<size_t>(t.column[static_cast<size_t>(e)])]++;
      t.row[static_cast<size_t>(slot)] = static_cast<int32_t>(r);
      t.edge[static_cast<size_t>(slot)] = e;
    }
  return t;
}

std::optional<std::vector<int64_t>> tableSizes(const ir::Bundle &bundle, const ir::Layer &source,
                                               const ir::Layer &destination) {
  const ir::Lowering &low = bundle.lowering;
  auto product = [](std::initializer_list<int64_t> factors) -> std::optional<int64_t> {
    CheckedProduct p;
    for (int64_t f : factors)
      p.multiply(f);
    if (p.overflow())
      return std::nullopt;
    return p.value();
  };
  switch (low.kernel) {
  case ir::KernelKind::Dense: return std::vector<int64_t>{};
  case ir::KernelKind::Sparse: {
    auto rows = checkedAdd(destination.nodes, 1), columns = checkedAdd(source.nodes, 1);
    if (!rows || !columns)
      return std::nullopt;
    return std::vector<int64_t>{*rows, bundle.edges, *columns, bundle.edges, bundle.edges};
  }
  case ir::KernelKind::MaxPool:
  case ir::KernelKind::MeanPool:
  case ir::KernelKind::ResponseNorm: {
    auto window = product({bundle.geometry.outputNodes, bundle.geometry.kernelSize});
    if (!window)
      return std::nullopt;
    if (low.kernel == ir::KernelKind::ResponseNorm)
      return std::vector<int64_t>{*window, bundle.geometry.outputNodes};
    return std::vector<int64_t>{*window};
  }
  default: {
    auto gather = product({low.groups, low.positions, low.window});
    auto scatter = product({low.maps, low.groups, low.positions});
    if (!gather || !scatter)
      return std::nullopt;
    return std::vector<int64_t>{*gather, *scatter};
  }
  }
}

} // namespace netc::plan
