// Inference.cpp -- netc::Model (a network with a checkpoint's weights:
// evaluate and predict) and netc::bench (training and inference throughput
// of the compiled plan on random data), from include/netc/Training.h.
#include "api/Backends.h"
#include "api/DataParallel.h"
#include "api/ModelImpl.h"
#include "api/NetworkImpl.h"
#include "codegen/Codegen.h"
#include "codegen/CostModel.h"
#include "netc/Training.h"
#include "runtime/comm/OpenCommunicator.h"
#include "runtime/data/DataFolder.h"
#include "runtime/data/Normalizer.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/Safetensors.h"
#include "support/Statistics.h"

#include "runtime/optim/Optimizer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

namespace netc {

namespace {

Task parseTaskText(const std::string &text) {
  if (text == "multiclass")
    return Task::Multiclass;
  if (text == "binary")
    return Task::Binary;
  if (text == "regression")
    return Task::Regression;
  return Task::Unspecified;
}

/// "[28, 28]" (checkpoint metadata) as a shape; empty when malformed.
std::vector<int64_t> parseShape(const std::string &text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<int64_t> shape;
  if (!j.is_array())
    return shape;
  for (const auto &d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0)
      return {};
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

} // namespace

Model::Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModelResult Model::load(const std::string &netPath, const std::string &checkpointPath,
                        const ModelOptions &options) {
  registerBuiltinBackends();
  ModelResult result;
  auto input = [&](std::string message) {
    result.failure = FailureKind::Input;
    result.error = std::move(message);
    return std::move(result);
  };
  if (options.batch <= 0 || options.threads < 0 || options.threads > kMaxThreads) {
    result.failure = FailureKind::Usage;
    result.error = options.batch <= 0 ? fmt::format("--batch must be at least 1, got {}", options.batch)
                                      : fmt::format("--threads must be from 0 (all cores) to {}, got {}",
                                                    kMaxThreads, options.threads);
    return result;
  }
  auto file = train::readSafetensors(checkpointPath);
  if (!file)
    return input(file.message());
  if (Status format = train::checkCheckpointFormat(*file, checkpointPath); !format)
    return input(format.message());
  // What the weights were trained for: without these the outputs would be
  // computed from other inputs, or read as another task, silently.
  auto task = file->metadataString("task");
  if (!task || parseTaskText(*task) == Task::Unspecified)
    return input(fmt::format("{}: its metadata has {} \"task\" (multiclass, binary or regression), so its "
                             "outputs cannot be read (docs/training.md, \"The checkpoint layout\")",
                             checkpointPath, task ? "a bad" : "no"));
  if (!file->metadataString("normalizer"))
    return input(fmt::format("{}: its metadata has no \"normalizer\", so the inputs its weights expect are "
                             "unknown; a checkpoint for raw inputs records "
                             "{{\"normalizer\":\"none\",\"features\":0,\"offset\":[],\"scale\":[]}} "
                             "(docs/training.md, \"The checkpoint layout\")",
                             checkpointPath));
  // The sizes that bind the network's `auto` shapes, as the run recorded them.
  CompileOptions compileOptions;
  compileOptions.maxSourceBytes = options.maxSourceBytes;
  const int64_t maxNodes = compileOptions.maxLayerNodes;
  auto inputSize = train::checkpointCount(*file, checkpointPath, "input_size", 1, maxNodes);
  auto classes = train::checkpointCount(*file, checkpointPath, "classes", 0, maxNodes);
  auto hidden = train::checkpointCount(*file, checkpointPath, "hidden_nodes", 1, maxNodes);
  for (const auto *count : {&inputSize, &classes, &hidden})
    if (!*count)
      return input(count->message());
  compileOptions.inputSize = *inputSize;
  compileOptions.task = parseTaskText(*task);
  if (*classes && **classes > 0)
    compileOptions.classCount = **classes;
  if (*hidden)
    compileOptions.hiddenNodes = **hidden;
  CompileResult compiled = compileFile(netPath, compileOptions);
  result.diagnostics = compiled.formattedDiagnostics;
  if (!compiled.network) {
    std::string recorded;
    for (const auto &[key, value] :
         {std::pair{"input_size", *inputSize}, {"classes", *classes}, {"hidden_nodes", *hidden}})
      if (value)
        recorded += fmt::format("{}{} {}", recorded.empty() ? "" : ", ", key, *value);
    return input(fmt::format("{} has errors{}", netPath,
                             recorded.empty()
                                 ? std::string()
                                 : fmt::format(" with the sizes and task recorded in {} ({}, task "
                                               "{})",
                                               checkpointPath, recorded, *task)));
  }
  plan::PlanOptions planOptions;
  planOptions.training = false;
  planOptions.maxMemoryBytes = options.maxMemory;
  auto plan = plan::buildPlan(compiled.network->impl().network, planOptions);
  if (!plan)
    return input(fmt::format("{}: {}", netPath, plan.message()));
  if (Status fits = plan::checkPlanFits(*plan, options.batch, options.maxMemory); !fits)
    return input(fmt::format("{}: {}", netPath, fits.message()));
  auto impl = std::make_shared<Impl>();
  impl->plan = std::move(*plan);
  impl->batch = options.batch;
  impl->name = compiled.network->name();
  impl->network = compiled.network->impl().network;
  auto setup = backendSetup({options.device, options.backend, options.precision, options.cpuIsa,
                             options.denseKernel, options.cudaDebug, options.cudaGraphs, options.threads, 0});
  if (!setup) {
    result.failure = FailureKind::Usage;
    result.error = setup.message();
    return result;
  }
  auto backend = runtime::createBackend(setup->backend, setup->options);
  if (!backend) {
    result.failure = FailureKind::Usage;
    result.error = "--backend: " + backend.message();
    return result;
  }
  impl->backend = std::move(*backend);
  if (Status s = impl->backend->load(impl->plan, impl->batch); !s)
    return input(s.message());
  auto info = train::loadCheckpoint(checkpointPath, impl->plan, *impl->backend, /*withOptimizerState=*/false);
  if (!info)
    return input(info.message());
  auto normalizer = data::Normalizer::fromJson(info->extra.at("normalizer"));
  if (!normalizer)
    return input(fmt::format("{}: bad normalizer metadata: {}", checkpointPath, normalizer.message()));
  if (normalizer->kind() != data::NormalizerKind::None &&
      normalizer->featureCount() != impl->plan.featureCount)
    return input(fmt::format("{}: its {} normalizer is for {} features but network '{}' reads {}",
                             checkpointPath, data::normalizerText(normalizer->spec()),
                             normalizer->featureCount(), impl->name, impl->plan.featureCount));
  impl->normalizer = std::move(*normalizer);
  if (auto it = info->extra.find("input_shape"); it != info->extra.end())
    impl->inputShape = parseShape(it->second);
  if (impl->inputShape.empty())
    impl->inputShape = {impl->plan.featureCount};
  result.model = Model(std::move(impl));
  return result;
}

int64_t Model::inputSize() const {
  return impl_->plan.featureCount;
}
int64_t Model::outputSize() const {
  return impl_->plan.outputNodes;
}
bool Model::classification() const {
  return train::isClassification(impl_->plan);
}
std::vector<int64_t> Model::inputShape() const {
  return impl_->inputShape;
}

std::vector<float> Model::predict(std::span<const float> features) const {
  const int64_t n = inputSize();
  if (features.empty() || static_cast<int64_t>(features.size()) % n != 0)
    return {};
  std::vector<float> normalized(features.begin(), features.end());
  const int64_t count = static_cast<int64_t>(features.size()) / n;
  if (impl_->normalizer.kind() != data::NormalizerKind::None)
    for (int64_t i = 0; i < count; ++i)
      if (!impl_->normalizer.applyRow(std::span<float>(normalized.data() + i * n, static_cast<size_t>(n))))
        return {};
  std::lock_guard lock(impl_->mutex);
  return train::predict(impl_->plan, *impl_->backend, normalized, count, impl_->batch);
}

namespace {

/// Why sample `sample` (normalised features) has outputs that are not
/// finite: the first layer that became so.
std::string nonFiniteText(const Model::Impl &impl, std::span<const float> sample) {
  std::string layer = train::firstNonFiniteLayer(impl.plan, *impl.backend, sample);
  return fmt::format(
      "the outputs of network '{}' are not finite: {}; its weights or these inputs are too large "
      "for 32-bit floats",
      impl.name, layer.empty() ? "the output layer holds NaN or an infinity" : layer);
}

} // namespace

std::vector<float> Model::predict(std::span<const float> features, std::string &error) const {
  error.clear();
  const int64_t n = inputSize();
  if (features.empty() || static_cast<int64_t>(features.size()) % n != 0) {
    error = fmt::format("{} values are not a positive multiple of the input size {}", features.size(), n);
    return {};
  }
  std::vector<float> normalized(features.begin(), features.end());
  const int64_t count = static_cast<int64_t>(features.size()) / n;
  for (int64_t i = 0; i < count; ++i)
    if (Status s =
            impl_->normalizer.applyRow(std::span<float>(normalized.data() + i * n, static_cast<size_t>(n)));
        !s) {
      error = fmt::format("sample {}: {}", i, s.message());
      return {};
    }
  std::lock_guard lock(impl_->mutex);
  std::vector<float> out = train::predict(impl_->plan, *impl_->backend, normalized, count, impl_->batch);
  const int64_t k = outputSize();
  for (int64_t i = 0; i < count; ++i)
    if (!std::all_of(out.begin() + i * k, out.begin() + (i + 1) * k,
                     [](float v) { return std::isfinite(v); })) {
      error = fmt::format(
          "sample {}: {}", i,
          nonFiniteText(*impl_, std::span<const float>(normalized.data() + i * n, static_cast<size_t>(n))));
      return {};
    }
  return out;
}

EvaluationResult Model::evaluate(const std::string &dataDir, std::string &error) const {
  auto loaded = data::loadEvaluationSet(dataDir);
  if (!loaded) {
    error = loaded.message();
    return {};
  }
  data::Dataset &set = *loaded;
  if (set.featureCount != inputSize()) {
    error = fmt::format("{}: samples have {} features but network '{}' reads {}", set.origin,
                        set.featureCount, impl_->name, inputSize());
    return {};
  }
  const int64_t classes = outputSize() == 1 ? 2 : outputSize();
  if (classification())
    if (const int64_t i = data::firstLabelOutside(set, classes); i >= 0) {
      error = fmt::format("{}: label {} is outside the {} classes of network '{}' (labels must be integers 0 "
                          "to {})",
                          data::labelLocation(set, i), double(set.labels[static_cast<size_t>(i)]), classes,
                          impl_->name, classes - 1);
      return {};
    }
  if (Status s = impl_->normalizer.apply(set); !s) {
    error = s.message();
    return {};
  }
  std::lock_guard lock(impl_->mutex);
  auto e = train::evaluate(impl_->plan, *impl_->backend, set, impl_->batch);
  if (!e) { // only a communicator fails an evaluation, and this one has none
    error = e.message();
    return {};
  }
  if (e->nonFiniteSamples > 0) {
    error = fmt::format("{}: {} ({} of the {} samples)", data::sampleLocation(set, e->firstNonFinite),
                        nonFiniteText(*impl_, set.row(e->firstNonFinite)), e->nonFiniteSamples, set.count);
    return {};
  }
  EvaluationResult result{e->samples,   e->loss,          e->accuracy, e->classification,
                          e->confusion, e->classAccuracy, set.origin,  set.headerNote};
  return result;
}

namespace {

std::string_view sectionOf(const plan::Plan &plan, size_t op) {
  return op < plan.forwardEnd    ? "forward"
         : op < plan.lossEnd     ? "loss"
         : op < plan.backwardEnd ? "backward"
         : op < plan.updateEnd   ? "update"
                                 : "average";
}

/// Times each op of a loaded plan on its own (run one op, wait for it) over
/// `settings.iterations` steps; the median per op goes to `profile`. Works for
/// any backend, since it only uses Backend::run and synchronize.
Status profileOps(const plan::Plan &plan, runtime::Backend &backend, const BenchSettings &settings,
                  const std::vector<plan::OpKind> &bf16Kinds, std::vector<OpProfile> &profile) {
  std::vector<std::vector<double>> times(plan.ops.size());
  for (int64_t step = 0; step < settings.iterations; ++step)
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      if (Status s = backend.run(i, i + 1, settings.batch); !s)
        return s;
      backend.synchronize();
      times[i].push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    OpProfile entry;
    entry.section = sectionOf(plan, i);
    entry.op = plan::opName(op.kind);
    entry.output = op.out.empty() ? "" : plan.buffers[static_cast<size_t>(op.out[0])].name;
    entry.microseconds = median(times[i]);
    // The cost model's count (its FLOPs only for the ops it prices by FLOPs:
    // the others, copies and sums of biases, do an addition per value moved).
    const cost::OpWork work = cost::opWork(plan, op);
    if (cost::workMeasure(op.kind) == cost::WorkMeasure::Flops)
      entry.flops = work.flopsPerSample * double(settings.batch) + work.fixedFlops;
    entry.bytes = work.bytesPerSample * double(settings.batch) + work.fixedBytes;
    entry.bf16 = std::find(bf16Kinds.begin(), bf16Kinds.end(), op.kind) != bf16Kinds.end();
    profile.push_back(std::move(entry));
  }
  return Status::success();
}

} // namespace

BenchResult bench(const std::string &netPath, const BenchSettings &s) {
  registerBuiltinBackends();
  BenchResult result;
  result.batch = s.batch;
  result.threads = s.threads;
  if (s.batch <= 0 || s.iterations <= 0 || s.repeats <= 0 || s.warmup < 0 || s.threads < 0 ||
      s.threads > kMaxThreads || !(s.bucketMb > 0 && s.bucketMb <= kMaxBucketMb) ||
      !(s.commTimeout > 0 && s.commTimeout <= kMaxCommTimeout)) {
    result.failure = FailureKind::Usage;
    result.error = fmt::format("--batch, --iterations and --repeats must be at least 1, --warmup at least 0, "
                               "--threads from 0 to {} and --bucket-mb positive up to {} (got batch {}, "
                               "iterations {}, repeats {}, threads {}, warmup {}, bucket-mb {})",
                               kMaxThreads, kMaxBucketMb, s.batch, s.iterations, s.repeats, s.threads,
                               s.warmup, s.bucketMb);
    return result;
  }
  CompileOptions options;
  options.inputSize = s.inputSize;
  options.maxSourceBytes = s.maxSourceBytes;
  CompileResult compiled = compileFile(netPath, options);
  result.diagnostics = compiled.formattedDiagnostics;
  if (!compiled.network) {
    result.failure = FailureKind::Input;
    result.error = fmt::format("{} has errors", netPath);
    return result;
  }
  const ir::Network &net = compiled.network->impl().network;
  result.params = net.params;
  // With several ranks: each runs the data-parallel step (its gradients
  // all-reduced) on its own batch; the figures are the job's.
  auto joined = training::joinCommunicator(s.launch, s.device, s.backend, s.commTimeout);
  if (!joined) {
    result.failure = FailureKind::Input;
    result.error = joined.message();
    return result;
  }
  comm::Communicator &comm = **joined;
  result.rank = comm.rank();
  result.ranks = comm.size();
  // SGD with momentum 0.9, as the PyTorch reference (bench/torch_reference.py).
  plan::PlanOptions trainOptions;
  trainOptions.update.hyper.momentum = 0.9f;
  trainOptions.maxMemoryBytes = s.maxMemory;
  if (comm.size() > 1 || comm.kind() == "nccl") // NCCL: its bucketed path even on one GPU
    trainOptions.replicaSync = plan::ReplicaSync::AllReduceGradients;
  trainOptions.bucketBytes = std::max<int64_t>(1, std::llround(s.bucketMb * double(1 << 20)));
  plan::PlanOptions inferOptions;
  inferOptions.training = false;
  inferOptions.maxMemoryBytes = s.maxMemory;
  auto trainPlan = plan::buildPlan(net, trainOptions);
  auto inferPlan = plan::buildPlan(net, inferOptions);
  if (!trainPlan || !inferPlan) {
    result.failure = FailureKind::Input;
    result.error = fmt::format("{}: {}", netPath, (!trainPlan ? trainPlan : inferPlan).message());
    return result;
  }
  // The training plan holds the most; it is checked before anything scales with the batch.
  if (Status fits = plan::checkPlanFits(*trainPlan, s.batch, s.maxMemory); !fits) {
    result.failure = FailureKind::Usage;
    result.error = fmt::format("--batch {}: {}", s.batch, fits.message());
    return result;
  }
  result.trainBytesPerBatch = double(trainPlan->bytesPerBatch(s.batch));
  result.inferBytesPerBatch = double(inferPlan->bytesPerBatch(s.batch));
  auto setup =
      backendSetup({s.device, s.backend, s.precision, s.cpuIsa, s.denseKernel, s.cudaDebug, s.cudaGraphs,
                    training::threadsPerRank(s.threads, s.launch), s.launch.localRank});
  if (!setup) {
    result.failure = FailureKind::Usage;
    result.error = setup.message();
    return result;
  }
  const runtime::BackendOptions &backendOptions = setup->options;
  result.backend = setup->backend;
  result.deviceNote = setup->note;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> features(static_cast<size_t>(s.batch * trainPlan->featureCount)),
      labels(static_cast<size_t>(s.batch));
  for (float &f : features)
    f = pixel(rng);
  const int64_t classes = trainPlan->outputNodes == 1 ? 2 : trainPlan->outputNodes;
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = train::isClassification(*trainPlan) ? float(i % size_t(classes)) : pixel(rng);

  int threadsUsed = s.threads;
  auto measure = [&](const plan::Plan &plan, bool training, std::vector<double> &runs) -> Status {
    auto backend = runtime::createBackend(setup->backend, backendOptions);
    if (!backend)
      return fail("--backend: " + backend.message());
    if (Status st = (*backend)->load(plan, s.batch); !st)
      return st;
    (*backend)->attach(&comm);
    threadsUsed = (*backend)->describe().threads;
    result.device = (*backend)->describe().device;
    result.denseKernels = (*backend)->describe().denseKernels;
    result.kernelWarning = (*backend)->describe().kernelWarning;
    result.threadNote = (*backend)->describe().threadNote;
    // The loss sums are read as the trainer reads them: every few steps on a
    // device, where reading waits for the step.
    const int64_t logEvery = std::max<int64_t>(1, (*backend)->describe().defaultLogEvery);
    train::initializeParameters(plan, **backend, {train::InitKind::Xavier, 0.1f, 1});
    (*backend)->write(plan.features, features);
    (*backend)->write(plan.labels, labels);
    const size_t last = training ? plan.ops.size() : plan.forwardEnd;
    int64_t stepCount = 0;
    // A training step as the trainer runs it: the step scalars, the batch
    // into an input slot (unless --resident-input keeps it there), one run,
    // the loss sums read.
    auto step = [&]() -> Status {
      train::writeStepScalars(plan, **backend,
                              optim::stepScalars(trainOptions.update, 0.01f, ++stepCount,
                                                 double(s.batch * comm.size()), s.batch));
      if (!s.residentInput) {
        (*backend)->writeInput(0, plan.features, features);
        (*backend)->writeInput(0, plan.labels, labels);
        (*backend)->fence();
      }
      if (Status st = (*backend)->run(0, last, s.batch); !st)
        return st;
      if (training && stepCount % logEvery == 0)
        train::takeMetrics(plan, **backend);
      return Status::success();
    };
    for (int64_t i = 0; i < s.warmup; ++i)
      if (Status st = step(); !st)
        return st;
    (*backend)->synchronize();
    for (int64_t r = 0; r < s.repeats; ++r) {
      if (Status st = comm.barrier("barrier before a timed repeat"); !st)
        return st;
      auto start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < s.iterations; ++i)
        if (Status st = step(); !st)
          return st;
      (*backend)->synchronize();
      // The job's time is its slowest rank's.
      std::array<double, 1> seconds = {
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
      if (Status st =
              comm.allReduce(std::span<double>(seconds), comm::ReduceOp::Max, "all-reduce of the times");
          !st)
        return st;
      runs.push_back(double(s.batch * s.iterations * comm.size()) / seconds[0]);
    }
    if (training) {
      result.launchesPerStep = (*backend)->describe().launchesLastRun;
      result.deviceBytes = (*backend)->describe().deviceBytes;
    }
    if (training && s.profile) {
      const runtime::PeakRates peak = (*backend)->measurePeak();
      result.peak.gflops = peak.gflops;
      result.peak.gflopsPerCore = peak.flopsPerCore;
      result.peak.gbPerSecond = peak.gbPerSecond;
      for (const runtime::PeakRates::CacheCeiling &c : peak.caches)
        result.peak.caches.push_back({c.bytes, c.gbPerSecond});
      result.peak.bf16Gflops = peak.bf16Gflops;
      result.peak.bf16GflopsPerCore = peak.bf16FlopsPerCore;
      return profileOps(plan, **backend, s, peak.bf16Kinds, result.profile);
    }
    return Status::success();
  };
  if (Status st = measure(*trainPlan, true, result.trainRuns); !st) {
    result.failure = FailureKind::Input;
    result.error = st.message();
    return result;
  }
  if (Status st = measure(*inferPlan, false, result.inferRuns); !st) {
    result.failure = FailureKind::Input;
    result.error = st.message();
    return result;
  }
  result.trainImagesPerSecond = median(result.trainRuns);
  result.inferImagesPerSecond = median(result.inferRuns);
  result.threads = threadsUsed;
  return result;
}

} // namespace netc
