// TrainSettingsTest.cpp -- the typed training settings of the public API
// (include/netc/Training.h): the parse functions `netc train` and the C API
// use (every accepted spelling, and the exact messages of refusals, which
// tests/golden/cli pins for the CLI), the spellings that read back, and
// trainNetwork's one check of the ranges (--accumulate, --log-every,
// --bucket-mb and typed values set by hand) before it reads anything.
#include "netc/Training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace {

using namespace netc;

TEST(TrainSettings, ParsesOptimizers) {
  EXPECT_EQ(*parseOptimizer("sgd"), Optimizer::Sgd);
  EXPECT_EQ(*parseOptimizer("adam"), Optimizer::Adam);
  EXPECT_EQ(*parseOptimizer("adadelta"), Optimizer::AdaDelta);
  Parsed<Optimizer> bad = parseOptimizer("rmsprop");
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error, "--optimizer must be one of sgd, adam, adadelta, got 'rmsprop'");
  for (Optimizer o : {Optimizer::Sgd, Optimizer::Adam, Optimizer::AdaDelta})
    EXPECT_EQ(*parseOptimizer(optimizerName(o)), o);
}

TEST(TrainSettings, ParsesInitKinds) {
  EXPECT_EQ(*parseInit("uniform"), InitKind::Uniform);
  EXPECT_EQ(*parseInit("xavier"), InitKind::Xavier);
  EXPECT_EQ(*parseInit("he"), InitKind::He);
  EXPECT_EQ(parseInit("xaviar").error, "--init must be uniform, xavier or he, got 'xaviar'");
  EXPECT_EQ(initName(InitKind::He), "he");
}

TEST(TrainSettings, ParsesSchedules) {
  EXPECT_EQ(parseSchedule("constant")->kind, Schedule::Kind::Constant);
  Schedule step = *parseSchedule("step:10:0.5");
  EXPECT_EQ(step.kind, Schedule::Kind::Step);
  EXPECT_EQ(step.stepEpochs, 10);
  EXPECT_EQ(step.gamma, 0.5f);
  EXPECT_EQ(*parseSchedule("step"), (Schedule{Schedule::Kind::Step, 30, 0.1f, 0}));
  Schedule cosine = *parseSchedule("cosine:0.001");
  EXPECT_EQ(cosine.kind, Schedule::Kind::Cosine);
  EXPECT_EQ(cosine.minLearningRate, 0.001f);
  EXPECT_EQ(parseSchedule("linear").error,
            "--schedule 'linear': unknown schedule 'linear' (expected constant, "
            "step[:EPOCHS[:GAMMA]] or cosine[:MIN_LR])");
  EXPECT_EQ(parseSchedule("step:x").error,
            "--schedule 'step:x': EPOCHS must be a positive integer, got 'x' (expected "
            "constant, step[:EPOCHS[:GAMMA]] or cosine[:MIN_LR])");
}

TEST(TrainSettings, SchedulesAreSpelledShortestAndReadBack) {
  EXPECT_EQ(scheduleText(Schedule{}), "constant");
  EXPECT_EQ(scheduleText(*parseSchedule("step")), "step");
  EXPECT_EQ(scheduleText(*parseSchedule("step:20")), "step:20");
  EXPECT_EQ(scheduleText(*parseSchedule("step:30:0.5")), "step:30:0.5");
  EXPECT_EQ(scheduleText(*parseSchedule("cosine")), "cosine");
  EXPECT_EQ(scheduleText(*parseSchedule("cosine:0.001")), "cosine:0.001");
  for (const char *text : {"step:7:0.3", "cosine:0.25", "step:1"})
    EXPECT_EQ(*parseSchedule(scheduleText(*parseSchedule(text))), *parseSchedule(text)) << text;
}

