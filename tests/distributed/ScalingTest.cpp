// ScalingTest.cpp -- the settings of data-parallel runs: --sync, --lr-scaling
// and --lr-warmup as the public API parses and spells them, --deterministic's
// refusals, (the messages
// netc train prints), the factors and the warm-up's ramp in closed form, and
// trainNetwork's refusal of values set by hand before it reads anything.
#include "netc/Training.h"
#include "runtime/optim/Schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace netc {
namespace {

TEST(Scaling, Sync) {
  EXPECT_EQ(*parseSync("allreduce"), Sync{});
  EXPECT_EQ(*parseSync("local-sgd:8"), (Sync{Sync::Kind::LocalSgd, 8}));
  for (const char *bad :
       {"", "local-sgd", "local-sgd:", "local-sgd:0", "local-sgd:-2", "local-sgd:2x", "ring"}) {
    Parsed<Sync> p = parseSync(bad);
    EXPECT_FALSE(p) << bad;
    EXPECT_EQ(p.error,
              std::string("--sync '") + bad +
                  "': expected allreduce (every step's gradients summed over the ranks) or local-sgd:H "
                  "(the replicas averaged every H >= 1 steps)");
  }
  for (const Sync &s : {Sync{}, Sync{Sync::Kind::LocalSgd, 3}})
    EXPECT_EQ(*parseSync(syncText(s)), s);
}

TEST(Scaling, LrScaling) {
  EXPECT_EQ(*parseLrScaling("none"), LrScaling::None);
  EXPECT_EQ(*parseLrScaling("linear"), LrScaling::Linear);
  EXPECT_EQ(*parseLrScaling("sqrt"), LrScaling::Sqrt);
  EXPECT_EQ(parseLrScaling("square").error,
            "--lr-scaling 'square': expected none, linear (the learning rate times the ranks) or sqrt (times "
            "their square root)");
  EXPECT_EQ(optim::lrScaleFactor(optim::LrScaling::None, 8), 1);
  EXPECT_EQ(optim::lrScaleFactor(optim::LrScaling::Linear, 8), 8);
  EXPECT_DOUBLE_EQ(optim::lrScaleFactor(optim::LrScaling::Sqrt, 8), std::sqrt(8.0));
}

TEST(Scaling, Warmup) {
  EXPECT_EQ(*parseLrWarmup("5"), (LrWarmup{5, false}));
  EXPECT_EQ(*parseLrWarmup("0.5epochs"), (LrWarmup{0.5, false}));
  EXPECT_EQ(*parseLrWarmup("300steps"), (LrWarmup{300, true}));
  for (const char *bad : {"", "0", "-1", "steps", "2.5steps", "0steps", "5 epochs", "inf", "nan", "1e400"}) {
    Parsed<LrWarmup> p = parseLrWarmup(bad);
    EXPECT_FALSE(p) << bad;
    EXPECT_NE(p.error.find(std::string("--lr-warmup '") + bad + "'"), std::string::npos) << p.error;
  }
  EXPECT_EQ(lrWarmupText({5, false}), "5epochs");
  EXPECT_EQ(lrWarmupText({300, true}), "300steps");
  EXPECT_EQ(optim::warmupSteps({2, false}, 63), 126);
  EXPECT_EQ(optim::warmupSteps({0.5, false}, 63), 32);
  EXPECT_EQ(optim::warmupSteps({40, true}, 63), 40);
  EXPECT_EQ(optim::warmupSteps({}, 63), 0);
}

TEST(Scaling, WarmupRamp) {
  // Scaled 4x: from the unscaled rate (1/4) to the full one over 10 steps.
  EXPECT_DOUBLE_EQ(optim::warmupFactor(10, 4, 1), 0.25 + 0.75 * 0.1);
  EXPECT_DOUBLE_EQ(optim::warmupFactor(10, 4, 5), 0.25 + 0.75 * 0.5);
  EXPECT_EQ(optim::warmupFactor(10, 4, 10), 1);
  EXPECT_EQ(optim::warmupFactor(10, 4, 11), 1);
  // Unscaled: from 1/10 of the rate.
  EXPECT_DOUBLE_EQ(optim::warmupFactor(10, 1, 1), 0.1);
  EXPECT_DOUBLE_EQ(optim::warmupFactor(10, 1, 7), 0.7);
  // No warm-up.
  EXPECT_EQ(optim::warmupFactor(0, 4, 1), 1);
}

TEST(Scaling, TrainNetworkRefusesBadValuesBeforeReadingAnything) {
  TrainSettings s;
  s.dataDir = "/nonexistent";
  s.commTimeout = 0;
  TrainResult r = trainNetwork("/nonexistent.net", s);
  EXPECT_EQ(r.failure, FailureKind::Usage);
  EXPECT_EQ(r.error, "--comm-timeout must be a positive number of seconds up to 86400, got 0");
  s.commTimeout = 60;
  s.sync = {Sync::Kind::LocalSgd, 0};
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_EQ(r.error, "--sync local-sgd:H needs H >= 1, got 0");
  s.sync = {};
  s.launch = {2, 2, 0, 1, "mpirun", ""};
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_EQ(r.error, "the launch says rank 2 of 2 (local rank 0 of 1), which do not fit together");
  s.launch = {};
  s.lrWarmup = {-1, false};
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_NE(r.error.find("--lr-warmup '-1epochs'"), std::string::npos) << r.error;
  s.lrWarmup = {};
  s.deterministicChunks = 6;
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_EQ(r.error, "--deterministic takes a power of two of chunks from 1 to 1024, got 6");
  s.deterministicChunks = 4;
  s.launch = {0, 8, 0, 8, "mpirun", ""};
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_EQ(r.error,
            "--deterministic 4 shares its 4 chunks among the ranks, which 8 ranks cannot: run on 1, 2 or "
            "4 ranks");
  s.launch = {};
  s.accumulate = 2;
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_NE(r.error.find("--deterministic and --accumulate exclude each other"), std::string::npos)
      << r.error;
  s.accumulate = 1;
  s.sync = {Sync::Kind::LocalSgd, 4};
  r = trainNetwork("/nonexistent.net", s);
  EXPECT_NE(r.error.find("--sync local-sgd has no such step"), std::string::npos) << r.error;
}

} // namespace
} // namespace netc
