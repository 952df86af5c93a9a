// StartFromCheckpointTest.cpp -- runs that start from a checkpoint: `--init-from`
// starts a new run (epoch 0, fresh optimizer state, the run's own flags) from
// a checkpoint's weights, keeping its normalizer unless `--normalize` is
// given, with `--init-skip` layers left fresh; `--resume` keeps the inputs the
// run was trained on (the recorded normalizer, whatever the data now holds)
// and says where it resumed; `--normalize scale:S`; the class count recorded
// when the labels use fewer classes than the output layer has. Checkpoints
// are compared through the independent reader of E2ESupport.h.
#include "E2ESupport.h"

#include <functional>

namespace netc::e2e {
namespace {

/// Keeps the run header lines (TrainListener::onSetup).
class SetupRecorder final : public TrainListener {
public:
  void onSetup(const std::vector<std::string> &lines) override {
    for (const std::string &line : lines)
      text += line + "\n";
  }
  std::string text;
};

/// Writes a copy of the safetensors file `in` to `out` with metadata keys
/// replaced (an empty value removes the key) and the tensors whose names end
/// in `zeroSuffix` set to zeros: a hand-made checkpoint, as a user would write.
void rewriteCheckpoint(const std::string &in, const std::string &out,
                       const std::map<std::string, std::string> &metadata,
                       const std::string &zeroSuffix = "") {
  Bytes bytes = readBytes(in);
  ASSERT_GE(bytes.size(), size_t(8));
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | bytes[static_cast<size_t>(i)];
  ASSERT_LE(headerBytes, bytes.size() - 8);
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(headerBytes));
  Bytes data(bytes.begin() + 8 + long(headerBytes), bytes.end());
  for (const auto &[key, value] : metadata)
    if (value.empty())
      header["__metadata__"].erase(key);
    else
      header["__metadata__"][key] = value;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    if (name == "__metadata__" || zeroSuffix.empty() || name.size() < zeroSuffix.size() ||
        name.compare(name.size() - zeroSuffix.size(), zeroSuffix.size(), zeroSuffix) != 0)
      continue;
    const auto offsets = (*it)["data_offsets"].get<std::vector<uint64_t>>();
    std::fill(data.begin() + long(offsets[0]), data.begin() + long(offsets[1]), uint8_t{0});
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // keeps the data section 8-byte aligned
  std::string file;
  for (size_t i = 0; i < 8; ++i)
    file += static_cast<char>(uint64_t(text.size()) >> (8 * i) & 0xff);
  file += text;
  file.append(data.begin(), data.end());
  writeText(out, file);
}

/// The first `count` digits of the slice as a data folder (no test set).
void writeSliceHead(const std::string &dir, size_t count) {
  std::filesystem::create_directories(dir);
  const Idx images = readIdx(sliceDir() + "/train-images-idx3-ubyte");
  const Idx labels = readIdx(sliceDir() + "/train-labels-idx1-ubyte");
  ASSERT_EQ(images.dims.size(), size_t(3));
  const size_t pixels = size_t(images.dims[1]) * images.dims[2];
  writeBytes(dir + "/train-images-idx3-ubyte",
             idxFile({uint32_t(count), images.dims[1], images.dims[2]},
                     Bytes(images.values.begin(), images.values.begin() + long(count * pixels))));
  writeBytes(dir + "/train-labels-idx1-ubyte",
             idxFile({uint32_t(count)}, Bytes(labels.values.begin(), labels.values.begin() + long(count))));
}

// ---- --init-from ----

TEST(InitFrom, EqualsResumingAHandMadeEpochZeroCheckpointWithoutOptimizerState) {
  // The old way round: copy a checkpoint, set its epoch and step to 0, give
  // it the new run's seed and drop its optimizer state (zeros), then resume
  // it. --init-from must give the same run, bit for bit, with another seed,
  // another learning rate and another number of epochs than the first run.
  TempFolder tmp;
  TrainResult first = trainNetwork(seedNet(), quickSettings(tmp.file("first")));
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string weights = tmp.file("first/last.safetensors");

  TrainSettings fromWeights = quickSettings(tmp.file("init"), /*seed=*/11);
  fromWeights.learningRate = 0.05f;
  fromWeights.epochs = 3;
  fromWeights.initFrom = weights;
  SetupRecorder setup;
  TrainResult init = trainNetwork(seedNet(), fromWeights, &setup);
  ASSERT_TRUE(init.ok()) << describe(init);
  ASSERT_EQ(init.epochs.size(), size_t(3));
  EXPECT_EQ(init.epochs.front().epoch, 1);
  EXPECT_EQ(init.steps, 3 * 16); // 500 samples in batches of 32, from step 0
  EXPECT_CONTAINS(setup.text, "init from " + weights + " (epoch 2)");
  EXPECT_CONTAINS(setup.text, "normalizer minmax (recorded in " + weights + ")");

  rewriteCheckpoint(weights, tmp.file("epoch0.safetensors"),
                    {{"epoch", "0"},
                     {"step", "0"},
                     {"best_epoch", "0"},
                     {"best_score", "0"},
                     {"shuffle", R"({"epoch":0,"position":0,"seed":11})"}},
                    "/momentum_buffer");
  TrainSettings resumed = fromWeights;
  resumed.initFrom.clear();
  resumed.resume = tmp.file("epoch0.safetensors");
  resumed.outDir = tmp.file("resumed");
  TrainResult r = trainNetwork(seedNet(), resumed);
  ASSERT_TRUE(r.ok()) << describe(r);

  const Checkpoint a = readCheckpoint(tmp.file("init/last.safetensors"));
  const Checkpoint b = readCheckpoint(tmp.file("resumed/last.safetensors"));
  EXPECT_EQ(compareTensors(a, b), ""); // parameters and momentum
  EXPECT_EQ(a.metadata.at("epoch"), "3");
  EXPECT_EQ(a.metadata.at("step"), "48");
  EXPECT_EQ(a.metadata.at("normalizer"), readCheckpoint(weights).metadata.at("normalizer"));
  for (size_t i = 0; i < init.epochs.size(); ++i)
    EXPECT_EQ(init.epochs[i].trainLoss, r.epochs[i].trainLoss) << "epoch " << i + 1;
  // And the weights mattered: the same run from a fresh start goes elsewhere.
  TrainSettings freshStart = fromWeights;
  freshStart.initFrom.clear();
  freshStart.outDir = tmp.file("fresh");
  TrainResult fresh = trainNetwork(seedNet(), freshStart);
  ASSERT_TRUE(fresh.ok()) << describe(fresh);
  EXPECT_NE(fresh.epochs.front().trainLoss, init.epochs.front().trainLoss);
  EXPECT_NE(compareTensors(a, readCheckpoint(tmp.file("fresh/last.safetensors"))), "");
}

TEST(InitFrom, SkippedLayersStartFreshAndTheOthersFromTheCheckpoint) {
  // At a learning rate of 1e-30 no weight of magnitude above ~1e-20 moves,
  // so the checkpoint written after one epoch shows where each tensor
  // started: Digit's as in a fresh run with the same seed, the others as in
  // the checkpoint given to --init-from.
  TempFolder tmp;
  TrainResult first = trainNetwork(seedNet(), quickSettings(tmp.file("first")));
  ASSERT_TRUE(first.ok()) << describe(first);

  TrainSettings still = quickSettings(tmp.file("fresh"), /*seed=*/23);
  still.epochs = 1;
  still.learningRate = 1e-30f;
  TrainResult fresh = trainNetwork(seedNet(), still);
  ASSERT_TRUE(fresh.ok()) << describe(fresh);

  still.outDir = tmp.file("skip");
  still.initFrom = tmp.file("first/last.safetensors");
  still.initSkip = {"Digit"};
  SetupRecorder setup;
  TrainResult skip = trainNetwork(seedNet(), still, &setup);
  ASSERT_TRUE(skip.ok()) << describe(skip);
  EXPECT_CONTAINS(setup.text, ", Digit fresh: init uniform (diameter 1)");

  const Checkpoint weights = readCheckpoint(tmp.file("first/last.safetensors"));
  const Checkpoint freshStart = readCheckpoint(tmp.file("fresh/last.safetensors"));
  const Checkpoint skipped = readCheckpoint(tmp.file("skip/last.safetensors"));
  int fromCheckpoint = 0, fromFresh = 0;
  for (const auto &[name, tensor] : skipped.tensors) {
    if (!isParameter(skipped, name))
      continue;
    const bool digit = name.rfind("Digit/", 0) == 0;
    const Checkpoint &expected = digit ? freshStart : weights;
    EXPECT_TRUE(tensor.data == expected.tensors.at(name).data)
        << name << " should start as in " << (digit ? "a fresh run" : "the checkpoint");
    ++(digit ? fromFresh : fromCheckpoint);
  }
  EXPECT_EQ(fromFresh, 2);      // Digit/Hid3/weights, Digit/biases
  EXPECT_EQ(fromCheckpoint, 4); // Conv1, Conv2 (kernels with their biases), Hid3's weights and biases
}

TEST(InitFrom, ANewOutputLayerOfAnotherSizeNeedsInitSkip) {
  // Fine-tuning for 2 classes: the seed network with a 2-node output.
  TempFolder tmp;
  TrainResult first = trainNetwork(seedNet(), quickSettings(tmp.file("first")));
  ASSERT_TRUE(first.ok()) << describe(first);
  std::string text = readText(seedNet());
  const std::string from = "output Digit [10]", to = "output Digit [2]";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), to);
  std::filesystem::create_directories(tmp.file("net"));
  writeText(tmp.file("net/mnist.net"), text);
  writeSliceHead(tmp.file("data"), 100); // 0s and 1s

  TrainSettings s = quickSettings(tmp.file("two"));
  s.dataDir = tmp.file("data");
  s.epochs = 1;
  s.initFrom = tmp.file("first/last.safetensors");
  TrainResult refused = trainNetwork(tmp.file("net/mnist.net"), s);
  EXPECT_EQ(refused.failure, FailureKind::Input) << describe(refused);
  EXPECT_CONTAINS(refused.error, s.initFrom);
  EXPECT_CONTAINS(refused.error, "checkpoint of another network");
  EXPECT_CONTAINS(refused.error, "tensor 'Digit/Hid3/weights' has shape [2, 100] in network 'mnist' but [10, "
                                 "100] in the checkpoint");
  EXPECT_FALSE(std::filesystem::exists(tmp.file("two")));

  s.initSkip = {"Digit"};
  TrainResult tuned = trainNetwork(tmp.file("net/mnist.net"), s);
  ASSERT_TRUE(tuned.ok()) << describe(tuned);
  const Checkpoint c = readCheckpoint(tmp.file("two/last.safetensors"));
  EXPECT_EQ(c.tensors.at("Digit/Hid3/weights").shape, (std::vector<int64_t>{2, 100}));
  EXPECT_EQ(c.metadata.at("classes"), "2");
}

