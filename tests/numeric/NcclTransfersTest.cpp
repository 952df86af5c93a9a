// NcclTransfersTest.cpp -- a pipeline's sends and receives through NCCL
// (runtime/cuda/NcclCalls.h, ncclTransferRun), without a GPU: every stage
// plan's step, run as the trainer runs it (each schedule's forwards and
// backwards, the replicas' all-reduces only with the last micro-batch, the
// held sends issued before the loss verdict, then the update), is turned
// into the groups of NCCL calls the CUDA backend issues, and a simulation
// plays them under the strictest order NCCL allows: each rank runs its
// groups one after another, and a send and its receive (the k-th from one
// rank to another) complete only while both are in their ranks' current
// groups. For the seed network, LeNet-5 and a network with skip
// connections, 2 to 4 stages, 1 to 9 micro-batches and both schedules (and
// a stage whose layer is split over 2 or 3 ranks, alone or in a pipeline), every
// step must finish, and every send must meet a receive of the same layer,
// direction and size; and, on the stages' device layout, no op writes
// memory a held send reads and no receive lands where a send of its own
// group reads (memory reuse often puts a stage's received values and the
// gradient it sends back at one place). The same calls issued one group
// per run (no held sends) deadlock, which the simulation must catch. And the device layout
// of a stage's activation slots (MemoryLayout::slotOffset, where the CUDA
// backend points each micro-batch's buffers): slots never overlap each
// other or the inputs, and every buffer stays aligned.
#include "PipelineLoopback.h"
#include "PlanHarness.h"

#include "codegen/Codegen.h"
#include "codegen/Partition.h"
#include "runtime/core/MemoryLayout.h"
#include "runtime/cuda/NcclCalls.h"
#include "runtime/train/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <map>

namespace netc::numeric {
namespace {

using runtime::cuda::NcclTransfer;

/// One NCCL call of a rank, with what the simulation checks when it meets its peer's.
struct Call {
  bool send = false;
  int peer = -1;
  int64_t count = 0;
  int layer = -1; // -1: the loss verdict
  bool gradient = false;
  int64_t sequence = 0; // its place among this rank's calls to (or from) that peer
};
using Group = std::vector<Call>;

/// How a stage issues its calls: as the backend does (held sends joining the
/// next run's receives), or each run's sends at once (what deadlocks).
enum class Issue { HoldClosingSends, SendAtOnce };

class StageCalls {
public:
  StageCalls(const plan::Plan &plan, Issue issue) : plan_(plan), issue_(issue) {
    auto layout = runtime::layoutMemory(plan, 1);
    EXPECT_TRUE(layout) << layout.message();
    if (layout)
      layout_ = std::move(*layout);
  }

  /// The trainer's Backend::run(first, last, batch, slot, slot). Checks,
  /// with the device layout, that nothing writes memory a send still reads:
  /// no op while a held send waits, no receive of the send's own group.
  void run(size_t first, size_t last, int64_t batch, int slot) {
    std::vector<NcclTransfer> waiting = held_;
    auto made = runtime::cuda::ncclTransferRun(plan_, first, last, batch, slot, std::move(held_));
    ASSERT_TRUE(made) << made.message();
    for (const runtime::cuda::NcclRunPart &part : made->parts) {
      if (!part.group) {
        for (size_t i = part.first; i < part.last; ++i)
          for (int out : plan_.ops[i].out)
            for (const NcclTransfer &t : waiting)
              EXPECT_FALSE(meet(t.buffer, t.slot, out, slot))
                  << "op #" << i << " writes what a held send of op #" << t.op << " reads";
        continue;
      }
      for (const NcclTransfer &r : part.transfers)
        for (const NcclTransfer &t : part.transfers)
          if (!r.send && t.send) {
            EXPECT_FALSE(meet(t.buffer, t.slot, r.buffer, r.slot))
                << "op #" << r.op << " receives into what op #" << t.op << " sends, in one group";
          }
      if (!waiting.empty() && part.transfers.size() >= waiting.size() &&
          std::equal(waiting.begin(), waiting.end(), part.transfers.begin())) {
        heldAlone += part.transfers.size() == waiting.size() ? 1 : 0;
        waiting.clear();
      }
      add(part.transfers);
    }
    held_ = std::move(made->held);
    if (issue_ == Issue::SendAtOnce)
      finish();
  }
  /// Backend::finishTransfers: the held sends go alone.
  void finish() {
    if (!held_.empty())
      add(held_);
    held_.clear();
  }
  /// A host transfer of the communicator (the loss verdict: one float).
  void verdict(bool send, int peer) { groups.push_back({numbered({send, peer, 1, -1, false, 0})}); }

