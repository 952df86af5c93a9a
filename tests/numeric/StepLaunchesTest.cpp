// StepLaunchesTest.cpp -- the CUDA backend's step as data
// (runtime/cuda/StepLaunches.h), without a GPU: the seed network's training
// step at batch 128, launch by launch, is pinned (the graph it is captured
// as); the kernel and library-call counts of the seed network and LeNet-5
// are the ones netc bench measured on an H200 (39 and 47); without cuDNN
// the convolutions go back to the table kernels; a data-parallel step's
// all-reduces appear where the plan puts them; and every op of every
// parity network issues at least one launch.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "runtime/cuda/StepLaunches.h"

#include <gtest/gtest.h>

namespace netc::numeric {
namespace {

using runtime::cuda::StepLaunch;

std::vector<StepLaunch> launchesOf(const plan::Plan &plan, int64_t batch, bool cudnn = true) {
  auto launches = runtime::cuda::stepLaunches(plan, batch, 0, plan.ops.size(), cudnn);
  EXPECT_TRUE(launches.ok()) << (launches.ok() ? "" : launches.message());
  return launches.ok() ? *launches : std::vector<StepLaunch>{};
}

/// The seed network's training step at batch 128, as captured.
const char *const kSeedStep = R"(wait for the input slot's copy
#0 convolution (Conv1.pre): cudnn forward x=128,1,28,28/784,784,28,1 w=5,1,4,4 y=128,5,13,13/845,169,13,1 pad=0,0 stride=2,2 groups=1
#0 convolution (Conv1.pre): PermuteRowsBody x108160
#1 activate (Conv1): ActivateBody x108160
#2 convolution (Conv2.pre): PermuteRowsBody x1250
#2 convolution (Conv2.pre): cudnn forward x=128,5,13,13/845,169,13,1 w=50,1,5,5 y=128,50,5,5/1250,25,5,1 pad=0,0 stride=2,2 groups=5
#2 convolution (Conv2.pre): PermuteRowsBody x160000
#3 activate (Conv2): ActivateBody x160000
#4 dense (Hid3.pre): cublasSgemm TN 100x128x1250 x12800
#5 add-bias (Hid3.pre): BiasActivateBody x12800
#7 dense (Digit.pre): cublasSgemm TN 10x128x100 x1280
#8 add-bias (Digit.pre): AddBiasBody x1280
#9 activate (Digit): SoftmaxRowBody x128
#10 softmax-cross-entropy (dDigit.pre): LossRowBody x128
#10 softmax-cross-entropy (dDigit.pre): metrics block x128
#11 bias-grad (dDigit/biases): BiasGradBody x160
#11 bias-grad (dDigit/biases): ChunkSumBody x10
#12 dense-grad-weights (dDigit/Hid3/weights): cublasSgemm NT 100x10x128 x1000
#13 dense-grad-input (dHid3): cublasSgemm NN 100x128x10 x12800
#14 activate-grad (dHid3.pre): ActivateGradBody x12800
#15 bias-grad (dHid3/biases): BiasGradBody x1600
#15 bias-grad (dHid3/biases): ChunkSumBody x100
#16 dense-grad-weights (dHid3/Conv2/weights): cublasSgemm NT 1250x100x128 x125000
#17 dense-grad-input (dConv2): cublasSgemm NN 1250x128x100 x160000
#18 activate-grad (dConv2.pre): ActivateGradBody x160000
#19 convolution-grad-weights (dConv2/Conv1/weights): PermuteRowsBody x160000
#19 convolution-grad-weights (dConv2/Conv1/weights): cudnn backward-filter x=128,5,13,13/845,169,13,1 w=50,1,5,5 y=128,50,5,5/1250,25,5,1 pad=0,0 stride=2,2 groups=5
#19 convolution-grad-weights (dConv2/Conv1/weights): PermuteRowsBody x1250
#20 convolution-grad-bias (dConv2/Conv1/kernel-biases): ConvolutionBiasPartialBody x6400
#20 convolution-grad-bias (dConv2/Conv1/kernel-biases): BiasGradBody x800
#20 convolution-grad-bias (dConv2/Conv1/kernel-biases): ChunkSumBody x50
#21 convolution-grad-input (dConv1): PermuteRowsBody x1250
#21 convolution-grad-input (dConv1): PermuteRowsBody x160000
#21 convolution-grad-input (dConv1): cudnn backward-data x=128,5,13,13/845,169,13,1 w=50,1,5,5 y=128,50,5,5/1250,25,5,1 pad=0,0 stride=2,2 groups=5
#22 activate-grad (dConv1.pre): ActivateGradBody x108160
#23 convolution-grad-weights (dConv1/Pic/weights): cudnn backward-filter x=128,1,28,28/784,784,28,1 w=5,1,4,4 y=128,5,13,13/845,169,13,1 pad=0,0 stride=2,2 groups=1
#24 convolution-grad-bias (dConv1/Pic/kernel-biases): ConvolutionBiasPartialBody x1920
#24 convolution-grad-bias (dConv1/Pic/kernel-biases): BiasGradBody x240
#24 convolution-grad-bias (dConv1/Pic/kernel-biases): ChunkSumBody x5
#25 update (parameters): UpdateBody x127808
record the end of the run for the input slot
)";

TEST(StepLaunches, TheSeedNetworksStepIsPinned) {
  Compiled c = compileAndPlan(readFile(sourcePath("examples/mnist.net")));
  EXPECT_EQ(runtime::cuda::formatLaunches(c.plan, launchesOf(c.plan, 128)), kSeedStep);
}

TEST(StepLaunches, TheCountsAreThoseMeasuredOnAGpu) {
  // netc bench --device cuda --batch 128: launches_per_step on the H200 (docs/gpu.md).
  for (auto [example, measured] : {std::pair{"examples/mnist.net", 39}, {"examples/lenet5.net", 47}}) {
    SCOPED_TRACE(example);
    Compiled c = compileAndPlan(readFile(sourcePath(example)));
    EXPECT_EQ(runtime::cuda::launchCount(launchesOf(c.plan, 128)), measured);
  }
}

TEST(StepLaunches, WithoutCudnnTheConvolutionsRunOnTheTableKernels) {
  Compiled c = compileAndPlan(readFile(sourcePath("examples/lenet5.net")));
  int cudnnCalls = 0, tableKernels = 0;
  for (const StepLaunch &l : launchesOf(c.plan, 16, false)) {
    cudnnCalls += l.kind == StepLaunch::Kind::Cudnn;
    tableKernels += l.what.starts_with("Convolution") || l.what.starts_with("MaxPool");
  }
  EXPECT_EQ(cudnnCalls, 0);
  EXPECT_GE(tableKernels, 9); // 2 forward, 5 gradients (one bias gradient in two passes), 4 pools
}

TEST(StepLaunches, EveryOpIssuesWorkAndTheRunIsFramedByItsEvents) {
  for (const NetCase &net : parityCases()) {
    SCOPED_TRACE(net.name);
    Compiled c = compileAndPlan(net.text, net.options, planOptionsOf(net));
    const std::vector<StepLaunch> launches = launchesOf(c.plan, 3);
    ASSERT_GE(launches.size(), 2u);
    EXPECT_EQ(launches.front().kind, StepLaunch::Kind::WaitForInput);
    EXPECT_EQ(launches.back().kind, StepLaunch::Kind::SlotRead);
    std::vector<int> seen(c.plan.ops.size(), 0);
    for (const StepLaunch &l : launches)
      if (l.op >= 0)
        ++seen[static_cast<size_t>(l.op)];
    for (size_t i = 0; i < c.plan.ops.size(); ++i) {
      const bool fusedActivation = i > 0 && c.plan.ops[i].kind == plan::OpKind::Activate && seen[i] == 0 &&
                                   seen[i - 1] > 0 && c.plan.ops[i - 1].kind == plan::OpKind::AddBias;
      EXPECT_TRUE(seen[i] > 0 || fusedActivation) << describeOp(c.plan, i);
    }
  }
}

TEST(StepLaunches, ADataParallelStepShowsItsAllReduces) {
  plan::PlanOptions options{true, {}, false};
  options.replicaSync = plan::ReplicaSync::AllReduceGradients;
  Compiled c = compileAndPlan(readFile(sourcePath("examples/mnist.net")), {}, options);
  int allReduces = 0;
  for (const StepLaunch &l : launchesOf(c.plan, 8))
    allReduces += l.kind == StepLaunch::Kind::AllReduce;
  EXPECT_GE(allReduces, 2); // a bucket's start and its wait
}

} // namespace
} // namespace netc::numeric
