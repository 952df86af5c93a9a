// CountsTest.cpp -- parameter counts per docs/language.md §15 (all, where, convolve,
// pool and norm bundles; per-node biases only with an all/where bundle;
// share in its layer, bundle and bias forms, overlapping groups merged), the
// seed network's 127,495 parameters, default output functions per D6 (with
// and without a task), `auto` sizes per D10, the edge counts of `where`
// bundles, and the limits that keep bad input cheap: the filter pair budget
// (NS0416), too-large layers (NS0323) and the parameter limit (NS0601).
#include "TestSupport.h"

#include <algorithm>

namespace netc::unittest {
namespace {

CompileOptions withTask(Task task) {
  CompileOptions options;
  options.task = task;
  return options;
}

// ---- D5: parameters per bundle kind ---------------------------------------------------

TEST(Counts, AllBundleIsSourceTimesDestinationPlusBiases) {
  auto c = compileText("input X [4];\nhidden H [3] from X all;\noutput O [2] from H all;\n");
  EXPECT_CLEAN(c);
  const ir::Layer &h = layerNamed(*c, "H");
  EXPECT_EQ(h.bundles.at(0).params, 12);
  EXPECT_EQ(h.bundles.at(0).edges, 12);
  EXPECT_TRUE(h.hasBias);
  EXPECT_EQ(h.params, 15);
  EXPECT_EQ(layerNamed(*c, "O").params, 8);
  EXPECT_EQ(layerNamed(*c, "X").params, 0);
  EXPECT_FALSE(layerNamed(*c, "X").hasBias);
  EXPECT_EQ(c->network.totalParams, 23);
  EXPECT_EQ(c->network.params, 23);
}

TEST(Counts, WhereBundleIsTrueEdgesPlusBiases) {
  // Each destination d sees sources 2d and 2d+1: 6 edges.
  auto c = compileText(
      "input X [6];\nhidden H [3] from X where (s, d) => s[0] / 2 == d[0];\noutput O [1] from H all;\n");
  EXPECT_CLEAN(c);
  const ir::Layer &h = layerNamed(*c, "H");
  EXPECT_EQ(h.bundles.at(0).edges, 6);
  EXPECT_EQ(h.bundles.at(0).params, 6);
  EXPECT_TRUE(h.hasBias);
  EXPECT_EQ(h.params, 9);
  EXPECT_EQ(c->network.params, 9 + 4);
}

TEST(Counts, WhereWithScalarIndexOnOneDimensionalLayers) {
  // D3: a 1-D index used as a scalar. d = 0..3 sees s < d + 2: 2 + 3 + 4 + 5 = 14 edges.
  auto c = compileText(
      "input X [10];\nhidden H [4] from X where (s, d) => s < d + 2;\noutput O [1] from H all;\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "H").bundles.at(0).edges, 14);
  EXPECT_EQ(layerNamed(*c, "H").params, 18);
}

TEST(Counts, ConvolveHasKernelBiasesAndNoPerNodeBiases) {
  auto c = compileExample("mnist.net");
  EXPECT_CLEAN(c);
  for (const char *name : {"Conv1", "Conv2"}) {
    const ir::Layer &layer = layerNamed(*c, name);
    EXPECT_FALSE(layer.hasBias) << name;
    EXPECT_EQ(layer.params, layer.bundles.at(0).params) << name;
  }
  EXPECT_EQ(layerNamed(*c, "Conv1").params, 5 * (1 + 16));
  EXPECT_EQ(layerNamed(*c, "Conv2").params, 50 * (1 + 25));
}

TEST(Counts, LayerWithConvolveAndAllBundlesGetsPerNodeBiases) {
  // convolve: 1 kernel of 1 + 4; all: 3 x 4; biases: 4 nodes.
  auto c = compileText(
      "input X [4, 4];\ninput Y [3];\n"
      "hidden H [4] {\n  from X convolve { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "  from Y all;\n}\noutput O [1] from H all;\n");
  EXPECT_CLEAN(c);
  const ir::Layer &h = layerNamed(*c, "H");
  EXPECT_TRUE(h.hasBias);
  ASSERT_EQ(h.bundles.size(), 2u);
  EXPECT_EQ(h.bundles[0].params, 5);
  EXPECT_EQ(h.bundles[1].params, 12);
  EXPECT_EQ(h.params, 21);
}

TEST(Counts, PoolAndNormHaveNoParameters) {
  auto c = compileExample("pool-norm.net");
  EXPECT_CLEAN(c);
  for (const char *name : {"P1", "RN1"}) {
    const ir::Layer &layer = layerNamed(*c, name);
    EXPECT_FALSE(layer.hasBias) << name;
    EXPECT_EQ(layer.params, 0) << name;
    EXPECT_EQ(layer.bundles.at(0).params, 0) << name;
  }
  EXPECT_EQ(c->network.params, 130 + 5010);
}

TEST(Counts, SeedNetwork) {
  auto c = compileExample("mnist.net");
  EXPECT_CLEAN(c);
  const auto &layers = c->network.layers;
  ASSERT_EQ(layers.size(), 5u);
  EXPECT_EQ(layers[0].shape, (std::vector<int64_t>{784}));
  EXPECT_EQ(layers[1].shape, (std::vector<int64_t>{5, 13, 13}));
  EXPECT_EQ(layers[2].shape, (std::vector<int64_t>{50, 5, 5}));
  EXPECT_EQ(layers[3].shape, (std::vector<int64_t>{100}));
  EXPECT_EQ(layers[4].shape, (std::vector<int64_t>{10}));
  std::vector<int64_t> params;
  for (const ir::Layer &layer : layers)
    params.push_back(layer.params);
  EXPECT_EQ(params, (std::vector<int64_t>{0, 85, 1300, 125100, 1010}));
  EXPECT_EQ(c->network.totalParams, 127495);
  EXPECT_EQ(c->network.params, 127495);
}

// ---- D14: share --------------------------------------------------------------------------

/// The siamese network of §11.9 with the given share declarations.
std::unique_ptr<Compilation> siamese(const std::string &shares) {
  return compileText("const { InputSize = 37; HiddenSize = 50; }\n"
                     "input { Data1 [InputSize]; Data2 [InputSize]; }\n"
                     "hidden { H1 [HiddenSize] from Data1 all; H2 [HiddenSize] from Data2 all; }\n"
                     "output Result [2] { from H1 all; from H2 all; }\n" +
                     shares);
}

TEST(Counts, NoShareCountsEverything) {
  auto c = siamese("");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.totalParams, 1900 + 1900 + 202);
  EXPECT_EQ(c->network.params, 4002);
  EXPECT_TRUE(c->network.shareGroups.empty());
}

TEST(Counts, ShareLayersTiesWeightsAndBiases) {
  auto c = siamese("share { H1, H2 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.totalParams, 4002);
  EXPECT_EQ(c->network.params, 2102);           // H2's 1850 weights and 50 biases counted once
  EXPECT_EQ(layerNamed(*c, "H2").params, 1900); // layer figures are before share
  ASSERT_EQ(c->network.shareGroups.size(), 2u);
  int h1 = c->network.findLayer("H1"), h2 = c->network.findLayer("H2");
  std::vector<std::vector<ir::ParamRef>> expected = {{{h1, -1}, {h2, -1}}, {{h1, 0}, {h2, 0}}};
  auto groups = c->network.shareGroups;
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, expected);
}

TEST(Counts, ShareBundlesTiesWeightsOnly) {
  auto c = siamese("share { Data1 => H1, Data2 => H2 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.params, 4002 - 1850);
  ASSERT_EQ(c->network.shareGroups.size(), 1u);
  EXPECT_EQ(c->network.shareGroups[0].size(), 2u);
}

TEST(Counts, ShareBiasesTiesBiasesOnly) {
  auto c = siamese("share { 1 => H1, 1 => H2 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.params, 4002 - 50);
  ASSERT_EQ(c->network.shareGroups.size(), 1u);
  for (const ir::ParamRef &ref : c->network.shareGroups[0])
    EXPECT_EQ(ref.bundle, -1);
}

TEST(Counts, BundleAndBiasSharesTogetherEqualTheLayerForm) {
  auto c = siamese("share { Data1 => H1, Data2 => H2 }\nshare { 1 => H1, 1 => H2 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.params, 2102);
}

/// Three parallel 4 -> 3 layers feeding a 2-node output: 3 x 15 + 20 = 65 parameters.
std::unique_ptr<Compilation> triple(const std::string &shares) {
  return compileText("input A [4];\ninput B [4];\ninput C [4];\n"
                     "hidden H1 [3] from A all;\nhidden H2 [3] from B all;\nhidden H3 [3] from C all;\n"
                     "output O [2] { from H1 all; from H2 all; from H3 all; }\n" +
                     shares);
}

TEST(Counts, OverlappingShareGroupsMerge) {
  auto c = triple("share { A => H1, B => H2 }\nshare { B => H2, C => H3 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.totalParams, 65);
  EXPECT_EQ(c->network.params, 65 - 2 * 12);
  ASSERT_EQ(c->network.shareGroups.size(), 1u);
  EXPECT_EQ(c->network.shareGroups[0].size(), 3u);
}

TEST(Counts, OverlappingLayerAndBiasShares) {
  // Weights {H1, H2}; biases {H1, H2, H3}.
  auto c = triple("share { H1, H2 }\nshare { 1 => H2, 1 => H3 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(c->network.params, 65 - 12 - 2 * 3);
  ASSERT_EQ(c->network.shareGroups.size(), 2u);
}

TEST(Counts, SharedStructuresMustMatch) {
  auto c = compileText("input A [4];\ninput B [5];\nhidden H1 [3] from A all;\nhidden H2 [3] from B all;\n"
                       "output O [2] { from H1 all; from H2 all; }\nshare { A => H1, B => H2 }\n");
  EXPECT_CODES(c, "NS0505");
  const Diagnostic *d = findDiagnostic(*c, "NS0505");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*c, d->range), "B => H2");
  EXPECT_EQ(d->notes.size(), 2u);
  EXPECT_EQ(c->network.params, c->network.totalParams); // nothing tied
}

TEST(Counts, ShareLayersWithConvolutionsTiesKernelsOnly) {
  auto c = compileText(
      "input A [6, 6];\ninput B [6, 6];\n"
      "hidden C1 [2, 4, 4] from A convolve { InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = 2; }\n"
      "hidden C2 [2, 4, 4] from B convolve { InputShape = [6, 6]; KernelShape = [3, 3]; MapCount = 2; }\n"
      "output O [2] { from C1 all; from C2 all; }\nshare { C1, C2 }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "C1").params, 20);
  EXPECT_EQ(c->network.totalParams, 20 + 20 + (32 * 2 + 32 * 2 + 2));
  EXPECT_EQ(c->network.params, 20 + (32 * 2 + 32 * 2 + 2));
  ASSERT_EQ(c->network.shareGroups.size(), 1u);
}

TEST(Counts, ShareNeedsSomethingToShare) {
  auto c = compileText(
      "input A [4, 4];\ninput B [4, 4];\n"
      "hidden P1 [4] from A max pool { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "hidden P2 [4] from B max pool { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "output O [2] { from P1 all; from P2 all; }\nshare { 1 => P1, 1 => P2 }\n");
  EXPECT_CODES(c, "NS0506", "NS0506");
  const Diagnostic *d = findDiagnostic(*c, "NS0506");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "layer 'P1' has no per-node biases to share");
  EXPECT_EQ(textOf(*c, d->range), "1 => P1");
}

TEST(Counts, WeightsAndBiasesLengthsMatchTheCounts) {
  auto c = compileText(
      "const W = [1, 2, 3];\ninput X [4];\n"
      "hidden H [3] { Biases = [0.5, 0.5]; from X all { Weights = W; } }\noutput O [2] from H all;\n");
  EXPECT_CODES(c, "NS0318", "NS0318");
  const auto &all = c->diags.diagnostics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].message, "'Weights' has 3 value(s) but bundle 'X => H' needs 12");
  EXPECT_EQ(all[1].message, "'Biases' has 2 value(s) but layer 'H' needs 3");

  auto ok = compileText(
      "input X [2];\nhidden H [2] { Biases = [0.5, -0.5]; from X all { Weights = [1, 2, 3, 4]; } }\n"
      "output O [2] from H all;\n");
  EXPECT_CLEAN(ok);
  const ir::Layer &h = layerNamed(*ok, "H");
  ASSERT_TRUE(h.biases.has_value());
  EXPECT_EQ(*h.biases, (std::vector<double>{0.5, -0.5}));
  ASSERT_TRUE(h.bundles.at(0).weights.has_value());
  EXPECT_EQ(*h.bundles.at(0).weights, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(h.params, 6);
}

// ---- D6: default functions --------------------------------------------------------------

TEST(Counts, DefaultFunctionsWithoutTask) {
  auto c = compileText(
      "input X [4, 4];\n"
      "hidden A [8] from X all;\n"
      "hidden B [3, 3] from X convolve { InputShape = [4, 4]; KernelShape = [2, 2]; }\n"
      "hidden C [2, 2] from B max pool { InputShape = [3, 3]; KernelShape = [2, 2]; }\n"
      "hidden D [2, 2] from C response norm { InputShape = [2, 2]; KernelShape = [1, 1]; Alpha = 1; "
      "Beta = 1; }\n"
      "hidden E [8] from A where (s, d) => s == d;\n"
      "hidden F [4] tanh from B mean pool { InputShape = [3, 3]; KernelShape = [2, 2]; }\n"
      "output O [3] { from D all; from E all; from F all; }\n");
  EXPECT_CLEAN(c);
  auto fn = [&](const char *name) {
    const ir::Layer &l = layerNamed(*c, name);
    return l.function
               ? std::string(ir::activationName(*l.function)) + (l.functionIsDefault ? " (default)" : "")
               : std::string("none");
  };
  EXPECT_EQ(fn("X"), "none");
  EXPECT_EQ(fn("A"), "sigmoid (default)");
  EXPECT_EQ(fn("B"), "sigmoid (default)");
  EXPECT_EQ(fn("C"), "linear (default)");
  EXPECT_EQ(fn("D"), "linear (default)");
  EXPECT_EQ(fn("E"), "sigmoid (default)");
  EXPECT_EQ(fn("F"), "tanh"); // explicit wins, applied after pooling
  EXPECT_EQ(fn("O"), "softmax (default)");
}

std::optional<ir::Activation> outputFunction(const std::string &outputDecl, Task task) {
  auto c = compileText("input X [4];\n" + outputDecl + " from X all;\n", Stage::Passes, withTask(task));
  EXPECT_CLEAN(c);
  const ir::Layer &out = layerNamed(*c, "O");
  return out.function;
}

TEST(Counts, DefaultOutputFunctionPerTask) {
  using A = ir::Activation;
  EXPECT_EQ(outputFunction("output O [3]", Task::Unspecified), A::Softmax);
  EXPECT_EQ(outputFunction("output O [1]", Task::Unspecified), A::Sigmoid);
  EXPECT_EQ(outputFunction("output O [1]", Task::Regression), A::Linear);
  EXPECT_EQ(outputFunction("output O [1]", Task::Binary), A::Sigmoid);
  EXPECT_EQ(outputFunction("output O [2]", Task::Binary), A::Sigmoid);
  EXPECT_EQ(outputFunction("output O [4]", Task::Multiclass), A::Softmax);
  // An explicit function always wins.
  EXPECT_EQ(outputFunction("output O [1] tanh", Task::Regression), A::Tanh);
  EXPECT_EQ(outputFunction("output O [3] sigmoid", Task::Unspecified), A::Sigmoid);
}

TEST(Counts, HiddenDefaultIgnoresTheTask) {
  auto c = compileText("input X [4];\nhidden H [3] from X all;\noutput O [1] from H all;\n", Stage::Passes,
                       withTask(Task::Regression));
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "H").function, ir::Activation::Sigmoid);
  EXPECT_EQ(layerNamed(*c, "O").function, ir::Activation::Linear);
}

// ---- D10: auto --------------------------------------------------------------------------------

TEST(Counts, AutoInputFromConsumerInputShape) {
  auto c = compileExample("mnist.net");
  EXPECT_CLEAN(c);
  const ir::Layer &pic = layerNamed(*c, "Pic");
  EXPECT_TRUE(pic.shapeAuto);
  EXPECT_EQ(pic.shape, (std::vector<int64_t>{784}));
  EXPECT_EQ(pic.nodes, 784);
}

TEST(Counts, AutoInputFromInputSize) {
  CompileOptions options;
  options.inputSize = 7;
  auto c = compileText("input X auto;\nhidden H [5] from X all;\noutput O [2] from H all;\n", Stage::Passes,
                       options);
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "X").shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(layerNamed(*c, "H").params, 7 * 5 + 5);
}

TEST(Counts, AutoInputTakesWhatTheOtherInputsLeave) {
  CompileOptions options;
  options.inputSize = 10;
  auto c = compileText("input A [3];\ninput B auto;\noutput O [2] { from A all; from B all; }\n",
                       Stage::Passes, options);
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "B").nodes, 7);
}