  std::vector<Group> groups;
  int heldAlone = 0; // held sends issued alone, before a run's first group

private:
  /// Whether two buffers of slots share device memory (MemoryLayout at one sample).
  bool meet(int a, int slotA, int b, int slotB) const {
    auto range = [&](int buffer, int slot) {
      const plan::Buffer &x = plan_.buffers[static_cast<size_t>(buffer)];
      const int64_t at = layout_.slotOffset(plan_, buffer, slot);
      return std::pair{at, at + (x.batchScaled() ? x.perSample : x.fixed)};
    };
    if (layout_.offset[static_cast<size_t>(a)] < 0 || layout_.offset[static_cast<size_t>(b)] < 0)
      return false; // the workspace
    const auto [a0, a1] = range(a, slotA);
    const auto [b0, b1] = range(b, slotB);
    return a0 < b1 && b0 < a1;
  }

  void add(const std::vector<NcclTransfer> &transfers) {
    Group group;
    for (const NcclTransfer &t : transfers) {
      const plan::Op &op = plan_.ops[t.op];
      const auto &a = op.get<plan::TransferAttrs>();
      EXPECT_EQ(t.peer, a.peer);
      EXPECT_EQ(t.send, op.kind == plan::OpKind::Send);
      group.push_back(numbered({t.send, t.peer, t.count, a.layer, a.gradient(), 0}));
    }
    groups.push_back(std::move(group));
  }
  Call numbered(Call c) {
    c.sequence = sequence_[{c.send, c.peer}]++;
    return c;
  }

  const plan::Plan &plan_;
  runtime::MemoryLayout layout_;
  Issue issue_;
  std::vector<NcclTransfer> held_;
  std::map<std::pair<bool, int>, int64_t> sequence_;
};

bool isReplicaSync(plan::OpKind kind) {
  return kind == plan::OpKind::AllReduce || kind == plan::OpKind::AllReduceWait;
}

/// `steps` optimizer steps of stage `stage` (its rank of the pipeline
/// plan.pipelineRank), as Trainer::runPipelineStep runs them; `judge`: the
/// rank of the last stage's first part, which gives the loss verdict.
void runSteps(StageCalls &calls, const plan::Plan &plan, train::PipelineScheduleKind kind, int stages,
              int stage, const std::vector<int64_t> &sizes, int steps, int judge) {
  const int microBatches = static_cast<int>(sizes.size());
  for (int step = 0; step < steps; ++step) {
    for (const train::PipelineAction &a : train::stageSchedule(kind, stages, stage, microBatches)) {
      const int64_t size = sizes[static_cast<size_t>(a.microBatch)];
      if (!a.backward) {
        calls.run(a.microBatch == 0 ? 0 : plan.stepBegin, plan.forwardEnd, size, a.slot);
        continue;
      }
      if (a.microBatch + 1 == microBatches) {
        calls.run(plan.forwardEnd, plan.backwardEnd, size, a.slot);
        continue;
      }
      for (size_t begin = plan.forwardEnd; begin < plan.backwardEnd;) { // Trainer::runOps
        size_t end = begin;
        while (end < plan.backwardEnd && !isReplicaSync(plan.ops[end].kind))
          ++end;
        if (end > begin)
          calls.run(begin, end, size, a.slot);
        begin = end + 1;
      }
    }
    calls.finish(); // before the last stage's verdict on the loss
    if (plan.pipelineRank == judge)
      for (int r = 0; r < judge; ++r)
        calls.verdict(true, r);
    else if (stage + 1 < stages)
      calls.verdict(false, judge);
    calls.run(plan.backwardEnd, plan.updateEnd, 1, 0);
  }
}

/// Plays every rank's groups; returns "" when all finish, else where they stuck.
std::string simulate(const std::vector<std::vector<Group>> &ranks) {
  const size_t n = ranks.size();
  std::vector<size_t> at(n, 0);
  std::vector<std::vector<bool>> done(n);
  auto enter = [&](size_t r) {
    if (at[r] < ranks[r].size())
      done[r].assign(ranks[r][at[r]].size(), false);
  };
  for (size_t r = 0; r < n; ++r)
    enter(r);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t r = 0; r < n; ++r) {
      if (at[r] >= ranks[r].size())
        continue;
      const Group &group = ranks[r][at[r]];
      for (size_t i = 0; i < group.size(); ++i) {
        const Call &c = group[i];
        const size_t p = static_cast<size_t>(c.peer);
        if (done[r][i] || c.peer < 0 || p >= n || at[p] >= ranks[p].size())
          continue;
        const Group &theirs = ranks[p][at[p]];
        for (size_t j = 0; j < theirs.size(); ++j) {
          const Call &d = theirs[j];
          if (done[p][j] || d.send == c.send || static_cast<size_t>(d.peer) != r || d.sequence != c.sequence)
            continue;
          EXPECT_EQ(c.count, d.count) << "rank " << r << " and " << p << ", call " << c.sequence;
          EXPECT_EQ(c.layer, d.layer) << "rank " << r << " and " << p << ", call " << c.sequence;
          EXPECT_EQ(c.gradient, d.gradient) << "rank " << r << " and " << p << ", call " << c.sequence;
          done[r][i] = done[p][j] = true;
          moved = true;
        }
      }
      if (std::all_of(done[r].begin(), done[r].end(), [](bool b) { return b; })) {
        ++at[r];
        enter(r);
        moved = true;
      }
    }
  }
  std::string stuck;
  for (size_t r = 0; r < n; ++r)
    if (at[r] < ranks[r].size())
      stuck += fmt::format("rank {} stuck at group {} of {}; ", r, at[r], ranks[r].size());
  return stuck;
}

