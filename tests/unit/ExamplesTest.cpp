// ExamplesTest.cpp -- the examples corpus against its expected figures: every
// examples/*.net compiles with no diagnostic at all (the corpus must stay
// warning-free), and its layers (name, kind, shape, nodes, function, params
// and bundles) and network parameter count equal those recorded in
// tests/e2e_expected/examples.json, both through the compiler's IR and
// through the public API (include/netc/netc.h). An `input_size` in the JSON
// is passed as CompileOptions::inputSize.
#include "TestSupport.h"

#include "netc/netc.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace netc::unittest {
namespace {

using nlohmann::json;

const json &expectedFigures() {
  static const json figures = json::parse(readFile(sourcePath("tests/e2e_expected/examples.json")));
  return figures;
}

CompileOptions optionsFor(const json &expected) {
  CompileOptions options;
  if (expected.contains("input_size") && !expected["input_size"].is_null())
    options.inputSize = expected["input_size"].get<int64_t>();
  return options;
}

/// A layer of the IR in the JSON form of examples.json.
json figuresOf(const ir::Layer &layer) {
  json bundles = json::array();
  for (const ir::Bundle &b : layer.bundles)
    bundles.push_back(
        {{"from", b.sourceName}, {"kind", std::string(ir::bundleKindName(b.kind))}, {"params", b.params}});
  return {
      {"name", layer.name},
      {"kind", std::string(ir::layerKindName(layer.kind))},
      {"shape", layer.shape},
      {"nodes", layer.nodes},
      {"function", layer.function ? json(std::string(ir::activationName(*layer.function))) : json(nullptr)},
      {"params", layer.params},
      {"bundles", bundles}};
}

/// A layer of the public API in the same form.
json figuresOf(const LayerInfo &layer) {
  json bundles = json::array();
  for (const BundleInfo &b : layer.bundles)
    bundles.push_back({{"from", b.from}, {"kind", b.kind}, {"params", b.params}});
  return {{"name", layer.name},
          {"kind", layer.kind},
          {"shape", layer.shape},
          {"nodes", layer.nodes},
          {"function", layer.function ? json(*layer.function) : json(nullptr)},
          {"params", layer.params},
          {"bundles", bundles}};
}

/// Compares layer lists one by one, so a failure names the layer.
void expectLayers(const std::vector<json> &actual, const json &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_EQ(actual[i].dump(), expected[i].dump()) << "layer " << i;
}

class Example : public ::testing::TestWithParam<std::string> {};

TEST_P(Example, CompilesWithoutAnyDiagnostic) {
  const json &figures = expectedFigures();
  ASSERT_TRUE(figures.contains(GetParam())) << GetParam() << " has no entry in examples.json";
  auto c = compileExample(GetParam(), optionsFor(figures[GetParam()]));
  EXPECT_EQ(c->diags.errorCount(), 0u) << describeDiagnostics(*c);
  EXPECT_EQ(c->diags.warningCount(), 0u) << describeDiagnostics(*c);
  EXPECT_CLEAN(c);
}

TEST_P(Example, IrMatchesExpectedFigures) {
  const json &figures = expectedFigures();
  ASSERT_TRUE(figures.contains(GetParam())) << GetParam() << " has no entry in examples.json";
  const json &expected = figures[GetParam()];
  auto c = compileExample(GetParam(), optionsFor(expected));
  std::vector<json> layers;
  for (const ir::Layer &layer : c->network.layers)
    layers.push_back(figuresOf(layer));
  expectLayers(layers, expected["layers"]);
  EXPECT_EQ(c->network.params, expected["params"].get<int64_t>());
  EXPECT_EQ(c->network.name, GetParam().substr(0, GetParam().size() - 4));
}

TEST_P(Example, PublicApiMatchesExpectedFigures) {
  const json &figures = expectedFigures();
  ASSERT_TRUE(figures.contains(GetParam())) << GetParam() << " has no entry in examples.json";
  const json &expected = figures[GetParam()];
  CompileResult r = compileFile(sourcePath("examples/" + GetParam()), optionsFor(expected));
  ASSERT_TRUE(r.ok()) << r.formattedDiagnostics;
  EXPECT_TRUE(r.diagnostics.empty()) << r.formattedDiagnostics;
  std::vector<json> layers;
  for (const LayerInfo &layer : r.network->layers())
    layers.push_back(figuresOf(layer));
  expectLayers(layers, expected["layers"]);
  EXPECT_EQ(r.network->params(), expected["params"].get<int64_t>());
}

INSTANTIATE_TEST_SUITE_P(Corpus, Example, ::testing::ValuesIn(exampleNames()), exampleTestName);

TEST(Examples, CorpusAndExpectedFiguresListTheSameFiles) {
  std::vector<std::string> files = exampleNames();
  EXPECT_GE(files.size(), 12u);
  std::set<std::string> expected;
  for (const auto &[name, figures] : expectedFigures().items())
    expected.insert(name);
  EXPECT_EQ(std::set<std::string>(files.begin(), files.end()), expected);
}

TEST(Examples, InputSizeIsNeededWhereTheJsonSaysSo) {
  // hello-world.net has `input Data auto;` read by an `all` bundle: without
  // --input-size it cannot be sized (D10).
  auto c = compileExample("hello-world.net");
  EXPECT_CODES(c, "NS0319");
}

} // namespace
} // namespace netc::unittest
