// DataParallel.cpp -- a process as a rank of a data-parallel job
// (DataParallel.h). Fingerprint values are short texts: a setting as its
// flag spells it, a data set as its size and a hash of its contents.
#include "api/DataParallel.h"
#include "api/Backends.h"
#include "api/Pipeline.h"
#include "api/SettingValues.h"
#include "runtime/comm/Launch.h"
#include "runtime/comm/OpenCommunicator.h"
#include "support/ByteSize.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <numeric>
#include <thread>

namespace netc {

LaunchResult launchFromEnvironment() {
  LaunchResult result;
  auto info = comm::parseLaunchEnvironment(comm::processEnvironment());
  if (!info) {
    result.error = info.message();
    return result;
  }
  result.launch = {info->rank,  info->size,        info->localRank,     info->localSize,  info->launcher,
                   info->jobId, info->launcherPid, info->launcherStart, info->statusFile, info->pmix};
  return result;
}

} // namespace netc

namespace netc::training {

namespace {

std::string datasetFingerprint(const data::Dataset &d) {
  const std::string features = comm::hashBytes(d.features.data(), d.features.size() * sizeof(float));
  const std::string labels = comm::hashBytes(d.labels.data(), d.labels.size() * sizeof(float));
  return fmt::format("{} samples of {} features (contents {}, labels {})", d.count, d.featureCount, features,
                     labels);
}

std::string checkpointFingerprint(const train::SafetensorsFile &file) {
  std::string all;
  for (const auto &[key, value] : file.metadata)
    all += key + '\0' + value + '\0';
  for (const train::Tensor &t : file.tensors)
    all += t.name + '\0' + comm::hashBytes(t.bytes.data(), t.bytes.size());
  return "contents " + comm::hashBytes(all.data(), all.size());
}

/// The ranks counts that divide `globalBatch` (up to 64 of them): "1, 2, 4 or 8".
std::string dividingRanks(int64_t globalBatch) {
  std::vector<std::string> counts;
  for (int64_t r = 1; r <= globalBatch && counts.size() < 64; ++r)
    if (globalBatch % r == 0)
      counts.push_back(std::to_string(r));
  std::string text;
  for (size_t i = 0; i < counts.size(); ++i)
    text += (i == 0 ? "" : i + 1 == counts.size() ? " or " : ", ") + counts[i];
  return text;
}

} // namespace

bool usesDeviceTransport(const Launch &launch, std::string_view device, std::string_view backend) {
  return !launch.jobId.empty() || (launch.size > 1 && (device.starts_with("cuda") || backend == "cuda"));
}

int gpusToShare(int localRanks, int firstGpu, int deviceCount) {
  const int available = deviceCount - firstGpu;
  return available >= 1 && localRanks > available ? available : 0;
}

int sharedGpus(const Launch &l, std::string_view device, std::string_view backend, bool pipeline) {
  if (!pipeline || l.size <= 1 || !l.jobId.empty() || !(device.starts_with("cuda") || backend == "cuda"))
    return 0;
  const comm::DeviceTransport *nccl = comm::findDeviceTransport("nccl");
  if (!nccl)
    return 0;
  auto count = nccl->deviceCount();
  auto first = chooseDevice(device.empty() || device == "auto" ? "cuda" : device, "cuda", 0,
                            [](int) { return std::optional<std::string>(); });
  if (!count || !first)
    return 0; // the backend says what is wrong with the device
  return gpusToShare(l.localSize, first->device, *count);
}

Expected<std::shared_ptr<comm::Communicator>> joinCommunicator(const Launch &l, std::string_view device,
                                                               std::string_view backend, double commTimeout,
                                                               bool pipeline) {
  const comm::LaunchInfo launch{l.rank,  l.size,        l.localRank,     l.localSize,  l.launcher,
                                l.jobId, l.launcherPid, l.launcherStart, l.statusFile, l.pmix};
  comm::CommOptions options;
  options.timeoutSeconds = commTimeout;
  if (!usesDeviceTransport(l, device, backend))
    return comm::openCommunicator(launch, options);
  if (pipeline && l.jobId.empty() && l.size > 1) {
    // Sharing GPUs is the job's choice, not one machine's: where any machine
    // has fewer GPUs than ranks, every rank goes through the host.
    auto host = comm::openCommunicator(launch, options);
    if (!host)
      return host.error();
    std::array<int64_t, 1> shares = {sharedGpus(l, device, backend, pipeline) > 0 ? 1 : 0};
    if (Status s = (*host)->allReduce(std::span<int64_t>(shares), comm::ReduceOp::Max,
                                      "agreement on sharing the GPUs");
        !s)
      return Error{s.message()};
    if (shares[0] > 0)
      return std::move(*host);
  }
  // One GPU per rank: the GPU --device names plus the local rank.
  auto choice = chooseDevice(device.empty() || device == "auto" ? "cuda" : device, backend, l.localRank);
  if (!choice)
    return fail(fmt::format("{}: {}", comm::rankName(l.rank, l.size), choice.message()));
  if (choice->backend != "cuda")
    return fail(fmt::format("{} of a GPU job (--gpus) cannot run on --device {}: leave --device out or give "
                            "cuda",
                            comm::rankName(l.rank, l.size), device));
  return comm::openDeviceCommunicator(launch, options, "nccl", choice->device);
}

Step<std::shared_ptr<comm::Communicator>> joinJob(const TrainSettings &s) {
  auto joined = joinCommunicator(s.launch, s.device, s.backend, s.commTimeout, pipelineAsked(s));
  if (!joined)
    return input(joined.message());
  return std::move(*joined);
}

Step<int64_t> settleBatch(const TrainSettings &s, const StartPoint &start) {
  if (s.batch > 0)
    return s.batch;
  if (s.resume.empty() || !start.file)
    return int64_t{1};
  // The global batch the run had: recorded since data-parallel runs; before,
  // the batch of its one process (hyperparameters), or Azure's online SGD.
  int64_t global = 1;
  nlohmann::json hyper;
  if (auto text = start.file->metadataString("hyperparameters"))
    hyper = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto hyperInt = [&](const char *key) -> int64_t {
    return hyper.is_object() && hyper.contains(key) && hyper[key].is_number_integer() &&
                   hyper[key].get<int64_t>() >= 1
               ? hyper[key].get<int64_t>()
               : 0;
  };
  if (auto recorded = start.file->metadataInt("global_batch"); recorded && *recorded >= 1) {
    global = *recorded;
    // Checkpoints before netc counted --accumulate in it recorded the batch
    // × the ranks alone: told apart by their own batch and ranks.
    const int64_t batch = hyperInt("batch"), accumulate = hyperInt("accumulate");
    const int64_t ranks = start.file->metadataInt("world_size").value_or(1);
    if (accumulate > 1 && batch > 0 && global == batch * ranks)
      global *= accumulate;
  } else if (const int64_t batch = hyperInt("batch")) {
    global = batch * std::max<int64_t>(1, hyperInt("accumulate"));
  }
  // The global batch is the samples of one update: the batch of each rank
  // × the ranks × the micro-batches of --accumulate (a pipeline's stages
  // share one copy's batch).
  if (s.partition == kAutoPartition)
    return usage(fmt::format("--partition auto chooses the pipeline for --batch: give --batch to continue {} "
                             "(its global batch is {}, the batch of each pipeline × the pipelines)",
                             s.resume, global));
  const int ranks = dataRanksAsked(s);
  const int64_t shares = ranks * s.accumulate;
  if (global % shares != 0)
    return usage(fmt::format(
        "{} continues a run whose global batch is {} samples per step, which {} ranks{} cannot share "
        "equally: run it on {} ranks{}, or give --batch (a new global batch of --batch × {}, allowed where "
        "an epoch ends)",
        s.resume, global, ranks,
        s.accumulate > 1 ? fmt::format(" × --accumulate {}", s.accumulate) : std::string(),
        dividingRanks(global), s.accumulate > 1 ? " without --accumulate" : "", shares));
  return global / shares;
}

int threadsPerRank(int threads, const Launch &launch) {
  if (threads > 0 || launch.localSize <= 1)
    return threads;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / launch.localSize);
}