struct Network {
  std::string name, text;
  std::vector<std::vector<std::string>> cuts;
};

std::vector<Network> networks() {
  return {{"mnist", readFile(sourcePath("examples/mnist.net")), {{"Hid3"}, {"Conv2", "Digit"}}},
          {"lenet5", readFile(sourcePath("examples/lenet5.net")), {{"Full3"}, {"Pool1", "Full3"}}},
          {"skip", kSkipNet, {{"C"}, {"B", "D"}, {"B", "C", "D"}}}};
}

/// Stage `stage` of `net` cut as `stageOf` (part `part` of its ranks where
/// `splitParts` splits its layers), with gradient accumulation (a
/// pipeline's), and the data-parallel all-reduces when `replicas`.
Expected<plan::Plan> stagePlan(const ir::Network &net, const std::vector<int> &stageOf, int stage,
                               bool replicas = false, const std::vector<int> &splitParts = {}, int part = 0) {
  plan::PlanOptions options;
  options.accumulateGradients = true;
  options.replicaSync = replicas ? plan::ReplicaSync::AllReduceGradients : plan::ReplicaSync::None;
  options.stageOf = stageOf;
  options.stage = stage;
  options.splitParts = splitParts;
  options.part = part;
  return plan::buildPlan(net, options);
}

/// How often held sends went alone because memory they read would be
/// written first (the plans' memory reuse makes it common).
int gHeldAlone = 0;

/// Every rank's calls for `steps` steps of `sizes` micro-batches: each
/// stage's, or each part's of a stage whose layers `splitParts` splits.
std::vector<std::vector<Group>> pipelineCalls(const ir::Network &net, const std::vector<int> &stageOf,
                                              int stages, train::PipelineScheduleKind kind,
                                              const std::vector<int64_t> &sizes, bool replicas, Issue issue,
                                              const std::vector<int> &splitParts = {}) {
  std::vector<int> widths(static_cast<size_t>(stages), 1);
  if (!splitParts.empty()) {
    auto split = plan::stageWidths(net, stageOf, splitParts);
    EXPECT_TRUE(split.ok()) << split.message();
    if (!split.ok())
      return {};
    widths = std::move(*split);
  }
  const int judge = plan::pipelineRank(widths, stages - 1, 0);
  std::vector<std::vector<Group>> out;
  for (int s = 0; s < stages; ++s)
    for (int part = 0; part < widths[size_t(s)]; ++part) {
      auto built = stagePlan(net, stageOf, s, replicas, splitParts, part);
      EXPECT_TRUE(built.ok()) << built.message();
      if (!built.ok())
        return {};
      EXPECT_EQ(built->pipelineRank, static_cast<int>(out.size()));
      built->activationSlots = built->inputSlots =
          train::activationSlots(kind, stages, s, static_cast<int>(sizes.size()));
      StageCalls calls(*built, issue);
      runSteps(calls, *built, kind, stages, s, sizes, 2, judge);
      gHeldAlone += calls.heldAlone;
      out.push_back(std::move(calls.groups));
    }
  return out;
}

