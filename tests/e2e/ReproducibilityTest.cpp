// ReproducibilityTest.cpp -- docs/architecture.md §Runtime principles: CPU training is bit-reproducible
// for a seed and thread count, and a run stopped and resumed from
// last.safetensors continues bit-identically (parameters, optimizer state,
// learning-rate schedule, shuffling, best-epoch tracking), compared through
// an independent reader of the checkpoint files.
#include "E2ESupport.h"

#include <algorithm>
#include <cmath>

namespace netc::e2e {
namespace {

TrainResult train(const TrainSettings &s) {
  return trainNetwork(seedNet(), s);
}

/// The metadata keys whose values differ between two checkpoints.
std::string metadataDifferences(const Checkpoint &a, const Checkpoint &b) {
  std::string out;
  std::map<std::string, std::string> all = a.metadata;
  all.insert(b.metadata.begin(), b.metadata.end());
  for (const auto &[key, value] : all) {
    auto x = a.metadata.find(key), y = b.metadata.find(key);
    if (x == a.metadata.end() || y == b.metadata.end() || x->second != y->second)
      out += key + ": '" + (x == a.metadata.end() ? "<none>" : x->second) + "' vs '" +
             (y == b.metadata.end() ? "<none>" : y->second) + "'\n";
  }
  return out;
}

/// The loss and accuracy fields of a metrics file's epoch lines.
std::vector<std::vector<double>> epochFigures(const std::string &metricsPath) {
  std::vector<std::vector<double>> out;
  for (const nlohmann::json &j : readJsonLines(metricsPath))
    if (j.is_object() && j.value("event", "") == "epoch")
      out.push_back({j.value("epoch", -1.0), j.value("train_loss", -1.0), j.value("train_accuracy", -1.0),
                     j.value("test_loss", -1.0), j.value("test_accuracy", -1.0)});
  return out;
}

void expectSameEpoch(const EpochResult &a, const EpochResult &b) {
  SCOPED_TRACE("epoch " + std::to_string(a.epoch));
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.trainLoss, b.trainLoss);
  EXPECT_EQ(a.trainAccuracy, b.trainAccuracy);
  EXPECT_EQ(a.testLoss, b.testLoss);
  EXPECT_EQ(a.testAccuracy, b.testAccuracy);
  EXPECT_EQ(a.learningRate, b.learningRate);
  EXPECT_EQ(a.best, b.best);
}

// ---- 2. bit-identical determinism ----

TEST(Determinism, SameSeedAndOneThreadGiveIdenticalCheckpointsAndMetrics) {
  TempFolder tmp;
  TrainResult a = train(quickSettings(tmp.file("a")));
  ASSERT_TRUE(a.ok()) << describe(a);
  TrainResult b = train(quickSettings(tmp.file("b")));
  ASSERT_TRUE(b.ok()) << describe(b);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(b.seed, 7u);

  const Checkpoint ca = readCheckpoint(tmp.file("a/last.safetensors"));
  const Checkpoint cb = readCheckpoint(tmp.file("b/last.safetensors"));
  ASSERT_TRUE(ca.error.empty()) << ca.error;
  ASSERT_FALSE(ca.tensors.empty());
  // Parameters and momentum, bit for bit.
  EXPECT_EQ(compareTensors(ca, cb), "");
  // The metadata holds no timing (epoch, step, seeds, normalizer, ...), so
  // it is identical too, and so is the whole file.
  EXPECT_EQ(metadataDifferences(ca, cb), "");
  EXPECT_TRUE(readBytes(tmp.file("a/last.safetensors")) == readBytes(tmp.file("b/last.safetensors")));

  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t i = 0; i < a.epochs.size(); ++i)
    expectSameEpoch(a.epochs[i], b.epochs[i]);
  EXPECT_EQ(epochFigures(tmp.file("a/metrics.jsonl")), epochFigures(tmp.file("b/metrics.jsonl")));
  EXPECT_EQ(epochFigures(tmp.file("a/metrics.jsonl")).size(), size_t(2));
}

