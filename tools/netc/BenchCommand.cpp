// BenchCommand.cpp -- `netc bench FILE [--batch N] [--threads N] [--format
// json]`: training (forward, loss, backward, SGD-momentum update) and
// inference throughput of the compiled plan on random data, medians over
// repeats. bench/compare_torch.py runs it next to the same network in PyTorch.
#include "CommandSupport.h"

#include "netc/Training.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace netc::cli {

namespace {

struct BenchArgs {
  std::string file, format = "text";
  BenchSettings settings;
};

int runBench(const BenchArgs &args) {
  if (!readFileOrReport(args.file)) // NS0001, exit 2 like check/show/fmt/compile (docs/cli.md)
    return kUsageError;
  BenchResult r = bench(args.file, args.settings);
  if (!r.diagnostics.empty())
    std::fputs(r.diagnostics.c_str(), stderr);
  if (r.failure != FailureKind::None) {
    std::fprintf(stderr, "netc: error: %s\n", r.error.c_str());
    return r.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  if (args.format == "json") {
    nlohmann::json j = {{"train_images_per_sec", r.trainImagesPerSecond},
                        {"infer_images_per_sec", r.inferImagesPerSecond},
                        {"train_runs", r.trainRuns},
                        {"infer_runs", r.inferRuns},
                        {"batch", r.batch},
                        {"threads", r.threads},
                        {"params", r.params},
                        {"train_bytes_per_batch", r.trainBytesPerBatch},
                        {"infer_bytes_per_batch", r.inferBytesPerBatch},
                        {"backend", args.settings.backend}};
    std::printf("%s\n", j.dump().c_str());
    return kSuccess;
  }
  std::printf("%s", fmt::format("{}: batch {}, {} thread(s), {} parameters\n"
                                "training   {:>10.0f} images/s (median of {})\n"
                                "inference  {:>10.0f} images/s (median of {})\n"
                                "memory     {:.1f} MiB training, {:.1f} MiB inference per batch\n",
                                args.file, r.batch, r.threads, r.params, r.trainImagesPerSecond,
                                r.trainRuns.size(), r.inferImagesPerSecond, r.inferRuns.size(),
                                r.trainBytesPerBatch / (1 << 20), r.inferBytesPerBatch / (1 << 20))
                        .c_str());
  return kSuccess;
}

} // namespace

void addBenchCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<BenchArgs>();
  BenchSettings &s = args->settings;
  CLI::App *cmd =
      app.add_subcommand("bench", "Training and inference throughput of a network on random data");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--batch", s.batch, "Samples per step")->capture_default_str();
  cmd->add_option("--threads", s.threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd->add_option("--warmup", s.warmup, "Untimed steps first")->capture_default_str();
  cmd->add_option("--iterations", s.iterations, "Timed steps per repeat")->capture_default_str();
  cmd->add_option("--repeats", s.repeats, "Repeats (the median is reported)")->capture_default_str();
  cmd->add_option("--input-size", s.inputSize, "Features per sample for an 'auto' input that nothing sizes");
  cmd->add_option("--backend", s.backend, "Execution backend")->capture_default_str();
  cmd->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runBench(*args); });
}

} // namespace netc::cli
