// Codegen.h -- builds the Plan of a checked network: forward ops per lowered
// bundle, the loss of docs/language.md §17, the backward ops derived by
// Autodiff.cpp, the fused update op, then the flat arenas and buckets
// (PlanArenas.cpp) and memory planning (PlanMemory.cpp). Only a network
// without errors can be planned.
#pragma once

#include "codegen/Plan.h"
#include "support/Status.h"

namespace netc::plan {

/// The default gradient bucket size (`--bucket-mb`): see docs/performance.md,
/// "Gradient buckets", for the measurement behind it.
inline constexpr int64_t kDefaultBucketBytes = int64_t{16} << 20;

struct PlanOptions {
  bool training = true;    // backward and update ops (otherwise inference only)
  UpdateRule update;       // the optimizer step of the update op
  bool reuseMemory = true; // memory planning reuses dead buffers
  /// Fill the index tables. Without them the plan has every buffer with its
  /// size, but its Table buffers are empty: enough for figures (`netc show`),
  /// not to run.
  bool buildTables = true;
  /// Most bytes the fixed buffers (parameters, gradients, optimizer state,
  /// index tables) may take, checked from their sizes before any of them is
  /// built; 0: the machine's memory.
  uint64_t maxMemoryBytes = 0;
  /// Gradient accumulation (`--accumulate K`, K > 1): the plan starts with
  /// a zero-gradients op and every gradient op adds, so a step of several
  /// micro-batches runs [0, backwardEnd) once, then [stepBegin, backwardEnd)
  /// and finally [stepBegin, end).
  bool accumulateGradients = false;
  /// Gradient buckets of at least this many bytes (a larger parameter is a
  /// bucket of its own), in the order the backward pass finishes them.
  int64_t bucketBytes = kDefaultBucketBytes;
  /// A data-parallel plan (several replicas): all-reduce the gradient
  /// buckets as the backward pass finishes them, or average the replicas
  /// every few steps (codegen/PlanCommunication.cpp).
  ReplicaSync replicaSync = ReplicaSync::None;
  /// Pipeline stages: the stage of each layer of the network (by index;
  /// stages 0 .. K-1 contiguous in dependency order, the inputs in the first,
  /// the output in the last), and which stage's plan to build. Empty: the
  /// whole network.
  std::vector<int> stageOf = {};
  int stage = 0;
  /// Layers split over the ranks of their stage (`--split LAYER:S`): S per
  /// layer of the network (0 or 1: whole), and which part of its stage
  /// this plan is (codegen/PlanSplit.cpp). Empty: no split. A split without
  /// stageOf makes the whole network one stage.
  std::vector<int> splitParts = {};
  int part = 0;
};

/// How many state arrays `rule`'s optimizer keeps per parameter
/// (Optimizers.def): SGD 1 with momentum else 0, Adam 2, AdaDelta 2.
int stateSlots(const UpdateRule &rule);

/// The network's layers in the order a plan computes them: every source
/// before its destinations, and among the layers that are ready the
/// smallest index first (so a declaration order that is already
/// topological is kept). The partitioning pass (Partition.cpp) and
/// pipeline stages (`--cut`) cut this order into consecutive runs.
std::vector<int> dependencyOrder(const ir::Network &network);

/// The plan of `network`, which must have passed every check. A plan whose
/// fixed buffers would exceed the memory limit is an error that names the
/// size, the largest buffer and the limit.
Expected<Plan> buildPlan(const ir::Network &network, const PlanOptions &options = {});

/// Whether `plan` fits in `maxMemoryBytes` (0: the machine's memory) at
/// `batch` samples; the error gives the size, the limit and the largest
/// batch that fits. `purpose` starts the message, e.g. "training at batch".
Status checkPlanFits(const Plan &plan, int64_t batch, uint64_t maxMemoryBytes);

/// The ranks of each stage of a pipeline: S for the stage that holds the
/// layers split over S ranks (`--split`), 1 for the others. An error names
/// the layers when split layers ask for different S or lie in different
/// stages (a pipeline's ranks are then the stages + S - 1 whatever the cuts).
Expected<std::vector<int>> stageWidths(const ir::Network &network, const std::vector<int> &stageOf,
                                       const std::vector<int> &splitParts);

/// The rank of part `part` of stage `stage` in its pipeline's communicator:
/// stage s holds widths[s] consecutive ranks (empty widths: one each).
int pipelineRank(const std::vector<int> &widths, int stage, int part);

/// Keeps only pipeline stage `stage` of a training plan whose forward, loss
/// and backward ops are complete (arenas, update and memory not yet
/// planned): its layers' ops, parameters and buffers, with a receive at the
/// start of its forward pass for each layer's values an earlier stage
/// makes and it or a later one reads, a send at the end of it for each it
/// passes on, and the same for their gradients backward
/// (codegen/PlanStages.cpp). With `widths` (stageWidths; empty: one rank a
/// stage) this is part `part` of its stage: every part receives from the
/// neighbours' part 0, and only part 0 sends, to every part of the
/// neighbour. Returns each old buffer's new index (-1: dropped). An error
/// names the layers when the cut separates tied weights, an input from the
/// first stage or the output from the last.
Expected<std::vector<int>> keepStage(Plan &plan, const ir::Network &network, const std::vector<int> &stageOf,
                                     int stage, const std::vector<int> &widths = {}, int part = 0);

/// The most ranks one layer is split over (`--split LAYER:S`).
inline constexpr int kMaxSplitRanks = 1024;
/// One `--split LAYER:S`.
struct SplitSpec {
  std::string layer;
  int parts = 0;
};
/// Reads "LAYER:S" (S from 2 to kMaxSplitRanks); the error says what is wrong.
Expected<SplitSpec> parseSplitSpec(std::string_view text);
/// The parts of every layer of `network` that `specs` split (0: whole),
/// for PlanOptions::splitParts; an error names a layer the network lacks
/// (with the nearest name) or one named twice.
Expected<std::vector<int>> splitPartsOf(const ir::Network &network, const std::vector<std::string> &specs);

/// The nodes each of `parts` ranks computes of a dense layer of `nodes`
/// split over them: part t holds [first[t], first[t + 1]) (parts + 1
/// entries), whole blocks of plan::denseBlockSize so that its products are
/// those one process computes, as evenly as the blocks allow. An error says
/// how many parts the layer's blocks allow.
Expected<std::vector<int64_t>> splitNodes(int64_t nodes, int parts);

/// Keeps only part `part` of a stage plan (after keepStage) whose layers
/// `splitParts` splits (codegen/PlanSplit.cpp): each split layer's weights
/// and biases keep the part's rows, its dense ops compute the part's nodes,
/// the parts exchange them and put the layer's values together
/// (concat-nodes), and backward each part takes its nodes of the layer's
/// gradient, computes its weights' gradients and adds its share of the
/// input gradient to the sum the previous part passes on, the last part
/// sending the whole back. Every other op runs whole on every part. An
/// error names the layer when it cannot be split: not fully connected, an
/// input, tied weights, or too few blocks for its parts.
Status keepPart(Plan &plan, const ir::Network &network, const std::vector<int> &stageOf,
                const std::vector<int> &splitParts, int part);

/// Appends the backward ops of the forward ops (codegen/Autodiff.cpp).
void appendBackward(Plan &plan);

/// Lays out the flat parameter, gradient and state arenas in the order the
/// backward pass finishes each gradient, and groups them into buckets of
/// `bucketBytes` (codegen/PlanArenas.cpp).
void planArenas(Plan &plan, int64_t bucketBytes);

/// Places the communication ops of `sync` (codegen/PlanCommunication.cpp):
/// an all-reduce after the op that finishes each gradient bucket and a wait
/// ending the backward pass, or the averaging of the parameter and state
/// arenas after the update.
void placeCommunication(Plan &plan, ReplicaSync sync);

/// Assigns 256-byte-aligned arena offsets to batch-scaled buffers by
/// liveness, and to the inputs in their own arena (codegen/PlanMemory.cpp).
void planMemory(Plan &plan, bool reuse);

/// The plan as deterministic text (`netc compile --emit=plan`).
std::string printPlan(const Plan &plan);

} // namespace netc::plan
