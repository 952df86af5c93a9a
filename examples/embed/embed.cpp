// embed.cpp -- the embedding example: compiles a Net# network from a string
// with netc's C++ API and prints each layer's shape and parameter count.
// Given a network file and a data folder, it then trains that network with
// the training API, loads the best checkpoint as a netc::Model and
// classifies the first test digit:
//   netc_embed_example [NET DATA_DIR OUT_DIR]
#include "netc/Training.h"
#include "netc/netc.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int compileFromString() {
  const char *source = R"(
    const { T = true; F = false; }
    input Picture [28, 28];
    hidden C1 [5, 12, 12] from Picture convolve {
      InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;
    }
    hidden H [100] from C1 all;
    output Digit [10] softmax from H all;
  )";
  netc::CompileResult result = netc::compile(source, "embedded.net");
  if (!result.ok()) {
    std::fputs(result.formattedDiagnostics.c_str(), stderr);
    return 1;
  }
  const netc::Network &net = *result.network;
  std::printf("network %s: %lld parameters\n", net.name().c_str(), static_cast<long long>(net.params()));
  for (const netc::LayerInfo &layer : net.layers()) {
    std::printf("  %-8s %-6s [", layer.name.c_str(), layer.kind.c_str());
    for (size_t i = 0; i < layer.shape.size(); ++i)
      std::printf("%s%lld", i ? ", " : "", static_cast<long long>(layer.shape[i]));
    std::printf("] %lld params\n", static_cast<long long>(layer.params));
  }
  return 0;
}

/// The bytes of a raw IDX file after its header (`headerBytes` long).
std::vector<unsigned char> idxPayload(const std::string &path, size_t headerBytes) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() <= headerBytes)
    return {};
  return {bytes.begin() + static_cast<long>(headerBytes), bytes.end()};
}

int trainAndClassify(const std::string &net, const std::string &data, const std::string &out) {
  netc::TrainSettings settings;
  settings.dataDir = data;
  settings.epochs = 10;
  settings.batch = 32;
  settings.learningRate = 0.1f;
  settings.momentum = 0.9f;
  settings.init = netc::InitKind::Xavier;
  settings.seed = 1;
  settings.threads = 1;
  settings.outDir = out;
  settings.overwrite = true; // replace the run a previous call left there
  netc::TrainResult trained = netc::trainNetwork(net, settings);
  if (!trained.ok()) {
    std::fprintf(stderr, "%s%s\n", trained.diagnostics.c_str(), trained.error.c_str());
    return 1;
  }
  std::printf("trained %zu epochs: test accuracy %.1f%%\n", trained.epochs.size(),
              100 * trained.epochs.back().testAccuracy.value_or(0));

  netc::ModelResult loaded = netc::Model::load(net, out + "/best.safetensors");
  if (!loaded.model) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return 1;
  }
  const netc::Model &model = *loaded.model;
  std::vector<unsigned char> images = idxPayload(data + "/t10k-images-idx3-ubyte", 16);
  std::vector<unsigned char> labels = idxPayload(data + "/t10k-labels-idx1-ubyte", 8);
  if (images.size() < static_cast<size_t>(model.inputSize()) || labels.empty()) {
    std::fprintf(stderr, "no test digits in %s\n", data.c_str());
    return 1;
  }
  std::vector<float> digit(images.begin(), images.begin() + model.inputSize()); // raw pixels 0..255
  std::vector<float> probabilities = model.predict(digit);
  size_t best = 0;
  for (size_t i = 1; i < probabilities.size(); ++i)
    if (probabilities[i] > probabilities[best])
      best = i;
  std::printf("first test digit: predicted %zu (%.1f%%), label %d\n", best, 100 * probabilities[best],
              labels[0]);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (int status = compileFromString())
    return status;
  if (argc == 4)
    return trainAndClassify(argv[1], argv[2], argv[3]);
  return 0;
}
