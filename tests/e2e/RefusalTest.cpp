// RefusalTest.cpp -- what trainNetwork and Model refuse, with which
// FailureKind (Input: the data, the .net file, a checkpoint, the output
// folder; Usage: a flag value) and which words: missing data, checkpoints of
// another network or shape, truncated checkpoints, bad flags, an unwritable
// output folder or metrics file, labels outside the output layer (IDX and
// CSV), images of another size than the network's input.
#include "E2ESupport.h"

#include <algorithm>
#include <functional>

namespace netc::e2e {
namespace {

/// One epoch of the seed network on the slice (16 updates), for a checkpoint.
TrainResult trainQuick(const std::string &outDir, const std::string &net = seedNet()) {
  TrainSettings s = quickSettings(outDir);
  s.epochs = 1;
  return trainNetwork(net, s);
}

ModelOptions oneThreadOptions() {
  ModelOptions o;
  o.threads = 1;
  return o;
}

/// `n` images of the slice's training set with these labels, as an IDX data folder.
void writeIdxFolder(const std::string &dir, const std::vector<uint8_t> &labels, uint32_t side = 28) {
  std::filesystem::create_directories(dir);
  const Idx images = readIdx(sliceDir() + "/train-images-idx3-ubyte");
  const uint32_t n = uint32_t(labels.size());
  Bytes pixels(size_t(n) * side * side, 0);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t y = 0; y < std::min(side, 28u); ++y)
      for (uint32_t x = 0; x < std::min(side, 28u); ++x)
        pixels[(size_t(i) * side + y) * side + x] = images.values[(size_t(i) * 28 + y) * 28 + x];
  writeBytes(dir + "/train-images-idx3-ubyte", idxFile({n, side, side}, pixels));
  writeBytes(dir + "/train-labels-idx1-ubyte", idxFile({n}, Bytes(labels.begin(), labels.end())));
}

// ---- data ----

TEST(Refusal, MissingDataFolder) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir = tmp.file("no-such-data");
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, s.dataDir);
  EXPECT_CONTAINS(r.error, "does not exist");
  EXPECT_TRUE(r.epochs.empty());
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out"))) << "nothing is written for a refused run";
}

TEST(Refusal, DataFolderWithoutTrainingData) {
  TempFolder tmp;
  std::filesystem::create_directories(tmp.file("empty"));
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir = tmp.file("empty");
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, s.dataDir);
  EXPECT_CONTAINS(r.error, "train-images-idx3-ubyte");
}

TEST(Refusal, NoDataFolderIsAUsageError) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir.clear();
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
  EXPECT_CONTAINS(r.error, "--data");
}

TEST(Refusal, IdxLabelOutsideTheOutputLayer) {
  TempFolder tmp;
  std::vector<uint8_t> labels;
  for (int i = 0; i < 20; ++i)
    labels.push_back(uint8_t(i % 10));
  labels[3] = 12;
  writeIdxFolder(tmp.file("data"), labels);
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir = tmp.file("data");
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, tmp.file("data/train-labels-idx1-ubyte") + ", item 3: label 12");
  EXPECT_CONTAINS(r.error, "10 classes");
  EXPECT_CONTAINS(r.error, "Digit");
  // The label is the problem, not the 13 nodes the compiler would want for it.
  EXPECT_EQ(r.diagnostics.find("NS0325"), std::string::npos) << r.diagnostics;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
}

TEST(NotRefused, FewerClassesInTheDataThanOutputs) {
  // The slice is ordered by digit: its first 250 training digits are 0-4
  // only, its first 100 are 0s and 1s. The seed network's 10 outputs cover
  // them, so training, loading and evaluating work (two classes need
  // --task multiclass: two classes alone mean a binary task).
  const Idx labels = readIdx(sliceDir() + "/train-labels-idx1-ubyte");
  for (const auto &[count, task] : {std::pair{250, Task::Unspecified}, std::pair{100, Task::Multiclass}}) {
    SCOPED_TRACE("first " + std::to_string(count) + " digits");
    TempFolder tmp(std::to_string(count));
    writeIdxFolder(tmp.file("data"), Bytes(labels.values.begin(), labels.values.begin() + count));
    TrainSettings s = quickSettings(tmp.file("out"));
    s.dataDir = tmp.file("data");
    s.epochs = 1;
    s.task = task;
    TrainResult r = trainNetwork(seedNet(), s);
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.trainSamples, count);
    ModelResult m = Model::load(seedNet(), tmp.file("out/last.safetensors"), oneThreadOptions());
    ASSERT_TRUE(m.model.has_value()) << m.error << "\n" << m.diagnostics;
    EXPECT_EQ(m.model->outputSize(), 10);
    std::string error;
    EvaluationResult e = m.model->evaluate(tmp.file("data"), error);
    EXPECT_EQ(error, "");
    EXPECT_EQ(e.samples, count);
  }
}

