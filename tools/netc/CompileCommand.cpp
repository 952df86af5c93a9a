// CompileCommand.cpp -- `netc compile FILE --emit=tokens|ast|ir|plan|llvm
// [--after=PASS]`: stops after a stage and prints it as deterministic text
// (golden tests). `plan` is the training plan (`--data-parallel` that of a
// rank of a data-parallel job; `--partition K` or `--cut` with `--stage S`
// that of one pipeline stage; `--split LAYER:S` with `--part P` that of one
// rank of a stage whose layer is split over S ranks), `inference-plan` the forward ops only, `llvm`
// the IR `netc build` compiles from the inference plan (weights as zeros),
// through the LLVM plugin.
#include "CommandSupport.h"
#include "ShowPartition.h"
#include "api/AotBuild.h"

#include "codegen/Codegen.h"
#include "codegen/Partition.h"

#include "frontend/AstDump.h"
#include "ir/IrPrinter.h"
#include "passes/Pipeline.h"

#include <cmath>

namespace netc::cli {

namespace {

struct CompileArgs {
  std::string file;
  std::string emit = "ir";
  std::string after;
  CompileFlags compile;
  ColourFlag colour;
  uint64_t maxMemory = 0; // 0: the machine's memory
  std::string dataParallel = "none";
  double bucketMb = kDefaultBucketMb;
  int partition = 0;               // --partition K: the partition pass's stages
  std::vector<std::string> cuts;   // --cut: a stage starts at each
  int stage = 0;                   // --stage: which stage's plan
  std::vector<std::string> splits; // --split LAYER:S
  int part = 0;                    // --part: which rank of the stage
};

/// The stage of every layer that --partition or --cut asks for (empty:
/// neither); nullopt after printing why not.
std::optional<std::vector<int>> stagesAsked(const CompileArgs &args, const ir::Network &net) {
  if (args.partition > 0) {
    PartitionFlags flags;
    flags.stages = args.partition;
    auto shown = partitionForShow(net, flags, kDefaultPartitionBatch);
    if (!shown)
      return std::nullopt;
    return shown->partition.stageOf;
  }
  if (args.cuts.empty())
    return std::vector<int>{};
  auto stages = cost::stagesFromCuts(net, args.cuts);
  if (!stages) {
    printError(stages.message());
    return std::nullopt;
  }
  return *stages;
}

int runCompile(const CompileArgs &args) {
  auto text = readFileOrReport(args.file, args.compile.maxSourceBytes);
  if (!text)
    return kUsageError;
  if (!args.after.empty()) {
    bool known = args.after == "sema";
    for (const PassInfo &pass : allPasses())
      known |= pass.name == args.after;
    if (!known) {
      printError("unknown pass '" + args.after + "' for --after");
      return kUsageError;
    }
  }
  SourceFile file(args.file, std::move(*text));
  std::string out;
  std::unique_ptr<Compilation> c;
  if (args.emit == "tokens") {
    c = std::make_unique<Compilation>(file);
    out = dumpTokens(lexTokens(c->file, c->diags), c->file);
  } else if (args.emit == "ast") {
    c = compileSource(file, args.compile.options(), Stage::Parse);
    out = dumpAst(c->parse.program, c->file);
  } else if (args.emit == "plan" || args.emit == "inference-plan" || args.emit == "llvm") {
    c = compileSource(file, args.compile.options());
    if (!c->diags.hasErrors()) {
      plan::PlanOptions options;
      options.training = args.emit == "plan";
      options.maxMemoryBytes = args.maxMemory;
      options.bucketBytes = std::max<int64_t>(1, std::llround(args.bucketMb * double(1 << 20)));
      // The plan every rank of a data-parallel job runs (netc train --sync).
      if (args.dataParallel == "allreduce")
        options.replicaSync = plan::ReplicaSync::AllReduceGradients;
      else if (args.dataParallel == "local-sgd")
        options.replicaSync = plan::ReplicaSync::AverageReplicas;
      auto stages = stagesAsked(args, c->network);
      if (!stages) {
        printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
        return kUsageError;
      }
      if (!stages->empty()) {
        const int count = 1 + *std::max_element(stages->begin(), stages->end());
        if (args.stage >= count) {
          printError(
              fmt::format("--stage {}: the cut makes {} stages, 0 to {}", args.stage, count, count - 1));
          return kUsageError;
        }
      }
      options.stageOf = std::move(*stages);
      options.stage = args.stage;
      if (!args.splits.empty()) {
        auto parts = plan::splitPartsOf(c->network, args.splits);
        if (!parts) {
          printError(parts.message());
          return kUsageError;
        }
        const int ranks = *std::max_element(parts->begin(), parts->end());
        if (args.part >= ranks) {
          printError(fmt::format("--part {}: the split stage has {} ranks, parts 0 to {}", args.part, ranks,
                                 ranks - 1));
          return kUsageError;
        }
        options.splitParts = std::move(*parts);
        options.part = args.part;
      }
      auto built = plan::buildPlan(c->network, options);
      if (!built) {
        printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
        printError(built.message());
        return kInputError;
      }
      if (args.emit == "llvm") {
        auto ir = emitLlvmIr(c->network, *built);
        if (!ir) {
          printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
          printError(ir.message());
          return kInputError;
        }
        out = std::move(*ir);
      } else {
        out = plan::printPlan(*built);
      }
    }
  } else {
    Stage stage = args.after == "sema" ? Stage::Sema : Stage::Passes;
    c = compileSource(file, args.compile.options(), stage, args.after);
    out = ir::printNetwork(c->network);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
  return c->diags.hasErrors() ? kInputError : kSuccess;
}

} // namespace

void addCompileCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *cmd = app.add_subcommand("compile", "Run the compiler up to a stage and print it");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--emit", args->emit,
                  "What to print: tokens, ast, ir, plan (training), inference-plan or llvm (the IR "
                  "of netc build, needs LLVM)")
      ->check(CLI::IsMember({"tokens", "ast", "ir", "plan", "inference-plan", "llvm"}))
      ->capture_default_str();
  cmd->add_option("--after", args->after, "With --emit=ir: stop after this pass ('sema' or a pass name)");
  cmd->add_option("--data-parallel", args->dataParallel,
                  "With --emit=plan: the plan of a rank of a data-parallel job: allreduce (the gradient "
                  "buckets' all-reduces) or local-sgd (the replicas' averaging)")
      ->check(CLI::IsMember({"none", "allreduce", "local-sgd"}))
      ->capture_default_str();
  cmd->add_option("--bucket-mb", args->bucketMb,
                  "With --emit=plan: the gradient buckets' size, as netc train's")
      ->check([](const std::string &text) { return positiveNumberFlagProblem(text, kMaxBucketMb); })
      ->type_name("MB")
      ->capture_default_str();
  auto *partition =
      addIntegerOption(*cmd, "--partition", args->partition, 2, kMaxPipelineStages,
                       "With --emit=plan: a pipeline stage's plan, of the partition pass's K stages at batch "
                       "32 (as netc show --partition K)");
  cmd->add_option("--cut", args->cuts,
                  "With --emit=plan: a pipeline stage's plan, a stage starting at each of these layers")
      ->delimiter(',')
      ->type_name("LAYER[,LAYER...]")
      ->excludes(partition);
  addIntegerOption(*cmd, "--stage", args->stage, 0, kMaxPipelineStages - 1,
                   "With --partition or --cut: the stage whose plan to print (from 0)")
      ->capture_default_str();
  cmd->add_option("--split", args->splits,
                  "With --emit=plan: the plan of a rank of a stage whose layer's nodes are split over S "
                  "ranks (as netc train --split)")
      ->delimiter(',')
      ->type_name("LAYER:S[,LAYER:S...]");
  addIntegerOption(*cmd, "--part", args->part, 0, plan::kMaxSplitRanks - 1,
                   "With --split: which rank of the split stage (from 0)")
      ->capture_default_str();
  args->compile.addTo(*cmd);
  addMaxMemoryOption(*cmd, args->maxMemory);
  args->colour.addTo(*cmd);
  cmd->callback([args, &exitCode] {
    if (args->stage > 0 && args->partition == 0 && args->cuts.empty()) {
      printError("--stage is for a pipeline stage's plan: give --partition K or --cut LAYER too");
      exitCode = kUsageError;
      return;
    }
    if ((args->partition > 0 || !args->cuts.empty()) && args->emit != "plan") {
      printError("--partition and --cut are for --emit=plan (a pipeline stage's training plan)");
      exitCode = kUsageError;
      return;
    }
    if (!args->splits.empty() && args->emit != "plan") {
      printError("--split is for --emit=plan (the training plan of a rank of a split stage)");
      exitCode = kUsageError;
      return;
    }
    if (args->part > 0 && args->splits.empty()) {
      printError("--part is for a rank of a split stage: give --split LAYER:S too");
      exitCode = kUsageError;
      return;
    }
    exitCode = runCompile(*args);
  });
}

} // namespace netc::cli
