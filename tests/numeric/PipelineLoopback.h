// PipelineLoopback.h -- pipeline stages inside one test process
// (PipelineStagesTest.cpp and SplitPartsTest.cpp on CPU backends, tests/gpu
// on the CUDA backend): an in-memory communicator for the stages' sends and
// receives, and a driver that runs every stage's schedule, each action as
// soon as what it receives has been sent; a small network whose skip
// connections cross the cuts (values forwarded through a stage); and a
// plan loaded on a one-thread CPU backend with its tensors read back.
// Header-only.
#pragma once

#include "codegen/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace netc::numeric {

/// A loaded plan on a one-thread CPU backend (the plan stays where the
/// backend was loaded with it, however the StageMachine moves).
struct StageMachine {
  std::unique_ptr<plan::Plan> held;
  std::unique_ptr<runtime::Backend> backend;
  const plan::Plan &plan;
  StageMachine(plan::Plan built, std::unique_ptr<runtime::Backend> b)
      : held(std::make_unique<plan::Plan>(std::move(built))), backend(std::move(b)), plan(*held) {}
};

/// `built` loaded for batches of `batch` on the fast CPU kernels, or the reference ones.
inline StageMachine loadStageMachine(plan::Plan built, int64_t batch, bool reference = false) {
  StageMachine m(std::move(built), runtime::makeCpuBackend({1, 0, {}}, reference));
  Status loaded = m.backend->load(m.plan, batch);
  EXPECT_TRUE(loaded) << loaded.message();
  return m;
}

/// Every parameter's values and optimizer state, by name ("NAME.stateS").
inline std::map<std::string, std::vector<float>> tensorsOf(const StageMachine &m) {
  std::map<std::string, std::vector<float>> out;
  for (const plan::Parameter &p : m.plan.parameters) {
    std::vector<float> values(static_cast<size_t>(p.count));
    m.backend->read(p.buffer, values);
    out[p.name] = values;
    for (size_t s = 0; s < p.state.size(); ++s) {
      m.backend->read(p.state[s], values);
      out[fmt::format("{}.state{}", p.name, s)] = values;
    }
  }
  return out;
}

/// Layers read two and three layers later: cut at C (or B and D), values
/// and gradients pass through the stages in between.
inline constexpr const char *kSkipNet = R"(input In [16];
hidden A [12] tanh from In all;
hidden B [10] sigmoid from A all;
hidden C [8] tanh { from B all; from A all; from In all; }
hidden D [8] tanh { from C all; from A all; }
output O [4] softmax { from D all; from B all; }
)";

/// The pipeline's wires: what rank `from` sent to rank `to`, in order.
struct Wires {
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queues;
};

/// Rank `rank` of a pipeline inside this process: a send is queued at
/// once; a receive takes the oldest message from its peer, and fails when
/// there is none (the test ran a stage before the one it waits for) or its
/// size differs.
class LoopbackCommunicator final : public comm::Communicator {
public:
  LoopbackCommunicator(Wires &wires, int rank, int size)
      : Communicator({}), wires_(wires), rank_(rank), size_(size) {}
  std::string_view kind() const override { return "loopback"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return rank_; }
  int localSize() const override { return size_; }
  Expected<int64_t> startAllReduce(void *, int64_t, comm::DataType, comm::ReduceOp,
                                   std::string_view what) override {
    return fail(std::string(what) + ": no all-reduce here");
  }
  Status wait(int64_t) override { return Status::success(); }
  Status broadcast(void *, int64_t, int, std::string_view what) override {
    return fail(std::string(what) + ": no broadcast here");
  }
  Status allGather(const void *, int64_t, void *, std::string_view what) override {
    return fail(std::string(what) + ": no all-gather here");
  }
  Status send(const void *data, int64_t bytes, int peer, std::string_view what) override {
    return startSend(data, bytes, peer, what).status();
  }
  Status receive(void *data, int64_t bytes, int peer, std::string_view what) override {
    return startReceive(data, bytes, peer, what).status();
  }
  Expected<int64_t> startSend(const void *data, int64_t bytes, int peer, std::string_view) override {
    const char *at = static_cast<const char *>(data);
    wires_.queues[{rank_, peer}].emplace_back(at, at + bytes);
    ++sent;
    return int64_t{0};
  }
  Expected<int64_t> startReceive(void *data, int64_t bytes, int peer, std::string_view what) override {
    auto &queue = wires_.queues[{peer, rank_}];
    if (queue.empty())
      return fail(fmt::format("{}: rank {} sent nothing", what, peer));
    if (static_cast<int64_t>(queue.front().size()) != bytes)
      return fail(fmt::format("{}: {} bytes sent, {} expected", what, queue.front().size(), bytes));
    std::memcpy(data, queue.front().data(), static_cast<size_t>(bytes));
    queue.pop_front();
    return int64_t{0};
  }
  Status barrier(std::string_view) override { return Status::success(); }
  int64_t sent = 0;

private:
  Wires &wires_;
  int rank_, size_;
};

