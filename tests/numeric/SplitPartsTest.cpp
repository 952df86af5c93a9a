// SplitPartsTest.cpp -- a layer split over the ranks of its stage
// (codegen/PlanSplit.cpp, `netc train --split`) computes the same bits as
// one process. Every rank of a pipeline (each stage's parts) runs its plan
// on a CPU backend of its own in this process, joined by an in-memory
// communicator; a driver runs the ranks' ops one at a time, a receive as
// soon as its peer has sent, so that the parts' exchanges inside a forward
// or backward pass happen as they would between processes. The whole
// network's plan runs the same micro-batches with gradient accumulation.
// After two optimizer steps every parameter's rows, gathered from the
// parts, its optimizer state and the loss sums must be identical; so must
// the initial values, which each part draws from its rows' place in the
// network's one random sequence. Both the fast kernels and the reference
// ones (whose input gradient also adds the blocks one by one) are checked.
#include "PipelineLoopback.h"
#include "PlanHarness.h"

#include "codegen/Codegen.h"
#include "codegen/Partition.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <random>

namespace netc::numeric {
namespace {

/// Every tensor of the machines (values, then each optimizer slot), by
/// name, in the whole network's shapes: a split parameter's rows put
/// together from its parts, the others taken from the first rank holding
/// them -- and every other copy must be the same bits.
std::map<std::string, std::vector<float>> wholeTensors(const std::vector<StageMachine> &machines) {
  std::map<std::string, std::vector<float>> out;
  for (const StageMachine &m : machines)
    for (const plan::Parameter &p : m.plan.parameters) {
      std::vector<int> buffers = {p.buffer};
      buffers.insert(buffers.end(), p.state.begin(), p.state.end());
      for (size_t slot = 0; slot < buffers.size(); ++slot) {
        const std::string name = slot == 0 ? p.name : fmt::format("{}.state{}", p.name, slot - 1);
        std::vector<float> values(static_cast<size_t>(p.count));
        m.backend->read(buffers[slot], values);
        if (!p.isPart()) {
          if (auto it = out.find(name); it != out.end())
            EXPECT_TRUE(bitIdentical("copy of " + name, values, it->second));
          else
            out[name] = values;
          continue;
        }
        const int64_t row = p.count / p.shape[0];
        std::vector<float> &whole = out[name];
        whole.resize(static_cast<size_t>(p.wholeRows * row), std::nanf(""));
        std::copy(values.begin(), values.end(), whole.begin() + static_cast<ptrdiff_t>(p.rowOffset * row));
      }
    }
  return out;
}

struct SplitCase {
  std::string name;
  std::string text;
  std::vector<std::string> splits;
  std::vector<std::string> cuts;
  plan::OptimizerKind optimizer = plan::OptimizerKind::Sgd;
  train::InitKind init = train::InitKind::Uniform;
  bool reference = false; // the reference kernels (sample-major, double sums)
};

void PrintTo(const SplitCase &c, std::ostream *out) {
  *out << c.name;
}

/// W (2,050 nodes) is computed in three blocks of outputs; its input
/// gradient is A's, which goes on to A's own weights.
const char *kSplitNet = R"(input X [5];
hidden A [6] tanh from X all;
hidden W [2050] sigmoid from A all;
output O [3] softmax from W all;
)";

/// A split layer of two bundles whose sources' gradients both flow on, a
/// layer after it reading it and one before it, and a split output layer
/// (softmax over its whole, linear: the loss reads the parts put together).
const char *kTwoBundles = R"(input X [4];
hidden A [5] tanh from X all;
hidden B [3] rlinear from X all;
hidden W [2100] tanh { from A all; from B all; }
hidden C [4] sigmoid { from W all; from A all; }
output O [1030] softmax { from C all; from W all; }
)";

/// Linear output layer split (its values are its pre-activation values).
const char *kLinearOutput = R"(input X [3];
hidden A [4] tanh from X all;
output O [1500] linear from A all;
)";

