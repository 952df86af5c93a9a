// DeviceChoiceTest.cpp -- where a run computes (api/Backends.h): --device
// auto picks the GPU when the probe finds it usable and the CPU otherwise,
// with a note saying why; an explicit device is checked against --backend;
// malformed devices and unusable GPUs are refused with messages that say so.
// The probe is a stand-in here, so the rules are tested on any machine; and
// --precision is checked with them (backendSetup). A pipeline's ranks
// share the machine's GPUs only when they outnumber them (sharedGpus, with
// a stand-in NCCL transport that reports the GPUs).
#include "api/Backends.h"
#include "api/DataParallel.h"
#include "runtime/comm/OpenCommunicator.h"

#include <gtest/gtest.h>

namespace netc {
namespace {

std::optional<std::string> gpuOk(int) {
  return std::nullopt;
}
std::optional<std::string> noDriver(int) {
  return std::string("no NVIDIA driver on this machine");
}
/// GPUs 0 and 1 exist.
std::optional<std::string> twoGpus(int device) {
  if (device < 2)
    return std::nullopt;
  return "there is no GPU cuda:" + std::to_string(device);
}

TEST(DeviceChoice, AutoTakesAUsableGpuElseTheCpuAndSaysWhy) {
  auto gpu = chooseDevice("auto", "", 0, gpuOk);
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->backend, "cuda");
  EXPECT_EQ(gpu->device, 0);
  EXPECT_EQ(gpu->note, "--device auto: cuda:0");
  auto cpu = chooseDevice("", "", 0, noDriver);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->backend, "cpu");
  EXPECT_EQ(cpu->note, "--device auto: no usable GPU, no NVIDIA driver on this machine");
  // Local rank r of a node looks at GPU r.
  auto rank = chooseDevice("auto", "", 1, twoGpus);
  ASSERT_TRUE(rank.ok());
  EXPECT_EQ(rank->device, 1);
}

TEST(DeviceChoice, ACpuBackendImpliesTheCpuAndCudaImpliesAGpu) {
  auto reference = chooseDevice("auto", "cpu-reference", 0, gpuOk);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(reference->backend, "cpu-reference");
  EXPECT_EQ(reference->note, "");
  auto cuda = chooseDevice("auto", "cuda", 0, noDriver);
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.message(), "--device cuda: no NVIDIA driver on this machine");
}

TEST(DeviceChoice, ExplicitDevicesAndTheirIndex) {
  auto cpu = chooseDevice("cpu", "", 0, gpuOk);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->backend, "cpu");
  EXPECT_EQ(cpu->note, "");
  auto second = chooseDevice("cuda:1", "", 0, twoGpus);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->backend, "cuda");
  EXPECT_EQ(second->device, 1);
  // cuda:N on local rank r is GPU N + r.
  auto beyond = chooseDevice("cuda:1", "", 1, twoGpus);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.message(), "--device cuda:1: there is no GPU cuda:2");
}

TEST(DeviceChoice, MismatchesAndMalformedDevicesAreRefused) {
  for (std::string_view bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "cudax", "CPU", "cuda:99999999999"}) {
    auto c = chooseDevice(bad, "", 0, gpuOk);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.message(),
              "--device: '" + std::string(bad) + "' is not cpu, cuda, cuda:N (N a GPU index from 0) or auto");
  }
  auto mix = chooseDevice("cpu", "cuda", 0, gpuOk);
  ASSERT_FALSE(mix.ok());
  EXPECT_EQ(mix.message(), "--backend cuda does not run on --device cpu (its backends: cpu, cpu-reference)");
  auto mix2 = chooseDevice("cuda", "cpu", 0, gpuOk);
  ASSERT_FALSE(mix2.ok());
  EXPECT_EQ(mix2.message(), "--backend cpu does not run on --device cuda (its backend: cuda)");
}