TEST(Refusal, CsvLabelOutsideTheOutputLayer) {
  TempFolder tmp;
  std::filesystem::create_directories(tmp.file("data"));
  std::string csv;
  for (int i = 0; i < 12; ++i) {
    csv += std::to_string(i == 5 ? 12 : i % 10);
    for (int f = 0; f < 784; ++f)
      csv += "," + std::to_string((i * 31 + f * 7) % 256);
    csv += "\n";
  }
  writeText(tmp.file("data/train.csv"), csv);
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir = tmp.file("data");
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, "train.csv:6: label 12"); // sample 5 is line 6
}

TEST(Refusal, ImagesOfAnotherSizeThanTheNetworkInput) {
  // examples/digits-29x29.net reads [29, 29] = 841 features; the slice has 28×28 = 784.
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  TrainResult r = trainNetwork(sourcePath("examples/digits-29x29.net"), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, "784");
  EXPECT_CONTAINS(r.error, "digits-29x29.net");
  // The compiler's diagnostic (returned with the error) names the network's 841.
  EXPECT_CONTAINS(r.diagnostics, "NS0324");
  EXPECT_CONTAINS(r.diagnostics, "841");
  EXPECT_CONTAINS(r.diagnostics, "784");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
}

TEST(Refusal, EvaluateRefusesBadLabelsAndSizes) {
  TempFolder tmp;
  TrainResult t = trainQuick(tmp.file("run"));
  ASSERT_TRUE(t.ok()) << describe(t);
  ModelResult m = Model::load(seedNet(), tmp.file("run/last.safetensors"), oneThreadOptions());
  ASSERT_TRUE(m.model.has_value()) << m.error;
  // A label of 12 for the 10 outputs.
  std::vector<uint8_t> labels = {0, 1, 12, 3};
  writeIdxFolder(tmp.file("bad-labels"), labels);
  std::string error;
  m.model->evaluate(tmp.file("bad-labels"), error);
  EXPECT_CONTAINS(error, tmp.file("bad-labels"));
  EXPECT_CONTAINS(error, "label 12");
  // 29×29 images for a model of 28×28.
  writeIdxFolder(tmp.file("big"), {0, 1, 2}, 29);
  error.clear();
  m.model->evaluate(tmp.file("big"), error);
  EXPECT_CONTAINS(error, "841");
  EXPECT_CONTAINS(error, "784");
  // A missing folder.
  error.clear();
  m.model->evaluate(tmp.file("nothing"), error);
  EXPECT_CONTAINS(error, tmp.file("nothing"));
}

// ---- flags ----

TEST(Refusal, ANegativeBatchIsAUsageError) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  s.batch = -1; // 0 is the default: 1, or a resumed run's own
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
  EXPECT_CONTAINS(r.error, "--batch must be at least 1, got -1");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
}

TEST(Refusal, NegativeLearningRateIsAUsageError) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  s.learningRate = -0.5f;
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
  EXPECT_CONTAINS(r.error, "--lr");
  EXPECT_CONTAINS(r.error, "-0.5");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
}

TEST(Refusal, OtherBadFlagsAreUsageErrors) {
  TempFolder tmp;
  struct Case {
    const char *flag;
    std::function<void(TrainSettings &)> set;
  };
  const std::vector<Case> cases = {
      {"--epochs", [](TrainSettings &s) { s.epochs = 0; }},
      {"--threads", [](TrainSettings &s) { s.threads = -1; }},
      {"--init-diameter", [](TrainSettings &s) { s.initDiameter = 0; }},
      {"--validation", [](TrainSettings &s) { s.validationFraction = 1; }},
      {"--accumulate", [](TrainSettings &s) { s.accumulate = 0; }},
      {"--log-every", [](TrainSettings &s) { s.logEvery = -1; }},
      {"--bucket-mb", [](TrainSettings &s) { s.bucketMb = 0; }},
      // Typed values out of range, as an embedding program may set them.
      {"--schedule",
       [](TrainSettings &s) {
         s.schedule.kind = Schedule::Kind::Step;
         s.schedule.stepEpochs = 0;
       }},
      {"--normalize",
       [](TrainSettings &s) {
         s.normalize = Normalize{Normalize::Kind::Scale, -1};
       }},
      {"--lr", [](TrainSettings &s) { s.learningRate = 0; }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.flag);
    TrainSettings s = quickSettings(tmp.file("out"));
    c.set(s);
    TrainResult r = trainNetwork(seedNet(), s);
    EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
    EXPECT_CONTAINS(r.error, c.flag);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
}

// ---- output ----

TEST(Refusal, OutputFolderUnderARegularFile) {
  TempFolder tmp;
  writeText(tmp.file("plain-file"), "not a folder\n");
  TrainSettings s = quickSettings(tmp.file("plain-file/run"));
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, s.outDir);
  EXPECT_TRUE(r.epochs.empty());
  EXPECT_EQ(readText(tmp.file("plain-file")), "not a folder\n");
}

