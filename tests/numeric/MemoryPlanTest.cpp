// MemoryPlanTest.cpp -- memory planning (codegen/PlanMemory.cpp) checked from
// the outside: lifetimes are recomputed here from the ops (a batch-scaled
// buffer lives from the first op that names it to the last; the features,
// labels and output values are pinned for the whole plan, since the host
// writes and reads them around the ops), and no two buffers whose lifetimes
// overlap may share arena space; every buffer lies inside the arena; without
// reuse nothing overlaps at all and the arena is the plain sum; with reuse
// the seed network's arena is smaller than that sum. Finally the same step
// run on a reusing and a non-reusing plan gives bit-identical results.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "support/NumberText.h"

namespace netc::numeric {
namespace {

struct Lifetime {
  size_t first = SIZE_MAX, last = 0;
};

std::vector<Lifetime> lifetimes(const plan::Plan &plan) {
  std::vector<Lifetime> life(plan.buffers.size());
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const plan::Op &op = plan.ops[i];
    for (const std::vector<int> *list : {&op.in, &op.out})
      for (int b : *list) {
        life[static_cast<size_t>(b)].first = std::min(life[static_cast<size_t>(b)].first, i);
        life[static_cast<size_t>(b)].last = std::max(life[static_cast<size_t>(b)].last, i);
      }
  }
  life[static_cast<size_t>(plan.output)] = {0, plan.ops.size()};
  for (Lifetime &l : life)
    if (l.first == SIZE_MAX) // never used: treat as live throughout
      l = {0, plan.ops.size()};
  return life;
}

/// Every pair of batch-scaled buffers in the activation arena: overlapping
/// lifetimes (or no reuse at all) must mean disjoint arena ranges; every
/// offset is 256-byte aligned; the inputs have an arena of their own.
void expectNoConflicts(const plan::Plan &plan, bool reuse) {
  const std::vector<Lifetime> life = lifetimes(plan);
  int64_t sum = 0;
  std::vector<size_t> scaled;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const plan::Buffer &buffer = plan.buffers[b];
    if (!buffer.batchScaled())
      continue;
    EXPECT_EQ(buffer.arenaOffset % plan::kAlignElements, 0) << buffer.name;
    if (buffer.isInput()) {
      EXPECT_LE(buffer.arenaOffset + buffer.perSample, plan.memory.inputsPerSample) << buffer.name;
      continue;
    }
    scaled.push_back(b);
    sum += plan::alignElements(buffer.perSample);
    EXPECT_GE(buffer.arenaOffset, 0) << buffer.name;
    EXPECT_LE(buffer.arenaOffset + buffer.perSample, plan.memory.arenaPerSample) << buffer.name;
  }
  EXPECT_EQ(plan.memory.unplannedPerSample, sum);
  if (!reuse) {
    EXPECT_EQ(plan.memory.arenaPerSample, sum);
  }
  size_t conflicts = 0;
  for (size_t x = 0; x < scaled.size(); ++x)
    for (size_t y = x + 1; y < scaled.size(); ++y) {
      const plan::Buffer &a = plan.buffers[scaled[x]], &b = plan.buffers[scaled[y]];
      const Lifetime &la = life[scaled[x]], &lb = life[scaled[y]];
      const bool liveTogether = la.first <= lb.last && lb.first <= la.last;
      const bool share =
          a.arenaOffset < b.arenaOffset + b.perSample && b.arenaOffset < a.arenaOffset + a.perSample;
      if ((liveTogether || !reuse) && share) {
        ++conflicts;
        ADD_FAILURE() << fmt::format("{} [{}, {}) ops {}..{} and {} [{}, {}) ops {}..{} share arena space",
                                     a.name, a.arenaOffset, a.arenaOffset + a.perSample, la.first, la.last,
                                     b.name, b.arenaOffset, b.arenaOffset + b.perSample, lb.first, lb.last);
      }
      if (conflicts > 5)
        return;
    }
  // The arena can never be smaller than the largest set of buffers live at one op.
  int64_t peak = 0;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    int64_t live = 0;
    for (size_t b : scaled)
      live += life[b].first <= i && i <= life[b].last ? plan.buffers[b].perSample : 0;
    peak = std::max(peak, live);
  }
  EXPECT_GE(plan.memory.arenaPerSample, peak);
}

