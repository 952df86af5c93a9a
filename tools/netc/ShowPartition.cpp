// ShowPartition.cpp -- the partition `netc show --partition K` prints
// (ShowPartition.h): the training plan's layer costs on the cost table, cut
// by codegen/Partition.cpp, as a table or JSON.
#include "ShowPartition.h"
#include "CommandSupport.h"

#include "codegen/Codegen.h"
#include "codegen/CostModel.h"
#include "codegen/TrainingEstimate.h"
#include "support/ByteSize.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

namespace netc::cli {

std::optional<ShownPartition> partitionForShow(const ir::Network &net, const PartitionFlags &flags,
                                               int64_t batch) {
  auto choice = commandCostTable(flags.costModel);
  if (!choice) {
    std::fprintf(stderr, "netc: error: --cost-model: %s\n", printableText(choice.message()).c_str());
    return std::nullopt;
  }
  if (!choice->note.empty())
    std::fprintf(stderr, "netc: note: %s\n", printableText(choice->note).c_str());
  const std::string &spec = choice->label;
  const cost::CostTable *table = &choice->table;
  plan::UpdateRule rule;
  rule.hyper.momentum = 0.9f; // SGD with momentum: one state slot
  rule.optimizer = flags.optimizer == "adam"       ? plan::OptimizerKind::Adam
                   : flags.optimizer == "adadelta" ? plan::OptimizerKind::AdaDelta
                                                   : plan::OptimizerKind::Sgd;
  auto partition = cost::partitionNetwork(net, *table, rule, flags.stages, flags.microBatches, batch);
  if (!partition) {
    std::fprintf(stderr, "netc: error: --partition %d: %s\n", flags.stages, partition.message().c_str());
    return std::nullopt;
  }
  ShownPartition shown;
  shown.costTable = spec;
  shown.threads = partition->threads;
  shown.microBatches = partition->microBatches;
  shown.microBatch = partition->microBatch;
  shown.partition = std::move(partition->partition);
  return shown;
}

void printPartitionText(const ir::Network &net, const ShownPartition &shown) {
  const cost::Partition &p = shown.partition;
  const int k = static_cast<int>(p.stages.size());
  std::printf("partition of network '%s' into %d stage(s) (cost table '%s'%s; %d micro-batch(es) of %lld "
              "sample(s) a step)\n",
              printableText(net.name).c_str(), k, printableText(shown.costTable).c_str(),
              shown.threads > 0 ? fmt::format(", {} thread(s) per stage", shown.threads).c_str() : "",
              shown.microBatches, static_cast<long long>(shown.microBatch));
  std::printf("%-6s %-11s %-11s %-11s %-11s %-11s %-11s %-11s %s\n", "stage", "compute", "transfer", "time",
              "memory", "weights", "activations", "cut out", "layers");
  for (int i = 0; i < k; ++i) {
    const cost::Stage &s = p.stages[static_cast<size_t>(i)];
    std::string layers;
    for (int l : s.layers)
      layers += (layers.empty() ? "" : ", ") + net.layers[static_cast<size_t>(l)].name;
    std::printf("%-6d %-11s %-11s %-11s %-11s %-11s %-11s %-11s %s\n", i,
                durationText(s.computeUs * 1e-6).c_str(), durationText(s.transferUs * 1e-6).c_str(),
                durationText(s.timeUs() * 1e-6).c_str(),
                byteSizeText(static_cast<uint64_t>(s.memoryBytes)).c_str(),
                byteSizeText(static_cast<uint64_t>(s.fixedBytes)).c_str(),
                byteSizeText(static_cast<uint64_t>(s.activationBytes)).c_str(),
                i + 1 < k ? byteSizeText(static_cast<uint64_t>(s.bytesOut)).c_str() : "-", layers.c_str());
  }
  std::printf(
      "\nslowest stage: %s per micro-batch; cut traffic: %s per micro-batch; a step of %d micro-batches: "
      "%s; bubble (K-1)/(M+K-1) = %.1f%%\n",
      durationText(p.slowestUs * 1e-6).c_str(), byteSizeText(static_cast<uint64_t>(p.cutBytes)).c_str(),
      shown.microBatches, durationText(p.stepUs(shown.microBatches) * 1e-6).c_str(),
      100 * cost::pipelineBubble(k, shown.microBatches));
}

nlohmann::json partitionJson(const ir::Network &net, const ShownPartition &shown) {
  const cost::Partition &p = shown.partition;
  nlohmann::json stages = nlohmann::json::array();
  for (const cost::Stage &s : p.stages) {
    nlohmann::json layers = nlohmann::json::array();
    for (int l : s.layers)
      layers.push_back(net.layers[static_cast<size_t>(l)].name);
    stages.push_back({{"layers", layers},
                      {"compute_us", s.computeUs},
                      {"transfer_us", s.transferUs},
                      {"time_us", s.timeUs()},
                      {"memory_bytes", s.memoryBytes},
                      {"weights_bytes", s.fixedBytes},
                      {"activation_bytes", s.activationBytes},
                      {"bytes_in", s.bytesIn},
                      {"bytes_out", s.bytesOut}});
  }
  return {{"cost_table", shown.costTable},
          {"threads_per_stage", shown.threads},
          {"micro_batch", shown.microBatch},
          {"micro_batches", shown.microBatches},
          {"stages", stages},
          {"slowest_us", p.slowestUs},
          {"cut_bytes", p.cutBytes},
          {"step_us", p.stepUs(shown.microBatches)},
          {"bubble", cost::pipelineBubble(static_cast<int>(p.stages.size()), shown.microBatches)}};
}

} // namespace netc::cli
