// EvalCommand.cpp -- `netc eval FILE --weights CKPT --data DIR`: loss,
// accuracy, per-class accuracy and the confusion matrix of a trained network
// on a data folder's test set (its training set when it has none), as text
// or `--format json`; a note on stderr when a CSV's first row was a header.
#include "CommandSupport.h"

#include "support/PrintableText.h"

#include "netc/Training.h"

#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>

namespace netc::cli {

namespace {

struct EvalArgs {
  std::string file, weights, data, format = "text";
  ModelOptions model;
};

std::string evaluationText(const EvaluationResult &e) {
  std::string out = fmt::format("samples   {}\nloss      {:.4f}\n", e.samples, e.loss);
  if (!e.classification)
    return out;
  out += fmt::format("accuracy  {:.2f}%\n\nper-class accuracy:\n", 100 * e.accuracy);
  for (size_t c = 0; c < e.classAccuracy.size(); ++c)
    out += fmt::format("  {:>3}  {:6.2f}%\n", c, 100 * e.classAccuracy[c]);
  out += "\nconfusion matrix (rows: actual, columns: predicted):\n     ";
  for (size_t c = 0; c < e.confusion.size(); ++c)
    out += fmt::format("{:>6}", c);
  out += "\n";
  for (size_t a = 0; a < e.confusion.size(); ++a) {
    out += fmt::format("{:>5}", a);
    for (int64_t n : e.confusion[a])
      out += fmt::format("{:>6}", n);
    out += "\n";
  }
  return out;
}

int runEval(const EvalArgs &args) {
  int status = kSuccess;
  std::optional<Model> model = loadModelOrReport(args.file, args.weights, args.model, status);
  if (!model)
    return status;
  std::string error;
  EvaluationResult e = model->evaluate(args.data, error);
  if (!error.empty()) {
    printError(error);
    return kInputError;
  }
  if (!e.headerNote.empty())
    std::fprintf(stderr, "netc: note: %s\n", printableText(e.headerNote).c_str());
  if (args.format == "json") {
    nlohmann::json j = {{"samples", e.samples}, {"loss", e.loss}};
    if (e.classification) {
      j["accuracy"] = e.accuracy;
      j["class_accuracy"] = e.classAccuracy;
      j["confusion"] = e.confusion;
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s", evaluationText(e).c_str());
  }
  return kSuccess;
}

} // namespace

void addEvalCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App *cmd = app.add_subcommand("eval", "Evaluate a trained network on a data folder");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--weights", args->weights,
                  "Checkpoint written by netc train (e.g. runs/mnist/best.safetensors)")
      ->required();
  cmd->add_option("--data", args->data, "Data folder (its test set, else its training set)")->required();
  addIntegerOption(*cmd, "--batch", args->model.batch, int64_t{1}, std::numeric_limits<int64_t>::max(),
                   "Samples per forward pass");
  addThreadsOption(*cmd, args->model.threads);
  addMaxSourceSizeOption(*cmd, args->model.maxSourceBytes);
  addMaxMemoryOption(*cmd, args->model.maxMemory);
  addCpuIsaOption(*cmd, args->model.cpuIsa);
  addDenseKernelOption(*cmd, args->model.denseKernel);
  addDeviceOptions(*cmd, args->model);
  cmd->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runEval(*args); });
}

} // namespace netc::cli
