// PipelineSettingsTest.cpp -- how a training run settles its pipeline
// (api/Pipeline.h, settlePipeline): the cuts are priced on --cost-model's
// table, else the device's default (the GPU's public figures on --device
// cuda, as the run's estimate), and the run header's equivalent netc show
// command names that table whenever it is not show's default.
#include "TestSupport.h"

#include "api/NetworkImpl.h"
#include "api/Pipeline.h"
#include "netc/Estimate.h"
#include "netc/netc.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace netc {
namespace {

std::string cutBy(const ir::Network &net, std::string device, std::string backend, std::string costModel) {
  TrainSettings s;
  s.partition = 2;
  s.batch = 20;
  s.launch.size = 2;
  s.device = std::move(device);
  s.backend = std::move(backend);
  s.costModel = std::move(costModel);
  auto layout = training::settlePipeline(s, training::RunSettings{}, net, training::SampleCounts{1000, 0, 0});
  EXPECT_TRUE(layout) << layout.refusal().message;
  if (!layout || !*layout)
    return {};
  EXPECT_EQ((*layout)->stages, 2);
  return (*layout)->cutBy;
}

TEST(PipelineSettings, TheCutsArePricedOnTheDevicesTableAndTheHeaderSaysWhich) {
  // netc's cache off: the CPU's default is the built-in table on every
  // machine, not a table of this one cached by an earlier run.
  ::setenv("NETC_CACHE_DIR", "", 1);
  CompileResult compiled = compileFile(testfiles::sourcePath("examples/mnist.net"));
  ASSERT_TRUE(compiled.ok()) << compiled.formattedDiagnostics;
  const ir::Network &net = compiled.network->impl().network;
  const std::string cpu = cutBy(net, "cpu", "", "");
  EXPECT_NE(cpu.find("cost table 'cpu' (as netc show --partition 2 --batch 20 --micro-batches"),
            std::string::npos)
      << cpu;
  EXPECT_EQ(cpu.find("--cost-model"), std::string::npos) << cpu;
  for (auto [device, backend] : {std::pair{"cuda", ""}, std::pair{"cuda:1", ""}, std::pair{"", "cuda"}}) {
    const std::string gpu = cutBy(net, device, backend, "");
    EXPECT_NE(gpu.find(fmt::format("cost table '{}'", kDefaultGpuCostTable)), std::string::npos) << gpu;
    EXPECT_NE(gpu.find(fmt::format("--cost-model {})", kDefaultGpuCostTable)), std::string::npos) << gpu;
  }
  // --cost-model wins over the device; "none" (no run estimate) leaves the device's.
  EXPECT_NE(cutBy(net, "cuda", "", "cpu").find("cost table 'cpu'"), std::string::npos);
  EXPECT_NE(cutBy(net, "cuda", "", "none").find("cost table 'h100'"), std::string::npos);
  EXPECT_NE(cutBy(net, "cpu", "", "h100").find("--cost-model h100)"), std::string::npos);
}

} // namespace
} // namespace netc
