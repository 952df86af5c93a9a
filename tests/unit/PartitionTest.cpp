// PartitionTest.cpp -- the partitioning pass (codegen/Partition.h) on layer
// costs built here, no compiler involved: chains, diamonds, siamese towers,
// skip connections and one dominant layer. Every result is checked for being
// a valid pipeline (contiguous stages of the topological order, consistent
// bookkeeping), and on small seeded random networks against a brute force
// over every cut that computes times, bytes and memory on its own; plus the
// messages for too many stages, cycles and memory limits nothing fits.
#include "codegen/Partition.h"

#include "support/ByteSize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace netc::cost {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

LayerCost makeLayer(int index, std::vector<int> sources, double fixedUs, double perSampleUs = 0,
                    int64_t fixedBytes = 0, int64_t activationBytesPerSample = 0,
                    int64_t outputBytesPerSample = 0) {
  LayerCost layer;
  layer.layer = index;
  layer.name = "L" + std::to_string(index);
  layer.sources = std::move(sources);
  layer.fixedUs = fixedUs;
  layer.perSampleUs = perSampleUs;
  layer.fixedBytes = fixedBytes;
  layer.activationBytesPerSample = activationBytesPerSample;
  layer.outputBytesPerSample = outputBytesPerSample;
  return layer;
}

/// A link whose transfers take no time: the stage times are the compute
/// alone, and ties among them go to the fewest cut bytes.
Link freeLink() {
  return Link{0, std::numeric_limits<double>::infinity(), "test", {}};
}

// ---------------------------------------------------------------------------
// The test's own model of a partition, written out plainly.

/// Microseconds for `bytes` point to point, as CostTable.h documents it.
double referenceSendUs(const Link &link, double bytes) {
  return link.alphaUs + bytes / link.bytesPerSecond * 1e6;
}

const LayerCost &layerWithIndex(const std::vector<LayerCost> &layers, int index) {
  for (const LayerCost &layer : layers)
    if (layer.layer == index)
      return layer;
  ADD_FAILURE() << "no layer " << index;
  return layers.front();
}

/// Kahn's order, quadratically: the smallest ready layer index each time.
std::vector<int> referenceOrder(const std::vector<LayerCost> &layers) {
  int maxIndex = 0;
  for (const LayerCost &layer : layers)
    maxIndex = std::max(maxIndex, layer.layer);
  std::vector<bool> placed(maxIndex + 1, false);
  auto isPlaced = [&](int index) { return placed.at(index); };
  std::vector<int> order;
  while (order.size() < layers.size()) {
    int next = std::numeric_limits<int>::max();
    for (const LayerCost &layer : layers)
      if (!placed[layer.layer] && std::all_of(layer.sources.begin(), layer.sources.end(), isPlaced))
        next = std::min(next, layer.layer);
    if (next == std::numeric_limits<int>::max())
      return {};
    order.push_back(next);
    placed[next] = true;
  }
  return order;
}

/// What a partition (stage start positions in `order`) costs, computed
/// directly from its stages' layers.
struct ReferenceCost {
  double slowestUs = 0;
  int64_t cutBytes = 0;
  int64_t mostMemory = 0;
  std::vector<double> stageUs;
  std::vector<int64_t> stageMemory, cutAt; ///< cutAt[s]: bytes across the cut before stage s
};

/// The bytes of every layer before `position` that a layer at or after it reads.
int64_t referenceCutBytes(const PartitionRequest &request, const std::vector<int> &order, size_t position) {
  std::set<int> crossing;
  const auto before = order.begin() + static_cast<std::ptrdiff_t>(position);
  for (size_t reader = position; reader < order.size(); ++reader)
    for (int source : layerWithIndex(request.layers, order[reader]).sources)
      if (std::find(order.begin(), before, source) != before)
        crossing.insert(source);
  int64_t bytes = 0;
  for (int layer : crossing)
    bytes += layerWithIndex(request.layers, layer).outputBytesPerSample * request.microBatch;
  return bytes;
}