/// Given weights and biases on the split layer (each part takes its rows).
std::string givenWeights() {
  std::string weights, biases;
  for (int i = 0; i < 1100 * 2; ++i)
    weights += fmt::format("{}{:g}", i ? ", " : "", 0.001 * ((i * 37) % 101 - 50));
  for (int i = 0; i < 1100; ++i)
    biases += fmt::format("{}{:g}", i ? ", " : "", 0.002 * ((i * 13) % 17 - 8));
  return fmt::format(R"(input X [2];
hidden W [1100] tanh {{ Biases = [{}]; from X all {{ Weights = [{}]; }} }}
output O [3] softmax from W all;
)",
                     biases, weights);
}

std::vector<SplitCase> splitCases() {
  using plan::OptimizerKind;
  using train::InitKind;
  return {
      {"two_parts_sgd", kSplitNet, {"W:2"}, {}, OptimizerKind::Sgd, InitKind::Uniform, false},
      {"three_parts_adam", kSplitNet, {"W:3"}, {}, OptimizerKind::Adam, InitKind::Xavier, false},
      {"three_parts_reference", kSplitNet, {"W:3"}, {}, OptimizerKind::Sgd, InitKind::Uniform, true},
      {"two_layers_adadelta", kTwoBundles, {"W:2", "O:2"}, {}, OptimizerKind::AdaDelta, InitKind::He, false},
      {"two_layers_reference", kTwoBundles, {"W:2", "O:2"}, {}, OptimizerKind::Adam, InitKind::Xavier, true},
      {"linear_output", kLinearOutput, {"O:2"}, {}, OptimizerKind::Sgd, InitKind::Uniform, false},
      {"given_weights", givenWeights(), {"W:2"}, {}, OptimizerKind::Sgd, InitKind::Uniform, false},
      // With pipeline stages: the split stage between two others, and first.
      {"middle_stage", kTwoBundles, {"W:2"}, {"W", "C"}, OptimizerKind::Sgd, InitKind::Xavier, false},
      {"first_stage_adam", kSplitNet, {"W:3"}, {"O"}, OptimizerKind::Adam, InitKind::Uniform, false},
      {"last_stage_reference", kTwoBundles, {"O:2"}, {"C"}, OptimizerKind::Sgd, InitKind::Uniform, true},
  };
}

class SplitParts : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SplitParts, SameBitsAsOneProcessAccumulating) {
  const SplitCase &c = GetParam();
  auto compiled = compileText(c.text);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  const ir::Network &net = compiled->network;
  std::vector<int> stageOf;
  if (!c.cuts.empty()) {
    auto cut = cost::stagesFromCuts(net, c.cuts);
    ASSERT_TRUE(cut.ok()) << cut.message();
    stageOf = *cut;
  }
  auto splitParts = plan::splitPartsOf(net, c.splits);
  ASSERT_TRUE(splitParts.ok()) << splitParts.message();
  auto widths = plan::stageWidths(net, stageOf, *splitParts);
  ASSERT_TRUE(widths.ok()) << widths.message();
  const int stages = static_cast<int>(widths->size());
  const int64_t micro = 5, microBatches = 3, steps = 2;

  plan::PlanOptions options;
  options.update.optimizer = c.optimizer;
  options.update.hyper.momentum = 0.9f;
  options.accumulateGradients = true;
  auto whole = plan::buildPlan(net, options);
  ASSERT_TRUE(whole.ok()) << whole.message();
  StageMachine one = loadStageMachine(std::move(*whole), micro, c.reference);
  std::vector<StageMachine> ranks;
  std::vector<int> stageOfRank;
  Wires wires;
  std::vector<std::unique_ptr<LoopbackCommunicator>> links;
  const int count = plan::pipelineRank(*widths, stages, 0);
  for (int s = 0; s < stages; ++s)
    for (int p = 0; p < (*widths)[size_t(s)]; ++p) {
      options.stageOf = stageOf;
      options.stage = s;
      options.splitParts = *splitParts;
      options.part = p;
      auto built = plan::buildPlan(net, options);
      ASSERT_TRUE(built.ok()) << built.message();
      EXPECT_EQ(built->part, p);
      EXPECT_EQ(built->parts, (*widths)[size_t(s)]);
      const int rank = static_cast<int>(ranks.size());
      ranks.push_back(loadStageMachine(std::move(*built), micro, c.reference));
      stageOfRank.push_back(s);
      links.push_back(std::make_unique<LoopbackCommunicator>(wires, rank, count));
      ranks.back().backend->attachStages(links.back().get());
    }
  ASSERT_EQ(static_cast<int>(ranks.size()), count);
  ASSERT_GT(count, stages);

