// GradientCheckTest.cpp -- every backward op by central finite differences
// (docs/architecture.md §Tests). On the reference backend, the parameter gradients the
// backward ops produce are compared with (L(w+h) − L(w−h)) / 2h, L being the
// mean loss read from the metrics buffer (loss sum / batch, D16). In every
// network of TestNetworks.h each op sits after a trainable layer, so every
// backward op's input gradient feeds some parameter's gradient; the test
// also checks that the checked parameters' gradients pass through every
// backward op kind.
//
// Step and tolerance. Values are stored in float between ops, so L carries a
// rounding noise of about 1e-7·|L|; with h = 1e-2·max(1, |w|) that is a noise
// of ~1e-5 in the difference quotient, while the truncation error of the
// central difference is O(h²·L''') ~ 1e-5 for these smooth, O(1)-scaled
// networks. A coordinate passes when
//   |fd − analytic| <= 1e-2·max(|fd|, |analytic|) + 2e-4·max(1, |L|)·g
// where g = max(1e-2, max |gradient| over the tensor) scales the absolute
// floor to the tensor (a coordinate whose gradient is ~1e-6 cannot be
// resolved by float finite differences; it is still checked against the
// floor). Measured over the corpus (about 2,600 coordinates): the worst
// coordinate uses about a quarter of this allowance, the median network's
// worst about 4%; gradients 10% off fail on at least three quarters of the
// coordinates (GradientCheckSensitivity).
//
// Kinks. rlinear, abs, brlinear (piecewise linear), sqrt (infinite slope at
// 0) and max pooling (the argmax can switch) are not differentiable
// everywhere. For each coordinate the test records, at w−h, w and w+h, the
// region of every input of such an op (sign; brlinear: <0, 0..1, >1) and the
// argmax of every max-pool window; if any differs, the difference straddles a
// kink and the coordinate is skipped and another one drawn. sqrt is also
// skipped when a moved input comes within 10× its movement of 0 (there the
// curvature makes the central difference inaccurate). Skips are counted and
// most coordinates must be checked.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include <set>

