// PredictCommand.cpp -- `netc predict FILE --weights CKPT INPUT...`: runs a
// trained network on inputs -- IDX image files (every image), CSV rows (the
// network's input size, or one more with a leading label that is ignored),
// PGM or PNG images -- and prints the top classes with their probabilities
// (or the output values of a regression), as text or `--format json`.
#include "CommandSupport.h"

#include "netc/Training.h"
#include "runtime/data/Csv.h"
#include "runtime/data/Idx.h"
#include "runtime/data/Images.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <limits>
#include <numeric>

namespace netc::cli {

namespace {

struct PredictArgs {
  std::string file, weights, format = "text";
  std::vector<std::string> inputs;
  int64_t top = 3;
  ModelOptions model;
};

struct Samples {
  std::vector<float> features;
  int64_t count = 0;
};

bool isIdx(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[4] = {};
  if (!in.read(reinterpret_cast<char *>(magic), 4))
    return false;
  if (magic[0] == 0x1f && magic[1] == 0x8b) // gzip: assume a gzipped IDX file
    return true;
  // Any IDX magic (two zero bytes, then the type and the dimension count), so
  // that a labels file or a 4-D file is refused by the IDX reader with its
  // magic number named, not read as CSV.
  return magic[0] == 0 && magic[1] == 0;
}

/// Reads one INPUT into samples of `n` features; the message names the file.
Expected<Samples> readInput(const std::string &path, const Model &model) {
  const int64_t n = model.inputSize();
  std::vector<int64_t> shape = model.inputShape();
  auto shapeText = [](const std::vector<int64_t> &s) {
    std::string t;
    for (size_t i = 0; i < s.size(); ++i)
      t += fmt::format("{}{}", i ? "×" : "", s[i]);
    return t;
  };
  const std::string ext = path.size() >= 4 ? path.substr(path.size() - 4) : "";
  if (ext == ".pgm" || ext == ".png" || ext == ".PNG" || ext == ".PGM") {
    auto image = data::loadImage(path);
    if (!image)
      return image.error();
    if (image->height * image->width != n)
      return fail(fmt::format("{}: the image is {}×{} ({} pixels) but the network reads {} values ({})", path,
                              image->height, image->width, image->height * image->width, n,
                              shapeText(shape)));
    return Samples{std::move(image->pixels), 1};
  }
  if (isIdx(path)) {
    auto idx = data::readIdxFile(path, data::kIdxImagesMagic);
    if (!idx)
      return idx.error();
    int64_t per = 1;
    for (size_t d = 1; d < idx->dims.size(); ++d)
      per *= idx->dims[d];
    if (per != n)
      return fail(fmt::format("{}: images have {} pixels but the network reads {} values ({})", path, per, n,
                              shapeText(shape)));
    return Samples{std::vector<float>(idx->bytes.begin(), idx->bytes.end()),
                   idx->dims.empty() ? 0 : idx->dims[0]};
  }
  auto csv = data::loadCsv(path);
  if (!csv)
    return csv.error();
  Samples s;
  s.count = csv->count;
  if (csv->featureCount == n) { // a leading label column, ignored
    s.features = std::move(csv->features);
    return s;
  }
  if (csv->featureCount + 1 == n) { // no label column: the "label" is the first feature
    for (int64_t i = 0; i < csv->count; ++i) {
      s.features.push_back(csv->labels[static_cast<size_t>(i)]);
      auto row = csv->row(i);
      s.features.insert(s.features.end(), row.begin(), row.end());
    }
    return s;
  }
  return fail(
      fmt::format("{}: rows have {} values but the network reads {} (optionally after a label column)", path,
                  csv->featureCount + 1, n));
}

int runPredict(const PredictArgs &args) {
  if (args.top < 1) {
    std::fprintf(stderr, "netc: error: --top must be at least 1, got %lld\n",
                 static_cast<long long>(args.top));
    return kUsageError;
  }
  int status = kSuccess;
  std::optional<Model> loaded = loadModelOrReport(args.file, args.weights, args.model, status);
  if (!loaded)
    return status;
  const Model &model = *loaded;
  nlohmann::json all = nlohmann::json::array();
  for (const std::string &input : args.inputs) {
    auto samples = readInput(input, model);
    if (!samples) {
      std::fprintf(stderr, "netc: error: %s\n", samples.message().c_str());
      return kInputError;
    }
    if (samples->count == 0)
      continue;
    std::vector<float> out = model.predict(samples->features);
    const int64_t k = model.outputSize();
    for (int64_t i = 0; i < samples->count; ++i) {
      const float *row = out.data() + i * k;
      std::string label = samples->count > 1 ? fmt::format("{}[{}]", input, i) : input;
      nlohmann::json entry = {{"input", input}, {"index", i}, {"outputs", std::vector<float>(row, row + k)}};
      if (!model.classification()) {
        if (args.format == "text")
          std::printf("%s: %s\n", label.c_str(), fmt::format("{:g}", fmt::join(row, row + k, " ")).c_str());
        all.push_back(entry);
        continue;
      }
      std::vector<int64_t> order(static_cast<size_t>(k == 1 ? 2 : k));
      std::iota(order.begin(), order.end(), 0);
      auto probability = [&](int64_t c) { return k == 1 ? (c == 1 ? row[0] : 1 - row[0]) : row[c]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return probability(a) > probability(b); });
      order.resize(static_cast<size_t>(std::min<int64_t>(args.top, static_cast<int64_t>(order.size()))));
      nlohmann::json top = nlohmann::json::array();
      std::string text;
      for (int64_t c : order) {
        top.push_back({{"class", c}, {"probability", probability(c)}});
        text += fmt::format("{}{} ({:.1f}%)", text.empty() ? "" : ", ", c, 100 * probability(c));
      }
      entry["top"] = top;
      if (args.format == "text")
        std::printf("%s: %s\n", label.c_str(), text.c_str());
      all.push_back(entry);
    }
  }
  if (args.format == "json")
    std::printf("%s\n", all.dump().c_str());
  return kSuccess;
}

} // namespace

void addPredictCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App *cmd =
      app.add_subcommand("predict", "Predict with a trained network: top classes with probabilities");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("inputs", args->inputs, "IDX image files, CSV files, PGM or PNG images")->required();
  cmd->add_option("--weights", args->weights, "Checkpoint written by netc train")->required();
  addIntegerOption(*cmd, "--top", args->top, int64_t{1}, std::numeric_limits<int64_t>::max(),
                   "How many classes to show per input");
  addThreadsOption(*cmd, args->model.threads);
  addMaxMemoryOption(*cmd, args->model.maxMemory);
  addCpuIsaOption(*cmd, args->model.cpuIsa);
  addDeviceOptions(*cmd, args->model);
  cmd->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runPredict(*args); });
}

} // namespace netc::cli
