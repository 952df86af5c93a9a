// KernelParityTest.cpp -- every fast CPU kernel against its double-precision
// reference (docs/architecture.md §Tests) on the networks of TestNetworks.h and on
// seeded random geometries: (1) op by op, each op run on the fast and the
// reference table from the same state (the reference state before that op),
// so an error is pinned to one op and nothing propagates; (2) the whole
// training plan (forward, loss, backward, SGD updates) from identical initial
// values, comparing every buffer afterwards; (3) the fast table with 1 and 2
// threads: bit-identical for every op that does not call OpenBLAS, and the
// whole step bit-identical too (see ThreadCountDoesNotChangeResults); and a
// check that the corpus covers every op and kernel kind. The dense products
// run on both their kernels, netc's own and OpenBLAS (fastKinds).
//
// Tolerances. The fast kernels compute in float, summing in their own
// order (netc's dense products: k ascending; OpenBLAS: its blocking); the references accumulate in double and
// round once. A float dot product of n terms is off by about sqrt(n)·2^-24 times the sum of |terms|, which
// for these sizes (n <= a few hundred) is below 1e-5 of the largest value in the buffer. So an element passes
// when
//   |fast − reference| <= 1e-4·|reference| + 1e-5·max(1e-3, max|reference|),
// the second term an absolute floor tied to the buffer's scale, so that a
// value that cancels to nearly zero is judged against what was summed. The
// whole-plan comparison lets errors propagate through up to four layers and
// an SGD step, and uses 1e-3 relative with a 1e-4 floor. Measured (recorded
// as the worst_ratio property): the largest per-op error is about 1% of its
// tolerance, the largest whole-step error about 0.5% of its own, so the
// margins absorb other BLAS builds while a real kernel error (a wrong index,
// a missing term) is orders of magnitude beyond them.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include <omp.h>

#include <optional>
#include <set>
#include <thread>

namespace netc::numeric {
namespace {

using plan::OpKind;

class Parity : public ::testing::TestWithParam<NetCase> {};

/// The fast machines the op-by-op comparison runs: every instruction set
/// this processor runs with its default dense kernels, and each set's other
/// dense kernels (netc's own on the baseline set, OpenBLAS on the vector
/// sets), so both kinds of dense kernel meet the reference everywhere.
std::vector<MachineKind> fastKinds() {
  std::vector<MachineKind> kinds;
  for (std::string_view set : runtime::cpu::instructionSets()) {
    const MachineKind byDefault{1, false, std::string(set), ""};
    kinds.push_back(byDefault);
    kinds.push_back(
        {1, false, std::string(set), usesBlas(plan::OpKind::Dense, byDefault) ? "netc" : "openblas"});
  }
  return kinds;
}
std::string kindName(const MachineKind &kind) {
  return kind.denseKernel.empty() ? kind.variant : kind.variant + ", dense " + kind.denseKernel;
}

/// Op by op: the reference runs the plan; before each op the fast machines
/// (one per instruction set this processor runs, see cpu::instructionSets)
/// are given the reference's whole state, run the same op, and their outputs
/// are compared with the reference's. Batches 1 and 3 leave most of a lane
/// chunk as padding; 19 spans two chunks, the second partial. With more than
/// one sample a second machine per set runs with 2 threads.
void cpuOpsMatchTheirReference(const NetCase &net, const std::vector<int64_t> &batches = {1, 3, 19}) {
  Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
  ASSERT_GT(compiled.plan.ops.size(), 0u) << net.text;
  const plan::Plan &plan = compiled.plan;
  double worst = 0; // the largest error as a fraction of the tolerance
  for (int64_t batch : batches) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    const bool threads = batch > 1;
    Machine reference(plan, batch, {1, true, {}});
    struct FastPair {
      std::string name;
      MachineKind kind;
      std::unique_ptr<Machine> one, two;
    };
    std::vector<FastPair> fast;
    for (const MachineKind &kind : fastKinds()) {
      FastPair pair{kindName(kind), kind, std::make_unique<Machine>(plan, batch, kind), nullptr};
      if (threads) {
        MachineKind two = kind;
        two.threads = 2;
        pair.two = std::make_unique<Machine>(plan, batch, two);
      }
      fast.push_back(std::move(pair));
    }
    reference.restore(randomState(plan, batch, 1000u + static_cast<uint32_t>(batch)));
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const plan::Op &op = plan.ops[i];
      if (plan::opRole(op.kind) == plan::OpRole::Communication)
        continue; // no kernel: a backend runs it with its communicator
      const State before = reference.snapshot();
      reference.run(i, i + 1);
      for (FastPair &f : fast) {
        f.one->restore(before);
        f.one->run(i, i + 1);
        if (f.two) {
          f.two->restore(before);
          f.two->run(i, i + 1);
        }
      }
      for (int out : op.out) {
        const std::vector<float> r = reference.read(out);
        for (FastPair &f : fast) {
          const std::string what = describeOp(plan, i) + " output " +
                                   plan.buffers[static_cast<size_t>(out)].name + " (" + f.name + ")";
          const std::vector<float> f1 = f.one->read(out);
          EXPECT_TRUE(valuesClose(what, f1, r));
          worst = std::max(worst, compareValues(f1, r, Tolerance{}).worstRatio);
          if (!f.two)
            continue;
          const std::vector<float> f2 = f.two->read(out);
          if (usesBlas(op.kind, f.kind)) {
            EXPECT_TRUE(valuesClose(what + " (2 threads vs 1)", f2, f1));
          } else {
            EXPECT_TRUE(bitIdentical(what + " (2 threads vs 1)", f2, f1));
          }
        }
      }
    }
  }
  ::testing::Test::RecordProperty("worst_ratio", std::to_string(worst));
}

