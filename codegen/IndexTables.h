// IndexTables.h -- the constant index tables a lowered bundle needs (gather
// windows, scatter maps, CSR structures), built from its geometry or
// predicate. They are the whole geometry contract between the compiler and
// every backend.
#pragma once

#include "ir/Network.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace netc::plan {

/// Convolution: gather[u][p][k] = source node of cell k for kernel group u at
/// shared position p (-1: a dummy cell); scatter[m][u][p] = destination node.
struct ConvolutionTables {
  std::vector<int32_t> gather, scatter;
};
ConvolutionTables convolutionTables(const ir::Bundle &bundle);

/// Pool/norm: window[o][k] = source node of cell k of output o (-1: dummy);
/// centre[o] = the source node a response norm scales (its window's centre).
struct WindowTables {
  std::vector<int32_t> window, centre;
};
WindowTables windowTables(const ir::Bundle &bundle);

/// A `where` bundle as CSR by destination (rowStart, column; edge e's weight
/// is weights[e], D4 order) and its transpose by source (colStart, row, edge).
struct SparseTables {
  std::vector<int32_t> rowStart, column, colStart, row, edge;
};
SparseTables sparseTables(const ir::Bundle &bundle, const ir::Layer &source, const ir::Layer &destination);

/// The element counts of a bundle's tables, in the order of the structs
/// above (convolution: gather, scatter; pool: window; norm: window, centre;
/// where: rowStart, column, colStart, row, edge), computed from its geometry
/// alone in checked arithmetic (nothing on overflow) without building them.
std::optional<std::vector<int64_t>> tableSizes(const ir::Bundle &bundle, const ir::Layer &source,
                                               const ir::Layer &destination);

} // namespace netc::plan