ReferenceCost referenceCost(const PartitionRequest &request, const std::vector<int> &order,
                            const std::vector<int> &starts) {
  ReferenceCost cost;
  const int stageCount = static_cast<int>(starts.size());
  for (int stage = 0; stage < stageCount; ++stage) {
    const size_t begin = starts[stage];
    const size_t end = stage + 1 < stageCount ? starts[stage + 1] : order.size();
    const int64_t bytesIn = stage > 0 ? referenceCutBytes(request, order, begin) : 0;
    const int64_t bytesOut = end < order.size() ? referenceCutBytes(request, order, end) : 0;
    double timeUs = 0;
    int64_t memory = 0;
    const int64_t inFlight = std::min(request.microBatches, request.stages - stage);
    for (size_t position = begin; position < end; ++position) {
      const LayerCost &layer = layerWithIndex(request.layers, order[position]);
      timeUs += layer.fixedUs + layer.perSampleUs * static_cast<double>(request.microBatch);
      memory += layer.fixedBytes + layer.activationBytesPerSample * request.microBatch * inFlight;
    }
    if (bytesIn > 0)
      timeUs += 2 * referenceSendUs(request.link, static_cast<double>(bytesIn));
    if (bytesOut > 0)
      timeUs += 2 * referenceSendUs(request.link, static_cast<double>(bytesOut));
    cost.stageUs.push_back(timeUs);
    cost.stageMemory.push_back(memory);
    cost.cutAt.push_back(bytesIn);
    cost.slowestUs = std::max(cost.slowestUs, timeUs);
    cost.mostMemory = std::max(cost.mostMemory, memory);
    cost.cutBytes += bytesOut;
  }
  return cost;
}

/// Calls `visit` with the start positions of every cut of n layers into k
/// non-empty contiguous stages.
void forEachCut(int n, int k, const std::function<void(const std::vector<int> &)> &visit) {
  std::vector<int> starts{0};
  std::function<void(int)> extend = [&](int from) {
    if (static_cast<int>(starts.size()) == k) {
      visit(starts);
      return;
    }
    const int stagesLeft = k - static_cast<int>(starts.size());
    for (int start = from; start <= n - stagesLeft; ++start) {
      starts.push_back(start);
      extend(start + 1);
      starts.pop_back();
    }
  };
  extend(1);
}

struct BruteForce {
  bool feasible = false;
  double slowestUs = std::numeric_limits<double>::infinity();
  int64_t fewestCutBytes = 0;                                ///< among the fastest, within 1e-9
  int64_t leastMemory = std::numeric_limits<int64_t>::max(); ///< over all cuts, ignoring the limit
};

BruteForce bruteForce(const PartitionRequest &request) {
  const std::vector<int> order = referenceOrder(request.layers);
  std::vector<ReferenceCost> fitting;
  BruteForce result;
  forEachCut(static_cast<int>(order.size()), request.stages, [&](const std::vector<int> &starts) {
    ReferenceCost cost = referenceCost(request, order, starts);
    result.leastMemory = std::min(result.leastMemory, cost.mostMemory);
    if (request.memoryLimit == 0 || static_cast<uint64_t>(cost.mostMemory) <= request.memoryLimit)
      fitting.push_back(std::move(cost));
  });
  result.feasible = !fitting.empty();
  for (const ReferenceCost &cost : fitting)
    result.slowestUs = std::min(result.slowestUs, cost.slowestUs);
  result.fewestCutBytes = std::numeric_limits<int64_t>::max();
  for (const ReferenceCost &cost : fitting)
    if (cost.slowestUs <= result.slowestUs * (1 + 1e-9))
      result.fewestCutBytes = std::min(result.fewestCutBytes, cost.cutBytes);
  return result;
}

// ---------------------------------------------------------------------------
// Properties every partition must have.

