// CostModelTest.cpp -- the cost model (codegen/CostModel.h), the run
// estimate (codegen/TrainingEstimate.h) and calibration (netc/Estimate.h)
// against figures the tests compute on their own: each op kind's FLOPs and
// the update's bytes by hand on a small network of every bundle kind; the
// memory by kind summing to the plan's bytes per batch; the layers' costs
// summing to the step's compute; the gradient all-reduces overlapping the
// backward pass, replayed by a simulation here; an estimate's epoch,
// evaluation, total, weak scaling and pipeline arithmetic on a synthetic
// table; and a calibration written, read back and refused when it must be.
#include "TestSupport.h"

#include "api/NetworkImpl.h"
#include "codegen/Codegen.h"
#include "codegen/CostModel.h"
#include "codegen/TrainingEstimate.h"
#include "netc/Estimate.h"
#include "netc/netc.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <unistd.h>

namespace netc::unittest {
namespace {

using cost::ComputeProfile;
using cost::CostTable;
using cost::Link;
using plan::OpKind;

constexpr OpKind kAllKinds[] = {
#define OP(Id, Name, Role, Backward) OpKind::Id,
#include "codegen/Ops.def"
#undef OP
};

/// Compiles `text`; fails the test (and returns nothing) on an error.
std::optional<Network> compileNet(std::string_view text, const CompileOptions &options = {}) {
  CompileResult result = compile(text, "cost-model-test", options);
  EXPECT_TRUE(result.ok()) << result.formattedDiagnostics;
  return result.network;
}

/// Compiles examples/<name> (hello-world with 100 inputs).
std::optional<Network> compileExampleNet(const std::string &name) {
  CompileOptions options;
  if (name == "hello-world.net")
    options.inputSize = 100;
  CompileResult result = compileFile(sourcePath("examples/" + name), options);
  EXPECT_TRUE(result.ok()) << name << ":\n" << result.formattedDiagnostics;
  return result.network;
}

const ir::Network &irOf(const Network &network) {
  return network.impl().network;
}

plan::Plan planOf(const ir::Network &network, const plan::PlanOptions &options = {}) {
  auto built = plan::buildPlan(network, options);
  EXPECT_TRUE(built) << (built ? std::string() : built.message());
  return built ? std::move(*built) : plan::Plan{};
}

plan::PlanOptions withOptimizer(plan::OptimizerKind kind, float momentum = 0) {
  plan::PlanOptions options;
  options.update.optimizer = kind;
  options.update.hyper.momentum = momentum;
  return options;
}

// ---- op work by hand ------------------------------------------------------------------

// Every bundle kind: a shared and an unshared convolution from the input, a
// convolution from a pool (so it has an input gradient), max and mean pools,
// response norm, a `where` bundle and four `all` bundles into the output.
constexpr const char *kEveryKind =
    "input X [6, 6];\n"
    "hidden C [2, 5, 5] rlinear from X convolve { InputShape = [6, 6]; KernelShape = [2, 2];\n"
    "  Stride = [1, 1]; MapCount = 2; }\n"
    "hidden P [2, 4, 4] from C max pool { InputShape = [2, 5, 5]; KernelShape = [1, 2, 2];\n"
    "  Stride = [1, 1, 1]; }\n"
    "hidden M [2, 2, 2] from P mean pool { InputShape = [2, 4, 4]; KernelShape = [1, 2, 2];\n"
    "  Stride = [1, 2, 2]; }\n"
    "hidden N [1, 2, 2] from M response norm { InputShape = [2, 2, 2]; KernelShape = [2, 1, 1];\n"
    "  Alpha = 0.001; Beta = 0.75; }\n"
    "hidden V [2, 3, 3] rlinear from P convolve { InputShape = [2, 4, 4]; KernelShape = [2, 2, 2];\n"
    "  Stride = [1, 1, 1]; MapCount = 2; }\n"
    "hidden U [2, 2, 2] sigmoid from X convolve { InputShape = [6, 6]; KernelShape = [3, 3];\n"
    "  Stride = [3, 3]; Sharing = [false, true]; MapCount = 2; }\n"
    "hidden S [3] tanh from X where (s, d) => s[0] == d[0];\n"
    "output O [3] softmax { from N all; from S all; from V all; from U all; }\n";

TEST(CostModel, OpWorkFlopsByHand) {
  auto net = compileNet(kEveryKind);
  ASSERT_TRUE(net);
  const ir::Network &network = irOf(*net);
  const plan::Plan plan = planOf(network, withOptimizer(plan::OptimizerKind::Sgd, 0.9f));
  ASSERT_FALSE(plan.ops.empty());

  // Per (layer, bundle): the FLOPs per sample of its forward op and of each gradient.
  // convolution: 2 · outputs · window (C 50 × 4, V 18 × 8, U 8 × 9); pools:
  // outputs · window (P 32 × 4, M 8 × 4); norm: 3 · outputs · window (N 4 × 2);
  // where: 2 · edges (S: 6 sources per destination, 18 edges); all: 2 · in · out.
  const std::map<std::pair<std::string, int>, double> bundleFlops = {
      {{"C", 0}, 2.0 * 50 * 4}, {{"V", 0}, 2.0 * 18 * 8}, {{"U", 0}, 2.0 * 8 * 9}, {{"P", 0}, 32.0 * 4},
      {{"M", 0}, 8.0 * 4},      {{"N", 0}, 3.0 * 4 * 2},  {{"S", 0}, 2.0 * 18},    {{"O", 0}, 2.0 * 4 * 3},
      {{"O", 1}, 2.0 * 3 * 3},  {{"O", 2}, 2.0 * 18 * 3}, {{"O", 3}, 2.0 * 8 * 3}};
  // Activate: nodes × 8 for sigmoid, softmax, tanh; × 1 for rlinear.
  const std::map<std::string, double> activateFlops = {
      {"C", 50.0 * 1}, {"V", 18.0 * 1}, {"U", 8.0 * 8}, {"S", 3.0 * 8}, {"O", 3.0 * 8}};
  const std::set<OpKind> windowed = {OpKind::Dense,
                                     OpKind::DenseGradWeights,
                                     OpKind::DenseGradInput,
                                     OpKind::Sparse,
                                     OpKind::SparseGradWeights,
                                     OpKind::SparseGradInput,
                                     OpKind::Convolution,
                                     OpKind::ConvolutionGradWeights,
                                     OpKind::ConvolutionGradInput,
                                     OpKind::MaxPool,
                                     OpKind::MaxPoolGrad,
                                     OpKind::MeanPool,
                                     OpKind::MeanPoolGrad,
                                     OpKind::ResponseNorm,
                                     OpKind::ResponseNormGrad};

  std::map<OpKind, int> seen;
  for (const plan::Op &op : plan.ops) {
    const cost::OpWork work = cost::opWork(plan, op);
    const std::string where = fmt::format("op {} of layer {}", plan::opName(op.kind),
                                          op.layer >= 0 ? network.layers[op.layer].name : "-");
    if (windowed.count(op.kind)) {
      ASSERT_GE(op.layer, 0) << where;
      auto expected = bundleFlops.find({network.layers[op.layer].name, op.bundle});
      ASSERT_NE(expected, bundleFlops.end()) << where << " bundle " << op.bundle;
      EXPECT_DOUBLE_EQ(work.flopsPerSample, expected->second) << where;
      EXPECT_EQ(work.fixedFlops, 0) << where;
      EXPECT_EQ(cost::workMeasure(op.kind), cost::WorkMeasure::Flops) << where;
      ++seen[op.kind];
    } else if (op.kind == OpKind::Activate || op.kind == OpKind::ActivateGrad) {
      auto expected = activateFlops.find(network.layers[op.layer].name);
      ASSERT_NE(expected, activateFlops.end()) << where;
      EXPECT_DOUBLE_EQ(work.flopsPerSample, expected->second) << where;
      ++seen[op.kind];
    }
    if (op.kind == OpKind::Dense) {
      // x and y per sample, the weights once.
      const auto &d = op.get<plan::DenseAttrs>();
      EXPECT_DOUBLE_EQ(work.bytesPerSample, 4.0 * double(d.inputs + d.outputs)) << where;
      EXPECT_DOUBLE_EQ(work.fixedBytes, 4.0 * double(d.inputs * d.outputs)) << where;
    }
  }
  // Each forward kind once per bundle; the input gradients only where the
  // source is not an input (V's convolution, the four `all` bundles).
  EXPECT_EQ(seen[OpKind::Dense], 4);
  EXPECT_EQ(seen[OpKind::DenseGradWeights], 4);
  EXPECT_EQ(seen[OpKind::DenseGradInput], 4);
  EXPECT_EQ(seen[OpKind::Sparse], 1);
  EXPECT_EQ(seen[OpKind::SparseGradWeights], 1);
  EXPECT_EQ(seen[OpKind::Convolution], 3);
  EXPECT_EQ(seen[OpKind::ConvolutionGradWeights], 3);
  EXPECT_EQ(seen[OpKind::ConvolutionGradInput], 1);
  EXPECT_EQ(seen[OpKind::MaxPool], 1);
  EXPECT_EQ(seen[OpKind::MaxPoolGrad], 1);
  EXPECT_EQ(seen[OpKind::MeanPool], 1);
  EXPECT_EQ(seen[OpKind::MeanPoolGrad], 1);
  EXPECT_EQ(seen[OpKind::ResponseNorm], 1);
  EXPECT_EQ(seen[OpKind::ResponseNormGrad], 1);
  EXPECT_EQ(seen[OpKind::Activate], 5);
  // The unshared convolution is a grouped one: 2 groups of 2 maps at 2 positions.
  for (const plan::Op &op : plan.ops)
    if (op.kind == OpKind::Convolution && network.layers[op.layer].name == "U") {
      const auto &c = op.get<plan::ConvAttrs>();
      EXPECT_EQ(c.groups, 2);
      EXPECT_EQ(c.maps, 2);
      EXPECT_EQ(c.positions, 2);
      EXPECT_EQ(c.window, 9);
    }
}

TEST(CostModel, UpdateAndZeroGradientsBytes) {
  auto net = compileNet(kEveryKind);
  ASSERT_TRUE(net);
  struct Case {
    plan::OptimizerKind optimizer;
    float momentum;
    int slots;
  };
  for (const Case &c : {Case{plan::OptimizerKind::Sgd, 0, 0}, Case{plan::OptimizerKind::Sgd, 0.9f, 1},
                        Case{plan::OptimizerKind::Adam, 0, 2}, Case{plan::OptimizerKind::AdaDelta, 0, 2}}) {
    plan::PlanOptions options = withOptimizer(c.optimizer, c.momentum);
    options.accumulateGradients = true;
    const plan::Plan plan = planOf(irOf(*net), options);
    int updates = 0, zeroes = 0;
    for (const plan::Op &op : plan.ops) {
      const cost::OpWork work = cost::opWork(plan, op);
      if (op.kind == OpKind::Update) {
        ++updates;
        const auto &u = op.get<plan::UpdateAttrs>();
        EXPECT_EQ(u.stateSlots, c.slots);
        EXPECT_EQ(u.count, plan.trainedElements);
        EXPECT_DOUBLE_EQ(work.fixedBytes, 4.0 * double(plan.trainedElements) * (3 + 2 * c.slots));
        EXPECT_EQ(work.bytesPerSample, 0);
        EXPECT_EQ(work.flopsPerSample, 0);
        // A bytes op: its time is the overhead plus its bytes at the rate, whatever the batch.
        const cost::OpRate rate{2, 1e9, 0};
        EXPECT_DOUBLE_EQ(cost::opMicroseconds(op.kind, work, rate, 1000), 2 + work.fixedBytes / 1e9 * 1e6);
      } else if (op.kind == OpKind::ZeroGradients) {
        ++zeroes;
        EXPECT_DOUBLE_EQ(work.fixedBytes, 4.0 * double(plan.arenaElements));
      }
    }
    EXPECT_EQ(updates, 1);
    EXPECT_EQ(zeroes, 1);
    EXPECT_GT(plan.trainedElements, 0);
  }
}

TEST(CostModel, ArithmeticOpTimeAddsItsTraffic) {
  // 2·in·out FLOPs per sample at `rate`, plus every byte at `byteRate`.
  cost::OpWork work;
  work.flopsPerSample = 1000;
  work.bytesPerSample = 80;
  work.fixedBytes = 4000;
  const cost::OpRate rate{3, 1e9, 2e9};
  const double expected = 3 + 1000.0 * 16 / 1e9 * 1e6 + (80.0 * 16 + 4000) / 2e9 * 1e6;
  EXPECT_DOUBLE_EQ(cost::opMicroseconds(OpKind::Dense, work, rate, 16), expected);
  // A bytes op ignores the FLOPs.
  EXPECT_DOUBLE_EQ(cost::opMicroseconds(OpKind::AddBias, work, {3, 1e9, 0}, 16),
                   3 + (80.0 * 16 + 4000) / 1e9 * 1e6);
}

// ---- memory and layer costs over the examples ------------------------------------------

TEST(CostModel, MemoryUseSumsToBytesPerBatch) {
  for (const std::string &name : exampleNames()) {
    auto net = compileExampleNet(name);
    ASSERT_TRUE(net) << name;
    struct Variant {
      const char *what;
      plan::PlanOptions options;
      int slots;
    };
    plan::PlanOptions inference;
    inference.training = false;
    const std::vector<Variant> variants = {
        {"sgd", withOptimizer(plan::OptimizerKind::Sgd), 0},
        {"momentum", withOptimizer(plan::OptimizerKind::Sgd, 0.9f), 1},
        {"adam", withOptimizer(plan::OptimizerKind::Adam), 2},
        {"inference", inference, 0},
    };
    for (const Variant &v : variants) {
      const plan::Plan plan = planOf(irOf(*net), v.options);
      for (int64_t batch : {1, 7, 64, 1000}) {
        const cost::MemoryUse m = cost::memoryUse(plan, batch);
        const std::string where = fmt::format("{} {} at batch {}", name, v.what, batch);
        EXPECT_EQ(m.total(), plan.bytesPerBatch(batch)) << where;
        EXPECT_EQ(m.parameters, 4 * plan.arenaElements) << where;
        EXPECT_EQ(m.gradients, v.options.training ? 4 * plan.arenaElements : 0) << where;
        EXPECT_EQ(m.optimizerState, v.options.training ? 4 * plan.arenaElements * v.slots : 0) << where;
        EXPECT_EQ(m.inputs, 4 * plan.inputSlots * plan.memory.inputsPerSample * batch) << where;
        EXPECT_EQ(m.activations, 4 * plan.memory.arenaPerSample * batch) << where;
      }
    }
  }
}

/// The examples that `share` nothing: each parameter has one owner.
bool sharesNothing(const plan::Plan &plan) {
  for (const plan::Parameter &p : plan.parameters) {
    std::set<int> owners;
    for (const ir::ParamRef &owner : p.owners)
      owners.insert(owner.layer);
    if (owners.size() != 1)
      return false;
  }
  return true;
}

TEST(CostModel, LayerCostsAddUpToTheStep) {
  const std::optional<CostTable> table = cost::builtinCostTable("cpu");
  ASSERT_TRUE(table);
  const ComputeProfile &profile = table->profiles.front();
  const Link &link = table->linkFor(1);
  for (const std::string &name : exampleNames()) {
    auto net = compileExampleNet(name);
    ASSERT_TRUE(net) << name;
    const ir::Network &network = irOf(*net);
    for (int slots : {0, 2}) {
      const plan::Plan plan =
          planOf(network, withOptimizer(slots ? plan::OptimizerKind::Adam : plan::OptimizerKind::Sgd));
      const std::vector<cost::LayerCost> layers = cost::layerCosts(network, plan, profile);
      ASSERT_EQ(layers.size(), network.layers.size()) << name;
      // Every op with a rate but the update belongs to one layer (the loss to the output's).
      for (int64_t batch : {1, 32, 500}) {
        double sum = 0;
        for (const cost::LayerCost &layer : layers)
          sum += layer.timeUs(batch);
        const cost::StepTime step = cost::stepTime(plan, profile, batch, 1, link);
        const double rest = step.forwardUs + step.lossUs + step.backwardUs;
        EXPECT_NEAR(sum, rest, 1e-9 * rest) << name << " at batch " << batch;
        EXPECT_EQ(step.allReduceUs, 0);
        EXPECT_EQ(step.exposedCommUs, 0);
      }
      // The update op is shared out among the layers whole: the shares add up
      // to the op's time, and so the layers' costs to the step's compute.
      double update = 0, sum = 0;
      int64_t trained = 0;
      for (const cost::LayerCost &layer : layers) {
        update += layer.updateUs;
        sum += layer.timeUs(32) + layer.updateUs;
      }
      for (const plan::Parameter &p : plan.parameters)
        trained += p.trained ? p.count : 0;
      const cost::StepTime step = cost::stepTime(plan, profile, 32, 1, link);
      EXPECT_NEAR(update, step.updateUs, 1e-6 * step.updateUs)
          << name << ", " << slots << " state slots: the update's shares add up to " << update / step.updateUs
          << " of it; the trained parameters hold " << trained << " of the " << plan.trainedElements
          << " elements of the trained range";
      EXPECT_NEAR(sum, step.computeUs(), 1e-6 * step.computeUs()) << name << " at batch 32";
      // The fixed bytes: every parameter with its gradient and state, counted
      // once per owner, and the index tables.
      const cost::MemoryUse m = cost::memoryUse(plan, 1);
      int64_t fixedBytes = 0, parameterElements = 0;
      for (const cost::LayerCost &layer : layers)
        fixedBytes += layer.fixedBytes;
      for (const plan::Parameter &p : plan.parameters)
        parameterElements += p.count;
      const int64_t arenas = m.parameters + m.gradients + m.optimizerState;
      EXPECT_EQ(arenas, 4 * plan.arenaElements * (2 + slots)) << name;
      int64_t ownedElements = 0; // a shared parameter once per owning layer
      for (const plan::Parameter &p : plan.parameters) {
        std::set<int> owners;
        for (const ir::ParamRef &owner : p.owners)
          owners.insert(owner.layer);
        ownedElements += p.count * int64_t(owners.size());
      }
      EXPECT_EQ(fixedBytes, m.tables + 4 * ownedElements * (2 + slots)) << name;
      if (sharesNothing(plan)) {
        EXPECT_EQ(fixedBytes, m.tables + 4 * parameterElements * (2 + slots)) << name;
      } else {
        EXPECT_GT(fixedBytes, m.tables + 4 * parameterElements * (2 + slots)) << name;
      }
      // The arenas differ from the parameters by the 256-byte alignment only.
      EXPECT_LE(4 * parameterElements * (2 + slots), arenas) << name;
      EXPECT_LT(arenas - 4 * parameterElements * (2 + slots),
                int64_t(plan.parameters.size()) * 256 * (2 + slots))
          << name;
    }
  }
}

// ---- communication ---------------------------------------------------------------------

/// The test's own replay of a step's gradient all-reduces: buckets one after
/// another, each from the end of its readyAfter op (the backward pass timed
/// from its first op), none before the previous one ends.
struct CommReplay {
  double backwardUs = 0, allReduceUs = 0, exposedUs = 0, firstReadyUs = 0;
  bool idled = false; ///< the channel waited for a later bucket (not only the first)
};

double ringAllReduceUs(const Link &link, double bytes, int ranks) {
  return 2.0 * (ranks - 1) * link.alphaUs + 2.0 * (ranks - 1) / ranks * bytes / link.bytesPerSecond * 1e6;
}

CommReplay replay(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch, int ranks,
                  const Link &link) {
  CommReplay r;
  std::map<size_t, double> endOf;
  for (size_t i = plan.lossEnd; i < plan.backwardEnd; ++i) {
    r.backwardUs += cost::opMicroseconds(plan, i, profile, batch);
    endOf[i] = r.backwardUs;
  }
  double channel = 0;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const plan::Bucket &bucket = plan.buckets[b];
    EXPECT_TRUE(endOf.count(bucket.readyAfter)) << "bucket " << b << " ready after op " << bucket.readyAfter;
    const double ready = endOf[bucket.readyAfter];
    if (b == 0)
      r.firstReadyUs = ready;
    else if (ready > channel)
      r.idled = true;
    const double us = ringAllReduceUs(link, 4.0 * double(bucket.count), ranks);
    channel = std::max(channel, ready) + us;
    r.allReduceUs += us;
  }
  r.exposedUs = std::max(0.0, channel - r.backwardUs);
  return r;
}

TEST(CostModel, BucketAllReducesOverlapTheBackwardPass) {
  auto net = compileExampleNet("lenet5.net");
  ASSERT_TRUE(net);
  plan::PlanOptions options = withOptimizer(plan::OptimizerKind::Sgd, 0.9f);
  options.bucketBytes = 4096;
  options.replicaSync = plan::ReplicaSync::AllReduceGradients;
  const plan::Plan plan = planOf(irOf(*net), options);
  ASSERT_GE(plan.buckets.size(), 4u);
  // The buckets cover the trained range in order, each at least 4 KiB but the last.
  int64_t next = 0;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    EXPECT_EQ(plan.buckets[b].offset, next);
    next = plan.buckets[b].offset + plan.buckets[b].count;
    if (b + 1 < plan.buckets.size()) {
      EXPECT_GE(plan.buckets[b].count * 4, 4096);
    }
    EXPECT_LE(plan.lossEnd, plan.buckets[b].readyAfter);
    EXPECT_LT(plan.buckets[b].readyAfter, plan.backwardEnd);
  }
  EXPECT_EQ(next, plan.trainedElements);