TEST_P(Parity, EachOpMatchesItsReference) {
  cpuOpsMatchTheirReference(GetParam());
}

/// The dense products at sizes that leave every edge of netc's tiles
/// (DenseKernels.cpp) partial: inputs and outputs not multiples of a row
/// tile, of a lane vector or of a weight-gradient panel (128 inputs), more
/// than one panel, outputs in two blocks (over plan::kMaxDenseBlock), and
/// batches of a partial chunk, of an odd number of chunks (a column block
/// of one vector) and of more than kKBlock steps of the weight gradient's k.
TEST(Parity, DenseProductsMatchTheirReferenceAtOddSizes) {
  const struct {
    int inputs, hidden, outputs;
  } sizes[] = {{1, 1, 2}, {7, 13, 3}, {130, 29, 5}, {300, 1030, 11}};
  for (const auto &size : sizes) {
    SCOPED_TRACE(fmt::format("{} -> {} -> {}", size.inputs, size.hidden, size.outputs));
    const NetCase net{"odd",
                      fmt::format("input I [{}]; hidden H [{}] from I all; output O [{}] from H all;",
                                  size.inputs, size.hidden, size.outputs),
                      {}};
    cpuOpsMatchTheirReference(net, {1, 19, 37, 203});
  }
}

/// A part of a split layer's stage (splitPartCases), op by op.
TEST(Parity, SplitPartOpsMatchTheirReference) {
  for (const NetCase &net : splitPartCases()) {
    SCOPED_TRACE(net.name);
    cpuOpsMatchTheirReference(net);
  }
}

