// NcclTest.cpp -- the NCCL communicator on a GPU (issue "The whole GPU step
// as one CUDA Graph, and multi-GPU training over NCCL"), in netc_gpu_tests:
// a one-rank NCCL job runs the whole bucketed path (each gradient bucket
// all-reduced on the communication stream, joined before the update,
// captured into the step's graph) and must end with the very checkpoint
// bytes and epoch figures of a plain run, with CUDA graphs on and off, and
// with buckets small enough that there are several; and the host-memory
// operations every rank uses (agreement, sums) give the right values
// through NCCL's staging. A machine lent for these checks has one GPU, and
// NCCL refuses two ranks on one device: two-GPU jobs are measured where
// there are two (scripts/gpu_check.sh runs `netc train --gpus 1`).
#include "../numeric/PlanHarness.h"
#include "GpuTraining.h"

#include "api/Backends.h"
#include "netc/Training.h"
#include "runtime/comm/OpenCommunicator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace netc::numeric {
namespace {

/// Skips a test where there is no GPU (the binary's dry run on the CPU).
#define NETC_NEEDS_GPU()                                                                                     \
  if (std::optional<std::string> problem = cudaProblem(0))                                                   \
  GTEST_SKIP() << "NCCL needs a GPU: " << *problem

std::string newJobId() {
  const comm::DeviceTransport *nccl = comm::findDeviceTransport("nccl");
  EXPECT_NE(nccl, nullptr) << "this netc has no NCCL transport";
  if (!nccl)
    return {};
  auto id = nccl->newJobId();
  EXPECT_TRUE(id) << (id ? "" : id.message());
  return id ? *id : std::string();
}

TEST(GpuNccl, AOneRankJobTrainsTheBitsOfAPlainRun) {
  NETC_NEEDS_GPU();
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("netc-gpu-nccl-{}", ::getpid());
  std::filesystem::remove_all(dir);
  auto nccl = [](bool graphs, double bucketMb) {
    return [graphs, bucketMb](TrainSettings &s) {
      s.launch = {0, 1, 0, 1, "netc", newJobId()};
      s.cudaGraphs = graphs;
      s.bucketMb = bucketMb;
    };
  };
  for (std::string example : {"mnist", "lenet5"})
    expectVariantsTrainAlike(example, dir,
                             {{"a plain run", [](TrainSettings &) {}},
                              {"one rank over NCCL", nccl(true, 25)},
                              {"one rank over NCCL, --cuda-graphs off", nccl(false, 25)},
                              {"one rank over NCCL, --bucket-mb 0.05", nccl(true, 0.05)}});
  std::filesystem::remove_all(dir);
}

TEST(GpuNccl, HostOperationsGoThroughStaging) {
  NETC_NEEDS_GPU();
  comm::CommOptions options;
  options.timeoutSeconds = 30;
  comm::LaunchInfo launch{0, 1, 0, 1, "netc", newJobId()};
  auto joined = comm::openDeviceCommunicator(launch, options, "nccl", 0);
  ASSERT_TRUE(joined) << joined.message();
  comm::Communicator &c = **joined;
  EXPECT_EQ(c.kind(), "nccl");
  EXPECT_EQ(c.size(), 1);
  std::vector<double> sums = {1.5, -2.25, 1e300};
  ASSERT_TRUE(c.allReduce(std::span<double>(sums), comm::ReduceOp::Sum, "a test sum").ok());
  EXPECT_EQ(sums, (std::vector<double>{1.5, -2.25, 1e300}));
  std::vector<int64_t> most = {7, -3};
  ASSERT_TRUE(c.allReduce(std::span<int64_t>(most), comm::ReduceOp::Max, "a test max").ok());
  EXPECT_EQ(most, (std::vector<int64_t>{7, -3}));
  std::string text = "broadcast me";
  ASSERT_TRUE(c.broadcast(text.data(), int64_t(text.size()), 0, "a test broadcast").ok());
  EXPECT_EQ(text, "broadcast me");
  auto messages = comm::allGatherMessages(c, "rank zero's words", "a test gather");
  ASSERT_TRUE(messages) << messages.message();
  EXPECT_EQ(*messages, std::vector<std::string>{"rank zero's words"});
  EXPECT_TRUE(c.barrier("a test barrier").ok());
}

TEST(GpuNccl, AMalformedJobIdIsRefusedNamingTheVariable) {
  NETC_NEEDS_GPU();
  comm::CommOptions options;
  comm::LaunchInfo launch{0, 1, 0, 1, "netc", "0123"};
  auto joined = comm::openDeviceCommunicator(launch, options, "nccl", 0);
  ASSERT_FALSE(joined);
  EXPECT_NE(joined.message().find("NETC_NCCL_ID has 4 characters"), std::string::npos) << joined.message();
}

} // namespace
} // namespace netc::numeric
