// OpSemanticsTest.cpp -- every forward and loss op against its definition,
// computed here independently of both kernel tables. The parity test can
// only show that the fast kernels agree with the references; pooling, norm,
// output functions and losses share their templates between the two tables,
// and both read the same index tables, so a wrong definition or a wrong
// table would pass it. Here each op of every network of TestNetworks.h
// (random geometries included) runs alone from the reference state before
// it, on both tables, and its output is compared with:
//  - convolution: y[m·N+j] = bias + Σ_k W[m·groups+u][1+k]·x[...] with the
//    gather/scatter tables of HandGeometry.h built from the attributes as
//    written (InputShape, KernelShape, Stride, Padding, LowerPad, UpperPad,
//    Sharing, MapCount; scalars broadcast per D8);
//  - max/mean pool: max / mean over the real cells of each window (D8);
//  - response norm: x_c·(Offset + Alpha/n·Σ x_z²)^−Beta over the real cells
//    z, c the central cell (K−1)/2, n = ΠK or the real count (D11);
//  - dense: W [dst × src] destination-major (D4); add-bias; slice-input (D12);
//  - where: edges enumerated by destination then source, with the
//    predicates of kSparseNet and kShareNet spelled in C++ (D4);
//  - the ten output functions (docs/language.md §7);
//  - the three losses of D16 (value, gradient, correct count).
// Tolerance: 1e-5 relative plus 1e-6 of the buffer's scale for the reference
// table (double accumulation); the fast table gets the parity tolerance.
#include "HandGeometry.h"
#include "PlanHarness.h"
#include "TestNetworks.h"

#include <functional>
#include <map>

namespace netc::numeric {
namespace {

using plan::OpKind;

/// The bundle's geometry attributes as written, with D8's broadcasting.
std::vector<Dim> dimsFromAttributes(const ir::Bundle &b) {
  const std::vector<int64_t> &input = b.intAttrs.at(ir::Attr::InputShape);
  const size_t rank = input.size();
  auto ints = [&](ir::Attr a, int64_t fallback) {
    auto it = b.intAttrs.find(a);
    return it == b.intAttrs.end() ? std::vector<int64_t>(rank, fallback) : it->second;
  };
  auto bools = [&](ir::Attr a, bool fallback) {
    auto it = b.boolAttrs.find(a);
    if (it == b.boolAttrs.end())
      return std::vector<bool>(rank, fallback);
    if (b.givenAsScalar & ir::attrBit(a))
      return std::vector<bool>(rank, it->second.front());
    return it->second;
  };
  std::vector<int64_t> kernel = ints(ir::Attr::KernelShape, 1), stride = ints(ir::Attr::Stride, 1),
                       lower = ints(ir::Attr::LowerPad, 0), upper = ints(ir::Attr::UpperPad, 0);
  std::vector<bool> padding = bools(ir::Attr::Padding, false), sharing = bools(ir::Attr::Sharing, true);
  std::vector<int64_t> maps(rank, 1);
  if (auto it = b.intAttrs.find(ir::Attr::MapCount); it != b.intAttrs.end()) {
    if (b.givenAsScalar & ir::attrBit(ir::Attr::MapCount))
      maps[0] = it->second.front();
    else
      maps = it->second;
  }
  std::vector<Dim> dims;
  for (size_t d = 0; d < rank; ++d)
    dims.push_back({input[d], kernel[d], stride[d], padding[d], lower[d], upper[d], sharing[d], maps[d]});
  return dims;
}

/// What one forward or loss op should produce from state `s` (batch `batch`):
/// the expected contents of each of its outputs, in op.out order.
using Expectation = std::vector<std::vector<double>>;

/// The hand-written `where` predicates of kSparseNet and kShareNet, by "layer/source".
using Pred = std::function<bool(const std::vector<int64_t> &, const std::vector<int64_t> &)>;
const std::map<std::string, Pred> &sparsePredicates() {
  static const std::map<std::string, Pred> preds = {
      {"R/A", [](auto &s, auto &d) { return s[0] == d[0] && s[1] >= d[1]; }},
      {"S/R", [](auto &s, auto &d) { return (s[0] + s[1]) % 5 == d[0]; }},
      {"T/S", [](auto &s, auto &d) { return s[0] != d[0]; }},
      {"T/R", [](auto &s, auto &d) { return s[1] == d[0]; }},
      {"O/B", [](auto &s, auto &d) { return s[0] < 4 || d[0] == 2; }},
      {"W1/H1", [](auto &s, auto &d) { return s[0] >= d[0]; }}, // kShareNet
      {"W2/H2", [](auto &s, auto &d) { return s[0] >= d[0]; }},
  };
  return preds;
}

double applyFunction(ir::Activation fn, double x) {
  switch (fn) {
  case ir::Activation::Sigmoid: return 1 / (1 + std::exp(-x));
  case ir::Activation::Tanh: return std::tanh(x);
  case ir::Activation::Linear: return x;
  case ir::Activation::Rlinear: return x > 0 ? x : 0;
  case ir::Activation::Brlinear: return x < 0 ? 0 : x > 1 ? 1 : x;
  case ir::Activation::Srlinear: return std::log(1 + std::exp(x));
  case ir::Activation::Square: return x * x;
  case ir::Activation::Sqrt: return x > 0 ? std::sqrt(x) : 0;
  case ir::Activation::Abs: return std::abs(x);
  case ir::Activation::Softmax: break;
  }
  ADD_FAILURE() << "softmax is row-wise";
  return 0;
}

class Semantics {
public:
  Semantics(const Compiled &c, const State &s, int64_t batch) : c_(c), plan_(c.plan), s_(s), batch_(batch) {}