/// Ops the CPU backend fuses when a call covers both: a convolution and its
/// layer's activation (the activation of each row as the convolution writes
/// it), and a convolution's weight gradient and its kernel-bias gradient
/// (summed from the rows the weight gradient reads). The forward and
/// backward pass in one call must leave every buffer bit-identical to the
/// same ops run one call each (unfused), on every fast table, for batches
/// that fill the lanes and that do not, and for the output functions the
/// convolutions here use (sigmoid in the seed network, ReLU in LeNet-5, tanh
/// below); every such pair of these plans is fused.
TEST(Fusion, FusedOpsMatchTheOpsOneByOne) {
  std::vector<NetCase> nets = {{"seed", readFile(sourcePath("examples/mnist.net")), {}},
                               {"lenet5", readFile(sourcePath("examples/lenet5.net")), {}},
                               {"tanh",
                                "input X [8, 8];\n"
                                "hidden C [4, 4, 4] tanh from X convolve { InputShape = [8, 8]; "
                                "KernelShape = [3, 3]; Stride = [2, 2]; Padding = true; MapCount = 4; }\n"
                                "output O [3] from C all;\n",
                                {}}};
  for (const NetCase &net : nets) {
    SCOPED_TRACE(net.name);
    Compiled compiled = compileAndPlan(net.text, net.options);
    ASSERT_GT(compiled.plan.ops.size(), 0u);
    const plan::Plan &plan = compiled.plan;
    int64_t activations = 0, biasGradients = 0;
    for (size_t i = 0; i + 1 < plan.ops.size(); ++i) {
      activations += plan.ops[i].kind == OpKind::Convolution && plan.ops[i + 1].kind == OpKind::Activate;
      biasGradients += plan.ops[i].kind == OpKind::ConvolutionGradWeights &&
                       plan.ops[i + 1].kind == OpKind::ConvolutionGradBias;
    }
    ASSERT_GT(activations, 0) << "no activation to fuse";
    ASSERT_GT(biasGradients, 0) << "no bias gradient to fuse";
    for (int64_t batch : {19, 32}) {
      SCOPED_TRACE(fmt::format("batch {}", batch));
      const State initial = randomState(plan, batch, 31);
      for (const MachineKind &kind : fastKinds()) {
        SCOPED_TRACE(kindName(kind));
        Machine whole(plan, batch, kind), oneByOne(plan, batch, kind);
        EXPECT_EQ(whole.backend().describe().fusedOps, activations + biasGradients);
        whole.restore(initial);
        oneByOne.restore(initial);
        whole.run(0, plan.backwardEnd);
        for (size_t i = 0; i < plan.backwardEnd; ++i)
          oneByOne.run(i, i + 1);
        // Every buffer but the loss sums, which Machine::run clears at each call.
        for (size_t b = 0; b < plan.buffers.size(); ++b) {
          if (isFloatData(plan.buffers[b]) && static_cast<int>(b) != plan.metrics) {
            EXPECT_TRUE(bitIdentical(plan.buffers[b].name, whole.read(static_cast<int>(b)),
                                     oneByOne.read(static_cast<int>(b))));
          }
        }
      }
    }
  }
}

/// The max-pool gradient's two paths in the fast tables: disjoint windows
/// (stride at least the kernel) write each covered input once and clear the
/// inputs no window covers (here the fifth row and column of a 5 x 5 input);
/// overlapping ones clear the rows and add. The gradient buffer is filled
/// with 7 before the op, on every machine, so an input a path left uncleared
/// or unwritten would keep it; the fast tables must match the reference.
TEST(Parity, MaxPoolGradientOfDisjointAndOverlappingWindows) {
  const NetCase nets[] = {
      {"disjoint",
       "input X [25];\nhidden H [5, 5] linear from X all;\n"
       "hidden P [2, 2] from H max pool { InputShape = [5, 5]; KernelShape = [2, 2]; Stride = [2, 2]; }\n"
       "output O [3] from P all;\n",
       {}},
      {"overlapping",
       "input X [16];\nhidden H [4, 4] linear from X all;\n"
       "hidden P [3, 3] from H max pool { InputShape = [4, 4]; KernelShape = [2, 2]; Stride = [1, 1]; }\n"
       "output O [3] from P all;\n",
       {}}};
  for (const NetCase &net : nets) {
    SCOPED_TRACE(net.name);
    Compiled compiled = compileAndPlan(net.text, net.options);
    ASSERT_GT(compiled.plan.ops.size(), 0u);
    const plan::Plan &plan = compiled.plan;
    size_t grad = plan.ops.size();
    for (size_t i = 0; i < plan.ops.size(); ++i)
      if (plan.ops[i].kind == OpKind::MaxPoolGrad)
        grad = i;
    ASSERT_LT(grad, plan.ops.size());
    const int dx = plan.ops[grad].out[0];
    for (int64_t batch : {1, 19, 33}) {
      SCOPED_TRACE(fmt::format("batch {}", batch));
      const State initial = randomState(plan, batch, 23);
      Machine reference(plan, batch, {1, true, {}});
      std::vector<std::pair<std::string, std::unique_ptr<Machine>>> fast;
      for (const MachineKind &kind : fastKinds())
        fast.emplace_back(kindName(kind), std::make_unique<Machine>(plan, batch, kind));
      std::vector<Machine *> all{&reference};
      for (auto &f : fast)
        all.push_back(f.second.get());
      for (Machine *m : all) {
        m->restore(initial);
        m->run(0, grad);
        const State reached = reference.snapshot(); // every machine goes on from the reference's state
        m->restore(reached);
        m->write(dx, std::vector<float>(elementsOf(plan.buffers[static_cast<size_t>(dx)], batch), 7.0f));
        m->run(grad, grad + 1);
      }
      const std::vector<float> r = reference.read(dx);
      size_t sevens = 0;
      for (float v : r)
        sevens += v == 7.0f ? 1 : 0;
      EXPECT_EQ(sevens, 0u) << "the reference left inputs uncleared";
      for (auto &[name, machine] : fast)
        EXPECT_TRUE(valuesClose(name, machine->read(dx), r));
    }
  }
}