Compiled compileExampleFile(const std::string &name, CompileOptions options, bool reuse) {
  Compiled c;
  const std::string path = sourcePath("examples/" + name);
  c.compilation = compileSource(SourceFile(path, readFile(path)), options, Stage::Passes);
  EXPECT_EQ(c.compilation->diags.errorCount(), 0u) << describeDiagnostics(*c.compilation);
  auto p = plan::buildPlan(c.network(), {true, {}, reuse});
  EXPECT_TRUE(p.ok());
  if (p.ok())
    c.plan = std::move(*p);
  return c;
}

TEST(MemoryPlan, ExamplesHaveNoOverlappingLiveBuffers) {
  for (const std::string name : {"mnist.net", "galaxies.net", "lenet5.net", "multi-input-filtered.net",
                                 "siamese.net", "rmltools-norm-pool.net", "mixed-bundles.net"})
    for (bool reuse : {true, false}) {
      SCOPED_TRACE(fmt::format("{} reuse={}", name, reuse));
      Compiled c = compileExampleFile(name, {}, reuse);
      expectNoConflicts(c.plan, reuse);
    }
}

TEST(MemoryPlan, TestNetworksHaveNoOverlappingLiveBuffers) {
  for (const NetCase &net : fixedNetworks())
    for (bool reuse : {true, false}) {
      SCOPED_TRACE(fmt::format("{} reuse={}", net.name, reuse));
      Compiled c = compileAndPlan(net.text, net.options, {true, {}, reuse});
      expectNoConflicts(c.plan, reuse);
      // Inference plans too.
      auto inference = plan::buildPlan(c.network(), {false, {}, reuse});
      ASSERT_TRUE(inference.ok());
      expectNoConflicts(*inference, reuse);
    }
}

TEST(MemoryPlan, ReuseShrinksTheSeedNetworksArena) {
  Compiled reused = compileExampleFile("mnist.net", {}, true);
  Compiled plain = compileExampleFile("mnist.net", {}, false);
  EXPECT_LT(reused.plan.memory.arenaPerSample, reused.plan.memory.unplannedPerSample);
  EXPECT_LT(reused.plan.memory.arenaPerSample, plain.plan.memory.arenaPerSample);
  EXPECT_EQ(plain.plan.memory.arenaPerSample, plain.plan.memory.unplannedPerSample);
  EXPECT_EQ(reused.plan.memory.unplannedPerSample, plain.plan.memory.unplannedPerSample);
  EXPECT_EQ(reused.plan.memory.fixedElements, plain.plan.memory.fixedElements);
  EXPECT_LT(reused.plan.bytesPerBatch(64), plain.plan.bytesPerBatch(64));
  RecordProperty("arena_per_sample_reused", std::to_string(reused.plan.memory.arenaPerSample));
  RecordProperty("arena_per_sample_plain", std::to_string(plain.plan.memory.arenaPerSample));
}

/// The same step (forward, loss, backward, SGD update) on a reusing and a
/// non-reusing plan of the same network, fast kernels, one thread: the
/// metrics, the output values, every parameter and parameter gradient are
/// bit-identical (the plans differ only in arena offsets).
TEST(MemoryPlan, ReuseDoesNotChangeResults) {
  std::vector<NetCase> cases = fixedNetworks();
  cases.push_back({"mnist", readFile(sourcePath("examples/mnist.net")), {}});
  cases.push_back({"lenet5", readFile(sourcePath("examples/lenet5.net")), {}});
  for (const NetCase &net : cases) {
    SCOPED_TRACE(net.name);
    Compiled reused = compileAndPlan(net.text, net.options, {true, {}, true});
    Compiled plain = compileAndPlan(net.text, net.options, {true, {}, false});
    ASSERT_EQ(reused.plan.buffers.size(), plain.plan.buffers.size());
    const int64_t batch = 3;
    const State initial = randomState(plain.plan, batch, 31);
    Machine a(reused.plan, batch, {1, false, {}}), b(plain.plan, batch, {1, false, {}});
    for (Machine *m : {&a, &b}) {
      m->write(plain.plan.features, initial[static_cast<size_t>(plain.plan.features)]);
      m->write(plain.plan.labels, initial[static_cast<size_t>(plain.plan.labels)]);
      for (const plan::Parameter &p : plain.plan.parameters)
        m->write(p.buffer, initial[static_cast<size_t>(p.buffer)]);
      m->run(0, plain.plan.ops.size());
    }
    EXPECT_TRUE(bitIdentical("metrics", a.read(plain.plan.metrics), b.read(plain.plan.metrics)));
    EXPECT_TRUE(bitIdentical("output", a.read(plain.plan.output), b.read(plain.plan.output)));
    for (const plan::Parameter &p : plain.plan.parameters) {
      EXPECT_TRUE(bitIdentical(p.name, a.read(p.buffer), b.read(p.buffer)));
      EXPECT_TRUE(bitIdentical("d" + p.name, a.read(p.gradient), b.read(p.gradient)));
    }
  }
}

