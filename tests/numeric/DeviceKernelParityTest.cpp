// DeviceKernelParityTest.cpp -- the CUDA backend's kernels checked without a
// GPU (docs/architecture.md §Runtime principles, issue "CUDA backend"): its op dispatch (runtime/cuda/
// OpRunner.h) runs through the host launcher, which executes every
// hand-written body as a loop, every cuBLAS call's parameters through a host
// evaluator with cuBLAS's semantics, and the metrics block lane by lane, and
// each op's outputs are compared with the double-precision reference kernels
// on the same random cases as the CPU parity tests (KernelParityTest.cpp):
// every padding, sharing and MapCount form, `where` bundles, pooling and
// response norm over dummy cells, all ten output functions and the three
// losses; plus max-pool ties, the bias + output-function fusion over a whole
// step, a metrics reduction wider than one block's lanes, and the derived
// tables on their own. Tolerances are the CPU parity test's (float against
// double, see there).
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "runtime/core/MemoryLayout.h"
#include "runtime/cuda/HostLauncher.h"
#include "runtime/cuda/OpRunner.h"
#include "runtime/cuda/OpTables.h"

#include <cstddef>
#include <limits>

namespace netc::numeric {
namespace {

using plan::OpKind;
using runtime::cuda::OpResources;

/// A plan's buffers in host memory laid out as the CUDA backend lays them
/// out on the device (runtime/core/MemoryLayout.h: one block, sample-major
/// at one batch, views into their flat arenas), the plan's tables and the
/// derived ones filled in, and scratch for the loss ops. Stands in for
/// device memory in these tests.
class HostDeviceMemory {
public:
  HostDeviceMemory(const plan::Plan &plan, int64_t batch) : plan_(&plan), batch_(batch) {
    auto layout = runtime::layoutMemory(plan, batch);
    EXPECT_TRUE(layout.ok()) << (layout.ok() ? "" : layout.message());
    if (!layout.ok())
      return;
    block_.assign(static_cast<size_t>(layout->planElements), 0u);
    pointers_.assign(plan.buffers.size(), nullptr);
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      const int64_t offset = layout->offset[b];
      if (offset < 0)
        continue;
      pointers_[b] = block_.data() + offset;
      const plan::Buffer &buffer = plan.buffers[b];
      if (buffer.role == plan::BufferRole::Table)
        std::memcpy(pointers_[b], buffer.table.data(), buffer.table.size() * sizeof(int32_t));
    }
    auto derived = runtime::cuda::deriveTables(plan);
    EXPECT_TRUE(derived.ok()) << (derived.ok() ? "" : derived.message());
    if (derived.ok())
      derived_ = std::move(*derived);
    int64_t scratch = 1;
    for (const plan::Op &op : plan.ops)
      scratch = std::max(scratch, runtime::cuda::scratchElements(op, batch));
    scratch_.assign(static_cast<size_t>(scratch), 0.0f);
  }