/// A backend loaded for one thread and run from another thread, whose own
/// OpenMP default may be more threads: the kernels with per-thread
/// workspace (convolution, its input gradient) still use the loaded count,
/// and the results equal a run from the loading thread (ASan in CI would
/// catch a write past the workspace).
TEST(Threads, ARunFromAnotherThreadUsesTheLoadedThreadCount) {
  Compiled c = compileAndPlan(readFile(sourcePath("examples/lenet5.net")));
  const plan::Plan &plan = c.plan;
  const int64_t batch = 5;
  const State initial = randomState(plan, batch, 11);
  Machine here(plan, batch, {1, false, {}}), there(plan, batch, {1, false, {}});
  here.restore(initial);
  there.restore(initial);
  here.run(0, plan.ops.size());
  std::thread other([&] {
    omp_set_num_threads(8);
    there.run(0, plan.ops.size());
  });
  other.join();
  for (const plan::Parameter &p : plan.parameters)
    EXPECT_TRUE(bitIdentical(p.name, there.read(p.buffer), here.read(p.buffer)));
}

/// Max pooling on ties: the forward value is the common maximum and the
/// gradient goes to the first maximal real cell in window order (firstMaxCell),
/// in the reference and in every fast table, whose lanes each decide alone.
/// Sample b's values are b everywhere except one cell per window (b + 1 in
/// odd samples), so ties and strict maxima alternate across the lanes.
TEST(MaxPool, TiesGoToTheFirstMaximalCell) {
  Compiled c = compileAndPlan("input X [16];\n"
                              "hidden H [4, 4] linear from X all;\n"
                              "hidden P [2, 2] from H max pool { InputShape = [4, 4]; KernelShape = [2, 2]; "
                              "Stride = [2, 2]; }\n"
                              "output O [2] from P all;\n");
  const plan::Plan &plan = c.plan;
  auto opOf = [&](plan::OpKind kind) {
    for (size_t i = 0; i < plan.ops.size(); ++i)
      if (plan.ops[i].kind == kind)
        return i;
    ADD_FAILURE() << "no " << plan::opName(kind);
    return size_t{0};
  };
  const size_t pool = opOf(OpKind::MaxPool), grad = opOf(OpKind::MaxPoolGrad);
  const int h = plan.ops[pool].in[0], dp = plan.ops[grad].in[0];
  const int64_t batch = 19;
  State state = randomState(plan, batch, 3);
  std::vector<float> &values = state[static_cast<size_t>(h)];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < 16; ++i) // cell (1, 1) of each window is the strict maximum in odd samples
      values[static_cast<size_t>(b * 16 + i)] = float(b) + (b % 2 && (i / 4) % 2 && i % 2 ? 1.0f : 0.0f);
  std::vector<float> &outputGradient = state[static_cast<size_t>(dp)];
  for (size_t i = 0; i < outputGradient.size(); ++i)
    outputGradient[i] = 1.0f + float(i);
  Machine reference(plan, batch, {1, true, {}});
  reference.restore(state);
  reference.run(pool, pool + 1);
  reference.run(grad, grad + 1);
  const std::vector<float> dh = reference.read(plan.ops[grad].out[0]), dpValues = reference.read(dp),
                           p = reference.read(plan.ops[pool].out[0]);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t row = i / 4, column = i % 4, window = row / 2 * 2 + column / 2;
      const bool chosen = b % 2 ? row % 2 && column % 2 : row % 2 == 0 && column % 2 == 0;
      EXPECT_EQ(dh[static_cast<size_t>(b * 16 + i)],
                chosen ? dpValues[static_cast<size_t>(b * 4 + window)] : 0.0f)
          << "sample " << b << " cell " << i;
      if (chosen) {
        EXPECT_EQ(p[static_cast<size_t>(b * 4 + window)], values[static_cast<size_t>(b * 16 + i)]);
      }
    }
  for (std::string_view set : runtime::cpu::instructionSets()) {
    SCOPED_TRACE(std::string(set));
    Machine fast(plan, batch, MachineKind{1, false, std::string(set)});
    fast.restore(state);
    fast.run(pool, pool + 1);
    fast.run(grad, grad + 1);
    EXPECT_TRUE(bitIdentical("pooled", fast.read(plan.ops[pool].out[0]), p));
    EXPECT_TRUE(bitIdentical("gradient", fast.read(plan.ops[grad].out[0]), dh));
  }
}

