// TrainerState.cpp -- the trainer's state at the edges of a run (see
// Trainer.h): start() checks the outputs, reads a checkpoint to resume or
// start from, hands the training set to the backend to hold (--data-on-device),
// prepares the output folder and metrics files, initialises the
// parameters and, with several ranks, agrees with the other ranks and
// broadcasts rank 0's state; saveState() writes a checkpoint with the data
// position and the partial epoch's sums; diverged() names what went
// non-finite first.
#include "runtime/comm/Agreement.h"
#include "runtime/data/Shuffle.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/train/RunFiles.h"
#include "runtime/train/Safetensors.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <unistd.h>

namespace netc::train {

namespace {

/// The layer a values buffer belongs to ("Conv1.pre" → "Conv1").
std::string layerOf(const std::string &buffer) {
  auto dot = buffer.find('.');
  return dot == std::string::npos ? buffer : buffer.substr(0, dot);
}

} // namespace

Status Trainer::start(TrainObserver &observer) {
  Status prepared = prepare(observer);
  if (ranks() == 1)
    return prepared;
  // Every rank takes part, also one whose preparation failed: the job ends
  // together, with the first failure's message, instead of timing out.
  comm::Outcome outcome;
  outcome.ok = prepared.ok();
  outcome.message = prepared.ok() ? std::string() : prepared.message();
  auto verdict = comm::agree(*options_.comm, outcome, "agreement before the first step");
  if (!verdict)
    return verdict.error();
  errorOnEveryRank_ = !verdict->ok;
  if (!verdict->ok)
    return fail(verdict->message);
  if (options_.pipeline) {
    // Whether rank 0 writes checkpoints (the stages of its pipeline send it
    // their tensors then), and rewrites best.safetensors now.
    std::array<int64_t, 2> flags = {options_.outDir.empty() ? 0 : 1, rewriteBest_ ? 1 : 0};
    if (Status s = options_.comm->broadcast(flags.data(), sizeof flags, 0, "broadcast of rank 0's outputs");
        !s)
      return s;
    stagesSave_ = flags[0] != 0;
    rewriteBest_ = flags[1] != 0;
    if (!options_.resumeFrom.empty() || !options_.initFrom.empty()) {
      Status claimed = checkStagesClaimedCheckpoint();
      errorOnEveryRank_ = !claimed.ok();
      if (!claimed)
        return claimed;
    }
  }
  if (Status s = broadcastState(); !s)
    return s;
  if (rewriteBest_ && savesState())
    return agreeOnEpochEnd(saveState(bestCheckpointPath(), firstEpoch_));
  if (rewriteBest_)
    return agreeOnEpochEnd(Status::success());
  return Status::success();
}

std::string Trainer::lastCheckpointPath() const {
  return options_.outDir.empty() ? std::string()
                                 : (std::filesystem::path(options_.outDir) / kLastCheckpointName).string();
}

std::string Trainer::bestCheckpointPath() const {
  return options_.outDir.empty() ? std::string()
                                 : (std::filesystem::path(options_.outDir) / kBestCheckpointName).string();
}

Status Trainer::broadcastState() {
  // Data parallelism: every rank holding the stage (the whole network
  // without a pipeline) starts from its first replica's state.
  comm::Communicator *replicas = options_.pipeline ? options_.pipeline->replicas : options_.comm;
  if (replicas->size() == 1)
    return Status::success();
  // The parameters, then each optimizer state slot: flat arenas, one broadcast each.
  std::vector<float> values(static_cast<size_t>(plan_.arenaElements));
  std::vector<int> arenas = {plan_.parameterArena};
  arenas.insert(arenas.end(), plan_.stateArenas.begin(), plan_.stateArenas.end());
  for (int arena : arenas) {
    if (arena < 0)
      continue;
    if (replicas->rank() == 0)
      backend_.read(arena, values);
    if (Status s =
            replicas->broadcast(values.data(), static_cast<int64_t>(values.size() * sizeof(float)), 0,
                                arena == plan_.parameterArena ? "broadcast of rank 0's parameters"
                                                              : "broadcast of rank 0's optimizer state");
        !s)
      return s;
    if (replicas->rank() != 0)
      backend_.write(arena, values);
  }
  return Status::success();
}

Status Trainer::prepare(TrainObserver &observer) {
  if (const int chunks = options_.deterministicChunks; chunks > 0) {
    const bool powerOfTwo = (chunks & (chunks - 1)) == 0 && (dataRanks() & (dataRanks() - 1)) == 0;
    if (!powerOfTwo || chunks % dataRanks() != 0 || options_.accumulate > 1 ||
        plan_.replicaSync != plan::ReplicaSync::None)
      return fail(
          fmt::format("--deterministic {} needs a power of two of chunks that the ranks ({}, a power of "
                      "two) divide, no --accumulate, and a plan without communication ops",
                      chunks, dataRanks()));
    fixedOrder_.emplace(plan_.trainedElements, chunks, dataRank(), dataRanks());
    fixedSum_.assign(static_cast<size_t>(plan_.trainedElements), 0.0f);
  }
  if (options_.pipeline && options_.dataOnDevice)
    return fail(
        "--data-on-device and --partition exclude each other: pipeline stages train from host memory");
  if (options_.accumulate > 1 && plan_.stepBegin == 0)
    return fail(fmt::format("--accumulate {} needs a plan built for gradient accumulation "
                            "(PlanOptions::accumulateGradients)",
                            options_.accumulate));
  // Check every output path first: a refused run leaves nothing behind.
  if (Status s = checkRunOutputs({options_.outDir, options_.metricsFiles, options_.resumeFrom,
                                  options_.initFrom, options_.overwrite});
      !s)
    return s;
  // Read the checkpoint next: a refused resume leaves nothing behind either.
  const bool resuming = !options_.resumeFrom.empty();
  if (resuming) {
    auto info = loadCheckpoint(options_.resumeFrom, plan_, backend_, /*withOptimizerState=*/true,
                               optim::optimizerName(options_.optimizer), {}, options_.pipeline.has_value());
    if (!info)
      return info.error();
    claimedTensors_ = info->tensorsClaimed;
    startTensors_ = info->tensorsInFile;
    if (!info->sourceHash.empty() && info->sourceHash != options_.info.sourceHash)
      observer.onHint(fmt::format("{} was written from a different text of this network (same parameters); "
                                  "continuing",
                                  options_.resumeFrom));
    firstEpoch_ = info->epoch;
    step_ = info->step;
    if (auto it = info->extra.find("epoch_metrics"); it != info->extra.end())
      resumedEpochLine_ = it->second;
    if (firstEpoch_ >= options_.epochs)
      return fail(fmt::format("{} has already trained {} epoch(s); pass --epochs above {} to train more",
                              options_.resumeFrom, firstEpoch_, firstEpoch_));
    // The best epoch so far (0: none yet) and its score, read strictly.
    if (auto it = info->extra.find("best_epoch"); it != info->extra.end()) {
      int64_t best = -1;
      const char *first = it->second.data(), *last = first + it->second.size();
      auto [end, error] = std::from_chars(first, last, best);
      if (error != std::errc() || end != last || best < 0 || best > firstEpoch_)
        return fail(
            fmt::format("{}: metadata \"best_epoch\" is '{}', not an epoch from 0 to its \"epoch\" {}",
                        options_.resumeFrom, it->second.substr(0, 40), firstEpoch_));
      bestEpoch_ = best;
    }
    if (auto it = info->extra.find("best_score"); it != info->extra.end()) {
      char *end = nullptr;
      bestScore_ = std::strtod(it->second.c_str(), &end);
      if (it->second.empty() || *end != '\0' || std::isnan(bestScore_))
        return fail(fmt::format("{}: metadata \"best_score\" is '{}', not a number", options_.resumeFrom,
                                it->second.substr(0, 40)));
    }
    if (auto it = info->extra.find("shuffle"); it != info->extra.end()) {
      auto state = data::ShuffleState::fromJson(it->second);
      if (!state)
        return fail(fmt::format("{}: bad data position: {}", options_.resumeFrom, state.message()));
      if (state->seed != options_.seed)
        return fail(fmt::format("{} continues the run with seed {}; drop --seed or pass --seed {}",
                                options_.resumeFrom, state->seed, state->seed));
      if (state->position != 0 &&
          (state->epoch != firstEpoch_ || state->position < 0 || state->position >= train_.count))
        return fail(fmt::format("{}: metadata \"shuffle\" stops at sample {} of epoch {}, which does not fit "
                                "its \"epoch\" {} and the {} training samples of this data",
                                options_.resumeFrom, state->position, state->epoch + 1, firstEpoch_,
                                train_.count));
      firstPosition_ = state->position;
    }
    if (firstPosition_ > 0) { // saved mid-epoch: the partial epoch's running sums
      auto it = info->extra.find("epoch_sums");
      const nlohmann::json sums =
          it == info->extra.end() ? nlohmann::json()
                                  : nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      auto has = [&](const char *key, bool number) {
        return sums.contains(key) && (number ? sums[key].is_number() : sums[key].is_boolean());
      };
      if (!sums.is_object() || !has("loss", true) || !has("correct", true) || !has("batch", true) ||
          !has("shuffle", false) || (sums.contains("accumulate") && !has("accumulate", true)))
        return fail(
            fmt::format("{}: it was saved in the middle of epoch {} but its metadata \"epoch_sums\" is "
                        "missing or is not {{\"batch\": B, \"correct\": N, \"loss\": L, \"shuffle\": "
                        "true|false}}",
                        options_.resumeFrom, firstEpoch_ + 1));
      // The rest of the epoch is the same steps only with the same global
      // batch (the batch of each rank times the ranks) and order.
      const nlohmann::json accumulate = sums.contains("accumulate") ? sums["accumulate"] : nlohmann::json(1);
      const int64_t recordedRanks =
          sums.contains("ranks") && sums["ranks"].is_number_integer() ? sums["ranks"].get<int64_t>() : 1;
      const int64_t globalBatch = sums["batch"].is_number_integer() && recordedRanks >= 1
                                      ? sums["batch"].get<int64_t>() * recordedRanks
                                      : -1;
      if (globalBatch != options_.batch * dataRanks() || sums["shuffle"] != options_.shuffle ||
          accumulate != options_.accumulate)
        return fail(fmt::format(
            "{} stopped in the middle of epoch {}, which it continues only with the global batch and order "
            "it "
            "had: {}{}{}",
            options_.resumeFrom, firstEpoch_ + 1,
            globalBatch > 0 && globalBatch % dataRanks() == 0
                ? fmt::format("pass --batch {}{}", globalBatch / dataRanks(),
                              dataRanks() > 1 ? fmt::format(" with {} data-parallel ranks", dataRanks())
                                              : std::string())
                : fmt::format("{} samples per step, which {} ranks cannot share equally", globalBatch,
                              dataRanks()),
            accumulate != 1 ? " --accumulate " + accumulate.dump() : std::string(),
            sums["shuffle"] == true ? " without --no-shuffle" : " --no-shuffle"));
      firstLossSum_ = sums["loss"].get<double>();
      firstCorrect_ = sums["correct"].get<double>();
    }
  }
  // A new run from a checkpoint's weights: everything is initialised as in
  // any new run (fresh optimizer state), then the checkpoint's parameters
  // replace all but the fresh ones.
  if (!options_.initFrom.empty()) {
    initializeParameters(plan_, backend_, options_.init);
    auto info = loadCheckpoint(options_.initFrom, plan_, backend_, /*withOptimizerState=*/false, {},
                               options_.freshParameters, options_.pipeline.has_value());
    if (!info)
      return info.error();
    claimedTensors_ = info->tensorsClaimed;
    startTensors_ = info->tensorsInFile;
  }
  // The training set exactly as the host batches would hold it (normalised
  // by the caller), held once; a device without room for it says so.
  if (options_.dataOnDevice)
    if (Status st = backend_.holdDataset(train_.features, train_.labels, train_.count); !st)
      return st;
  // Only now is anything created, truncated or removed.
  if (!options_.outDir.empty()) {
    const std::filesystem::path dir(options_.outDir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return fail(fmt::format("cannot create the output folder '{}': {} (choose another with --out)",
                              options_.outDir, ec.message()));
    removeStaleTemporaries(options_.outDir, {std::string(kLastCheckpointName),
                                             std::string(kBestCheckpointName), std::string(kMetricsName)});
    if (options_.overwrite) // the replaced run's checkpoints go with it
      for (std::string_view name : {kLastCheckpointName, kBestCheckpointName})
        if (::unlink((dir / name).c_str()) != 0 && errno != ENOENT)
          return fail(fmt::format("--overwrite: cannot remove '{}': {}", (dir / name).string(),
                                  std::strerror(errno)));
    metricsPaths_.push_back((dir / kMetricsName).string());
  }
  for (const std::string &path : options_.metricsFiles) {
    // Next to the file and, through a symbolic link, next to its target,
    // where trimMetricsForResume writes its temporary.
    std::error_code ec;
    for (const std::filesystem::path &file :
         {std::filesystem::path(path), std::filesystem::weakly_canonical(path, ec)})
      if (!file.empty())
        removeStaleTemporaries(file.parent_path().string(), {file.filename().string()});
    metricsPaths_.push_back(path);
  }
  // A new (or replacing) run starts its metrics files empty; a resumed one
  // appends, after dropping what its checkpoint does not include.
  for (const std::string &path : metricsPaths_)
    if (Status st =
            resuming && !options_.overwrite ? trimMetricsForResume(path, firstEpoch_) : truncateFile(path);
        !st)
      return st;
  if (!resuming && options_.initFrom.empty())
    initializeParameters(plan_, backend_, options_.init);
  // Only the folder the checkpoint belongs to is repaired: resumed into
  // another folder, the run starts that folder's files anew.
  if (resuming && firstPosition_ == 0 && !options_.outDir.empty() &&
      isInFolder(options_.resumeFrom, options_.outDir))
    return reestablishRunFiles(observer);
  return Status::success();
}

Status Trainer::reestablishRunFiles(TrainObserver &observer) {
  // The epoch's metrics line, in each metrics file that lacks it.
  if (!resumedEpochLine_.empty())
    for (const std::string &path : metricsPaths_)
      if (Status s = restoreEpochLine(path, firstEpoch_, resumedEpochLine_); !s)
        return s;
  if (options_.outDir.empty() || bestEpoch_ == 0)
    return Status::success();
  const std::string best = (std::filesystem::path(options_.outDir) / kBestCheckpointName).string();
  std::optional<int64_t> bestOnDisk;
  if (auto file = readSafetensors(best); file && checkCheckpointFormat(*file, best))
    if (auto epoch = checkpointCount(*file, best, "epoch", 0, std::numeric_limits<int64_t>::max());
        epoch && *epoch)
      bestOnDisk = **epoch;
  if (bestOnDisk == bestEpoch_)
    return Status::success();
  if (bestEpoch_ == firstEpoch_) { // the state just loaded is the best epoch's
    if (options_.pipeline) {       // every stage's: written once they all have it (start())
      rewriteBest_ = true;
      return Status::success();
    }
    return saveState(best, firstEpoch_);
  }
  observer.onHint(fmt::format("the run's best epoch is {}, but {} {}: the process ended while writing it; "
                              "it is written again at the next best epoch",
                              bestEpoch_, best,
                              bestOnDisk ? fmt::format("holds epoch {}", *bestOnDisk) : "is missing"));
  return Status::success();
}

Status Trainer::diverged(int64_t step, int64_t epoch, int64_t batch, int inputSlot, float learningRate) {
  std::vector<float> values;
  auto firstBad = [&](int buffer, int64_t count) {
    values.resize(static_cast<size_t>(count));
    backend_.read(buffer, values);
    for (float v : values)
      if (!std::isfinite(v))
        return std::isnan(v) ? "NaN" : "infinite";
    return static_cast<const char *>(nullptr);
  };
  std::string where = "the loss";
  const char *what = "NaN or infinite";
  for (const plan::Parameter &p : plan_.parameters)
    if (const char *bad = firstBad(p.buffer, p.count)) {
      where = fmt::format("parameter '{}'", p.name);
      what = bad;
      break;
    }
  if (where == "the loss" && batch > 0) {
    // The backward pass may have reused the layers' memory: run the forward
    // ops again on the batch (the parameters are still those before it).
    if (Status s = backend_.run(plan_.stepBegin, plan_.forwardEnd, batch, inputSlot); !s)
      return s;
    backend_.synchronize();
  }
  if (where == "the loss" && batch > 0)
    for (size_t i = plan_.stepBegin; i < plan_.forwardEnd; ++i) {
      int out = plan_.ops[i].out[0];
      const plan::Buffer &b = plan_.buffers[static_cast<size_t>(out)];
      if (const char *bad = firstBad(out, b.perSample * batch)) {
        where = fmt::format("the values of layer '{}'", layerOf(b.name));
        what = bad;
        break;
      }
    }
  return fail(
      fmt::format("training diverged at step {} (epoch {}): {} became {}. Hint: lower the learning rate "
                  "(--lr, now {:g}), use a smaller initialisation (--init-diameter, --init xavier), or "
                  "normalise the data (--normalize minmax)",
                  step, epoch + 1, where, what, learningRate));
}

Status Trainer::writeMetrics(const std::string &line) {
  for (const std::string &path : metricsPaths_)
    if (Status st = appendLine(path, line); !st)
      return st;
  return Status::success();
}

Status Trainer::saveState(const std::string &path, int64_t epochsDone, int64_t position, double lossSum,
                          double correct) {
  CheckpointInfo info = options_.info;
  info.optimizer = std::string(optim::optimizerName(options_.optimizer));
  info.epoch = epochsDone;
  info.step = step_;
  info.extra["shuffle"] = data::ShuffleState{options_.seed, epochsDone, position}.toJson();
  info.extra["data_position"] = fmt::format("{{\"epoch\": {}, \"sample\": {}}}", epochsDone, position);
  if (position > 0) // JSON numbers round-trip doubles exactly
    info.extra["epoch_sums"] = nlohmann::json{
        {"loss", lossSum},
        {"correct", correct},
        {"batch", options_.batch},
        {"ranks", dataRanks()},
        {"accumulate", options_.accumulate},
        {"shuffle",
         options_.shuffle}}.dump();
  // What a run on another number of ranks continues with (the same global batch).
  info.extra["world_size"] = std::to_string(dataRanks());
  info.extra["global_batch"] = std::to_string(options_.batch * options_.accumulate * dataRanks());
  if (options_.pipeline) { // how it was trained; any pipeline, or none, continues it
    nlohmann::json pipeline = {{"stages", stages()},
                               {"micro_batches", options_.accumulate},
                               {"schedule", pipelineScheduleName(options_.pipeline->schedule)}};
    if (!options_.pipeline->splits.empty())
      pipeline["split"] = options_.pipeline->splits;
    info.extra["pipeline"] = pipeline.dump();
  }
  info.extra["best_epoch"] = std::to_string(bestEpoch_);
  if (position == 0 && !epochLine_.empty())
    info.extra["epoch_metrics"] = epochLine_;
  info.extra["best_score"] = fmt::format("{:.17g}", bestScore_);
  info.extra["rng"] =
      fmt::format("{{\"shuffle_seed\": {}, \"init_seed\": {}}}", options_.seed, options_.init.seed);
  info.extra["hyperparameters"] = nlohmann::json{{"learning_rate", options_.hyper.learningRate},
                                                 {"momentum", options_.hyper.momentum},
                                                 {"nesterov", options_.hyper.nesterov},
                                                 {"weight_decay", options_.hyper.weightDecay},
                                                 {"batch", options_.batch},
                                                 {"accumulate", options_.accumulate},
                                                 {"schedule", optim::formatSchedule(options_.schedule)}}
                                      .dump();
  return writeState(path, info);
}

} // namespace netc::train