TEST(Counts, TwoAutoInputsCannotSplitTheData) {
  CompileOptions options;
  options.inputSize = 10;
  auto c = compileText("input A auto;\ninput B auto;\noutput O [2] { from A all; from B all; }\n",
                       Stage::Passes, options);
  EXPECT_CODES(c, "NS0319", "NS0319");
}

TEST(Counts, AutoInputReadByConvolveAndAll) {
  // The convolve's InputShape sizes X; the `all` bundle then uses that size.
  auto c = compileText(
      "input X auto;\n"
      "hidden C [4] from X max pool { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "hidden H [3] from X all;\n"
      "output O [2] { from C all; from H all; }\n");
  EXPECT_CLEAN(c);
  EXPECT_EQ(layerNamed(*c, "X").nodes, 16);
  EXPECT_EQ(layerNamed(*c, "H").params, 16 * 3 + 3);
}

TEST(Counts, AutoInputWithoutASizeIsAnError) {
  auto c = compileText("input X auto;\noutput O [2] from X all;\n");
  EXPECT_CODES(c, "NS0319");
  const Diagnostic *d = findDiagnostic(*c, "NS0319");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*c, d->range), "auto");
  EXPECT_EQ(position(*c, d->range), "1:9-1:13");
}

TEST(Counts, AutoInputConsumersMustAgree) {
  auto c = compileText(
      "input X auto;\n"
      "hidden A [4] from X max pool { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "hidden B [9] from X max pool { InputShape = [6, 6]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
      "output O [2] { from A all; from B all; }\n");
  EXPECT_CODES(c, "NS0320");
  const Diagnostic *d = findDiagnostic(*c, "NS0320");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "bundles reading 'auto' input 'X' disagree on its size: 36 here, 16 elsewhere");
  EXPECT_EQ(textOf(*c, d->range), "InputShape = [6, 6];");
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_EQ(textOf(*c, d->notes[0].range), "InputShape = [4, 4];");
}