/// The whole training step on both tables from the same initial values;
/// every float buffer (values, gradients, parameters after the update,
/// parameter gradients, metrics) is compared at the end. Buffers are not
/// reused (the plan is built without memory reuse), so each still holds
/// what its last writer left.
TEST_P(Parity, WholeTrainingStepMatchesReference) {
  const NetCase &net = GetParam();
  Compiled compiled = compileAndPlan(net.text, net.options);
  ASSERT_GT(compiled.plan.ops.size(), 0u);
  const plan::Plan &plan = compiled.plan;
  double worst = 0;
  for (uint32_t seed : {7u, 8u}) {
    const int64_t batch = seed == 7u ? 2 : 5;
    SCOPED_TRACE(fmt::format("seed {} batch {}", seed, batch));
    const State initial = randomState(plan, batch, seed);
    Machine reference(plan, batch, {1, true, {}});
    Machine fast(plan, batch, {1, false, {}});
    reference.restore(initial);
    fast.restore(initial);
    reference.run(0, plan.ops.size());
    fast.run(0, plan.ops.size());
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      if (!isFloatData(plan.buffers[b]))
        continue;
      const std::vector<float> f = fast.read(static_cast<int>(b)), r = reference.read(static_cast<int>(b));
      EXPECT_TRUE(valuesClose(plan.buffers[b].name, f, r, {1e-3, 1e-4}));
      worst = std::max(worst, compareValues(f, r, {1e-3, 1e-4}).worstRatio);
    }
    // The metrics: loss sum close, correct count exact unless an output row
    // has a near tie (not the case for these seeds).
    const std::vector<float> mr = reference.read(plan.metrics), mf = fast.read(plan.metrics);
    EXPECT_NEAR(mf[0], mr[0], 1e-4 * std::max(1.0f, std::abs(mr[0])));
    EXPECT_EQ(mf[1], mr[1]);
    EXPECT_TRUE(std::isfinite(mr[0]));
  }
  RecordProperty("worst_ratio", std::to_string(worst));
}