comm::Fingerprint runFingerprint(const TrainSettings &s, const RunSettings &run, const StartPoint &start,
                                 const TrainingData &data) {
  comm::Fingerprint f;
  f.add("netc version", kVersion);
  const optim::Hyperparameters &h = run.hyper;
  f.add("--epochs", std::to_string(s.epochs));
  f.add("--batch", std::to_string(s.batch));
  f.add("--accumulate", std::to_string(s.accumulate));
  f.add("--optimizer", std::string(optimizerName(s.optimizer)));
  f.add("--lr", s.learningRate ? fmt::format("{:g}", *s.learningRate) : std::string("the default"));
  f.add("--momentum", fmt::format("{:g}", h.momentum));
  f.add("--nesterov", h.nesterov ? "on" : "off");
  f.add("--weight-decay", fmt::format("{:g}", h.weightDecay));
  f.add("--beta1, --beta2, --epsilon", fmt::format("{:g}, {:g}, {:g}", h.beta1, h.beta2, h.epsilon));
  f.add("--decay, --conditioning", fmt::format("{:g}, {:g}", h.decay, h.conditioning));
  f.add("--schedule", scheduleText(s.schedule));
  f.add("--init", fmt::format("{} (diameter {:g})", initName(s.init), s.initDiameter));
  f.add("--normalize", s.normalize ? normalizeText(*s.normalize) : std::string("the default"));
  f.add("--no-shuffle", s.shuffle ? "off" : "on");
  f.add("--validation", fmt::format("{:g}", data.validationFraction));
  f.add("--task", taskText(s.task));
  f.add("--hidden-nodes", std::to_string(s.hiddenNodes));
  f.add("--backend", s.backend);
  f.add("--log-every", s.logEvery ? std::to_string(s.logEvery) : std::string("the backend's"));
  f.add("--bucket-mb", fmt::format("{:g}", s.bucketMb));
  f.add("--sync", syncText(s.sync));
  f.add("--lr-scaling", std::string(lrScalingName(s.lrScaling)));
  f.add("--lr-warmup", s.lrWarmup.length > 0 ? lrWarmupText(s.lrWarmup) : std::string("none"));
  f.add("--comm-timeout", fmt::format("{:g}", s.commTimeout));
  f.add("--data-on-device", s.dataOnDevice ? "on" : "off");
  f.add("--deterministic",
        s.deterministicChunks ? std::to_string(s.deterministicChunks) : std::string("off"));
  std::string cuts;
  for (const std::string &layer : s.cuts)
    cuts += (cuts.empty() ? "" : ",") + layer;
  f.add("--partition", s.partition == kAutoPartition ? std::string("auto") : std::to_string(s.partition));
  f.add("--cut", cuts.empty() ? std::string("none") : cuts);
  f.add("--micro-batches", s.microBatches ? std::to_string(s.microBatches) : std::string("the default"));
  f.add("--pipeline-schedule", s.pipelineSchedule);
  std::string splits;
  for (const std::string &split : s.splits)
    splits += (splits.empty() ? "" : ",") + split;
  f.add("--split", splits.empty() ? std::string("none") : splits);
  std::string skipped;
  for (const std::string &layer : s.initSkip)
    skipped += (skipped.empty() ? "" : ",") + layer;
  f.add("--init-skip", skipped.empty() ? std::string("none") : skipped);
  f.add(!s.resume.empty() ? "--resume checkpoint" : "--init-from checkpoint",
        start.file ? checkpointFingerprint(*start.file) : std::string("none"));
  f.add("training data", datasetFingerprint(data.train));
  f.add("test data", data.test ? datasetFingerprint(*data.test) : std::string("none"));
  return f;
}