TEST(Counts, AutoHiddenTakesTheHiddenNodeSetting) {
  const std::string text = "input X [4];\nhidden H auto from X all;\noutput O [2] from H all;\n";
  auto byDefault = compileText(text);
  EXPECT_CLEAN(byDefault);
  EXPECT_EQ(layerNamed(*byDefault, "H").shape, (std::vector<int64_t>{100}));
  EXPECT_EQ(layerNamed(*byDefault, "H").params, 4 * 100 + 100);
  CompileOptions options;
  options.hiddenNodes = 37;
  auto set = compileText(text, Stage::Passes, options);
  EXPECT_CLEAN(set);
  EXPECT_EQ(layerNamed(*set, "H").nodes, 37);
  EXPECT_TRUE(layerNamed(*set, "H").shapeAuto);
}

TEST(Counts, AutoOutputNeedsATask) {
  const std::string text = "input X [4];\noutput O auto from X all;\n";
  auto binary = compileText(text, Stage::Passes, withTask(Task::Binary));
  EXPECT_CLEAN(binary);
  EXPECT_EQ(layerNamed(*binary, "O").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(layerNamed(*binary, "O").function, ir::Activation::Sigmoid);

  auto regression = compileText(text, Stage::Passes, withTask(Task::Regression));
  EXPECT_CLEAN(regression);
  EXPECT_EQ(layerNamed(*regression, "O").nodes, 1);
  EXPECT_EQ(layerNamed(*regression, "O").function, ir::Activation::Linear);

  CompileOptions multiclass = withTask(Task::Multiclass);
  multiclass.classCount = 5;
  auto classes = compileText(text, Stage::Passes, multiclass);
  EXPECT_CLEAN(classes);
  EXPECT_EQ(layerNamed(*classes, "O").nodes, 5);
  EXPECT_EQ(layerNamed(*classes, "O").function, ir::Activation::Softmax);
  EXPECT_EQ(layerNamed(*classes, "O").params, 4 * 5 + 5);

  auto none = compileText(text);
  EXPECT_CODES(none, "NS0321");
  const Diagnostic *d = findDiagnostic(*none, "NS0321");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*none, d->range), "auto");
  EXPECT_EQ(position(*none, d->range), "2:10-2:14");

  auto noClasses = compileText(text, Stage::Passes, withTask(Task::Multiclass));
  EXPECT_CODES(noClasses, "NS0321");
}