  const train::InitOptions init{c.init, 0.1f, 7};
  train::initializeParameters(one.plan, *one.backend, init);
  for (StageMachine &m : ranks)
    train::initializeParameters(m.plan, *m.backend, init);
  {
    const auto initial = tensorsOf(one), parted = wholeTensors(ranks);
    ASSERT_EQ(initial.size(), parted.size());
    for (const auto &[name, values] : initial)
      EXPECT_TRUE(bitIdentical("initial " + name, parted.at(name), values));
  }

  std::mt19937 rng(11);
  for (int64_t step = 1; step <= steps; ++step) {
    const MicroBatches batches = randomMicroBatches(rng, one.plan, microBatches, micro);
    const auto &x = batches.features, &labels = batches.labels;
    const auto scalars = optim::stepScalars(options.update, 0.05f, step, double(micro * microBatches), micro);
    Status accumulated = runAccumulating(one.plan, *one.backend, batches, micro, scalars); // one process
    ASSERT_TRUE(accumulated) << accumulated.message();
    // Every rank: each micro-batch forward (the first of the step from 0,
    // zeroing the gradients) and back, then the update.
    std::vector<std::vector<RankOp>> work(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r) {
      StageMachine &m = ranks[r];
      const bool first = stageOfRank[r] == 0, last = stageOfRank[r] + 1 == stages;
      for (int64_t b = 0; b < microBatches; ++b) {
        auto inputs = [&m, &x, &labels, &scalars, first, last, b] {
          train::writeStepScalars(m.plan, *m.backend, scalars);
          if (first)
            m.backend->writeInput(0, m.plan.features, x[size_t(b)]);
          if (last)
            m.backend->writeInput(0, m.plan.labels, labels[size_t(b)]);
          m.backend->fence();
        };
        for (size_t i = b == 0 ? 0 : m.plan.stepBegin; i < m.plan.backwardEnd; ++i)
          work[r].push_back(
              {i, micro, i == (b == 0 ? 0 : m.plan.stepBegin) ? std::function<void()>(inputs) : nullptr});
      }
      for (size_t i = m.plan.backwardEnd; i < m.plan.updateEnd; ++i)
        work[r].push_back({i, micro, nullptr});
    }
    std::vector<const plan::Plan *> plans;
    std::vector<runtime::Backend *> backends;
    for (StageMachine &m : ranks) {
      plans.push_back(&m.plan);
      backends.push_back(m.backend.get());
    }
    Status ran = runRanks(plans, backends, work, wires);
    ASSERT_TRUE(ran) << ran.message();
  }
  for (const auto &[pair, queue] : wires.queues)
    EXPECT_TRUE(queue.empty()) << queue.size() << " message(s) from rank " << pair.first << " to rank "
                               << pair.second << " were never received";
  const auto trained = tensorsOf(one), parted = wholeTensors(ranks);
  ASSERT_EQ(trained.size(), parted.size());
  for (const auto &[name, values] : trained)
    EXPECT_TRUE(bitIdentical(name, parted.at(name), values));
  const auto oneMetrics = train::takeMetrics(one.plan, *one.backend);
  for (size_t r = 0; r < ranks.size(); ++r)
    if (stageOfRank[r] + 1 == stages) {
      EXPECT_EQ(train::takeMetrics(ranks[r].plan, *ranks[r].backend), oneMetrics) << "rank " << r;
    }
  EXPECT_GT(oneMetrics[static_cast<size_t>(plan::Metric::LossSum)], 0.0);
}

INSTANTIATE_TEST_SUITE_P(Cases, SplitParts, ::testing::ValuesIn(splitCases()), netCaseName<SplitCase>);