void expectValidPartition(const PartitionRequest &request, const Partition &partition) {
  const std::vector<int> order = referenceOrder(request.layers);
  ASSERT_EQ(partition.stages.size(), static_cast<size_t>(request.stages));
  int maxIndex = 0;
  for (const LayerCost &layer : request.layers)
    maxIndex = std::max(maxIndex, layer.layer);
  ASSERT_EQ(partition.stageOf.size(), static_cast<size_t>(maxIndex) + 1);

  // The stages, one after another, are the topological order: every layer
  // once, each stage a non-empty contiguous range of it.
  std::vector<int> concatenated, starts;
  for (const Stage &stage : partition.stages) {
    EXPECT_FALSE(stage.layers.empty());
    starts.push_back(static_cast<int>(concatenated.size()));
    concatenated.insert(concatenated.end(), stage.layers.begin(), stage.layers.end());
  }
  ASSERT_EQ(concatenated, order);

  std::vector<int> expectedStageOf(maxIndex + 1, -1);
  for (size_t stage = 0; stage < partition.stages.size(); ++stage)
    for (int layer : partition.stages[stage].layers)
      expectedStageOf[layer] = static_cast<int>(stage);
  EXPECT_EQ(partition.stageOf, expectedStageOf);

  // Every source is in the same stage, earlier, or in an earlier stage.
  for (size_t position = 0; position < concatenated.size(); ++position)
    for (int source : layerWithIndex(request.layers, concatenated[position]).sources) {
      const auto sourcePosition = std::find(concatenated.begin(), concatenated.end(), source);
      EXPECT_LT(sourcePosition - concatenated.begin(), static_cast<std::ptrdiff_t>(position));
      EXPECT_LE(partition.stageOf[source], partition.stageOf[concatenated[position]]);
    }

  // The bookkeeping agrees with the test's own computation.
  const ReferenceCost reference = referenceCost(request, order, starts);
  double slowest = 0;
  int64_t cutBytes = 0;
  for (size_t stage = 0; stage < partition.stages.size(); ++stage) {
    const Stage &got = partition.stages[stage];
    slowest = std::max(slowest, got.timeUs());
    EXPECT_NEAR(got.timeUs(), reference.stageUs[stage], 1e-9 * std::max(1.0, reference.stageUs[stage]));
    EXPECT_EQ(got.memoryBytes, reference.stageMemory[stage]);
    EXPECT_EQ(got.bytesIn, reference.cutAt[stage]);
    EXPECT_EQ(got.bytesOut, stage + 1 < partition.stages.size() ? reference.cutAt[stage + 1] : 0);
    EXPECT_EQ(got.bytesIn, stage == 0 ? 0 : partition.stages[stage - 1].bytesOut);
    if (request.memoryLimit != 0) {
      EXPECT_LE(static_cast<uint64_t>(got.memoryBytes), request.memoryLimit);
    }
    cutBytes += got.bytesOut;
  }
  EXPECT_EQ(partition.slowestUs, slowest);
  EXPECT_EQ(partition.cutBytes, cutBytes);
  EXPECT_EQ(partition.cutBytes, reference.cutBytes);
}

// ---------------------------------------------------------------------------
// Generated networks.

std::vector<LayerCost> chain(int count, double timeUs = 10) {
  std::vector<LayerCost> layers;
  layers.reserve(count);
  for (int index = 0; index < count; ++index)
    layers.push_back(makeLayer(index, index > 0 ? std::vector<int>{index - 1} : std::vector<int>{}, timeUs, 0,
                               100, 10, 1000));
  return layers;
}

/// Input 0, two branches of `branchLength` layers, a join, an output.
std::vector<LayerCost> diamond(int branchLength) {
  std::vector<LayerCost> layers{makeLayer(0, {}, 5, 0, 0, 4, 64)};
  int left = 0, right = 0, next = 1;
  for (int step = 0; step < branchLength; ++step) {
    layers.push_back(makeLayer(next, {left}, 10, 0, 400, 8, 32));
    left = next++;
    layers.push_back(makeLayer(next, {right}, 20, 0, 800, 8, 16));
    right = next++;
  }
  layers.push_back(makeLayer(next, {left, right}, 7, 0, 200, 4, 8));
  layers.push_back(makeLayer(next + 1, {next}, 3, 0, 100, 2, 4));
  return layers;
}

/// Two inputs, a tower of `towerLength` layers on each, a join, a head.
std::vector<LayerCost> siamese(int towerLength) {
  std::vector<LayerCost> layers{makeLayer(0, {}, 1, 0.5, 0, 16, 256), makeLayer(1, {}, 1, 0.5, 0, 16, 256)};
  int next = 2;
  std::vector<int> towerEnds;
  for (int input : {0, 1}) {
    int previous = input;
    for (int step = 0; step < towerLength; ++step) {
      layers.push_back(makeLayer(next, {previous}, 4, 1, 1000, 32, 128));
      previous = next++;
    }
    towerEnds.push_back(previous);
  }
  layers.push_back(makeLayer(next, towerEnds, 2, 0.25, 500, 8, 64));
  layers.push_back(makeLayer(next + 1, {next}, 1, 0.25, 100, 4, 4));
  return layers;
}

/// A chain in which every layer also reads layer 0 (one layer, many readers).
std::vector<LayerCost> skipConnections(int count) {
  std::vector<LayerCost> layers{makeLayer(0, {}, 3, 0, 0, 8, 512)};
  for (int index = 1; index < count; ++index) {
    std::vector<int> sources{index - 1};
    if (index > 1)
      sources.push_back(0);
    layers.push_back(makeLayer(index, sources, 6 + index % 3, 0, 300, 8, 64));
  }
  return layers;
}