comm::Fingerprint networkFingerprint(const CompiledNetwork &network, const TrainingPlan &plan,
                                     const Normalizing &normalizing, const std::string &pipeline) {
  comm::Fingerprint f;
  const ir::Network &net = network.net();
  f.add("network",
        fmt::format("'{}' (text {})", net.name,
                    comm::hashBytes(network.compiled.source.data(), network.compiled.source.size())));
  f.add("task", fmt::format("{}, {} classes", taskText(network.options.task), plan.classes));
  f.add("parameters", std::to_string(net.params));
  const std::string normalizer = normalizing.normalizer.toJson();
  f.add("normalizer", "fitted " + comm::hashBytes(normalizer.data(), normalizer.size()));
  f.add("pipeline", pipeline.empty() ? std::string("none") : pipeline);
  return f;
}

std::optional<Refusal> agreeAcrossRanks(comm::Communicator &comm, std::optional<Refusal> mine,
                                        const comm::Fingerprint &fingerprint, uint64_t &seed,
                                        std::string_view what, bool &errorOnEveryRank) {
  if (comm.size() == 1)
    return mine;
  comm::Outcome outcome;
  outcome.ok = !mine;
  if (mine) {
    outcome.kind = static_cast<int>(mine->kind);
    outcome.message = mine->message;
  } else {
    outcome.fingerprint = fingerprint;
  }
  outcome.value = seed;
  auto verdict = comm::agree(comm, outcome, what);
  if (!verdict) // the exchange itself failed: this rank's own message
    return input(verdict.message());
  errorOnEveryRank = !verdict->ok;
  if (!verdict->ok)
    return Refusal{verdict->kind == comm::kMismatchKind ? FailureKind::Usage
                                                        : static_cast<FailureKind>(verdict->kind),
                   verdict->message};
  seed = verdict->value;
  return std::nullopt;
}

std::string jobLine(const TrainSettings &s, const comm::Communicator &comm, const plan::Plan &plan) {
  if (comm.size() == 1 && comm.kind() != "nccl")
    return {};
  const int64_t bucketValues = std::accumulate(plan.buckets.begin(), plan.buckets.end(), int64_t{0},
                                               [](int64_t n, const plan::Bucket &b) { return n + b.count; });
  const std::string sync =
      s.deterministicChunks > 0
          ? fmt::format("gradients added on the host in a fixed order ({} chunks a step)",
                        s.deterministicChunks)
      : s.sync.kind == Sync::Kind::LocalSgd
          ? fmt::format("local SGD: replicas averaged every {} step(s) and at each epoch's end", s.sync.every)
          : fmt::format("gradients all-reduced in {} bucket(s) of {} in all", plan.buckets.size(),
                        byteSizeText(uint64_t(bucketValues) * sizeof(float)));
  return fmt::format(
      "data parallel: {} rank{} ({}{}, {} on this machine), global batch {} ({} × --batch {}{}), {}, "
      "--comm-timeout {:g} s",
      comm.size(), comm.size() == 1 ? "" : "s",
      s.launch.launcher.empty() ? comm.kind() : std::string_view(s.launch.launcher),
      comm.kind() == "nccl" && !s.launch.launcher.empty() ? ", NCCL on the GPUs" : "", comm.localSize(),
      s.batch * s.accumulate * comm.size(), comm.size(), s.batch,
      s.accumulate > 1 ? fmt::format(" × --accumulate {}", s.accumulate) : std::string(), sync,
      s.commTimeout);
}

} // namespace netc::training
