// AssignDefaults.cpp -- what the user may leave out: per-node biases exist on
// layers with an `all` or `where` bundle (D5), and output functions default
// by D6 (hidden with a trainable bundle: sigmoid; pool/norm only: linear;
// output: the task's default, multiclass when unspecified and the output has
// more than one node, else binary).
#include "passes/Pipeline.h"

namespace netc {

namespace {

ir::Activation outputDefault(ir::Task task, int64_t nodes) {
  switch (task) {
  case ir::Task::Multiclass: return ir::Activation::Softmax;
  case ir::Task::Binary: return ir::Activation::Sigmoid;
  case ir::Task::Regression: return ir::Activation::Linear;
  case ir::Task::Unspecified: break;
  }
  return nodes > 1 ? ir::Activation::Softmax : ir::Activation::Sigmoid;
}

} // namespace

void assignDefaults(ir::Network &net, const CompileOptions &, DiagnosticEngine &diags) {
  for (ir::Layer &layer : net.layers) {
    bool trainable = false;
    layer.hasBias = false;
    for (const ir::Bundle &bundle : layer.bundles) {
      trainable |= ir::bundleIsTrainable(bundle.kind);
      layer.hasBias |= bundle.kind == ir::BundleKind::All || bundle.kind == ir::BundleKind::Where;
    }
    if (layer.kind == ir::LayerKind::Input)
      layer.hasBias = false;
    if (layer.biases && !layer.hasBias)
      diags.report(DiagId::BiasesWithoutBias, layer.biasesRange, layer.name);
    if (layer.function || layer.kind == ir::LayerKind::Input)
      continue;
    layer.functionIsDefault = true;
    if (layer.kind == ir::LayerKind::Output)
      layer.function = outputDefault(net.task, layer.nodes);
    else
      layer.function = trainable || layer.bundles.empty() ? ir::Activation::Sigmoid : ir::Activation::Linear;
  }
}

} // namespace netc