/// A backend loaded for batches of up to 5 and run on 3 samples (the
/// trainer's last, partial batch) computes what a backend loaded for 3 does.
TEST(MemoryPlan, PartialBatchOnALargerLoadMatches) {
  for (const NetCase &net : fixedNetworks()) {
    SCOPED_TRACE(net.name);
    Compiled c = compileAndPlan(net.text, net.options, {true, {}, true});
    const plan::Plan &plan = c.plan;
    const int64_t batch = 3;
    const State initial = randomState(plan, batch, 17);
    Machine exact(plan, batch, {1, false, {}});
    std::unique_ptr<runtime::Backend> larger =
        runtime::makeCpuBackend({1, 0, instructionSetOf(MachineKind{})});
    ASSERT_TRUE(larger->load(plan, 5).ok());
    for (int buffer : {plan.features, plan.labels}) {
      exact.write(buffer, initial[static_cast<size_t>(buffer)]);
      larger->write(buffer, initial[static_cast<size_t>(buffer)]);
    }
    for (const plan::Parameter &p : plan.parameters) {
      exact.write(p.buffer, initial[static_cast<size_t>(p.buffer)]);
      larger->write(p.buffer, initial[static_cast<size_t>(p.buffer)]);
    }
    exact.run(0, plan.ops.size());
    larger->write(plan.scalars, optim::stepScalars({}, 0.1f, 1, batch, batch));
    ASSERT_TRUE(larger->run(0, plan.ops.size(), batch).ok());
    auto readLarger = [&](int buffer) {
      std::vector<float> out(elementsOf(plan.buffers[static_cast<size_t>(buffer)], batch));
      larger->read(buffer, out);
      return out;
    };
    EXPECT_TRUE(bitIdentical("metrics", readLarger(plan.metrics), exact.read(plan.metrics)));
    EXPECT_TRUE(bitIdentical("output", readLarger(plan.output), exact.read(plan.output)));
    for (const plan::Parameter &p : plan.parameters)
      EXPECT_TRUE(bitIdentical(p.name, readLarger(p.buffer), exact.read(p.buffer)));
  }
}

/// The inference plan (no backward, its own memory layout) computes the
/// same outputs and metrics as the training plan's forward and loss ops.
TEST(MemoryPlan, InferencePlanMatchesTrainingForward) {
  for (const NetCase &net : fixedNetworks()) {
    SCOPED_TRACE(net.name);
    Compiled c = compileAndPlan(net.text, net.options, {true, {}, true});
    auto inference = plan::buildPlan(c.network(), {false, {}, true});
    ASSERT_TRUE(inference.ok());
    EXPECT_EQ(inference->lossEnd, inference->ops.size());
    EXPECT_EQ(inference->backwardEnd, inference->ops.size());
    const int64_t batch = 2;
    const State initial = randomState(c.plan, batch, 23);
    Machine training(c.plan, batch, {1, false, {}}), forward(*inference, batch, {1, false, {}});
    for (Machine *m : {&training, &forward}) {
      m->write(m->plan().features, initial[static_cast<size_t>(c.plan.features)]);
      m->write(m->plan().labels, initial[static_cast<size_t>(c.plan.labels)]);
      ASSERT_EQ(m->plan().parameters.size(), c.plan.parameters.size());
      for (size_t i = 0; i < c.plan.parameters.size(); ++i)
        m->write(m->plan().parameters[i].buffer, initial[static_cast<size_t>(c.plan.parameters[i].buffer)]);
      m->run(0, m->plan().lossEnd);
    }
    EXPECT_TRUE(bitIdentical("output", forward.read(inference->output), training.read(c.plan.output)));
    EXPECT_TRUE(bitIdentical("metrics", forward.read(inference->metrics), training.read(c.plan.metrics)));
  }
}

} // namespace
} // namespace netc::numeric