  /// The expected outputs of op `i`, or nothing for ops this test does not define.
  std::optional<Expectation> expect(size_t i) const {
    const plan::Op &op = plan_.ops[i];
    switch (op.kind) {
    case OpKind::SliceInput: return slice(op);
    case OpKind::Dense: return dense(op);
    case OpKind::Sparse: return sparse(op);
    case OpKind::Convolution: return convolution(op);
    case OpKind::MaxPool:
    case OpKind::MeanPool:
    case OpKind::ResponseNorm: return window(op);
    case OpKind::AddBias: return addBias(op);
    case OpKind::Activate: return activate(op);
    case OpKind::SoftmaxCrossEntropy:
    case OpKind::SigmoidCrossEntropy:
    case OpKind::SquaredError: return loss(op);
    default: return std::nullopt;
    }
  }

private:
  const std::vector<float> &in(const plan::Op &op, size_t k) const {
    return s_[static_cast<size_t>(op.in[k])];
  }
  /// The output before the op: the prior contents when it accumulates, else zeros.
  std::vector<double> prior(const plan::Op &op) const {
    const std::vector<float> &o = s_[static_cast<size_t>(op.out[0])];
    std::vector<double> out(o.size(), 0.0);
    if (op.accumulate)
      for (size_t k = 0; k < o.size(); ++k)
        out[k] = o[k];
    return out;
  }
  const ir::Bundle &bundleOf(const plan::Op &op) const {
    return c_.network().layers[static_cast<size_t>(op.layer)].bundles[static_cast<size_t>(op.bundle)];
  }

  Expectation slice(const plan::Op &op) const {
    const auto &a = op.get<plan::SliceAttrs>();
    const int input = c_.network().findLayer(plan_.buffers[static_cast<size_t>(op.out[0])].name);
    int64_t offset = 0; // D12: consecutive slices in declaration order
    for (int l : c_.network().inputs) {
      if (l == input)
        break;
      offset += c_.network().layers[static_cast<size_t>(l)].nodes;
    }
    EXPECT_EQ(a.offset, offset);
    const int64_t width = c_.network().layers[static_cast<size_t>(input)].nodes;
    std::vector<double> y(static_cast<size_t>(batch_ * width));
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t k = 0; k < width; ++k)
        y[static_cast<size_t>(b * width + k)] =
            in(op, 0)[static_cast<size_t>(b * plan_.featureCount + offset + k)];
    return {y};
  }

  Expectation dense(const plan::Op &op) const {
    const auto &a = op.get<plan::DenseAttrs>();
    std::vector<double> y = prior(op);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t o = 0; o < a.outputs; ++o)
        for (int64_t k = 0; k < a.inputs; ++k)
          y[static_cast<size_t>(b * a.outputs + o)] +=
              double(in(op, 1)[static_cast<size_t>(o * a.inputs + k)]) *
              in(op, 0)[static_cast<size_t>(b * a.inputs + k)];
    return {y};
  }

  Expectation sparse(const plan::Op &op) const {
    const ir::Layer &dst = c_.network().layers[static_cast<size_t>(op.layer)];
    const ir::Bundle &bundle = bundleOf(op);
    const ir::Layer &src = c_.network().layers[static_cast<size_t>(bundle.source)];
    auto it = sparsePredicates().find(dst.name + "/" + src.name);
    if (it == sparsePredicates().end()) {
      ADD_FAILURE() << "no hand-written predicate for " << dst.name << "/" << src.name;
      return {};
    }
    std::vector<double> y = prior(op);
    const std::vector<float> &x = in(op, 0), &w = in(op, 1);
    for (int64_t b = 0; b < batch_; ++b) {
      int64_t edge = 0;
      for (int64_t d = 0; d < dst.nodes; ++d)
        for (int64_t s = 0; s < src.nodes; ++s)
          if (it->second(unflatten(s, src.shape), unflatten(d, dst.shape)))
            y[static_cast<size_t>(b * dst.nodes + d)] +=
                double(w[static_cast<size_t>(edge++)]) * x[static_cast<size_t>(b * src.nodes + s)];
      EXPECT_EQ(edge, bundle.edges);
    }
    return {y};
  }

