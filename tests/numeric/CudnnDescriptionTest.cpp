// CudnnDescriptionTest.cpp -- the cuDNN form of every convolution
// (runtime/cuda/CudnnConvolution.h) checked without a GPU: on every network
// of the parity corpus and the examples, each convolution cuDNN can express
// is described (the description's tables equal the plan's, or it is
// refused), and the backend's cuDNN path for its forward, backward-data and
// backward-filter ops (CudnnRunner.h: permutations, bias, clearing, and
// the calls' numbers through cudnnCallOnHost, cuDNN's semantics on the
// host) gives the reference kernels' outputs for the same state. Likewise
// every pooling op cuDNN's rules fit (no dummy cells), max-pool ties
// included, whose gradient must go to the first maximal cell bit for bit. The seed network's, LeNet-5's, a
// grouped and a maps-in-batch convolution must be expressible; locally connected kernels and asymmetric pads
// must not, with a reason that says why.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "runtime/cuda/CudnnConvolution.h"
#include "runtime/cuda/CudnnPooling.h"
#include "runtime/cuda/CudnnRunner.h"
#include "runtime/cuda/HostLauncher.h"

#include <map>
#include <random>
#include <set>

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

/// `after` with op `index`'s output set to random values: a call that does
/// not accumulate must overwrite all of them (the nodes outside a view too).
State withRandomOutput(const State &after, const plan::Op &op, size_t index) {
  State start = after;
  std::mt19937 rng(static_cast<uint32_t>(index));
  for (float &v : start[static_cast<size_t>(op.out[0])])
    v = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
  return start;
}

/// `state`'s buffers where the kernels read them, at `batch` samples.
struct HostBuffers {
  std::vector<void *> addresses;
  runtime::cuda::OpResources resources;
  HostBuffers(State &state, int64_t batch) : addresses(state.size()) {
    for (size_t b = 0; b < state.size(); ++b)
      addresses[b] = state[b].data();
    resources.batch = batch;
    resources.buffers = addresses.data();
  }
};

struct Checked {
  int described = 0, refused = 0;
  std::vector<std::string> reasons;
  std::set<std::string> forms; // which permutations and clearing the checked calls needed
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
    auto shapes = runtime::cuda::cudnnShapes(*c, batch);
    if (!shapes) { // maps in the batch with three spatial dimensions: refused at the call
      ++out.refused;
      out.reasons.push_back(shapes.message());
      continue;
    }
    ++out.described;
    for (auto [kind, index] : opsOfConvolution(plan, op.in[2])) {
      const plan::Op &o = plan.ops[index];
      SCOPED_TRACE(describeOp(plan, index));
      const State start = withRandomOutput(after, o, index);
      reference.restore(start);
      reference.run(index, index + 1);
      // The backend's cuDNN path on the host: permutations, the call's
      // numbers through cuDNN's semantics, bias, clearing.
      State mine = start;
      HostBuffers host(mine, batch);
      std::vector<float> filter(static_cast<size_t>(shapes->filterFloats)),
          values(static_cast<size_t>(batch * shapes->channels * shapes->channelLength));
      runtime::cuda::CudnnOpResources form;
      form.shapes = *shapes;
      form.netChannel = c->netChannel.data();
      form.weightRow = c->weightRow.data();
      form.filter = filter.data();
      form.values = values.data();
      runtime::cuda::HostLauncher launch;
      runtime::cuda::runCudnnOp(o, host.resources, form, launch);
      EXPECT_TRUE(
          valuesClose(plan::opName(kind), mine[static_cast<size_t>(o.out[0])], reference.read(o.out[0])));
      out.forms.insert(fmt::format("{}{}{}", shapes->outputInPlace ? "" : "permuted-output ",
                                   shapes->weightsInPlace ? "" : "permuted-weights ",
                                   shapes->coversInput ? "" : "partial-view"));
    }
  }
  return out;
}