TEST(NcclTransfers, EveryStepFinishesWithHeldSendsUnderEverySchedule) {
  int played = 0;
  for (const Network &n : networks()) {
    auto compiled = compileText(n.text);
    ASSERT_EQ(compiled->diags.errorCount(), 0u);
    for (const std::vector<std::string> &cuts : n.cuts) {
      auto stageOf = cost::stagesFromCuts(compiled->network, cuts);
      ASSERT_TRUE(stageOf.ok()) << stageOf.message();
      const int stages = static_cast<int>(cuts.size()) + 1;
      for (auto kind :
           {train::PipelineScheduleKind::OneForwardOneBackward, train::PipelineScheduleKind::GPipe})
        for (int m = 1; m <= 9; ++m)
          for (bool replicas : {false, true}) {
            std::vector<int64_t> sizes(static_cast<size_t>(m), 4);
            sizes.back() = 3; // a short last micro-batch: its sizes must still match
            SCOPED_TRACE(fmt::format("{} cut at {}, {}, M = {}{}", n.name, fmt::join(cuts, ","),
                                     train::pipelineScheduleName(kind), m,
                                     replicas ? ", with replicas" : ""));
            auto calls = pipelineCalls(compiled->network, *stageOf, stages, kind, sizes, replicas,
                                       Issue::HoldClosingSends);
            ASSERT_EQ(calls.size(), static_cast<size_t>(stages));
            EXPECT_EQ(simulate(calls), "");
            ++played;
          }
    }
  }
  EXPECT_EQ(played, 7 * 2 * 9 * 2);
  EXPECT_GT(gHeldAlone, 0) << "no plan put a held send's memory where something else is written next";
}

/// Stages whose layers are split over their ranks (--split): a part's
/// exchange of its values inside a forward pass, its input gradient's sum
/// passed on and taken back whole, alone or between pipeline stages, with
/// 1 to 5 micro-batches under both schedules. A part's receive of the whole
/// sum into the buffer it sent the partial sum from starts a group of its own.
TEST(NcclTransfers, SplitLayersPartsFinishEveryStep) {
  const char *text = R"(input X [5];
hidden A [6] tanh from X all;
hidden W [2050] tanh from A all;
hidden B [4] sigmoid { from W all; from A all; }
output O [3] softmax from B all;
)";
  auto compiled = compileText(text);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  const ir::Network &net = compiled->network;
  int played = 0, splitGroups = 0;
  for (const std::vector<std::string> &cuts :
       std::vector<std::vector<std::string>>{{}, {"W"}, {"B"}, {"W", "B"}})
    for (int parts : {2, 3}) {
      auto stageOf = cost::stagesFromCuts(net, cuts);
      auto splitParts = plan::splitPartsOf(net, {fmt::format("W:{}", parts)});
      ASSERT_TRUE(stageOf.ok() && splitParts.ok());
      for (auto kind :
           {train::PipelineScheduleKind::OneForwardOneBackward, train::PipelineScheduleKind::GPipe})
        for (int m = 1; m <= 5; ++m) {
          SCOPED_TRACE(fmt::format("cut at {}, W:{}, {}, M = {}", fmt::join(cuts, ","), parts,
                                   train::pipelineScheduleName(kind), m));
          const std::vector<int64_t> sizes(static_cast<size_t>(m), 3);
          auto calls = pipelineCalls(net, *stageOf, static_cast<int>(cuts.size()) + 1, kind, sizes,
                                     m % 2 == 0, Issue::HoldClosingSends, *splitParts);
          ASSERT_EQ(calls.size(), cuts.size() + static_cast<size_t>(parts));
          EXPECT_EQ(simulate(calls), "");
          for (const std::vector<Group> &rank : calls)
            for (size_t g = 1; g < rank.size(); ++g)
              splitGroups += rank[g].size() == 1 && rank[g - 1].size() == 1 && rank[g - 1][0].send &&
                             !rank[g][0].send && rank[g - 1][0].gradient && rank[g][0].gradient &&
                             rank[g - 1][0].layer == rank[g][0].layer;
          ++played;
        }
    }
  EXPECT_EQ(played, 4 * 2 * 2 * 5);
  EXPECT_GT(splitGroups, 0) << "no part's partial sum went in a group of its own before its whole came back";
}

