// InitializationTest.cpp -- how --init xavier and --init he start the weights
// (runtime/train/ModelState.cpp, with the fan-in and fan-out of
// ir::bundleFan): every bias, a convolution's kernel biases included, starts
// at 0; weights are uniform within the documented limit (docs/training.md,
// "How the weights start") and reach close to it. The limits below are
// worked out by hand from LeNet-5's shapes (examples/lenet5.net) with the
// usual rules -- Glorot's fan-out of a convolution is the output maps times
// the kernel positions, PyTorch's out_channels × kh × kw -- not from the code.
#include "runtime/train/ModelState.h"
#include "tests/numeric/PlanHarness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace netc::numeric {
namespace {

/// Each parameter tensor of LeNet-5 after initialisation, by name.
std::map<std::string, std::vector<float>> initializedLeNet5(train::InitKind kind) {
  Compiled net = compileAndPlan(readFile(sourcePath("examples/lenet5.net")));
  Machine machine(net.plan, 1, MachineKind{});
  train::initializeParameters(net.plan, machine.backend(), {kind, 0.1f, 7});
  std::map<std::string, std::vector<float>> tensors;
  for (const plan::Parameter &p : net.plan.parameters)
    tensors[p.name] = machine.read(p.buffer);
  return tensors;
}

float largestMagnitude(const std::vector<float> &values) {
  float largest = 0.0f;
  for (float v : values)
    largest = std::max(largest, std::fabs(v));
  return largest;
}

/// Weights within ±limit, reaching at least 90% of it (every tensor checked
/// has hundreds of values drawn uniformly: the odds against are negligible).
void expectUniformWithin(const std::vector<float> &values, double limit, const std::string &name) {
  ASSERT_FALSE(values.empty()) << name;
  const float largest = largestMagnitude(values);
  EXPECT_LE(largest, limit) << name;
  EXPECT_GE(largest, 0.9 * limit) << name << ": the weights stay far inside ±" << limit;
}

TEST(Initialization, XavierUsesOutputMapsTimesKernelPositionsAsAConvolutionsFanOut) {
  auto tensors = initializedLeNet5(train::InitKind::Xavier);
  // Conv1: 5x5 window over one map; 6 maps × 25 positions.
  expectUniformWithin(tensors.at("Conv1/Image/weights"), std::sqrt(6.0 / (25 + 6 * 25)), "Conv1");
  // Conv2: a [6,5,5] window spanning Pool1's 6 maps; 16 maps × 25 positions
  // (the map dimension has one position).
  expectUniformWithin(tensors.at("Conv2/Pool1/weights"), std::sqrt(6.0 / (150 + 16 * 25)), "Conv2");
  expectUniformWithin(tensors.at("Full3/Pool2/weights"), std::sqrt(6.0 / (400 + 120)), "Full3");
  // Digit is a softmax layer: gain 1.
  expectUniformWithin(tensors.at("Digit/Full4/weights"), std::sqrt(6.0 / (84 + 10)), "Digit");
}

TEST(Initialization, HeUsesTheFanIn) {
  auto tensors = initializedLeNet5(train::InitKind::He);
  expectUniformWithin(tensors.at("Conv1/Image/weights"), std::sqrt(6.0 / 25), "Conv1");
  expectUniformWithin(tensors.at("Conv2/Pool1/weights"), std::sqrt(6.0 / 150), "Conv2");
  expectUniformWithin(tensors.at("Full4/Full3/weights"), std::sqrt(6.0 / 120), "Full4");
}

TEST(Initialization, XavierAndHeStartEveryBiasAtZero) {
  for (train::InitKind kind : {train::InitKind::Xavier, train::InitKind::He}) {
    size_t biases = 0;
    for (const auto &[name, values] : initializedLeNet5(kind)) {
      const bool isBias = name.find("biases") != std::string::npos; // kernel-biases and biases
      if (!isBias)
        continue;
      ++biases;
      EXPECT_EQ(largestMagnitude(values), 0.0f) << train::initName(kind) << ": " << name;
    }
    EXPECT_EQ(biases, 5u) << "Conv1 and Conv2's kernel biases, and Full3, Full4 and Digit's biases";
  }
}

TEST(Initialization, UniformDrawsBiasesToo) {
  // Azure's rule (--init uniform, the default): every value, biases
  // included, in ±diameter/2.
  auto tensors = initializedLeNet5(train::InitKind::Uniform);
  const std::vector<float> &kernelBiases = tensors.at("Conv1/Image/kernel-biases"); // 6 values
  EXPECT_LE(largestMagnitude(kernelBiases), 0.05);
  EXPECT_GT(largestMagnitude(kernelBiases), 0.0f);
  expectUniformWithin(tensors.at("Full3/biases"), 0.05, "Full3 biases");
}

} // namespace
} // namespace netc::numeric