namespace netc::numeric {
namespace {

/// The fast table keeps batch-scaled buffers feature-major and the reference
/// table sample-major; Backend::write and read speak sample-major on both.
/// Pieces written at any offset (a partial first sample, whole samples, a
/// partial last one) read back whole, and whole values read back in pieces.
TEST(MemoryPlan, WriteAndReadAtAnyOffsetRoundTrip) {
  Compiled c = compileAndPlan(fixedNetworks().front().text);
  const plan::Plan &plan = c.plan;
  const plan::Buffer &features = plan.buffers[static_cast<size_t>(plan.features)];
  const int64_t batch = 21, n = features.perSample, total = batch * n;
  std::vector<float> values(static_cast<size_t>(total));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) + 0.5f;
  const int64_t cuts[] = {0, n / 2 + 1, 3 * n + 1, total - n / 2, total};
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference" : "fast");
    std::unique_ptr<runtime::Backend> backend = runtime::makeCpuBackend({1, reference, {}});
    ASSERT_TRUE(backend->load(plan, batch).ok());
    for (size_t piece = 0; piece + 1 < std::size(cuts); ++piece)
      backend->write(
          plan.features,
          std::span<const float>(values).subspan(static_cast<size_t>(cuts[piece]),
                                                 static_cast<size_t>(cuts[piece + 1] - cuts[piece])),
          cuts[piece]);
    std::vector<float> whole(values.size());
    backend->read(plan.features, whole);
    EXPECT_TRUE(bitIdentical("whole read", whole, values));
    std::vector<float> pieces(values.size());
    for (size_t piece = 0; piece + 1 < std::size(cuts); ++piece)
      backend->read(plan.features,
                    std::span<float>(pieces).subspan(static_cast<size_t>(cuts[piece]),
                                                     static_cast<size_t>(cuts[piece + 1] - cuts[piece])),
                    cuts[piece]);
    EXPECT_TRUE(bitIdentical("read in pieces", pieces, values));
  }
}

/// Plans built without their index tables (as `netc show` builds them) have
/// the same buffers with the same sizes as full plans; only the tables'
/// contents are missing. The sizes come from the geometry alone
/// (codegen/IndexTables.cpp tableSizes), the built tables from walking it.
TEST(MemoryPlan, TableSizesFromTheGeometryMatchTheBuiltTables) {
  std::vector<NetCase> cases = fixedNetworks();
  for (const char *name : {"mnist.net", "lenet5.net", "rmltools-norm-pool.net", "mixed-bundles.net"})
    cases.push_back({name, readFile(sourcePath(std::string("examples/") + name)), {}});
  for (const NetCase &net : cases) {
    SCOPED_TRACE(net.name);
    plan::PlanOptions sizesOnly{true, {plan::OptimizerKind::Sgd, {0.1f, 0.9f}}, true};
    sizesOnly.buildTables = false;
    Compiled full =
        compileAndPlan(net.text, net.options, {true, {plan::OptimizerKind::Sgd, {0.1f, 0.9f}}, true});
    Compiled sized = compileAndPlan(net.text, net.options, sizesOnly);
    ASSERT_EQ(full.plan.buffers.size(), sized.plan.buffers.size());
    for (size_t b = 0; b < full.plan.buffers.size(); ++b) {
      const plan::Buffer &built = full.plan.buffers[b], &planned = sized.plan.buffers[b];
      EXPECT_EQ(built.name, planned.name);
      EXPECT_EQ(built.fixed, planned.fixed) << built.name;
      EXPECT_EQ(built.perSample, planned.perSample) << built.name;
      EXPECT_EQ(built.arenaOffset, planned.arenaOffset) << built.name;
      if (built.role == plan::BufferRole::Table) {
        EXPECT_EQ(static_cast<int64_t>(built.table.size()), built.fixed) << built.name;
        EXPECT_TRUE(planned.table.empty()) << built.name;
      }
    }
    EXPECT_EQ(full.plan.memory.fixedElements, sized.plan.memory.fixedElements);
    EXPECT_EQ(full.plan.memory.arenaPerSample, sized.plan.memory.arenaPerSample);
  }
}

/// A 1000×1000 input with a 500×500 convolve: its gather table alone has
/// 251,001 positions × 250,000 cells (234 GB). The plan is refused from the
/// sizes, before any table is built, naming the size, the table and the
/// limit; without the limit the same sizes are reported by a plan built
/// without tables.
const char *kHugeConvolution = R"(input Pic [1000, 1000];
hidden C [501, 501] from Pic convolve { InputShape = [1000, 1000]; KernelShape = [500, 500]; Stride = [1, 1]; }
output O [10] from C all;
)";