TEST(Determinism, AnotherSeedGivesOtherWeights) {
  TempFolder tmp;
  TrainResult a = train(quickSettings(tmp.file("a"), 7));
  ASSERT_TRUE(a.ok()) << describe(a);
  TrainResult c = train(quickSettings(tmp.file("c"), 8));
  ASSERT_TRUE(c.ok()) << describe(c);
  EXPECT_EQ(c.seed, 8u);
  const Checkpoint ca = readCheckpoint(tmp.file("a/last.safetensors"));
  const Checkpoint cc = readCheckpoint(tmp.file("c/last.safetensors"));
  ASSERT_TRUE(ca.error.empty() && cc.error.empty()) << ca.error << cc.error;
  ASSERT_EQ(ca.tensors.size(), cc.tensors.size());
  // Every parameter tensor is initialised (and trained) differently.
  for (const auto &[name, t] : ca.tensors) {
    if (!isParameter(ca, name))
      continue;
    ASSERT_TRUE(cc.tensors.count(name)) << name;
    EXPECT_NE(t.data, cc.tensors.at(name).data) << name << " is the same for seeds 7 and 8";
  }
  EXPECT_NE(a.epochs.front().trainLoss, c.epochs.front().trainLoss);
}

TEST(Determinism, NoSeedDrawsOneAndReportsIt) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("a"));
  s.seed.reset();
  s.epochs = 1;
  TrainResult a = train(s);
  ASSERT_TRUE(a.ok()) << describe(a);
  // The reported seed reproduces the run.
  TrainSettings again = quickSettings(tmp.file("b"), a.seed);
  again.epochs = 1;
  TrainResult b = train(again);
  ASSERT_TRUE(b.ok()) << describe(b);
  EXPECT_EQ(compareTensors(readCheckpoint(tmp.file("a/last.safetensors")),
                           readCheckpoint(tmp.file("b/last.safetensors"))),
            "");
}

// ---- 3. stop and resume = uninterrupted ----

struct ResumeCase {
  std::string name;
  std::string optimizer;
  std::optional<float> learningRate;
  float momentum;
  bool nesterov;
  float weightDecay;
  std::string schedule;
};

ResumeCase resumeCase(std::string name, std::string optimizer, std::optional<float> learningRate,
                      float momentum = 0, bool nesterov = false, float weightDecay = 0,
                      std::string schedule = "constant") {
  return {std::move(name), std::move(optimizer), learningRate,       momentum,
          nesterov,        weightDecay,          std::move(schedule)};
}

void PrintTo(const ResumeCase &c, std::ostream *os) {
  *os << c.name;
}

class Resume : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(Resume, TwoEpochsThenResumeEqualsFourStraight) {
  const ResumeCase &c = GetParam();
  TempFolder tmp;
  auto settings = [&](const std::string &out, int64_t epochs) {
    TrainSettings s = quickSettings(out, 11);
    s.epochs = epochs;
    s.optimizer = *parseOptimizer(c.optimizer);
    s.learningRate = c.learningRate;
    s.momentum = c.momentum;
    s.nesterov = c.nesterov;
    s.weightDecay = c.weightDecay;
    s.schedule = *parseSchedule(c.schedule);
    return s;
  };
  TrainResult straight = train(settings(tmp.file("straight"), 4));
  ASSERT_TRUE(straight.ok()) << describe(straight);
  ASSERT_EQ(straight.epochs.size(), size_t(4));

  TrainResult first = train(settings(tmp.file("resumed"), 2));
  ASSERT_TRUE(first.ok()) << describe(first);
  ASSERT_EQ(first.epochs.size(), size_t(2));
  for (size_t i = 0; i < 2; ++i)
    expectSameEpoch(first.epochs[i], straight.epochs[i]);
  TrainSettings rest = settings(tmp.file("resumed"), 4);
  rest.resume = tmp.file("resumed/last.safetensors");
  TrainResult second = train(rest);
  ASSERT_TRUE(second.ok()) << describe(second);

