// GeometryTest.cpp -- convolve, pool and response-norm geometry per docs/language.md
// §11-§13, read from ir::Bundle::geometry after all passes: the
// unpadded count with its uncovered remainder split floor(r/2) low, Padding
// = true (per dimension and broadcast from one bool), LowerPad/UpperPad and
// their bounds, sharing patterns and kernel counts, MapCount broadcast and
// tuples, output counts, the worked numbers of §11, and the located errors
// for bad kernels, strides, arities, pad conflicts and count mismatches.
#include "TestSupport.h"

namespace netc::unittest {
namespace {

/// `input X <src>; hidden H <dst> from X <kind> { <attrs> } output O [1] from H all;`
std::unique_ptr<Compilation> bundleNet(const std::string &src, const std::string &dst,
                                       const std::string &kind, const std::string &attrs) {
  return compileText("input X " + src + ";\nhidden H " + dst + " from X " + kind + " {\n  " + attrs +
                     "\n}\noutput O [1] from H all;\n");
}

/// The (only) bundle of layer H.
const ir::Bundle &bundleOfH(const Compilation &c) {
  const ir::Layer &h = layerNamed(c, "H");
  EXPECT_EQ(h.bundles.size(), 1u);
  return h.bundles.at(0);
}

/// One dimension in a compact, comparable form.
std::string dimText(const ir::DimGeometry &d) {
  return fmt::format("I={} K={} S={} N={} offset={} pad={}/{}{} maps={}{}", d.input, d.kernel, d.stride,
                     d.count, d.offset, d.lowerPad, d.upperPad, d.padded ? " padded" : "", d.maps,
                     d.sharing ? "" : " unshared");
}

std::vector<std::string> dimsText(const ir::Bundle &b) {
  std::vector<std::string> out;
  for (const ir::DimGeometry &d : b.geometry.dims)
    out.push_back(dimText(d));
  return out;
}

using Dims = std::vector<std::string>;

// ---- D7: no padding -------------------------------------------------------------

TEST(Geometry, UnpaddedExactFit) {
  auto c = bundleNet("[28, 28]", "[13, 13]", "convolve",
                     "InputShape = [28, 28]; KernelShape = [4, 4]; Stride = [2, 2];");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(dimsText(b),
            (Dims{"I=28 K=4 S=2 N=13 offset=0 pad=0/0 maps=1", "I=28 K=4 S=2 N=13 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(b.geometry.inputNodes, 784);
  EXPECT_EQ(b.geometry.outputNodes, 169);
  EXPECT_EQ(b.geometry.kernelSize, 16);
}

TEST(Geometry, UnpaddedRemainderOneLeavesTheHighNodeOut) {
  // (28 - 5) / 2 + 1 = 12; r = 1: floor(1/2) = 0 nodes skipped at the low end.
  auto c = bundleNet("[28]", "[12]", "convolve", "InputShape = [28]; KernelShape = [5]; Stride = [2];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=28 K=5 S=2 N=12 offset=0 pad=0/0 maps=1"}));
}

TEST(Geometry, UnpaddedRemainderTwoSkipsOneLowNode) {
  // (11 - 3) / 3 + 1 = 3; r = 8 % 3 = 2: offset 1.
  auto c = bundleNet("[11]", "[3]", "convolve", "InputShape = [11]; KernelShape = [3]; Stride = [3];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=11 K=3 S=3 N=3 offset=1 pad=0/0 maps=1"}));
}

TEST(Geometry, UnpaddedRemainderThreeSkipsOneLowNode) {
  // (15 - 4) / 4 + 1 = 3; r = 11 % 4 = 3: offset floor(3/2) = 1, two left out at the high end.
  auto c = bundleNet("[15]", "[3]", "convolve", "InputShape = [15]; KernelShape = [4]; Stride = [4];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=15 K=4 S=4 N=3 offset=1 pad=0/0 maps=1"}));
}

TEST(Geometry, UnpaddedRemainderFourSkipsTwoLowNodes) {
  // (14 - 5) / 5 + 1 = 2; r = 9 % 5 = 4: offset 2.
  auto c = bundleNet("[2, 7]", "[2]", "max pool", "InputShape = [14]; KernelShape = [5]; Stride = [5];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=14 K=5 S=5 N=2 offset=2 pad=0/0 maps=1"}));
}

TEST(Geometry, UnpaddedPerDimensionRemainders) {
  auto c = bundleNet("[11, 15]", "[9]", "convolve",
                     "InputShape = [11, 15]; KernelShape = [3, 4]; Stride = [3, 4];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)),
            (Dims{"I=11 K=3 S=3 N=3 offset=1 pad=0/0 maps=1", "I=15 K=4 S=4 N=3 offset=1 pad=0/0 maps=1"}));
}