  const CostTable table = *cost::builtinCostTable("cpu");
  const ComputeProfile &profile = table.profiles.front();
  bool idledAndExposed = false, hidden = false;
  for (int64_t batch : {1, 16, 256})
    for (int ranks : {2, 3, 8})
      for (const Link &link : {Link{5, 1e9, "", {}}, Link{50, 1e8, "", {}}, Link{0.5, 2e10, "", {}}}) {
        const cost::StepTime step = cost::stepTime(plan, profile, batch, ranks, link);
        const CommReplay r = replay(plan, profile, batch, ranks, link);
        const std::string where = fmt::format("batch {}, {} ranks, α {} µs", batch, ranks, link.alphaUs);
        EXPECT_NEAR(step.allReduceUs, r.allReduceUs, 1e-9 * r.allReduceUs) << where;
        EXPECT_NEAR(step.exposedCommUs, r.exposedUs, 1e-9 * std::max(1.0, r.allReduceUs)) << where;
        EXPECT_NEAR(step.backwardUs, r.backwardUs, 1e-9 * r.backwardUs) << where;
        EXPECT_LE(step.exposedCommUs, step.allReduceUs + 1e-9) << where;
        idledAndExposed |= r.idled && r.exposedUs > 0;
        hidden |= r.allReduceUs > 0 && r.exposedUs < 0.5 * r.allReduceUs;
        EXPECT_NEAR(step.totalUs(), step.computeUs() + step.hostUs + step.exposedCommUs,
                    1e-9 * step.totalUs());
      }
  // The cases replayed include a channel that waited for a bucket and still
  // ran past the backward pass, and one that hid most of its all-reduces.
  EXPECT_TRUE(idledAndExposed);
  EXPECT_TRUE(hidden);