  float *floats(int buffer) { return reinterpret_cast<float *>(pointers_[static_cast<size_t>(buffer)]); }
  std::vector<float> read(int buffer) {
    const float *data = floats(buffer);
    return {data, data + elementsOf(plan_->buffers[static_cast<size_t>(buffer)], batch_)};
  }
  void restore(const State &state) {
    for (size_t b = 0; b < plan_->buffers.size(); ++b)
      if (isFloatData(plan_->buffers[b]) && !state[b].empty())
        std::copy(state[b].begin(), state[b].end(), floats(static_cast<int>(b)));
  }
  /// What Machine::run does before a step: the step scalars written and the metrics cleared.
  void prepareStep(float learningRate = 0.1f, int64_t step = 1) {
    plan::UpdateRule rule;
    for (const plan::Op &op : plan_->ops)
      if (op.kind == OpKind::Update)
        rule = op.get<plan::UpdateAttrs>().rule;
    const auto scalars = optim::stepScalars(rule, learningRate, step, batch_, batch_);
    std::copy(scalars.begin(), scalars.end(), floats(plan_->scalars));
    std::fill_n(floats(plan_->metrics), plan::kMetricCount, 0.0f);
  }
  OpResources resources(size_t op) {
    OpResources r;
    r.batch = batch_;
    r.buffers = reinterpret_cast<void *const *>(pointers_.data());
    r.scratch = scratch_.data();
    if (op < derived_.size()) {
      const runtime::cuda::DerivedTables &d = derived_[op];
      if (!d.sources.empty())
        r.derived.sources = {d.sources.start.data(), d.sources.entries.data()};
      if (!d.centres.empty())
        r.derived.centres = {d.centres.start.data(), d.centres.entries.data()};
      if (!d.destinations.empty())
        r.derived.destinations = d.destinations.data();
    }
    return r;
  }
  /// Runs ops [first, last) as the CUDA backend does: communication ops
  /// skipped (there are none in these plans), an add-bias and the activate
  /// after it fused when `fuse` is set.
  void run(size_t first, size_t last, bool fuse = false) {
    runtime::cuda::HostLauncher launch;
    for (size_t i = first; i < last; ++i) {
      if (fuse && i + 1 < last && runtime::cuda::fusesBiasAndActivation(*plan_, i)) {
        runtime::cuda::runBiasActivation(plan_->ops[i], plan_->ops[i + 1], resources(i), launch);
        ++i;
        continue;
      }
      runtime::cuda::runOp(plan_->ops[i], resources(i), launch);
    }
  }

private:
  const plan::Plan *plan_;
  int64_t batch_;
  std::vector<uint32_t> block_; // the layout's one block of 4-byte elements, float or int32
  std::vector<void *> pointers_;
  std::vector<runtime::cuda::DerivedTables> derived_;
  std::vector<float> scratch_;
};

class DeviceParity : public ::testing::TestWithParam<NetCase> {};

/// Op by op: before each op the host-run device dispatch gets the
/// reference's whole state, runs the op, and its outputs are compared with
/// the reference's. Batches 1, 3 and 19 as in the CPU parity test.
void deviceOpsMatchTheirReference(const NetCase &net) {
  Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
  ASSERT_GT(compiled.plan.ops.size(), 0u) << net.text;
  const plan::Plan &plan = compiled.plan;
  double worst = 0;
  for (int64_t batch : {int64_t{1}, int64_t{3}, int64_t{19}}) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    Machine reference(plan, batch, {1, true, {}});
    HostDeviceMemory device(plan, batch);
    reference.restore(randomState(plan, batch, 1000u + static_cast<uint32_t>(batch)));
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      if (plan::opRole(plan.ops[i].kind) == plan::OpRole::Communication)
        continue; // no kernel: the backend runs it with its communicator
      const State before = reference.snapshot();
      reference.run(i, i + 1);
      device.restore(before);
      device.prepareStep();
      device.run(i, i + 1);
      for (int out : plan.ops[i].out) {
        if (!isFloatData(plan.buffers[static_cast<size_t>(out)]))
          continue; // the update's arenas: compared through their parameter views below
        const std::vector<float> r = reference.read(out), d = device.read(out);
        EXPECT_TRUE(valuesClose(
            describeOp(plan, i) + " output " + plan.buffers[static_cast<size_t>(out)].name, d, r));
        worst = std::max(worst, compareValues(d, r, Tolerance{}).worstRatio);
      }
      if (plan.ops[i].kind == OpKind::Update || plan.ops[i].kind == OpKind::ZeroGradients)
        for (const plan::Parameter &p : plan.parameters)
          for (int view : {p.buffer, p.gradient}) {
            if (view < 0)
              continue;
            EXPECT_TRUE(valuesClose(describeOp(plan, i) + " " + plan.buffers[static_cast<size_t>(view)].name,
                                    device.read(view), reference.read(view)));
          }
    }
  }
  ::testing::Test::RecordProperty("worst_ratio", std::to_string(worst));
}

TEST_P(DeviceParity, EachOpMatchesItsReference) {
  deviceOpsMatchTheirReference(GetParam());
}

/// A part of a split layer's stage (splitPartCases), op by op.
TEST(DeviceParity, SplitPartOpsMatchTheirReference) {
  for (const NetCase &net : splitPartCases()) {
    SCOPED_TRACE(net.name);
    deviceOpsMatchTheirReference(net);
  }
}