TEST(Geometry, KernelEqualToInputGivesOneApplication) {
  auto c =
      bundleNet("[7, 3]", "[1]", "convolve", "InputShape = [7, 3]; KernelShape = [7, 3]; Stride = [7, 3];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)),
            (Dims{"I=7 K=7 S=7 N=1 offset=0 pad=0/0 maps=1", "I=3 K=3 S=3 N=1 offset=0 pad=0/0 maps=1"}));
}

// ---- D8: Padding = true -----------------------------------------------------------

TEST(Geometry, PaddedOddKernel) {
  // N = (28 - 1) / 2 + 1 = 14; low pad (5 - 1) / 2 = 2; the last kernel ends at 13*2 - 2 + 4 = 28.
  auto c = bundleNet("[28]", "[14]", "convolve",
                     "InputShape = [28]; KernelShape = [5]; Stride = [2]; Padding = [true];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=28 K=5 S=2 N=14 offset=-2 pad=2/1 padded maps=1"}));
}

TEST(Geometry, PaddedEvenKernel) {
  // N = (13 - 1) / 2 + 1 = 7; low pad (4 - 1) / 2 = 1; last kernel covers [11, 14].
  auto c = bundleNet("[13]", "[7]", "convolve",
                     "InputShape = [13]; KernelShape = [4]; Stride = [2]; Padding = [true];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=13 K=4 S=2 N=7 offset=-1 pad=1/2 padded maps=1"}));
}

TEST(Geometry, PaddedStrideOneKeepsTheSize) {
  auto c = bundleNet("[5, 5]", "[5, 5]", "convolve",
                     "InputShape = [5, 5]; KernelShape = [3, 1]; Padding = [true, true];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=5 K=3 S=1 N=5 offset=-1 pad=1/1 padded maps=1",
                                           "I=5 K=1 S=1 N=5 offset=0 pad=0/0 padded maps=1"}));
}

TEST(Geometry, PaddingPerDimension) {
  // Dim 0 padded: (12 - 1) / 3 + 1 = 4; dim 1 not: (12 - 3) / 3 + 1 = 4.
  auto c =
      bundleNet("[12, 12]", "[16]", "convolve",
                "InputShape = [12, 12]; KernelShape = [3, 3]; Stride = [3, 3]; Padding = [true, false];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=12 K=3 S=3 N=4 offset=-1 pad=1/0 padded maps=1",
                                           "I=12 K=3 S=3 N=4 offset=0 pad=0/0 maps=1"}));
}

TEST(Geometry, SingleBoolPaddingAppliesToEveryDimension) {
  // §11.6: RN1 with Padding = true keeps [5, 12, 12].
  auto c = bundleNet(
      "[5, 12, 12]", "[5, 12, 12]", "response norm",
      "InputShape = [5, 12, 12]; KernelShape = [1, 3, 3]; Alpha = 0.001; Beta = 0.75; Padding = true;");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=5 K=1 S=1 N=5 offset=0 pad=0/0 padded maps=1",
                                           "I=12 K=3 S=1 N=12 offset=-1 pad=1/1 padded maps=1",
                                           "I=12 K=3 S=1 N=12 offset=-1 pad=1/1 padded maps=1"}));
}

TEST(Geometry, SingleBoolPaddingFalseLeavesEveryDimensionUnpadded) {
  auto c = bundleNet(
      "[5, 12, 12]", "[5, 10, 10]", "response norm",
      "InputShape = [5, 12, 12]; KernelShape = [1, 3, 3]; Alpha = 0.001; Beta = 0.75; Padding = false;");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)),
            (Dims{"I=5 K=1 S=1 N=5 offset=0 pad=0/0 maps=1", "I=12 K=3 S=1 N=10 offset=0 pad=0/0 maps=1",
                  "I=12 K=3 S=1 N=10 offset=0 pad=0/0 maps=1"}));
}

TEST(Geometry, PaddedWorkedCheckOfTheGuide) {
  // §6.3: I=28, K=5, S=2: UpperPad = 1 gives 13; Padding = true gives 14.
  auto up = bundleNet("[28, 28]", "[13, 13]", "convolve",
                      "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; UpperPad = [1, 1];");
  EXPECT_CLEAN(up);
  auto padded = bundleNet("[28, 28]", "[14, 14]", "convolve",
                          "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; Padding = true;");
  EXPECT_CLEAN(padded);
  EXPECT_EQ(bundleOfH(*up).geometry.dims.at(0).count, 13);
  EXPECT_EQ(bundleOfH(*padded).geometry.dims.at(0).count, 14);
}

