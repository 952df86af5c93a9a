// NcclCallsTest.cpp -- what netc asks of NCCL, without a GPU
// (runtime/cuda/NcclCalls.h): the job id's text and its parse (round
// trips; every malformed text refused with its length or the first bad
// character; 5,000 seeded mutations of a valid id never accepted unless
// they are an id), NCCL's numbers for netc's types and reductions, and the
// collectives of a data-parallel step -- one sum per gradient bucket with
// the bucket's offset and count in the gradient arena, in the plan's order,
// joined before the update; local SGD's averages; a range that cuts a join
// off, or holds a join alone; a range's collectives found in the plan's; a plan
// whose all-reduce leaves its buffer. StepLaunches in NCCL mode
// pins the seed network's collectives.
#include "PlanHarness.h"
#include "TestNetworks.h"

#include "runtime/cuda/NcclCalls.h"
#include "runtime/cuda/StepLaunches.h"

#include <gtest/gtest.h>

#include <random>

namespace netc::numeric {
namespace {

using runtime::cuda::NcclCollective;
using runtime::cuda::NcclId;
using runtime::cuda::NcclReduction;
using runtime::cuda::NcclType;

NcclId sampleId() {
  NcclId id{};
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<uint8_t>(i * 37 + 11);
  return id;
}

TEST(NcclCalls, AnIdRoundTripsThroughItsText) {
  const NcclId id = sampleId();
  const std::string text = runtime::cuda::formatNcclId(id);
  ASSERT_EQ(text.size(), 256u);
  EXPECT_EQ(text.substr(0, 8), "0b30557a");
  auto back = runtime::cuda::parseNcclId(text, "NETC_NCCL_ID");
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, id);
  std::string upper = text;
  for (char &c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto fromUpper = runtime::cuda::parseNcclId(upper, "NETC_NCCL_ID");
  ASSERT_TRUE(fromUpper);
  EXPECT_EQ(*fromUpper, id);
}

TEST(NcclCalls, AMalformedIdIsRefusedWhereItIsWrong) {
  const std::string text = runtime::cuda::formatNcclId(sampleId());
  auto refusal = [](std::string_view t) {
    auto id = runtime::cuda::parseNcclId(t, "NETC_NCCL_ID");
    EXPECT_FALSE(id) << "accepted";
    return id ? std::string() : id.message();
  };
  EXPECT_EQ(refusal(text.substr(0, 255)),
            "NETC_NCCL_ID has 255 characters, but an NCCL unique id is 256 hexadecimal digits: it comes from "
            "the netc that started this rank (--gpus), so run that netc again");
  EXPECT_NE(refusal("").find("has 0 characters"), std::string::npos);
  std::string bad = text;
  bad[16] = 'g';
  EXPECT_EQ(refusal(bad), "NETC_NCCL_ID: character 17 is 'g', not a hexadecimal digit");
  bad[16] = '\n';
  EXPECT_EQ(refusal(bad), "NETC_NCCL_ID: character 17 is byte 0x0a, not a hexadecimal digit");
}

TEST(NcclCalls, SeededMutationsOfAnIdAreAcceptedOnlyAsIds) {
  const std::string valid = runtime::cuda::formatNcclId(sampleId());
  std::mt19937 rng(20261126);
  int accepted = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string t = valid;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = t.empty() ? 0 : rng() % t.size();
      switch (rng() % 4) {
      case 0: // any byte
        if (!t.empty())
          t[at] = static_cast<char>(rng() % 256);
        break;
      case 1: t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng() % 256)); break;
      case 2:
        if (!t.empty())
          t.erase(at, 1);
        break;
      default: t.resize(rng() % (t.size() + 1));
      }
    }
    auto id = runtime::cuda::parseNcclId(t, "NETC_NCCL_ID");
    bool isId = t.size() == 256;
    for (char c : t)
      isId = isId && std::isxdigit(static_cast<unsigned char>(c));
    ASSERT_EQ(id.ok(), isId) << "trial " << trial;
    if (id) {
      ++accepted;
      std::string lower = t;
      for (char &c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_EQ(runtime::cuda::formatNcclId(*id), lower);
    } else {
      EXPECT_TRUE(id.message().starts_with("NETC_NCCL_ID")) << id.message();
    }
  }
  EXPECT_GT(accepted, 0); // hex-for-hex replacements: the mutations reach the accepting path too
}