/// A random DAG of `count` layers, relabelled by a random permutation (so
/// declaration order is not topological) and listed in a shuffled order,
/// with integer-valued times and sizes so that ties are real ties.
std::vector<LayerCost> randomNetwork(int count, std::mt19937 &random) {
  auto uniform = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  std::vector<int> label(count);
  std::iota(label.begin(), label.end(), 0);
  if (uniform(0, 1) == 1)
    std::shuffle(label.begin(), label.end(), random);
  std::vector<LayerCost> layers;
  for (int hidden = 0; hidden < count; ++hidden) {
    std::vector<int> sources;
    if (hidden > 0) {
      const int readCount = uniform(1, std::min(3, hidden));
      for (int read = 0; read < readCount; ++read) {
        // Mostly the previous layer, sometimes one further back.
        const int source = uniform(0, 2) > 0 ? hidden - 1 : uniform(0, hidden - 1);
        if (std::find(sources.begin(), sources.end(), label[source]) == sources.end())
          sources.push_back(label[source]);
      }
    }
    const bool dominant = uniform(0, 9) == 0;
    layers.push_back(makeLayer(label[hidden], sources, dominant ? uniform(50, 100) : uniform(0, 20),
                               uniform(0, 4) * 0.25, uniform(0, 1000), uniform(0, 100), uniform(0, 4000)));
  }
  std::shuffle(layers.begin(), layers.end(), random);
  return layers;
}

// ---------------------------------------------------------------------------

TEST(Partition, PipelineBubbleAndStepTime) {
  EXPECT_DOUBLE_EQ(pipelineBubble(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(pipelineBubble(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(pipelineBubble(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(pipelineBubble(8, 32), 7.0 / 39.0);
  EXPECT_DOUBLE_EQ(pipelineBubble(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(pipelineBubble(1, -5), 0.0);

  // Balanced: (M + K - 1) · slowest, then the slowest update.
  Partition partition;
  partition.stages.resize(4);
  for (Stage &stage : partition.stages)
    stage.computeUs = 10;
  partition.stages[2].updateUs = 3;
  partition.slowestUs = 10;
  EXPECT_DOUBLE_EQ(partition.stepUs(8), 113.0);
  // Unbalanced: the first micro-batch through every stage, then M - 1
  // times the slowest (at M = 1, the stages one after the other).
  partition.stages[0].computeUs = 4;
  partition.stages[1].transferUs = 2; // a stage's time is its compute and its transfers
  partition.slowestUs = 12;
  EXPECT_DOUBLE_EQ(partition.stepUs(1), 4 + 12 + 10 + 10 + 3);
  EXPECT_DOUBLE_EQ(partition.stepUs(8), 36 + 7 * 12 + 3);
  EXPECT_DOUBLE_EQ(Partition{}.stepUs(8), 0.0);
}

TEST(Partition, OneStageHoldsEveryLayer) {
  PartitionRequest request;
  request.layers = diamond(3);
  request.stages = 1;
  request.link = Link{5, 1e6, "test", {}};
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  expectValidPartition(request, *partition);
  const Stage &stage = partition->stages.at(0);
  EXPECT_EQ(stage.layers.size(), request.layers.size());
  EXPECT_EQ(stage.transferUs, 0);
  EXPECT_EQ(stage.bytesIn, 0);
  EXPECT_EQ(stage.bytesOut, 0);
  EXPECT_EQ(partition->cutBytes, 0);
  EXPECT_DOUBLE_EQ(partition->slowestUs, 5 + 3 * (10 + 20) + 7 + 3);
  EXPECT_DOUBLE_EQ(partition->stepUs(8), 8 * partition->slowestUs);
}

TEST(Partition, RefusesMoreStagesThanLayersAndBadCounts) {
  PartitionRequest request;
  request.layers = chain(3);
  request.stages = 4;
  Expected<Partition> tooMany = partitionLayers(request);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.message().find("cannot cut 3 layers into 4 stages"), std::string::npos)
      << tooMany.message();
  EXPECT_NE(tooMany.message().find("use at most 3"), std::string::npos) << tooMany.message();

  request.stages = 0;
  Expected<Partition> none = partitionLayers(request);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("at least 1 stage"), std::string::npos) << none.message();

  request.stages = 3;
  request.microBatch = 0;
  EXPECT_FALSE(partitionLayers(request).ok());

  request.microBatch = 4;
  request.layers.clear();
  request.stages = 1;
  EXPECT_FALSE(partitionLayers(request).ok());
}

TEST(Partition, RefusesUnknownSourcesCyclesAndRepeatedIndices) {
  PartitionRequest request;
  request.stages = 2;
  request.link = freeLink();
  request.layers = chain(4);
  request.layers[2].sources.push_back(9);
  Expected<Partition> unknown = partitionLayers(request);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("'L2' reads layer index 9"), std::string::npos) << unknown.message();

  request.layers = chain(4);
  request.layers[1].sources.push_back(3); // 1 -> 2 -> 3 -> 1
  Expected<Partition> cycle = partitionLayers(request);
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.message().find("cycle"), std::string::npos) << cycle.message();
  for (const char *name : {"'L1'", "'L2'", "'L3'"})
    EXPECT_NE(cycle.message().find(name), std::string::npos) << cycle.message();
  EXPECT_EQ(cycle.message().find("'L0'"), std::string::npos) << cycle.message();

  request.layers = chain(4);
  request.layers[0].sources.push_back(0);
  EXPECT_FALSE(partitionLayers(request).ok());

  request.layers = chain(4);
  request.layers[3].layer = 1;
  Expected<Partition> repeated = partitionLayers(request);
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.message().find("appears twice"), std::string::npos) << repeated.message();
}

TEST(Partition, KeepsDeclarationOrderWhereTheSourcesAllow) {
  // Layer 0 reads layer 2, so the order is 1, 2, 0, 3; layers are listed in
  // yet another order, and index 4 is absent.
  PartitionRequest request;
  request.layers = {makeLayer(3, {0}, 1), makeLayer(0, {2}, 1), makeLayer(5, {3}, 1), makeLayer(2, {1}, 1),
                    makeLayer(1, {}, 1)};
  request.stages = 5;
  request.link = freeLink();
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  expectValidPartition(request, *partition);
  std::vector<int> order;
  for (const Stage &stage : partition->stages)
    order.insert(order.end(), stage.layers.begin(), stage.layers.end());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 0, 3, 5}));
  EXPECT_EQ(partition->stageOf, (std::vector<int>{2, 0, 1, 3, -1, 4}));
}