// ---- D8: LowerPad / UpperPad --------------------------------------------------------

TEST(Geometry, LowerAndUpperPad) {
  // N = (12 + 1 + 2 - 5) / 2 + 1 = 6; kernel 0 starts at -1.
  auto c = bundleNet("[12]", "[6]", "convolve",
                     "InputShape = [12]; KernelShape = [5]; Stride = [2]; LowerPad = [1]; UpperPad = [2];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=12 K=5 S=2 N=6 offset=-1 pad=1/2 maps=1"}));
}

TEST(Geometry, UpperPadOnly) {
  // §11.5 (b): (28 + 1 - 5) / 2 + 1 = 13.
  auto c = bundleNet(
      "[28, 28]", "[5 * 13^2]", "convolve",
      "InputShape = [28, 28]; UpperPad = [1, 1]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;");
  EXPECT_CLEAN(c);
  EXPECT_EQ(dimsText(bundleOfH(*c)),
            (Dims{"I=28 K=5 S=2 N=13 offset=0 pad=0/1 maps=5", "I=28 K=5 S=2 N=13 offset=0 pad=0/1 maps=1"}));
  EXPECT_EQ(bundleOfH(*c).geometry.outputNodes, 845);
}

TEST(Geometry, LowerPadBoundIsTwoLLessThanK) {
  // K = 5: L = 2 = (K - 1) / 2 is allowed; K = 4: L = 1 is allowed.
  auto ok = bundleNet("[10, 10]", "[8, 8]", "convolve",
                      "InputShape = [10, 10]; KernelShape = [5, 4]; LowerPad = [2, 1];");
  EXPECT_CLEAN(ok);
  EXPECT_EQ(dimsText(bundleOfH(*ok)),
            (Dims{"I=10 K=5 S=1 N=8 offset=-2 pad=2/0 maps=1", "I=10 K=4 S=1 N=8 offset=-1 pad=1/0 maps=1"}));

  auto odd = bundleNet("[10, 10]", "[9, 7]", "convolve",
                       "InputShape = [10, 10]; KernelShape = [5, 4]; LowerPad = [3, 0];");
  EXPECT_CODES(odd, "NS0411");
  const Diagnostic *d = findDiagnostic(*odd, "NS0411");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "LowerPad[0] = 3 is out of range for KernelShape[0] = 5: need 0 <= 2*LowerPad < KernelShape");
  EXPECT_EQ(textOf(*odd, d->range), "LowerPad = [3, 0];");
  EXPECT_EQ(position(*odd, d->range), "3:48-3:66");

  auto even = bundleNet("[10, 10]", "[6, 9]", "convolve",
                        "InputShape = [10, 10]; KernelShape = [5, 4]; LowerPad = [0, 2];");
  EXPECT_CODES(even, "NS0411");
  d = findDiagnostic(*even, "NS0411");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "LowerPad[1] = 2 is out of range for KernelShape[1] = 4: need 0 <= 2*LowerPad < KernelShape");

  auto negative =
      bundleNet("[10]", "[6]", "convolve", "InputShape = [10]; KernelShape = [5]; LowerPad = [0 - 1];");
  EXPECT_CODES(negative, "NS0411");
}

TEST(Geometry, UpperPadBoundIsTwoUAtMostK) {
  // K = 4: U = 2 = K / 2 is allowed; K = 5: U = 2 is allowed.
  auto ok = bundleNet("[10, 10]", "[9, 8]", "convolve",
                      "InputShape = [10, 10]; KernelShape = [4, 5]; UpperPad = [2, 2];");
  EXPECT_CLEAN(ok);
  EXPECT_EQ(dimsText(bundleOfH(*ok)),
            (Dims{"I=10 K=4 S=1 N=9 offset=0 pad=0/2 maps=1", "I=10 K=5 S=1 N=8 offset=0 pad=0/2 maps=1"}));

  auto even = bundleNet("[10, 10]", "[10, 6]", "convolve",
                        "InputShape = [10, 10]; KernelShape = [4, 5]; UpperPad = [3, 0];");
  EXPECT_CODES(even, "NS0412");
  const Diagnostic *d = findDiagnostic(*even, "NS0412");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "UpperPad[0] = 3 is out of range for KernelShape[0] = 4: need 0 <= 2*UpperPad <= KernelShape");
  EXPECT_EQ(textOf(*even, d->range), "UpperPad = [3, 0];");

  auto odd = bundleNet("[10, 10]", "[7, 9]", "convolve",
                       "InputShape = [10, 10]; KernelShape = [4, 5]; UpperPad = [0, 3];");
  EXPECT_CODES(odd, "NS0412");
}

