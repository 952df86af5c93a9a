// TrainerPipeline.cpp -- the trainer's pipeline stages (see Trainer.h,
// docs/architecture.md §Pipeline stages): one step of a stage in its
// schedule's order, the last stage's verdict on the loss shared before the
// updates, evaluation through the stages, and the checkpoint of a pipeline:
// every stage's tensors gathered into rank 0's one file, in the layout one
// process writes.
#include "runtime/data/Prefetcher.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/Safetensors.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <new>

namespace netc::train {

namespace {

/// The most bytes of checkpoint tensors rank 0 takes from one stage.
constexpr int64_t kMaxStageStateBytes = int64_t{1} << 40;

} // namespace

std::string Trainer::rankHolder(int rank) const {
  int stage = 0, first = 0;
  while (stage + 1 < stages() && rank >= first + options_.pipeline->widths[static_cast<size_t>(stage)])
    first += options_.pipeline->widths[static_cast<size_t>(stage++)];
  if (options_.pipeline->widths[static_cast<size_t>(stage)] == 1)
    return fmt::format("stage {}", stage);
  return fmt::format("stage {} part {}", stage, rank - first);
}

Status Trainer::runPipelineStep(const std::vector<int64_t> &sizes, const std::vector<int> &leaves,
                                data::BatchPrefetcher &prefetcher, double stepSamples, float learningRate) {
  const int microBatches = static_cast<int>(sizes.size());
  const bool chunks = options_.deterministicChunks > 0;
  const optim::UpdateRule rule{options_.optimizer, options_.hyper};
  auto scalars = [&](int64_t size) {
    writeStepScalars(plan_, backend_, optim::stepScalars(rule, learningRate, step_, stepSamples, size));
  };
  for (const PipelineAction &a :
       stageSchedule(options_.pipeline->schedule, stages(), stage(), microBatches)) {
    const int64_t size = sizes[static_cast<size_t>(a.microBatch)];
    if (!a.backward) {
      // The micro-batch's inputs stay in the input slot of its activations
      // until its backward: the first stage's features, the last's labels.
      std::optional<data::Batch> batch = prefetcher.next();
      if (!batch || batch->size != size)
        return fail(fmt::format("stage {}: the data of micro-batch {} is missing (a bug in netc)", stage(),
                                a.microBatch));
      if (plan_.features >= 0)
        backend_.writeInput(a.slot, plan_.features, batch->features);
      if (plan_.labels >= 0)
        backend_.writeInput(a.slot, plan_.labels, batch->labels);
      backend_.fence();
      prefetcher.recycle(std::move(*batch));
      scalars(size);
      // The step's first forward also zeroes the gradients (accumulation).
      if (Status s =
              backend_.run(a.microBatch == 0 ? 0 : plan_.stepBegin, plan_.forwardEnd, size, a.slot, a.slot);
          !s)
        return s;
      continue;
    }
    scalars(size);
    if (chunks) { // this chunk's gradient alone, kept for the fixed-order sum
      if (Status s = backend_.run(plan_.forwardEnd, plan_.backwardEnd, size, a.slot, a.slot); !s)
        return s;
      backend_.read(plan_.gradientArena, fixedOrder_->leaf(leaves[static_cast<size_t>(a.microBatch)]));
      continue;
    }
    // The replicas' all-reduces run with the step's last backward.
    if (Status s =
            runOps(plan_.forwardEnd, plan_.backwardEnd, size, a.slot, a.microBatch + 1 == microBatches);
        !s)
      return s;
  }
  // The step's last sends complete before the verdict uses the link (a
  // backend may hold them back to group them with the next receives).
  if (Status s = backend_.finishTransfers(); !s)
    return s;
  if (Status s = shareLossVerdict(); !s)
    return s;
  if (chunks) {
    if (Status s = fixedOrder_->sum(options_.pipeline->replicas, fixedSum_); !s)
      return s;
    backend_.write(plan_.gradientArena, fixedSum_);
  }
  scalars(0);
  return backend_.run(plan_.backwardEnd, plan_.updateEnd, 1, 0, 0);
}

int Trainer::pipelineRank(int stage, int part) const {
  int rank = part;
  for (int s = 0; s < stage; ++s)
    rank += options_.pipeline->widths[static_cast<size_t>(s)];
  return rank;
}

Status Trainer::shareLossVerdict() {
  // The last stage's parts all compute the loss: its first tells the others.
  if (stages() == 1)
    return Status::success();
  comm::Communicator &link = *options_.pipeline->stages;
  constexpr auto kBad = static_cast<int64_t>(plan::Metric::FirstBadStep);
  std::array<float, 1> bad = {0.0f};
  const int judge = pipelineRank(stages() - 1, 0);
  if (stage() + 1 == stages()) {
    if (plan_.part != 0)
      return Status::success();
    backend_.read(plan_.metrics, bad, kBad);
    for (int r = 0; r < judge; ++r)
      if (Status st = link.send(bad.data(), sizeof bad, r, "send of the step's loss verdict"); !st)
        return st;
    return Status::success();
  }
  if (Status st = link.receive(bad.data(), sizeof bad, judge, "receive of the step's loss verdict"); !st)
    return st;
  if (bad[0] != 0) { // the update op skips the step, as the last stage's does
    std::array<float, 1> mine = {0.0f};
    backend_.read(plan_.metrics, mine, kBad);
    if (mine[0] == 0)
      backend_.write(plan_.metrics, bad, kBad);
  }
  return Status::success();
}

Expected<Evaluation> Trainer::evaluateSet(const data::Dataset &data, int64_t batch) {
  if (!options_.pipeline)
    return evaluate(plan_, backend_, data, batch, options_.comm);
  return evaluate(plan_, backend_, data, batch, options_.comm,
                  data::shareOf(data.count, dataRank(), dataRanks()));
}

bool Trainer::savesState() const {
  if (!options_.pipeline)
    return !options_.outDir.empty();
  return stagesSave_ && dataRank() == 0;
}

Status Trainer::writeState(const std::string &path, const CheckpointInfo &info) {
  // A split layer's parts but the first hold copies of their stage's whole
  // tensors: they send only their rows of the split ones.
  auto mine = stateTensors(plan_, backend_, /*withOptimizerState=*/true, info.optimizer,
                           /*partsOnly=*/plan_.part > 0);
  if (!mine)
    return Error{mine.message()};
  if (!options_.pipeline || options_.pipeline->stages->size() == 1)
    return writeCheckpoint(path, std::move(*mine), info, /*withOptimizerState=*/true);
  comm::Communicator &link = *options_.pipeline->stages;
  if (link.rank() != 0) { // to stage 0 (rank 0), which writes the file
    auto bytes = serializeSafetensors(*mine);
    if (!bytes)
      return Error{bytes.message()};
    const int64_t size = static_cast<int64_t>(bytes->size());
    if (Status s = link.send(&size, sizeof size, 0, "send of the stage's checkpoint size"); !s)
      return s;
    return link.send(bytes->data(), size, 0, "send of the stage's checkpoint tensors");
  }
  std::vector<SafetensorsFile> parts;
  parts.push_back(std::move(*mine));
  for (int r = 1; r < link.size(); ++r) {
    const std::string holder = rankHolder(r);
    int64_t size = 0;
    if (Status st = link.receive(&size, sizeof size, r, "receive of a stage's checkpoint size"); !st)
      return st;
    if (size <= 0 || size > kMaxStageStateBytes)
      return fail(fmt::format("{} announced {} bytes of checkpoint tensors, not a size netc sends "
                              "(the ranks do not all run this version of netc)",
                              holder, size));
    std::vector<uint8_t> bytes;
    try {
      bytes.resize(static_cast<size_t>(size));
    } catch (const std::bad_alloc &) {
      return fail(fmt::format("rank 0 has no memory for {}'s {} bytes of checkpoint tensors", holder, size));
    }
    if (Status st = link.receive(bytes.data(), size, r, "receive of a stage's checkpoint tensors"); !st)
      return st;
    auto part = parseSafetensors(bytes, fmt::format("{}'s checkpoint tensors", holder));
    if (!part)
      return Error{part.message()};
    parts.push_back(std::move(*part));
  }
  auto merged = mergeStateTensors(std::move(parts));
  if (!merged)
    return Error{merged.message()};
  return writeCheckpoint(path, std::move(*merged), info, /*withOptimizerState=*/true);
}

Status Trainer::checkStagesClaimedCheckpoint() {
  if (!options_.pipeline)
    return Status::success();
  // Every rank read the same file; the stages of each pipeline claim its
  // tensors once between them (its count is each pipeline's first stage's).
  // (A split stage's parts all claim its tensors: its first counts them.)
  std::array<int64_t, 2> counts = {plan_.part == 0 ? claimedTensors_ : 0,
                                   stage() == 0 && plan_.part == 0 ? startTensors_ : 0};
  if (Status s = options_.comm->allReduce(std::span<int64_t>(counts), comm::ReduceOp::Sum,
                                          "all-reduce of the checkpoint tensors the stages use");
      !s)
    return s;
  if (counts[0] == counts[1])
    return Status::success();
  const std::string &path = !options_.resumeFrom.empty() ? options_.resumeFrom : options_.initFrom;
  const int64_t unused = (counts[1] - counts[0]) / dataRanks();
  return fail(fmt::format("{}: {} of its tensors belong to no stage of network '{}': a checkpoint of another "
                          "network, or optimizer state this run would drop (resume with the same --optimizer "
                          "and --momentum)",
                          path, unused, options_.info.network));
}

} // namespace netc::train