TEST(Partition, CutCarriesEveryLiveValueOnce) {
  // Layer 0 is read by 1, 2 and 3: the cut between 1 and 2 carries the
  // outputs of 0 and 1, layer 0's once, for each of the micro-batch's samples.
  PartitionRequest request;
  request.layers = {makeLayer(0, {}, 10, 0, 0, 0, 100), makeLayer(1, {0}, 10, 0, 0, 0, 10),
                    makeLayer(2, {1, 0}, 10, 0, 0, 0, 1), makeLayer(3, {2, 0}, 10, 0, 0, 0, 1)};
  request.stages = 2;
  request.microBatch = 2;
  request.link = Link{1, 1e9, "test", {}};
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  expectValidPartition(request, *partition);
  EXPECT_EQ(partition->stages[0].layers, (std::vector<int>{0, 1}));
  EXPECT_EQ(partition->stages[0].bytesOut, 220);
  EXPECT_EQ(partition->stages[1].bytesIn, 220);
  EXPECT_EQ(partition->cutBytes, 220);
  EXPECT_GT(partition->stages[1].transferUs, 0);
}

TEST(Partition, TiesGoToFewerCutBytes) {
  // Layer 0 is the slowest stage whatever the rest does; of the two cuts of
  // layers 1..3 the one after layer 2 carries fewer bytes.
  PartitionRequest request;
  request.layers = {makeLayer(0, {}, 100, 0, 0, 0, 0), makeLayer(1, {0}, 1, 0, 0, 0, 1000),
                    makeLayer(2, {1}, 1, 0, 0, 0, 10), makeLayer(3, {2}, 1, 0, 0, 0, 0)};
  request.stages = 3;
  request.microBatch = 1;
  request.link = Link{1, 1e9, "test", {}};
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  expectValidPartition(request, *partition);
  EXPECT_EQ(partition->stages[0].layers, (std::vector<int>{0}));
  EXPECT_EQ(partition->stages[1].layers, (std::vector<int>{1, 2}));
  EXPECT_EQ(partition->stages[2].layers, (std::vector<int>{3}));
  EXPECT_EQ(partition->cutBytes, 10);
  EXPECT_DOUBLE_EQ(partition->slowestUs, 100);
}