TEST(NcclCalls, TypesAndReductionsAreNcclsNumbers) {
  // nccl.h: ncclUint8 1, ncclInt64 4, ncclFloat32 7, ncclFloat64 8; ncclSum 0, ncclMax 2, ncclAvg 4.
  EXPECT_EQ(int(runtime::cuda::ncclTypeOf(comm::DataType::U8)), 1);
  EXPECT_EQ(int(runtime::cuda::ncclTypeOf(comm::DataType::I64)), 4);
  EXPECT_EQ(int(runtime::cuda::ncclTypeOf(comm::DataType::F32)), 7);
  EXPECT_EQ(int(runtime::cuda::ncclTypeOf(comm::DataType::F64)), 8);
  EXPECT_EQ(int(runtime::cuda::ncclReductionOf(comm::ReduceOp::Sum)), 0);
  EXPECT_EQ(int(runtime::cuda::ncclReductionOf(comm::ReduceOp::Max)), 2);
  EXPECT_EQ(int(NcclReduction::Avg), 4);
}

Compiled dataParallel(const char *example, plan::ReplicaSync sync, int64_t bucketBytes) {
  plan::PlanOptions options{true, {}, false};
  options.replicaSync = sync;
  options.bucketBytes = bucketBytes;
  options.update.hyper.momentum = 0.9f;
  return compileAndPlan(readFile(sourcePath(example)), {}, options);
}

TEST(NcclCalls, EachGradientBucketIsSummedWhereThePlanPutsIt) {
  for (int64_t bucketBytes : {int64_t{1} << 30, int64_t{64} << 10, int64_t{4} << 10}) {
    SCOPED_TRACE(bucketBytes);
    Compiled c = dataParallel("examples/lenet5.net", plan::ReplicaSync::AllReduceGradients, bucketBytes);
    const plan::Plan &p = c.plan;
    auto collectives = runtime::cuda::ncclCollectives(p, 0, p.ops.size());
    ASSERT_TRUE(collectives) << collectives.message();
    ASSERT_EQ(collectives->size(), p.buckets.size() + 1);
    for (size_t b = 0; b < p.buckets.size(); ++b) {
      const NcclCollective &k = (*collectives)[b];
      EXPECT_EQ(k.kind, NcclCollective::Kind::AllReduce);
      EXPECT_EQ(k.op, p.buckets[b].readyAfter + 1); // right after the op that finishes it
      EXPECT_EQ(k.buffer, p.gradientArena);
      EXPECT_EQ(k.offset, p.buckets[b].offset);
      EXPECT_EQ(k.count, p.buckets[b].count);
      EXPECT_EQ(k.type, NcclType::Float32);
      EXPECT_EQ(k.reduction, NcclReduction::Sum); // the loss is scaled by the global batch already
      EXPECT_EQ(k.bucket, static_cast<int>(b));
    }
    EXPECT_EQ(collectives->back().kind, NcclCollective::Kind::Join);
    EXPECT_EQ(collectives->back().op + 1, p.backwardEnd); // the wait ends the backward range
    EXPECT_TRUE(runtime::cuda::joinsEveryAllReduce(*collectives));
    int64_t reduced = 0;
    for (const plan::Bucket &b : p.buckets)
      reduced += b.count;
    EXPECT_EQ(reduced, p.buffers[size_t(p.gradientArena)].fixed); // every gradient, once
  }
}

TEST(NcclCalls, LocalSgdAveragesTheReplicas) {
  Compiled c = dataParallel("examples/mnist.net", plan::ReplicaSync::AverageReplicas, 1 << 20);
  auto collectives = runtime::cuda::ncclCollectives(c.plan, c.plan.updateEnd, c.plan.ops.size());
  ASSERT_TRUE(collectives) << collectives.message();
  ASSERT_GE(collectives->size(), 2u);
  for (size_t i = 0; i + 1 < collectives->size(); ++i) {
    EXPECT_EQ((*collectives)[i].reduction, NcclReduction::Avg);
    EXPECT_EQ((*collectives)[i].bucket, -1);
  }
  EXPECT_EQ(collectives->back().kind, NcclCollective::Kind::Join);
}

