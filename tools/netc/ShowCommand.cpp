// ShowCommand.cpp -- `netc show FILE [--format text|json|dot]`: the resolved
// network as a table (layer, kind, shape, nodes, function, params, FLOPs,
// activation memory) with totals, as JSON for tools, or as a Graphviz graph.
// With `--partition K`, its cut into K pipeline stages (ShowPartition.h):
// the stages' table, JSON with a "partition" member, or the graph with each
// stage a coloured cluster. With errors: exit 1 and the diagnostics on stderr.
#include "CommandSupport.h"
#include "ShowPartition.h"

#include "support/ByteSize.h"
#include "support/CheckedMath.h"
#include "support/NumberText.h"
#include "support/PrintableText.h"

#include "codegen/Codegen.h"

#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>

namespace netc::cli {

namespace {

struct ShowArgs {
  std::string file;
  std::string format = "text";
  int64_t batch = kDefaultPartitionBatch;
  CompileFlags compile;
  ColourFlag colour;
  PartitionFlags partition;
};

/// Planned memory (codegen/PlanMemory.cpp) of the training and inference
/// plans, from plans built without their index tables: only sizes, so a
/// network too large to run still shows its figures at once.
struct PlannedMemory {
  bool available = false;
  int64_t trainPerSample = 0, trainFixed = 0, inferPerSample = 0, inferFixed = 0;
};

PlannedMemory planMemoryOf(const ir::Network &net) {
  PlannedMemory m;
  plan::PlanOptions training, inference;
  training.update.hyper.momentum = 0.9f; // SGD with momentum: one state slot
  inference.training = false;
  for (plan::PlanOptions *options : {&training, &inference}) {
    options->buildTables = false;
    options->maxMemoryBytes = UINT64_MAX; // figures only: nothing is allocated
  }
  auto trainPlan = plan::buildPlan(net, training);
  auto inferPlan = plan::buildPlan(net, inference);
  if (!trainPlan || !inferPlan)
    return m;
  m.available = true;
  m.trainPerSample =
      (trainPlan->memory.arenaPerSample + trainPlan->inputSlots * trainPlan->memory.inputsPerSample) * 4;
  m.trainFixed = trainPlan->memory.fixedElements * 4;
  m.inferPerSample =
      (inferPlan->memory.arenaPerSample + inferPlan->inputSlots * inferPlan->memory.inputsPerSample) * 4;
  m.inferFixed = inferPlan->memory.fixedElements * 4;
  return m;
}

/// perSample × batch + fixed bytes; nothing when it overflows.
std::optional<int64_t> bytesAtBatch(int64_t perSample, int64_t batch, int64_t fixed) {
  auto scaled = checkedMul(perSample, batch);
  return scaled ? checkedAdd(*scaled, fixed) : std::nullopt;
}

std::string functionText(const ir::Layer &layer) {
  if (!layer.function)
    return "-";
  std::string name(ir::activationName(*layer.function));
  return layer.functionIsDefault ? name + " (default)" : name;
}

void printTable(const ir::Network &net, int64_t batch) {
  std::vector<std::array<std::string, 8>> rows;
  rows.push_back({"layer", "kind", "shape", "nodes", "function", "params", "FLOPs", "memory"});
  for (const ir::Layer &layer : net.layers)
    rows.push_back({layer.name, std::string(ir::layerKindName(layer.kind)), bracketed(layer.shape),
                    groupDigits(layer.nodes), functionText(layer), groupDigits(layer.params),
                    groupDigits(layer.flops), bytesText(layer.activationBytes)});
  std::string paramsTotal = groupDigits(net.params);
  if (net.params != net.totalParams)
    paramsTotal += fmt::format(" ({} before share)", groupDigits(net.totalParams));
  rows.push_back(
      {"total", "", "", "", "", paramsTotal, groupDigits(net.flops), bytesText(net.activationBytes)});
  std::array<size_t, 8> width{};
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  const std::array<bool, 8> rightAligned{false, false, false, true, false, true, true, true};
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      std::string cell = rows[r][i];
      std::string pad(width[i] - cell.size(), ' ');
      line += (i ? "  " : "") + (rightAligned[i] ? pad + cell : cell + pad);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    if (r + 1 == rows.size()) {
      size_t total = 0;
      for (size_t w : width)
        total += w + 2;
      std::printf("%s\n", std::string(total - 2, '-').c_str());
    }
    std::printf("%s\n", line.c_str());
  }
  std::printf(
      "\nparameters: %s unique trainable values; forward: %s FLOPs and %s of activations per sample\n",
      groupDigits(net.params).c_str(), groupDigits(net.flops).c_str(),
      bytesText(net.activationBytes).c_str());
  PlannedMemory m = planMemoryOf(net);
  if (!m.available)
    return;
  std::printf(
      "planned memory: training %s per sample + %s fixed (%s at batch %lld); inference %s per sample + "
      "%s fixed (%s at batch %lld)\n",
      bytesText(m.trainPerSample).c_str(), bytesText(m.trainFixed).c_str(),
      bytesText(bytesAtBatch(m.trainPerSample, batch, m.trainFixed)).c_str(), static_cast<long long>(batch),
      bytesText(m.inferPerSample).c_str(), bytesText(m.inferFixed).c_str(),
      bytesText(bytesAtBatch(m.inferPerSample, batch, m.inferFixed)).c_str(), static_cast<long long>(batch));
}

/// A byte count, or null when it overflows.
nlohmann::json jsonBytes(std::optional<int64_t> bytes) {
  return bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr);
}