  // One replica: nothing to communicate, whatever the link.
  const cost::StepTime alone = cost::stepTime(plan, profile, 32, 1, Link{1e6, 1, "", {}});
  EXPECT_EQ(alone.allReduceUs, 0);
  EXPECT_EQ(alone.exposedCommUs, 0);
  // A link that costs nothing hides every all-reduce.
  const cost::StepTime fast = cost::stepTime(plan, profile, 32, 4, Link{0, 1e30, "", {}});
  EXPECT_NEAR(fast.exposedCommUs, 0, 1e-9);
  EXPECT_NEAR(fast.allReduceUs, 0, 1e-9);
  // A link so slow that every bucket is ready before the first all-reduce
  // ends: the channel runs from the first bucket's readiness without a gap,
  // so exposed = Σ all-reduce − (backward time after the first bucket is ready).
  const CommReplay base = replay(plan, profile, 32, 4, Link{0, 1e30, "", {}});
  ASSERT_GT(base.backwardUs, 0);
  const Link slow{10 * base.backwardUs, 1e9, "", {}};
  const cost::StepTime s = cost::stepTime(plan, profile, 32, 4, slow);
  double sum = 0;
  for (const plan::Bucket &bucket : plan.buckets)
    sum += 2.0 * 3 * slow.alphaUs + 2.0 * 3 / 4 * 4.0 * double(bucket.count) / 1e9 * 1e6;
  EXPECT_NEAR(s.allReduceUs, sum, 1e-9 * sum);
  EXPECT_NEAR(s.exposedCommUs, sum - (base.backwardUs - base.firstReadyUs), 1e-9 * sum);
  // Averaging the replicas instead (local SGD): no all-reduce in the step.
  options.replicaSync = plan::ReplicaSync::AverageReplicas;
  const plan::Plan local = planOf(irOf(*net), options);
  const cost::StepTime averaged = cost::stepTime(local, profile, 32, 4, slow);
  EXPECT_EQ(averaged.allReduceUs, 0);
  EXPECT_EQ(averaged.exposedCommUs, 0);
}

