// BenchCommand.cpp -- `netc bench FILE [--batch N] [--threads N] [--format
// json]`: training (forward, loss, backward, SGD-momentum update) and
// inference throughput of the compiled plan on random data, medians over
// repeats. bench/compare_torch.py runs it next to the same network in PyTorch.
// With --ranks N (or under mpirun/srun) every rank runs the data-parallel
// step, gradients all-reduced, and rank 0 prints the job's figures
// (bench/compare_ddp.py runs it next to PyTorch's DistributedDataParallel).
#include "CommandSupport.h"
#include "RankLauncher.h"

#include "netc/Training.h"
#include "support/PrintableText.h"

#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>

namespace netc::cli {

namespace {

struct BenchArgs {
  std::string file, format = "text";
  BenchSettings settings;
  RankRequest ranks; // --ranks, --gpus
  std::vector<std::string> commandLine;
};

int runBench(BenchArgs &args) {
  if (!readFileOrReport(args.file, args.settings.maxSourceBytes)) // NS0001, exit 2 (docs/cli.md)
    return kUsageError;
  if (auto done = settleLaunch(args.ranks, args.settings.device, args.settings.threads, args.commandLine,
                               args.settings.launch))
    return *done;
  const bool rankZero = args.settings.launch.rank == 0;
  BenchResult r = bench(args.file, args.settings);
  if (!r.diagnostics.empty() && rankZero)
    std::fputs(r.diagnostics.c_str(), stderr);
  if (r.failure != FailureKind::None) {
    printError(r.error);
    return r.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  if (!rankZero) // rank 0 reports the job's figures
    return kSuccess;
  if (!r.kernelWarning.empty())
    std::fprintf(stderr, "netc: warning: %s\n", r.kernelWarning.c_str());
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
                        {"backend", r.backend},
                        {"device", r.device},
                        {"dense_kernels", r.denseKernels},
                        {"launches_per_step", r.launchesPerStep},
                        {"resident_input", args.settings.residentInput},
                        {"device_bytes", r.deviceBytes},
                        {"ranks", r.ranks}};
    if (args.settings.profile) {
      nlohmann::json ops = nlohmann::json::array();
      for (const OpProfile &p : r.profile)
        ops.push_back({{"section", p.section},
                       {"op", p.op},
                       {"output", p.output},
                       {"microseconds", p.microseconds},
                       {"flops", p.flops},
                       {"bytes", p.bytes},
                       {"bf16", p.bf16}});
      j["profile"] = ops;
      j["peak"] = {{"gflops", r.peak.gflops},
                   {"gflops_per_core", r.peak.gflopsPerCore},
                   {"gb_per_second", r.peak.gbPerSecond},
                   {"caches", nlohmann::json::array()},
                   {"bf16_gflops", r.peak.bf16Gflops},
                   {"bf16_gflops_per_core", r.peak.bf16GflopsPerCore}};
      for (const PeakRates::CacheCeiling &level : r.peak.caches)
        j["peak"]["caches"].push_back({{"bytes", level.bytes}, {"gb_per_second", level.gbPerSecond}});
    }
    std::printf("%s\n", j.dump().c_str());
    return kSuccess;
  }
  if (args.format == "text")
    printOpProfile(r.profile, &r.peak);
  std::printf(
      "%s",
      fmt::format("{}: batch {}{}, {} thread(s){}, {} parameters\n"
                  "training   {:>10.0f} images/s (median of {})\n"
                  "inference  {:>10.0f} images/s (median of {})\n"
                  "memory     {:.1f} MiB training, {:.1f} MiB inference per batch\n"
                  "device     {}: {}{}\n{}{}",
                  printableText(args.file), r.batch, r.ranks > 1 ? " per rank" : "", r.threads,
                  r.ranks > 1 ? fmt::format(" per rank, {} ranks (data parallel)", r.ranks) : std::string(),
                  r.params, r.trainImagesPerSecond, r.trainRuns.size(), r.inferImagesPerSecond,
                  r.inferRuns.size(), r.trainBytesPerBatch / (1 << 20), r.inferBytesPerBatch / (1 << 20),
                  r.backend, r.device,
                  r.deviceNote.empty() ? std::string() : fmt::format(" ({})", r.deviceNote),
                  r.denseKernels.empty() ? std::string() : fmt::format("dense      {}\n", r.denseKernels),
                  r.threadNote.empty() ? std::string() : fmt::format("threads    {}\n", r.threadNote))
          .c_str());
  return kSuccess;
}

} // namespace

void addBenchCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine) {
  auto args = std::make_shared<BenchArgs>();
  args->commandLine = commandLine;
  BenchSettings &s = args->settings;
  CLI::App *cmd =
      app.add_subcommand("bench", "Training and inference throughput of a network on random data");
  cmd->add_option("file", args->file, "Net# file")->required();
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  addIntegerOption(*cmd, "--batch", s.batch, int64_t{1}, kMaxInt64, "Samples per step");
  addThreadsOption(*cmd, s.threads);
  addMaxSourceSizeOption(*cmd, s.maxSourceBytes);
  addMaxMemoryOption(*cmd, s.maxMemory);
  addCpuIsaOption(*cmd, s.cpuIsa);
  addDenseKernelOption(*cmd, s.denseKernel);
  addIntegerOption(*cmd, "--warmup", s.warmup, int64_t{0}, kMaxInt64, "Untimed steps first");
  addIntegerOption(*cmd, "--iterations", s.iterations, int64_t{1}, kMaxInt64, "Timed steps per repeat");
  addIntegerOption(*cmd, "--repeats", s.repeats, int64_t{1}, kMaxInt64, "Repeats (the median is reported)");
  addIntegerOption(*cmd, "--input-size", s.inputSize, int64_t{1}, kMaxInt64,
                   "Features per sample for an 'auto' input that nothing sizes");
  addDeviceOptions(*cmd, s);
  addRanksOption(*cmd, args->ranks);
  cmd->add_option("--comm-timeout", s.commTimeout,
                  "Seconds any rank waits for the others before naming the rank that did not answer")
      ->check([](const std::string &text) { return positiveNumberFlagProblem(text, kMaxCommTimeout); })
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", s.bucketMb,
                  "MiB of gradients the ranks all-reduce at once while the backward pass goes on")
      ->check([](const std::string &text) { return positiveNumberFlagProblem(text, kMaxBucketMb); })
      ->type_name("MB")
      ->capture_default_str();
  cmd->add_flag("--profile", s.profile,
                "Also time each op of the training plan on its own and print the median per step");
  cmd->add_flag("--resident-input", s.residentInput,
                "Copy the random batch in once, not before every step (a GPU's figure without the copy)");
  cmd->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] { exitCode = runBench(*args); });
}

} // namespace netc::cli