TEST(Partition, DominantLayerGetsAStageOfItsOwn) {
  for (int dominantAt : {0, 3, 7}) {
    std::vector<LayerCost> layers = chain(8, 1);
    layers[dominantAt].fixedUs = 100;
    for (int stages = 1; stages <= 8; ++stages) {
      SCOPED_TRACE(testing::Message() << "dominant layer " << dominantAt << ", " << stages << " stages");
      PartitionRequest request;
      request.layers = layers;
      request.stages = stages;
      request.link = freeLink();
      Expected<Partition> partition = partitionLayers(request);
      ASSERT_TRUE(partition.ok()) << partition.message();
      expectValidPartition(request, *partition);
      EXPECT_NEAR(partition->slowestUs, bruteForce(request).slowestUs, 1e-9 * 100);
      // Alone needs a stage boundary before it (unless first) and after it
      // (unless last): one or two cuts among the stages - 1.
      const int cutsNeeded = (dominantAt > 0) + (dominantAt < 7);
      const Stage &stage = partition->stages[partition->stageOf[dominantAt]];
      if (stages - 1 >= cutsNeeded) {
        EXPECT_EQ(stage.layers, (std::vector<int>{dominantAt}));
        EXPECT_NEAR(partition->slowestUs, 100, 1e-6);
      } else {
        EXPECT_GT(stage.layers.size(), 1u);
      }
    }
  }
}

TEST(Partition, GeneratedNetworksGiveValidPipelines) {
  std::mt19937 random(20240611);
  std::vector<std::pair<std::string, std::vector<LayerCost>>> networks{
      {"chain", chain(40)},
      {"diamond", diamond(12)},
      {"siamese", siamese(15)},
      {"skip", skipConnections(30)},
      {"random", randomNetwork(60, random)},
      {"random large", randomNetwork(300, random)}};
  for (const auto &[name, layers] : networks)
    for (int stages : {1, 2, 3, 5, 8, 16}) {
      SCOPED_TRACE(testing::Message() << name << ", " << stages << " stages");
      PartitionRequest request;
      request.layers = layers;
      request.stages = stages;
      request.microBatch = 16;
      request.microBatches = 4;
      request.link = Link{2, 1e9, "test", {}};
      Expected<Partition> partition = partitionLayers(request);
      ASSERT_TRUE(partition.ok()) << partition.message();
      expectValidPartition(request, *partition);
      // With a limit just at the widest stage found, the result still fits.
      int64_t widest = 0;
      for (const Stage &stage : partition->stages)
        widest = std::max(widest, stage.memoryBytes);
      request.memoryLimit = static_cast<uint64_t>(widest);
      Expected<Partition> limited = partitionLayers(request);
      ASSERT_TRUE(limited.ok()) << limited.message();
      expectValidPartition(request, *limited);
      EXPECT_NEAR(limited->slowestUs, partition->slowestUs, 1e-9 * partition->slowestUs);
    }
}

TEST(Partition, BranchesMatchBruteForce) {
  std::vector<std::pair<std::string, std::vector<LayerCost>>> networks{
      {"diamond", diamond(3)}, {"siamese", siamese(3)}, {"skip", skipConnections(9)}};
  for (const auto &[name, layers] : networks)
    for (int stages = 1; stages <= 5; ++stages)
      for (const Link &link : {freeLink(), Link{3, 1e6, "test", {}}, Link{0.5, 2e8, "test", {}}}) {
        SCOPED_TRACE(testing::Message() << name << ", " << stages << " stages, alpha " << link.alphaUs);
        PartitionRequest request;
        request.layers = layers;
        request.stages = stages;
        request.microBatch = 8;
        request.link = link;
        Expected<Partition> partition = partitionLayers(request);
        ASSERT_TRUE(partition.ok()) << partition.message();
        expectValidPartition(request, *partition);
        const BruteForce best = bruteForce(request);
        EXPECT_NEAR(partition->slowestUs, best.slowestUs, 1e-9 * best.slowestUs);
        EXPECT_EQ(partition->cutBytes, best.fewestCutBytes);
      }
}