TEST(Refusal, MetricsFileInAMissingFolder) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("out"));
  s.metricsFile = tmp.file("missing-folder/metrics.jsonl");
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, s.metricsFile);
  EXPECT_TRUE(r.epochs.empty());
}

// ---- checkpoints ----

TEST(Refusal, CheckpointOfAnotherNetwork) {
  // examples/hello-world.net (784 → 200 → 10 sigmoid) trained briefly, then
  // loaded into the seed network.
  TempFolder tmp;
  TrainResult hello = trainQuick(tmp.file("hello"), sourcePath("examples/hello-world.net"));
  ASSERT_TRUE(hello.ok()) << describe(hello);
  const std::string checkpoint = tmp.file("hello/last.safetensors");

  ModelResult m = Model::load(seedNet(), checkpoint, oneThreadOptions());
  EXPECT_FALSE(m.model.has_value());
  EXPECT_EQ(m.failure, FailureKind::Input);
  EXPECT_CONTAINS(m.error, checkpoint);
  EXPECT_CONTAINS(m.error, "another network");
  EXPECT_CONTAINS(m.error, "Conv1"); // the seed network's first tensor, which the file lacks
  EXPECT_CONTAINS(m.error, "hello-world");

  TrainSettings s = quickSettings(tmp.file("resumed"));
  s.epochs = 2;
  s.resume = checkpoint;
  TrainResult r = trainNetwork(seedNet(), s);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, checkpoint);
  EXPECT_CONTAINS(r.error, "Conv1");
  EXPECT_TRUE(r.epochs.empty());

  // The other way round: the seed network's checkpoint in hello-world.
  TrainResult seed = trainQuick(tmp.file("seed"));
  ASSERT_TRUE(seed.ok()) << describe(seed);
  ModelResult h = Model::load(sourcePath("examples/hello-world.net"), tmp.file("seed/last.safetensors"),
                              oneThreadOptions());
  EXPECT_EQ(h.failure, FailureKind::Input);
  EXPECT_CONTAINS(h.error, "another network");
}

TEST(Refusal, CheckpointWithAnotherShape) {
  // The seed network with Hid3 [50] instead of [100]: same tensor names,
  // other shapes.
  TempFolder tmp;
  TrainResult t = trainQuick(tmp.file("run"));
  ASSERT_TRUE(t.ok()) << describe(t);
  std::string text = readText(seedNet());
  const std::string from = "hidden Hid3 [100]", to = "hidden Hid3 [50]";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), to);
  std::filesystem::create_directories(tmp.file("net"));
  writeText(tmp.file("net/mnist.net"), text);
  ModelResult m =
      Model::load(tmp.file("net/mnist.net"), tmp.file("run/last.safetensors"), oneThreadOptions());
  EXPECT_FALSE(m.model.has_value());
  EXPECT_EQ(m.failure, FailureKind::Input);
  EXPECT_CONTAINS(m.error, tmp.file("run/last.safetensors"));
  EXPECT_CONTAINS(m.error, "Hid3");
  EXPECT_CONTAINS(m.error, "100");
  EXPECT_CONTAINS(m.error, "50");
  EXPECT_CONTAINS(m.error, "shape");
}

TEST(Refusal, TruncatedCheckpoint) {
  TempFolder tmp;
  TrainResult t = trainQuick(tmp.file("run"));
  ASSERT_TRUE(t.ok()) << describe(t);
  const Bytes whole = readBytes(tmp.file("run/last.safetensors"));
  ASSERT_GT(whole.size(), size_t(1000));
  for (size_t keep : {whole.size() / 2, whole.size() - 1, size_t(4)}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(whole.size()) + " bytes");
    const std::string cut = tmp.file("cut.safetensors");
    writeBytes(cut, Bytes(whole.begin(), whole.begin() + long(keep)));
    ModelResult m = Model::load(seedNet(), cut, oneThreadOptions());
    EXPECT_FALSE(m.model.has_value());
    EXPECT_EQ(m.failure, FailureKind::Input);
    EXPECT_CONTAINS(m.error, cut);
    EXPECT_CONTAINS(m.error, "truncated");

    TrainSettings s = quickSettings(tmp.file("resumed"));
    s.epochs = 2;
    s.resume = cut;
    TrainResult r = trainNetwork(seedNet(), s);
    EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
    EXPECT_CONTAINS(r.error, cut);
    EXPECT_CONTAINS(r.error, "truncated");
    EXPECT_TRUE(r.epochs.empty());
  }
  // A missing checkpoint.
  ModelResult missing = Model::load(seedNet(), tmp.file("none.safetensors"), oneThreadOptions());
  EXPECT_EQ(missing.failure, FailureKind::Input);
  EXPECT_CONTAINS(missing.error, tmp.file("none.safetensors"));
}

} // namespace
} // namespace netc::e2e