/// The whole training step with the add-bias + activate fusion the backend
/// uses, from identical initial values; every float buffer compared at the
/// end with the whole-plan tolerance of the CPU parity test.
TEST_P(DeviceParity, WholeFusedStepMatchesReference) {
  const NetCase &net = GetParam();
  Compiled compiled = compileAndPlan(net.text, net.options);
  ASSERT_GT(compiled.plan.ops.size(), 0u);
  const plan::Plan &plan = compiled.plan;
  const int64_t batch = 5;
  const State initial = randomState(plan, batch, 8);
  Machine reference(plan, batch, {1, true, {}});
  HostDeviceMemory device(plan, batch);
  reference.restore(initial);
  device.restore(initial);
  reference.run(0, plan.ops.size());
  device.prepareStep();
  device.run(0, plan.ops.size(), /*fuse=*/true);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (!isFloatData(plan.buffers[b]))
      continue;
    EXPECT_TRUE(valuesClose(plan.buffers[b].name, device.read(static_cast<int>(b)),
                            reference.read(static_cast<int>(b)), {1e-3, 1e-4}));
  }
  const std::vector<float> mr = reference.read(plan.metrics), md = device.read(plan.metrics);
  EXPECT_NEAR(md[0], mr[0], 1e-4 * std::max(1.0f, std::abs(mr[0])));
  EXPECT_EQ(md[1], mr[1]);
}

INSTANTIATE_TEST_SUITE_P(Networks, DeviceParity, ::testing::ValuesIn(parityCases()), netCaseName<NetCase>);

/// The corpus exercises every op with a kernel, the fusion, and every
/// output function on both sides of the dispatch.
TEST(DeviceParityCorpus, CoversEveryKernelOpAndTheFusion) {
  std::set<OpKind> seen;
  bool fused = false;
  std::vector<NetCase> cases = parityCases(), split = splitPartCases();
  cases.insert(cases.end(), split.begin(), split.end());
  for (const NetCase &net : cases) {
    Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
    for (size_t i = 0; i < compiled.plan.ops.size(); ++i) {
      seen.insert(compiled.plan.ops[i].kind);
      fused = fused || runtime::cuda::fusesBiasAndActivation(compiled.plan, i);
    }
  }
  for (int k = 0; k < runtime::cpu::kKernelOpCount; ++k)
    EXPECT_TRUE(seen.count(static_cast<OpKind>(k))) << plan::opName(static_cast<OpKind>(k));
  EXPECT_TRUE(fused);
}

/// Max pooling on ties, as MaxPool.TiesGoToTheFirstMaximalCell checks the
/// CPU: the forward value and the gradient of the host-run device bodies are
/// bit-identical to the reference's, whose choice that test pins.
TEST(DeviceMaxPool, TiesGoToTheFirstMaximalCell) {
  Compiled c = compileAndPlan("input X [16];\n"
                              "hidden H [4, 4] linear from X all;\n"
                              "hidden P [2, 2] from H max pool { InputShape = [4, 4]; KernelShape = [2, 2]; "
                              "Stride = [2, 2]; }\n"
                              "output O [2] from P all;\n");
  const plan::Plan &plan = c.plan;
  size_t pool = 0, grad = 0;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (plan.ops[i].kind == OpKind::MaxPool)
      pool = i;
    if (plan.ops[i].kind == OpKind::MaxPoolGrad)
      grad = i;
  }
  ASSERT_GT(grad, pool);
  const int h = plan.ops[pool].in[0], dp = plan.ops[grad].in[0];
  const int64_t batch = 19;
  State state = randomState(plan, batch, 3);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < 16; ++i)
      state[static_cast<size_t>(h)][static_cast<size_t>(b * 16 + i)] =
          float(b) + (b % 2 && (i / 4) % 2 && i % 2 ? 1.0f : 0.0f);
  for (size_t i = 0; i < state[static_cast<size_t>(dp)].size(); ++i)
    state[static_cast<size_t>(dp)][i] = 1.0f + float(i);
  Machine reference(plan, batch, {1, true, {}});
  reference.restore(state);
  reference.run(pool, pool + 1);
  reference.run(grad, grad + 1);
  HostDeviceMemory device(plan, batch);
  device.restore(state);
  device.prepareStep();
  device.run(pool, pool + 1);
  device.run(grad, grad + 1);
  EXPECT_TRUE(
      bitIdentical("pooled", device.read(plan.ops[pool].out[0]), reference.read(plan.ops[pool].out[0])));
  EXPECT_TRUE(
      bitIdentical("gradient", device.read(plan.ops[grad].out[0]), reference.read(plan.ops[grad].out[0])));
}

