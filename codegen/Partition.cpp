// Partition.cpp -- the partitioning pass (codegen/Partition.h): orders the
// layers topologically (Kahn, smaller layer index first), sweeps the bytes
// each cut of that order carries, and cuts it into K contiguous stages by
// dynamic programming over (stage, end position): one pass finds the least
// slowest-stage time under the memory limit, a second the fewest cut bytes
// at that time. When nothing fits, the message names what stands in the way.
#include "codegen/Partition.h"
#include "codegen/Codegen.h"

#include "support/ByteSize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <string>

namespace netc::cost {

double Partition::stepUs(int microBatches) const {
  if (stages.empty())
    return 0;
  // The first micro-batch goes through every stage, and each later one
  // leaves the slowest stage one of its times later: (M + K - 1) · slowest
  // when the stages are balanced, less when they are not (measured: LeNet-5's
  // two stages at M = 1 take the sum of their times, not twice the slower).
  double update = 0, through = 0; // every stage updates its parameters at the step's end
  for (const Stage &stage : stages) {
    update = std::max(update, stage.updateUs);
    through += stage.timeUs();
  }
  return through + static_cast<double>(std::max(microBatches, 1) - 1) * slowestUs + update;
}

double pipelineBubble(int stages, int microBatches) {
  const int span = microBatches + stages - 1;
  if (stages < 1 || span <= 0)
    return 0;
  return static_cast<double>(stages - 1) / static_cast<double>(span);
}

namespace {

constexpr double kUnreachableUs = std::numeric_limits<double>::infinity();
constexpr int64_t kUnreachableBytes = std::numeric_limits<int64_t>::max();
/// Stage times within this relative distance of the least count as equal.
constexpr double kTimeTieTolerance = 1e-12;

std::string layerLabel(const LayerCost &layer) {
  return layer.name.empty() ? fmt::format("#{}", layer.layer) : fmt::format("'{}'", layer.name);
}

/// "1 stage", "4 stages"; `pluralSuffix` for nouns such as "micro-batch".
std::string plural(int64_t count, const char *noun, const char *pluralSuffix = "s") {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : pluralSuffix);
}

/// Rejects what a checked network cannot produce but a caller might pass:
/// bad counts, negative or non-finite costs, a link that cannot send.
Status checkRequest(const PartitionRequest &request) {
  const int layerCount = static_cast<int>(request.layers.size());
  if (request.stages < 1)
    return fail(fmt::format("a partition needs at least 1 stage, not {}", request.stages));
  if (layerCount == 0)
    return fail("there are no layers to cut into stages");
  if (request.stages > layerCount)
    return fail(fmt::format("cannot cut {} into {} (every stage needs at least one layer); use at most {}",
                            plural(layerCount, "layer"), plural(request.stages, "stage"), layerCount));
  if (request.microBatch < 1)
    return fail(fmt::format("a micro-batch needs at least 1 sample, not {}", request.microBatch));
  if (request.microBatches < 1)
    return fail(fmt::format("a step needs at least 1 micro-batch, not {}", request.microBatches));
  if (request.stages > 1 &&
      !(std::isfinite(request.link.alphaUs) && request.link.alphaUs >= 0 && request.link.bytesPerSecond > 0))
    return fail(fmt::format("the link between stages must have a latency >= 0 and a bandwidth > 0, not "
                            "{} us and {} bytes/s",
                            request.link.alphaUs, request.link.bytesPerSecond));
  for (const LayerCost &layer : request.layers) {
    if (layer.layer < 0)
      return fail(fmt::format("layer {} has the negative index {}", layerLabel(layer), layer.layer));
    const bool timesValid = std::isfinite(layer.fixedUs) && layer.fixedUs >= 0 &&
                            std::isfinite(layer.perSampleUs) && layer.perSampleUs >= 0;
    if (!timesValid)
      return fail(fmt::format("layer {} has a time that is negative or not finite ({} us + {} us per sample)",
                              layerLabel(layer), layer.fixedUs, layer.perSampleUs));
    if (layer.fixedBytes < 0 || layer.activationBytesPerSample < 0 || layer.outputBytesPerSample < 0)
      return fail(fmt::format("layer {} has a negative size in bytes", layerLabel(layer)));
  }
  // Every byte count below (sums over layers, times the micro-batch and the
  // micro-batches in flight) stays within int64 under this bound.
  double bytes = 0;
  for (const LayerCost &layer : request.layers)
    bytes +=
        double(layer.fixedBytes) + (double(layer.activationBytesPerSample) * double(request.microBatches) +
                                    double(layer.outputBytesPerSample)) *
                                       double(request.microBatch);
  if (bytes > 0x1p60)
    return fail(
        fmt::format("the layers need {:.3g} bytes with micro-batches of {}: more than netc partitions "
                    "(2^60)",
                    bytes, request.microBatch));
  return Status::success();
}

/// The layers' entries in topological order, and who reads whom.
struct LayerGraph {
  std::vector<int> entryOf;                ///< per layer index: its entry in request.layers, or -1
  std::vector<std::vector<int>> consumers; ///< per entry: the entries that read it
  std::vector<int> order;                  ///< entries, topologically, smaller layer index first
};

/// A cycle among the entries left out of a Kahn order, as "'A' -> 'B' -> 'A'".
std::string describeCycle(const std::vector<LayerCost> &layers, const LayerGraph &graph,
                          const std::vector<bool> &ordered) {
  const int count = static_cast<int>(layers.size());
  // Every unordered entry reads another unordered one, so walking its
  // sources among them for `count` steps must end inside a cycle.
  auto unorderedSource = [&](int entry) {
    for (int source : layers[entry].sources)
      if (!ordered[graph.entryOf[source]])
        return graph.entryOf[source];
    return entry;
  };
  int entry = static_cast<int>(std::find(ordered.begin(), ordered.end(), false) - ordered.begin());
  for (int step = 0; step < count; ++step)
    entry = unorderedSource(entry);
  std::vector<int> cycle{entry};
  for (int next = unorderedSource(entry); next != entry; next = unorderedSource(next))
    cycle.push_back(next);
  // Walked from reader to source; print it in the direction values flow.
  std::string text = layerLabel(layers[entry]);
  for (auto it = cycle.rbegin(); it != cycle.rend(); ++it)
    text += " -> " + layerLabel(layers[*it]);
  return text;
}

Expected<LayerGraph> buildLayerGraph(const std::vector<LayerCost> &layers) {
  const int count = static_cast<int>(layers.size());
  LayerGraph graph;
  int maxIndex = 0;
  for (const LayerCost &layer : layers)
    maxIndex = std::max(maxIndex, layer.layer);
  graph.entryOf.assign(static_cast<size_t>(maxIndex) + 1, -1);
  for (int entry = 0; entry < count; ++entry) {
    int &slot = graph.entryOf[layers[entry].layer];
    if (slot >= 0)
      return fail(fmt::format("layer index {} appears twice (layers {} and {})", layers[entry].layer,
                              layerLabel(layers[slot]), layerLabel(layers[entry])));
    slot = entry;
  }
  graph.consumers.resize(count);
  std::vector<int> unorderedSources(count, 0);
  for (int entry = 0; entry < count; ++entry)
    for (int source : layers[entry].sources) {
      if (source < 0 || source > maxIndex || graph.entryOf[source] < 0)
        return fail(fmt::format("layer {} reads layer index {}, which is not among the layers to partition",
                                layerLabel(layers[entry]), source));
      graph.consumers[graph.entryOf[source]].push_back(entry);
      ++unorderedSources[entry];
    }
  // Kahn's algorithm; among the ready layers the smallest index goes first,
  // so a declaration order that is already topological is kept.
  std::priority_queue<int, std::vector<int>, std::greater<int>> readyLayers;
  for (int entry = 0; entry < count; ++entry)
    if (unorderedSources[entry] == 0)
      readyLayers.push(layers[entry].layer);
  std::vector<bool> ordered(count, false);
  graph.order.reserve(count);
  while (!readyLayers.empty()) {
    const int entry = graph.entryOf[readyLayers.top()];
    readyLayers.pop();
    ordered[entry] = true;
    graph.order.push_back(entry);
    for (int consumer : graph.consumers[entry])
      if (--unorderedSources[consumer] == 0)
        readyLayers.push(layers[consumer].layer);
  }
  if (static_cast<int>(graph.order.size()) < count)
    return fail(fmt::format("the layers read each other in a cycle ({}), so they have no order to cut",
                            describeCycle(layers, graph, ordered)));
  return graph;
}

/// The cost of every candidate stage [begin, end) of the topological order
/// in O(1), from prefix sums and the bytes swept per cut position.
class StageCosts {
public:
  StageCosts(const PartitionRequest &request, const LayerGraph &graph)
      : layerCount_(static_cast<int>(graph.order.size())), stageCount_(request.stages),
        microBatches_(request.microBatches), microBatch_(request.microBatch),
        memoryLimit_(request.memoryLimit) {
    const int n = layerCount_;
    computePrefixUs_.assign(n + 1, 0);
    fixedPrefixBytes_.assign(n + 1, 0);
    activationPrefixBytes_.assign(n + 1, 0);
    std::vector<int> positionOf(request.layers.size());
    for (int position = 0; position < n; ++position)
      positionOf[graph.order[position]] = position;
    // A layer's output crosses every cut after it up to its last reader:
    // add it over that range of positions with a difference array.
    std::vector<int64_t> cutChange(n + 1, 0);
    for (int position = 0; position < n; ++position) {
      const int entry = graph.order[position];
      const LayerCost &layer = request.layers[entry];
      computePrefixUs_[position + 1] = computePrefixUs_[position] + layer.timeUs(microBatch_);
      fixedPrefixBytes_[position + 1] = fixedPrefixBytes_[position] + layer.fixedBytes;
      activationPrefixBytes_[position + 1] =
          activationPrefixBytes_[position] + layer.activationBytesPerSample;
      int lastReader = position;
      for (int consumer : graph.consumers[entry])
        lastReader = std::max(lastReader, positionOf[consumer]);
      if (lastReader > position) {
        const int64_t bytes = layer.outputBytesPerSample * microBatch_;
        cutChange[position + 1] += bytes;
        cutChange[lastReader + 1] -= bytes;
      }
    }
    // Where a stage's plan can start: not inside a group of layers that
    // share weights, not before the last input, not after the output.
    cuttable_.assign(n + 1, true);
    std::map<int, std::pair<int, int>> groupSpan; // tied group -> first and last position
    for (int position = 0; position < n; ++position) {
      const LayerCost &layer = request.layers[graph.order[position]];
      if (layer.input)
        std::fill(cuttable_.begin(), cuttable_.begin() + position + 1, false);
      if (layer.output)
        std::fill(cuttable_.begin() + position + 1, cuttable_.end(), false);
      if (layer.tiedGroup >= 0) {
        auto [it, added] = groupSpan.try_emplace(layer.tiedGroup, position, position);
        it->second.second = position;
      }
    }
    for (const auto &[group, span] : groupSpan)
      std::fill(cuttable_.begin() + span.first + 1, cuttable_.begin() + span.second + 1, false);
    cutBytes_.assign(n + 1, 0);
    transferAtUs_.assign(n + 1, 0);
    leastTransferUpToUs_.assign(n + 1, 0);
    int64_t running = 0;
    for (int position = 1; position < n; ++position) {
      running += cutChange[position];
      cutBytes_[position] = running;
      // Values forward and their gradients back, per micro-batch.
      if (running > 0)
        transferAtUs_[position] = 2 * request.link.sendUs(static_cast<double>(running));
      if (!cuttable_[static_cast<size_t>(position)]) // no stage may start here
        transferAtUs_[position] = kUnreachableUs;
      leastTransferUpToUs_[position] =
          position == 1 ? transferAtUs_[1]
                        : std::min(leastTransferUpToUs_[position - 1], transferAtUs_[position]);
    }
  }

