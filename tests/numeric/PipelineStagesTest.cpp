// PipelineStagesTest.cpp -- pipeline stages' plans (codegen/PlanStages.cpp)
// compute the same bits as one process. K stage plans run on K CPU
// backends in this process, joined by an in-memory communicator, one
// micro-batch at a time through every stage forward and back; the whole
// network's plan runs the same micro-batches with gradient accumulation.
// After two optimizer steps every parameter and optimizer-state tensor, and
// the loss sums, must be identical; so must the initial values, which
// each stage draws from its place in the network's one random sequence.
#include "PipelineLoopback.h"
#include "PlanHarness.h"

#include "codegen/Codegen.h"
#include "codegen/Partition.h"
#include "codegen/TrainingEstimate.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>

namespace netc::numeric {
namespace {

struct PipelineCase {
  std::string name;
  std::string text;
  std::vector<std::string> cuts;
  plan::OptimizerKind optimizer = plan::OptimizerKind::Sgd;
  train::InitKind init = train::InitKind::Uniform;
  /// The order of the micro-batches: a schedule's, each stage in its
  /// activation slots; none: each micro-batch through every stage and back
  /// before the next (one slot).
  std::optional<train::PipelineScheduleKind> schedule;
};

void PrintTo(const PipelineCase &c, std::ostream *out) {
  *out << c.name;
}

/// A branched network whose skip connections cross two cuts: In and A are
/// read two stages later, and A's gradient gathers contributions from both
/// later stages and its own.
std::vector<PipelineCase> pipelineCases() {
  const std::string mnist = readFile(sourcePath("examples/mnist.net"));
  const std::string lenet = readFile(sourcePath("examples/lenet5.net"));
  using plan::OptimizerKind;
  using train::InitKind;
  const std::vector<PipelineCase> networks = {
      {"mnist_k2_sgd", mnist, {"Hid3"}, OptimizerKind::Sgd, InitKind::Uniform, {}},
      {"mnist_k3_adam", mnist, {"Conv2", "Digit"}, OptimizerKind::Adam, InitKind::Xavier, {}},
      {"lenet5_k2_adadelta", lenet, {"Full3"}, OptimizerKind::AdaDelta, InitKind::He, {}},
      {"lenet5_k3_sgd", lenet, {"Pool1", "Full3"}, OptimizerKind::Sgd, InitKind::Xavier, {}},
      {"skip_k2_sgd", kSkipNet, {"C"}, OptimizerKind::Sgd, InitKind::Uniform, {}},
      {"skip_k3_adam", kSkipNet, {"B", "D"}, OptimizerKind::Adam, InitKind::Xavier, {}},
  };
  std::vector<PipelineCase> out;
  for (const PipelineCase &c : networks) {
    out.push_back(c);
    out.back().name += "_serial";
    for (auto kind :
         {train::PipelineScheduleKind::OneForwardOneBackward, train::PipelineScheduleKind::GPipe}) {
      out.push_back(c);
      out.back().name += "_" + std::string(train::pipelineScheduleName(kind));
      out.back().schedule = kind;
    }
  }
  return out;
}

class PipelineStages : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(PipelineStages, SameBitsAsOneProcessAccumulating) {
  const PipelineCase &c = GetParam();
  auto compiled = compileText(c.text);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  const ir::Network &net = compiled->network;
  auto stageOf = cost::stagesFromCuts(net, c.cuts);
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  const int stages = static_cast<int>(c.cuts.size()) + 1;
  const int64_t micro = 5, microBatches = 3, steps = 2;