/// A batch wider than the metrics block's lanes: each lane sums several
/// samples before the tree; the sums equal the reference's, and a
/// non-finite loss records the step (and only the first one).
TEST(DeviceMetrics, ABatchWiderThanTheBlockAndANonFiniteLoss) {
  Compiled c = compileAndPlan("input X [3];\noutput O [4] softmax from X all;\n");
  const plan::Plan &plan = c.plan;
  size_t loss = 0;
  while (loss < plan.ops.size() && plan::opRole(plan.ops[loss].kind) != plan::OpRole::Loss)
    ++loss;
  ASSERT_LT(loss, plan.ops.size());
  const int64_t batch = 3 * runtime::cuda::kReduceLanes + 17;
  const State state = randomState(plan, batch, 5);
  Machine reference(plan, batch, {1, true, {}});
  reference.restore(state);
  reference.run(0, loss + 1);
  HostDeviceMemory device(plan, batch);
  device.restore(state);
  device.prepareStep();
  device.run(0, loss + 1);
  const std::vector<float> mr = reference.read(plan.metrics), md = device.read(plan.metrics);
  EXPECT_NEAR(md[0], mr[0], 1e-5 * std::abs(mr[0]));
  EXPECT_EQ(md[1], mr[1]);
  EXPECT_EQ(md[2], 0.0f);

  // A probability of 0 for a sample's class is a finite loss (clamped at
  // 1e-30); an infinite output is not, and the step is recorded once.
  const int output = plan.ops[loss].in[0];
  device.prepareStep(0.1f, 7);
  device.floats(output)[0] = std::numeric_limits<float>::infinity();
  device.run(loss, loss + 1);
  EXPECT_EQ(device.read(plan.metrics)[2], 7.0f);
  device.floats(plan.scalars)[static_cast<int>(plan::StepScalar::Step)] = 9.0f;
  device.run(loss, loss + 1);
  EXPECT_EQ(device.read(plan.metrics)[2], 7.0f);
}

/// The derived tables: a transpose lists each source's cells in ascending
/// order, dummy cells nowhere, and malformed tables are refused by name.
TEST(DeviceTables, TransposeBySource) {
  const std::vector<int32_t> table = {0, 2, -1, 2, 1, 0};
  auto t = runtime::cuda::transposeTable(table, 3, 3);
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->start, (std::vector<int32_t>{0, 2, 3, 5}));
  EXPECT_EQ(t->entries, (std::vector<int32_t>{0, 5, 4, 1, 3}));
  auto outside = runtime::cuda::transposeTable(table, 3, 2);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.message(), "entry 1 of a table is 2, outside [-1, 2)");
  auto ragged = runtime::cuda::transposeTable(table, 4, 3);
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(ragged.message(), "a table of 6 entries is not made of rows of 4");
}

/// The host GEMM evaluator follows cuBLAS: column-major, op(A) and op(B),
/// and C not read when beta is 0 (a NaN there does not leak).
TEST(DeviceGemm, HostEvaluatorHasCublasSemantics) {
  // A [2 × 3] column-major: columns (1, 4), (2, 5), (3, 6), i.e. rows (1 2 3), (4 5 6).
  const std::vector<float> a = {1, 4, 2, 5, 3, 6};
  const std::vector<float> b = {1, 0, 1}; // [3 × 1]
  std::vector<float> c = {std::numeric_limits<float>::quiet_NaN(), 100};
  runtime::cuda::GemmCall g;
  g.m = 2, g.n = 1, g.k = 3, g.lda = 2, g.ldb = 3, g.ldc = 2, g.a = a.data(), g.b = b.data(), g.c = c.data();
  runtime::cuda::gemmOnHost(g);
  EXPECT_EQ(c, (std::vector<float>{4, 10}));
  // Aᵀ [3 × 2] times (1, 1), added to C with beta 1 and alpha 2.
  const std::vector<float> ones = {1, 1};
  std::vector<float> c3 = {1, 1, 1};
  runtime::cuda::GemmCall t;
  t.transA = true, t.m = 3, t.n = 1, t.k = 2, t.lda = 2, t.ldb = 2, t.ldc = 3, t.alpha = 2, t.beta = 1;
  t.a = a.data(), t.b = ones.data(), t.c = c3.data();
  runtime::cuda::gemmOnHost(t);
  EXPECT_EQ(c3, (std::vector<float>{11, 15, 19}));
}

} // namespace
} // namespace netc::numeric
