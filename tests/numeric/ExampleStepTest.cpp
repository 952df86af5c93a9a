// ExampleStepTest.cpp -- every examples/*.net (listed at test time) trains
// one step: compiled with the options tests/e2e_expected/examples.json gives
// it (an `input_size` for `auto` inputs that need one, a task if it names
// one), planned for training with memory reuse, loaded on the fast CPU
// backend with batch 4 (one thread: the step's thread-count independence is
// KernelParityTest's), given D15-style random parameters (uniform in ±0.05),
// random features and labels in range, and run through forward, loss,
// backward and the SGD updates (UpdateSettings defaults). The loss must be
// finite and positive, the correct count within [0, 4], every parameter
// gradient finite, every parameter updated by exactly w − 0.1·g, and every
// parameter changed.
#include "PlanHarness.h"

#include <nlohmann/json.hpp>

namespace netc::numeric {
namespace {

using nlohmann::json;

/// The options of an example: `input_size` from examples.json, and a task
/// (`task`: multiclass, binary or regression; `classes`) where the JSON
/// names one (for `output O auto`, D10).
CompileOptions optionsFor(const std::string &example) {
  static const json figures = json::parse(readFile(sourcePath("tests/e2e_expected/examples.json")));
  CompileOptions options;
  if (figures.contains(example)) {
    const json &expected = figures[example];
    if (expected.contains("input_size") && !expected["input_size"].is_null())
      options.inputSize = expected["input_size"].get<int64_t>();
    if (expected.contains("task") && expected["task"].is_string()) {
      const std::string task = expected["task"].get<std::string>();
      options.task = task == "binary"       ? Task::Binary
                     : task == "regression" ? Task::Regression
                                            : Task::Multiclass;
    }
    if (expected.contains("classes") && !expected["classes"].is_null())
      options.classCount = expected["classes"].get<int64_t>();
  }
  return options;
}

class ExampleStep : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleStep, OneSgdStepChangesTheParameters) {
  const std::string path = sourcePath("examples/" + GetParam());
  Compiled c;
  c.compilation = compileSource(SourceFile(path, readFile(path)), optionsFor(GetParam()), Stage::Passes);
  ASSERT_EQ(c.compilation->diags.errorCount(), 0u) << describeDiagnostics(*c.compilation);
  auto built = plan::buildPlan(c.network(), {true, {}, true});
  ASSERT_TRUE(built.ok()) << built.message();
  const plan::Plan &plan = *built;
  ASSERT_GT(plan.parameters.size(), 0u);

  const int64_t batch = 4;
  FillOptions fill;
  State state = randomState(plan, batch, 2024, fill);
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> d15(-0.05f, 0.05f), pixel(0.0f, 1.0f);
  for (const plan::Parameter &p : plan.parameters)
    for (float &v : state[static_cast<size_t>(p.buffer)])
      v = d15(rng);
  for (float &v : state[static_cast<size_t>(plan.features)])
    v = pixel(rng);
  for (float label : state[static_cast<size_t>(plan.labels)]) {
    if (plan.outputNodes > 1) {
      EXPECT_GE(label, 0.0f);
      EXPECT_LT(label, static_cast<float>(plan.outputNodes));
    }
  }

  Machine m(plan, batch, {1, false, {}});
  // Only the inputs and parameters are written: memory reuse means the other
  // buffers share space, and every op writes before it reads.
  m.write(plan.features, state[static_cast<size_t>(plan.features)]);
  m.write(plan.labels, state[static_cast<size_t>(plan.labels)]);
  for (const plan::Parameter &p : plan.parameters)
    m.write(p.buffer, state[static_cast<size_t>(p.buffer)]);
  m.run(0, plan.ops.size());

  const std::vector<float> metrics = m.read(plan.metrics);
  EXPECT_TRUE(std::isfinite(metrics[0])) << "loss sum " << metrics[0];
  EXPECT_GT(metrics[0], 0.0f);
  EXPECT_GE(metrics[1], 0.0f);
  EXPECT_LE(metrics[1], static_cast<float>(batch));

  // One fused update op over the trained range of the flat arenas.
  ASSERT_EQ(plan.ops.size(), plan.backwardEnd + 1);
  ASSERT_EQ(plan.ops.back().kind, plan::OpKind::Update);
  EXPECT_EQ(plan.ops.back().get<plan::UpdateAttrs>().count, plan.trainedElements);
  for (size_t i = 0; i < plan.parameters.size(); ++i) {
    const plan::Parameter &p = plan.parameters[i];
    EXPECT_TRUE(p.trained && p.offset + p.count <= plan.trainedElements) << p.name << " is not updated";
    const std::vector<float> after = m.read(p.buffer), gradient = m.read(p.gradient);
    const std::vector<float> &before = state[static_cast<size_t>(p.buffer)];
    size_t changed = 0, notSgd = 0, notFinite = 0;
    for (size_t k = 0; k < after.size(); ++k) {
      notFinite += std::isfinite(after[k]) && std::isfinite(gradient[k]) ? 0 : 1;
      changed += after[k] != before[k] ? 1 : 0;
      // Plain SGD (no momentum, no decay): w' = w − lr·g with lr = 0.1.
      const float expected = before[k] - 0.1f * gradient[k];
      notSgd += std::abs(after[k] - expected) <= 1e-6f * std::abs(expected) + 1e-9f ? 0 : 1;
    }
    EXPECT_EQ(notFinite, 0u) << p.name;
    EXPECT_EQ(notSgd, 0u) << p.name << ": elements that are not w − 0.1·g";
    EXPECT_GT(changed, 0u) << p.name << " did not change";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleStep, ::testing::ValuesIn(exampleNames()), exampleTestName);

TEST(ExampleStepCorpus, ListsTheExamples) {
  EXPECT_GE(exampleNames().size(), 12u);
}

} // namespace
} // namespace netc::numeric