TEST(NcclCalls, ARangeWithoutItsJoinCannotBeOneGraph) {
  Compiled c = dataParallel("examples/mnist.net", plan::ReplicaSync::AllReduceGradients, 1 << 20);
  auto whole = runtime::cuda::ncclCollectives(c.plan, 0, c.plan.ops.size());
  ASSERT_TRUE(whole);
  const size_t firstAllReduce = whole->front().op;
  auto cut = runtime::cuda::ncclCollectives(c.plan, 0, firstAllReduce + 1);
  ASSERT_TRUE(cut);
  EXPECT_FALSE(runtime::cuda::joinsEveryAllReduce(*cut));
  // The wait run on its own (the trainer's empty step): it joins all-reduces
  // issued outside the range.
  const size_t wait = whole->back().op;
  auto lone = runtime::cuda::ncclCollectives(c.plan, wait, wait + 1);
  ASSERT_TRUE(lone);
  ASSERT_EQ(lone->size(), 1u);
  EXPECT_FALSE(runtime::cuda::joinsEveryAllReduce(*lone));
  auto none = runtime::cuda::ncclCollectives(c.plan, 0, 1);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(runtime::cuda::joinsEveryAllReduce(*none));
}

TEST(NcclCalls, ARangesCollectivesAreARunOfThePlans) {
  Compiled c = dataParallel("examples/lenet5.net", plan::ReplicaSync::AllReduceGradients, 4 << 10);
  const size_t n = c.plan.ops.size();
  auto all = runtime::cuda::ncclCollectives(c.plan, 0, n);
  ASSERT_TRUE(all);
  ASSERT_GE(all->size(), 3u);
  for (size_t first = 0; first <= n; first += 3)
    for (size_t last = first; last <= n + 1; last += 2) {
      auto direct = runtime::cuda::ncclCollectives(c.plan, first, last);
      ASSERT_TRUE(direct);
      const auto run = runtime::cuda::collectivesIn(*all, first, last);
      EXPECT_EQ(std::vector<NcclCollective>(run.begin(), run.end()), *direct) << first << ".." << last;
    }
}

TEST(NcclCalls, AnAllReduceOutsideItsBufferIsRefused) {
  Compiled c = dataParallel("examples/mnist.net", plan::ReplicaSync::AllReduceGradients, 1 << 20);
  for (plan::Op &op : c.plan.ops)
    if (op.kind == plan::OpKind::AllReduce) {
      std::get<plan::CommAttrs>(op.attrs).count += 1;
      break;
    }
  auto collectives = runtime::cuda::ncclCollectives(c.plan, 0, c.plan.ops.size());
  ASSERT_FALSE(collectives);
  EXPECT_NE(collectives.message().find("lie outside its buffer"), std::string::npos) << collectives.message();
}

TEST(NcclCalls, TheSeedNetworksDataParallelStepIsPinned) {
  // One bucket (the default 25 MiB holds every gradient): summed after the
  // last backward op that writes a gradient, joined before the update.
  Compiled c = dataParallel("examples/mnist.net", plan::ReplicaSync::AllReduceGradients, 25 << 20);
  auto launches = runtime::cuda::stepLaunches(c.plan, 128, 0, c.plan.updateEnd, true, true);
  ASSERT_TRUE(launches) << launches.message();
  std::vector<runtime::cuda::StepLaunch> communication;
  for (const runtime::cuda::StepLaunch &l : *launches)
    if (l.kind == runtime::cuda::StepLaunch::Kind::Collective ||
        l.kind == runtime::cuda::StepLaunch::Kind::Join)
      communication.push_back(l);
  EXPECT_EQ(
      runtime::cuda::formatLaunches(c.plan, communication),
      "#25 all-reduce (gradients): ncclAllReduce sum float32 [0, +127808) of gradients (bucket 0) x127808\n"
      "#26 all-reduce-wait: compute stream waits for the all-reduces\n");
  // 127,808: the seed network's 127,495 parameters, each tensor aligned to 64 floats.
  EXPECT_EQ(c.plan.buffers[size_t(c.plan.gradientArena)].fixed, 127808);
  // Through the host instead: the same ops, split out of the graph.
  auto host = runtime::cuda::stepLaunches(c.plan, 128, 0, c.plan.updateEnd, true, false);
  ASSERT_TRUE(host);
  int staged = 0;
  for (const runtime::cuda::StepLaunch &l : *host)
    staged += l.kind == runtime::cuda::StepLaunch::Kind::AllReduce;
  EXPECT_EQ(staged, 2);
}

} // namespace
} // namespace netc::numeric
