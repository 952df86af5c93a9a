// InferAutoSizes.cpp -- resolves `auto` shapes (D10) and binds the network
// to the task and data the host supplied: an `auto` input takes the size of
// the convolve/pool/norm bundles that read it (they must agree), else the
// data's feature count; `hidden auto` takes the hidden-node setting; `output
// auto` takes the task's size. Input sizes must add up to the feature count
// and the output must suit the task.
#include "passes/Pipeline.h"
#include "support/CheckedMath.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc {

namespace {

void setSize(ir::Layer &layer, int64_t nodes) {
  layer.shape = {nodes};
  layer.nodes = nodes;
}

/// Π InputShape of a bundle, if it is written and sensible.
std::optional<int64_t> inputShapeProduct(const ir::Bundle &bundle) {
  auto it = bundle.intAttrs.find(ir::Attr::InputShape);
  if (it == bundle.intAttrs.end() || it->second.empty())
    return std::nullopt;
  CheckedProduct product;
  for (int64_t d : it->second) {
    if (d <= 0)
      return std::nullopt;
    product.multiply(d);
  }
  if (product.overflow())
    return std::nullopt;
  return product.value();
}

void inferInput(ir::Network &net, size_t index, const CompileOptions &options, DiagnosticEngine &diags,
                bool &needsData) {
  ir::Layer &layer = net.layers[index];
  const ir::Bundle *first = nullptr;
  int64_t size = 0;
  for (const ir::Layer &consumer : net.layers)
    for (const ir::Bundle &bundle : consumer.bundles) {
      if (bundle.source != static_cast<int>(index) || !ir::bundleIsGeometric(bundle.kind))
        continue;
      auto product = inputShapeProduct(bundle);
      if (!product)
        continue;
      if (!first) {
        first = &bundle;
        size = *product;
      } else if (*product != size) {
        Diagnostic &d = diags.report(DiagId::AutoInputConflict, bundle.rangeOf(ir::Attr::InputShape),
                                     layer.name, *product, size);
        withNote(d, first->rangeOf(ir::Attr::InputShape),
                 fmt::format("this bundle reads '{}' as {} nodes", layer.name, size));
        layer.valid = false;
        return;
      }
    }
  if (first) {
    if (size > options.maxLayerNodes) {
      diags.report(DiagId::LayerTooLarge, layer.shapeRange, layer.name, size, options.maxLayerNodes);
      layer.valid = false;
      return;
    }
    setSize(layer, size);
    return;
  }
  needsData = true;
}

} // namespace

void inferAutoSizes(ir::Network &net, const CompileOptions &options, DiagnosticEngine &diags) {
  std::vector<size_t> unresolvedInputs;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    ir::Layer &layer = net.layers[i];
    if (!layer.shapeAuto)
      continue;
    switch (layer.kind) {
    case ir::LayerKind::Input: {
      bool needsData = false;
      inferInput(net, i, options, diags, needsData);
      if (needsData)
        unresolvedInputs.push_back(i);
      break;
    }
    case ir::LayerKind::Hidden: setSize(layer, options.hiddenNodes); break;
    case ir::LayerKind::Output: {
      std::optional<int64_t> size;
      if (options.task == ir::Task::Binary)
        size = 2;
      else if (options.task == ir::Task::Regression)
        size = 1;
      else if (options.task == ir::Task::Multiclass && options.classCount)
        size = *options.classCount;
      if (!size) {
        diags.report(DiagId::AutoOutputNeedsTask, layer.shapeRange, layer.name);
        layer.valid = false;
      } else {
        setSize(layer, *size);
      }
      break;
    }
    }
  }

  // Inputs still `auto` take what the data leaves once the others are counted.
  int64_t known = 0;
  bool allKnown = true;
  for (const ir::Layer &layer : net.layers)
    if (layer.kind == ir::LayerKind::Input && (!layer.shapeAuto || layer.nodes > 0)) {
      if (layer.nodes <= 0)
        allKnown = false;
      known += layer.nodes;
    }
  if (!unresolvedInputs.empty()) {
    int64_t remaining = options.inputSize ? *options.inputSize - known : 0;
    bool resolvable = options.inputSize && unresolvedInputs.size() == 1 && allKnown && remaining > 0;
    for (size_t index : unresolvedInputs) {
      ir::Layer &layer = net.layers[index];
      if (resolvable && remaining <= options.maxLayerNodes) {
        setSize(layer, remaining);
        known += remaining;
      } else if (options.inputSize && unresolvedInputs.size() == 1 && allKnown) {
        // The other inputs already take all the features the data has.
        Diagnostic &d = diags.report(DiagId::FeatureCountMismatch, layer.shapeRange,
                                     fmt::format("at least {}", known + 1), *options.inputSize);
        withNote(d, layer.nameRange,
                 fmt::format("'auto' input '{}' takes what the other inputs leave, and nothing is left",
                             layer.name));
        layer.valid = false;
        allKnown = false;
      } else {
        diags.report(DiagId::AutoInputUnresolved, layer.shapeRange, layer.name);
        layer.valid = false;
        allKnown = false;
      }
    }
  }

  // Task binding: the feature count and the output size.
  if (options.inputSize && allKnown && unresolvedInputs.empty() && known != *options.inputSize) {
    for (const ir::Layer &layer : net.layers)
      if (layer.kind == ir::LayerKind::Input) {
        Diagnostic &d =
            diags.report(DiagId::FeatureCountMismatch, layer.shapeRange, known, *options.inputSize);
        auto inputCount = std::count_if(net.layers.begin(), net.layers.end(),
                                        [](const ir::Layer &l) { return l.kind == ir::LayerKind::Input; });
        if (inputCount > 1)
          for (const ir::Layer &other : net.layers)
            if (other.kind == ir::LayerKind::Input)
              withNote(d, other.shapeRange,
                       fmt::format("input '{}' takes {} features", other.name, other.nodes));
        break;
      }
  }
  if (options.task != ir::Task::Unspecified)
    for (const ir::Layer &layer : net.layers) {
      if (layer.kind != ir::LayerKind::Output || layer.nodes <= 0 || layer.shapeAuto)
        continue;
      std::optional<int64_t> needed;
      std::string neededText;
      if (options.task == ir::Task::Regression)
        needed = 1;
      else if (options.task == ir::Task::Multiclass && options.classCount)
        needed = *options.classCount;
      if (options.task == ir::Task::Binary && layer.nodes != 1 && layer.nodes != 2)
        diags.report(DiagId::OutputSizeMismatch, layer.shapeRange, layer.name, layer.nodes,
                     ir::taskName(options.task), "1 or 2");
      else if (needed && layer.nodes != *needed)
        diags.report(DiagId::OutputSizeMismatch, layer.shapeRange, layer.name, layer.nodes,
                     ir::taskName(options.task), *needed);
    }
}

} // namespace netc
