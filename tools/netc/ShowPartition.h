// ShowPartition.h -- `netc show FILE --partition K`: the network cut into K
// pipeline stages by the partitioning pass (codegen/Partition.h) with a cost
// table, as a table of stages (layers, time, memory, cut traffic) or JSON;
// ShowCommand.cpp draws the dot picture with the stages coloured.
#pragma once

#include "codegen/Partition.h"
#include "ir/Network.h"

#include <nlohmann/json.hpp>

#include <string>

namespace netc::cli {

/// The most pipeline stages a flag accepts.
inline constexpr int kMaxPipelineStages = 4096;
/// The batch a partition is computed for where the command has no --batch
/// (netc compile --partition): netc show's and netc train's default.
inline constexpr int64_t kDefaultPartitionBatch = 32;

struct PartitionFlags {
  int stages = 0;                // --partition K (0: none)
  int microBatches = 0;          // --micro-batches M (0: 4 K)
  std::string costModel;         // --cost-model (empty: cpu)
  std::string optimizer = "sgd"; // --optimizer: whose state the stages hold (sgd: with momentum)
};

/// A partition and what it was computed with.
struct ShownPartition {
  cost::Partition partition;
  std::string costTable;
  int64_t microBatch = 0;
  int microBatches = 0;
  int threads = 0; // of the table's profile each stage runs on (0: a device)
};

/// Partitions `net` (training plan, SGD with momentum) at `batch` samples a
/// step; prints the error and returns nothing when it cannot.
std::optional<ShownPartition> partitionForShow(const ir::Network &net, const PartitionFlags &flags,
                                               int64_t batch);

void printPartitionText(const ir::Network &net, const ShownPartition &shown);
nlohmann::json partitionJson(const ir::Network &net, const ShownPartition &shown);

} // namespace netc::cli