TEST(Geometry, PaddingConflictsWithLowerPadAndUpperPad) {
  auto c = bundleNet("[28]", "[14]", "convolve",
                     "InputShape = [28]; KernelShape = [5]; Stride = [2]; Padding = true; LowerPad = [1];");
  EXPECT_CODES(c, "NS0410");
  const Diagnostic *d = findDiagnostic(*c, "NS0410");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "'Padding' cannot be combined with 'LowerPad'");
  EXPECT_EQ(textOf(*c, d->range), "LowerPad = [1];");
  EXPECT_EQ(position(*c, d->range), "3:71-3:86");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(textOf(*c, d->notes[0].range), "Padding = true;");
  EXPECT_EQ(d->notes[0].message, "'Padding' is given here");

  auto both =
      bundleNet("[28]", "[14]", "convolve",
                "InputShape = [28]; KernelShape = [5]; Padding = [true]; UpperPad = [1]; LowerPad = [1];");
  EXPECT_CODES(both, "NS0410", "NS0410");
  ASSERT_EQ(both->diags.diagnostics().size(), 2u);
  EXPECT_EQ(both->diags.diagnostics()[0].message, "'Padding' cannot be combined with 'LowerPad'");
  EXPECT_EQ(both->diags.diagnostics()[1].message, "'Padding' cannot be combined with 'UpperPad'");
}

// ---- sharing, maps and kernels ------------------------------------------------------------

/// §11.1 Conv2 with a given Sharing attribute (empty: none written).
std::unique_ptr<Compilation> conv2With(const std::string &sharing) {
  return bundleNet("[5, 13, 13]", "[50, 5, 5]", "convolve",
                   "InputShape = [5, 13, 13]; KernelShape = [1, 5, 5]; Stride = [1, 2, 2]; MapCount = 10; " +
                       sharing);
}

TEST(Geometry, SharingAllSharedByDefault) {
  auto c = conv2With("");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(b.geometry.kernels, 10);
  EXPECT_EQ(b.params, 10 * 26);
  for (const ir::DimGeometry &d : b.geometry.dims)
    EXPECT_TRUE(d.sharing);
}