/// The fast table with 1 and 2 threads from the same state: every buffer
/// bit-identical after a whole step, for the fixed networks and a few random
/// ones (the 2-thread runs are the slow part of this file on a loaded
/// 2-core machine). The loops split the batch across threads and compute
/// each sample in a fixed order; netc's dense products give each output
/// value to one thread, summed in one order. (Where the dense kernels are
/// OpenBLAS's, on the baseline set, the OpenMP build splits the output
/// matrix, not the reduction, so it is thread-count independent here too.)
TEST(ParityThreads, ThreadCountDoesNotChangeResults) {
  std::vector<NetCase> cases = fixedNetworks();
  for (uint32_t seed = 1; seed <= 4; ++seed)
    cases.push_back(randomGeometryNetwork(seed));
  for (const NetCase &net : cases) {
    SCOPED_TRACE(net.name);
    Compiled compiled = compileAndPlan(net.text, net.options);
    ASSERT_GT(compiled.plan.ops.size(), 0u);
    const plan::Plan &plan = compiled.plan;
    const int64_t batch = 4;
    const State initial = randomState(plan, batch, 99);
    Machine one(plan, batch, {1, false, {}});
    Machine two(plan, batch, {2, false, {}});
    one.restore(initial);
    two.restore(initial);
    one.run(0, plan.ops.size());
    two.run(0, plan.ops.size());
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      if (!isFloatData(plan.buffers[b]))
        continue;
      EXPECT_TRUE(
          bitIdentical(plan.buffers[b].name, two.read(static_cast<int>(b)), one.read(static_cast<int>(b))));
    }
  }
}

/// At a batch that fills the lanes, the elementwise ops (activations and
/// their gradients) split the buffer into one run of rows per thread, and
/// the ops large enough to share time their first calls on one thread and
/// on both in turn (CpuBackend's per-op choice). The seed network's forward
/// and backward pass at batch 512 then leaves every buffer bit-identical on
/// 1 and 2 threads, call after call: a row range the split dropped or wrote
/// twice would differ.
TEST(ParityThreads, ElementwiseRowsSplitOverThreadsMatchOneThread) {
  Compiled compiled = compileAndPlan(readFile(sourcePath("examples/mnist.net")), {}, {true, {}, false});
  ASSERT_GT(compiled.plan.ops.size(), 0u);
  const plan::Plan &plan = compiled.plan;
  const int64_t batch = 512; // a multiple of the lane chunk: the whole-buffer run
  const State initial = randomState(plan, batch, 17);
  // netc's own dense kernels on any instruction set: OpenBLAS's (the
  // baseline set's default) may add in another order on 2 threads.
  Machine one(plan, batch, {1, false, {}, "netc"}), two(plan, batch, {2, false, {}, "netc"});
  for (int call = 0; call < 6; ++call) { // the tuning's calls alternate 1 and 2 threads
    SCOPED_TRACE(fmt::format("call {}", call));
    for (Machine *machine : {&one, &two}) {
      machine->restore(initial);
      machine->run(0, plan.backwardEnd);
    }
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      if (isFloatData(plan.buffers[b])) {
        EXPECT_TRUE(
            bitIdentical(plan.buffers[b].name, two.read(static_cast<int>(b)), one.read(static_cast<int>(b))));
      }
    }
  }
}

