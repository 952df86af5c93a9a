// CountCosts.cpp -- parameters (D5), forward FLOPs and activation memory of
// every bundle and layer, with checked 64-bit arithmetic, plus the length
// checks of `Weights` (D4) and `Biases` against what the structure needs.
// FLOPs count a multiply-add as 2; docs/cli.md gives the full definition.
#include "passes/Pipeline.h"
#include "support/CheckedMath.h"

#include <fmt/format.h>

namespace netc {

namespace {

/// FLOPs per node of an output function (a rough, documented estimate).
int64_t functionFlops(std::optional<ir::Activation> fn) {
  if (!fn)
    return 0;
  switch (*fn) {
  case ir::Activation::Linear: return 0;
  case ir::Activation::Softmax:
  case ir::Activation::Sigmoid:
  case ir::Activation::Tanh:
  case ir::Activation::Srlinear: return 4;
  default: return 1;
  }
}

/// Accumulates into an int64 and remembers overflow.
struct CheckedSum {
  int64_t value = 0;
  bool overflow = false;
  void add(std::optional<int64_t> v) {
    if (!v || overflow || __builtin_add_overflow(value, *v, &value))
      overflow = true;
  }
};

} // namespace

void countCosts(ir::Network &net, const CompileOptions &options, DiagnosticEngine &diags) {
  CheckedSum totalParams, totalFlops, totalBytes;
  bool reportedTooLarge = false;
  const ir::Layer *largest = nullptr;
  for (ir::Layer &layer : net.layers) {
    CheckedSum params, flops;
    for (ir::Bundle &bundle : layer.bundles) {
      bundle.params = 0;
      bundle.flops = 0;
      if (!bundle.valid || bundle.source < 0)
        continue;
      const ir::Layer &src = net.layers[static_cast<size_t>(bundle.source)];
      std::optional<int64_t> p = 0, f = 0;
      switch (bundle.kind) {
      case ir::BundleKind::All:
        if (src.nodes <= 0 || layer.nodes <= 0)
          continue;
        p = checkedMul(src.nodes, layer.nodes);
        bundle.edges = p.value_or(0);
        f = p ? checkedMul(*p, 2) : std::nullopt;
        break;
      case ir::BundleKind::Where:
        p = bundle.edges;
        f = checkedMul(bundle.edges, 2);
        break;
      case ir::BundleKind::Convolve: {
        const ir::Geometry &g = bundle.geometry;
        if (g.dims.empty())
          continue;
        p = checkedMul(g.kernels, g.kernelSize + 1);
        auto macs = checkedMul(g.outputNodes, g.kernelSize);
        f = macs ? checkedMul(*macs, 2) : std::nullopt;
        f = f ? checkedAdd(*f, g.outputNodes) : std::nullopt; // kernel bias
        break;
      }
      case ir::BundleKind::MaxPool:
      case ir::BundleKind::MeanPool:
        if (bundle.geometry.dims.empty())
          continue;
        f = checkedMul(bundle.geometry.outputNodes, bundle.geometry.kernelSize);
        break;
      case ir::BundleKind::ResponseNorm: {
        if (bundle.geometry.dims.empty())
          continue;
        auto perNode = checkedAdd(checkedMul(bundle.geometry.kernelSize, 2).value_or(INT64_MAX), 3);
        f = perNode ? checkedMul(bundle.geometry.outputNodes, *perNode) : std::nullopt;
        break;
      }
      }
      if (!p || !f) {
        diags.report(DiagId::IntegerOverflow, bundle.kindRange, "the size of this bundle");
        bundle.valid = false;
        continue;
      }
      if (*p > options.maxParams) {
        diags.report(DiagId::CountTooLarge, bundle.kindRange, "the parameter count of this bundle",
                     std::to_string(*p), options.maxParams);
        bundle.valid = false;
        reportedTooLarge = true;
        continue;
      }
      bundle.params = *p;
      bundle.flops = *f;
      if (bundle.weights && static_cast<int64_t>(bundle.weights->size()) != bundle.params)
        diags.report(DiagId::ValueCountMismatch, bundle.rangeOf(ir::Attr::Weights), "Weights",
                     bundle.weights->size(), fmt::format("bundle '{} => {}'", bundle.sourceName, layer.name),
                     bundle.params);
      params.add(bundle.params);
      flops.add(bundle.flops);
    }
    if (layer.hasBias && layer.nodes > 0) {
      params.add(layer.nodes);
      flops.add(layer.nodes);
      if (layer.biases && static_cast<int64_t>(layer.biases->size()) != layer.nodes)
        diags.report(DiagId::ValueCountMismatch, layer.biasesRange, "Biases", layer.biases->size(),
                     fmt::format("layer '{}'", layer.name), layer.nodes);
    }
    flops.add(checkedMul(layer.nodes, functionFlops(layer.function)));
    layer.params = params.overflow ? 0 : params.value;
    layer.flops = flops.overflow ? 0 : flops.value;
    layer.activationBytes = layer.nodes * 4; // nodes <= maxLayerNodes, far from overflow
    totalParams.add(params.overflow ? std::nullopt : std::optional<int64_t>(params.value));
    totalFlops.add(layer.flops);
    totalBytes.add(layer.activationBytes);
    if (!largest || layer.params > largest->params)
      largest = &layer;
  }
  net.totalParams = totalParams.overflow ? INT64_MAX : totalParams.value;
  net.params = net.totalParams;
  net.flops = totalFlops.overflow ? INT64_MAX : totalFlops.value;
  net.activationBytes = totalBytes.overflow ? INT64_MAX : totalBytes.value;
  if (!reportedTooLarge && (totalParams.overflow || net.totalParams > options.maxParams)) {
    // Located at the layer with the most parameters: the likeliest culprit.
    SourceRange at = largest ? largest->nameRange : SourceRange{};
    if (totalParams.overflow)
      diags.report(DiagId::IntegerOverflow, at, "the network's parameter count");
    else
      diags.report(DiagId::CountTooLarge, at, "the network's parameter count",
                   std::to_string(net.totalParams), options.maxParams);
  }
}

} // namespace netc