TEST(TrainSettings, ParsesNormalizers) {
  EXPECT_EQ(parseNormalize("none")->kind, Normalize::Kind::None);
  EXPECT_EQ(parseNormalize("minmax")->kind, Normalize::Kind::MinMax);
  EXPECT_EQ(parseNormalize("global-minmax")->kind, Normalize::Kind::GlobalMinMax);
  EXPECT_EQ(parseNormalize("gaussian")->kind, Normalize::Kind::Gaussian);
  EXPECT_EQ(*parseNormalize("scale:255"), (Normalize{Normalize::Kind::Scale, 255}));
  EXPECT_EQ(normalizeText(*parseNormalize("scale:255")), "scale:255");
  EXPECT_EQ(normalizeText(Normalize{}), "minmax");
  EXPECT_EQ(parseNormalize("zscore").error,
            "--normalize: unknown normalizer 'zscore'; expected none, minmax, "
            "global-minmax, gaussian or scale:S (e.g. scale:255)");
  EXPECT_FALSE(parseNormalize("scale:0"));
  EXPECT_FALSE(parseNormalize("scale"));
}

TEST(TrainSettings, DefaultsAreTheCliDefaults) {
  const TrainSettings s;
  EXPECT_EQ(s.optimizer, Optimizer::Sgd);
  EXPECT_EQ(s.schedule, Schedule{});
  EXPECT_EQ(s.init, InitKind::Uniform);
  EXPECT_FALSE(s.normalize);
  EXPECT_EQ(s.accumulate, 1);
  EXPECT_EQ(s.logEvery, 0);
  EXPECT_EQ(s.bucketMb, kDefaultBucketMb);
  EXPECT_TRUE(s.cpuIsa.empty());
}

/// trainNetwork's refusal of `s`: a usage error with exactly `message`,
/// before any file is read (the network and data paths do not exist).
void expectRefused(const TrainSettings &s, const std::string &message) {
  TrainResult r = trainNetwork("/nonexistent/net.net", s);
  EXPECT_EQ(r.failure, FailureKind::Usage) << r.error;
  EXPECT_EQ(r.error, message);
}

TrainSettings withData() {
  TrainSettings s;
  s.dataDir = "/nonexistent/data";
  return s;
}

TEST(TrainSettings, TrainNetworkChecksTheNewRanges) {
  TrainSettings s = withData();
  s.accumulate = 0;
  expectRefused(s, "--accumulate must be at least 1, got 0");
  s = withData();
  s.batch = 4;
  s.accumulate = std::numeric_limits<int64_t>::max() / 2;
  expectRefused(s,
                "--accumulate 4611686018427387903 micro-batches of --batch 4 are more samples per step than "
                "9223372036854775807");
  s = withData();
  s.logEvery = -1;
  expectRefused(s, "--log-every must be at least 1, got -1");
  for (double mb : {0.0, -2.0, std::nan(""), 2e6}) {
    s = withData();
    s.bucketMb = mb;
    TrainResult r = trainNetwork("/nonexistent/net.net", s);
    EXPECT_EQ(r.failure, FailureKind::Usage) << mb;
    EXPECT_EQ(r.error.rfind("--bucket-mb must be a positive number of MiB up to 1048576, got ", 0), 0u)
        << r.error;
  }
}

TEST(TrainSettings, TrainNetworkChecksTypedValuesSetByHand) {
  TrainSettings s = withData();
  s.schedule.kind = Schedule::Kind::Step;
  s.schedule.stepEpochs = 0;
  const std::string forms = " (expected constant, step[:EPOCHS[:GAMMA]] or cosine[:MIN_LR])";
  expectRefused(s, "--schedule 'step:0': EPOCHS must be a positive integer, got '0'" + forms);
  s = withData();
  s.schedule.kind = Schedule::Kind::Cosine;
  s.schedule.minLearningRate = -1;
  expectRefused(s, "--schedule 'cosine:-1': MIN_LR must be a non-negative number, got '-1'" + forms);
  s = withData();
  s.normalize = Normalize{Normalize::Kind::Scale, 0};
  expectRefused(s, "--normalize: scale:S needs a positive, finite number S (x / S; e.g. scale:255 for 8-bit "
                   "pixels), got '0'");
}

TEST(TrainSettings, ValidSettingsGetAsFarAsTheData) {
  TrainSettings s = withData();
  s.accumulate = 4;
  s.logEvery = 10;
  s.bucketMb = 0.5;
  s.schedule = *parseSchedule("step:5:0.5");
  s.normalize = *parseNormalize("scale:255");
  TrainResult r = trainNetwork("/nonexistent/net.net", s);
  EXPECT_EQ(r.failure, FailureKind::Input) << r.error;
  EXPECT_NE(r.error.find("/nonexistent/data"), std::string::npos) << r.error;
}

} // namespace
