// IndexTableTest.cpp -- the gather/scatter/window/centre tables of the Plan
// (the whole geometry contract between the compiler and every backend)
// against coordinates worked out by hand from docs/language.md §11-§14:
// along dimension d, kernel position j covers source coordinate
// offset + j·S + c for cell c < K (offset = ⌊r/2⌋ unpadded, −(K−1)/2 with
// Padding, −LowerPad with pads; outside [0, I) a dummy, -1); the destination
// coordinate of map m_d is m_d·N[d] + j_d (map-major, row-major over the
// destination's natural shape); kernel (m, u) -- map m, position u along the
// unshared dimensions -- owns weights row m·groups + u and kernel bias
// m·groups + u (one checkpoint row, bias first: D4); a
// response norm scales the central cell c = (K−1)/2 of its window (§6.3,
// §6.5). Literal entries are spelled out for the seed network (examples/
// mnist.net) and padded cases; whole tables are also compared with an
// independent implementation of those formulas written here, and one kernel
// of the seed network's Conv2 is checked through both kernel tables by
// running the op.
#include "HandGeometry.h"
#include "PlanHarness.h"

namespace netc::numeric {
namespace {

/// The forward op of bundle `bundle` of layer `layerName`.
const plan::Op &forwardOp(const Compiled &c, std::string_view layerName, int bundle = 0) {
  const int layer = c.network().findLayer(layerName);
  EXPECT_GE(layer, 0) << layerName;
  for (size_t i = 0; i < c.plan.forwardEnd; ++i)
    if (c.plan.ops[i].layer == layer && c.plan.ops[i].bundle == bundle)
      return c.plan.ops[i];
  ADD_FAILURE() << "no forward op for " << layerName;
  return c.plan.ops.front();
}

const std::vector<int32_t> &table(const Compiled &c, int buffer) {
  EXPECT_EQ(c.plan.buffers[static_cast<size_t>(buffer)].role, plan::BufferRole::Table);
  return c.plan.buffers[static_cast<size_t>(buffer)].table;
}

struct ConvTables {
  const plan::ConvAttrs &attrs;
  const std::vector<int32_t> &gather, &scatter;
  int32_t g(int64_t u, int64_t p, int64_t k) const {
    return gather.at(static_cast<size_t>((u * attrs.positions + p) * attrs.window + k));
  }
  int32_t s(int64_t m, int64_t u, int64_t p) const {
    return scatter.at(static_cast<size_t>((m * attrs.groups + u) * attrs.positions + p));
  }
};
ConvTables convTables(const Compiled &c, std::string_view layer, int bundle = 0) {
  const plan::Op &op = forwardOp(c, layer, bundle);
  EXPECT_EQ(op.kind, plan::OpKind::Convolution);
  return {op.get<plan::ConvAttrs>(), table(c, op.in[2]), table(c, op.in[3])};
}

/// Compares a convolution's tables with the formulas.
void expectConvolutionMatches(const Compiled &c, std::string_view layer, const std::vector<Dim> &dims,
                              int bundle = 0) {
  SCOPED_TRACE(std::string(layer));
  ConvTables t = convTables(c, layer, bundle);
  ExpectedConvolution e = expectedConvolution(dims);
  EXPECT_EQ(t.attrs.groups, e.groups);
  EXPECT_EQ(t.attrs.positions, e.positions);
  EXPECT_EQ(t.attrs.maps, e.maps);
  EXPECT_EQ(t.attrs.window, e.window);
  EXPECT_EQ(t.gather, e.gather);
  EXPECT_EQ(t.scatter, e.scatter);
}

void expectWindowMatches(const Compiled &c, std::string_view layer, const std::vector<Dim> &dims) {
  SCOPED_TRACE(std::string(layer));
  const plan::Op &op = forwardOp(c, layer);
  ExpectedWindow e = expectedWindow(dims);
  EXPECT_EQ(table(c, op.in[1]), e.window);
  if (op.kind == plan::OpKind::ResponseNorm) {
    EXPECT_EQ(table(c, op.in[2]), e.centre);
  }
}

Compiled seedNetwork() {
  Compiled c;
  c.compilation =
      compileSource(SourceFile("mnist.net", readFile(sourcePath("examples/mnist.net"))), {}, Stage::Passes);
  EXPECT_EQ(c.compilation->diags.errorCount(), 0u) << describeDiagnostics(*c.compilation);
  auto p = plan::buildPlan(c.compilation->network, {true, {}, false});
  EXPECT_TRUE(p.ok());
  if (p.ok())
    c.plan = std::move(*p);
  return c;
}

// ---- the seed network -----------------------------------------------------------

TEST(IndexTables, SeedConv1ByHand) {
  // Conv1: InputShape [28, 28], KernelShape [4, 4], Stride [2, 2], MapCount 5.
  // N = (28 − 4)/2 + 1 = 13, r = 0: offset 0. One group, 169 positions.
  Compiled c = seedNetwork();
  ConvTables t = convTables(c, "Conv1");
  EXPECT_EQ(t.attrs.kernel, ir::KernelKind::Convolution);
  EXPECT_EQ(t.attrs.groups, 1);
  EXPECT_EQ(t.attrs.positions, 169);
  EXPECT_EQ(t.attrs.window, 16);
  EXPECT_EQ(t.attrs.maps, 5);
  EXPECT_EQ(t.g(0, 0, 0), 0);                     // j = (0,0), c = (0,0): pixel (0,0)
  EXPECT_EQ(t.g(0, 0, 5), 1 * 28 + 1);            // c = (1,1)
  EXPECT_EQ(t.g(0, 14, 0), 2 * 28 + 2);           // p = 14: j = (1,1) -> (2,2)
  EXPECT_EQ(t.g(0, 13 * 5 + 7, 6), 11 * 28 + 16); // j = (5,7), c = (1,2) -> (11,16)
  EXPECT_EQ(t.g(0, 168, 15), 27 * 28 + 27);       // j = (12,12), c = (3,3) -> (27,27)
  EXPECT_EQ(t.s(0, 0, 0), 0);                     // map 0 at (0,0)
  EXPECT_EQ(t.s(1, 0, 0), 13 * 13);               // map 1: destination (13 + 0, 0) in [65, 13]
  EXPECT_EQ(t.s(3, 0, 13 * 2 + 9), (3 * 13 + 2) * 13 + 9);
  EXPECT_EQ(t.s(4, 0, 168), 845 - 1); // the last node
  expectConvolutionMatches(c, "Conv1", {{28, 4, 2, false, 0, 0, true, 5}, {28, 4, 2}});
}

TEST(IndexTables, SeedConv2ByHand) {
  // Conv2: InputShape [5, 13, 13], KernelShape [1, 5, 5], Stride [1, 2, 2],
  // Sharing [F, T, T], MapCount 10: grouped, 5 groups (one per input map) x
  // 10 maps; N = [5, 5, 5]; offsets 0 ((13 − 5) % 2 = 0).
  Compiled c = seedNetwork();
  ConvTables t = convTables(c, "Conv2");
  EXPECT_EQ(t.attrs.kernel, ir::KernelKind::GroupedConvolution);
  EXPECT_EQ(t.attrs.groups, 5);
  EXPECT_EQ(t.attrs.positions, 25);
  EXPECT_EQ(t.attrs.window, 25);
  EXPECT_EQ(t.attrs.maps, 10);
  // u = 3 (input map 3), p = 7 (j1 = 1, j2 = 2), k = 12 (c1 = 2, c2 = 2):
  // source (3, 2·1 + 2, 2·2 + 2) = (3, 4, 6) -> 3·169 + 4·13 + 6 = 565.
  EXPECT_EQ(t.g(3, 7, 12), 565);
  EXPECT_EQ(t.g(0, 0, 0), 0);
  EXPECT_EQ(t.g(4, 24, 24), 4 * 169 + 12 * 13 + 12); // the last cell of the last window
  // Map m = 2 of group u = 3 at p = 7: destination (2·5 + 3, 1, 2) in [50, 5, 5] = 332.
  EXPECT_EQ(t.s(2, 3, 7), 332);
  EXPECT_EQ(t.s(9, 4, 24), 1250 - 1);
  expectConvolutionMatches(c, "Conv2", {{5, 1, 1, false, 0, 0, false, 10}, {13, 5, 2}, {13, 5, 2}});
  // D4: weights [kernels = 50, 25] and kernel biases [50], kernel (m, u) at
  // row m·5 + u (one checkpoint tensor [50, 1 + 25], bias first).
  const plan::Op &op = forwardOp(c, "Conv2");
  for (const plan::Parameter &p : c.plan.parameters) {
    if (p.buffer == op.in[1]) {
      EXPECT_EQ(p.shape, (std::vector<int64_t>{50, 25}));
      ASSERT_GE(p.kernelBias, 0);
      EXPECT_EQ(c.plan.parameters[static_cast<size_t>(p.kernelBias)].buffer, op.in[4]);
      EXPECT_EQ(c.plan.parameters[static_cast<size_t>(p.kernelBias)].shape, (std::vector<int64_t>{50}));
    }
  }
}

/// Runs the seed network's Conv2 op alone with one kernel's weights set
/// (kernel (m = 2, u = 3): row 13, bias 0.5, cell k = 12 weight 2): exactly
/// the nodes scatter[2][3][·] are non-zero, each 0.5 + 2·x[gather[3][·][12]],
/// through the fast and the reference kernels.
TEST(IndexTables, SeedConv2KernelRowAndItsBias) {
  Compiled c = seedNetwork();
  const plan::Plan &plan = c.plan;
  size_t opIndex = 0;
  const int layer = c.network().findLayer("Conv2");
  while (!(plan.ops[opIndex].layer == layer && plan.ops[opIndex].kind == plan::OpKind::Convolution))
    ++opIndex;
  const plan::Op &op = plan.ops[opIndex];
  ConvTables t = convTables(c, "Conv2");
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference" : "fast");
    const int64_t batch = 2;
    Machine m(plan, batch, {1, reference, {}});
    State state = randomState(plan, batch, 5);
    for (auto &buffer : state)
      std::fill(buffer.begin(), buffer.end(), 0.0f);
    std::vector<float> &x = state[static_cast<size_t>(op.in[0])];
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i % 845) / 100.0f + (i >= 845 ? 20.0f : 0.0f); // sample 1 differs
    // Kernel row 13 (m = 2, u = 3): its bias and weight 12.
    state[static_cast<size_t>(op.in[4])][13] = 0.5f;
    state[static_cast<size_t>(op.in[1])][13 * 25 + 12] = 2.0f;
    m.restore(state);
    m.run(opIndex, opIndex + 1);
    const std::vector<float> y = m.read(op.out[0]);
    std::vector<float> expected(y.size(), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t p = 0; p < 25; ++p)
        expected[static_cast<size_t>(b * 1250 + t.s(2, 3, p))] =
            0.5f + 2.0f * x[static_cast<size_t>(b * 845 + t.g(3, p, 12))];
    EXPECT_TRUE(valuesClose("Conv2 output", y, expected, {1e-6, 1e-7}));
    // Node 332 (p = 7) reads source 565.
    EXPECT_FLOAT_EQ(y[332], 0.5f + 2.0f * x[565]);
  }
}