  Expectation convolution(const plan::Op &op) const {
    const auto &a = op.get<plan::ConvAttrs>();
    const ExpectedConvolution e = expectedConvolution(dimsFromAttributes(bundleOf(op)));
    EXPECT_EQ(a.groups, e.groups);
    EXPECT_EQ(a.positions, e.positions);
    EXPECT_EQ(a.maps, e.maps);
    std::vector<double> y = prior(op);
    // Kernel (m, u): weights row m·U+u of [kernels × window], its bias element m·U+u (in[4]).
    const std::vector<float> &x = in(op, 0), &w = in(op, 1), &bias = in(op, 4);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t m = 0; m < e.maps; ++m)
        for (int64_t u = 0; u < e.groups; ++u)
          for (int64_t p = 0; p < e.positions; ++p) {
            const size_t kernel = static_cast<size_t>(m * e.groups + u);
            double sum = bias[kernel];
            for (int64_t k = 0; k < e.window; ++k) {
              const int32_t s = e.gather[static_cast<size_t>((u * e.positions + p) * e.window + k)];
              if (s >= 0)
                sum += double(w[kernel * static_cast<size_t>(e.window) + static_cast<size_t>(k)]) *
                       x[static_cast<size_t>(b * a.inputs + s)];
            }
            y[static_cast<size_t>(
                b * a.outputs + e.scatter[static_cast<size_t>((m * e.groups + u) * e.positions + p)])] += sum;
          }
    return {y};
  }

  Expectation window(const plan::Op &op) const {
    const auto &a = op.get<plan::WindowAttrs>();
    const ir::Bundle &bundle = bundleOf(op);
    const std::vector<Dim> dims = dimsFromAttributes(bundle);
    const ExpectedWindow e = expectedWindow(dims);
    int64_t size = 1;
    for (const Dim &d : dims)
      size *= d.kernel;
    EXPECT_EQ(a.window, size);
    std::vector<double> y = prior(op);
    const std::vector<float> &x = in(op, 0);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t o = 0; o < a.outputs; ++o) {
        double best = -INFINITY, sum = 0, squares = 0;
        int64_t real = 0;
        for (int64_t k = 0; k < size; ++k) {
          const int32_t s = e.window[static_cast<size_t>(o * size + k)];
          if (s < 0)
            continue;
          const double v = x[static_cast<size_t>(b * a.inputs + s)];
          best = std::max(best, v);
          sum += v;
          squares += v * v;
          ++real;
        }
        EXPECT_GT(real, 0) << "a window of only dummy cells";
        double value = 0;
        if (op.kind == OpKind::MaxPool)
          value = best;
        else if (op.kind == OpKind::MeanPool)
          value = sum / double(real);
        else {
          const double n = bundle.avgOverFullKernel ? double(size) : double(real);
          const int32_t centre = e.centre[static_cast<size_t>(o)];
          EXPECT_GE(centre, 0) << "the central cell is a dummy";
          value = centre < 0 ? 0
                             : x[static_cast<size_t>(b * a.inputs + centre)] *
                                   std::pow(bundle.offset() + bundle.alpha() / n * squares, -bundle.beta());
        }
        y[static_cast<size_t>(b * a.outputs + o)] += value;
      }
    return {y};
  }

  Expectation addBias(const plan::Op &op) const {
    const auto &a = op.get<plan::DenseAttrs>();
    std::vector<double> y = prior(op);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t k = 0; k < a.outputs; ++k)
        y[static_cast<size_t>(b * a.outputs + k)] += in(op, 0)[static_cast<size_t>(k)];
    return {y};
  }

  Expectation activate(const plan::Op &op) const {
    const auto &a = op.get<plan::ActivationAttrs>();
    const std::vector<float> &x = in(op, 0);
    std::vector<double> y(x.size());
    for (int64_t b = 0; b < batch_; ++b) {
      const size_t row = static_cast<size_t>(b * a.nodes);
      if (a.function == ir::Activation::Softmax) {
        double sum = 0;
        for (int64_t k = 0; k < a.nodes; ++k)
          sum += std::exp(double(x[row + static_cast<size_t>(k)]));
        for (int64_t k = 0; k < a.nodes; ++k)
          y[row + static_cast<size_t>(k)] = std::exp(double(x[row + static_cast<size_t>(k)])) / sum;
      } else {
        for (int64_t k = 0; k < a.nodes; ++k)
          y[row + static_cast<size_t>(k)] = applyFunction(a.function, x[row + static_cast<size_t>(k)]);
      }
    }
    return {y};
  }

  /// D16: mean loss over the batch (the step is this one batch); the
  /// metrics, cleared before the run, hold [loss sum, correct count, 0].
  Expectation loss(const plan::Op &op) const {
    const int64_t n = op.get<plan::LossAttrs>().nodes;
    const std::vector<float> &y = in(op, 0), &labels = in(op, 1);
    std::vector<double> gradient(y.size()), metrics(plan::kMetricCount, 0.0);
    for (int64_t b = 0; b < batch_; ++b) {
      const float label = labels[static_cast<size_t>(b)];
      auto target = [&](int64_t k) {
        return n == 1 ? double(label) : double(k) == double(label) ? 1.0 : 0.0;
      };
      double loss = 0;
      int64_t best = 0;
      for (int64_t k = 0; k < n; ++k) {
        const size_t at = static_cast<size_t>(b * n + k);
        const double p = y[at], t = target(k);
        if (p > y[static_cast<size_t>(b * n + best)])
          best = k;
        if (op.kind == OpKind::SoftmaxCrossEntropy) {
          loss -= t * std::log(p);
          gradient[at] = (p - t) / double(batch_); // with respect to the logits
        } else if (op.kind == OpKind::SigmoidCrossEntropy) {
          loss -= (t * std::log(p) + (1 - t) * std::log(1 - p)) / double(n);
          gradient[at] = (p - t) / double(batch_ * n); // with respect to the logits
        } else {
          loss += (p - t) * (p - t) / double(n);
          gradient[at] = 2 * (p - t) / double(batch_ * n); // with respect to the outputs
        }
      }
      metrics[0] += loss;
      const bool correct =
          n == 1 ? (y[static_cast<size_t>(b)] > 0.5f ? 1.0f : 0.0f) == label : double(best) == double(label);
      metrics[1] += correct ? 1 : 0;
    }
    return {gradient, metrics};
  }

  const Compiled &c_;
  const plan::Plan &plan_;
  const State &s_;
  int64_t batch_;
};