/// The transfers of a split part's plan, as messages name them (a timeout
/// says which one did not complete), and the pipeline ranks they go to.
TEST(SplitPlans, TransfersAreNamedForMessages) {
  auto compiled = compileText(kTwoBundles);
  const ir::Network &net = compiled->network;
  auto stageOf = cost::stagesFromCuts(net, {"W"});
  auto splitParts = plan::splitPartsOf(net, {"W:2"});
  ASSERT_TRUE(stageOf.ok() && splitParts.ok());
  plan::PlanOptions options;
  options.stageOf = *stageOf;
  options.splitParts = *splitParts;
  std::vector<std::string> names;
  for (int part : {0, 1}) {
    options.stage = 1;
    options.part = part;
    auto built = plan::buildPlan(net, options);
    ASSERT_TRUE(built.ok()) << built.message();
    for (const plan::Op &op : built->ops)
      if (op.kind == plan::OpKind::Send || op.kind == plan::OpKind::Receive)
        names.push_back(fmt::format("{} -> rank {}", plan::communicationName(*built, op),
                                    op.get<plan::TransferAttrs>().peer));
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       // part 0 (rank 1): the values from stage 0, its part to part 1 and part 1's back, the
                       // input gradients A's and B's in the chain, and those that stage 0 wants back
                       "receive of the values of 'A' from stage 0 -> rank 0",
                       "receive of the values of 'B' from stage 0 -> rank 0",
                       "send of part 0 of 'W.pre' to part 1 -> rank 2",
                       "receive of part 1 of 'W.pre' from part 1 -> rank 2",
                       "send of the gradient of 'B' summed over the parts to part 1 -> rank 2",
                       "receive of the gradient of 'B' summed over the parts from part 1 -> rank 2",
                       "send of the gradient of 'A' summed over the parts to part 1 -> rank 2",
                       "receive of the gradient of 'A' summed over the parts from part 1 -> rank 2",
                       "send of the gradient of 'A' to stage 0 -> rank 0",
                       "send of the gradient of 'B' to stage 0 -> rank 0",
                       // part 1 (rank 2): the same, but only part 0 sends to stage 0
                       "receive of the values of 'A' from stage 0 -> rank 0",
                       "receive of the values of 'B' from stage 0 -> rank 0",
                       "send of part 1 of 'W.pre' to part 0 -> rank 1",
                       "receive of part 0 of 'W.pre' from part 0 -> rank 1",
                       "receive of the gradient of 'B' summed over the parts from part 0 -> rank 1",
                       "send of the gradient of 'B' summed over the parts to part 0 -> rank 1",
                       "receive of the gradient of 'A' summed over the parts from part 0 -> rank 1",
                       "send of the gradient of 'A' summed over the parts to part 0 -> rank 1",
                   }));
}