TEST(Counts, InputSizeMustMatchTheInputs) {
  CompileOptions options;
  options.inputSize = 5;
  auto c = compileText("input X [4];\noutput O [2] from X all;\n", Stage::Passes, options);
  EXPECT_CODES(c, "NS0324");
}

TEST(Counts, OutputSizeMustSuitTheTask) {
  auto c = compileText("input X [4];\noutput O [3] from X all;\n", Stage::Passes, withTask(Task::Regression));
  EXPECT_CODES(c, "NS0325");
  const Diagnostic *d = findDiagnostic(*c, "NS0325");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(textOf(*c, d->range), "[3]");
}

// ---- where edge counts and the filter budget ---------------------------------------------------

TEST(Counts, WhereEdgeCountsOfTheGuide) {
  // §11.3: ByRow sees its row of 20 pixels (120 x 20); ByCol sees 2 or 3 columns of 10 rows.
  auto c = compileExample("multi-input-filtered.net");
  EXPECT_CLEAN(c);
  const ir::Layer &byRow = layerNamed(*c, "ByRow");
  EXPECT_EQ(byRow.bundles.at(0).edges, 2400);
  EXPECT_EQ(byRow.bundles.at(0).params, 2400);
  EXPECT_EQ(byRow.params, 2400 + 120);
  const ir::Layer &byCol = layerNamed(*c, "ByCol");
  EXPECT_EQ(byCol.bundles.at(0).edges, 2900);
  EXPECT_EQ(byCol.params, 2900 + 100);
  EXPECT_EQ(c->network.params, 28700);
}