  plan::PlanOptions options;
  options.update.optimizer = c.optimizer;
  options.update.hyper.momentum = 0.9f;
  options.accumulateGradients = true;
  auto whole = plan::buildPlan(net, options);
  ASSERT_TRUE(whole.ok()) << whole.message();
  StageMachine one = loadStageMachine(std::move(*whole), micro);
  std::vector<StageMachine> stage;
  Wires wires;
  std::vector<std::unique_ptr<LoopbackCommunicator>> links;
  for (int s = 0; s < stages; ++s) {
    options.stageOf = *stageOf;
    options.stage = s;
    auto built = plan::buildPlan(net, options);
    ASSERT_TRUE(built.ok()) << built.message();
    EXPECT_EQ(built->stages, stages);
    if (c.schedule) { // a micro-batch's activations and inputs stay in their slot until its backward
      built->activationSlots = train::activationSlots(*c.schedule, stages, s, int(microBatches));
      built->inputSlots = built->activationSlots;
    }
    stage.push_back(loadStageMachine(std::move(*built), micro));
    links.push_back(std::make_unique<LoopbackCommunicator>(wires, s, stages));
    stage.back().backend->attachStages(links.back().get());
  }
  const plan::Plan &first = stage.front().plan, &last = stage.back().plan;
  ASSERT_GE(first.features, 0);
  ASSERT_LT(last.features, 0);
  ASSERT_GE(last.labels, 0);

  const train::InitOptions init{c.init, 0.1f, 7};
  train::initializeParameters(one.plan, *one.backend, init);
  std::map<std::string, std::vector<float>> initial, staged;
  for (StageMachine &m : stage) {
    train::initializeParameters(m.plan, *m.backend, init);
    staged.merge(tensorsOf(m));
  }
  initial = tensorsOf(one);
  ASSERT_EQ(initial.size(), staged.size());
  for (const auto &[name, values] : initial)
    EXPECT_TRUE(bitIdentical("initial " + name, staged[name], values));

  std::mt19937 rng(11);
  for (int64_t step = 1; step <= steps; ++step) {
    const MicroBatches batches = randomMicroBatches(rng, one.plan, microBatches, micro);
    const auto &x = batches.features, &labels = batches.labels;
    const auto scalars = optim::stepScalars(options.update, 0.05f, step, double(micro * microBatches), micro);
    Status ran = runAccumulating(one.plan, *one.backend, batches, micro, scalars); // one process
    ASSERT_TRUE(ran) << ran.message();
    // The pipeline: a forward runs [stepBegin, forwardEnd) (the first of the
    // step from 0, zeroing the gradients), a backward [forwardEnd,
    // backwardEnd) (the last stage's loss included), with the micro-batch's
    // inputs and activations in its slot.
    auto act = [&](int s, const train::PipelineAction &a) -> Status {
      StageMachine &m = stage[size_t(s)];
      train::writeStepScalars(m.plan, *m.backend, scalars);
      if (!a.backward && s == 0)
        m.backend->writeInput(a.slot, m.plan.features, x[size_t(a.microBatch)]);
      if (!a.backward && s + 1 == stages)
        m.backend->writeInput(a.slot, m.plan.labels, labels[size_t(a.microBatch)]);
      m.backend->fence();
      const size_t begin = a.backward ? m.plan.forwardEnd : a.microBatch == 0 ? 0 : m.plan.stepBegin;
      const size_t end = a.backward ? m.plan.backwardEnd : m.plan.forwardEnd;
      return m.backend->run(begin, end, micro, a.slot, a.slot);
    };
    if (!c.schedule) { // each micro-batch through every stage and back before the next
      for (int64_t m = 0; m < microBatches; ++m) {
        for (int s = 0; s < stages; ++s) {
          Status forward = act(s, {false, int(m), 0});
          ASSERT_TRUE(forward) << "stage " << s << ": " << forward.message();
        }
        for (int s = stages - 1; s >= 0; --s) {
          Status backward = act(s, {true, int(m), 0});
          ASSERT_TRUE(backward) << "stage " << s << ": " << backward.message();
        }
      }
    } else { // every stage's schedule, each action as soon as what it receives has been sent
      Status ran = runSchedules(*c.schedule, stages, int(microBatches), wires, act);
      ASSERT_TRUE(ran) << ran.message();
    }
    for (int s = 0; s < stages; ++s) {
      const plan::Plan &p = stage[size_t(s)].plan;
      Status update = stage[size_t(s)].backend->run(p.backwardEnd, p.updateEnd, micro, 0);
      ASSERT_TRUE(update) << "stage " << s << ": " << update.message();
    }
  }
  for (const auto &[pair, queue] : wires.queues)
    EXPECT_TRUE(queue.empty()) << queue.size() << " message(s) from rank " << pair.first << " to rank "
                               << pair.second << " were never received";
  for (int s = 0; s + 1 < stages; ++s)
    EXPECT_GT(links[size_t(s)]->sent, 0) << "stage " << s << " sent nothing";