TEST(InitFrom, ExplicitNormalizeRefitsAndSaysSo) {
  TempFolder tmp;
  TrainSettings gaussian = quickSettings(tmp.file("first"));
  gaussian.epochs = 1;
  gaussian.normalize = *parseNormalize("gaussian");
  TrainResult first = trainNetwork(seedNet(), gaussian);
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string weights = tmp.file("first/last.safetensors");

  TrainSettings s = quickSettings(tmp.file("kept"));
  s.epochs = 1;
  s.initFrom = weights;
  SetupRecorder kept;
  ASSERT_TRUE(trainNetwork(seedNet(), s, &kept).ok());
  EXPECT_CONTAINS(kept.text, "normalizer gaussian (recorded in " + weights + ")");
  EXPECT_EQ(readCheckpoint(tmp.file("kept/last.safetensors")).metadata.at("normalizer"),
            readCheckpoint(weights).metadata.at("normalizer"));

  s.outDir = tmp.file("refit");
  s.normalize = *parseNormalize("scale:255");
  SetupRecorder refit;
  ASSERT_TRUE(trainNetwork(seedNet(), s, &refit).ok());
  EXPECT_CONTAINS(refit.text,
                  "normalizer scale:255 (re-fitted on the training data; " + weights + " recorded gaussian)");
  EXPECT_EQ(
      nlohmann::json::parse(readCheckpoint(tmp.file("refit/last.safetensors")).metadata.at("normalizer")),
      nlohmann::json::parse(R"({"normalizer":"scale","features":784,"divisor":255.0})"));
}