TEST(Counts, WhereScalarIndexOfTheBlogExample) {
  // §11.11: `s < 50` over a 100-node source into 200 nodes: 50 x 200 edges.
  auto c = compileExample("mixed-bundles.net");
  EXPECT_CLEAN(c);
  const ir::Layer &h2 = layerNamed(*c, "H2");
  ASSERT_EQ(h2.bundles.size(), 2u);
  EXPECT_EQ(h2.bundles[1].edges, 10000);
  EXPECT_EQ(h2.params, 40000 + 10000 + 200);
}

TEST(Counts, FilterPairBudget) {
  const std::string text =
      "input X [20];\nhidden H [20] from X where (s, d) => s == d;\noutput O [2] from H all;\n";
  CompileOptions options;
  options.maxFilterPairs = 100;
  auto c = compileText(text, Stage::Passes, options);
  EXPECT_CODES(c, "NS0416");
  const Diagnostic *d = findDiagnostic(*c, "NS0416");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message,
            "this filtered bundle would test 400 (source, destination) pairs, more than the limit of 100; "
            "raise --max-filter-pairs or use a smaller layer");
  EXPECT_EQ(textOf(*c, d->range), "where");
  EXPECT_EQ(position(*c, d->range), "2:22-2:27");
  EXPECT_FALSE(layerNamed(*c, "H").bundles.at(0).valid);

  options.maxFilterPairs = 400; // exactly at the limit is fine
  auto atLimit = compileText(text, Stage::Passes, options);
  EXPECT_CLEAN(atLimit);
  EXPECT_EQ(layerNamed(*atLimit, "H").bundles.at(0).edges, 20);
}

