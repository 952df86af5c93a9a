// LowerBundles.cpp -- bundle lowering (docs/architecture.md §Bundle lowering): maps every valid bundle
// to the canonical kernel the backends implement, chosen from its geometry,
// and records the sizes of the grouped matrix products it becomes. A
// convolution whose dimension 0 spans all input maps is an ordinary
// multi-channel convolution; K0 = 1 unshared is grouped (one kernel bank per
// input map); K0 = 1 shared folds the maps into the batch; 1 < K0 < I0 is a
// 3-D convolution; an unshared spatial dimension makes it locally connected.
// Ranks 1 and 2 have no maps dimension: one input map, an ordinary
// convolution. The index tables themselves are built by codegen from this and the
// geometry, so `netc check` stays cheap.
#include "passes/Pipeline.h"

namespace netc {

namespace {

ir::KernelKind convolutionKind(const ir::Geometry &g) {
  const ir::DimGeometry &first = g.dims.front();
  // Without a maps dimension (rank 1 or 2) every dimension is spatial.
  const size_t firstSpatial = g.dims.size() <= 2 ? 0 : 1;
  for (size_t d = firstSpatial; d < g.dims.size(); ++d)
    if (!g.dims[d].sharing && g.dims[d].count > 1)
      return ir::KernelKind::LocallyConnected;
  if (firstSpatial == 0 || first.count == 1)
    return ir::KernelKind::Convolution; // one input map, or the kernel spans all maps
  if (first.kernel == 1)
    return first.sharing ? ir::KernelKind::MapsInBatchConvolution : ir::KernelKind::GroupedConvolution;
  return first.sharing ? ir::KernelKind::Convolution3D : ir::KernelKind::LocallyConnected;
}

void lowerGeometric(ir::Bundle &bundle) {
  const ir::Geometry &g = bundle.geometry;
  ir::Lowering &low = bundle.lowering;
  low.window = g.kernelSize;
  for (const ir::DimGeometry &dim : g.dims)
    low.padded =
        low.padded || dim.offset < 0 || (dim.count - 1) * dim.stride + dim.offset + dim.kernel > dim.input;
  switch (bundle.kind) {
  case ir::BundleKind::Convolve:
    low.kernel = convolutionKind(g);
    low.maps = g.maps;
    low.groups = 1;
    low.positions = 1;
    for (const ir::DimGeometry &dim : g.dims)
      (dim.sharing ? low.positions : low.groups) *= dim.count;
    break;
  case ir::BundleKind::MaxPool: low.kernel = ir::KernelKind::MaxPool; break;
  case ir::BundleKind::MeanPool: low.kernel = ir::KernelKind::MeanPool; break;
  case ir::BundleKind::ResponseNorm: low.kernel = ir::KernelKind::ResponseNorm; break;
  default: return;
  }
  if (bundle.kind != ir::BundleKind::Convolve)
    low.positions = g.outputNodes;
  low.lowered = true;
}

} // namespace

void lowerBundles(ir::Network &net, const CompileOptions &, DiagnosticEngine &) {
  for (ir::Layer &layer : net.layers)
    for (ir::Bundle &bundle : layer.bundles) {
      bundle.lowering = ir::Lowering{};
      if (!bundle.valid || bundle.source < 0 || !layer.valid)
        continue;
      switch (bundle.kind) {
      case ir::BundleKind::All:
        bundle.lowering.kernel = ir::KernelKind::Dense;
        bundle.lowering.lowered = true;
        break;
      case ir::BundleKind::Where:
        bundle.lowering.kernel = ir::KernelKind::Sparse;
        bundle.lowering.lowered = bundle.edges > 0;
        break;
      default:
        if (!bundle.geometry.dims.empty() && bundle.geometry.outputNodes > 0)
          lowerGeometric(bundle);
      }
    }
}

} // namespace netc
