// Pipeline.h -- a training run's pipeline stages (`netc train --partition K
// | auto`, `--cut`, `--micro-batches`, `--pipeline-schedule`): where the
// stages are cut (the partition pass's cuts, the same netc show
// --partition K prints, or --cut's), how many micro-batches a step has,
// which rank holds which stage (a pipeline's stages on consecutive ranks,
// so they share a machine when the launcher packs ranks by node; the
// pipelines, the data-parallel copies, span machines), and the
// communicators that join them: each pipeline's stages, and each stage's
// copies. docs/distributed.md, "Pipeline stages".
#pragma once

#include "api/RunEstimate.h"
#include "api/TrainingSteps.h"
#include "codegen/Codegen.h"
#include "ir/Network.h"
#include "netc/Training.h"
#include "runtime/comm/Communicator.h"
#include "runtime/train/PipelineSchedule.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netc::training {

/// Whether `s` asks for model parallelism: pipeline stages (--partition K >
/// 1 or auto, or --cut) or layers split over ranks (--split).
bool pipelineAsked(const TrainSettings &s);
/// The stages --partition or --cut ask for; 0 for --partition auto (or none).
int stagesAsked(const TrainSettings &s);
/// The ranks --split shares each split layer among (its first spec's S);
/// 0 without --split or when it cannot be read (checkPipelineSettings says why).
int splitRanksAsked(const TrainSettings &s);
/// The ranks of one pipeline `s` asks for: its stages (1 without
/// --partition) + S - 1 for --split; 0 for --partition auto.
int pipelineRanksAsked(const TrainSettings &s);
/// The data-parallel ranks of `s`'s job: its ranks over the ranks of a pipeline.
int dataRanksAsked(const TrainSettings &s);

/// Checks the pipeline's settings that need no network (checkSettings).
std::optional<Refusal> checkPipelineSettings(const TrainSettings &s);

/// A pipeline run's layout.
struct PipelineLayout {
  int stages = 1, copies = 1; ///< K stages per pipeline, D pipelines (data-parallel copies)
  int stage = 0, copy = 0;    ///< this rank's
  std::vector<int> stageOf;   ///< per layer of the network
  /// The ranks of each stage (plan::stageWidths: S for the stage of the
  /// layers --split shares out, else 1); rank = copy × their sum + the
  /// ranks of the stages before + part.
  std::vector<int> widths = {1};
  std::vector<int> splitParts; ///< per layer (PlanOptions::splitParts; empty: no --split)
  int part = 0;                ///< this rank's part of its stage
  /// The ranks of one pipeline, and this rank's place among them.
  int pipelineRanks() const;
  int rankInPipeline() const;
  int64_t batch = 0;          ///< per pipeline and step (--batch)
  int64_t microBatches = 1;   ///< M per step
  int64_t microBatch = 0;     ///< samples of each
  train::PipelineScheduleKind schedule = train::PipelineScheduleKind::OneForwardOneBackward;
  std::string cutBy; ///< "--cut", "the partition pass (cost table cpu)", ...
  /// The whole network's training plan without tables: what the run's
  /// estimate prices (a stage's plan holds only its part).
  std::optional<plan::Plan> wholePlan;
};

/// Settles the layout of a run that asks for pipeline stages: the cuts,
/// K for --partition auto (the cost model's fastest epoch among the ranks'
/// divisors; K = 1 is no pipeline: a layout of one stage whose cutBy says
/// why), M, and this rank's place. Usage refusals name the flag and the
/// values that work.
Step<std::optional<PipelineLayout>> settlePipeline(const TrainSettings &s, const RunSettings &run,
                                                   const ir::Network &net, const SampleCounts &samples);

/// Each pipeline's ranks by stage, and each stage's ranks by copy.
struct PipelineCommunicators {
  std::shared_ptr<comm::Communicator> stages, copies;
};
/// Splits the job's communicator (every rank calls it, after the ranks
/// agreed on the network and the layout).
Expected<PipelineCommunicators> joinPipeline(comm::Communicator &job, const PipelineLayout &layout);

/// The run header's lines about the pipeline: K stages × D copies, which
/// ranks hold which stage and its layers, the micro-batches and the global batch.
std::vector<std::string> pipelineLines(const PipelineLayout &layout, const ir::Network &net,
                                       const TrainSettings &s);

/// What each rank of the job holds, for messages that name it: "stage 1",
/// "stage 0 part 1 of pipeline 2", "part 1" (--split alone).
std::vector<std::string> pipelineRoles(const PipelineLayout &layout);

/// The layout as the ranks' fingerprint records it.
std::string pipelineFingerprint(const PipelineLayout &layout);

} // namespace netc::training