// ---- padded and uncovered cases ---------------------------------------------------

TEST(IndexTables, PaddingTrueMarksDummiesAtBothEnds) {
  // 1-D, I = 7, K = 5, S = 2, Padding: N = (7 − 1)/2 + 1 = 4, low pad c = 2.
  // Window j covers [2j − 2, 2j + 2]: j = 0 -> cells 0, 1 dummy; j = 3 -> 4..8, cells 3, 4 dummy.
  Compiled c = compileAndPlan(R"(input X [7];
hidden H [4] from X convolve { InputShape = [7]; KernelShape = [5]; Stride = [2]; Padding = true; }
output O [2] from H all;
)");
  ConvTables t = convTables(c, "H");
  EXPECT_EQ((std::vector<int32_t>(t.gather.begin(), t.gather.begin() + 5)),
            (std::vector<int32_t>{-1, -1, 0, 1, 2}));
  EXPECT_EQ((std::vector<int32_t>(t.gather.begin() + 15, t.gather.end())),
            (std::vector<int32_t>{4, 5, 6, -1, -1}));
  EXPECT_EQ(t.scatter, (std::vector<int32_t>{0, 1, 2, 3}));
  expectConvolutionMatches(c, "H", {{7, 5, 2, true}});
}

TEST(IndexTables, UpperPadAndRemainderOffsets) {
  // The blog network's C1: I = 28, K = 5, S = 2, UpperPad 1: N = (28 + 1 − 5)/2 + 1 = 13;
  // window 12 covers 24..28, so its last cell (28) is a dummy on each dimension.
  // D7: I = 11, K = 3, S = 3 -> N = 3, r = 2, offset 1 (windows 1..3, 4..6, 7..9).
  Compiled c = compileAndPlan(R"(input Picture [28, 28];
hidden C1 [5 * 13^2] from Picture convolve {
  InputShape = [28, 28]; UpperPad = [1, 1]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5; }
input Row [11];
hidden R [3] from Row convolve { InputShape = [11]; KernelShape = [3]; Stride = [3]; }
output O [2] { from C1 all; from R all; }
)");
  ConvTables t = convTables(c, "C1");
  EXPECT_EQ(t.g(0, 12 * 13 + 12, 0), 24 * 28 + 24);
  EXPECT_EQ(t.g(0, 12 * 13 + 12, 3), 24 * 28 + 27);
  EXPECT_EQ(t.g(0, 12 * 13 + 12, 4), -1);  // column 28
  EXPECT_EQ(t.g(0, 12 * 13 + 12, 20), -1); // row 28
  EXPECT_EQ(t.g(0, 12 * 13 + 11, 4), 24 * 28 + 26);
  expectConvolutionMatches(c, "C1", {{28, 5, 2, false, 0, 1, true, 5}, {28, 5, 2, false, 0, 1}});
  ConvTables r = convTables(c, "R");
  EXPECT_EQ(r.gather, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(IndexTables, LowerPadTupleMapsAndLocallyConnected) {
  // Multi-channel with LowerPad/UpperPad and a MapCount tuple along dims 0 and 2,
  // and a locally-connected bundle: checked whole against the formulas.
  Compiled c = compileAndPlan(R"(input Img [2, 6, 7];
hidden C [2, 3, 8] from Img convolve {
  InputShape = [2, 6, 7]; KernelShape = [2, 3, 4]; Stride = [1, 2, 2];
  LowerPad = [0, 1, 1]; UpperPad = [0, 1, 2]; MapCount = [2, 1, 2]; }
hidden L [12] from C convolve {
  InputShape = [2, 3, 8]; KernelShape = [1, 2, 3]; Stride = [1, 1, 3]; Padding = [false, true, false];
  Sharing = [true, false, true]; }
output O [2] { from C all; from L all; }
)");
  // C: dim 1: (6 + 2 − 3)/2 + 1 = 3, window 0 covers −1..1; dim 2: (7 + 3 − 4)/2 + 1 = 4.
  ConvTables t = convTables(c, "C");
  EXPECT_EQ(t.g(0, 0, 0), -1);                     // (0, −1, −1)
  EXPECT_EQ(t.g(0, 0, 4 + 1), 0 * 42 + 0 * 7 + 0); // cell (0, 1, 1) -> source (0, 0, 0)
  // Destination of map (m0, m2) = (1, 1) at j = (0, 2, 3): (1·1 + 0, 2, 1·4 + 3) in [2, 3, 8] = 24 + 16 + 7.
  EXPECT_EQ(t.s(3, 0, 2 * 4 + 3), 47);
  expectConvolutionMatches(
      c, "C", {{2, 2, 1, false, 0, 0, true, 2}, {6, 3, 2, false, 1, 1}, {7, 4, 2, false, 1, 2, true, 2}});
  expectConvolutionMatches(c, "L", {{2, 1, 1}, {3, 2, 1, true, 0, 0, false}, {8, 3, 3}});
  EXPECT_EQ(convTables(c, "L").attrs.kernel, ir::KernelKind::LocallyConnected);
}

TEST(IndexTables, PaddedPoolWindowsSkipDummies) {
  // The Galaxies pool1: InputShape [64, 23, 23], KernelShape [1, 2, 2], Stride [1, 2, 2], Padding:
  // N = (23 − 1)/2 + 1 = 12, low pad (2 − 1)/2 = 0, so window 11 covers 22..23 and 23 is a dummy.
  Compiled c = compileAndPlan(R"(input X [64, 23, 23];
hidden P [64, 12, 12] from X max pool {
  InputShape = [64, 23, 23]; KernelShape = [1, 2, 2]; Stride = [1, 2, 2]; Padding = [true, true, true]; }
hidden Q [64, 12, 12] from X mean pool {
  InputShape = [64, 23, 23]; KernelShape = [1, 3, 3]; Stride = [1, 2, 2]; Padding = [false, true, true]; }
output O [2] { from P all; from Q all; }
)");
  const plan::Op &op = forwardOp(c, "P");
  const std::vector<int32_t> &w = table(c, op.in[1]);
  auto window = [&](int64_t m, int64_t j1, int64_t j2) {
    const size_t o = static_cast<size_t>((m * 12 + j1) * 12 + j2);
    return std::vector<int32_t>(w.begin() + static_cast<long>(o * 4),
                                w.begin() + static_cast<long>(o * 4 + 4));
  };
  EXPECT_EQ(window(0, 0, 0), (std::vector<int32_t>{0, 1, 23, 24}));
  EXPECT_EQ(window(5, 11, 3), (std::vector<int32_t>{5 * 529 + 22 * 23 + 6, 5 * 529 + 22 * 23 + 7, -1, -1}));
  EXPECT_EQ(window(63, 11, 11), (std::vector<int32_t>{63 * 529 + 22 * 23 + 22, -1, -1, -1}));
  expectWindowMatches(c, "P", {{64, 1, 1, true}, {23, 2, 2, true}, {23, 2, 2, true}});
  // K = 3 with padding: low pad 1, window 0 covers −1..1 on dims 1 and 2.
  const std::vector<int32_t> &q = table(c, forwardOp(c, "Q").in[1]);
  EXPECT_EQ((std::vector<int32_t>(q.begin(), q.begin() + 9)),
            (std::vector<int32_t>{-1, -1, -1, -1, 0, 1, -1, 23, 24}));
  expectWindowMatches(c, "Q", {{64, 1, 1}, {23, 3, 2, true}, {23, 3, 2, true}});
}

TEST(IndexTables, ResponseNormCentreIsTheCentralCell) {
  // §6.3: the central cell is c = (K − 1)/2 (K even: K/2 − 1); §6.5: the norm
  // scales its window's central source node. The RMLtools rnorm1 (K = 4,
  // S = 2, unpadded over [48, 24, 24]): window j covers 2j..2j + 3 and its
  // centre is 2j + 1. An even kernel with Padding (K = 2, I = 6: low pad 0)
  // keeps every centre on a real node: window 5 covers 5..6 and its centre is 5.
  Compiled c = compileAndPlan(R"(input X [48, 24, 24];
hidden N [48, 11, 11] from X response norm {
  InputShape = [48, 24, 24]; KernelShape = [1, 4, 4]; Stride = [1, 2, 2]; Alpha = 0.0001; Beta = 0.75; }
input Y [3, 6, 6];
hidden E [3, 6, 6] from Y response norm {
  InputShape = [3, 6, 6]; KernelShape = [1, 2, 2]; Padding = [false, true, true]; Alpha = 0.5; Beta = 0.5; }
output O [2] { from N all; from E all; }
)");
  const std::vector<int32_t> &centre = table(c, forwardOp(c, "N").in[2]);
  EXPECT_EQ(centre.at(0), 1 * 24 + 1);
  EXPECT_EQ(centre.at(static_cast<size_t>((7 * 11 + 3) * 11 + 10)), 7 * 576 + 7 * 24 + 21);
  expectWindowMatches(c, "N", {{48, 1, 1}, {24, 4, 2}, {24, 4, 2}});
  const std::vector<int32_t> &padded = table(c, forwardOp(c, "E").in[2]);
  for (size_t o = 0; o < padded.size(); ++o)
    EXPECT_EQ(padded[o], static_cast<int32_t>(o)) << "output " << o << " should scale its own source node";
  expectWindowMatches(c, "E", {{3, 1, 1}, {6, 2, 1, true}, {6, 2, 1, true}});
}

TEST(IndexTables, WhereBundleCsrAndTranspose) {
  // hidden ByRow [10, 12] from Pixels [10, 20] where s[0] == d[0] (the guide's
  // example): destination (r, c) takes the 20 sources of row r, in source
  // order; edge e of destination d is weights[e] (D4).
  Compiled c = compileAndPlan(R"(input Pixels [10, 20];
hidden ByRow [10, 12] from Pixels where (s, d) => s[0] == d[0];
hidden Odd [3] from ByRow where (s, d) => (s[1] + d) % 2 == 1;
output O [2] from Odd all;
)");
  const plan::Op &op = forwardOp(c, "ByRow");
  const std::vector<int32_t> &rowStart = table(c, op.in[2]), &column = table(c, op.in[3]);
  ASSERT_EQ(rowStart.size(), 121u);
  EXPECT_EQ(rowStart[5], 100);
  EXPECT_EQ(column[100], 0);          // destination (0, 5): sources 0..19
  EXPECT_EQ(column[12 * 20 + 3], 23); // destination (1, 0), fourth edge: source (1, 3)
  EXPECT_EQ(rowStart.back(), 2400);
  // The transpose lists, per source, the destinations and edge numbers.
  const std::vector<int32_t> &colStart = table(c, op.in[4]), &row = table(c, op.in[5]),
                             &edge = table(c, op.in[6]);
  EXPECT_EQ(colStart[1] - colStart[0], 12);
  for (int32_t t = colStart[23]; t < colStart[24]; ++t) {
    EXPECT_EQ(column[static_cast<size_t>(edge[static_cast<size_t>(t)])], 23);
    const int32_t d = row[static_cast<size_t>(t)];
    EXPECT_GE(edge[static_cast<size_t>(t)], rowStart[static_cast<size_t>(d)]);
    EXPECT_LT(edge[static_cast<size_t>(t)], rowStart[static_cast<size_t>(d) + 1]);
    EXPECT_EQ(d / 12, 1);
  }
  // Odd: destination d takes sources (r, c) with c + d odd.
  const plan::Op &odd = forwardOp(c, "Odd");
  const std::vector<int32_t> &oddRows = table(c, odd.in[2]), &oddColumns = table(c, odd.in[3]);
  EXPECT_EQ(oddRows, (std::vector<int32_t>{0, 60, 120, 180}));
  EXPECT_EQ(oddColumns[0], 1);
  EXPECT_EQ(oddColumns[60], 0);
}

} // namespace
} // namespace netc::numeric
