// Bf16ParityTest.cpp -- `--precision bf16` against its reference: the
// rounding itself (cpu::roundToBf16, the reference's model of
// VCVTNEPS2BF16), the fast bf16 dense and convolution products
// (Bf16DenseKernels.cpp, Bf16ConvolutionKernels.cpp) against the bf16
// reference op by op within a bound derived below, 1 and 2 threads bit for
// bit, and the bf16 reference against the FP32 reference within the bound
// of rounding the factors.
//
// The bounds (u = 2^-24, FP32's unit roundoff; S = Σ |a_i|·|b_i| over an
// output's k products, plus |C| where the op adds to C):
// - fast bf16 against the bf16 reference. Both multiply the same bf16
//   factors, whose products are exact in FP32 (8 × 8 significant bits).
//   VDPBF16PS adds them one at a time, each addition rounded to FP32: a
//   sum in FP32 whose terms each go through at most n rounded additions
//   (the "depth", termsOf) is within γ_n·S of the exact sum, γ_n =
//   n·u / (1 − n·u). The reference sums in double (error below k·2^-53·S
//   for k products, folded into the depth's extra addition) and rounds once
//   to FP32 (u·|sum| ≤ u·S); the dense input gradient's rounding per block
//   of outputs, the convolution input gradient's per window, count in the
//   depth. VDPBF16PS flushes a product below 2^-126 to zero.
//   So |fast − reference| ≤ (γ_n + u)·S + k·2^-126.
// - bf16 against FP32. A factor rounded to bf16 (8 significant bits) is
//   within 2^-8 of itself, relatively, so a product within 2^-7 + 2^-16;
//   both references round their double sum once to FP32. So
//   |bf16 − fp32| ≤ (2^-7 + 2^-16 + 2u)·S, plus 2^-126 per flushed factor.
// S is computed by the FP32 reference running the same op on the absolute
// values of its state.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include <array>
#include <bit>
#include <cmath>

