// IrPrinter.cpp -- the IR dump: one line per layer and bundle, geometry per
// dimension, share groups and totals, in declaration order.
#include "ir/IrPrinter.h"

#include <fmt/format.h>

namespace netc::ir {

namespace {

std::string list(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string numbers(const std::vector<double> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == 8 && values.size() > 10)
      return out + fmt::format(", ... {} values]", values.size());
    out += fmt::format("{}{}", i ? ", " : "", values[i]);
  }
  return out + "]";
}

void printBundle(std::string &out, const Network &net, const Bundle &b) {
  out += fmt::format("  bundle from {} {}", b.sourceName, bundleKindName(b.kind));
  if (!b.valid)
    out += " invalid";
  out += fmt::format(" params={} flops={}", b.params, b.flops);
  if (b.kind == BundleKind::All || b.kind == BundleKind::Where)
    out += fmt::format(" edges={}", b.edges);
  if (b.lowering.lowered)
    out += fmt::format(" kernel={}", kernelKindName(b.lowering.kernel));
  out += "\n";
  if (b.predicate)
    out += fmt::format("    predicate {}\n", b.predicate->toString());
  if (b.kind == BundleKind::ResponseNorm)
    out += fmt::format("    alpha={} beta={} offset={} avg-over-full-kernel={}\n", b.alpha(), b.beta(),
                       b.offset(), b.avgOverFullKernel);
  if (b.weights)
    out += fmt::format("    weights {}\n", numbers(*b.weights));
  const Geometry &g = b.geometry;
  if (g.dims.empty())
    return;
  out += fmt::format("    geometry input={} output={} kernel-size={} maps={}", g.inputNodes, g.outputNodes,
                     g.kernelSize, g.maps);
  if (b.kind == BundleKind::Convolve)
    out += fmt::format(" kernels={}", g.kernels);
  if (b.kind == BundleKind::Convolve && b.lowering.lowered)
    out += fmt::format(" groups={} positions={}", b.lowering.groups, b.lowering.positions);
  out += "\n";
  for (size_t d = 0; d < g.dims.size(); ++d) {
    const DimGeometry &dim = g.dims[d];
    out += fmt::format("    dim {}: I={} K={} S={} N={} pad={}/{} offset={}", d, dim.input, dim.kernel,
                       dim.stride, dim.count, dim.lowerPad, dim.upperPad, dim.offset);
    if (dim.padded)
      out += " padded";
    if (b.kind == BundleKind::Convolve)
      out += fmt::format(" maps={} {}", dim.maps, dim.sharing ? "shared" : "unshared");
    out += "\n";
  }
  (void)net;
}

} // namespace

std::string printNetwork(const Network &net) {
  std::string out = fmt::format("network {} task={}\n", net.name, taskName(net.task));
  for (const Layer &layer : net.layers) {
    out += fmt::format("layer {} {} {}", layer.name, layerKindName(layer.kind),
                       layer.shape.empty() ? std::string("auto") : list(layer.shape));
    if (layer.shapeAuto)
      out += " (auto)";
    out += fmt::format(" nodes={}", layer.nodes);
    if (layer.function)
      out += fmt::format(" function={}{}", activationName(*layer.function),
                         layer.functionIsDefault ? " (default)" : "");
    if (layer.hasBias)
      out += " biased";
    if (!layer.valid)
      out += " invalid";
    out += fmt::format(" params={} flops={} bytes={} depth={}\n", layer.params, layer.flops,
                       layer.activationBytes, layer.depth);
    if (layer.biases)
      out += fmt::format("  biases {}\n", numbers(*layer.biases));
    for (const Bundle &bundle : layer.bundles)
      printBundle(out, net, bundle);
  }
  for (const auto &group : net.shareGroups) {
    out += "share";
    for (const ParamRef &ref : group) {
      const Layer &layer = net.layers[static_cast<size_t>(ref.layer)];
      if (ref.bundle < 0)
        out += fmt::format(" {}.biases", layer.name);
      else
        out += fmt::format(" {}.weights({})", layer.name,
                           layer.bundles[static_cast<size_t>(ref.bundle)].sourceName);
    }
    out += "\n";
  }
  out += fmt::format("total params={} unshared-params={} flops={} bytes={}\n", net.params, net.totalParams,
                     net.flops, net.activationBytes);
  return out;
}

} // namespace netc::ir