TEST(InitFrom, BadCombinationsAndLayerNamesAreUsageErrors) {
  TempFolder tmp;
  TrainResult first = trainNetwork(seedNet(), quickSettings(tmp.file("first")));
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string weights = tmp.file("first/last.safetensors");
  struct Case {
    std::function<void(TrainSettings &)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&](TrainSettings &s) {
         s.initFrom = weights;
         s.resume = weights;
       },
       "--resume and --init-from exclude each other"},
      {[&](TrainSettings &s) { s.initSkip = {"Digit"}; }, "--init-skip needs --init-from"},
      {[&](TrainSettings &s) {
         s.initFrom = weights;
         s.initSkip = {"Digt"};
       },
       "--init-skip: network 'mnist' has no layer 'Digt'; did you mean 'Digit'?"},
      {[&](TrainSettings &s) {
         s.initFrom = weights;
         s.initSkip = {"Pic"};
       },
       "--init-skip: layer 'Pic' has no weights or biases"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    TrainSettings s = quickSettings(tmp.file("out"));
    c.change(s);
    TrainResult r = trainNetwork(seedNet(), s);
    EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
    EXPECT_CONTAINS(r.error, c.message);
    EXPECT_FALSE(std::filesystem::exists(tmp.file("out")));
  }
  TrainSettings missing = quickSettings(tmp.file("out"));
  missing.initFrom = tmp.file("none.safetensors");
  TrainResult r = trainNetwork(seedNet(), missing);
  EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
  EXPECT_CONTAINS(r.error, tmp.file("none.safetensors"));
}