/// A step's micro-batches: `count` of `size` samples of `plan`'s features,
/// uniform in [low, high), and class labels of its output.
struct MicroBatches {
  std::vector<std::vector<float>> features, labels;
};
inline MicroBatches randomMicroBatches(std::mt19937 &rng, const plan::Plan &plan, int64_t count, int64_t size,
                                       float low = -1.0f, float high = 1.0f) {
  std::uniform_real_distribution<float> unit(low, high);
  MicroBatches out;
  for (int64_t m = 0; m < count; ++m) {
    out.features.emplace_back(static_cast<size_t>(size * plan.featureCount));
    out.labels.emplace_back(static_cast<size_t>(size));
    for (float &v : out.features.back())
      v = unit(rng);
    for (float &v : out.labels.back())
      v = static_cast<float>(rng() % static_cast<uint32_t>(std::max<int64_t>(plan.outputNodes, 2)));
  }
  return out;
}

/// One process's step (the reference of the pipeline tests): each
/// micro-batch forward and back, the first from op 0 (zeroing the
/// accumulated gradients), the update after the last.
inline Status runAccumulating(const plan::Plan &plan, runtime::Backend &backend, const MicroBatches &batches,
                              int64_t size, const std::array<float, plan::kStepScalarCount> &scalars) {
  const size_t count = batches.features.size();
  for (size_t m = 0; m < count; ++m) {
    train::writeStepScalars(plan, backend, scalars);
    backend.writeInput(0, plan.features, batches.features[m]);
    backend.writeInput(0, plan.labels, batches.labels[m]);
    backend.fence();
    if (Status ran = backend.run(m == 0 ? 0 : plan.stepBegin,
                                 m + 1 == count ? plan.updateEnd : plan.backwardEnd, size, 0);
        !ran)
      return ran;
  }
  return Status::success();
}

/// One op of a rank's step, with what runs before it (the step scalars
/// and the inputs, before the first op of a micro-batch's pass).
struct RankOp {
  size_t op;
  int64_t batch;
  std::function<void()> before;
};

/// Runs every rank's ops in turn, one at a time (rank r: plans[r] on
/// backends[r]): a receive waits until its peer has sent (the loopback
/// queue from it holds something), so that the parts of a split layer's
/// stage exchange inside a forward or backward pass as processes would. An
/// error names the rank whose op failed, or one that waits for a message
/// that never comes.
inline Status runRanks(const std::vector<const plan::Plan *> &plans,
                       const std::vector<runtime::Backend *> &backends,
                       const std::vector<std::vector<RankOp>> &work, Wires &wires) {
  std::vector<size_t> next(plans.size(), 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (size_t r = 0; r < plans.size(); ++r)
      while (next[r] < work[r].size()) {
        const RankOp &item = work[r][next[r]];
        const plan::Op &op = plans[r]->ops[item.op];
        if (op.kind == plan::OpKind::Receive &&
            wires.queues[{op.get<plan::TransferAttrs>().peer, static_cast<int>(r)}].empty())
          break; // its peer has not sent yet
        if (item.before)
          item.before();
        if (Status s = backends[r]->run(item.op, item.op + 1, item.batch, 0, 0); !s)
          return fail(fmt::format("rank {}, op {} ({}): {}", r, item.op, plan::opName(op.kind), s.message()));
        ++next[r];
        progressed = true;
      }
  }
  for (size_t r = 0; r < plans.size(); ++r)
    if (next[r] != work[r].size())
      return fail(
          fmt::format("rank {} waits at op {} for a message that never comes", r, work[r][next[r]].op));
  return Status::success();
}

/// Runs every stage's `kind` schedule of `microBatches` micro-batches:
/// `act(stage, action)` runs one action, and an action that receives runs
/// once its neighbour has sent (the loopback queue from it holds something).
/// An error names the stage that failed, or that never got what it waits for.
inline Status runSchedules(train::PipelineScheduleKind kind, int stages, int microBatches, Wires &wires,
                           const std::function<Status(int, const train::PipelineAction &)> &act) {
  std::vector<std::vector<train::PipelineAction>> order;
  std::vector<size_t> next(size_t(stages), 0);
  for (int s = 0; s < stages; ++s)
    order.push_back(train::stageSchedule(kind, stages, s, microBatches));
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      if (next[size_t(s)] == order[size_t(s)].size())
        continue;
      const train::PipelineAction &a = order[size_t(s)][next[size_t(s)]];
      const int from = a.backward ? s + 1 : s - 1;
      if (from >= 0 && from < stages && wires.queues[{from, s}].empty())
        continue; // waits for its neighbour
      if (Status done = act(s, a); !done)
        return fail(fmt::format("stage {}: {}", s, done.message()));
      ++next[size_t(s)];
      progressed = true;
    }
  }
  for (int s = 0; s < stages; ++s)
    if (next[size_t(s)] != order[size_t(s)].size())
      return fail(fmt::format("stage {} never got what it waits for", s));
  return Status::success();
}

} // namespace netc::numeric