nlohmann::json toJson(const ir::Network &net, int64_t batch) {
  nlohmann::json layers = nlohmann::json::array();
  for (const ir::Layer &layer : net.layers) {
    nlohmann::json bundles = nlohmann::json::array();
    for (const ir::Bundle &b : layer.bundles)
      bundles.push_back({{"from", b.sourceName},
                         {"kind", std::string(ir::bundleKindName(b.kind))},
                         {"params", b.params},
                         {"flops", b.flops}});
    nlohmann::json fn = layer.function ? nlohmann::json(std::string(ir::activationName(*layer.function)))
                                       : nlohmann::json(nullptr);
    layers.push_back({{"name", layer.name},
                      {"kind", std::string(ir::layerKindName(layer.kind))},
                      {"shape", layer.shape},
                      {"nodes", layer.nodes},
                      {"function", fn},
                      {"function_is_default", layer.functionIsDefault},
                      {"params", layer.params},
                      {"flops", layer.flops},
                      {"activation_bytes", layer.activationBytes},
                      {"depth", layer.depth},
                      {"bundles", bundles}});
  }
  nlohmann::json out = {{"name", net.name},     {"layers", layers},
                        {"params", net.params}, {"params_before_share", net.totalParams},
                        {"flops", net.flops},   {"activation_bytes", net.activationBytes}};
  PlannedMemory m = planMemoryOf(net);
  if (m.available)
    out["planned_memory"] = {
        {"batch", batch},
        {"training",
         {{"bytes_per_sample", m.trainPerSample},
          {"fixed_bytes", m.trainFixed},
          {"bytes_per_batch", jsonBytes(bytesAtBatch(m.trainPerSample, batch, m.trainFixed))}}},
        {"inference",
         {{"bytes_per_sample", m.inferPerSample},
          {"fixed_bytes", m.inferFixed},
          {"bytes_per_batch", jsonBytes(bytesAtBatch(m.inferPerSample, batch, m.inferFixed))}}}};
  return out;
}