  int layerCount() const { return layerCount_; }
  /// The places between two layers where a stage may start.
  int cuttablePlaces() const {
    return static_cast<int>(std::count(cuttable_.begin() + 1, cuttable_.end() - 1, true));
  }
  int stageCount() const { return stageCount_; }
  /// Bytes per micro-batch crossing the cut before `position` (0 at the ends).
  int64_t cutBytes(int position) const { return cutBytes_[position]; }
  /// Transfer time per micro-batch at the cut before `position` (0 at the ends).
  double transferAtUs(int position) const { return transferAtUs_[position]; }
  double computeUs(int begin, int end) const { return computePrefixUs_[end] - computePrefixUs_[begin]; }
  /// No more than timeUs(start, end) for any start in [1, begin], and growing
  /// as `begin` falls: the searches over starts stop once it is too much.
  double timeFloorUs(int begin, int end) const {
    return (computeUs(begin, end) + leastTransferUpToUs_[begin]) + transferAtUs_[end];
  }
  double timeUs(int begin, int end) const {
    return (computeUs(begin, end) + transferAtUs_[begin]) + transferAtUs_[end];
  }
  /// Micro-batches whose activations stage `stage` holds under 1F1B.
  int64_t microBatchesInFlight(int stage) const {
    return std::min<int64_t>(microBatches_, stageCount_ - stage);
  }
  int64_t memoryBytes(int stage, int begin, int end) const {
    return fixedBytes(begin, end) + activationBytes(stage, begin, end);
  }
  /// Parameters, gradients, optimizer state and tables of layers [begin, end).
  int64_t fixedBytes(int begin, int end) const { return fixedPrefixBytes_[end] - fixedPrefixBytes_[begin]; }
  /// Their activations at the micro-batches stage `stage` holds in flight.
  int64_t activationBytes(int stage, int begin, int end) const {
    const int64_t activations = activationPrefixBytes_[end] - activationPrefixBytes_[begin];
    return activations * microBatch_ * microBatchesInFlight(stage);
  }
  /// Whether stage `stage` fits the limit; once false, it stays false as `begin` falls.
  bool fits(int stage, int begin, int end) const {
    return memoryLimit_ == 0 || static_cast<uint64_t>(memoryBytes(stage, begin, end)) <= memoryLimit_;
  }
  /// Per end position, the first start from which stage `stage` fits the
  /// limit (the end itself when no start does). A stage that does not fit
  /// does not fit longer either, so the first start only grows with the end.
  std::vector<int> firstFittingBegins(int stage) const {
    std::vector<int> firstBegin(layerCount_ + 1, layerCount_);
    int begin = stage;
    for (int end = stage + 1; end <= layerCount_; ++end) {
      while (begin < end && !fits(stage, begin, end))
        ++begin;
      firstBegin[end] = begin;
    }
    return firstBegin;
  }
  /// The first and one past the last end position of stage `stage`, leaving
  /// a layer for each stage before and after it.
  int firstEnd(int stage) const { return stage + 1; }
  int lastEnd(int stage) const { return layerCount_ - (stageCount_ - 1 - stage); }

private:
  int layerCount_, stageCount_;
  int64_t microBatches_, microBatch_;
  uint64_t memoryLimit_;
  std::vector<double> computePrefixUs_;
  std::vector<int64_t> fixedPrefixBytes_, activationPrefixBytes_, cutBytes_;
  std::vector<double> transferAtUs_;
  std::vector<double> leastTransferUpToUs_; ///< per position p >= 1: the least transfer at 1..p
  std::vector<bool> cuttable_;              ///< per position: whether a stage may start there
};

/// The least slowest-stage time of any partition that fits the memory
/// limit; infinity when none fits.
double leastSlowestStageUs(const StageCosts &costs) {
  const int n = costs.layerCount(), stageCount = costs.stageCount();
  // No partition beats its slowest layer, so values below it are as good as
  // it: clamping to it changes no result and ends a search that reaches it.
  double slowestLayerUs = 0;
  for (int position = 0; position < n; ++position)
    slowestLayerUs = std::max(slowestLayerUs, costs.computeUs(position, position + 1));
  // slowest[end]: the least slowest time of stages 0..stage covering [0, end).
  std::vector<double> slowest(n + 1, kUnreachableUs), next(n + 1, kUnreachableUs);
  for (int end = costs.firstEnd(0); end <= costs.lastEnd(0); ++end)
    if (costs.fits(0, 0, end))
      slowest[end] = std::max(slowestLayerUs, costs.timeUs(0, end));
  for (int stage = 1; stage < stageCount; ++stage) {
    const std::vector<int> firstBegin = costs.firstFittingBegins(stage);
    std::fill(next.begin(), next.end(), kUnreachableUs);
    // leastUpTo[begin]: the least of slowest[stage..begin], a floor for
    // every start from `begin` down.
    std::vector<double> leastUpTo(n + 1, kUnreachableUs);
    for (int begin = stage; begin < n; ++begin)
      leastUpTo[begin] = std::min(begin > stage ? leastUpTo[begin - 1] : kUnreachableUs, slowest[begin]);
    for (int end = costs.firstEnd(stage); end <= costs.lastEnd(stage); ++end) {
      // An unreachable start holds infinity, which leaves `best` as it is.
      double best = kUnreachableUs;
      for (int begin = end - 1; begin >= firstBegin[end] && best > slowestLayerUs; --begin) {
        if (std::max(leastUpTo[begin], costs.timeFloorUs(begin, end)) >= best)
          break;
        best = std::min(best, std::max(slowest[begin], costs.timeUs(begin, end)));
      }
      next[end] = best;
    }
    std::swap(slowest, next);
  }
  return slowest[n];
}

/// The start positions of the K stages of the partition with the fewest cut
/// bytes among those that fit and whose every stage takes at most `boundUs`;
/// empty when there is none.
std::vector<int> fewestCutBytesStarts(const StageCosts &costs, double boundUs) {
  const int n = costs.layerCount(), stageCount = costs.stageCount();
  // bytes[end]: the fewest cut bytes of stages 0..stage covering [0, end);
  // startOf[stage][end]: where that stage starts in the best such cover.
  std::vector<int64_t> bytes(n + 1, kUnreachableBytes), next(n + 1, kUnreachableBytes);
  std::vector<std::vector<int>> startOf(stageCount, std::vector<int>(n + 1, -1));
  for (int end = costs.firstEnd(0); end <= costs.lastEnd(0); ++end)
    if (costs.fits(0, 0, end) && costs.timeUs(0, end) <= boundUs) {
      bytes[end] = 0;
      startOf[0][end] = 0;
    }
  for (int stage = 1; stage < stageCount; ++stage) {
    const std::vector<int> firstBegin = costs.firstFittingBegins(stage);
    std::fill(next.begin(), next.end(), kUnreachableBytes);
    // Through a start: its cover's bytes and its cut's. fewestUpTo[begin]:
    // the fewest through any of stage..begin, a floor from `begin` down.
    std::vector<int64_t> through(n + 1, kUnreachableBytes), fewestUpTo(n + 1, kUnreachableBytes);
    for (int begin = stage; begin < n; ++begin) {
      if (bytes[begin] != kUnreachableBytes)
        through[begin] = bytes[begin] + costs.cutBytes(begin);
      fewestUpTo[begin] = std::min(begin > stage ? fewestUpTo[begin - 1] : kUnreachableBytes, through[begin]);
    }
    for (int end = costs.firstEnd(stage); end <= costs.lastEnd(stage); ++end) {
      for (int begin = end - 1; begin >= firstBegin[end]; --begin) {
        if (fewestUpTo[begin] >= next[end] || costs.timeFloorUs(begin, end) > boundUs)
          break;
        const int64_t candidate = through[begin];
        if (candidate < next[end] && costs.timeUs(begin, end) <= boundUs) {
          next[end] = candidate;
          startOf[stage][end] = begin;
        }
      }
    }
    std::swap(bytes, next);
  }
  if (bytes[n] == kUnreachableBytes)
    return {};
  std::vector<int> starts(stageCount);
  for (int stage = stageCount - 1, end = n; stage >= 0; --stage) {
    starts[stage] = startOf[stage][end];
    end = starts[stage];
  }
  return starts;
}

/// The least memory per device that any partition into K stages needs.
int64_t leastMemoryPerDevice(const StageCosts &costs) {
  const int n = costs.layerCount(), stageCount = costs.stageCount();
  std::vector<int64_t> most(n + 1, kUnreachableBytes), next(n + 1, kUnreachableBytes);
  for (int end = costs.firstEnd(0); end <= costs.lastEnd(0); ++end)
    most[end] = costs.memoryBytes(0, 0, end);
  for (int stage = 1; stage < stageCount; ++stage) {
    std::fill(next.begin(), next.end(), kUnreachableBytes);
    // leastUpTo[begin]: the least of most[stage..begin], a floor from `begin` down.
    std::vector<int64_t> leastUpTo(n + 1, kUnreachableBytes);
    for (int begin = stage; begin < n; ++begin)
      leastUpTo[begin] = std::min(begin > stage ? leastUpTo[begin - 1] : kUnreachableBytes, most[begin]);
    for (int end = costs.firstEnd(stage); end <= costs.lastEnd(stage); ++end) {
      int64_t best = kUnreachableBytes;
      for (int begin = end - 1; begin >= stage; --begin) {
        const int64_t stageBytes = costs.memoryBytes(stage, begin, end);
        if (std::max(leastUpTo[begin], stageBytes) >= best)
          break;
        best = std::min(best, std::max(most[begin], stageBytes));
      }
      next[end] = best;
    }
    std::swap(most, next);
  }
  return most[n];
}

/// Why no partition fits the memory limit: the layer that alone exceeds it
/// even in the latest stage it could take (the fewest activations in
/// flight), or else the least memory per device any partition needs.
Error memoryError(const PartitionRequest &request, const LayerGraph &graph, const StageCosts &costs) {
  const int stageCount = request.stages;
  int worstEntry = -1;
  int64_t worstBytes = 0, worstInFlight = 0;
  for (int position = 0; position < costs.layerCount(); ++position) {
    const int latestStage = std::min(position, stageCount - 1);
    const int entry = graph.order[position];
    const int64_t bytes = costs.memoryBytes(latestStage, position, position + 1);
    if (static_cast<uint64_t>(bytes) > request.memoryLimit && bytes > worstBytes) {
      worstEntry = entry;
      worstBytes = bytes;
      worstInFlight = costs.microBatchesInFlight(latestStage);
    }
  }
  const std::string limit = byteSizeText(request.memoryLimit);
  if (worstEntry >= 0)
    return fail(fmt::format("layer {} alone needs {} (its parameters, gradients, optimizer state and "
                            "tables, and the activations of {} of {}); the limit is {} per device: "
                            "no partition into {} fits",
                            layerLabel(request.layers[worstEntry]), byteSizeText(worstBytes),
                            plural(worstInFlight, "micro-batch", "es"), plural(request.microBatch, "sample"),
                            limit, plural(stageCount, "stage")));
  const int64_t least = leastMemoryPerDevice(costs);
  std::string leastText = byteSizeText(static_cast<uint64_t>(least)), limitText = limit;
  if (leastText == limitText) { // the same when rounded: the bytes tell them apart
    leastText += fmt::format(" ({} bytes)", least);
    limitText += fmt::format(" ({} bytes)", request.memoryLimit);
  }
  return fail(fmt::format("no partition of {} into {} fits {} per device: the least memory per device any "
                          "needs is {}; try more stages, a smaller micro-batch or a larger limit",
                          plural(costs.layerCount(), "layer"), plural(stageCount, "stage"), limitText,
                          leastText));
}

Partition describePartition(const PartitionRequest &request, const LayerGraph &graph, const StageCosts &costs,
                            const std::vector<int> &starts) {
  const int n = costs.layerCount(), stageCount = static_cast<int>(starts.size());
  Partition partition;
  partition.stageOf.assign(graph.entryOf.size(), -1);
  for (int stageIndex = 0; stageIndex < stageCount; ++stageIndex) {
    const int begin = starts[stageIndex];
    const int end = stageIndex + 1 < stageCount ? starts[stageIndex + 1] : n;
    Stage stage;
    for (int position = begin; position < end; ++position) {
      const LayerCost &layer = request.layers[graph.order[position]];
      stage.layers.push_back(layer.layer);
      stage.computeUs += layer.timeUs(request.microBatch);
      stage.updateUs += layer.updateUs;
      partition.stageOf[layer.layer] = stageIndex;
    }
    stage.transferUs = costs.transferAtUs(begin) + costs.transferAtUs(end);
    stage.memoryBytes = costs.memoryBytes(stageIndex, begin, end);
    stage.fixedBytes = costs.fixedBytes(begin, end);
    stage.activationBytes = costs.activationBytes(stageIndex, begin, end);
    stage.bytesIn = costs.cutBytes(begin);
    stage.bytesOut = costs.cutBytes(end);
    partition.slowestUs = std::max(partition.slowestUs, stage.timeUs());
    partition.cutBytes += stage.bytesOut;
    partition.stages.push_back(std::move(stage));
  }
  return partition;
}

} // namespace