// ---- the estimate's arithmetic ---------------------------------------------------------

/// Every op kind with a rate at 1 µs of overhead: 10 GFLOP/s, 20 GB/s.
CostTable syntheticTable() {
  CostTable table;
  table.backend = "cpu";
  table.device = "synthetic";
  table.source = "CostModelTest";
  table.memoryBytes = uint64_t{16} << 30;
  table.devicesPerNode = 4;
  ComputeProfile profile;
  profile.threads = 1;
  for (OpKind kind : kAllKinds)
    if (cost::hasRate(kind))
      profile.ops[kind] =
          cost::OpRate{1, cost::workMeasure(kind) == cost::WorkMeasure::Flops ? 1e10 : 2e10, 0};
  profile.stepOverheadUs = 40;
  profile.sampleOverheadUs = 0.25;
  table.profiles.push_back(profile);
  table.links[std::string(cost::kIntraNode)] = Link{5, 1e10, "synthetic", {}};
  table.links[std::string(cost::kInterNode)] = Link{100, 1e9, "synthetic", {}};
  return table;
}

/// The test's own evaluation time: `samples` over `ranks`, `batch` at a time.
double evaluationSeconds(const plan::Plan &plan, const ComputeProfile &profile, int64_t batch, int ranks,
                         int64_t samples) {
  auto forward = [&](int64_t b) {
    double us = 0;
    for (size_t i = plan.stepBegin; i < plan.lossEnd; ++i)
      us += cost::opMicroseconds(plan, i, profile, b);
    return us + profile.stepOverheadUs;
  };
  int64_t share = (samples + ranks - 1) / ranks;
  double us = 0;
  for (; share >= batch; share -= batch)
    us += forward(batch);
  if (share > 0)
    us += forward(share);
  return us * 1e-6;
}