TEST(Counts, HugeFilterIsRejectedWithoutEnumerating) {
  // 10^10 pairs under the default budget: an error at once, not hours of predicate tests.
  auto c = compileText("input X [100000];\nhidden H [100000] from X where (s, d) => s[0] == d[0];\n"
                       "output O [2] from H all;\n");
  EXPECT_CODES(c, "NS0416");
}

TEST(Counts, FilterWithNoEdgesWarns) {
  auto c =
      compileText("input X [4];\nhidden H [4] from X where (s, d) => s[0] > 10;\noutput O [2] from H all;\n");
  EXPECT_CODES(c, "NS0417");
  EXPECT_EQ(layerNamed(*c, "H").params, 4); // biases only
}

// ---- limits ------------------------------------------------------------------------------------------

TEST(Counts, LayerTooLarge) {
  auto c =
      compileText("input X [100000, 100000, 100000];\nhidden H [3] from X all;\noutput O [2] from H all;\n");
  EXPECT_CODES(c, "NS0323");
  const Diagnostic *d = findDiagnostic(*c, "NS0323");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "layer 'X' has 1000000000000000 nodes, more than the limit of 2147483648");
  EXPECT_EQ(textOf(*c, d->range), "[100000, 100000, 100000]");
  EXPECT_EQ(position(*c, d->range), "1:9-1:33");
  EXPECT_FALSE(layerNamed(*c, "X").valid);
  EXPECT_EQ(layerNamed(*c, "H").bundles.at(0).params, 0);
}

