// PredictCommand.cpp -- `netc predict FILE --weights CKPT INPUT...`: runs a
// trained network on inputs -- IDX image files (every image), CSV rows (the
// network's input size, or one more with a leading label that is ignored),
// PGM or PNG images -- and prints the top classes with their probabilities
// (or the output values of a regression), as text or `--format json`. A
// file is read as IDX or CSV by its first bytes; binary data that is neither
// is refused, and an output that is not finite is an error.
#include "CommandSupport.h"

#include "netc/Training.h"
#include "runtime/data/Csv.h"
#include "runtime/data/Idx.h"
#include "runtime/data/Images.h"
#include "support/InputFile.h"
#include "support/PrintableText.h"

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
  /// Why a CSV's first row was taken as a header ("" when it was data).
  std::string headerNote;
};

/// What an INPUT that is not an image holds, judged by its first bytes.
struct Sniffed {
  enum Kind { Idx, Csv, Binary } kind = Csv;
  std::string why; ///< Binary: why it is neither IDX nor CSV
};

Sniffed sniffInput(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[512] = {};
  in.read(reinterpret_cast<char *>(head), sizeof head);
  const auto size = static_cast<size_t>(in.gcount());
  if (size >= 2 && head[0] == 0x1f && head[1] == 0x8b) // gzip: assume a gzipped IDX file
    return {Sniffed::Idx, {}};
  // Any IDX magic (two zero bytes, then the type and the dimension count), so
  // that a labels file or a 4-D file is refused by the IDX reader with its
  // magic number named, not read as CSV.
  if (size >= 2 && head[0] == 0 && head[1] == 0)
    return {Sniffed::Idx, {}};
  if (size >= 2 && ((head[0] == 0xff && head[1] == 0xfe) || (head[0] == 0xfe && head[1] == 0xff)))
    return {Sniffed::Csv, {}}; // UTF-16 text: the CSV reader says so
  for (size_t i = 0; i < size; ++i) {
    const unsigned char c = head[i];
    if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
      continue;
    const std::string magic =
        size >= 4
            ? fmt::format("its magic number 0x{:02x}{:02x}{:02x}{:02x} is not 0x{:08x}, unsigned-byte images",
                          head[0], head[1], head[2], head[3], data::kIdxImagesMagic)
            : "it is shorter than an IDX header";
    return {
        Sniffed::Binary,
        fmt::format("neither an IDX image file ({}) nor CSV text (byte {} is 0x{:02X}, a control character)",
                    magic, i, c)};
  }
  return {Sniffed::Csv, {}};
}

/// Reads one INPUT into samples of `n` features; the message names the file.
Expected<Samples> readInput(const std::string &path, const Model &model) {
  // Before anything opens it: a FIFO or a device is refused, never waited on.
  if (std::string problem = inputFileProblem(path); !problem.empty())
    return fail(problem);
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
    return Samples{std::move(image->pixels), 1, {}};
  }
  const Sniffed sniffed = sniffInput(path);
  if (sniffed.kind == Sniffed::Binary)
    return fail(
        fmt::format("{}: {}; expected IDX images, CSV rows, or a .pgm or .png image", path, sniffed.why));
  if (sniffed.kind == Sniffed::Idx) {
    auto idx = data::readIdxFile(path, data::kIdxImagesMagic);
    if (!idx)
      return idx.error();
    int64_t per = 1;
    for (size_t d = 1; d < idx->dims.size(); ++d)
      per *= idx->dims[d];
    if (per != n)
      return fail(fmt::format("{}: images have {} pixels but the network reads {} values ({})", path, per, n,
                              shapeText(shape)));
    return Samples{
        std::vector<float>(idx->bytes.begin(), idx->bytes.end()), idx->dims.empty() ? 0 : idx->dims[0], {}};
  }
  // Rows of n values have no label; rows of n + 1 a leading one, ignored.
  data::CsvOptions options;
  options.unlabelledWidth = n;
  auto csv = data::loadCsv(path, options);
  if (!csv)
    return csv.error();
  Samples s;
  s.count = csv->count;
  s.headerNote = csv->headerNote;
  if (csv->featureCount == n) {
    s.features = std::move(csv->features);
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
      printError(samples.message());
      return kInputError;
    }
    if (!samples->headerNote.empty())
      std::fprintf(stderr, "netc: note: %s\n", printableText(samples->headerNote).c_str());
    if (samples->count == 0)
      continue;
    std::string error;
    std::vector<float> out = model.predict(samples->features, error);
    if (!error.empty()) {
      printError(input + ": " + error);
      return kInputError;
    }
    const int64_t k = model.outputSize();
    for (int64_t i = 0; i < samples->count; ++i) {
      const float *row = out.data() + i * k;
      const std::string shown = printableText(input); // a file name, in text: escaped
      std::string label = samples->count > 1 ? fmt::format("{}[{}]", shown, i) : shown;
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
    std::printf("%s\n", all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
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
  addMaxSourceSizeOption(*cmd, args->model.maxSourceBytes);
  addMaxMemoryOption(*cmd, args->model.maxMemory);
  addCpuIsaOption(*cmd, args->model.cpuIsa);
  addDenseKernelOption(*cmd, args->model.denseKernel);
  addDeviceOptions(*cmd, args->model);
  cmd->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runPredict(*args); });
}

} // namespace netc::cli