/// The test's own epoch: global steps of batch × ranks, the last one short.
double epochSeconds(const plan::Plan &plan, const CostTable &table, int64_t batch, int ranks,
                    int64_t samples) {
  const ComputeProfile &profile = table.profiles.front();
  const Link &link =
      table.links.at(std::string(ranks <= table.devicesPerNode ? cost::kIntraNode : cost::kInterNode));
  const int64_t global = batch * ranks;
  const int64_t steps = (samples + global - 1) / global;
  const int64_t rest = samples - (steps - 1) * global;
  const double full = cost::stepTime(plan, profile, batch, ranks, link).totalUs();
  const double last = cost::stepTime(plan, profile, (rest + ranks - 1) / ranks, ranks, link).totalUs();
  return (double(steps - 1) * full + last) * 1e-6;
}

TEST(Estimate, EpochEvaluationAndTotal) {
  auto net = compileExampleNet("lenet5.net");
  ASSERT_TRUE(net);
  const plan::Plan plan = planOf(irOf(*net), withOptimizer(plan::OptimizerKind::Sgd, 0.9f));
  const CostTable table = syntheticTable();
  const ComputeProfile &profile = table.profiles.front();
  cost::EstimateRequest r;
  r.batch = 32;
  r.ranks = 3;
  r.threads = 1;
  r.trainSamples = 1000;
  r.evaluationSamples = 500;
  r.finalTestSamples = 301;
  r.epochs = 7;
  r.maxRanks = 64;
  auto e = cost::estimateTraining(irOf(*net), plan, table, r);
  ASSERT_TRUE(e) << e.message();
  // The table has only profiles measured alone; 3 ranks share the node.
  EXPECT_EQ(e->profileNote,
            "the cost table's 1-thread profile (measured alone: none with 3 ranks computing at once)");
  // 1000 samples in global steps of 96: 10 full, then 40 over 3 ranks (14 each).
  EXPECT_EQ(e->stepsPerEpoch, 11);
  const Link &intra = table.links.at(std::string(cost::kIntraNode));
  const double full = cost::stepTime(plan, profile, 32, 3, intra).totalUs();
  const double last = cost::stepTime(plan, profile, 14, 3, intra).totalUs();
  EXPECT_LT(last, full);
  EXPECT_NEAR(e->stepUs, full, 1e-9 * full);
  EXPECT_NEAR(e->epochSeconds, (10 * full + last) * 1e-6, 1e-9 * e->epochSeconds);
  // The step at 3 ranks pays for its all-reduces on the intra-node link.
  EXPECT_GT(e->step.allReduceUs, 0);
  EXPECT_NEAR(e->step.hostUs, 40 + 0.25 * 32, 1e-12);
  // Evaluation: ceil(500 / 3) = 167 per rank: 5 batches of 32 and one of 7.
  const double evaluation = evaluationSeconds(plan, profile, 32, 3, 500);
  EXPECT_NEAR(e->evaluationSeconds, evaluation, 1e-9 * evaluation);
  double forward32 = 0, forward7 = 0;
  for (size_t i = plan.stepBegin; i < plan.lossEnd; ++i) {
    forward32 += cost::opMicroseconds(plan, i, profile, 32);
    forward7 += cost::opMicroseconds(plan, i, profile, 7);
  }
  EXPECT_NEAR(e->evaluationSeconds, (5 * (forward32 + 40) + forward7 + 40) * 1e-6, 1e-9 * evaluation);
  // The final test: ceil(301 / 3) = 101 per rank: 3 batches of 32 and one of 5.
  const double finalTest = evaluationSeconds(plan, profile, 32, 3, 301);
  EXPECT_NEAR(e->totalSeconds, 7 * (e->epochSeconds + evaluation) + finalTest, 1e-9 * e->totalSeconds);
  EXPECT_NEAR(e->imagesPerSecond, 1000 / e->epochSeconds, 1e-9 * e->imagesPerSecond);
  EXPECT_EQ(e->memory.total(), plan.bytesPerBatch(32));
  EXPECT_FALSE(e->partition);

  // Weak scaling: 1, 2, 3 (the run's), 4, 8, ... 64 ranks.
  std::vector<int> ranks;
  for (const cost::ScalingPoint &point : e->scaling)
    ranks.push_back(point.ranks);
  EXPECT_EQ(ranks, (std::vector<int>{1, 2, 3, 4, 8, 16, 32, 64}));
  ASSERT_FALSE(e->scaling.empty());
  EXPECT_EQ(e->scaling[0].ranks, 1);
  EXPECT_EQ(e->scaling[0].efficiency, 1);
  const double oneStep = e->scaling[0].stepUs;
  for (const cost::ScalingPoint &point : e->scaling) {
    const std::string where = fmt::format("{} ranks", point.ranks);
    EXPECT_NEAR(point.epochSeconds, epochSeconds(plan, table, 32, point.ranks, 1000),
                1e-9 * point.epochSeconds)
        << where;
    EXPECT_NEAR(point.efficiency, oneStep / point.stepUs, 1e-12) << where;
    EXPECT_LE(point.efficiency, 1.0) << where;
    if (point.ranks > 1) {
      EXPECT_LT(point.efficiency, 1.0) << where << ": the link costs something";
    }
    if (point.ranks == 3) {
      EXPECT_EQ(e->efficiency, point.efficiency);
    }
  }
  // Beyond 4 ranks the inter-node link: slower steps.
  EXPECT_GT(e->scaling[4].stepUs, e->scaling[3].stepUs);
  // Where doubling stops paying: the first N with epoch(2N) > 0.9 · epoch(N).
  int stops = 64;
  for (int n = 1; n < 64; n *= 2)
    if (epochSeconds(plan, table, 32, 2 * n, 1000) > 0.9 * epochSeconds(plan, table, 32, n, 1000)) {
      stops = n;
      break;
    }
  EXPECT_EQ(e->stopsPayingAt, stops);
  EXPECT_LT(stops, 64) << "1000 samples: past 32 ranks a step is a whole epoch";
}