namespace netc::numeric {
namespace {

using plan::OpKind;

bool isDenseProduct(OpKind kind) {
  return kind == OpKind::Dense || kind == OpKind::DenseGradWeights || kind == OpKind::DenseGradInput;
}
bool isConvolutionProduct(OpKind kind) {
  return kind == OpKind::Convolution || kind == OpKind::ConvolutionGradWeights ||
         kind == OpKind::ConvolutionGradInput;
}
/// The ops whose products --precision bf16 rounds.
bool isBf16Product(OpKind kind) {
  return isDenseProduct(kind) || isConvolutionProduct(kind);
}

/// How far the fast bf16 kernel of a product op may be from the bf16
/// reference: `depth`, the most rounded additions any one term of an
/// output goes through (a sum whose terms each go through at most n
/// roundings is within γ_n·S of the exact sum), and `products`, the most
/// products an output sums (each flushed below 2^-126 at worst).
struct ProductTerms {
  int64_t depth, products;
};
ProductTerms termsOf(const plan::Plan &plan, const plan::Op &op, int64_t batch) {
  if (isDenseProduct(op.kind)) {
    // Dense: one running sum over k, plus one rounding per block of
    // outputs for the input gradient (the reference's too).
    const auto &a = op.get<plan::DenseAttrs>();
    int64_t blocks = 0;
    plan::forEachDenseBlock(a, [&](int64_t, int64_t) { ++blocks; });
    const int64_t k = op.kind == OpKind::Dense            ? a.inputs
                      : op.kind == OpKind::DenseGradInput ? a.outputs
                                                          : batch;
    return {k + (op.kind == OpKind::DenseGradInput ? blocks : 1), k};
  }
  const auto &a = op.get<plan::ConvAttrs>();
  switch (op.kind) {
  case OpKind::Convolution: // the bias, then the window's products, then the value accumulated into
    return {a.window + 2, a.window};
  case OpKind::ConvolutionGradInput: {
    // Each (group, position) whose window holds input s adds its sums over
    // the maps to dx[s] (one per tile of up to 16 maps): the maps'
    // additions, then one per such window and tile.
    const std::vector<int32_t> &gather = plan.buffers[static_cast<size_t>(op.in[2])].table;
    std::vector<int64_t> hits(static_cast<size_t>(a.inputs), 0);
    for (int32_t node : gather)
      if (node >= 0)
        ++hits[static_cast<size_t>(node)];
    const int64_t most = *std::max_element(hits.begin(), hits.end());
    return {a.maps + most * ((a.maps + 15) / 16) + 1, a.maps * most};
  }
  default: // the weight gradient: per lane, two samples a step over the positions, then the 16 lanes in turn
    return {a.positions * 2 * ((batch + 31) / 32) + 17, a.positions * batch};
  }
}

State absoluteValues(State state) {
  for (std::vector<float> &values : state)
    for (float &v : values)
      v = std::abs(v);
  return state;
}

/// Every element of `actual` within `relative`·S + `absolute` of
/// `reference`, S the element of `sums` (Σ|a|·|b|).
::testing::AssertionResult withinBound(std::string_view what, const std::vector<float> &actual,
                                       const std::vector<float> &reference, const std::vector<float> &sums,
                                       double relative, double absolute, double &worst) {
  if (actual.size() != reference.size() || sums.size() != reference.size())
    return ::testing::AssertionFailure() << what << ": sizes differ";
  size_t bad = 0, first = 0;
  for (size_t e = 0; e < reference.size(); ++e) {
    const double bound = relative * double(sums[e]) + absolute;
    const double error = std::abs(double(actual[e]) - double(reference[e]));
    worst = std::max(worst, error / bound);
    if (!(error <= bound) && bad++ == 0)
      first = e;
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << fmt::format("{}: {} of {} elements off by more than {:.3g}·Σ|a||b| "
                                                      "+ {:.3g}; first [{}] = {} vs {} (Σ|a||b| = {})",
                                                      what, bad, reference.size(), relative, absolute, first,
                                                      actual[first], reference[first], sums[first]);
}

bool hostRunsBf16() {
  const auto sets = runtime::cpu::instructionSets();
  return runtime::cpu::hostCpuFeatures().avx512bf16 &&
         std::find(sets.begin(), sets.end(), std::string_view("avx512")) != sets.end();
}

TEST(Bf16, RoundingIsToNearestEvenAsTheHardwareRounds) {
  using runtime::cpu::roundToBf16;
  const auto bits = [](float x) { return std::bit_cast<uint32_t>(x); };
  const auto of = [](uint32_t b) { return std::bit_cast<float>(b); };
  // Recorded from VCVTNEPS2BF16 on an AMD EPYC (Zen 4): input bits -> bf16 bits.
  const std::pair<uint32_t, uint32_t> recorded[] = {
      {0x000ae398, 0x0000}, // a denormal: +0
      {0x800ae398, 0x8000}, // a negative denormal: -0
      {0x3f808000, 0x3f80}, // a tie: to the even 0x3f80
      {0x3f818000, 0x3f82}, // a tie: to the even 0x3f82
      {0x3f808080, 0x3f81}, // above the tie: up
      {0x3f807fff, 0x3f80}, // below it: down
      {0x7f7fffff, 0x7f80}, // past the largest bf16: infinity
      {0x7fc00000, 0x7fc0}, // a quiet NaN stays one
      {0x00800000, 0x0080}, // the smallest normal stays
      {0x40200000, 0x4020}, // 2.5, exact
      {0xff800000, 0xff80}, // -infinity
  };
  for (const auto &[in, out] : recorded)
    EXPECT_EQ(bits(roundToBf16(of(in))), out << 16) << fmt::format("{:08x}", in);
  EXPECT_TRUE(std::isnan(roundToBf16(of(0x7f800001)))); // a signalling NaN whose payload is in the low half
}

/// Op by op on `net` (as KernelParityTest's op-by-op comparison): the bf16
/// reference runs the plan; the fast bf16 machine (1 and 2 threads) runs
/// each op from the reference's state. Dense and convolution products are
/// held to the bf16 bound, every other op to the FP32 parity tolerance, and
/// 2 threads must give 1 thread's bits.
/// Returns how many dense and convolution outputs it held to the bound;
/// `worst` rises to the largest error seen, as a fraction of its bound.
std::array<int, 2> bf16OpsMatchTheirReference(const NetCase &net, const std::vector<int64_t> &batches,
                                              double &worst) {
  Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
  const plan::Plan &plan = compiled.plan;
  std::array<int, 2> checked{};
  for (int64_t batch : batches) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    Machine reference(plan, batch, {1, true, {}, {}, true});
    Machine sums(plan, batch, {1, true, {}});
    Machine one(plan, batch, {1, false, "avx512", "", true}),
        two(plan, batch, {2, false, "avx512", "", true});
    reference.restore(randomState(plan, batch, 2000u + static_cast<uint32_t>(batch)));
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const plan::Op &op = plan.ops[i];
      if (plan::opRole(op.kind) == plan::OpRole::Communication)
        continue;
      const State before = reference.snapshot();
      reference.run(i, i + 1);
      for (Machine *m : {&one, &two}) {
        m->restore(before);
        m->run(i, i + 1);
      }
      if (isBf16Product(op.kind)) {
        sums.restore(absoluteValues(before));
        sums.run(i, i + 1);
      }
      for (int out : op.out) {
        const std::string what =
            describeOp(plan, i) + " output " + plan.buffers[static_cast<size_t>(out)].name;
        const std::vector<float> r = reference.read(out), f1 = one.read(out), f2 = two.read(out);
        EXPECT_TRUE(bitIdentical(what + " (2 threads vs 1)", f2, f1));
        if (!isBf16Product(op.kind)) {
          EXPECT_TRUE(valuesClose(what, f1, r));
          continue;
        }
        const ProductTerms terms = termsOf(plan, op, batch);
        const double u = std::ldexp(1.0, -24), n = double(terms.depth), gamma = n * u / (1 - n * u);
        EXPECT_TRUE(withinBound(what, f1, r, sums.read(out), gamma + u,
                                double(terms.products) * std::ldexp(1.0, -126), worst));
        ++checked[isDenseProduct(op.kind) ? 0 : 1];
      }
    }
  }
  return checked;
}

/// The sizes of KernelParityTest's odd-size dense test (every tile edge
/// partial, two blocks of outputs, odd k for the pairs), and the seed
/// network (a convolution before its dense layers).
TEST(Bf16, DenseProductsMatchTheBf16ReferenceWithinTheirBound) {
  if (!hostRunsBf16())
    GTEST_SKIP() << "this processor has no AVX512-BF16 (or netc was built without the avx512 table): "
                    "--precision bf16 is refused here";
  double worst = 0;
  const struct {
    int inputs, hidden, outputs;
  } sizes[] = {{1, 1, 2}, {7, 13, 3}, {130, 29, 5}, {300, 1030, 11}};
  for (const auto &size : sizes) {
    SCOPED_TRACE(fmt::format("{} -> {} -> {}", size.inputs, size.hidden, size.outputs));
    bf16OpsMatchTheirReference(
        {"odd",
         fmt::format("input I [{}]; hidden H [{}] from I all; output O [{}] from H all;", size.inputs,
                     size.hidden, size.outputs),
         {}},
        {1, 19, 37, 203}, worst);
  }
  const std::array<int, 2> seed =
      bf16OpsMatchTheirReference({"seed", readFile(sourcePath("examples/mnist.net")), {}}, {3, 128}, worst);
  EXPECT_GT(seed[0], 0);
  ::testing::Test::RecordProperty("worst_ratio", std::to_string(worst));
}

/// The convolutions' products: every kernel kind of TestNetworks.h (2-D,
/// multi-channel, grouped, 3-D, locally connected; padding's dummy cells,
/// odd windows and map counts), random geometries, and the seed network's
/// two at batch 128 (whole pairs of chunks; the first's weight gradient
/// converts its rows as read, the second's copies them to bf16 first), and
/// the gradients accumulating -- odd batches for the partial
/// chunk and the weight gradient's odd pair of samples.
TEST(Bf16, ConvolutionProductsMatchTheBf16ReferenceWithinTheirBound) {
  if (!hostRunsBf16())
    GTEST_SKIP() << "this processor has no AVX512-BF16 (or netc was built without the avx512 table): "
                    "--precision bf16 is refused here";
  std::vector<NetCase> nets = {{"conv2d", kConv2dNet, {}},   {"multi_channel", kMultiChannelNet, {}},
                               {"grouped", kGroupedNet, {}}, {"conv3d", kConv3dNet, {}},
                               {"local", kLocalNet, {}},     {"pool", kPoolNet, {}}};
  for (uint32_t seed = 1; seed <= 6; ++seed)
    nets.push_back(randomGeometryNetwork(seed));
  NetCase accumulating{"conv2d_accumulate", kConv2dNet, {}}; // every gradient op adding
  accumulating.accumulate = true;
  nets.push_back(accumulating);
  int convolutions = 0;
  double worst = 0;
  for (const NetCase &net : nets) {
    SCOPED_TRACE(net.name);
    convolutions += bf16OpsMatchTheirReference(net, {1, 19, 37}, worst)[1];
  }
  SCOPED_TRACE("seed");
  convolutions +=
      bf16OpsMatchTheirReference({"seed", readFile(sourcePath("examples/mnist.net")), {}}, {128}, worst)[1];
  EXPECT_GT(convolutions, 3 * int(nets.size())); // each has at least one convolution's three products
  ::testing::Test::RecordProperty("worst_ratio", std::to_string(worst));
}

/// The bf16 reference's products against the FP32 reference's, from the
/// same state: within the rounding bound, and not equal (the factors were
/// rounded). Needs no AVX512-BF16: both are reference kernels. Returns the
/// products compared.
int bf16ReferenceIsWithinTheRoundingBound(const NetCase &net, double &worst) {
  Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
  const plan::Plan &plan = compiled.plan;
  const int64_t batch = 19;
  Machine bf16(plan, batch, {1, true, {}, {}, true}), fp32(plan, batch, {1, true, {}}),
      sums(plan, batch, {1, true, {}});
  fp32.restore(randomState(plan, batch, 7));
  int products = 0;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    if (plan::opRole(op.kind) == plan::OpRole::Communication)
      continue;
    const State before = fp32.snapshot();
    fp32.run(i, i + 1);
    if (!isBf16Product(op.kind))
      continue;
    ++products;
    bf16.restore(before);
    bf16.run(i, i + 1);
    sums.restore(absoluteValues(before));
    sums.run(i, i + 1);
    const std::vector<float> r = fp32.read(op.out[0]), b = bf16.read(op.out[0]);
    const double u = std::ldexp(1.0, -24);
    EXPECT_TRUE(withinBound(describeOp(plan, i), b, r, sums.read(op.out[0]),
                            std::ldexp(1.0, -7) + std::ldexp(1.0, -16) + 2 * u, 1e-30, worst));
    EXPECT_NE(b, r) << describeOp(plan, i) << ": rounding the factors to bf16 changed nothing";
  }
  return products;
}

TEST(Bf16, ReferenceIsTheFp32ReferenceWithinTheRoundingBound) {
  double worst = 0;
  // Two layers: dense and weight gradient each, the input gradient of the second.
  EXPECT_EQ(bf16ReferenceIsWithinTheRoundingBound(
                {"odd", "input I [37]; hidden H [29] from I all; output O [5] from H all;", {}}, worst),
            5);
  // Two convolutions of input layers: output and weight gradient each (no input gradient); the
  // output layer's two bundles from them: output, weight and input gradient each.
  EXPECT_EQ(bf16ReferenceIsWithinTheRoundingBound({"conv2d", kConv2dNet, {}}, worst), 10);
  ::testing::Test::RecordProperty("worst_ratio", std::to_string(worst));
}

} // namespace
} // namespace netc::numeric