/// What cannot be split is refused with the layer and the reason.
TEST(SplitPlans, LayersThatCannotBeSplitAreRefused) {
  const std::string text = R"(input X [4];
hidden A [1500] tanh from X all;
hidden C [2, 2] tanh from X convolve { InputShape = [4]; KernelShape = [2]; Stride = [2]; MapCount = 2; }
hidden S [1100] tanh from A where (s, d) => s == d % 1500;
hidden T1 [1100] tanh from A all;
hidden T2 [1100] tanh from A all;
output O [3] softmax { from S all; from T1 all; from T2 all; from C all; }
share { T1, T2 }
)";
  auto compiled = compileText(text);
  const ir::Network &net = compiled->network;
  auto refusal = [&](std::vector<std::string> splits, std::vector<std::string> cuts = {}) -> std::string {
    auto parts = plan::splitPartsOf(net, splits);
    if (!parts)
      return parts.message();
    plan::PlanOptions options;
    if (!cuts.empty())
      options.stageOf = *cost::stagesFromCuts(net, cuts);
    options.splitParts = *parts;
    auto built = plan::buildPlan(net, options);
    return built ? std::string("built") : built.message();
  };
  EXPECT_EQ(refusal({"A:2"}), "built");
  EXPECT_EQ(refusal({"X:2"}),
            "--split X:2: 'X' is an input layer; only a hidden or output layer computes its "
            "nodes, and can share them out");
  EXPECT_EQ(refusal({"S:2"}),
            "--split S:2: layer 'S' has a 'where' bundle from 'A'; only fully connected layers "
            "(every bundle into them `all`) are split");
  EXPECT_EQ(refusal({"T1:2"}),
            "--split T1:2: layer 'T1' shares 'T1/A/weights' with layer 'T2' (share): a split "
            "layer's weights and biases must be its own");
  EXPECT_EQ(refusal({"C:2"}), "--split C:2: layer 'C' has a 'convolve' bundle from 'X'; only fully connected "
                              "layers (every bundle into them `all`) are split");
  EXPECT_EQ(refusal({"O:2"}),
            "--split O:2: layer 'O': its 3 nodes are computed in one product (a dense op "
            "computes at most 1024 outputs at once, and a split gives each rank whole blocks, so "
            "that it computes what one process does): only a layer of more than 1024 nodes is split");
  EXPECT_EQ(refusal({"A:3"}),
            "--split A:3: layer 'A': its 1500 nodes are computed in 2 blocks of 750 (a dense op "
            "computes at most 1024 outputs at once, and a split gives each rank whole blocks, so "
            "that it computes what one process does): split it over 2 ranks");
  EXPECT_EQ(refusal({"TT1:2"}), "--split TT1:2: network 't' has no layer 'TT1'; did you mean 'T1'?");
  EXPECT_EQ(refusal({"A:2", "A:2"}), "--split names layer 'A' twice");
  EXPECT_EQ(refusal({"A:two"}), "--split 'A:two': the ranks after ':' must be a whole number from 2 to 1024");
  EXPECT_EQ(refusal({"A"}), "--split 'A': give LAYER:RANKS, a layer and the ranks its nodes are shared among "
                            "(e.g. Hidden:2)");
  EXPECT_EQ(refusal({"A:2", "S:3"}),
            "--split: layers 'A' and 'S' are split over 2 and 3 ranks; the split layers "
            "share one stage's ranks, so give them the same count");
  EXPECT_EQ(
      refusal({"A:2", "T1:2"}, {"S"}),
      "--split: layers 'A' (stage 0) and 'T1' (stage 1) are split, but split layers must lie in one stage (a "
      "pipeline then has its stages + 1 ranks): cut so that both fall in one stage, or split only one");
}

/// Seeded mutation of --split lists on every example and the networks
/// above: random layers
/// (some unknown), counts and parts; each plan is built or refused with a
/// message starting with --split, never a crash (the sanitizer build runs this).
TEST(SplitPlans, RandomSplitsAreBuiltOrRefusedWithAMessage) {
  std::mt19937 rng(41);
  int built = 0, refused = 0;
  std::vector<std::string> texts = {kSplitNet, kTwoBundles, kLinearOutput}; // with layers that split
  for (const std::string &example : exampleNames())
    if (std::string text = readFile(sourcePath("examples/" + example));
        text.find(" auto") == std::string::npos)
      texts.push_back(std::move(text));
  for (const std::string &text : texts) {
    auto compiled = compileText(text);
    const ir::Network &net = compiled->network;
    for (int round = 0; round < 60; ++round) {
      std::vector<std::string> splits;
      const int count = 1 + int(rng() % 2);
      for (int i = 0; i < count; ++i)
        splits.push_back(fmt::format("{}:{}",
                                     rng() % 8 == 0 ? std::string("Nope")
                                                    : net.layers[rng() % uint32_t(net.layers.size())].name,
                                     rng() % 6));
      auto parts = plan::splitPartsOf(net, splits);
      if (!parts) {
        EXPECT_EQ(parts.message().rfind("--split", 0), 0u) << parts.message();
        ++refused;
        continue;
      }
      plan::PlanOptions options;
      options.buildTables = false;
      options.splitParts = *parts;
      options.part = int(rng() % 4);
      auto plan = plan::buildPlan(net, options);
      if (plan) {
        ++built;
      } else {
        EXPECT_FALSE(plan.message().empty());
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(built, 5);
}

} // namespace
} // namespace netc::numeric