/// The fast update op splits the parameter arena over the threads when each
/// gets runtime::cpu::kMinUpdatePerThread elements (the fixed networks above
/// are too small for it): for the seed network and LeNet-5, under every
/// optimizer variant, the update ops of three training steps (so the
/// optimizer state is not zero) on 1 and 2 threads leave every buffer
/// bit-identical. Each step's forward and backward pass runs on one thread
/// and its state goes to both machines before their update: the matrix
/// products may add in another order on 2 threads (OpenBLAS does on some
/// processors: AVX2 kernels split a product of 3 samples differently), and
/// only the update's split is under test. (One thread updates the whole
/// arena in one call, the path the op-by-op parity above and OptimizerTest
/// hold to the references; a range the split dropped or updated twice would
/// differ.)
TEST(ParityThreads, UpdateSplitOverThreadsMatchesOneThread) {
  std::vector<std::pair<std::string, plan::UpdateRule>> rules;
  plan::UpdateRule rule;
  rules.emplace_back("sgd", rule);
  rule.hyper.momentum = 0.9f;
  rules.emplace_back("sgd momentum", rule);
  rule.hyper.nesterov = true;
  rules.emplace_back("sgd nesterov", rule);
  rule = {};
  rule.optimizer = plan::OptimizerKind::Adam;
  rule.hyper.weightDecay = 0.01f;
  rules.emplace_back("adam", rule);
  rule.optimizer = plan::OptimizerKind::AdaDelta;
  rules.emplace_back("adadelta", rule);
  for (const char *example : {"examples/mnist.net", "examples/lenet5.net"})
    for (const auto &[name, update] : rules) {
      SCOPED_TRACE(fmt::format("{}, {}", example, name));
      Compiled compiled = compileAndPlan(readFile(sourcePath(example)), {}, {true, update, false});
      ASSERT_GT(compiled.plan.ops.size(), 0u);
      const plan::Plan &plan = compiled.plan;
      int64_t trained = 0;
      for (const plan::Op &op : plan.ops)
        if (op.kind == OpKind::Update)
          trained = op.get<plan::UpdateAttrs>().count;
      ASSERT_GE(trained, 2 * runtime::cpu::kMinUpdatePerThread) << "the update would not be split";
      const int64_t batch = 3;
      const State initial = randomState(plan, batch, 5);
      Machine one(plan, batch, {1, false, {}}), two(plan, batch, {2, false, {}});
      one.restore(initial);
      for (int64_t step = 1; step <= 3; ++step) {
        one.run(0, plan.backwardEnd, 0.01f, step);
        two.restore(one.snapshot());
        for (Machine *machine : {&one, &two})
          machine->run(plan.backwardEnd, plan.updateEnd, 0.01f, step);
      }
      for (size_t b = 0; b < plan.buffers.size(); ++b) {
        if (!isFloatData(plan.buffers[b]))
          continue;
        EXPECT_TRUE(
            bitIdentical(plan.buffers[b].name, two.read(static_cast<int>(b)), one.read(static_cast<int>(b))));
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Networks, Parity, ::testing::ValuesIn(parityCases()), netCaseName<NetCase>);

/// The corpus exercises every op of Ops.def, every canonical kernel of
/// KernelKinds.def, every output function on an activate op, and the three
/// losses; the random geometries compile (their counts, computed by the
/// test from D7-D9, agree with the compiler's).
TEST(ParityCoverage, CorpusCoversEveryOpKernelAndFunction) {
  std::set<OpKind> ops;
  std::set<ir::KernelKind> kernels;
  std::set<ir::Activation> functions;
  std::vector<NetCase> cases = parityCases(), split = splitPartCases();
  cases.insert(cases.end(), split.begin(), split.end());
  for (const NetCase &net : cases) {
    Compiled compiled = compileAndPlan(net.text, net.options, planOptionsOf(net));
    for (const plan::Op &op : compiled.plan.ops) {
      ops.insert(op.kind);
      if (std::holds_alternative<plan::ConvAttrs>(op.attrs))
        kernels.insert(op.get<plan::ConvAttrs>().kernel);
      if (op.kind == OpKind::Activate)
        functions.insert(op.get<plan::ActivationAttrs>().function);
    }
    for (const ir::Layer &layer : compiled.network().layers) {
      for (const ir::Bundle &bundle : layer.bundles)
        kernels.insert(bundle.lowering.kernel);
      // A linear layer has no activate op: its pre-activation buffer is its values.
      if (layer.kind != ir::LayerKind::Input && layer.function == ir::Activation::Linear)
        functions.insert(ir::Activation::Linear);
    }
  }
  // The communication ops have no kernels to compare (a backend runs them
  // through its communicator: tests/distributed).
#define OP(Id, Name, Role, Backward)                                                                         \
  if (plan::OpRole::Role != plan::OpRole::Communication) {                                                   \
    EXPECT_TRUE(ops.count(OpKind::Id)) << "no network runs op " << Name;                                     \
  }
#include "codegen/Ops.def"
#undef OP
#define KERNEL_KIND(Id, Spelling, Description)                                                               \
  EXPECT_TRUE(kernels.count(ir::KernelKind::Id)) << "no network lowers to " << Spelling;
#include "ir/KernelKinds.def"
#undef KERNEL_KIND
#define ACTIVATION(Id, Spelling)                                                                             \
  EXPECT_TRUE(functions.count(ir::Activation::Id)) << "no network applies " << Spelling;
#include "ir/Activations.def"
#undef ACTIVATION
}

} // namespace
} // namespace netc::numeric