// ---- --resume keeps its inputs ----

TEST(ResumeNormalizer, KeepsTheRecordedNormalizerWhateverTheDataNowHolds) {
  // A run trained on the whole slice, resumed on its first 250 digits: the
  // resumed run sees the inputs the weights were trained for, so it uses
  // (and records again) the normalizer fitted on the whole slice, not one
  // re-fitted on the 250 digits.
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("run"));
  s.epochs = 1;
  s.normalize = *parseNormalize("gaussian");
  TrainResult first = trainNetwork(seedNet(), s);
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string checkpoint = tmp.file("run/last.safetensors");
  const std::string recorded = readCheckpoint(checkpoint).metadata.at("normalizer");

  writeSliceHead(tmp.file("head"), 250);
  TrainSettings resumed = quickSettings(tmp.file("run"));
  resumed.dataDir = tmp.file("head");
  resumed.resume = checkpoint;
  SetupRecorder setup;
  TrainResult r = trainNetwork(seedNet(), resumed, &setup);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(readCheckpoint(checkpoint).metadata.at("normalizer"), recorded);
  EXPECT_CONTAINS(setup.text, "normalizer gaussian (recorded in " + checkpoint + ")");
  EXPECT_CONTAINS(setup.text, "resumed from " + checkpoint + " at epoch 1, step 16");
  EXPECT_EQ(setup.text.find("init uniform"), std::string::npos) << setup.text;
}

TEST(ResumeNormalizer, AnotherExplicitNormalizerIsRefusedNamingBoth) {
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("run"));
  s.epochs = 1;
  TrainResult first = trainNetwork(seedNet(), s); // minmax, the default
  ASSERT_TRUE(first.ok()) << describe(first);
  const std::string checkpoint = tmp.file("run/last.safetensors");
  const Bytes before = readBytes(checkpoint);

  TrainSettings resumed = quickSettings(tmp.file("run"));
  resumed.resume = checkpoint;
  resumed.normalize = *parseNormalize("scale:255");
  TrainResult r = trainNetwork(seedNet(), resumed);
  EXPECT_EQ(r.failure, FailureKind::Usage) << describe(r);
  EXPECT_CONTAINS(r.error,
                  "--normalize scale:255 differs from the normalizer minmax recorded in " + checkpoint);
  EXPECT_TRUE(readBytes(checkpoint) == before);

  resumed.normalize = *parseNormalize("minmax"); // the same one: accepted
  TrainResult same = trainNetwork(seedNet(), resumed);
  ASSERT_TRUE(same.ok()) << describe(same);
  EXPECT_EQ(same.epochs.size(), size_t(1));
}

// ---- hand-made checkpoints without the metadata that says how to read them ----