TEST(MemoryPlan, FixedBuffersOverTheLimitAreRefusedBeforeTheyAreBuilt) {
  auto c = compileText(kHugeConvolution);
  ASSERT_EQ(c->diags.errorCount(), 0u);
  plan::PlanOptions options;
  options.maxMemoryBytes = uint64_t{8} << 30;
  auto refused = plan::buildPlan(c->network, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "network 't' needs 233.8 GiB for its parameters, gradients, optimizer state and index tables "
            "before any batch (the largest is the index table 'C/Pic.gather', 233.8 GiB); the limit is "
            "8.0 GiB (--max-memory)");
  plan::PlanOptions figures;
  figures.buildTables = false;
  figures.maxMemoryBytes = UINT64_MAX;
  auto sized = plan::buildPlan(c->network, figures);
  ASSERT_TRUE(sized.ok()) << sized.message();
  const int64_t gather = int64_t{501} * 501 * 250000;
  bool found = false;
  for (const plan::Buffer &b : sized->buffers)
    if (b.name == "C/Pic.gather") {
      found = true;
      EXPECT_EQ(b.fixed, gather);
      EXPECT_TRUE(b.table.empty());
    }
  EXPECT_TRUE(found);
}

/// The batch part: the plan fits at a small batch and is refused at a
/// billion samples with the size, the limit and the largest batch that
/// fits; a batch whose byte count overflows says so.
/// A parameter no backward op reaches (its layer does not lead to the
/// output) lies after the trained range of the flat arenas and has no
/// optimizer state, so the update op never touches it and checkpoints keep
/// no state tensor for it (as before the flat arenas).
TEST(MemoryPlan, UntrainedParametersLieOutsideTheUpdateAndHaveNoState) {
  plan::PlanOptions options{true, {}, true};
  options.update.hyper.momentum = 0.9f;
  Compiled c = compileAndPlan("input X [4];\n"
                              "hidden Used [3] from X all;\n"
                              "hidden Unused [2] from X all;\n"
                              "output Y [2] from Used all;\n",
                              {}, options);
  const plan::Plan &plan = c.plan;
  int untrained = 0;
  for (const plan::Parameter &p : plan.parameters) {
    SCOPED_TRACE(p.name);
    if (p.name.rfind("Unused/", 0) == 0) {
      ++untrained;
      EXPECT_FALSE(p.trained);
      EXPECT_GE(p.offset, plan.trainedElements);
      EXPECT_TRUE(p.state.empty());
    } else {
      EXPECT_TRUE(p.trained);
      EXPECT_LE(p.offset + p.count, plan.trainedElements);
      EXPECT_EQ(p.state.size(), 1u);
    }
  }
  EXPECT_EQ(untrained, 2); // weights and biases
  EXPECT_EQ(plan.ops.back().get<plan::UpdateAttrs>().count, plan.trainedElements);
}

TEST(MemoryPlan, CheckPlanFitsNamesTheLargestBatchThatFits) {
  Compiled c = compileAndPlan(readFile(sourcePath("examples/mnist.net")), {}, {true, {}, true});
  const uint64_t limit = uint64_t{1} << 30;
  EXPECT_TRUE(plan::checkPlanFits(c.plan, 128, limit).ok());
  const uint64_t perSample = static_cast<uint64_t>(c.plan.memory.arenaPerSample +
                                                   c.plan.inputSlots * c.plan.memory.inputsPerSample) *
                             4;
  const uint64_t fixed = static_cast<uint64_t>(c.plan.memory.fixedElements) * 4;
  const int64_t fits = static_cast<int64_t>((limit - fixed) / perSample);
  EXPECT_TRUE(plan::checkPlanFits(c.plan, fits, limit).ok());
  Status over = plan::checkPlanFits(c.plan, fits + 1, limit);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find(fmt::format("the largest batch that fits is {}", groupDigits(fits))),
            std::string::npos)
      << over.message();
  Status billion = plan::checkPlanFits(c.plan, 1000000000, limit);
  ASSERT_FALSE(billion.ok());
  EXPECT_EQ(billion.message().rfind("at batch 1,000,000,000 network 't' needs ", 0), 0u) << billion.message();
  EXPECT_NE(billion.message().find("; the limit is 1.0 GiB (--max-memory)"), std::string::npos);
  Status overflow = plan::checkPlanFits(c.plan, INT64_MAX, limit);
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.message().find("needs more bytes than can be counted"), std::string::npos);
}

} // namespace
} // namespace netc::numeric