  // The resumed run did epochs 3 and 4 only, with the same figures.
  ASSERT_EQ(second.epochs.size(), size_t(2)) << describe(second);
  expectSameEpoch(second.epochs[0], straight.epochs[2]);
  expectSameEpoch(second.epochs[1], straight.epochs[3]);
  EXPECT_EQ(second.steps, straight.steps);
  EXPECT_EQ(second.bestEpoch, straight.bestEpoch);
  EXPECT_EQ(second.seed, straight.seed);
  ASSERT_TRUE(second.finalTest && straight.finalTest);
  EXPECT_EQ(second.finalTest->loss, straight.finalTest->loss);

  // Final parameters and optimizer state, bit for bit, and the same metadata.
  const Checkpoint s = readCheckpoint(tmp.file("straight/last.safetensors"));
  const Checkpoint r = readCheckpoint(tmp.file("resumed/last.safetensors"));
  ASSERT_TRUE(s.error.empty() && r.error.empty()) << s.error << r.error;
  EXPECT_EQ(compareTensors(s, r, /*parametersOnly=*/true), "");
  EXPECT_EQ(compareTensors(s, r), "");
  EXPECT_EQ(metadataDifferences(s, r), "");
  EXPECT_EQ(s.metadata.count("epoch") ? s.metadata.at("epoch") : "", "4");
  // best.safetensors agrees too (the best epoch survives the restart).
  EXPECT_EQ(compareTensors(readCheckpoint(tmp.file("straight/best.safetensors")),
                           readCheckpoint(tmp.file("resumed/best.safetensors"))),
            "");
  // The resumed folder's metrics file continues: epochs 1-2, then 3-4.
  const auto straightFigures = epochFigures(tmp.file("straight/metrics.jsonl"));
  const auto resumedFigures = epochFigures(tmp.file("resumed/metrics.jsonl"));
  EXPECT_EQ(resumedFigures, straightFigures);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Resume,
                         ::testing::Values(resumeCase("SgdMomentum", "sgd", 0.1f, 0.9f),
                                           resumeCase("Adam", "adam", std::nullopt),
                                           resumeCase("AdaDelta", "adadelta", std::nullopt),
                                           resumeCase("NesterovWeightDecayStepSchedule", "sgd", 0.1f, 0.9f,
                                                      true, 1e-4f, "step:1:0.5")),
                         [](const ::testing::TestParamInfo<ResumeCase> &info) { return info.param.name; });

TEST(ResumeSensitivity, LosingTheMomentumChangesTheResult) {
  // The control for the resume tests: the same resume from a checkpoint
  // whose momentum buffers were zeroed (as if the optimizer state were not
  // saved or not restored) ends with other weights.
  TempFolder tmp;
  auto settings = [&](const std::string &out, int64_t epochs) {
    TrainSettings s = quickSettings(out, 11);
    s.epochs = epochs;
    return s;
  };
  TrainResult straight = trainNetwork(seedNet(), settings(tmp.file("straight"), 3));
  ASSERT_TRUE(straight.ok()) << describe(straight);
  TrainResult first = trainNetwork(seedNet(), settings(tmp.file("resumed"), 2));
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string path = tmp.file("resumed/last.safetensors");
  const Checkpoint saved = readCheckpoint(path);
  ASSERT_TRUE(saved.error.empty()) << saved.error;
  Bytes bytes = readBytes(path);
  size_t zeroed = 0;
  for (const auto &[name, t] : saved.tensors)
    if (!isParameter(saved, name)) {
      std::fill(bytes.begin() + long(t.fileOffset), bytes.begin() + long(t.fileOffset + t.data.size()), 0);
      ++zeroed;
    }
  ASSERT_GT(zeroed, size_t(0)) << "SGD with momentum saves its momentum buffers";
  writeBytes(path, bytes);
  TrainSettings rest = settings(tmp.file("resumed"), 3);
  rest.resume = path;
  TrainResult second = trainNetwork(seedNet(), rest);
  ASSERT_TRUE(second.ok()) << describe(second);
  EXPECT_NE(compareTensors(readCheckpoint(tmp.file("straight/last.safetensors")),
                           readCheckpoint(tmp.file("resumed/last.safetensors")), /*parametersOnly=*/true),
            "");
}