namespace netc::numeric {
namespace {

using plan::OpKind;

/// The kink state of a forward pass: per non-smooth op, a region or argmax
/// index per element, plus sqrt inputs for the proximity rule.
struct KinkState {
  std::vector<std::vector<int32_t>> regions;
  std::vector<std::vector<float>> sqrtInputs;
  bool operator==(const KinkState &o) const { return regions == o.regions; }
};

KinkState kinkState(const Machine &m) {
  const plan::Plan &plan = m.plan();
  KinkState state;
  for (size_t i = 0; i < plan.forwardEnd; ++i) {
    const plan::Op &op = plan.ops[i];
    if (op.kind == OpKind::Activate) {
      const ir::Activation fn = op.get<plan::ActivationAttrs>().function;
      if (fn != ir::Activation::Rlinear && fn != ir::Activation::Abs && fn != ir::Activation::Brlinear &&
          fn != ir::Activation::Sqrt)
        continue;
      const std::vector<float> x = m.read(op.in[0]);
      std::vector<int32_t> region(x.size());
      for (size_t k = 0; k < x.size(); ++k)
        region[k] = x[k] < 0 ? 0 : x[k] == 0 ? 1 : (fn == ir::Activation::Brlinear && x[k] >= 1) ? 3 : 2;
      state.regions.push_back(std::move(region));
      if (fn == ir::Activation::Sqrt)
        state.sqrtInputs.push_back(x);
    } else if (op.kind == OpKind::MaxPool) {
      const auto &a = op.get<plan::WindowAttrs>();
      const std::vector<float> x = m.read(op.in[0]);
      const std::vector<int32_t> &window = plan.buffers[static_cast<size_t>(op.in[1])].table;
      std::vector<int32_t> arg(static_cast<size_t>(m.batch() * a.outputs), -1);
      for (int64_t b = 0; b < m.batch(); ++b)
        for (int64_t o = 0; o < a.outputs; ++o) {
          int32_t best = -1;
          for (int64_t k = 0; k < a.window; ++k) {
            const int32_t s = window[static_cast<size_t>(o * a.window + k)];
            if (s >= 0 && (best < 0 || x[static_cast<size_t>(b * a.inputs + s)] >
                                           x[static_cast<size_t>(b * a.inputs + best)]))
              best = s;
          }
          arg[static_cast<size_t>(b * a.outputs + o)] = best;
        }
      state.regions.push_back(std::move(arg));
    }
  }
  return state;
}

/// sqrt proximity: a moved input closer to 0 than 10× its movement.
bool nearSqrtKink(const KinkState &minus, const KinkState &plus) {
  for (size_t t = 0; t < minus.sqrtInputs.size(); ++t)
    for (size_t k = 0; k < minus.sqrtInputs[t].size(); ++k) {
      const double a = minus.sqrtInputs[t][k], b = plus.sqrtInputs[t][k];
      if (a != b && std::min(std::abs(a), std::abs(b)) < 10 * std::abs(a - b))
        return true;
    }
  return false;
}

struct GradientCheckSummary {
  int checked = 0, skipped = 0, failed = 0;
  double worstRatio = 0;
};

/// Checks up to `perTensor` random coordinates of every parameter. With
/// `scale` != 1 the backward results are scaled before the comparison (the
/// sensitivity test: failures are then counted, not reported).
GradientCheckSummary checkGradients(const NetCase &net, uint32_t seed, int64_t batch, int perTensor,
                                    double scale = 1.0) {
  GradientCheckSummary summary;
  Compiled compiled = compileAndPlan(net.text, net.options);
  const plan::Plan &plan = compiled.plan;
  if (plan.ops.empty()) {
    ADD_FAILURE() << "no plan for " << net.name;
    return summary;
  }
  Machine m(plan, batch, {1, true, {}});
  const State initial = randomState(plan, batch, seed);
  m.restore(initial);
  m.run(0, plan.backwardEnd);
  const double loss = m.meanLoss();
  EXPECT_TRUE(std::isfinite(loss));
  const KinkState base = kinkState(m);
  std::mt19937 rng(seed * 7919u + 1);

  for (const plan::Parameter &p : plan.parameters) {
    std::vector<float> analytic = m.read(p.gradient);
    for (float &g : analytic)
      g = static_cast<float>(g * scale);
    double magnitude = 1e-2;
    for (float g : analytic)
      magnitude = std::max(magnitude, double(std::abs(g)));
    std::vector<float> weights = initial[static_cast<size_t>(p.buffer)];
    std::vector<size_t> order(weights.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    int done = 0;
    for (size_t i : order) {
      if (done >= perTensor)
        break;
      const float w = weights[i];
      const float h = static_cast<float>(1e-2 * std::max(1.0, double(std::abs(w))));
      auto lossAt = [&](float value, KinkState &kinks) {
        weights[i] = value;
        m.write(p.buffer, weights);
        m.run(0, plan.lossEnd);
        kinks = kinkState(m);
        return m.meanLoss();
      };
      KinkState plusKinks, minusKinks;
      // The step actually taken is the difference of the two float values.
      const float wPlus = w + h, wMinus = w - h;
      const double lPlus = lossAt(wPlus, plusKinks), lMinus = lossAt(wMinus, minusKinks);
      weights[i] = w;
      m.write(p.buffer, weights);
      if (!(plusKinks == base) || !(minusKinks == base) || nearSqrtKink(minusKinks, plusKinks)) {
        ++summary.skipped;
        continue;
      }
      const double fd = (lPlus - lMinus) / (double(wPlus) - double(wMinus));
      const double an = analytic[i];
      const double allowed =
          1e-2 * std::max(std::abs(fd), std::abs(an)) + 2e-4 * std::max(1.0, loss) * magnitude;
      const double ratio = std::abs(fd - an) / allowed;
      summary.worstRatio = std::max(summary.worstRatio, ratio);
      summary.failed += ratio > 1.0 ? 1 : 0;
      if (scale == 1.0) {
        EXPECT_LE(ratio, 1.0) << fmt::format(
            "{} {}[{}]: finite difference {:.6g}, backward {:.6g} (w = {}, h = {}, "
            "loss {:.6g})",
            net.name, p.name, i, fd, an, w, h, loss);
      }
      ++summary.checked;
      ++done;
    }
  }
  return summary;
}

std::vector<NetCase> gradientCases() {
  std::vector<NetCase> cases = fixedNetworks();
  for (uint32_t seed = 101; seed <= 112; ++seed)
    cases.push_back(randomGeometryNetwork(seed));
  return cases;
}

class GradientCheck : public ::testing::TestWithParam<NetCase> {};

TEST_P(GradientCheck, BackwardMatchesCentralDifferences) {
  const NetCase &net = GetParam();
  int checked = 0, skipped = 0;
  double worst = 0;
  for (uint32_t seed : {11u, 12u}) {
    GradientCheckSummary s = checkGradients(net, seed, seed == 11u ? 3 : 1, 5);
    checked += s.checked;
    skipped += s.skipped;
    worst = std::max(worst, s.worstRatio);
  }
  EXPECT_GT(checked, 0);
  // Kinks may cost some coordinates, never most of them.
  EXPECT_LE(skipped, checked) << net.name << ": " << skipped << " coordinates skipped, " << checked
                              << " checked";
  RecordProperty("checked", checked);
  RecordProperty("skipped", skipped);
  RecordProperty("worst_ratio", std::to_string(worst));
}

/// The check is not vacuous: gradients 10% off fail on most coordinates
/// of every network.
TEST(GradientCheckSensitivity, TenPercentWrongGradientsFail) {
  for (const NetCase &net : fixedNetworks()) {
    GradientCheckSummary s = checkGradients(net, 11, 3, 3, 1.1);
    EXPECT_GT(s.checked, 0) << net.name;
    EXPECT_GE(s.failed, s.checked * 3 / 4)
        << net.name << ": only " << s.failed << " of " << s.checked << " coordinates noticed a 10% error";
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, GradientCheck, ::testing::ValuesIn(gradientCases()),
                         [](const ::testing::TestParamInfo<NetCase> &info) { return info.param.name; });

/// The backward ops whose results the checked gradients depend on: every
/// backward op kind occurs in some network of the corpus, and in each plan
/// every backward op's output is read by a later backward op or is a
/// parameter gradient (so its correctness shows in some checked gradient).
TEST(GradientCheckCoverage, EveryBackwardOpFeedsAParameterGradient) {
  std::set<OpKind> seen;
  for (const NetCase &net : gradientCases()) {
    Compiled compiled = compileAndPlan(net.text, net.options);
    const plan::Plan &plan = compiled.plan;
    std::set<int> parameterGradients;
    for (const plan::Parameter &p : plan.parameters)
      parameterGradients.insert(p.gradient);
    for (size_t i = plan.forwardEnd; i < plan.backwardEnd; ++i) {
      const plan::Op &op = plan.ops[i];
      seen.insert(op.kind);
      const int out = op.out[0];
      bool used = parameterGradients.count(out) > 0;
      for (size_t j = i + 1; j < plan.backwardEnd && !used; ++j)
        for (int in : plan.ops[j].in)
          used = used || in == out;
      EXPECT_TRUE(used) << net.name << ": " << describeOp(plan, i) << " writes a gradient nothing reads";
    }
  }
  // zero-gradients has no gradient of its own: the accumulation tests
  // (tests/reference, the accumulate case) cover it.
#define OP(Id, Name, R, B)                                                                                   \
  if ((plan::OpRole::R == plan::OpRole::Backward || plan::OpRole::R == plan::OpRole::Loss) &&                \
      OpKind::Id != OpKind::ZeroGradients) {                                                                 \
    EXPECT_TRUE(seen.count(OpKind::Id)) << "no gradient check passes through " << Name;                      \
  }
#include "codegen/Ops.def"
#undef OP
}

} // namespace
} // namespace netc::numeric