  staged.clear();
  for (const StageMachine &m : stage)
    staged.merge(tensorsOf(m));
  const auto trained = tensorsOf(one);
  ASSERT_EQ(trained.size(), staged.size());
  for (const auto &[name, values] : trained)
    EXPECT_TRUE(bitIdentical(name, staged[name], values));
  const auto oneMetrics = train::takeMetrics(one.plan, *one.backend);
  const auto lastMetrics = train::takeMetrics(last, *stage.back().backend);
  EXPECT_EQ(oneMetrics, lastMetrics);
  EXPECT_GT(oneMetrics[static_cast<size_t>(plan::Metric::LossSum)], 0.0);
}

INSTANTIATE_TEST_SUITE_P(Cases, PipelineStages, ::testing::ValuesIn(pipelineCases()),
                         netCaseName<PipelineCase>);

/// Each stage holds only its own layers' parameters, and the stages
/// together hold every parameter of the network once; only the first
/// holds the features, only the last the labels.
TEST(PipelineStagePlans, EachParameterInExactlyOneStage) {
  auto compiled = compileText(kSkipNet);
  auto stageOf = cost::stagesFromCuts(compiled->network, {"B", "D"});
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  plan::PlanOptions options;
  auto whole = plan::buildPlan(compiled->network, options);
  ASSERT_TRUE(whole.ok());
  std::map<std::string, int> seen;
  for (int s = 0; s < 3; ++s) {
    options.stageOf = *stageOf;
    options.stage = s;
    auto p = plan::buildPlan(compiled->network, options);
    ASSERT_TRUE(p.ok()) << p.message();
    for (const plan::Parameter &param : p->parameters)
      ++seen[param.name];
    int features = 0, labels = 0;
    for (const plan::Buffer &b : p->buffers) {
      features += b.role == plan::BufferRole::Features;
      labels += b.role == plan::BufferRole::Labels;
    }
    EXPECT_EQ(features, s == 0 ? 1 : 0) << "stage " << s;
    EXPECT_EQ(labels, s == 2 ? 1 : 0) << "stage " << s;
  }
  EXPECT_EQ(seen.size(), whole->parameters.size());
  for (const auto &[name, count] : seen)
    EXPECT_EQ(count, 1) << name;
}

/// Stages are runs of the declaration order where it is topological (C is
/// declared after B, though it could be computed before it), and a cut
/// given as stages that are not consecutive in that order is refused.
TEST(PipelineStagePlans, StagesFollowTheDeclarationOrder) {
  const char *text = R"(input In [4];
hidden A [3] from In all;
hidden B [3] from A all;
hidden C [3] from In all;
output O [2] { from B all; from C all; }
)";
  auto compiled = compileText(text);
  const ir::Network &net = compiled->network;
  auto stageOf = cost::stagesFromCuts(net, {"B"});
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  EXPECT_EQ(*stageOf, (std::vector<int>{0, 0, 1, 1, 1}));
  plan::PlanOptions options;
  options.stageOf = {0, 1, 1, 0, 1}; // C (stage 0) after B (stage 1)
  auto refused = plan::buildPlan(net, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "layer 'C' is in stage 0 but comes after a layer of stage 1 in the network's "
                               "order: stages must be consecutive runs of layers");
  options.stageOf = {1, 1, 1, 1, 1};
  refused = plan::buildPlan(net, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "the input layer 'In' must be in the first stage");
  options.stageOf = {0, 1, 1, 2, 1};
  refused = plan::buildPlan(net, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "the output layer 'O' must be in the last stage");
  options.training = false;
  options.stageOf = {0, 0, 1, 1, 1};
  refused = plan::buildPlan(net, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "only a training plan is cut into pipeline stages");
}

/// The schedules as text, "F0/0" for the forward of micro-batch 0 in slot 0.
std::string scheduleText(train::PipelineScheduleKind kind, int stages, int stage, int microBatches) {
  std::string out;
  for (const train::PipelineAction &a : train::stageSchedule(kind, stages, stage, microBatches))
    out += fmt::format("{}{}{}/{}", out.empty() ? "" : " ", a.backward ? 'B' : 'F', a.microBatch, a.slot);
  return out;
}

TEST(PipelineSchedule, OneForwardOneBackwardAndGPipe) {
  using train::PipelineScheduleKind;
  const auto f1b = PipelineScheduleKind::OneForwardOneBackward, gpipe = PipelineScheduleKind::GPipe;
  // K = 3, M = 4: stage 0 warms up with 2 forwards and holds 3 in flight;
  // the last stage runs each micro-batch forward and back at once.
  EXPECT_EQ(scheduleText(f1b, 3, 0, 4), "F0/0 F1/1 F2/2 B0/0 F3/0 B1/1 B2/2 B3/0");
  EXPECT_EQ(scheduleText(f1b, 3, 1, 4), "F0/0 F1/1 B0/0 F2/0 B1/1 F3/1 B2/0 B3/1");
  EXPECT_EQ(scheduleText(f1b, 3, 2, 4), "F0/0 B0/0 F1/0 B1/0 F2/0 B2/0 F3/0 B3/0");
  EXPECT_EQ(train::activationSlots(f1b, 3, 0, 4), 3);
  EXPECT_EQ(train::activationSlots(f1b, 3, 2, 4), 1);
  // Fewer micro-batches than stages: no more slots than micro-batches.
  EXPECT_EQ(scheduleText(f1b, 4, 0, 2), "F0/0 F1/1 B0/0 B1/1");
  EXPECT_EQ(scheduleText(gpipe, 2, 1, 3), "F0/0 F1/1 F2/2 B0/0 B1/1 B2/2");
  EXPECT_EQ(train::activationSlots(gpipe, 2, 1, 3), 3);
  // Every schedule: each micro-batch once each way, backwards in order, a
  // slot never reused while its micro-batch is in flight.
  for (auto kind : {f1b, gpipe})
    for (int stages = 1; stages <= 5; ++stages)
      for (int stage = 0; stage < stages; ++stage)
        for (int m = 1; m <= 9; ++m) {
          const int slots = train::activationSlots(kind, stages, stage, m);
          std::vector<int> holder(size_t(slots), -1);
          int forwards = 0, backwards = 0;
          for (const train::PipelineAction &a : train::stageSchedule(kind, stages, stage, m)) {
            ASSERT_LT(a.slot, slots);
            if (!a.backward) {
              EXPECT_EQ(a.microBatch, forwards++);
              EXPECT_EQ(holder[size_t(a.slot)], -1) << "slot " << a.slot << " still in use";
              holder[size_t(a.slot)] = a.microBatch;
            } else {
              EXPECT_EQ(a.microBatch, backwards++);
              EXPECT_LT(a.microBatch, forwards) << "a backward before its forward";
              EXPECT_EQ(holder[size_t(a.slot)], a.microBatch);
              holder[size_t(a.slot)] = -1;
            }
          }
          EXPECT_EQ(forwards, m);
          EXPECT_EQ(backwards, m);
        }
  EXPECT_FALSE(train::parsePipelineSchedule("pipedream").ok());
  EXPECT_EQ(*train::parsePipelineSchedule("gpipe"), gpipe);
}

/// Every example that compiles without options (no `auto` sizes), by file name.
std::vector<std::pair<std::string, std::unique_ptr<Compilation>>> compiledExamples() {
  std::vector<std::pair<std::string, std::unique_ptr<Compilation>>> out;
  for (const std::string &example : exampleNames()) {
    const std::string text = readFile(sourcePath("examples/" + example));
    if (text.find(" auto") == std::string::npos)
      out.emplace_back(example, compileText(text));
  }
  return out;
}

/// The partition pass cuts only where stage plans can be built: never
/// between layers that share weights, before the last input or after the
/// output. For every example and K = 2..4 it either gives a partition whose
/// every stage builds, or refuses K and names how many stages it can make.
TEST(PipelineStagePlans, PartitionPassCutsOnlyWhereStagesBuild) {
  auto table = cost::loadCostTable("cpu");
  ASSERT_TRUE(table.ok()) << table.message();
  const cost::ComputeProfile &profile = table->profileFor(1);
  int partitioned = 0, refused = 0;
  for (const auto &[example, compiled] : compiledExamples()) {
    SCOPED_TRACE(example);
    const ir::Network &net = compiled->network;
    plan::PlanOptions sizes;
    sizes.buildTables = false;
    auto whole = plan::buildPlan(net, sizes);
    ASSERT_TRUE(whole.ok()) << whole.message();
    for (int k = 2; k <= 4; ++k) {
      auto request = cost::pipelineRequest(net, *whole, *table, profile, k, 0, 32);
      ASSERT_TRUE(request.ok()) << request.message();
      auto partition = cost::partitionLayers(*request);
      if (!partition) {
        EXPECT_NE(partition.message().find("use at most"), std::string::npos) << partition.message();
        ++refused;
        continue;
      }
      ++partitioned;
      for (int stage = 0; stage < k; ++stage) {
        plan::PlanOptions options = sizes;
        options.stageOf = partition->stageOf;
        options.stage = stage;
        auto built = plan::buildPlan(net, options);
        EXPECT_TRUE(built.ok()) << "K = " << k << ", stage " << stage << ": " << built.message();
      }
    }
  }
  EXPECT_GT(partitioned, 20);
  EXPECT_GT(refused, 0); // siamese.net: H1 and H2 share weights, so at most 3 stages
}

/// Seeded mutation of the cuts a user or a library caller gives: random
/// lists of layer names (some unknown, repeated or out of order) and
/// random stage vectors. Every one either gives stages whose plans build or
/// is refused with a message; nothing crashes (the sanitizer build runs this).
TEST(PipelineStagePlans, RandomCutsAreBuiltOrRefusedWithAMessage) {
  std::mt19937 rng(31);
  int built = 0, refusedCuts = 0, refusedStages = 0;
  for (const auto &[example, compiled] : compiledExamples()) {
    SCOPED_TRACE(example);
    const ir::Network &net = compiled->network;
    const int layers = static_cast<int>(net.layers.size());
    plan::PlanOptions options;
    options.buildTables = false;
    for (int round = 0; round < 40; ++round) {
      std::vector<std::string> cuts;
      const int count = int(rng() % 4);
      for (int i = 0; i < count; ++i)
        cuts.push_back(rng() % 8 == 0 ? "Nope" + std::to_string(rng() % 3)
                                      : net.layers[rng() % static_cast<uint32_t>(layers)].name);
      auto stageOf = cost::stagesFromCuts(net, cuts);
      if (!stageOf) {
        EXPECT_EQ(stageOf.message().rfind("--cut: '", 0), 0u) << stageOf.message();
        ++refusedCuts;
        continue;
      }
      const int stages = 1 + *std::max_element(stageOf->begin(), stageOf->end());
      EXPECT_EQ(stages, count + 1);
      for (int stage = 0; stage < stages; ++stage) {
        options.stageOf = *stageOf;
        options.stage = stage;
        auto plan = plan::buildPlan(net, options);
        if (plan)
          ++built;
        else
          EXPECT_NE(plan.message().find("share the weights"), std::string::npos) << plan.message();
      }
    }
    for (int round = 0; round < 40; ++round) { // any stage vector at all
      std::vector<int> stageOf(static_cast<size_t>(layers));
      for (int &s : stageOf)
        s = int(rng() % 3);
      options.stageOf = stageOf;
      options.stage = int(rng() % 4);
      auto plan = plan::buildPlan(net, options);
      if (!plan) {
        EXPECT_FALSE(plan.message().empty());
        ++refusedStages;
      }
    }
  }
  EXPECT_GT(built, 100);
  EXPECT_GT(refusedCuts, 50);
  EXPECT_GT(refusedStages, 100);
}

} // namespace
} // namespace netc::numeric
