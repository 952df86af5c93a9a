// DataParallelPlanTest.cpp -- the communication ops of a data-parallel plan
// (codegen/PlanCommunication.cpp): an all-reduce right after the op that
// finishes each gradient bucket (so the exchange overlaps the rest of the
// backward pass), a wait ending the backward range, the indices that name
// ops moved with them; local SGD's averaging after the update; and the
// CPU backend running them through a communicator (one process: a local one).
#include "api/NetworkImpl.h"
#include "codegen/Codegen.h"
#include "netc/netc.h"
#include "runtime/comm/LocalCommunicator.h"
#include "runtime/cpu/CpuBackend.h"

#include <gtest/gtest.h>

namespace netc {
namespace {

const ir::Network &network(const std::string &file, std::optional<Network> &holder) {
  CompileResult r = compileFile(std::string(NETC_SOURCE_DIR) + "/" + file);
  EXPECT_TRUE(r.network) << r.formattedDiagnostics;
  holder = std::move(r.network);
  return holder->impl().network;
}

plan::Plan build(const std::string &file, plan::ReplicaSync sync, int64_t bucketBytes,
                 bool accumulate = false) {
  std::optional<Network> holder;
  const ir::Network &net = network(file, holder);
  plan::PlanOptions options;
  options.update.hyper.momentum = 0.9f;
  options.bucketBytes = bucketBytes;
  options.replicaSync = sync;
  options.accumulateGradients = accumulate;
  auto plan = plan::buildPlan(net, options);
  EXPECT_TRUE(plan) << plan.message();
  return std::move(*plan);
}

TEST(DataParallelPlan, EachBucketIsAllReducedRightAfterItsLastGradient) {
  // Small buckets: lenet5's parameters fall into several.
  for (bool accumulate : {false, true}) {
    const plan::Plan p =
        build("examples/lenet5.net", plan::ReplicaSync::AllReduceGradients, 4096, accumulate);
    ASSERT_GT(p.buckets.size(), 2u);
    EXPECT_EQ(p.replicaSync, plan::ReplicaSync::AllReduceGradients);
    for (size_t b = 0; b < p.buckets.size(); ++b) {
      const size_t at = p.buckets[b].readyAfter + 1;
      ASSERT_LT(at, p.ops.size());
      // The bucket's all-reduce follows its ready op (after the all-reduces of earlier buckets ready there).
      size_t k = at;
      while (p.ops[k].kind == plan::OpKind::AllReduce && p.ops[k].get<plan::CommAttrs>().bucket != int(b))
        ++k;
      const plan::Op &op = p.ops[k];
      ASSERT_EQ(op.kind, plan::OpKind::AllReduce) << "bucket " << b;
      const plan::CommAttrs &a = op.get<plan::CommAttrs>();
      EXPECT_EQ(a.bucket, int(b));
      EXPECT_EQ(a.offset, p.buckets[b].offset);
      EXPECT_EQ(a.count, p.buckets[b].count);
      EXPECT_FALSE(a.mean);
      EXPECT_EQ(op.in, std::vector<int>{p.gradientArena});
      EXPECT_LT(k, p.backwardEnd);
      EXPECT_GE(k, p.lossEnd);
    }
    // Every trained parameter's gradient is final at a backward op, before its bucket's all-reduce.
    for (const plan::Parameter &param : p.parameters) {
      if (param.trained) {
        EXPECT_EQ(plan::opRole(p.ops[param.readyAfter].kind), plan::OpRole::Backward) << param.name;
      }
    }
    // One wait ends the backward range; the update follows it.
    EXPECT_EQ(p.ops[p.backwardEnd - 1].kind, plan::OpKind::AllReduceWait);
    EXPECT_EQ(p.ops[p.backwardEnd].kind, plan::OpKind::Update);
    EXPECT_EQ(p.updateEnd, p.ops.size());
    int allReduces = 0;
    for (const plan::Op &op : p.ops)
      allReduces += op.kind == plan::OpKind::AllReduce;
    EXPECT_EQ(allReduces, int(p.buckets.size()));
    if (accumulate) {
      EXPECT_EQ(p.ops[0].kind, plan::OpKind::ZeroGradients);
    }
    EXPECT_NE(plan::printPlan(p).find("replicas all-reduce-gradients"), std::string::npos);
  }
}

TEST(DataParallelPlan, OnlyDataParallelPlansCommunicate) {
  const plan::Plan p = build("examples/mnist.net", plan::ReplicaSync::None, plan::kDefaultBucketBytes);
  for (const plan::Op &op : p.ops)
    EXPECT_NE(plan::opRole(op.kind), plan::OpRole::Communication);
  EXPECT_EQ(p.updateEnd, p.ops.size());
  EXPECT_EQ(plan::printPlan(p).find("replicas"), std::string::npos);
}

TEST(DataParallelPlan, LocalSgdAveragesParametersAndStateAfterTheUpdate) {
  const plan::Plan p =
      build("examples/mnist.net", plan::ReplicaSync::AverageReplicas, plan::kDefaultBucketBytes);
  ASSERT_EQ(p.stateArenas.size(), 1u); // momentum
  ASSERT_EQ(p.ops.size(), p.updateEnd + 3);
  EXPECT_EQ(p.ops[p.updateEnd - 1].kind, plan::OpKind::Update);
  for (size_t i = 0; i < 2; ++i) {
    const plan::Op &op = p.ops[p.updateEnd + i];
    ASSERT_EQ(op.kind, plan::OpKind::AllReduce);
    EXPECT_TRUE(op.get<plan::CommAttrs>().mean);
    EXPECT_EQ(op.get<plan::CommAttrs>().count, p.trainedElements);
    EXPECT_EQ(op.in[0], i == 0 ? p.parameterArena : p.stateArenas[0]);
  }
  EXPECT_EQ(p.ops.back().kind, plan::OpKind::AllReduceWait);
  for (size_t i = 0; i < p.updateEnd; ++i)
    EXPECT_NE(plan::opRole(p.ops[i].kind), plan::OpRole::Communication) << "no all-reduce inside the step";
  EXPECT_EQ(plan::communicationName(p, p.ops[p.updateEnd]),
            "all-reduce of the parameters (127,808 values, averaging the replicas)");
}

TEST(DataParallelPlan, TheCpuBackendRunsCommunicationThroughItsCommunicator) {
  const plan::Plan p =
      build("examples/mnist.net", plan::ReplicaSync::AverageReplicas, plan::kDefaultBucketBytes);
  auto backend = runtime::makeCpuBackend({1, 0, ""});
  ASSERT_TRUE(backend->load(p, 4).ok());
  // Without a communicator a communication op is refused, not skipped.
  Status unattached = backend->run(p.updateEnd, p.ops.size(), 1);
  ASSERT_FALSE(unattached);
  EXPECT_NE(unattached.message().find("needs a communicator"), std::string::npos) << unattached.message();
  // One process: the mean over one replica leaves the parameters as they are.
  auto comm = comm::makeLocalCommunicator();
  backend->attach(comm.get());
  std::vector<float> before(static_cast<size_t>(p.arenaElements), 0.25f);
  backend->write(p.parameterArena, before);
  ASSERT_TRUE(backend->run(p.updateEnd, p.ops.size(), 1).ok());
  std::vector<float> after(before.size());
  backend->read(p.parameterArena, after);
  EXPECT_EQ(after, before);
}

} // namespace
} // namespace netc