/// Describes every pooling op of `text` and checks the backend's cuDNN
/// path for it (CudnnRunner.h's runCudnnPoolOp, cuDNN's semantics on the
/// host) against the reference op at batch 3; with `ties`, the pools read
/// small integers, so most windows hold several maximal cells.
Checked checkPooling(const std::string &text, const CompileOptions &options = {}, bool ties = false) {
  Checked out;
  Compiled compiled = compileAndPlan(text, options);
  const plan::Plan &plan = compiled.plan;
  const int64_t batch = 3;
  Machine reference(plan, batch, {1, true, {}});
  State after = randomState(plan, batch, 78);
  reference.restore(after);
  reference.run(0, plan.ops.size());
  after = reference.snapshot();
  for (size_t index = 0; index < plan.ops.size(); ++index) {
    const plan::Op &o = plan.ops[index];
    if (!runtime::cuda::cudnnPools(o.kind))
      continue;
    SCOPED_TRACE(describeOp(plan, index));
    const auto &a = o.get<plan::WindowAttrs>();
    const auto &window = plan.buffers[static_cast<size_t>(o.in[o.kind == OpKind::MaxPoolGrad ? 2 : 1])].table;
    std::string reason;
    auto shapes =
        runtime::cuda::describePoolingForCudnn(a, window, o.kind != OpKind::MeanPool, batch, &reason);
    if (!shapes) {
      ++out.refused;
      out.reasons.push_back(reason);
      continue;
    }
    ++out.described;
    State start = withRandomOutput(after, o, index);
    std::mt19937 rng(static_cast<uint32_t>(index));
    if (ties) // the pooled input (a max-pool gradient's second input)
      for (float &v : start[static_cast<size_t>(o.in[o.kind == OpKind::MaxPoolGrad ? 1 : 0])])
        v = float(std::uniform_int_distribution<int>(0, 2)(rng));
    reference.restore(start);
    reference.run(index, index + 1);
    State mine = start;
    HostBuffers host(mine, batch);
    std::vector<float> values(static_cast<size_t>(batch * shapes->outputs));
    runtime::cuda::CudnnPoolResources form;
    form.shapes = *shapes;
    form.values = values.data();
    runtime::cuda::HostLauncher launch;
    runtime::cuda::runCudnnPoolOp(o, host.resources, form, launch);
    const std::vector<float> &result = mine[static_cast<size_t>(o.out[0])];
    if (o.kind == OpKind::MeanPool)
      EXPECT_TRUE(valuesClose(plan::opName(o.kind), result, reference.read(o.out[0])));
    else // a maximum, and its gradient at the first maximal cell: exactly the reference's
      EXPECT_TRUE(bitIdentical(plan::opName(o.kind), result, reference.read(o.out[0])));
    out.forms.insert(fmt::format("{}{}", plan::opName(o.kind), shapes->coversInput ? "" : " partial-view"));
  }
  return out;
}

TEST(CudnnDescription, EveryExpressiblePoolingMatchesTheReferenceTiesIncluded) {
  int described = 0, refused = 0;
  std::set<std::string> forms;
  std::vector<std::pair<std::string, NetCase>> nets;
  for (const NetCase &net : parityCases())
    nets.push_back({net.name, net});
  for (const char *example : {"examples/lenet5.net", "examples/pool-norm.net"})
    nets.push_back({example, NetCase{example, readFile(sourcePath(example)), {}}});
  for (const auto &[name, net] : nets)
    for (bool ties : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", name, ties ? " (ties)" : ""));
      Checked c = checkPooling(net.text, net.options, ties);
      described += c.described;
      refused += c.refused;
      forms.insert(c.forms.begin(), c.forms.end());
    }
  // Max and mean forward, the max gradient, a view that starts late; padded pools refused.
  for (const char *form : {"max-pool", "mean-pool", "max-pool-grad"}) {
    bool seen = false;
    for (const std::string &f : forms)
      seen = seen || f.starts_with(form);
    EXPECT_TRUE(seen) << form;
  }
  EXPECT_TRUE(forms.count("mean-pool partial-view"));
  EXPECT_GT(described, 4);
  EXPECT_GT(refused, 0);
}

TEST(CudnnDescription, EveryExpressibleConvolutionMatchesTheReference) {
  int described = 0, refused = 0;
  std::set<std::string> forms;
  for (const NetCase &net : parityCases()) {
    SCOPED_TRACE(net.name);
    Checked c = checkNetwork(net.text, net.options);
    described += c.described;
    refused += c.refused;
    forms.insert(c.forms.begin(), c.forms.end());
  }
  for (const std::string &example : exampleNames()) {
    const std::string text = readFile(sourcePath("examples/" + example));
    if (text.find("convolve") == std::string::npos || text.find(" auto") != std::string::npos)
      continue; // no convolution, or sizes that need options (ExampleStepTest.cpp runs those)
    SCOPED_TRACE(example);
    Checked c = checkNetwork(text);
    described += c.described;
    refused += c.refused;
    forms.insert(c.forms.begin(), c.forms.end());
  }
  // In place, and each of the permutations and the clearing of nodes outside the view.
  EXPECT_TRUE(forms.count(""));
  bool permutedOutput = false, permutedWeights = false, partialView = false;
  for (const std::string &f : forms) {
    permutedOutput = permutedOutput || f.find("permuted-output") != std::string::npos;
    permutedWeights = permutedWeights || f.find("permuted-weights") != std::string::npos;
    partialView = partialView || f.find("partial-view") != std::string::npos;
  }
  EXPECT_TRUE(permutedOutput);
  EXPECT_TRUE(permutedWeights);
  EXPECT_TRUE(partialView);
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

/// A convolution whose windows start inside its source (the nodes before
/// them are read by none) behind a layer that needs its input gradient: the
/// data gradient clears those nodes, which cuDNN's call does not write.
inline const char *kLateViewNet = R"(input Img [1, 9, 9];
hidden A [2, 8, 8] tanh from Img convolve {
  InputShape = [1, 9, 9]; KernelShape = [1, 2, 2]; MapCount = 2; }
hidden B [2, 2, 2] tanh from A convolve {
  InputShape = [2, 8, 8]; KernelShape = [2, 3, 3]; Stride = [1, 3, 3]; MapCount = 2; }
output O [3] from B all;
)";

TEST(CudnnDescription, ADataGradientClearsTheNodesBeforeALateView) {
  Checked c = checkNetwork(kLateViewNet);
  EXPECT_EQ(c.refused, 0) << (c.reasons.empty() ? "" : c.reasons.front());
  EXPECT_EQ(c.described, 2);
  EXPECT_TRUE(c.forms.count("partial-view"));
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
