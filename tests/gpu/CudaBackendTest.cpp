// CudaBackendTest.cpp -- the checks that need a GPU (issue "CUDA backend"):
// every op of the test corpus run by the CUDA backend against the reference
// kernels, op by op from the same state (what DeviceKernelParityTest.cpp
// checks on the host with the same bodies, here on the device with cuBLAS);
// a few whole training steps of the seed network and of the pooling,
// response-norm and `where` examples on the GPU and on the CPU's fast
// kernels from the same start, with the same losses within 1e-3 relative;
// checkpoints written on one device and read on the other; and training
// from a training set held on the GPU (--data-on-device) bit-identical to
// training from batches copied in; and a 2-stage pipeline on the one GPU
// (each stage's micro-batches in activation slots, its sends and receives
// through the host) with the parameters and optimizer state of one CPU
// process accumulating the same micro-batches; and a layer split over two
// parts on the one GPU with the parameters of one CPU process. Without a usable GPU the binary prints
// why and exits 77, which CTest reports as a skip (tests/gpu/CMakeLists.txt); scripts/gpu_check.sh runs it on
// a GPU machine, under compute-sanitizer too. --backend-under-test=cpu runs the same tests against the CPU
// backend: a dry run of their own logic.
#include "../numeric/PipelineLoopback.h"
#include "../numeric/PlanHarness.h"
#include "../numeric/TestNetworks.h"
#include "GpuTraining.h"

#include "api/Backends.h"
#include "codegen/Partition.h"
#include "netc/Training.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/PipelineSchedule.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string_view>