TEST(DeviceChoice, SetupChecksThePrecisionAndFillsTheOptions) {
  auto setup = backendSetup({"cuda", "", "tf32", "avx2", "openblas", true, false, 3, 0}, gpuOk);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ(setup->backend, "cuda");
  EXPECT_TRUE(setup->options.allowTf32);
  EXPECT_TRUE(setup->options.checkEachOp);
  EXPECT_FALSE(setup->options.captureGraphs);
  EXPECT_TRUE(backendSetup({"cuda", "", "fp32", "", "", false, true, 0, 0}, gpuOk)->options.captureGraphs);
  EXPECT_EQ(setup->options.threads, 3);
  EXPECT_EQ(setup->options.variant, "avx2");
  EXPECT_EQ(setup->options.denseKernel, "openblas");
  auto fp16 = backendSetup({"cpu", "", "fp16", "", "", false, true, 0, 0}, gpuOk);
  ASSERT_FALSE(fp16.ok());
  EXPECT_EQ(fp16.message(), "--precision: 'fp16' is not fp32, tf32 or bf16");
  auto bf16 = backendSetup({"cpu", "", "bf16", "", "", false, true, 0, 0}, gpuOk);
  ASSERT_TRUE(bf16.ok());
  EXPECT_TRUE(bf16->options.bf16Products);
  EXPECT_FALSE(bf16->options.allowTf32);
  EXPECT_FALSE(backendSetup({"cpu", "", "tf32", "", "", false, true, 0, 0}, gpuOk)->options.bf16Products);
  auto bf16OnGpu = backendSetup({"cuda", "", "bf16", "", "", false, true, 0, 0}, gpuOk);
  ASSERT_FALSE(bf16OnGpu.ok());
  EXPECT_EQ(bf16OnGpu.message(), "--precision bf16 runs on the CPU backends (AVX512-BF16); on a GPU, "
                                 "--precision takes fp32 or tf32");
}

TEST(DeviceChoice, APipelineSharesGpusOnlyWhereItsRanksOutnumberThem) {
  using training::gpusToShare;
  EXPECT_EQ(gpusToShare(2, 0, 1), 1); // 2 stages on one GPU
  EXPECT_EQ(gpusToShare(4, 0, 2), 2);
  EXPECT_EQ(gpusToShare(2, 0, 2), 0); // a GPU each: NCCL
  EXPECT_EQ(gpusToShare(3, 1, 2), 1); // from cuda:1 on, one GPU is left
  EXPECT_EQ(gpusToShare(2, 2, 2), 0); // none left: the backend says so
  EXPECT_EQ(gpusToShare(1, 0, 0), 0);

  static int gpus = 1;
  // The real transport (a CUDA build's) comes back at the end.
  std::optional<comm::DeviceTransport> real;
  if (const comm::DeviceTransport *t = comm::findDeviceTransport("nccl"))
    real = *t;
  comm::DeviceTransport fake;
  fake.name = "nccl";
  fake.newJobId = []() -> Expected<std::string> { return fail("no NCCL in this test"); };
  fake.deviceCount = []() -> Expected<int> { return gpus; };
  fake.join = [](const comm::LaunchInfo &, const std::string &, int, const comm::CommOptions &,
                 std::shared_ptr<comm::Communicator>) -> Expected<std::shared_ptr<comm::Communicator>> {
    return fail("no NCCL in this test");
  };
  comm::registerDeviceTransport(std::move(fake));
  Launch mpirun;
  mpirun.size = mpirun.localSize = 2;
  mpirun.launcher = "mpirun";
  EXPECT_EQ(training::sharedGpus(mpirun, "cuda", "", true), 1);
  EXPECT_EQ(training::sharedGpus(mpirun, "cuda:0", "", true), 1);
  EXPECT_EQ(training::sharedGpus(mpirun, "", "cuda", true), 1);
  EXPECT_EQ(training::sharedGpus(mpirun, "cuda", "", false), 0) << "data parallelism takes a GPU each";
  EXPECT_EQ(training::sharedGpus(mpirun, "cpu", "", true), 0);
  Launch netcJob = mpirun;
  netcJob.jobId = "00";
  EXPECT_EQ(training::sharedGpus(netcJob, "cuda", "", true), 0) << "netc started a GPU for each";
  Launch one;
  EXPECT_EQ(training::sharedGpus(one, "cuda", "", true), 0);
  gpus = 2;
  EXPECT_EQ(training::sharedGpus(mpirun, "cuda", "", true), 0);
  // Two machines of 2 ranks each on one GPU: counted per machine.
  Launch twoMachines = mpirun;
  twoMachines.size = 4;
  gpus = 1;
  EXPECT_EQ(training::sharedGpus(twoMachines, "cuda", "", true), 1);
  if (real)
    comm::registerDeviceTransport(std::move(*real));
}

} // namespace
} // namespace netc