TEST(Estimate, OneRankAndEmptySets) {
  auto net = compileExampleNet("hello-world.net");
  ASSERT_TRUE(net);
  const plan::Plan plan = planOf(irOf(*net));
  const CostTable table = syntheticTable();
  cost::EstimateRequest r;
  r.batch = 10;
  r.threads = 1;
  r.trainSamples = 100;
  r.epochs = 2;
  r.maxRanks = 1;
  auto e = cost::estimateTraining(irOf(*net), plan, table, r);
  ASSERT_TRUE(e) << e.message();
  EXPECT_EQ(e->stepsPerEpoch, 10);
  EXPECT_EQ(e->step.allReduceUs, 0);
  EXPECT_NEAR(e->epochSeconds, 10 * e->stepUs * 1e-6, 1e-12);
  EXPECT_EQ(e->evaluationSeconds, 0);
  EXPECT_NEAR(e->totalSeconds, 2 * e->epochSeconds, 1e-12);
  ASSERT_EQ(e->scaling.size(), 1u);
  EXPECT_EQ(e->stopsPayingAt, 1);
  EXPECT_EQ(e->efficiency, 1);
  // A profile for another thread count is used with a note.
  r.threads = 8;
  auto other = cost::estimateTraining(irOf(*net), plan, table, r);
  ASSERT_TRUE(other);
  EXPECT_NE(other->profileNote, "");
  EXPECT_NEAR(other->epochSeconds, e->epochSeconds, 1e-12);
  // Nonsense requests are refused.
  const std::vector<std::function<void(cost::EstimateRequest &)>> nonsense = {
      [](cost::EstimateRequest &b) { b.batch = 0; }, [](cost::EstimateRequest &b) { b.ranks = 0; },
      [](cost::EstimateRequest &b) { b.epochs = -1; }, [](cost::EstimateRequest &b) { b.stages = -1; },
      [](cost::EstimateRequest &b) { b.maxRanks = 0; }};
  for (size_t i = 0; i < nonsense.size(); ++i) {
    cost::EstimateRequest b = r;
    nonsense[i](b);
    EXPECT_FALSE(cost::estimateTraining(irOf(*net), plan, table, b)) << "request " << i;
  }
}