namespace {

/// Too few places to cut: names the layers that share weights.
Error uncuttableError(const PartitionRequest &request, int places) {
  std::map<int, std::string> tied;
  for (const LayerCost &layer : request.layers)
    if (layer.tiedGroup >= 0)
      tied[layer.tiedGroup] += (tied[layer.tiedGroup].empty() ? "" : ", ") + layerLabel(layer);
  std::string groups;
  for (const auto &[group, names] : tied)
    groups += (groups.empty() ? "" : "; ") + names;
  return Error{fmt::format(
      "cannot cut {} into {}: a stage can start at only {} of the places between "
      "them (the inputs stay in the first stage, the output in the last{}); use at "
      "most {}",
      plural(static_cast<int>(request.layers.size()), "layer"), plural(request.stages, "stage"), places,
      groups.empty() ? std::string() : ", and layers that share weights together: " + groups, places + 1)};
}

} // namespace

Expected<Partition> partitionLayers(const PartitionRequest &request) {
  if (Status checked = checkRequest(request); !checked)
    return fail(checked.message());
  Expected<LayerGraph> graph = buildLayerGraph(request.layers);
  if (!graph)
    return graph.error();
  const StageCosts costs(request, *graph);
  if (costs.cuttablePlaces() < request.stages - 1)
    return uncuttableError(request, costs.cuttablePlaces());
  const double slowestUs = leastSlowestStageUs(costs);
  if (slowestUs == kUnreachableUs)
    return memoryError(request, *graph, costs);
  const std::vector<int> starts = fewestCutBytesStarts(costs, slowestUs + kTimeTieTolerance * slowestUs);
  // The partition that gave slowestUs meets the bound, so there is one.
  if (starts.empty())
    return fail("internal error: the partition of least time was lost while minimising its cut bytes");
  return describePartition(request, *graph, costs, starts);
}

