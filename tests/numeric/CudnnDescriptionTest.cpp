// CudnnDescriptionTest.cpp -- the cuDNN form of every convolution
// (runtime/cuda/CudnnConvolution.h) checked without a GPU: on every network
// of the parity corpus and the examples, each convolution cuDNN can express
// is described (the description's tables equal the plan's, or it is
// refused), and the host evaluators of cuDNN's forward, backward-data and
// backward-filter passes over that description give the reference kernels'
// outputs for the same state. The seed network's, LeNet-5's, a grouped and a
// maps-in-batch convolution must be expressible; locally connected kernels
// and asymmetric pads must not, with a reason that says why.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "runtime/cuda/CudnnConvolution.h"

#include <map>

namespace netc::numeric {
namespace {

using plan::OpKind;
using runtime::cuda::CudnnConvolution;

/// The ops of `plan` that read the convolution tables `gather`, by kind.
std::map<OpKind, size_t> opsOfConvolution(const plan::Plan &plan, int gather) {
  std::map<OpKind, size_t> ops;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    if (op.kind == OpKind::Convolution || op.kind == OpKind::ConvolutionGradInput ||
        op.kind == OpKind::ConvolutionGradWeights)
      if (op.in.size() > 2 && op.in[2] == gather)
        ops[op.kind] = i;
  }
  return ops;
}

struct Checked {
  int described = 0, refused = 0;
  std::vector<std::string> reasons;
};

/// Describes every convolution of `net` and checks each description's host
/// evaluators against the reference ops at batch 3.
Checked checkNetwork(const std::string &text, const CompileOptions &options = {}) {
  Checked out;
  Compiled compiled = compileAndPlan(text, options);
  const plan::Plan &plan = compiled.plan;
  const int64_t batch = 3;
  Machine reference(plan, batch, {1, true, {}});
  const State initial = randomState(plan, batch, 77);
  reference.restore(initial);
  reference.run(0, plan.ops.size()); // every buffer holds a value to start each op from
  const State after = reference.snapshot();
  for (const plan::Op &op : plan.ops) {
    if (op.kind != OpKind::Convolution)
      continue;
    const auto &a = op.get<plan::ConvAttrs>();
    const auto &gather = plan.buffers[static_cast<size_t>(op.in[2])].table;
    const auto &scatter = plan.buffers[static_cast<size_t>(op.in[3])].table;
    std::string reason;
    std::optional<CudnnConvolution> c = runtime::cuda::describeForCudnn(a, gather, scatter, &reason);
    if (!c) {
      ++out.refused;
      out.reasons.push_back(reason);
      continue;
    }
    ++out.described;
    for (auto [kind, index] : opsOfConvolution(plan, op.in[2])) {
      const plan::Op &o = plan.ops[index];
      SCOPED_TRACE(describeOp(plan, index));
      reference.restore(after);
      reference.run(index, index + 1);
      std::vector<float> mine = after[static_cast<size_t>(o.out[0])];
      auto in = [&](size_t i) { return after[static_cast<size_t>(o.in[i])].data(); };
      if (kind == OpKind::Convolution)
        runtime::cuda::convolveOnHost(*c, batch, in(0), in(1), in(4), mine.data(), o.accumulate);
      else if (kind == OpKind::ConvolutionGradInput)
        runtime::cuda::convolveDataGradOnHost(*c, batch, in(0), in(1), mine.data(), o.accumulate);
      else
        runtime::cuda::convolveFilterGradOnHost(*c, batch, in(0), in(1), mine.data(), o.accumulate);
      EXPECT_TRUE(valuesClose(plan::opName(kind), mine, reference.read(o.out[0])));
    }
  }
  return out;
}

TEST(CudnnDescription, EveryExpressibleConvolutionMatchesTheReference) {
  int described = 0, refused = 0;
  for (const NetCase &net : parityCases()) {
    SCOPED_TRACE(net.name);
    Checked c = checkNetwork(net.text, net.options);
    described += c.described;
    refused += c.refused;
  }
  for (const std::string &example : exampleNames()) {
    const std::string text = readFile(sourcePath("examples/" + example));
    if (text.find("convolve") == std::string::npos || text.find(" auto") != std::string::npos)
      continue; // no convolution, or sizes that need options (ExampleStepTest.cpp runs those)
    SCOPED_TRACE(example);
    Checked c = checkNetwork(text);
    described += c.described;
    refused += c.refused;
  }
  RecordProperty("described", described);
  RecordProperty("refused", refused);
  EXPECT_GT(described, 10);
  EXPECT_GT(refused, 0);
}

TEST(CudnnDescription, TheExamplesConvolutionsAreExpressible) {
  for (const char *example : {"examples/mnist.net", "examples/lenet5.net"}) {
    SCOPED_TRACE(example);
    Checked c = checkNetwork(readFile(sourcePath(example)));
    EXPECT_EQ(c.refused, 0) << (c.reasons.empty() ? "" : c.reasons.front());
    EXPECT_EQ(c.described, 2);
  }
  // An ordinary 3-D kernel spanning the maps, grouped (a bank per input map) and maps folded into the batch.
  Checked grouped = checkNetwork(kGroupedNet);
  EXPECT_EQ(grouped.refused, 0) << (grouped.reasons.empty() ? "" : grouped.reasons.front());
  EXPECT_EQ(grouped.described, 3); // P (ordinary, padded), G (grouped), M (maps in batch)
}

TEST(CudnnDescription, LocallyConnectedAndAsymmetricPadsAreRefusedWithAReason) {
  Checked local = checkNetwork(kLocalNet);
  ASSERT_GT(local.refused, 0);
  EXPECT_NE(local.reasons.front().find("locally connected"), std::string::npos) << local.reasons.front();
  Checked asymmetric = checkNetwork(kMultiChannelNet);
  ASSERT_GT(asymmetric.refused, 0);
  bool named = false;
  for (const std::string &r : asymmetric.reasons)
    named =
        named || r.find("asymmetric padding") != std::string::npos || r.find("MapCount") != std::string::npos;
  EXPECT_TRUE(named) << asymmetric.reasons.front();
}

} // namespace
} // namespace netc::numeric