TEST(Estimate, PipelineStages) {
  auto net = compileExampleNet("lenet5.net");
  ASSERT_TRUE(net);
  const ir::Network &network = irOf(*net);
  const plan::Plan plan = planOf(network, withOptimizer(plan::OptimizerKind::Sgd, 0.9f));
  const CostTable table = syntheticTable();
  struct Case {
    int stages, microBatches, expectedMicroBatches;
  };
  for (const Case &c : {Case{2, 0, 8}, Case{2, 6, 6}, Case{3, 0, 12}, Case{4, 5, 5}}) {
    cost::EstimateRequest r;
    r.batch = 64;
    r.threads = 1;
    r.trainSamples = 1000;
    r.stages = c.stages;
    r.microBatches = c.microBatches;
    r.maxRanks = 4;
    auto e = cost::estimateTraining(network, plan, table, r);
    const std::string where = fmt::format("{} stages, {} micro-batches", c.stages, c.microBatches);
    ASSERT_TRUE(e) << where << ": " << e.message();
    EXPECT_EQ(e->microBatches, c.expectedMicroBatches) << where;
    EXPECT_DOUBLE_EQ(e->bubble, double(c.stages - 1) / double(c.expectedMicroBatches + c.stages - 1))
        << where;
    ASSERT_TRUE(e->partition) << where;
    const cost::Partition &p = *e->partition;
    ASSERT_EQ(p.stages.size(), size_t(c.stages)) << where;
    ASSERT_EQ(p.stageOf.size(), network.layers.size()) << where;
    std::vector<int> count(network.layers.size(), 0);
    for (size_t s = 0; s < p.stages.size(); ++s) {
      EXPECT_FALSE(p.stages[s].layers.empty()) << where << " stage " << s;
      for (int l : p.stages[s].layers) {
        ASSERT_GE(l, 0);
        ASSERT_LT(size_t(l), count.size());
        ++count[size_t(l)];
        EXPECT_EQ(p.stageOf[size_t(l)], int(s)) << where << " layer " << l;
      }
    }
    for (size_t l = 0; l < count.size(); ++l)
      EXPECT_EQ(count[l], 1) << where << ": layer " << network.layers[l].name << " in one stage";
    // Every step runs the whole pipeline; the short last one (1000 = 15 · 64 + 40)
    // saves only its host work on the samples it lacks.
    const cost::ComputeProfile &profile = table.profileFor(1);
    EXPECT_EQ(e->stepsPerEpoch, 16) << where;
    EXPECT_NEAR(e->epochSeconds,
                (double(e->stepsPerEpoch) * e->stepUs - profile.sampleOverheadUs * double(64 - 40)) * 1e-6,
                1e-12)
        << where;
    EXPECT_GE(e->stepUs, p.stepUs(e->microBatches)) << where;
  }
  // More stages than layers cannot be cut.
  cost::EstimateRequest r;
  r.threads = 1;
  r.trainSamples = 100;
  r.stages = int(network.layers.size()) + 1;
  EXPECT_FALSE(cost::estimateTraining(network, plan, table, r));
}