TEST(ResumeWithoutSeed, ContinuesWithTheCheckpointsSeedAndValidationSplit) {
  // `netc train --resume` without --seed or --validation: the run must
  // continue with the checkpoint's seed and validation fraction -- the same
  // shuffling and the same held-out samples (a fresh seed, or no split, would
  // train on the validation samples).
  TempFolder tmp;
  auto settings = [&](const std::string &out, int64_t epochs) {
    TrainSettings s = quickSettings(out, 11);
    s.epochs = epochs;
    s.validationFraction = 0.2;
    return s;
  };
  TrainResult straight = trainNetwork(seedNet(), settings(tmp.file("straight"), 3));
  ASSERT_TRUE(straight.ok()) << describe(straight);
  TrainResult first = trainNetwork(seedNet(), settings(tmp.file("resumed"), 2));
  ASSERT_TRUE(first.ok()) << describe(first);
  TrainSettings rest = settings(tmp.file("resumed"), 3);
  rest.seed.reset();
  rest.validationFraction.reset();
  rest.resume = tmp.file("resumed/last.safetensors");
  TrainResult second = trainNetwork(seedNet(), rest);
  ASSERT_TRUE(second.ok()) << describe(second);
  EXPECT_EQ(second.seed, 11u) << "the resumed run reports the seed it continues with";
  EXPECT_EQ(second.trainSamples, straight.trainSamples);
  EXPECT_EQ(second.testSamples, straight.testSamples);
  ASSERT_EQ(second.epochs.size(), size_t(1));
  expectSameEpoch(second.epochs[0], straight.epochs[2]);
  const Checkpoint s = readCheckpoint(tmp.file("straight/last.safetensors"));
  const Checkpoint r = readCheckpoint(tmp.file("resumed/last.safetensors"));
  EXPECT_EQ(compareTensors(s, r), "");
  EXPECT_EQ(metadataDifferences(s, r), "");
}

TEST(ResumeRefusal, AnotherValidationFractionIsRefused) {
  // The held-out samples are part of the run: resuming with another
  // --validation would train on some of them. Refused as a usage error that
  // names both fractions; nothing is written.
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("run"), 3);
  s.epochs = 1;
  s.validationFraction = 0.2;
  TrainResult first = trainNetwork(seedNet(), s);
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string before = readText(tmp.file("run/last.safetensors"));
  TrainSettings rest = s;
  rest.epochs = 2;
  rest.validationFraction = 0.1;
  rest.resume = tmp.file("run/last.safetensors");
  TrainResult second = trainNetwork(seedNet(), rest);
  EXPECT_EQ(second.failure, FailureKind::Usage);
  EXPECT_NE(second.error.find("--validation 0.1 differs from the 0.2 held out by the run in"),
            std::string::npos)
      << second.error;
  EXPECT_EQ(readText(tmp.file("run/last.safetensors")), before);
}

TEST(ResumeRefusal, CheckpointOfAnotherOptimizerIsRefused) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("sgd"));
  s.epochs = 1;
  TrainResult first = train(s);
  ASSERT_TRUE(first.ok()) << describe(first);
  TrainSettings adam = quickSettings(tmp.file("adam"));
  adam.optimizer = Optimizer::Adam;
  adam.learningRate.reset();
  adam.momentum = 0;
  adam.resume = tmp.file("sgd/last.safetensors");
  TrainResult r = train(adam);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_NE(r.error.find(adam.resume), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("optimizer"), std::string::npos) << r.error;
}

} // namespace
} // namespace netc::e2e