/// `s` as the inside of a DOT string: quotes and backslashes escaped, and
/// control bytes written as \\xNN (a network's name comes from its file's).
std::string dotEscape(const std::string &s) {
  std::string out;
  for (char c : printableText(s)) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// The graph; with a partition, each stage is a cluster of its own colour.
void printDot(const ir::Network &net, const cost::Partition *partition) {
  std::printf("digraph \"%s\" {\n  rankdir=BT;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n",
              dotEscape(net.name).c_str());
  static const char *const kStageColours[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f",
                                              "#cab2d6", "#ffff99", "#8dd3c7", "#fccde5"};
  auto printLayer = [&](size_t i, const char *indent, const char *colour) {
    const ir::Layer &layer = net.layers[i];
    std::string shape = layer.kind == ir::LayerKind::Input    ? "parallelogram"
                        : layer.kind == ir::LayerKind::Output ? "doubleoctagon"
                                                              : "box";
    std::string label = fmt::format("{}\\n{} {}", dotEscape(layer.name), bracketed(layer.shape),
                                    layer.function ? std::string(ir::activationName(*layer.function)) : "");
    std::string fill = colour ? fmt::format(", style=\"rounded,filled\", fillcolor=\"{}\"", colour) : "";
    std::printf("%sL%zu [label=\"%s\", shape=%s%s];\n", indent, i, label.c_str(), shape.c_str(),
                fill.c_str());
  };
  if (!partition) {
    for (size_t i = 0; i < net.layers.size(); ++i)
      printLayer(i, "  ", nullptr);
  } else {
    for (size_t k = 0; k < partition->stages.size(); ++k) {
      const char *colour = kStageColours[k % std::size(kStageColours)];
      std::printf("  subgraph cluster_stage%zu {\n    label=\"stage %zu\";\n    style=filled;\n    "
                  "color=\"%s\";\n    fillcolor=\"%s40\";\n",
                  k, k, colour, colour);
      for (int l : partition->stages[k].layers)
        printLayer(static_cast<size_t>(l), "    ", colour);
      std::printf("  }\n");
    }
  }
  for (size_t i = 0; i < net.layers.size(); ++i)
    for (const ir::Bundle &b : net.layers[i].bundles)
      if (b.source >= 0)
        std::printf("  L%d -> L%zu [label=\"%s\"];\n", b.source, i,
                    dotEscape(std::string(ir::bundleKindName(b.kind))).c_str());
  std::printf("}\n");
}

int runShow(const ShowArgs &args) {
  auto text = readFileOrReport(args.file, args.compile.maxSourceBytes);
  if (!text)
    return kUsageError;
  auto c = compileSource(SourceFile(args.file, std::move(*text)), args.compile.options());
  printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
  if (c->diags.hasErrors())
    return kInputError;
  std::optional<ShownPartition> partition;
  if (args.partition.stages == 0 && (args.partition.microBatches > 0 || !args.partition.costModel.empty() ||
                                     args.partition.optimizer != "sgd")) {
    std::fprintf(stderr,
                 "netc: error: --micro-batches, --cost-model and --optimizer are for --partition K\n");
    return kUsageError;
  }
  if (args.partition.stages > 0) {
    partition = partitionForShow(c->network, args.partition, args.batch);
    if (!partition)
      return kUsageError;
  }
  if (args.format == "json") {
    nlohmann::json out = toJson(c->network, args.batch);
    if (partition)
      out["partition"] = partitionJson(c->network, *partition);
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (args.format == "dot") {
    printDot(c->network, partition ? &partition->partition : nullptr);
  } else if (partition) {
    printPartitionText(c->network, *partition);
  } else {
    printTable(c->network, args.batch);
  }
  return kSuccess;
}

} // namespace

void addShowCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App *cmd = app.add_subcommand("show", "Show the resolved network: shapes, parameters, FLOPs");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--format", args->format, "Output format: text, json or dot")
      ->check(CLI::IsMember({"text", "json", "dot"}))
      ->capture_default_str();
  addIntegerOption(*cmd, "--batch", args->batch, int64_t{1}, std::numeric_limits<int64_t>::max(),
                   "Batch size for the planned memory per batch and a --partition step");
  addIntegerOption(*cmd, "--partition", args->partition.stages, 1, kMaxPipelineStages,
                   "Cut the network into K pipeline stages: their layers, time, memory and cut traffic");
  addIntegerOption(*cmd, "--micro-batches", args->partition.microBatches, 0, 1 << 20,
                   "With --partition: micro-batches M of a --batch step (0: 4 K)")
      ->capture_default_str();
  cmd->add_option(
         "--optimizer", args->partition.optimizer,
         "With --partition: the optimizer whose state the stages hold (sgd with momentum 0.9, adam or "
         "adadelta)")
      ->check(CLI::IsMember({"sgd", "adam", "adadelta"}))
      ->capture_default_str();
  addCostModelOption(*cmd, args->partition.costModel);
  args->compile.addTo(*cmd);
  args->colour.addTo(*cmd);
  cmd->callback([args, &exitCode] { exitCode = runShow(*args); });
}

} // namespace netc::cli