std::vector<NetCase> semanticCases() {
  std::vector<NetCase> cases = fixedNetworks();
  for (uint32_t seed = 201; seed <= 240; ++seed)
    cases.push_back(randomGeometryNetwork(seed));
  return cases;
}

class OpSemantics : public ::testing::TestWithParam<NetCase> {};

TEST_P(OpSemantics, ForwardAndLossOpsMatchTheirDefinitions) {
  const NetCase &net = GetParam();
  Compiled compiled = compileAndPlan(net.text, net.options);
  const plan::Plan &plan = compiled.plan;
  ASSERT_GT(plan.ops.size(), 0u);
  const int64_t batch = 3;
  Machine reference(plan, batch, {1, true, {}});
  Machine fast(plan, batch, {1, false, {}});
  reference.restore(randomState(plan, batch, 4242));
  size_t checked = 0;
  for (size_t i = 0; i < plan.lossEnd; ++i) {
    const State before = reference.snapshot();
    fast.restore(before);
    reference.run(i, i + 1);
    fast.run(i, i + 1);
    const std::optional<Expectation> expected = Semantics(compiled, before, batch).expect(i);
    ASSERT_TRUE(expected) << describeOp(plan, i) << " has no definition here";
    const plan::Op &op = plan.ops[i];
    ASSERT_EQ(expected->size(), op.out.size()) << describeOp(plan, i);
    for (size_t k = 0; k < op.out.size(); ++k) {
      std::vector<float> want((*expected)[k].begin(), (*expected)[k].end());
      const std::string what = describeOp(plan, i) + " output " + std::to_string(k);
      EXPECT_TRUE(valuesClose(what + " (reference)", reference.read(op.out[k]), want, {1e-5, 1e-6}));
      EXPECT_TRUE(valuesClose(what + " (fast)", fast.read(op.out[k]), want));
    }
    ++checked;
  }
  EXPECT_EQ(checked, plan.lossEnd);
}

INSTANTIATE_TEST_SUITE_P(Networks, OpSemantics, ::testing::ValuesIn(semanticCases()),
                         [](const ::testing::TestParamInfo<NetCase> &info) { return info.param.name; });

} // namespace
} // namespace netc::numeric