TEST(Counts, LayerNodeCountOverflowingInt64) {
  auto c = compileText("input X [2^62, 4];\noutput O [2] from X all;\n");
  EXPECT_CODES(c, "NS0323");
  const Diagnostic *d = findDiagnostic(*c, "NS0323");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "layer 'X' has more than 2^63 nodes, more than the limit of 2147483648");
}

TEST(Counts, LayerLimitIsAnOption) {
  CompileOptions options;
  options.maxLayerNodes = 10;
  auto c = compileText("input X [10];\nhidden H [11] from X all;\noutput O [2] from H all;\n", Stage::Passes,
                       options);
  EXPECT_CODES(c, "NS0323");
  EXPECT_EQ(textOf(*c, findDiagnostic(*c, "NS0323")->range), "[11]");
}

TEST(Counts, ParameterLimit) {
  CompileOptions options;
  options.maxParams = 20;
  auto c = compileText("input X [4];\nhidden H [3] from X all;\noutput O [2] from H all;\n", Stage::Passes,
                       options);
  EXPECT_CODES(c, "NS0601");
  const Diagnostic *d = findDiagnostic(*c, "NS0601");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "the network's parameter count is 23, more than the limit of 20");
  // Located at the layer with the most parameters (H: 15), the likeliest culprit.
  EXPECT_EQ(textOf(*c, d->range), "H");
}

} // namespace
} // namespace netc::unittest