TEST(Partition, RandomNetworksMatchBruteForce) {
  std::mt19937 random(7);
  auto uniform = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  int limitedCases = 0, infeasibleCases = 0;
  for (int instance = 0; instance < 1000; ++instance) {
    PartitionRequest request;
    request.layers = randomNetwork(uniform(1, 9), random);
    const int layerCount = static_cast<int>(request.layers.size());
    request.microBatch = int64_t{1} << uniform(0, 3);
    request.microBatches = uniform(1, 8);
    request.link = Link{static_cast<double>(uniform(0, 5)), uniform(0, 1) ? 1e6 : 5e5, "test", {}};
    for (int stages = 1; stages <= std::min(4, layerCount); ++stages) {
      SCOPED_TRACE(testing::Message()
                   << "instance " << instance << ", " << layerCount << " layers, " << stages << " stages");
      request.stages = stages;
      request.memoryLimit = 0;
      const BruteForce unlimited = bruteForce(request);
      Expected<Partition> partition = partitionLayers(request);
      ASSERT_TRUE(partition.ok()) << partition.message();
      expectValidPartition(request, *partition);
      EXPECT_NEAR(partition->slowestUs, unlimited.slowestUs, 1e-9 * unlimited.slowestUs);
      EXPECT_EQ(partition->cutBytes, unlimited.fewestCutBytes);

      // Memory limits around the least any cut needs: feasible exactly when
      // the brute force finds a cut that fits, and then as fast as it.
      if (unlimited.leastMemory < 2)
        continue;
      const int64_t least = unlimited.leastMemory;
      for (int64_t limit :
           {least - 1, least, least + uniform(0, static_cast<int>(least) / 2), least * uniform(1, 10) / 10}) {
        request.memoryLimit = static_cast<uint64_t>(std::max<int64_t>(limit, 1));
        const BruteForce best = bruteForce(request);
        Expected<Partition> limited = partitionLayers(request);
        ++limitedCases;
        ASSERT_EQ(limited.ok(), best.feasible) << (limited.ok() ? "" : limited.message());
        if (!best.feasible) {
          ++infeasibleCases;
          EXPECT_NE(limited.message().find("no partition"), std::string::npos) << limited.message();
          continue;
        }
        expectValidPartition(request, *limited);
        EXPECT_NEAR(limited->slowestUs, best.slowestUs, 1e-9 * best.slowestUs);
        EXPECT_EQ(limited->cutBytes, best.fewestCutBytes);
      }
    }
  }
  EXPECT_GT(limitedCases, 1000);
  EXPECT_GT(infeasibleCases, 300);
}

TEST(Partition, MemoryErrorNamesTheLayerThatAloneExceedsTheLimit) {
  PartitionRequest request;
  request.layers = chain(6);
  request.layers[3].name = "H3";
  request.layers[3].fixedBytes = 12 * kGiB;
  request.layers[4].fixedBytes = 10 * kGiB;
  request.stages = 4;
  request.microBatch = 32;
  request.microBatches = 8;
  request.memoryLimit = 8 * kGiB;
  request.link = freeLink();
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_FALSE(partition.ok());
  const std::string &message = partition.message();
  EXPECT_NE(message.find("layer 'H3' alone needs"), std::string::npos) << message;
  EXPECT_NE(message.find(byteSizeText(uint64_t{8} << 30) + " per device"), std::string::npos) << message;
  EXPECT_NE(message.find("32 samples"), std::string::npos) << message;
  EXPECT_NE(message.find("4 stages"), std::string::npos) << message;
  EXPECT_EQ(message.find("'L4'"), std::string::npos) << message;
}