TEST(RequiredMetadata, MissingKeysAreRefusedInsteadOfGuessed) {
  // Without "epoch"/"step" a run cannot continue; without "normalizer" the
  // inputs the weights expect are unknown; without "task" the outputs cannot
  // be read. Each is refused with the key named and what to do; only
  // --init-from with an explicit --normalize can do without a normalizer.
  TempFolder tmp;
  TrainSettings s = quickSettings(tmp.file("run"));
  s.epochs = 1;
  ASSERT_TRUE(trainNetwork(seedNet(), s).ok());
  const std::string whole = tmp.file("run/last.safetensors");
  for (const char *key : {"epoch", "step", "normalizer"}) {
    SCOPED_TRACE(key);
    const std::string cut = tmp.file(std::string("no-") + key + ".safetensors");
    rewriteCheckpoint(whole, cut, {{key, ""}});
    TrainSettings resumed = quickSettings(tmp.file("resumed"));
    resumed.resume = cut;
    TrainResult r = trainNetwork(seedNet(), resumed);
    EXPECT_EQ(r.failure, FailureKind::Input) << describe(r);
    EXPECT_CONTAINS(r.error, cut + ": its metadata has no \"" + key + "\"");
    EXPECT_FALSE(std::filesystem::exists(tmp.file("resumed")));
  }
  const std::string noNormalizer = tmp.file("no-normalizer.safetensors");
  TrainSettings init = quickSettings(tmp.file("init"));
  init.epochs = 1;
  init.initFrom = noNormalizer;
  TrainResult refused = trainNetwork(seedNet(), init);
  EXPECT_EQ(refused.failure, FailureKind::Input) << describe(refused);
  EXPECT_CONTAINS(refused.error, "pass --normalize to fit one on the training data");
  init.normalize = *parseNormalize("minmax");
  SetupRecorder setup;
  ASSERT_TRUE(trainNetwork(seedNet(), init, &setup).ok());
  EXPECT_CONTAINS(setup.text, "normalizer minmax (fitted on the training data; " + noNormalizer +
                                  " records no normalizer)");

  ModelOptions oneThread;
  oneThread.threads = 1;
  ModelResult m = Model::load(seedNet(), noNormalizer, oneThread);
  EXPECT_EQ(m.failure, FailureKind::Input);
  EXPECT_CONTAINS(m.error, noNormalizer + ": its metadata has no \"normalizer\"");
  rewriteCheckpoint(whole, tmp.file("no-task.safetensors"), {{"task", ""}});
  m = Model::load(seedNet(), tmp.file("no-task.safetensors"), oneThread);
  EXPECT_EQ(m.failure, FailureKind::Input);
  EXPECT_CONTAINS(m.error, "its metadata has no \"task\" (multiclass, binary or regression)");
  rewriteCheckpoint(whole, tmp.file("bad-task.safetensors"), {{"task", "ranking"}});
  m = Model::load(seedNet(), tmp.file("bad-task.safetensors"), oneThread);
  EXPECT_CONTAINS(m.error, "its metadata has a bad \"task\"");
  // The weights alone with the keys that say how to read them load.
  rewriteCheckpoint(whole, tmp.file("weights.safetensors"),
                    {{"epoch", ""}, {"step", ""}, {"shuffle", ""}, {"rng", ""}, {"hyperparameters", ""}});
  m = Model::load(seedNet(), tmp.file("weights.safetensors"), oneThread);
  EXPECT_TRUE(m.model.has_value()) << m.error;
}

// ---- the classes the labels use ----

TEST(Classes, FewerClassesInTheLabelsAreRecordedAsTheOutputLayersAndReported) {
  // The slice is ordered by digit: its first 250 training digits are 0-4.
  TempFolder tmp;
  writeSliceHead(tmp.file("data"), 250);
  TrainSettings s = quickSettings(tmp.file("out"));
  s.dataDir = tmp.file("data");
  s.epochs = 1;
  SetupRecorder setup;
  TrainResult r = trainNetwork(seedNet(), s, &setup);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_CONTAINS(setup.text, "task multiclass, 10 classes (the labels use 5 of them), loss cross-entropy");
  EXPECT_EQ(readCheckpoint(tmp.file("out/last.safetensors")).metadata.at("classes"), "10");

  // All ten: no remark.
  SetupRecorder all;
  TrainSettings whole = quickSettings(tmp.file("whole"));
  whole.epochs = 1;
  ASSERT_TRUE(trainNetwork(seedNet(), whole, &all).ok());
  EXPECT_CONTAINS(all.text, "task multiclass, 10 classes, loss cross-entropy");
}

} // namespace
} // namespace netc::e2e