TEST(NcclTransfers, SendsIssuedAtOnceDeadlockAndTheSimulationSaysWhere) {
  auto compiled = compileText(kSkipNet);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  auto stageOf = cost::stagesFromCuts(compiled->network, {"C"});
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  const std::vector<int64_t> sizes(4, 4);
  auto calls =
      pipelineCalls(compiled->network, *stageOf, 2, train::PipelineScheduleKind::OneForwardOneBackward, sizes,
                    false, Issue::SendAtOnce);
  ASSERT_EQ(calls.size(), 2u);
  // Stage 0 sends micro-batch 1's values, then waits for micro-batch 0's
  // gradient; stage 1 sends that gradient, then waits for micro-batch 1's values.
  EXPECT_EQ(simulate(calls), fmt::format("rank 0 stuck at group 1 of {}; rank 1 stuck at group 1 of {}; ",
                                         calls[0].size(), calls[1].size()));
  // GPipe sends every forward before the first backward: nothing crosses.
  calls = pipelineCalls(compiled->network, *stageOf, 2, train::PipelineScheduleKind::GPipe, sizes, false,
                        Issue::SendAtOnce);
  EXPECT_EQ(simulate(calls), "");
}

TEST(NcclTransfers, HeldSendsGoFirstWhenAnOpWritesTheirBuffer) {
  auto compiled = compileText(kSkipNet);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  auto stageOf = cost::stagesFromCuts(compiled->network, {"C"});
  ASSERT_TRUE(stageOf.ok());
  auto plan = stagePlan(compiled->network, *stageOf, 0);
  ASSERT_TRUE(plan.ok()) << plan.message();
  // Stage 0's forward closes with its sends: held, none issued.
  auto forward = runtime::cuda::ncclTransferRun(*plan, 0, plan->forwardEnd, 4, 1, {});
  ASSERT_TRUE(forward) << forward.message();
  ASSERT_FALSE(forward->held.empty());
  for (const NcclTransfer &t : forward->held) {
    EXPECT_TRUE(t.send);
    EXPECT_EQ(t.peer, 1);
    EXPECT_EQ(t.slot, 1);
    EXPECT_EQ(t.count, 4 * plan->buffers[static_cast<size_t>(t.buffer)].perSample);
  }
  for (const auto &part : forward->parts)
    EXPECT_FALSE(part.group);
  // Its forward again, in the same slot: its first op that writes a held
  // buffer comes after the held sends, issued alone.
  auto again = runtime::cuda::ncclTransferRun(*plan, plan->stepBegin, plan->forwardEnd, 4, 1, forward->held);
  ASSERT_TRUE(again) << again.message();
  size_t groups = 0, firstGroup = again->parts.size();
  for (size_t i = 0; i < again->parts.size(); ++i)
    if (again->parts[i].group) {
      ++groups;
      firstGroup = std::min(firstGroup, i);
    }
  ASSERT_EQ(groups, 1u);
  EXPECT_EQ(again->parts[firstGroup].transfers, forward->held);
  ASSERT_LT(firstGroup + 1, again->parts.size());
  const size_t writer = again->parts[firstGroup + 1].first;
  const std::vector<int> &out = plan->ops[writer].out;
  EXPECT_TRUE(std::any_of(
      forward->held.begin(), forward->held.end(),
      [&](const NcclTransfer &t) { return std::find(out.begin(), out.end(), t.buffer) != out.end(); }))
      << "op #" << writer;
  // Stage 0's backward opens with receives: the held sends join them.
  auto backward =
      runtime::cuda::ncclTransferRun(*plan, plan->forwardEnd, plan->backwardEnd, 4, 0, forward->held);
  ASSERT_TRUE(backward) << backward.message();
  ASSERT_FALSE(backward->parts.empty());
  ASSERT_TRUE(backward->parts.front().group);
  const std::vector<NcclTransfer> &joined = backward->parts.front().transfers;
  ASSERT_GT(joined.size(), forward->held.size());
  EXPECT_TRUE(std::equal(forward->held.begin(), forward->held.end(), joined.begin()));
  for (size_t i = forward->held.size(); i < joined.size(); ++i) {
    EXPECT_FALSE(joined[i].send);
    EXPECT_EQ(joined[i].slot, 0);
  }
  EXPECT_TRUE(backward->held.empty());
}