TEST(Partition, MemoryErrorGivesTheLeastMemoryAnyCutNeeds) {
  // Every layer fits alone, but two stages hold two layers each somewhere.
  PartitionRequest request;
  request.layers = chain(4);
  for (LayerCost &layer : request.layers) {
    layer.fixedBytes = 3 * kGiB;
    layer.activationBytesPerSample = 0;
  }
  request.stages = 2;
  request.memoryLimit = 5 * kGiB;
  request.link = freeLink();
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_FALSE(partition.ok());
  const std::string &message = partition.message();
  EXPECT_NE(message.find("no partition of 4 layers into 2 stages fits " + byteSizeText(5 * kGiB)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("needs is " + byteSizeText(6 * kGiB)), std::string::npos) << message;
  EXPECT_NE(message.find("more stages"), std::string::npos) << message;
  EXPECT_EQ(message.find("alone"), std::string::npos) << message;

  request.stages = 4;
  Expected<Partition> moreStages = partitionLayers(request);
  ASSERT_TRUE(moreStages.ok()) << moreStages.message();
  expectValidPartition(request, *moreStages);
}

TEST(Partition, LayerWithLargeActivationsMayFitInALaterStage) {
  // Under 1F1B the first of two stages holds two micro-batches' activations
  // and the last one: layer 1 fits only in the last stage.
  PartitionRequest request;
  request.layers = {makeLayer(0, {}, 1, 0, 0, 1, 1), makeLayer(1, {0}, 1, 0, 0, 100, 1)};
  request.stages = 2;
  request.microBatch = 1;
  request.microBatches = 8;
  request.memoryLimit = 150;
  request.link = freeLink();
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  expectValidPartition(request, *partition);
  EXPECT_EQ(partition->stages[1].memoryBytes, 100);

  request.memoryLimit = 99;
  Expected<Partition> tooSmall = partitionLayers(request);
  ASSERT_FALSE(tooSmall.ok());
  EXPECT_NE(tooSmall.message().find("layer 'L1' alone needs 100 B"), std::string::npos) << tooSmall.message();
  EXPECT_NE(tooSmall.message().find("1 micro-batch of 1 sample)"), std::string::npos) << tooSmall.message();
}

TEST(Partition, RandomMemoryErrorsNameTheRightCause) {
  // The layer named is the one needing most even in the latest stage its
  // position allows; with none such, the message gives the least memory.
  std::mt19937 random(99);
  auto uniform = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  for (int instance = 0; instance < 200; ++instance) {
    PartitionRequest request;
    request.layers = randomNetwork(uniform(2, 8), random);
    const int layerCount = static_cast<int>(request.layers.size());
    request.stages = uniform(1, std::min(4, layerCount));
    request.microBatches = uniform(1, 6);
    request.microBatch = uniform(1, 4);
    request.link = freeLink();
    const BruteForce unlimited = bruteForce(request);
    if (unlimited.leastMemory < 10) // a limit of 0 would mean none
      continue;
    request.memoryLimit = static_cast<uint64_t>(unlimited.leastMemory * uniform(3, 9) / 10);
    SCOPED_TRACE(testing::Message() << "instance " << instance << ", limit " << request.memoryLimit);
    Expected<Partition> partition = partitionLayers(request);
    ASSERT_FALSE(partition.ok());
    const std::vector<int> order = referenceOrder(request.layers);
    std::string worstName;
    int64_t worstBytes = 0;
    for (int position = 0; position < layerCount; ++position) {
      const LayerCost &layer = layerWithIndex(request.layers, order[position]);
      const int latestStage = std::min(position, request.stages - 1);
      const int64_t inFlight = std::min(request.microBatches, request.stages - latestStage);
      const int64_t bytes = layer.fixedBytes + layer.activationBytesPerSample * request.microBatch * inFlight;
      if (static_cast<uint64_t>(bytes) > request.memoryLimit && bytes > worstBytes) {
        worstBytes = bytes;
        worstName = layer.name;
      }
    }
    const std::string expected = worstName.empty()
                                     ? "needs is " + byteSizeText(unlimited.leastMemory)
                                     : "layer '" + worstName + "' alone needs " + byteSizeText(worstBytes);
    EXPECT_NE(partition.message().find(expected), std::string::npos) << partition.message();
  }
}

TEST(Partition, LongChainIntoManyStagesBalances) {
  // 4000 equal layers into 64 stages: at most 63 layers a stage when
  // transfers are free (every cut carries the same bytes, so any such cut
  // is as good); when they cost, the end stages, with one cut each, take more.
  PartitionRequest request;
  request.layers = chain(4000, 1);
  request.stages = 64;
  request.link = freeLink();
  Expected<Partition> partition = partitionLayers(request);
  ASSERT_TRUE(partition.ok()) << partition.message();
  size_t covered = 0;
  for (const Stage &stage : partition->stages) {
    EXPECT_LE(stage.layers.size(), 63u);
    covered += stage.layers.size();
  }
  EXPECT_EQ(covered, 4000u);
  EXPECT_DOUBLE_EQ(partition->slowestUs, 63);

  request.link = Link{1, 1e9, "test", {}};
  Expected<Partition> costly = partitionLayers(request);
  ASSERT_TRUE(costly.ok()) << costly.message();
  const size_t first = costly->stages.front().layers.size(), last = costly->stages.back().layers.size();
  for (size_t stage = 1; stage + 1 < costly->stages.size(); ++stage) {
    EXPECT_GT(first, costly->stages[stage].layers.size());
    EXPECT_GT(last, costly->stages[stage].layers.size());
  }
}

} // namespace
} // namespace netc::cost