namespace netc::numeric {
namespace {

/// The backend these tests check: "cuda", or with --backend-under-test=NAME
/// another one (a dry run of the tests' own logic on a machine without a GPU).
std::string &backendUnderTest() {
  static std::string name = "cuda";
  return name;
}

/// A plan loaded on the CUDA backend (cuda:0) with a fixed batch; the same
/// interface as Machine, through the Backend interface only.
class GpuMachine {
public:
  /// `variant`: BackendOptions::variant ("no-cudnn": netc's own convolution kernels).
  GpuMachine(const plan::Plan &plan, int64_t batch, bool checkEachOp = true, std::string variant = "",
             bool graphs = true)
      : plan_(&plan), batch_(batch) {
    runtime::BackendOptions options;
    options.checkEachOp = checkEachOp;
    options.captureGraphs = graphs;
    if (backendUnderTest() == "cuda")
      options.variant = std::move(variant);
    auto created = runtime::createBackend(backendUnderTest(), options);
    EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.message());
    if (!created.ok())
      return;
    backend_ = std::move(*created);
    Status s = backend_->load(plan, batch);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  runtime::Backend &backend() { return *backend_; }
  std::vector<float> read(int buffer) const {
    std::vector<float> out(elementsOf(plan_->buffers[static_cast<size_t>(buffer)], batch_));
    backend_->read(buffer, out);
    return out;
  }
  void restore(const State &state) {
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (isFloatData(plan_->buffers[b]) && !state[b].empty())
        backend_->write(static_cast<int>(b), state[b]);
  }
  /// Ops [first, last) on `samples` samples (0: the loaded batch).
  void run(size_t first, size_t last, float learningRate = 0.1f, int64_t step = 1, int64_t samples = 0) {
    const int64_t n = samples > 0 ? samples : batch_;
    plan::UpdateRule rule;
    for (const plan::Op &op : plan_->ops)
      if (op.kind == plan::OpKind::Update)
        rule = op.get<plan::UpdateAttrs>().rule;
    backend_->write(plan_->scalars, optim::stepScalars(rule, learningRate, step, double(n), n));
    backend_->write(plan_->metrics, std::vector<float>(plan::kMetricCount, 0.0f));
    if (Status ran = backend_->run(first, last, n); !ran)
      ADD_FAILURE() << ran.message();
    backend_->synchronize();
  }

private:
  const plan::Plan *plan_;
  int64_t batch_;
  std::unique_ptr<runtime::Backend> backend_;
};

class GpuParity : public ::testing::TestWithParam<NetCase> {};

/// Op by op against the reference: batches 1, 3 and 19, with convolutions
/// on cuDNN where it computes them and on netc's own kernels.
TEST_P(GpuParity, EachOpMatchesItsReference) {
  const NetCase &net = GetParam();
  Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
  const plan::Plan &plan = compiled.plan;
  ASSERT_GT(plan.ops.size(), 0u);
  for (auto [batch, variant] : {std::pair{int64_t{1}, ""},
                                {int64_t{3}, ""},
                                {int64_t{19}, ""},
                                {int64_t{3}, "no-cudnn"},
                                {int64_t{19}, "no-cudnn"}}) {
    SCOPED_TRACE(fmt::format("batch {} {}", batch, variant));
    Machine reference(plan, batch, {1, true, {}});
    GpuMachine gpu(plan, batch, true, variant);
    reference.restore(randomState(plan, batch, 1000u + static_cast<uint32_t>(batch)));
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const State before = reference.snapshot();
      reference.run(i, i + 1);
      gpu.restore(before);
      gpu.run(i, i + 1);
      for (int out : plan.ops[i].out) {
        if (isFloatData(plan.buffers[static_cast<size_t>(out)])) {
          EXPECT_TRUE(valuesClose(describeOp(plan, i), gpu.read(out), reference.read(out)));
        }
      }
      if (plan.ops[i].kind == plan::OpKind::Update) {
        for (const plan::Parameter &p : plan.parameters) {
          EXPECT_TRUE(valuesClose(p.name, gpu.read(p.buffer), reference.read(p.buffer)));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, GpuParity, ::testing::ValuesIn(parityCases(8)),
                         [](const ::testing::TestParamInfo<NetCase> &info) { return info.param.name; });

/// Several training steps of each example on the GPU (no per-op checks: the
/// backend as training runs it) and on the CPU's fast kernels, from the same
/// start: the losses agree within 1e-3 relative at every step.
TEST(GpuTraining, ExampleStepsMatchTheCpu) {
  for (std::string example : {"mnist", "pool-norm", "multi-input-filtered", "lenet5"}) {
    SCOPED_TRACE(example);
    Compiled c = compileAndPlan(readFile(sourcePath("examples/" + example + ".net")));
    const plan::Plan &plan = c.plan;
    ASSERT_GT(plan.ops.size(), 0u);
    const int64_t batch = 32;
    const State initial = randomState(plan, batch, 21);
    Machine cpu(plan, batch, {1, false, {}});
    GpuMachine gpu(plan, batch, /*checkEachOp=*/false);
    cpu.restore(initial);
    gpu.restore(initial);
    for (int64_t step = 1; step <= 5; ++step) {
      cpu.run(0, plan.ops.size(), 0.05f, step);
      gpu.run(0, plan.ops.size(), 0.05f, step);
      const float lc = cpu.read(plan.metrics)[0], lg = gpu.read(plan.metrics)[0];
      EXPECT_NEAR(lg, lc, 1e-3 * std::max(1.0f, std::abs(lc))) << "step " << step;
    }
  }
}

/// The examples' convolutions run on cuDNN (every one of their forms has a
/// cuDNN description), with algorithms measured once and then taken from
/// the cache; and a partial batch (fewer samples than loaded, as an epoch's
/// last) gives the CPU's loss.
TEST(GpuCudnn, TheExamplesConvolutionsRunOnCudnnAndPartialBatchesMatch) {
  if (backendUnderTest() != "cuda")
    GTEST_SKIP() << "cuDNN is the cuda backend's";
  const auto cache = std::filesystem::temp_directory_path() / fmt::format("netc-gpu-cache-{}", ::getpid());
  std::filesystem::remove_all(cache);
  ::setenv("NETC_CACHE_DIR", cache.c_str(), 1);
  for (std::string example : {"mnist", "lenet5"}) {
    SCOPED_TRACE(example);
    Compiled c = compileAndPlan(readFile(sourcePath("examples/" + example + ".net")));
    const plan::Plan &plan = c.plan;
    int convolutions = 0;
    for (const plan::Op &op : plan.ops)
      convolutions += op.kind == plan::OpKind::Convolution || op.kind == plan::OpKind::ConvolutionGradInput ||
                      op.kind == plan::OpKind::ConvolutionGradWeights;
    const int64_t batch = 32, partial = 13;
    const State initial = randomState(plan, batch, 5);
    for (const char *expected : {" algorithms measured, 0 cached", "(0 algorithms measured"}) {
      GpuMachine gpu(plan, batch, false);
      const std::string device = gpu.backend().describe().device;
      EXPECT_NE(device.find(fmt::format("for {0} of {0} convolution ops", convolutions)), std::string::npos)
          << device;
      EXPECT_NE(device.find(expected), std::string::npos) << device;
      Machine cpu(plan, partial, {1, false, {}});
      State cut = initial;
      for (size_t b = 0; b < plan.buffers.size(); ++b) // the first `partial` samples of batch-scaled buffers
        if (plan.buffers[b].batchScaled() && !cut[b].empty())
          cut[b].resize(static_cast<size_t>(elementsOf(plan.buffers[b], partial)));
      cpu.restore(cut);
      gpu.restore(initial);
      cpu.run(0, plan.ops.size(), 0.05f, 1);
      gpu.run(0, plan.ops.size(), 0.05f, 1, partial);
      const float lc = cpu.read(plan.metrics)[0], lg = gpu.read(plan.metrics)[0];
      EXPECT_NEAR(lg, lc, 1e-3 * std::max(1.0f, std::abs(lc)));
      for (const plan::Parameter &p : plan.parameters)
        EXPECT_TRUE(valuesClose(p.name, gpu.read(p.buffer), cpu.read(p.buffer)));
    }
  }
  ::unsetenv("NETC_CACHE_DIR");
  std::filesystem::remove_all(cache);
}

/// An algorithm cache whose entries name TF32 math (a damaged or edited
/// file) is not trusted under FP32: every convolution is measured again.
TEST(GpuCudnn, ACachedTf32AlgorithmIsNotUsedForFp32) {
  if (backendUnderTest() != "cuda")
    GTEST_SKIP() << "cuDNN is the cuda backend's";
  const auto cache = std::filesystem::temp_directory_path() / fmt::format("netc-gpu-tf32-{}", ::getpid());
  std::filesystem::remove_all(cache);
  ::setenv("NETC_CACHE_DIR", cache.c_str(), 1);
  Compiled c = compileAndPlan(readFile(sourcePath("examples/mnist.net")));
  { GpuMachine first(c.plan, 16, false); } // measures and writes the cache
  const std::string file = (cache / "cudnn-algorithms.tsv").string();
  std::string text = readFile(file);
  ASSERT_NE(text.find("\t3\n"), std::string::npos) << text; // CUDNN_FMA_MATH
  for (size_t at; (at = text.find("\t3\n")) != std::string::npos;)
    text.replace(at, 3, "\t1\n"); // CUDNN_TENSOR_OP_MATH
  std::ofstream(file, std::ios::trunc) << text;
  GpuMachine again(c.plan, 16, false);
  const std::string device = again.backend().describe().device;
  EXPECT_NE(device.find("(5 algorithms measured, 0 cached)"), std::string::npos) << device;
  ::unsetenv("NETC_CACHE_DIR");
  std::filesystem::remove_all(cache);
}

/// Max pooling on cuDNN (LeNet-5's pools have no dummy cells) over inputs
/// with ties: each window's gradient goes to its first maximal cell, bit for
/// bit as the reference's -- the rule netc requires before it lets cuDNN
/// compute a max-pool gradient.
TEST(GpuCudnn, MaxPoolTiesGoToTheFirstMaximalCell) {
  if (backendUnderTest() != "cuda")
    GTEST_SKIP() << "cuDNN is the cuda backend's";
  Compiled c = compileAndPlan(readFile(sourcePath("examples/lenet5.net")));
  const plan::Plan &plan = c.plan;
  const int64_t batch = 16;
  GpuMachine gpu(plan, batch);
  const std::string device = gpu.backend().describe().device;
  EXPECT_NE(device.find("and 4 of 4 pooling ops"), std::string::npos) << device;
  Machine reference(plan, batch, {1, true, {}});
  int checked = 0;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    if (op.kind != plan::OpKind::MaxPool && op.kind != plan::OpKind::MaxPoolGrad)
      continue;
    SCOPED_TRACE(describeOp(plan, i));
    State state = randomState(plan, batch, 9);
    std::mt19937 rng(static_cast<uint32_t>(i));
    for (float &v : state[static_cast<size_t>(op.in[op.kind == plan::OpKind::MaxPoolGrad ? 1 : 0])])
      v = float(std::uniform_int_distribution<int>(0, 2)(rng)); // most windows hold several maxima
    reference.restore(state);
    reference.run(i, i + 1);
    gpu.restore(state);
    gpu.run(i, i + 1);
    EXPECT_TRUE(bitIdentical(plan::opName(op.kind), gpu.read(op.out[0]), reference.read(op.out[0])));
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

/// The step as a captured CUDA graph, replayed, equals the same step issued
/// op by op, bit for bit (the same kernels, launch shapes and library
/// algorithms): six training steps of the seed network and LeNet-5 (the
/// first issued op by op, the second captured, the rest replayed), then the
/// forward pass alone at a partial batch (its own graph), as evaluation runs.
TEST(GpuGraphs, ReplayEqualsOpByOpBitForBit) {
  if (backendUnderTest() != "cuda")
    GTEST_SKIP() << "graphs are the cuda backend's";
  for (std::string example : {"mnist", "lenet5"}) {
    SCOPED_TRACE(example);
    Compiled c = compileAndPlan(readFile(sourcePath("examples/" + example + ".net")));
    const plan::Plan &plan = c.plan;
    const int64_t batch = 32;
    const State initial = randomState(plan, batch, 31);
    GpuMachine graphs(plan, batch, false, "", true), oneByOne(plan, batch, false, "", false);
    graphs.restore(initial);
    oneByOne.restore(initial);
    for (int64_t step = 1; step <= 6; ++step) {
      graphs.run(0, plan.ops.size(), 0.05f, step);
      oneByOne.run(0, plan.ops.size(), 0.05f, step);
      EXPECT_TRUE(bitIdentical(fmt::format("metrics, step {}", step), graphs.read(plan.metrics),
                               oneByOne.read(plan.metrics)));
    }
    const runtime::BackendInfo info = graphs.backend().describe();
    EXPECT_EQ(info.graphsCaptured, 1);
    EXPECT_TRUE(info.lastRunReplayed);
    EXPECT_EQ(oneByOne.backend().describe().graphsCaptured, 0);
    for (const plan::Parameter &p : plan.parameters)
      EXPECT_TRUE(bitIdentical(p.name, graphs.read(p.buffer), oneByOne.read(p.buffer)));
    for (int pass = 0; pass < 3; ++pass) {
      graphs.run(0, plan.forwardEnd, 0.05f, 7, 13);
      oneByOne.run(0, plan.forwardEnd, 0.05f, 7, 13);
    }
    EXPECT_TRUE(graphs.backend().describe().lastRunReplayed);
    std::vector<float> a = graphs.read(plan.output), b = oneByOne.read(plan.output);
    a.resize(static_cast<size_t>(13 * plan.outputNodes));
    b.resize(a.size());
    EXPECT_TRUE(bitIdentical("outputs at batch 13", a, b));
  }
}

/// --data-on-device: the seed network and LeNet-5 trained for two epochs
/// (with a validation split evaluated between them, through the copied-in
/// path) on the digit slice from batches gathered on the GPU, with CUDA
/// graphs on and off, end with the very checkpoint bytes and epoch figures
/// of the same run from batches copied in from the host.
TEST(GpuDataOnDevice, GatheredBatchesTrainTheSameBitsAsCopiedOnes) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("netc-gpu-held-{}", ::getpid());
  std::filesystem::remove_all(dir);
  if (backendUnderTest() != "cuda") {
    // The dry run: holding the training set is the cuda backend's, so only
    // the comparison itself is checked, on two CPU runs that must agree.
    expectVariantsTrainAlike("mnist", dir,
                             {{"on the CPU", [](TrainSettings &s) { s.device = "cpu"; }},
                              {"on the CPU again", [](TrainSettings &s) { s.device = "cpu"; }}});
    std::filesystem::remove_all(dir);
    return;
  }
  auto held = [](bool graphs) {
    return [graphs](TrainSettings &s) {
      s.dataOnDevice = true;
      s.cudaGraphs = graphs;
    };
  };
  for (std::string example : {"mnist", "lenet5"})
    expectVariantsTrainAlike(example, dir,
                             {{"batches copied in", [](TrainSettings &) {}},
                              {"--data-on-device", held(true)},
                              {"--data-on-device --cuda-graphs off", held(false)}});
  std::filesystem::remove_all(dir);
}

/// A checkpoint written from the GPU loads on the CPU with every parameter
/// bit-identical, and the reverse.
TEST(GpuCheckpoints, RoundTripBetweenCpuAndGpu) {
  Compiled c = compileAndPlan(readFile(sourcePath("examples/mnist.net")));
  const plan::Plan &plan = c.plan;
  const int64_t batch = 8;
  const State initial = randomState(plan, batch, 4);
  GpuMachine gpu(plan, batch);
  Machine cpu(plan, batch, {1, false, {}});
  gpu.restore(initial);
  gpu.run(0, plan.ops.size());
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("netc-gpu-ckpt-{}", ::getpid());
  std::filesystem::create_directories(dir);
  train::CheckpointInfo info;
  info.optimizer = "sgd";
  ASSERT_TRUE(train::saveCheckpoint((dir / "gpu.safetensors").string(), plan, gpu.backend(), info).ok());
  auto loaded = train::loadCheckpoint((dir / "gpu.safetensors").string(), plan, cpu.backend(), true, "sgd");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  for (const plan::Parameter &p : plan.parameters)
    EXPECT_TRUE(bitIdentical(p.name, cpu.read(p.buffer), gpu.read(p.buffer)));
  cpu.run(0, plan.ops.size());
  ASSERT_TRUE(train::saveCheckpoint((dir / "cpu.safetensors").string(), plan, cpu.backend(), info).ok());
  GpuMachine again(plan, batch);
  auto back = train::loadCheckpoint((dir / "cpu.safetensors").string(), plan, again.backend(), true, "sgd");
  ASSERT_TRUE(back.ok()) << back.message();
  for (const plan::Parameter &p : plan.parameters)
    EXPECT_TRUE(bitIdentical(p.name, again.read(p.buffer), cpu.read(p.buffer)));
  std::filesystem::remove_all(dir);
}

/// Two pipeline stages of LeNet-5 on the backend under test (both on the
/// one GPU, in this process, their transfers through an in-memory host
/// link), under 1F1B and GPipe, three micro-batches of 5 for two steps of
/// SGD with momentum: every parameter and its state, and the loss, as one
/// CPU process accumulating the micro-batches computes them. What
/// `netc train --partition 2 --device cuda` runs on each rank.
TEST(GpuPipeline, TwoStagesOnOneGpuMatchOneCpuProcessAccumulating) {
  auto compiled = compileText(readFile(sourcePath("examples/lenet5.net")));
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  const ir::Network &net = compiled->network;
  auto stageOf = cost::stagesFromCuts(net, {"Full3"});
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  const int stages = 2, microBatches = 3;
  const int64_t micro = 5, steps = 2;
  plan::PlanOptions options;
  options.update.optimizer = plan::OptimizerKind::Sgd;
  options.update.hyper.momentum = 0.9f;
  options.accumulateGradients = true;
  for (auto kind : {train::PipelineScheduleKind::OneForwardOneBackward, train::PipelineScheduleKind::GPipe}) {
    SCOPED_TRACE(train::pipelineScheduleName(kind));
    auto whole = plan::buildPlan(net, options);
    ASSERT_TRUE(whole.ok()) << whole.message();
    auto one = runtime::makeCpuBackend({1, 0, {}});
    ASSERT_TRUE(one->load(*whole, micro));
    std::vector<plan::Plan> plans;
    std::vector<std::unique_ptr<runtime::Backend>> backends;
    Wires wires;
    std::vector<std::unique_ptr<LoopbackCommunicator>> links;
    for (int s = 0; s < stages; ++s) {
      plan::PlanOptions staged = options;
      staged.stageOf = *stageOf;
      staged.stage = s;
      auto built = plan::buildPlan(net, staged);
      ASSERT_TRUE(built.ok()) << built.message();
      built->activationSlots = built->inputSlots = train::activationSlots(kind, stages, s, microBatches);
      plans.push_back(std::move(*built));
    }
    for (int s = 0; s < stages; ++s) {
      runtime::BackendOptions backendOptions;
      backendOptions.checkEachOp = false; // graphs, one per range, batch and slot
      auto created = runtime::createBackend(backendUnderTest(), backendOptions);
      ASSERT_TRUE(created.ok()) << created.message();
      backends.push_back(std::move(*created));
      Status loaded = backends.back()->load(plans[size_t(s)], micro);
      ASSERT_TRUE(loaded) << "stage " << s << ": " << loaded.message();
      links.push_back(std::make_unique<LoopbackCommunicator>(wires, s, stages));
      backends.back()->attachStages(links.back().get());
    }
    const train::InitOptions init{train::InitKind::Xavier, 0.1f, 7};
    train::initializeParameters(*whole, *one, init);
    for (int s = 0; s < stages; ++s)
      train::initializeParameters(plans[size_t(s)], *backends[size_t(s)], init);

    std::mt19937 rng(5);
    for (int64_t step = 1; step <= steps; ++step) {
      const MicroBatches batches = randomMicroBatches(rng, *whole, microBatches, micro, 0.0f, 1.0f);
      const auto &x = batches.features, &labels = batches.labels;
      const auto scalars =
          optim::stepScalars(options.update, 0.05f, step, double(micro * microBatches), micro);
      Status accumulated = runAccumulating(*whole, *one, batches, micro, scalars); // one CPU process
      ASSERT_TRUE(accumulated) << accumulated.message();
      auto act = [&](int s, const train::PipelineAction &a) -> Status {
        const plan::Plan &p = plans[size_t(s)];
        runtime::Backend &b = *backends[size_t(s)];
        train::writeStepScalars(p, b, scalars);
        if (!a.backward && p.features >= 0)
          b.writeInput(a.slot, p.features, x[size_t(a.microBatch)]);
        if (!a.backward && p.labels >= 0)
          b.writeInput(a.slot, p.labels, labels[size_t(a.microBatch)]);
        b.fence();
        const size_t begin = a.backward ? p.forwardEnd : a.microBatch == 0 ? 0 : p.stepBegin;
        return b.run(begin, a.backward ? p.backwardEnd : p.forwardEnd, micro, a.slot, a.slot);
      };
      Status ran = runSchedules(kind, stages, microBatches, wires, act);
      ASSERT_TRUE(ran) << ran.message();
      for (int s = 0; s < stages; ++s) {
        const plan::Plan &p = plans[size_t(s)];
        Status finished = backends[size_t(s)]->finishTransfers();
        ASSERT_TRUE(finished) << finished.message();
        Status update = backends[size_t(s)]->run(p.backwardEnd, p.updateEnd, micro, 0);
        ASSERT_TRUE(update) << "stage " << s << ": " << update.message();
      }
    }
    for (const auto &[pair, queue] : wires.queues)
      EXPECT_TRUE(queue.empty()) << queue.size() << " message(s) from stage " << pair.first
                                 << " never received";
    std::map<std::string, std::pair<int, int>> where; // parameter name: stage and index
    for (int s = 0; s < stages; ++s)
      for (size_t k = 0; k < plans[size_t(s)].parameters.size(); ++k)
        where[plans[size_t(s)].parameters[k].name] = {s, static_cast<int>(k)};
    ASSERT_EQ(where.size(), whole->parameters.size());
    auto read = [](runtime::Backend &b, int buffer, int64_t count) {
      std::vector<float> values(static_cast<size_t>(count));
      b.read(buffer, values);
      return values;
    };
    for (const plan::Parameter &p : whole->parameters) {
      const auto [s, k] = where.at(p.name);
      const plan::Parameter &q = plans[size_t(s)].parameters[size_t(k)];
      runtime::Backend &b = *backends[size_t(s)];
      EXPECT_TRUE(valuesClose(p.name, read(b, q.buffer, q.count), read(*one, p.buffer, p.count)));
      ASSERT_EQ(q.state.size(), p.state.size());
      for (size_t j = 0; j < p.state.size(); ++j)
        EXPECT_TRUE(
            valuesClose(p.name + " state", read(b, q.state[j], q.count), read(*one, p.state[j], p.count)));
    }
    const auto oneMetrics = train::takeMetrics(*whole, *one);
    const auto lastMetrics = train::takeMetrics(plans.back(), *backends.back());
    const auto loss = static_cast<size_t>(plan::Metric::LossSum);
    EXPECT_GT(oneMetrics[loss], 0.0);
    EXPECT_NEAR(lastMetrics[loss], oneMetrics[loss], 1e-3 * oneMetrics[loss]);
  }
}

/// A layer split over two ranks (--split Wide:2 on examples/wide-mlp.net)
/// as two parts on the one GPU, in this process: each part's dense ops on
/// its blocks (cuBLAS), its values exchanged through an in-memory host link
/// and put together (concat-nodes), the gradient's slice and the input
/// gradient summed part after part; three micro-batches of 5 for two steps
/// of Adam from Xavier weights: every parameter's rows and their state, and
/// the loss, as one CPU process computes them. What `netc train --split
/// Wide:2 --device cuda` runs on each rank.
TEST(GpuSplit, TwoPartsOnOneGpuMatchOneCpuProcess) {
  auto compiled = compileText(readFile(sourcePath("examples/wide-mlp.net")));
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  const ir::Network &net = compiled->network;
  auto splitParts = plan::splitPartsOf(net, {"Wide:2"});
  ASSERT_TRUE(splitParts.ok()) << splitParts.message();
  const int parts = 2, microBatches = 3;
  const int64_t micro = 5, steps = 2;
  plan::PlanOptions options;
  options.update.optimizer = plan::OptimizerKind::Adam;
  options.accumulateGradients = true;
  auto whole = plan::buildPlan(net, options);
  ASSERT_TRUE(whole.ok()) << whole.message();
  auto one = runtime::makeCpuBackend({1, 0, {}});
  ASSERT_TRUE(one->load(*whole, micro));
  std::vector<plan::Plan> plans;
  std::vector<std::unique_ptr<runtime::Backend>> backends;
  Wires wires;
  std::vector<std::unique_ptr<LoopbackCommunicator>> links;
  for (int p = 0; p < parts; ++p) {
    plan::PlanOptions split = options;
    split.splitParts = *splitParts;
    split.part = p;
    auto built = plan::buildPlan(net, split);
    ASSERT_TRUE(built.ok()) << built.message();
    plans.push_back(std::move(*built));
  }
  for (int p = 0; p < parts; ++p) {
    runtime::BackendOptions backendOptions;
    backendOptions.captureGraphs = false; // the driver runs one op at a time
    auto created = runtime::createBackend(backendUnderTest(), backendOptions);
    ASSERT_TRUE(created.ok()) << created.message();
    backends.push_back(std::move(*created));
    Status loaded = backends.back()->load(plans[size_t(p)], micro);
    ASSERT_TRUE(loaded) << "part " << p << ": " << loaded.message();
    links.push_back(std::make_unique<LoopbackCommunicator>(wires, p, parts));
    backends.back()->attachStages(links.back().get());
  }
  const train::InitOptions init{train::InitKind::Xavier, 0.1f, 7};
  train::initializeParameters(*whole, *one, init);
  for (int p = 0; p < parts; ++p)
    train::initializeParameters(plans[size_t(p)], *backends[size_t(p)], init);
  std::mt19937 rng(5);
  for (int64_t step = 1; step <= steps; ++step) {
    const MicroBatches batches = randomMicroBatches(rng, *whole, microBatches, micro, 0.0f, 1.0f);
    const auto &x = batches.features, &labels = batches.labels;
    const auto scalars =
        optim::stepScalars(options.update, 0.001f, step, double(micro * microBatches), micro);
    Status accumulated = runAccumulating(*whole, *one, batches, micro, scalars); // one CPU process
    ASSERT_TRUE(accumulated) << accumulated.message();
    std::vector<std::vector<RankOp>> work(parts);
    for (int p = 0; p < parts; ++p) {
      const plan::Plan &plan = plans[size_t(p)];
      runtime::Backend &b = *backends[size_t(p)];
      for (int m = 0; m < microBatches; ++m) {
        auto inputs = [&plan, &b, &x, &labels, &scalars, m] {
          train::writeStepScalars(plan, b, scalars);
          b.writeInput(0, plan.features, x[size_t(m)]);
          b.writeInput(0, plan.labels, labels[size_t(m)]);
          b.fence();
        };
        const size_t begin = m == 0 ? 0 : plan.stepBegin;
        for (size_t i = begin; i < plan.backwardEnd; ++i)
          work[size_t(p)].push_back({i, micro, i == begin ? std::function<void()>(inputs) : nullptr});
      }
      for (size_t i = plan.backwardEnd; i < plan.updateEnd; ++i)
        work[size_t(p)].push_back({i, micro, nullptr});
    }
    std::vector<const plan::Plan *> planList;
    std::vector<runtime::Backend *> backendList;
    for (int p = 0; p < parts; ++p) {
      planList.push_back(&plans[size_t(p)]);
      backendList.push_back(backends[size_t(p)].get());
    }
    Status ran = runRanks(planList, backendList, work, wires);
    ASSERT_TRUE(ran) << ran.message();
  }
  for (const auto &[pair, queue] : wires.queues)
    EXPECT_TRUE(queue.empty()) << queue.size() << " message(s) from part " << pair.first << " never received";
  auto read = [](runtime::Backend &b, int buffer, int64_t count) {
    std::vector<float> values(static_cast<size_t>(count));
    b.read(buffer, values);
    return values;
  };
  for (const plan::Parameter &p : whole->parameters) {
    std::vector<std::vector<float>> parted(1 + p.state.size());
    for (int part = 0; part < parts; ++part) {
      const plan::Plan &plan = plans[size_t(part)];
      const auto q = std::find_if(plan.parameters.begin(), plan.parameters.end(),
                                  [&](const plan::Parameter &x) { return x.name == p.name; });
      ASSERT_NE(q, plan.parameters.end()) << p.name;
      if (!q->isPart() && part > 0)
        continue; // a copy of part 0's
      std::vector<int> buffers = {q->buffer};
      buffers.insert(buffers.end(), q->state.begin(), q->state.end());
      for (size_t k = 0; k < buffers.size(); ++k) {
        const auto values = read(*backends[size_t(part)], buffers[k], q->count);
        parted[k].insert(parted[k].end(), values.begin(), values.end()); // parts in row order
      }
    }
    std::vector<int> buffers = {p.buffer};
    buffers.insert(buffers.end(), p.state.begin(), p.state.end());
    for (size_t k = 0; k < buffers.size(); ++k)
      EXPECT_TRUE(
          valuesClose(k == 0 ? p.name : p.name + " state", parted[k], read(*one, buffers[k], p.count)));
  }
  const auto oneMetrics = train::takeMetrics(*whole, *one);
  const auto loss = static_cast<size_t>(plan::Metric::LossSum);
  EXPECT_GT(oneMetrics[loss], 0.0);
  for (int p = 0; p < parts; ++p)
    EXPECT_NEAR(train::takeMetrics(plans[size_t(p)], *backends[size_t(p)])[loss], oneMetrics[loss],
                1e-3 * oneMetrics[loss]);
}

} // namespace
} // namespace netc::numeric

int main(int argc, char **argv) {
  // --source-dir DIR: where examples/ is, for a binary run outside its build (scripts/gpu_check.sh).
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).starts_with("--source-dir="))
      netc::testfiles::sourceRootOverride() = std::string(argv[i] + std::strlen("--source-dir="));
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).starts_with("--backend-under-test="))
      netc::numeric::backendUnderTest() = std::string(argv[i] + std::strlen("--backend-under-test="));
  netc::registerBuiltinBackends();
  if (std::optional<std::string> problem = netc::cudaProblem(0);
      problem && netc::numeric::backendUnderTest() == "cuda") {
    std::printf("SKIP: these tests need a usable GPU: %s\n", problem->c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
