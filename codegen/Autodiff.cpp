// Autodiff.cpp -- reverse-mode differentiation of a Plan's forward ops
// (docs/architecture.md §Autodiff): each forward op kind states its backward once, in the
// function Ops.def names for it. Walking the forward ops in reverse, every
// op whose output gradient exists emits the ops that produce the gradients
// of its inputs: parameter gradients, and layer-value gradients for every
// layer that is not an input. The first op writing a gradient overwrites
// it; later ones (several consumers, tied parameters) accumulate.
#include "codegen/Codegen.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::plan {

namespace {

class GradientBuilder {
public:
  explicit GradientBuilder(Plan &plan) : plan_(plan), gradient_(plan.buffers.size(), -1) {
    for (const Parameter &p : plan.parameters)
      gradient_[static_cast<size_t>(p.buffer)] = p.gradient;
    written_.assign(plan.buffers.size(), false);
    for (const Op &op : plan.ops)
      if (opRole(op.kind) == OpRole::Loss) {
        gradient_[static_cast<size_t>(op.get<LossAttrs>().gradientOf)] = op.out[0];
        markWritten(op.out[0]);
      }
    for (const Op &op : plan.ops)
      if (op.kind == OpKind::SliceInput)
        noGradient_.push_back(op.out[0]);
  }

  /// The written gradient of `values`, or -1 when nothing downstream of it
  /// reaches the loss.
  int outputGradient(int values) const {
    int g = gradient_[static_cast<size_t>(values)];
    return g >= 0 && static_cast<size_t>(g) < written_.size() && written_[static_cast<size_t>(g)] ? g : -1;
  }

  /// Whether the loss depends on `values` through something trainable
  /// (inputs and the features need no gradient).
  bool needsGradient(int values) const {
    const Buffer &b = plan_.buffers[static_cast<size_t>(values)];
    if (b.role == BufferRole::Features)
      return false;
    return std::find(noGradient_.begin(), noGradient_.end(), values) == noGradient_.end();
  }

  /// Emits `kind` writing the gradient of `values` (creating it if needed).
  Op &emit(OpKind kind, const Op &forward, std::vector<int> in, int values) {
    int g = gradient_[static_cast<size_t>(values)];
    if (g < 0) {
      const Buffer &v = plan_.buffers[static_cast<size_t>(values)];
      Buffer b;
      b.name = "d" + v.name;
      b.role = BufferRole::Gradient;
      b.gradientOf = values;
      b.perSample = v.perSample;
      b.shape = v.shape;
      g = plan_.addBuffer(std::move(b));
      gradient_[static_cast<size_t>(values)] = g;
    }
    if (static_cast<size_t>(g) >= written_.size())
      written_.resize(static_cast<size_t>(g) + 1, false);
    Op op;
    op.kind = kind;
    op.in = std::move(in);
    op.out = {g};
    op.accumulate = written_[static_cast<size_t>(g)];
    op.attrs = forward.attrs;
    op.layer = forward.layer;
    op.bundle = forward.bundle;
    markWritten(g);
    plan_.ops.push_back(std::move(op));
    return plan_.ops.back();
  }

  Plan &plan() { return plan_; }

private:
  void markWritten(int g) {
    if (static_cast<size_t>(g) >= written_.size())
      written_.resize(static_cast<size_t>(g) + 1, false);
    written_[static_cast<size_t>(g)] = true;
  }

  Plan &plan_;
  std::vector<int> gradient_;
  std::vector<bool> written_;
  std::vector<int> noGradient_;
};

// ---- one backward definition per differentiable op (Ops.def) ----

void backwardDense(const Op &f, int dy, GradientBuilder &g) {
  g.emit(OpKind::DenseGradWeights, f, {dy, f.in[0]}, f.in[1]);
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::DenseGradInput, f, {dy, f.in[1]}, f.in[0]);
}

void backwardSparse(const Op &f, int dy, GradientBuilder &g) {
  g.emit(OpKind::SparseGradWeights, f, {dy, f.in[0], f.in[2], f.in[3]}, f.in[1]);
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::SparseGradInput, f, {dy, f.in[1], f.in[4], f.in[5], f.in[6]}, f.in[0]);
}

void backwardConvolution(const Op &f, int dy, GradientBuilder &g) {
  g.emit(OpKind::ConvolutionGradWeights, f, {dy, f.in[0], f.in[2], f.in[3]}, f.in[1]);
  g.emit(OpKind::ConvolutionGradBias, f, {dy, f.in[3]}, f.in[4]);
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::ConvolutionGradInput, f, {dy, f.in[1], f.in[2], f.in[3]}, f.in[0]);
}

void backwardMaxPool(const Op &f, int dy, GradientBuilder &g) {
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::MaxPoolGrad, f, {dy, f.in[0], f.in[1]}, f.in[0]);
}

void backwardMeanPool(const Op &f, int dy, GradientBuilder &g) {
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::MeanPoolGrad, f, {dy, f.in[1]}, f.in[0]);
}

void backwardResponseNorm(const Op &f, int dy, GradientBuilder &g) {
  if (g.needsGradient(f.in[0]))
    g.emit(OpKind::ResponseNormGrad, f, {dy, f.in[0], f.in[1], f.in[2]}, f.in[0]);
}

void backwardAddBias(const Op &f, int dy, GradientBuilder &g) {
  g.emit(OpKind::BiasGrad, f, {dy}, f.in[0]);
}

void backwardActivate(const Op &f, int dy, GradientBuilder &g) {
  g.emit(OpKind::ActivateGrad, f, {dy, f.out[0], f.in[0]}, f.in[0]);
}

using BackwardFunction = void (*)(const Op &, int, GradientBuilder &);
constexpr BackwardFunction None = nullptr;
const BackwardFunction kBackward[] = {
#define OP(Id, Name, Role, Backward) Backward,
#include "codegen/Ops.def"
#undef OP
};

} // namespace

void appendBackward(Plan &plan) {
  GradientBuilder builder(plan);
  for (size_t i = plan.forwardEnd; i-- > 0;) {
    const Op forward = plan.ops[i]; // copied: emitting appends to plan.ops
    BackwardFunction backward = kBackward[static_cast<int>(forward.kind)];
    if (!backward)
      continue;
    int dy = builder.outputGradient(forward.out[0]);
    if (dy >= 0)
      backward(forward, dy, builder);
  }
}

} // namespace netc::plan