TEST(Geometry, SharingUnsharedMapDimension) {
  auto c = conv2With("Sharing = [false, true, true];");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(dimsText(b),
            (Dims{"I=5 K=1 S=1 N=5 offset=0 pad=0/0 maps=10 unshared",
                  "I=13 K=5 S=2 N=5 offset=0 pad=0/0 maps=1", "I=13 K=5 S=2 N=5 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(b.geometry.kernels, 50);
  EXPECT_EQ(b.geometry.kernelSize, 25);
  EXPECT_EQ(b.geometry.maps, 10);
  EXPECT_EQ(b.geometry.outputNodes, 1250);
  EXPECT_EQ(b.params, 1300);
}

TEST(Geometry, SharingAllFalseIsLocallyConnected) {
  auto tuple = conv2With("Sharing = [false, false, false];");
  EXPECT_CLEAN(tuple);
  EXPECT_EQ(bundleOfH(*tuple).geometry.kernels, 10 * 5 * 5 * 5);
  EXPECT_EQ(bundleOfH(*tuple).params, 1250 * 26);
  // A single `false` applies to every dimension.
  auto scalar = conv2With("Sharing = false;");
  EXPECT_CLEAN(scalar);
  EXPECT_EQ(bundleOfH(*scalar).geometry.kernels, 1250);
  for (const ir::DimGeometry &d : bundleOfH(*scalar).geometry.dims)
    EXPECT_FALSE(d.sharing);
}

TEST(Geometry, SharingUnsharedSpatialDimensions) {
  auto c = conv2With("Sharing = [true, false, false];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(bundleOfH(*c).geometry.kernels, 10 * 5 * 5);
  EXPECT_EQ(bundleOfH(*c).params, 250 * 26);
}

TEST(Geometry, MapCountScalarMeansFirstDimension) {
  // N = [4, 4]; MapCount = 3 means [3, 1]: 3*4 * 1*4 = 48.
  auto c =
      bundleNet("[6, 6]", "[12, 4]", "convolve", "InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = 3;");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(dimsText(b),
            (Dims{"I=6 K=3 S=1 N=4 offset=0 pad=0/0 maps=3", "I=6 K=3 S=1 N=4 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(b.geometry.maps, 3);
  EXPECT_EQ(b.geometry.outputNodes, 48);
  EXPECT_EQ(b.geometry.kernels, 3);
}

TEST(Geometry, MapCountTuple) {
  // Output count = Π MapCount[d]·N[d] = (2·4)·(3·4) = 96; the declared rank may differ (D9).
  auto c = bundleNet("[6, 6]", "[96]", "convolve",
                     "InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = [2, 3];");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(dimsText(b),
            (Dims{"I=6 K=3 S=1 N=4 offset=0 pad=0/0 maps=2", "I=6 K=3 S=1 N=4 offset=0 pad=0/0 maps=3"}));
  EXPECT_EQ(b.geometry.maps, 6);
  EXPECT_EQ(b.geometry.outputNodes, 96);
  EXPECT_EQ(b.geometry.kernels, 6);
  EXPECT_EQ(b.params, 6 * 10);
}

TEST(Geometry, MapCountTupleWithUnsharedDimension) {
  // kernels = Π MapCount · Π_{unshared} N = 6 · 4.
  auto c =
      bundleNet("[6, 6]", "[8, 12]", "convolve",
                "InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = [2, 3]; Sharing = [true, false];");
  EXPECT_CLEAN(c);
  EXPECT_EQ(bundleOfH(*c).geometry.kernels, 24);
  EXPECT_EQ(bundleOfH(*c).params, 24 * 10);
}

TEST(Geometry, MapCountErrors) {
  auto arity = bundleNet("[6, 6]", "[96]", "convolve",
                         "InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = [2, 3, 1];");
  EXPECT_CODES(arity, "NS0405");
  auto zero = bundleNet("[6, 6]", "[96]", "convolve",
                        "InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = [2, 0];");
  EXPECT_CODES(zero, "NS0414");
  const Diagnostic *d = findDiagnostic(*zero, "NS0414");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "MapCount[1] = 0 must be positive");
  EXPECT_EQ(textOf(*zero, d->range), "MapCount = [2, 0];");
}

// ---- the worked numbers of §11 ----------------------------------------------------------------

TEST(Geometry, SeedNetworkConvolutions) {
  auto c = compileExample("mnist.net");
  EXPECT_CLEAN(c);
  const ir::Bundle &conv1 = layerNamed(*c, "Conv1").bundles.at(0);
  EXPECT_EQ(dimsText(conv1),
            (Dims{"I=28 K=4 S=2 N=13 offset=0 pad=0/0 maps=5", "I=28 K=4 S=2 N=13 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(conv1.geometry.kernels, 5);
  EXPECT_EQ(conv1.params, 85);
  const ir::Bundle &conv2 = layerNamed(*c, "Conv2").bundles.at(0);
  std::vector<int64_t> counts;
  for (const ir::DimGeometry &d : conv2.geometry.dims)
    counts.push_back(d.count);
  EXPECT_EQ(counts, (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(conv2.geometry.inputNodes, 845);
  EXPECT_EQ(conv2.geometry.outputNodes, 1250);
  EXPECT_EQ(conv2.geometry.kernels, 50);
  EXPECT_EQ(conv2.params, 1300);
}

TEST(Geometry, DigitsConvolution29x29) {
  // §11.4: (29 - 5) / 2 + 1 = 13; 5 kernels of 26 weights.
  auto c = compileExample("digits-29x29.net");
  EXPECT_CLEAN(c);
  const ir::Bundle &conv1 = layerNamed(*c, "Conv1").bundles.at(0);
  EXPECT_EQ(dimsText(conv1),
            (Dims{"I=29 K=5 S=2 N=13 offset=0 pad=0/0 maps=5", "I=29 K=5 S=2 N=13 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(conv1.params, 130);
}

TEST(Geometry, GalaxiesNetwork) {
  // §11.7.
  auto c = compileExample("galaxies.net");
  EXPECT_CLEAN(c);
  const ir::Bundle &conv1 = layerNamed(*c, "conv1").bundles.at(0);
  EXPECT_EQ(dimsText(conv1),
            (Dims{"I=3 K=3 S=1 N=1 offset=0 pad=0/0 maps=64 unshared",
                  "I=50 K=6 S=2 N=23 offset=0 pad=0/0 maps=1", "I=50 K=6 S=2 N=23 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(conv1.geometry.kernels, 64);
  EXPECT_EQ(conv1.params, 64 * 109);

  const ir::Bundle &pool1 = layerNamed(*c, "pool1").bundles.at(0);
  EXPECT_EQ(dimsText(pool1), (Dims{"I=64 K=1 S=1 N=64 offset=0 pad=0/0 padded maps=1",
                                   "I=23 K=2 S=2 N=12 offset=0 pad=0/1 padded maps=1",
                                   "I=23 K=2 S=2 N=12 offset=0 pad=0/1 padded maps=1"}));

  // conv2: LowerPad 1 with K = 5: (12 + 1 - 5) / 2 + 1 = 5; dim 0 unshared gives 64 · 2 kernels.
  const ir::Bundle &conv2 = layerNamed(*c, "conv2").bundles.at(0);
  EXPECT_EQ(dimsText(conv2),
            (Dims{"I=64 K=1 S=1 N=64 offset=0 pad=0/0 maps=2 unshared",
                  "I=12 K=5 S=2 N=5 offset=-1 pad=1/0 maps=1", "I=12 K=5 S=2 N=5 offset=-1 pad=1/0 maps=1"}));
  EXPECT_EQ(conv2.geometry.outputNodes, 3200);
  EXPECT_EQ(conv2.geometry.kernels, 128);
  EXPECT_EQ(conv2.params, 128 * 26);

  const ir::Bundle &pool2 = layerNamed(*c, "pool2").bundles.at(0);
  EXPECT_EQ(dimsText(pool2), (Dims{"I=128 K=1 S=1 N=128 offset=0 pad=0/0 padded maps=1",
                                   "I=5 K=2 S=2 N=3 offset=0 pad=0/1 padded maps=1",
                                   "I=5 K=2 S=2 N=3 offset=0 pad=0/1 padded maps=1"}));
  const ir::Bundle &norm1 = layerNamed(*c, "norm1").bundles.at(0);
  EXPECT_EQ(norm1.geometry.outputNodes, 64 * 23 * 23);
  EXPECT_DOUBLE_EQ(norm1.alpha(), 0.0001);
  EXPECT_DOUBLE_EQ(norm1.beta(), 0.75);
  EXPECT_DOUBLE_EQ(norm1.offset(), 1.0);
  EXPECT_TRUE(norm1.avgOverFullKernel);
}

TEST(Geometry, RmlToolsStridedNormAndOverlappingPool) {
  // §11.8.
  auto c = compileExample("rmltools-norm-pool.net");
  EXPECT_CLEAN(c);
  const ir::Bundle &conv1 = layerNamed(*c, "conv1").bundles.at(0);
  EXPECT_EQ(dimsText(conv1),
            (Dims{"I=3 K=3 S=1 N=1 offset=0 pad=0/0 maps=48", "I=50 K=5 S=2 N=24 offset=-1 pad=1/0 maps=1",
                  "I=50 K=5 S=2 N=24 offset=-1 pad=1/0 maps=1"}));
  EXPECT_EQ(conv1.geometry.kernels, 48);
  const ir::Bundle &rnorm1 = layerNamed(*c, "rnorm1").bundles.at(0);
  EXPECT_EQ(dimsText(rnorm1),
            (Dims{"I=48 K=1 S=1 N=48 offset=0 pad=0/0 maps=1", "I=24 K=4 S=2 N=11 offset=0 pad=0/0 maps=1",
                  "I=24 K=4 S=2 N=11 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(rnorm1.geometry.outputNodes, 5808);
  const ir::Bundle &pool1 = layerNamed(*c, "pool1").bundles.at(0);
  EXPECT_EQ(dimsText(pool1),
            (Dims{"I=48 K=1 S=1 N=48 offset=0 pad=0/0 maps=1", "I=11 K=3 S=1 N=9 offset=0 pad=0/0 maps=1",
                  "I=11 K=3 S=1 N=9 offset=0 pad=0/0 maps=1"}));
}

// ---- pool and response norm ------------------------------------------------------------------

TEST(Geometry, PoolAndNormOfTheGuide) {
  // §11.6: P1 2880 -> 720 nodes; RN1 (12 - 3) / 1 + 1 = 10.
  auto c = compileExample("pool-norm.net");
  EXPECT_CLEAN(c);
  const ir::Bundle &p1 = layerNamed(*c, "P1").bundles.at(0);
  EXPECT_EQ(p1.kind, ir::BundleKind::MaxPool);
  EXPECT_EQ(dimsText(p1),
            (Dims{"I=5 K=1 S=1 N=5 offset=0 pad=0/0 maps=1", "I=24 K=2 S=2 N=12 offset=0 pad=0/0 maps=1",
                  "I=24 K=2 S=2 N=12 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(p1.geometry.inputNodes, 2880);
  EXPECT_EQ(p1.geometry.outputNodes, 720);
  EXPECT_EQ(p1.geometry.kernelSize, 4);
  EXPECT_EQ(p1.geometry.kernels, 0);
  EXPECT_EQ(p1.params, 0);
  const ir::Bundle &rn1 = layerNamed(*c, "RN1").bundles.at(0);
  EXPECT_EQ(rn1.kind, ir::BundleKind::ResponseNorm);
  EXPECT_EQ(dimsText(rn1),
            (Dims{"I=5 K=1 S=1 N=5 offset=0 pad=0/0 maps=1", "I=12 K=3 S=1 N=10 offset=0 pad=0/0 maps=1",
                  "I=12 K=3 S=1 N=10 offset=0 pad=0/0 maps=1"}));
  EXPECT_EQ(rn1.geometry.outputNodes, 500);
  EXPECT_EQ(rn1.params, 0);
  EXPECT_DOUBLE_EQ(rn1.alpha(), 0.001);
  EXPECT_DOUBLE_EQ(rn1.beta(), 0.75);
  EXPECT_DOUBLE_EQ(rn1.offset(), 1.0); // D11 default
  EXPECT_TRUE(rn1.avgOverFullKernel);  // D11 default
}

TEST(Geometry, MeanPoolPadded) {
  // (7 - 1) / 2 + 1 = 4; low pad (3 - 1) / 2 = 1; last kernel covers [5, 7].
  auto c = bundleNet("[7]", "[4]", "mean pool",
                     "InputShape = [7]; KernelShape = [3]; Stride = [2]; Padding = true;");
  EXPECT_CLEAN(c);
  EXPECT_EQ(bundleOfH(*c).kind, ir::BundleKind::MeanPool);
  EXPECT_EQ(dimsText(bundleOfH(*c)), (Dims{"I=7 K=3 S=2 N=4 offset=-1 pad=1/1 padded maps=1"}));
  EXPECT_EQ(bundleOfH(*c).geometry.outputNodes, 4);
}

TEST(Geometry, PoolOutputCountIgnoresMapsAndRejectsMapCount) {
  auto c = bundleNet("[4, 4]", "[4]", "max pool",
                     "InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; MapCount = 3;");
  EXPECT_CODES(c, "NS0403");
  const Diagnostic *d = findDiagnostic(*c, "NS0403");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "attribute 'MapCount' is not allowed on a 'max pool' bundle");
  EXPECT_EQ(textOf(*c, d->range), "MapCount");
  EXPECT_EQ(bundleOfH(*c).geometry.outputNodes, 4);
}

TEST(Geometry, NormWithOffsetAndAvgOverFullKernel) {
  auto c =
      bundleNet("[3, 4]", "[3, 4]", "response norm",
                "InputShape = [3, 4]; KernelShape = [3, 1]; Padding = [true, false]; Alpha = 0.5; Beta = 2; "
                "Offset = 2.5; AvgOverFullKernel = false;");
  EXPECT_CLEAN(c);
  const ir::Bundle &b = bundleOfH(*c);
  EXPECT_EQ(dimsText(b), (Dims{"I=3 K=3 S=1 N=3 offset=-1 pad=1/1 padded maps=1",
                               "I=4 K=1 S=1 N=4 offset=0 pad=0/0 maps=1"}));
  EXPECT_DOUBLE_EQ(b.alpha(), 0.5);
  EXPECT_DOUBLE_EQ(b.beta(), 2.0);
  EXPECT_DOUBLE_EQ(b.offset(), 2.5);
  EXPECT_FALSE(b.avgOverFullKernel);
}

// ---- errors ----------------------------------------------------------------------------------

TEST(Geometry, KernelLargerThanInput) {
  auto c = bundleNet("[28, 28]", "[12, 12]", "convolve",
                     "InputShape = [28, 28]; KernelShape = [5, 30]; Stride = [2, 2];");
  EXPECT_CODES(c, "NS0408");
  const Diagnostic *d = findDiagnostic(*c, "NS0408");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "KernelShape[1] = 30 must be between 1 and InputShape[1] = 28");
  EXPECT_EQ(textOf(*c, d->range), "KernelShape = [5, 30];");
  EXPECT_EQ(position(*c, d->range), "3:26-3:48");
  EXPECT_FALSE(bundleOfH(*c).valid);
}

TEST(Geometry, NonPositiveKernel) {
  auto c = bundleNet("[28, 28]", "[12, 12]", "convolve", "InputShape = [28, 28]; KernelShape = [0, 5];");
  EXPECT_CODES(c, "NS0415");
  const Diagnostic *d = findDiagnostic(*c, "NS0415");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "KernelShape[0] = 0 must be positive");
}

TEST(Geometry, StrideLargerThanKernel) {
  auto c = bundleNet("[28, 28]", "[12, 12]", "max pool",
                     "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 6];");
  EXPECT_CODES(c, "NS0409");
  const Diagnostic *d = findDiagnostic(*c, "NS0409");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "Stride[1] = 6 must be between 1 and KernelShape[1] = 5");
  EXPECT_EQ(textOf(*c, d->range), "Stride = [2, 6];");
  auto zero = bundleNet("[28, 28]", "[12, 12]", "max pool",
                        "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [0, 2];");
  EXPECT_CODES(zero, "NS0415");
}

TEST(Geometry, ArityMismatchIsOneError) {
  // One mistake, one diagnostic: no follow-up complaint about the missing component.
  auto kernel = bundleNet("[28, 28]", "[24, 24]", "convolve", "InputShape = [28, 28]; KernelShape = [5];");
  EXPECT_CODES(kernel, "NS0405");
  const Diagnostic *d = findDiagnostic(*kernel, "NS0405");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "'KernelShape' has 1 component(s) but InputShape has 2");
  EXPECT_EQ(textOf(*kernel, d->range), "KernelShape = [5];");
  EXPECT_FALSE(bundleOfH(*kernel).valid);

  auto stride = bundleNet("[28, 28]", "[12, 12]", "convolve",
                          "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2, 2];");
  EXPECT_CODES(stride, "NS0405");
  auto padding = bundleNet("[28, 28]", "[14, 14]", "convolve",
                           "InputShape = [28, 28]; KernelShape = [5, 5]; Padding = [true];");
  EXPECT_CODES(padding, "NS0405");
  auto sharing = bundleNet("[28, 28]", "[24, 24]", "convolve",
                           "InputShape = [28, 28]; KernelShape = [5, 5]; Sharing = [true, false, true];");
  EXPECT_CODES(sharing, "NS0405");
  auto lower = bundleNet("[28, 28]", "[24, 24]", "convolve",
                         "InputShape = [28, 28]; KernelShape = [5, 5]; LowerPad = [1];");
  EXPECT_CODES(lower, "NS0405");
  auto upper = bundleNet("[28, 28]", "[24, 24]", "mean pool",
                         "InputShape = [28, 28]; KernelShape = [5, 5]; UpperPad = [1, 1, 1];");
  EXPECT_CODES(upper, "NS0405");
}

TEST(Geometry, InputShapeProductMismatch) {
  auto c = bundleNet("[28, 28]", "[12, 13]", "convolve",
                     "InputShape = [28, 29]; KernelShape = [5, 5]; Stride = [2, 2];");
  EXPECT_CODES(c, "NS0407");
  const Diagnostic *d = findDiagnostic(*c, "NS0407");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "InputShape [28, 29] has 812 nodes but source layer 'X' has 784");
  EXPECT_EQ(textOf(*c, d->range), "InputShape = [28, 29];");
  EXPECT_EQ(position(*c, d->range), "3:3-3:25");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "'X' is declared here with 784 nodes");
  EXPECT_EQ(textOf(*c, d->notes[0].range), "[28, 28]");
  EXPECT_EQ(position(*c, d->notes[0].range), "1:9-1:17");
}

TEST(Geometry, InputShapeMayDifferInRankFromTheSource) {
  auto c = bundleNet("[784]", "[5, 12, 12]", "convolve",
                     "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;");
  EXPECT_CLEAN(c);
  EXPECT_EQ(bundleOfH(*c).geometry.outputNodes, 720);
}

TEST(Geometry, OutputCountMismatch) {
  auto c = bundleNet("[28, 28]", "[5, 13, 13]", "convolve",
                     "InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;");
  EXPECT_CODES(c, "NS0413");
  const Diagnostic *d = findDiagnostic(*c, "NS0413");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "this bundle produces 720 nodes (shape [60, 12]) but layer 'H' has 845");
  EXPECT_EQ(textOf(*c, d->range), "convolve");
  EXPECT_EQ(position(*c, d->range), "2:29-2:37");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(d->notes[0].message, "'H' is declared here with 845 nodes");
  EXPECT_EQ(textOf(*c, d->notes[0].range), "[5, 13, 13]");
}

TEST(Geometry, PoolOutputCountMismatch) {
  auto c = bundleNet("[5, 24, 24]", "[5, 24, 24]", "max pool",
                     "InputShape = [5, 24, 24]; KernelShape = [1, 2, 2]; Stride = [1, 2, 2];");
  EXPECT_CODES(c, "NS0413");
  const Diagnostic *d = findDiagnostic(*c, "NS0413");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "this bundle produces 720 nodes (shape [5, 12, 12]) but layer 'H' has 2880");
  EXPECT_EQ(textOf(*c, d->range), "max pool");
}

} // namespace
} // namespace netc::unittest
