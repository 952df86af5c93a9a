// ComputeGeometry.cpp -- checks the attributes of convolve, pool and norm
// bundles and computes their geometry (docs/language.md §11-§13): arity,
// kernel/stride/pad bounds, broadcasting of Padding/Sharing/MapCount, the
// node count N[d] and first-kernel offset per dimension, map and kernel
// counts, and the match of InputShape and output count with the layers.
#include "passes/Pipeline.h"
#include "support/CheckedMath.h"

#include <fmt/format.h>

namespace netc {

namespace {

std::string tupleText(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

class GeometryChecker {
public:
  GeometryChecker(ir::Network &net, ir::Layer &dst, ir::Bundle &bundle, const CompileOptions &options,
                  DiagnosticEngine &diags)
      : net_(net), dst_(dst), b_(bundle), options_(options), diags_(diags) {}

  void run() {
    const std::vector<int64_t> &input = b_.intAttrs[ir::Attr::InputShape];
    const size_t arity = input.size();
    bool ok = arity > 0 && checkPositive(ir::Attr::InputShape, input);

    // Arity and defaults of the per-dimension attributes.
    std::vector<int64_t> kernel = ints(ir::Attr::KernelShape, arity, 0, ok);
    std::vector<int64_t> stride = ints(ir::Attr::Stride, arity, 1, ok);
    std::vector<int64_t> lower = ints(ir::Attr::LowerPad, arity, 0, ok);
    std::vector<int64_t> upper = ints(ir::Attr::UpperPad, arity, 0, ok);
    std::vector<bool> padding = bools(ir::Attr::Padding, arity, false, ok);
    std::vector<bool> sharing = bools(ir::Attr::Sharing, arity, true, ok);
    std::vector<int64_t> maps = mapCounts(arity, ok);
    for (ir::Attr pad : {ir::Attr::LowerPad, ir::Attr::UpperPad})
      if (b_.has(pad) && b_.has(ir::Attr::Padding)) {
        Diagnostic &d = diags_.report(DiagId::PaddingConflict, b_.rangeOf(pad), ir::attrName(pad));
        withNote(d, b_.rangeOf(ir::Attr::Padding), "'Padding' is given here");
        ok = false;
      }
    // Keep every later sum far from 64-bit overflow: no dimension may exceed
    // the largest layer (which is itself far below 2^62).
    const int64_t largest = std::min<int64_t>(options_.maxLayerNodes, int64_t{1} << 50);
    for (size_t d = 0; ok && d < arity; ++d)
      if (input[d] > largest) {
        diags_.report(DiagId::CountTooLarge, b_.rangeOf(ir::Attr::InputShape),
                      fmt::format("InputShape[{}]", d), input[d], largest);
        ok = false;
      }
    if (!ok) {
      b_.valid = false;
      return;
    }

    // Per-dimension bounds (D8) and geometry (D7, D8).
    ir::Geometry &g = b_.geometry;
    g.dims.resize(arity);
    CheckedProduct inputNodes, outputNodes, kernelSize, mapProduct, kernels;
    for (size_t d = 0; d < arity; ++d) {
      ir::DimGeometry &dim = g.dims[d];
      dim.input = input[d];
      dim.kernel = kernel[d];
      dim.stride = stride[d];
      dim.maps = maps[d];
      dim.sharing = sharing[d];
      dim.padded = padding[d];
      if (dim.kernel > dim.input) {
        diags_.report(DiagId::KernelOutOfRange, b_.rangeOf(ir::Attr::KernelShape), d, dim.kernel, d,
                      dim.input);
        ok = false;
        continue;
      }
      if (dim.stride > dim.kernel) {
        diags_.report(DiagId::StrideOutOfRange, b_.rangeOf(ir::Attr::Stride), d, dim.stride, d, dim.kernel);
        ok = false;
        continue;
      }
      if (lower[d] < 0 || lower[d] > (dim.kernel - 1) / 2) { // 0 <= 2L < K
        diags_.report(DiagId::LowerPadOutOfRange, b_.rangeOf(ir::Attr::LowerPad), d, lower[d], d, dim.kernel);
        ok = false;
        continue;
      }
      if (upper[d] < 0 || upper[d] > dim.kernel / 2) { // 0 <= 2U <= K
        diags_.report(DiagId::UpperPadOutOfRange, b_.rangeOf(ir::Attr::UpperPad), d, upper[d], d, dim.kernel);
        ok = false;
        continue;
      }
      if (dim.padded) {
        // The first kernel's central node sits on source node 0 (D8).
        dim.count = (dim.input - 1) / dim.stride + 1;
        dim.lowerPad = (dim.kernel - 1) / 2;
        dim.offset = -dim.lowerPad;
        int64_t lastCell = (dim.count - 1) * dim.stride + dim.offset + dim.kernel - 1;
        dim.upperPad = std::max<int64_t>(0, lastCell - (dim.input - 1));
      } else if (lower[d] != 0 || upper[d] != 0) {
        dim.count = (dim.input + lower[d] + upper[d] - dim.kernel) / dim.stride + 1;
        dim.lowerPad = lower[d];
        dim.upperPad = upper[d];
        dim.offset = -lower[d];
      } else {
        // Uncovered nodes are split, the smaller half at the low end (D7).
        dim.count = (dim.input - dim.kernel) / dim.stride + 1;
        dim.offset = ((dim.input - dim.kernel) % dim.stride) / 2;
      }
      inputNodes.multiply(dim.input);
      kernelSize.multiply(dim.kernel);
      mapProduct.multiply(dim.maps);
      if (b_.kind == ir::BundleKind::Convolve) {
        outputNodes.multiply(dim.maps);
        if (!dim.sharing)
          kernels.multiply(dim.count);
      }
      outputNodes.multiply(dim.count);
    }
    if (!ok) {
      b_.valid = false;
      return;
    }
    kernels.multiply(mapProduct.value());
    if (inputNodes.overflow() || outputNodes.overflow() || kernels.overflow() || mapProduct.overflow()) {
      diags_.report(DiagId::IntegerOverflow, b_.kindRange, "the size of this bundle");
      b_.valid = false;
      return;
    }
    g.inputNodes = inputNodes.value();
    g.outputNodes = outputNodes.value();
    g.kernelSize = kernelSize.value();
    g.maps = mapProduct.value();
    g.kernels = b_.kind == ir::BundleKind::Convolve ? kernels.value() : 0;

    // Counts against the layers (D9).
    if (b_.source >= 0) {
      const ir::Layer &src = net_.layers[static_cast<size_t>(b_.source)];
      if (src.nodes > 0 && src.nodes != g.inputNodes) {
        Diagnostic &d = diags_.report(DiagId::InputShapeMismatch, b_.rangeOf(ir::Attr::InputShape),
                                      tupleText(input), g.inputNodes, src.name, src.nodes);
        withNote(d, src.shapeRange, fmt::format("'{}' is declared here with {} nodes", src.name, src.nodes));
        b_.valid = false;
      }
    }
    if (dst_.nodes > 0 && dst_.nodes != g.outputNodes) {
      std::vector<int64_t> natural;
      for (const ir::DimGeometry &dim : g.dims)
        natural.push_back(b_.kind == ir::BundleKind::Convolve ? dim.maps * dim.count : dim.count);
      Diagnostic &d = diags_.report(DiagId::OutputCountMismatch, b_.kindRange, g.outputNodes,
                                    "shape " + tupleText(natural), dst_.name, dst_.nodes);
      withNote(d, dst_.shapeRange, fmt::format("'{}' is declared here with {} nodes", dst_.name, dst_.nodes));
      b_.valid = false;
    }
  }

private:
  bool arityMatches(ir::Attr a, size_t have, size_t arity) {
    if (have == arity)
      return true;
    diags_.report(DiagId::AttributeArity, b_.rangeOf(a), ir::attrName(a), have, arity);
    return false;
  }

  std::vector<int64_t> ints(ir::Attr a, size_t arity, int64_t fallback, bool &ok) {
    auto it = b_.intAttrs.find(a);
    if (it == b_.intAttrs.end())
      return std::vector<int64_t>(arity, fallback);
    if (!arityMatches(a, it->second.size(), arity)) {
      ok = false;
      return std::vector<int64_t>(arity, fallback);
    }
    if ((a == ir::Attr::KernelShape || a == ir::Attr::Stride) && !checkPositive(a, it->second))
      ok = false;
    return it->second;
  }

  std::vector<bool> bools(ir::Attr a, size_t arity, bool fallback, bool &ok) {
    auto it = b_.boolAttrs.find(a);
    if (it == b_.boolAttrs.end())
      return std::vector<bool>(arity, fallback);
    if (b_.givenAsScalar & ir::attrBit(a))
      return std::vector<bool>(arity, it->second.front());
    if (!arityMatches(a, it->second.size(), arity)) {
      ok = false;
      return std::vector<bool>(arity, fallback);
    }
    return it->second;
  }

  std::vector<int64_t> mapCounts(size_t arity, bool &ok) {
    std::vector<int64_t> maps(arity, 1);
    auto it = b_.intAttrs.find(ir::Attr::MapCount);
    if (it == b_.intAttrs.end())
      return maps;
    if (b_.givenAsScalar & ir::attrBit(ir::Attr::MapCount)) {
      if (arity > 0)
        maps[0] = it->second.front(); // D8: m means [m, 1, ..., 1]
    } else if (arityMatches(ir::Attr::MapCount, it->second.size(), arity)) {
      maps = it->second;
    } else {
      ok = false;
      return std::vector<int64_t>(arity, 1);
    }
    for (size_t d = 0; d < maps.size(); ++d)
      if (maps[d] <= 0) {
        diags_.report(DiagId::NonPositiveMapCount, b_.rangeOf(ir::Attr::MapCount), d, maps[d]);
        ok = false;
      }
    return maps;
  }

  bool checkPositive(ir::Attr a, const std::vector<int64_t> &values) {
    if (!b_.has(a))
      return true;
    for (size_t d = 0; d < values.size(); ++d)
      if (values[d] <= 0) {
        diags_.report(DiagId::NonPositiveComponent, b_.rangeOf(a), ir::attrName(a), d, values[d]);
        return false;
      }
    return true;
  }

  ir::Network &net_;
  ir::Layer &dst_;
  ir::Bundle &b_;
  const CompileOptions &options_;
  DiagnosticEngine &diags_;
};

} // namespace

void computeGeometry(ir::Network &net, const CompileOptions &options, DiagnosticEngine &diags) {
  for (ir::Layer &layer : net.layers)
    for (ir::Bundle &bundle : layer.bundles)
      if (ir::bundleIsGeometric(bundle.kind) && bundle.valid && bundle.intAttrs.count(ir::Attr::InputShape) &&
          bundle.intAttrs.count(ir::Attr::KernelShape))
        GeometryChecker(net, layer, bundle, options, diags).run();
}

} // namespace netc