namespace {

/// The layers in `order`, by name: at most 12, then how many more.
std::string layerList(const ir::Network &network, const std::vector<int> &order) {
  std::string out;
  for (size_t p = 0; p < order.size() && p < 12; ++p)
    out += (p ? ", " : "") + network.layers[static_cast<size_t>(order[p])].name;
  if (order.size() > 12)
    out += fmt::format(" and {} more", order.size() - 12);
  return out;
}

} // namespace

Expected<std::vector<int>> stagesFromCuts(const ir::Network &network, const std::vector<std::string> &cuts) {
  const std::vector<int> order = plan::dependencyOrder(network);
  std::vector<int> position(network.layers.size(), -1);
  for (size_t p = 0; p < order.size(); ++p)
    position[static_cast<size_t>(order[p])] = static_cast<int>(p);
  std::vector<int> starts; // positions where a stage starts
  for (const std::string &name : cuts) {
    const int layer = network.findLayer(name);
    if (layer < 0)
      return fail(
          fmt::format("--cut: '{}' is not a layer of network '{}'{}", name, network.name,
                      network.layers.empty() ? "" : " (its layers: " + layerList(network, order) + ")"));
    if (network.layers[static_cast<size_t>(layer)].kind == ir::LayerKind::Input)
      return fail(fmt::format("--cut: '{}' is an input layer; the first stage holds the inputs, so a stage "
                              "can start only at a hidden or output layer",
                              name));
    const int at = position[static_cast<size_t>(layer)];
    if (std::find(starts.begin(), starts.end(), at) != starts.end())
      return fail(fmt::format("--cut: '{}' is named twice", name));
    if (!starts.empty() && at < starts.back())
      return fail(fmt::format("--cut: '{}' comes before '{}' in the network's order ({}); name the layers "
                              "that start stages in that order",
                              name, network.layers[static_cast<size_t>(order[size_t(starts.back())])].name,
                              layerList(network, order)));
    starts.push_back(at);
  }
  std::vector<int> stageOf(network.layers.size(), 0);
  int stage = 0;
  for (size_t p = 0; p < order.size(); ++p) {
    while (static_cast<size_t>(stage) < starts.size() && static_cast<int>(p) >= starts[size_t(stage)])
      ++stage;
    stageOf[static_cast<size_t>(order[p])] = stage;
  }
  return stageOf;
}

} // namespace netc::cost