// ---- calibration -----------------------------------------------------------------------

/// A path in the temporary directory for this test, removed at the end.
struct TemporaryPath {
  std::filesystem::path path;
  explicit TemporaryPath(const std::string &name)
      : path(std::filesystem::temp_directory_path() / fmt::format("netc-{}-{}.json", name, ::getpid())) {
    std::filesystem::remove(path);
  }
  ~TemporaryPath() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::filesystem::remove(path.string() + ".tmp", ec);
  }
};

TEST(Calibrate, WritesATableThatReadsBack) {
  TemporaryPath out("calibrate");
  CalibrateSettings settings;
  settings.outPath = out.path.string();
  settings.threads = {1};
  settings.iterations = 1;
  const CalibrateResult result = calibrate(settings);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.outPath, out.path.string());
  EXPECT_FALSE(std::filesystem::exists(out.path.string() + ".tmp"));
  auto table = cost::readCostTable(out.path.string());
  ASSERT_TRUE(table) << table.message();
  EXPECT_EQ(table->backend, "cpu");
  ASSERT_EQ(table->profiles.size(), 1u);
  const ComputeProfile &profile = table->profiles.front();
  EXPECT_EQ(profile.threads, 1);
  for (OpKind kind : kAllKinds) {
    if (!cost::hasRate(kind)) {
      EXPECT_EQ(profile.ops.count(kind), 0u) << plan::opName(kind);
      continue;
    }
    auto found = profile.ops.find(kind);
    ASSERT_NE(found, profile.ops.end()) << plan::opName(kind);
    EXPECT_GT(found->second.rate, 0) << plan::opName(kind);
    EXPECT_TRUE(std::isfinite(found->second.rate)) << plan::opName(kind);
    EXPECT_GE(found->second.overheadUs, 0) << plan::opName(kind);
    EXPECT_GE(found->second.byteRate, 0) << plan::opName(kind);
  }
  EXPECT_GE(profile.stepOverheadUs, 0);
  EXPECT_GT(profile.sampleOverheadUs, 0);
  EXPECT_TRUE(table->links.count(std::string(cost::kIntraNode)));
  EXPECT_TRUE(table->links.count(std::string(cost::kInterNode)));

  // The file is there: a second calibration without --overwrite is refused
  // before it measures anything, and leaves the file as it was.
  const std::string before = readFile(out.path.string());
  const CalibrateResult again = calibrate(settings);
  EXPECT_EQ(again.failure, FailureKind::Usage);
  EXPECT_NE(again.error.find("exists"), std::string::npos) << again.error;
  EXPECT_EQ(readFile(out.path.string()), before);
}

TEST(Calibrate, RefusesBadSettings) {
  TemporaryPath out("calibrate-refused");
  auto refused = [&](CalibrateSettings settings) {
    const CalibrateResult result = calibrate(settings);
    EXPECT_EQ(result.failure, FailureKind::Usage) << result.error;
    EXPECT_FALSE(result.error.empty());
    EXPECT_FALSE(std::filesystem::exists(out.path));
  };
  CalibrateSettings settings;
  settings.outPath = out.path.string();
  settings.threads = {1};
  settings.iterations = 0;
  refused(settings);
  settings.iterations = 1001;
  refused(settings);
  settings.iterations = 1;
  settings.threads = {0};
  refused(settings);
  settings.threads = {1};
  settings.outPath.clear();
  refused(settings);
}

} // namespace
} // namespace netc::unittest
