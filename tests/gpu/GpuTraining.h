// GpuTraining.h -- what the GPU tests that train through trainNetwork
// share: the short run on the MNIST slice they compare variants of (two
// epochs, batch 32, a validation split, on cuda) and a file's bytes, for
// comparing the checkpoints the variants write.
#pragma once

#include "../numeric/PlanHarness.h"
#include "netc/Training.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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

} // namespace netc::numeric
