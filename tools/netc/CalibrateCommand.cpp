// CalibrateCommand.cpp -- `netc calibrate (-o FILE | --cache) [--quick]
// [--device cpu] [--threads-list 1,2] [--ranks N] [--iterations N] [--rounds N]
// [--overwrite]`: measures a cost table with short micro-benchmarks
// (api/Calibrate.cpp) and writes it for `--cost-model FILE`, or with --cache
// as this machine's table in netc's cache folder, which the estimates read
// by default. Under --ranks N (or mpirun) the ranks first measure the link
// between them. A progress line on stderr.
#include "CommandSupport.h"
#include "RankLauncher.h"

#include "api/Backends.h"
#include "api/CostTableChoice.h"
#include "netc/Estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace netc::cli {

namespace {

struct CalibrateArgs {
  CalibrateSettings settings;
  RankRequest ranks;
  bool quiet = false;
  bool cache = false; // --cache: this machine's table in netc's cache folder
  bool quick = false; // --quick: the few seconds' calibration a first estimate makes
  CLI::Option *iterations = nullptr, *rounds = nullptr;
  std::vector<std::string> commandLine;
};

int runCalibrate(CalibrateArgs &args) {
  CalibrateSettings &s = args.settings;
  if (args.cache == !s.outPath.empty()) {
    printError(args.cache ? "--cache and -o both name where the cost table goes: pass one"
                          : "-o FILE or --cache is required: where the cost table goes");
    return kUsageError;
  }
  if (args.quick) { // what a first estimate measures, unless the flags say otherwise
    const CalibrateSettings quick = training::quickCalibration("", {});
    s.batches = quick.batches;
    if (args.iterations->count() == 0)
      s.iterations = quick.iterations;
    if (args.rounds->count() == 0)
      s.rounds = quick.rounds;
  }
  if (args.cache) {
    if (s.device != "cpu") {
      printError("--cache keeps a CPU table (netc's default estimates read it); a GPU's goes to -o FILE and "
                 "--cost-model FILE");
      return kUsageError;
    }
    const auto folder = training::costTableCacheFolder();
    const auto machine = describeHostMachine(s.cpuIsa, s.denseKernel);
    if (!folder) {
      printError("--cache: netc's cache is off (NETC_CACHE_DIR is empty, or no home folder is known); pass "
                 "-o FILE instead");
      return kUsageError;
    }
    if (!machine) {
      printError(fmt::format("--cpu-isa {}: this processor does not run it", s.cpuIsa));
      return kUsageError;
    }
    std::error_code ec;
    std::filesystem::create_directories(*folder, ec);
    if (ec) {
      printError(
          fmt::format("--cache: cannot make netc's cache folder {}: {}", folder->string(), ec.message()));
      return kInputError;
    }
    s.outPath = (*folder / cost::machineCacheFileName(*machine)).string();
    s.overwrite = true;
  }
  // The ranks of a CPU job (mpirun); calibrate refuses --ranks with --device cuda.
  // Rank 0 measures profiles of up to every core's threads alone, so the
  // ranks must not be bound to one core each, as mpirun binds one-thread ranks.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto done = settleLaunch(args.ranks, "cpu", cores, args.commandLine, s.launch))
    return *done;
  std::string command = "netc calibrate";
  for (size_t i = 1; i < args.commandLine.size(); ++i)
    if (args.commandLine[i] != "calibrate")
      command += " " + args.commandLine[i];
  s.command = command;
  bool terminal = isatty(fileno(stderr)) != 0;
  const bool report = !args.quiet && s.launch.rank == 0;
  CalibrateResult r = calibrate(s, report ? printCalibrationProgress : nullptr, &terminal);
  if (!r.ok()) {
    printError(r.error);
    return r.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  if (s.launch.rank != 0)
    return kSuccess;
  for (const std::string &warning : r.warnings)
    std::fprintf(stderr, "netc: warning: %s\n", warning.c_str());
  if (!args.quiet)
    for (const std::string &line : r.lines)
      std::printf("%s\n", line.c_str());
  if (args.cache)
    std::printf("wrote this machine's cost table %s in %.1f s; netc estimate and netc train read it by "
                "default (--cost-model machine)\n",
                r.outPath.c_str(), r.seconds);
  else
    std::printf("wrote the cost table %s in %.1f s; use it with --cost-model %s\n", r.outPath.c_str(),
                r.seconds, r.outPath.c_str());
  return kSuccess;
}

} // namespace

void addCalibrateCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine) {
  auto args = std::make_shared<CalibrateArgs>();
  args->commandLine = commandLine;
  CalibrateSettings &s = args->settings;
  CLI::App *cmd = app.add_subcommand(
      "calibrate", "Measure this machine's cost table (for netc estimate and the partition) with short "
                   "micro-benchmarks");
  addPathOption(*cmd, "-o,--out", s.outPath, "Where the cost table goes (JSON)", "name the table's file");
  cmd->add_flag("--cache", args->cache,
                "Keep the table as this machine's in netc's cache folder ($NETC_CACHE_DIR, else "
                "~/.cache/netc), where netc estimate and netc train read it by default, instead of -o");
  cmd->add_flag("--quick", args->quick,
                "Measure in a few seconds, as a first estimate on a new machine does: batches 8 and 128, "
                "one round of 8 steps");
  cmd->add_option("--device", s.device, "What to measure: cpu, or cuda / cuda:N (one GPU)")
      ->check([](const std::string &v) {
        return v == "cpu" || v == "cuda" || (v.rfind("cuda:", 0) == 0 && v.size() > 5)
                   ? std::string()
                   : "cpu, cuda or cuda:N";
      })
      ->capture_default_str();
  cmd->add_option("--threads-list", s.threads,
                  "Thread counts to measure, comma-separated (default: 1 and all cores)")
      ->delimiter(',')
      ->check([](const std::string &item) -> std::string {
        // CLI11 would read an empty list, or the empty item of "1,,2", as 0.
        return item.find_first_not_of(" \t") == std::string::npos
                   ? "an empty list or item names no thread count; expected counts separated by commas, "
                     "e.g. --threads-list 1,2"
                   : "";
      });
  args->iterations = addIntegerOption(*cmd, "--iterations", s.iterations, int64_t{1}, int64_t{1000},
                                      "Timed steps per network")
                         ->capture_default_str();
  args->rounds =
      addIntegerOption(*cmd, "--rounds", s.rounds, int64_t{1}, int64_t{20},
                       "Rounds of every measurement, one after another; each time is the median of its "
                       "rounds' medians, so a burst of load that hits one round does not move it")
          ->capture_default_str();
  addCpuIsaOption(*cmd, s.cpuIsa);
  addDenseKernelOption(*cmd, s.denseKernel);
  addRanksOption(*cmd, args->ranks);
  // calibrate has no --batch (its probes choose their batches): say --ranks without it.
  cmd->get_option("--ranks")->description(
      "Data-parallel processes on this machine, started through Open MPI's mpirun (on --device cuda: one per "
      "GPU, as --gpus), which also time the link's all-reduces; under mpirun or srun it must equal the ranks "
      "they started");
  cmd->add_option("--comm-timeout", s.commTimeout, "Seconds any rank waits for the others")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_flag("--overwrite", s.overwrite, "Replace the file if it exists");
  cmd->add_flag("--quiet,-q", args->quiet, "Print only where the table went");
  cmd->callback([args, &exitCode] { exitCode = runCalibrate(*args); });
}

} // namespace netc::cli
