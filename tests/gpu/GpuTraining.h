// GpuTraining.h -- what the GPU tests that train through trainNetwork
// share: the short run on the MNIST slice they compare variants of (two
// epochs, batch 32, a validation split, on cuda), and the comparison
// itself: every variant ends with the first's checkpoint bytes and epoch
// losses.
#pragma once

#include "../numeric/PlanHarness.h"
#include "netc/Training.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace netc::numeric {

/// Two epochs of the MNIST slice on the GPU, from a fixed seed.
inline TrainSettings sliceTraining() {
  TrainSettings s;
  s.dataDir = sourcePath("tests/fixtures/mnist-slice");
  s.epochs = 2;
  s.batch = 32;
  s.learningRate = 0.05f;
  s.momentum = 0.9f;
  s.init = InitKind::Xavier;
  s.seed = 11;
  s.validationFraction = 0.2;
  s.device = "cuda";
  return s;
}

/// The bytes of the file at `path` (empty when it cannot be read).
inline std::string bytesOf(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A change to sliceTraining(), named for the test's messages.
using TrainingVariant = std::pair<std::string, std::function<void(TrainSettings &)>>;

/// Trains examples/`example`.net once per variant (the first is the
/// reference) into folders under `dir`, and expects every later run to end
/// with the reference's checkpoint bytes and per-epoch losses.
inline void expectVariantsTrainAlike(const std::string &example, const std::filesystem::path &dir,
                                     const std::vector<TrainingVariant> &variants) {
  SCOPED_TRACE(example);
  std::vector<TrainResult> results;
  std::vector<std::string> checkpoints;
  for (size_t k = 0; k < variants.size(); ++k) {
    TrainSettings run = sliceTraining();
    variants[k].second(run);
    run.outDir = (dir / fmt::format("{}-{}", example, k)).string();
    results.push_back(trainNetwork(sourcePath("examples/" + example + ".net"), run));
    ASSERT_TRUE(results.back().ok()) << variants[k].first << ": " << results.back().error;
    checkpoints.push_back(bytesOf(std::filesystem::path(run.outDir) / "last.safetensors"));
  }
  ASSERT_FALSE(checkpoints[0].empty());
  for (size_t k = 1; k < variants.size(); ++k) {
    SCOPED_TRACE(variants[k].first + " against " + variants[0].first);
    EXPECT_TRUE(checkpoints[k] == checkpoints[0]) << "the checkpoints differ";
    ASSERT_EQ(results[k].epochs.size(), results[0].epochs.size());
    for (size_t e = 0; e < results[0].epochs.size(); ++e) {
      EXPECT_EQ(results[k].epochs[e].trainLoss, results[0].epochs[e].trainLoss) << "epoch " << e + 1;
      EXPECT_EQ(results[k].epochs[e].testLoss, results[0].epochs[e].testLoss) << "epoch " << e + 1;
    }
  }
}

} // namespace netc::numeric