TEST(NcclTransfers, ATransferWithoutItsPeerIsRefused) {
  auto compiled = compileText(kSkipNet);
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  auto stageOf = cost::stagesFromCuts(compiled->network, {"C"});
  ASSERT_TRUE(stageOf.ok());
  auto plan = stagePlan(compiled->network, *stageOf, 1);
  ASSERT_TRUE(plan.ok()) << plan.message();
  for (plan::Op &op : plan->ops)
    if (op.kind == plan::OpKind::Receive) {
      plan::TransferAttrs itself = op.get<plan::TransferAttrs>();
      itself.peer = 1; // stage 1's own rank
      op.attrs = itself;
      break;
    }
  auto made = runtime::cuda::ncclTransferRun(*plan, 0, plan->ops.size(), 2, 0, {});
  ASSERT_FALSE(made);
  EXPECT_NE(made.message().find("of stage 1 of 2 has no buffer or peer rank"), std::string::npos)
      << made.message();
}

TEST(NcclTransfers, ActivationSlotsOfTheDeviceLayoutNeverOverlap) {
  auto compiled = compileText(readFile(sourcePath("examples/lenet5.net")));
  ASSERT_EQ(compiled->diags.errorCount(), 0u);
  auto stageOf = cost::stagesFromCuts(compiled->network, {"Pool1", "Full3"});
  ASSERT_TRUE(stageOf.ok()) << stageOf.message();
  for (int s = 0; s < 3; ++s) {
    auto plan = stagePlan(compiled->network, *stageOf, s);
    ASSERT_TRUE(plan.ok()) << plan.message();
    plan->activationSlots = plan->inputSlots =
        train::activationSlots(train::PipelineScheduleKind::OneForwardOneBackward, 3, s, 8);
    EXPECT_EQ(plan->activationSlots, 3 - s);
    const int64_t columns = 7;
    auto layout = runtime::layoutMemory(*plan, columns);
    ASSERT_TRUE(layout) << layout.message();
    const int64_t inputsEnd = layout->inputBegin + plan->inputSlots * layout->inputSlotElements;
    struct Range {
      int64_t begin, end;
      int slot;
      bool input;
    };
    std::vector<Range> ranges;
    for (size_t b = 0; b < plan->buffers.size(); ++b) {
      const plan::Buffer &buffer = plan->buffers[b];
      if (!buffer.batchScaled())
        continue;
      for (int slot = 0; slot < plan->activationSlots; ++slot) {
        const int64_t at = layout->slotOffset(*plan, static_cast<int>(b), slot);
        const int64_t end = at + buffer.perSample * columns;
        SCOPED_TRACE(fmt::format("stage {}, buffer {}, slot {}", s, buffer.name, slot));
        EXPECT_EQ(at % plan::kAlignElements, 0);
        if (buffer.isInput()) {
          EXPECT_GE(at, layout->inputBegin);
          EXPECT_LE(end, inputsEnd);
        } else {
          EXPECT_GE(at, slot * layout->activationSlotElements);
          EXPECT_LE(end, (slot + 1) * layout->activationSlotElements);
        }
        ranges.push_back({at, end, slot, buffer.isInput()});
      }
    }
    for (const Range &a : ranges)
      for (const Range &b : ranges)
        if (a.slot != b.slot && a.input == b.input) {
          EXPECT_TRUE(a.end <= b.begin || b.end <= a.begin)
              << "stage " << s << ": slots " << a.slot << " and " << b.slot << " overlap";
        }
    // A fixed buffer has one place, whatever the slot.
    for (size_t b = 0; b < plan->buffers.size(); ++b)
      if (!plan->buffers[b].batchScaled() && layout->offset[b] >= 0) {
        EXPECT_EQ(layout->slotOffset(*plan, static_cast<int>(b), 2), layout->offset[b]);
      }
  }
}

} // namespace
} // namespace netc::numeric
