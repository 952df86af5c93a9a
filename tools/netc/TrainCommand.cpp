// TrainCommand.cpp -- `netc train FILE --data DIR [...]`: trains a network
// through the training API (include/netc/Training.h). On a terminal a live
// progress bar (epoch, batch, loss, accuracy, images/s, ETA) on stderr;
// otherwise a plain progress line every few seconds. One line per epoch and a
// final summary on stdout; `--quiet` prints only the summary. Every default
// is Azure ML Studio's where it had one, and `--help` says so. Once training
// starts, Ctrl-C (or SIGTERM) stops it cleanly: the current step finishes,
// last.safetensors is saved where the run stands, and the exact command that
// resumes it is printed (exit status 128 + the signal, 130 for Ctrl-C); a
// second Ctrl-C ends the process at once, removing the temporaries of any
// write in progress. As a rank of a data-parallel job (`--ranks N`, mpirun,
// srun) only rank 0 prints progress and results; the others print only their
// own errors. SIGUSR1 (what mpirun forwards; Slurm's --signal=USR1@T) and
// SIGHUP (the terminal closed) stop a run as Ctrl-C does, and a job's ranks
// agree on the step and on the exit status (128 + the signal, whichever rank
// got it); a rank sent SIGTERM (by mpirun when another rank died, by Slurm at
// a time limit) says so first. Only a second Ctrl-C ends the process at once:
// a repeated SIGTERM (Slurm sends two) is the same stop. When the process
// ends at once it says what is on disk and how to continue from it.
#include "CommandSupport.h"
#include "JobReport.h"
#include "ProgressPrinter.h"
#include "RankLauncher.h"

#include "codegen/Codegen.h"

#include "netc/Training.h"
#include "runtime/comm/Launch.h"
#include "support/PrintableText.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <limits>
#include <unistd.h>

namespace netc::cli {

namespace {

/// The first stop signal received (0: none). File-static because a signal
/// handler can reach nothing else; a lock-free atomic because the signal may
/// land on any thread (the batch prefetcher's too) while the training thread
/// polls it.
std::atomic<int> gStopSignal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

/// A rank of a job says why it stops when its launcher ends it (SIGTERM):
/// mpirun does so when another rank died or failed. Written before any
/// signal can arrive; empty for a single process.
char gTerminatedNote[256] = "";
/// Set once the process reports how it ended: a SIGTERM then needs no note.
std::atomic<bool> gEnding{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

/// What is on disk, for a process that ends at once: "netc: X holds the run
/// after step S; continue with: ..." once a checkpoint exists. Two buffers,
/// the one being rewritten never the one a signal handler may read.
char gOnDisk[2][8192] = {"", ""};
std::atomic<int> gOnDiskCurrent{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

void setOnDiskNote(const std::string &note) {
  const int next = 1 - gOnDiskCurrent.load();
  const size_t n = std::min(note.size(), sizeof gOnDisk[next] - 1);
  std::memcpy(gOnDisk[next], note.data(), n);
  gOnDisk[next][n] = '\0';
  gOnDiskCurrent = next;
}

extern "C" void onStopSignal(int signal) {
  if (gStopSignal != 0) {
    // A repeated SIGTERM (Slurm sends two), SIGUSR1 or SIGHUP is the same
    // stop, under way; only a second Ctrl-C ends the process at once.
    if (signal != SIGINT)
      return;
    removeTrainingTemporaries();
    static const char message[] = "\nnetc: interrupted again: stopped at once, without saving where the run "
                                  "stands\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, message, sizeof message - 1);
    const char *onDisk = gOnDisk[gOnDiskCurrent.load()];
    if (onDisk[0] != '\0')
      written = ::write(STDERR_FILENO, onDisk, std::strlen(onDisk));
    ::_exit(128 + signal);
  }
  if (signal == SIGTERM && gTerminatedNote[0] != '\0' && !gEnding) {
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, gTerminatedNote, std::strlen(gTerminatedNote));
  }
  gStopSignal = signal;
}

/// Routes SIGINT, SIGTERM, SIGUSR1 and SIGHUP to onStopSignal while it
/// lives (SIGHUP only where it is not ignored: under nohup the run goes on).
class StopSignals {
public:
  StopSignals() {
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART; // writes in progress carry on
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction current {};
      sigaction(kSignals[i], nullptr, &current);
      installed_[i] = !(kSignals[i] == SIGHUP && current.sa_handler == SIG_IGN);
      if (installed_[i])
        sigaction(kSignals[i], &action, &old_[i]);
    }
  }
  ~StopSignals() {
    // After a stop, a repeated SIGTERM, SIGUSR1 or SIGHUP is still the same
    // stop: ignored until the process exits with 128 + the first signal,
    // rather than ending it by the default action on its way out.
    const bool stopped = gStopSignal != 0;
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i)
      if (installed_[i])
        sigaction(kSignals[i], stopped && kSignals[i] != SIGINT ? &ignore : &old_[i], nullptr);
  }
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP};
  struct sigaction old_[std::size(kSignals)]{};
  bool installed_[std::size(kSignals)]{};
};

/// The command that continues the run from `checkpoint`: this one without
/// --overwrite, --resume, --init-from and --init-skip, plus --resume CKPT,
/// started as this process was: under the user's mpirun or srun with its
/// ranks (a netc launcher's arguments already hold --ranks or --gpus).
std::string resumeCommand(const std::vector<std::string> &commandLine, const std::string &checkpoint,
                          const Launch &launch) {
  comm::LaunchInfo info;
  info.size = launch.size;
  info.launcher = launch.launcher;
  info.launcherPid = launch.launcherPid;
  std::string out = comm::relaunchPrefix(info);
  const std::vector<std::string> words = resumeArguments(commandLine, checkpoint);
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : " ") + shellWord(words[i]);
  return out;
}

struct TrainArgs {
  std::string file;
  TrainSettings settings;
  RankRequest ranks; // --ranks, --gpus
  std::string sync = "allreduce", lrScaling = "none";
  std::optional<std::string> lrWarmup;
  std::optional<float> learningRate;
  std::optional<uint64_t> seed;
  std::optional<int64_t> logEvery;
  // Parsed into settings by parseSettingTexts.
  std::string optimizer = "sgd", schedule = "constant", init = "uniform";
  std::optional<std::string> normalize;
  std::string task = "auto";
  std::string progress = "auto";
  bool quiet = false;
  std::vector<std::string> commandLine; // for the command that resumes an interrupted run
};

class TrainPrinter final : public TrainListener {
public:
  /// `quiet`: only the final summary; `silent`: nothing (the ranks but 0).
  /// `commandLine` and `launch`: for the command that continues the run.
  TrainPrinter(bool quiet, bool silent, ProgressStyle style, const std::vector<std::string> &commandLine,
               const Launch &launch)
      : quiet_(quiet || silent), silent_(silent), progress_(silent ? ProgressStyle::None : style),
        commandLine_(commandLine), launch_(launch) {}
  /// A rank of a job stops on signals from the start: its launcher's
  /// SIGTERM must leave it the time to say why it ends.
  void catchSignalsNow() {
    if (!signals_)
      signals_.emplace();
  }
  void onSetup(const std::vector<std::string> &lines) override {
    // Training starts now: from here on Ctrl-C stops it cleanly (before, it
    // ends the process, which has written nothing yet).
    catchSignalsNow();
    reportToLauncher(launch_, "training");
    if (quiet_)
      return;
    for (const std::string &line : lines) // they name the user's files
      std::printf("%s\n", printableText(line).c_str());
    std::fflush(stdout);
  }
  void onProgress(const TrainProgress &p) override {
    if (!quiet_)
      progress_.update(p);
  }
  void onEpoch(const EpochResult &e) override {
    progress_.clear();
    if (quiet_)
      return;
    std::printf("%s\n", epochLine(e).c_str());
    std::fflush(stdout);
  }
  void onCalibrating(int done, int total, const std::string &what) override {
    if (quiet_ || progress_.style() == ProgressStyle::None)
      return;
    if (done == 0)
      std::fprintf(stderr,
                   "netc: measuring this machine's cost table for the estimate, once (--cost-model none "
                   "leaves the estimate out)\n");
    if (progress_.style() == ProgressStyle::Bar) { // lines: the header says how long it took
      bool terminal = true;
      printCalibrationProgress(&terminal, done, total, what);
    }
  }
  void onHint(const std::string &hint) override {
    if (silent_)
      return;
    progress_.clear();
    std::fprintf(stderr, "netc: hint: %s\n", printableText(hint).c_str());
  }
  void onWarning(const std::string &warning) override {
    if (silent_)
      return;
    progress_.clear();
    std::fprintf(stderr, "netc: warning: %s\n", printableText(warning).c_str());
  }
  void onCheckpoint(const std::string &path, int64_t step) override {
    setOnDiskNote(fmt::format("netc: {} holds the run after step {}; continue with: {}\n",
                              printableText(path), step, resumeCommand(commandLine_, path, launch_)));
    reportToLauncher(launch_, fmt::format("checkpoint {} {}", step, path));
  }
  int stopReason() override { return gStopSignal; }
  bool stopRequested() override {
    if (gStopSignal == 0)
      return false;
    if (!stopAnnounced_ && !silent_) {
      progress_.clear();
      std::fprintf(stderr, "netc: stopping: saving the run where it stands%s\n",
                   gStopSignal == SIGINT ? " (Ctrl-C again to stop at once)" : "");
      stopAnnounced_ = true;
    }
    return true;
  }

private:
  bool quiet_, silent_;
  ProgressPrinter progress_;
  const std::vector<std::string> &commandLine_;
  const Launch &launch_;
  std::optional<StopSignals> signals_;
  bool stopAnnounced_ = false;
};

/// Says where an interrupted run stopped and how to continue it.
void reportInterrupted(const TrainResult &r, const std::vector<std::string> &commandLine,
                       const Launch &launch) {
  const std::string where = r.stoppedSample >= r.epochSamples
                                ? fmt::format("after epoch {}", r.stoppedEpoch)
                                : fmt::format("in epoch {} after {} of its {} samples", r.stoppedEpoch,
                                              r.stoppedSample, r.epochSamples);
  if (r.checkpoint.empty()) {
    std::fprintf(stderr, "netc: interrupted %s (step %lld); nothing was saved\n", where.c_str(),
                 static_cast<long long>(r.steps));
    return;
  }
  std::fprintf(stderr, "netc: interrupted %s (step %lld); saved %s\nnetc: continue with: %s\n", where.c_str(),
               static_cast<long long>(r.steps), printableText(r.checkpoint).c_str(),
               resumeCommand(commandLine, r.checkpoint, launch).c_str());
}

/// Parses the flags given as names (--optimizer, --schedule, --init,
/// --normalize) into the settings; what is wrong with the first bad one
/// otherwise.
std::optional<std::string> parseSettingTexts(TrainArgs &args) {
  TrainSettings &s = args.settings;
  auto take = [](auto parsed, auto &field) -> std::optional<std::string> {
    if (!parsed)
      return parsed.error;
    field = *parsed;
    return std::nullopt;
  };
  if (auto problem = take(parseOptimizer(args.optimizer), s.optimizer))
    return problem;
  if (auto problem = take(parseSchedule(args.schedule), s.schedule))
    return problem;
  if (auto problem = take(parseInit(args.init), s.init))
    return problem;
  if (args.normalize) {
    Normalize normalize;
    if (auto problem = take(parseNormalize(*args.normalize), normalize))
      return problem;
    s.normalize = normalize;
  }
  if (auto problem = take(parseSync(args.sync), s.sync))
    return problem;
  if (auto problem = take(parseLrScaling(args.lrScaling), s.lrScaling))
    return problem;
  if (args.lrWarmup)
    if (auto problem = take(parseLrWarmup(*args.lrWarmup), s.lrWarmup))
      return problem;
  return std::nullopt;
}

int runTrain(TrainArgs &args) {
  if (!readFileOrReport(args.file, args.settings.maxSourceBytes)) // NS0001, exit 2 (docs/cli.md)
    return kUsageError;
  TrainSettings &s = args.settings;
  // --gpus N trains on GPUs or not at all: a rank of such a job never falls
  // back to the CPU (--device auto would, silently).
  if (args.ranks.gpus > 0 && (s.device.empty() || s.device == "auto"))
    s.device = "cuda";
  // --ranks N: start the job (this process then only waits for it), or
  // this process's place in one. --partition K or --cut without --ranks,
  // outside a launcher: a rank for each stage (on GPUs, sharing them where
  // the machine has fewer).
  RankRequest request = args.ranks;
  const int stages = !s.cuts.empty() ? static_cast<int>(s.cuts.size()) + 1 : s.partition;
  // --split LAYER:S: the split stage has S ranks (a malformed spec is refused with the other settings).
  const auto split = s.splits.empty() ? Expected<plan::SplitSpec>(plan::SplitSpec{})
                                      : plan::parseSplitSpec(s.splits.front());
  const int extra = split && split->parts > 1 ? split->parts - 1 : 0;
  const int pipelineRanks = std::max(1, stages) + extra;
  request.shareGpus = stages > 1 || s.partition == kAutoPartition || extra > 0;
  if (request.ranks == 0 && request.gpus == 0 && pipelineRanks > 1 && s.partition != kAutoPartition)
    if (LaunchResult here = launchFromEnvironment();
        here.ok() && here.launch.size <= 1 && here.launch.jobId.empty()) {
      request.ranks = pipelineRanks;
      request.impliedBy =
          extra > 0        ? fmt::format("--split {}{}", s.splits.front(),
                                  stages > 1 ? fmt::format(" with {} stages", stages) : std::string())
                 : s.cuts.empty() ? fmt::format("--partition {}", stages)
                           : fmt::format("--cut's {} stages", stages);
    }
  if (auto done = settleLaunch(request, s.device, s.threads, args.commandLine, s.launch))
    return *done;
  const bool rankZero = s.launch.rank == 0;
  if (auto problem = parseSettingTexts(args)) {
    if (rankZero) // the same flags on every rank: said once
      printError(*problem);
    reportToLauncher(s.launch, fmt::format("ended {} {}", int(kUsageError), kEndedFailed));
    return agreedFailureStatus(rankZero, kUsageError);
  }
  if (s.launch.size > 1)
    std::snprintf(
        gTerminatedNote, sizeof gTerminatedNote,
        "netc: rank %d of %d: SIGTERM: stopping with the other ranks at the next step they agree on (%s "
        "sends it to every rank when one of them dies or fails, and its message names that rank)\n",
        s.launch.rank, s.launch.size,
        s.launch.launcher == "netc"   ? "the netc that started the ranks"
        : s.launch.launcher == "srun" ? "Slurm (a time limit, scancel) or srun"
                                      : "mpirun");
  s.learningRate = args.learningRate;
  s.seed = args.seed;
  s.logEvery = args.logEvery.value_or(0); // 0: the backend's choice
  if (args.task != "auto") {
    s.task = args.task == "multiclass" ? Task::Multiclass
             : args.task == "binary"   ? Task::Binary
                                       : Task::Regression;
  }
  ProgressStyle style = parseProgressStyle(args.progress, stderr);
  TrainPrinter printer(args.quiet, !rankZero, style, args.commandLine, s.launch);
  if (s.launch.size > 1)
    printer.catchSignalsNow();
  TrainResult r = trainNetwork(args.file, s, &printer);
  gEnding = true;
  if (!r.diagnostics.empty() && rankZero)
    std::fputs(r.diagnostics.c_str(), stderr);
  if (!r.ok()) {
    // An error every rank agreed on is printed once; a rank's own, by it.
    if (rankZero || !r.errorOnEveryRank)
      printError(r.error);
    const int code = r.failure == FailureKind::Usage ? kUsageError : kInputError;
    reportToLauncher(s.launch, fmt::format("ended {} {}", code, r.lostRank ? kEndedLostRank : kEndedFailed));
    return r.errorOnEveryRank ? agreedFailureStatus(rankZero, code) : code;
  }
  // 128 + the signal that stopped the job, whichever rank got it.
  const int stopSignal = r.stopReason != 0 ? r.stopReason : gStopSignal.load();
  if (r.interrupted) {
    reportToLauncher(s.launch, fmt::format("ended {} {}", 128 + stopSignal, kEndedStopped));
    // Rank 0 saved the run and reports; the others' part ended cleanly
    // (a non-zero status would make mpirun end rank 0 before it reports).
    if (!rankZero)
      return kSuccess;
    reportInterrupted(r, args.commandLine, s.launch);
    return 128 + stopSignal;
  }
  reportToLauncher(s.launch, fmt::format("ended {} {}", int(kSuccess), kEndedOk));
  if (!rankZero)
    return kSuccess;
  std::printf("%s", trainSummary(r).c_str());
  if (gStopSignal != 0) { // it came after the last step: the run is complete
    std::fprintf(stderr, "netc: interrupted after the last step; the run is complete\n");
    return 128 + gStopSignal;
  }
  return kSuccess;
}

} // namespace

void addTrainCommand(CLI::App &app, int &exitCode, const std::vector<std::string> &commandLine) {
  auto args = std::make_shared<TrainArgs>();
  args->commandLine = commandLine;
  TrainSettings &s = args->settings;
  CLI::App *cmd = app.add_subcommand(
      "train",
      "Train a network on a data folder (MNIST-style IDX files or train.csv/test.csv). Defaults follow "
      "Azure ML Studio's Neural Network modules where they had one.");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option(
         "--data", s.dataDir,
         "Data folder: train-images-idx3-ubyte + train-labels-idx1-ubyte (and t10k-… for a test set), "
         "raw or .gz, or train.csv (+ test.csv) with the label in column 0")
      ->required();
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  addIntegerOption(*cmd, "--epochs", s.epochs, int64_t{1}, kMaxInt64,
                   "Passes over the training data (Azure: 100 learning iterations)");
  addIntegerOption(
      *cmd, "--batch", s.batch, int64_t{1}, kMaxInt64,
      "Samples per update of each rank (default 1, Azure/MicrosoftML's online SGD; with --resume the "
      "run's global batch divided among the ranks)");
  addIntegerOption(*cmd, "--accumulate", s.accumulate, int64_t{1}, kMaxInt64,
                   "Micro-batches K of --batch samples per optimizer step: the same update as one batch K "
                   "times larger, in the memory of one --batch");
  cmd->add_option("--lr", args->learningRate,
                  "Learning rate (default: Azure's 0.1 for sgd; 0.001 for adam; 1 for adadelta)");
  cmd->add_option("--momentum", s.momentum, "SGD momentum (Azure: 0)")->capture_default_str();
  cmd->add_flag("--nesterov", s.nesterov, "Nesterov momentum (needs --momentum > 0)");
  cmd->add_option("--weight-decay", s.weightDecay, "L2 weight decay")->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "sgd, adam or adadelta (the original engine's adaDeltaSgd)")
      ->capture_default_str();
  cmd->add_option("--beta1", s.beta1, "Adam beta1")->capture_default_str();
  cmd->add_option("--beta2", s.beta2, "Adam beta2")->capture_default_str();
  cmd->add_option("--epsilon", s.epsilon, "Adam epsilon")->capture_default_str();
  cmd->add_option("--decay", s.decay, "AdaDelta decay (rho)")->capture_default_str();
  cmd->add_option("--conditioning", s.conditioning, "AdaDelta conditioning constant")->capture_default_str();
  cmd->add_option("--schedule", args->schedule,
                  "Learning-rate schedule: constant, step[:EPOCHS[:GAMMA]], cosine[:MIN_LR]")
      ->capture_default_str();
  cmd->add_option("--init", args->init,
                  "Initialisation: uniform (in ±diameter/2), xavier or he (for deep or ReLU networks)")
      ->capture_default_str();
  cmd->add_option("--init-diameter", s.initDiameter,
                  "Initial weights diameter for --init uniform (Azure: 0.1)")
      ->capture_default_str();
  addIntegerOption(*cmd, "--seed", args->seed, uint64_t{0}, std::numeric_limits<uint64_t>::max(),
                   "Random seed for initialisation and shuffling (default: from the clock, "
                   "printed; Azure: blank)");
  addThreadsOption(*cmd, s.threads);
  addMaxMemoryOption(*cmd, s.maxMemory);
  addMaxSourceSizeOption(*cmd, s.maxSourceBytes);
  cmd->add_option("--normalize", args->normalize,
                  "Feature normalizer: minmax (Azure's default, per feature), global-minmax, gaussian, "
                  "scale:S (x / S, e.g. scale:255 for 8-bit pixels) or none (default: minmax; with --resume "
                  "or --init-from, the one recorded in the checkpoint)");
  cmd->add_flag("!--no-shuffle", s.shuffle, "Keep the data in file order (Azure: shuffle)");
  cmd->add_option("--validation", s.validationFraction,
                  "Fraction of the training data held out and evaluated after each epoch (default 0; with "
                  "--resume, the run's own)");
  cmd->add_option(
         "--task", args->task,
         "multiclass, binary or regression (default: from the data's labels and the output layer's size)")
      ->check(CLI::IsMember({"auto", "multiclass", "binary", "regression"}))
      ->capture_default_str();
  addIntegerOption(*cmd, "--hidden-nodes", s.hiddenNodes, int64_t{1}, kMaxInt64,
                   "Size of 'hidden H auto' layers (Azure: 100)");
  addPathOption(*cmd, "--out", s.outDir,
                "Folder for last.safetensors, best.safetensors and metrics.jsonl (default: runs/<network "
                "name>); a folder that already holds a run is refused unless --resume continues it or "
                "--overwrite replaces it",
                "leave --out out for runs/<network name>");
  cmd->add_flag("--overwrite", s.overwrite,
                "Replace the run already in the --out folder (its checkpoints and metrics) and an existing "
                "--metrics file");
  addPathOption(*cmd, "--metrics", s.metricsFile, "Also write the metrics (JSON lines) to this file",
                "leave --metrics out for none");
  addPathOption(*cmd, "--resume", s.resume,
                "Continue a run from its checkpoint (e.g. runs/mnist/last.safetensors): its epoch, step, "
                "optimizer state, data position, seed and normalizer",
                "name the checkpoint to continue");
  addPathOption(*cmd, "--init-from", s.initFrom,
                "Start a new run (epoch 0, fresh optimizer state, this run's flags) from the weights of a "
                "checkpoint of the same network; keeps its normalizer unless --normalize is given",
                "name the checkpoint whose weights start the run");
  cmd->add_option("--init-skip", s.initSkip,
                  "With --init-from: layers whose weights and biases start fresh instead (e.g. a new output "
                  "layer); several names, or a comma-separated list")
      ->delimiter(',');
  addDeviceOptions(*cmd, s);
  cmd->add_flag("--data-on-device", s.dataOnDevice,
                "Load the training set into GPU memory once and gather each batch there (CUDA only)");
  addCpuIsaOption(*cmd, s.cpuIsa);
  addDenseKernelOption(*cmd, s.denseKernel);
  addIntegerOption(
      *cmd, "--checkpoint-every", s.checkpointEvery, int64_t{1}, kMaxInt64,
      "Also save last.safetensors (resumable exactly, mid-epoch) every STEPS training steps, so that "
      "a stopped or restarted job loses little (default: at each epoch's end only)")
      ->type_name("STEPS")
      ->default_str("");
  addIntegerOption(*cmd, "--log-every", args->logEvery, int64_t{1}, kMaxInt64,
                   "Read the loss and accuracy from the backend, report progress and check for divergence "
                   "every N steps (default: the backend's choice, 1 on the CPU)");
  cmd->add_option("--bucket-mb", s.bucketMb,
                  "MiB of gradients a data-parallel run all-reduces at once (a gradient bucket)")
      ->type_name("MB")
      ->capture_default_str();
  addRanksOption(*cmd, args->ranks);
  addRestartOption(*cmd, args->ranks);
  cmd->add_option("--comm-timeout", s.commTimeout,
                  "Seconds any rank waits for the others before naming the rank that did not answer")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--sync", args->sync,
                  "How the ranks stay together: allreduce (every step's gradients summed) or local-sgd:H "
                  "(each rank steps alone; their weights are averaged every H steps and at each epoch's end)")
      ->capture_default_str();
  cmd->add_option("--lr-scaling", args->lrScaling,
                  "Learning rate for the global batch: none, linear (× the ranks, Goyal et al. 2017) or sqrt")
      ->capture_default_str();
  cmd->add_option(
         "--lr-warmup", args->lrWarmup,
         "Raise the learning rate linearly over the first N epochs (N or Nepochs) or steps (Nsteps), "
         "from the unscaled rate when --lr-scaling scales it")
      ->type_name("N[epochs|steps]");
  cmd->add_option_function<std::string>(
         "--deterministic",
         [&s](const std::string &text) {
           if (text.empty())
             s.deterministicChunks = kDefaultDeterministicChunks;
           else
             integerFlagProblem(text, 1, kMaxDeterministicChunks, s.deterministicChunks);
         },
         "Bit-identical weights on 1, 2, 4... ranks at the same global batch: each step is K chunks (a power "
         "of "
         "two, default 8) whose gradients are added in one fixed order")
      ->expected(0, 1)
      ->check([](const std::string &text) {
        int value = 0;
        return text.empty() ? std::string() : integerFlagProblem(text, 1, kMaxDeterministicChunks, value);
      })
      ->type_name("[K]");
  cmd->add_option_function<std::string>(
         "--partition",
         [&s](const std::string &text) {
           if (text == "auto")
             s.partition = kAutoPartition;
           else
             integerFlagProblem(text, 1, kMaxPipelineStages, s.partition);
         },
         "Model parallelism: cut the network into K pipeline stages, one per rank (consecutive ranks hold a "
         "pipeline; more ranks make data-parallel copies of it), where the cost model balances them (the "
         "cuts netc show --partition K prints); auto: K chosen by the cost model for the ranks; without "
         "--ranks or a launcher, K ranks are started")
      ->check([](const std::string &text) {
        int value = 0;
        return text == "auto" ? std::string() : integerFlagProblem(text, 1, kMaxPipelineStages, value);
      })
      ->type_name("K|auto");
  cmd->add_option("--cut", s.cuts,
                  "Pipeline stages that start at these layers instead of the partition pass's (in the order "
                  "netc compile --emit=plan computes them)")
      ->delimiter(',')
      ->type_name("LAYER[,LAYER...]");
  cmd->add_option("--split", s.splits,
                  "Model parallelism inside a stage: share this fully connected layer's nodes out among S "
                  "ranks (consecutive ones), each holding its part of the weights, with the same weights as "
                  "one process (the layer needs more than 1,024 nodes, computed in blocks of at most 1,024: "
                  "each rank gets whole blocks); the stage's other layers run on every one of its ranks; "
                  "without --ranks or a launcher, the ranks are started")
      ->delimiter(',')
      ->type_name("LAYER:S[,LAYER:S...]");
  addIntegerOption(*cmd, "--micro-batches", s.microBatches, int64_t{1}, kMaxInt64,
                   "With --partition: micro-batches each pipeline splits --batch into (M divides --batch; "
                   "default: the largest divisor of --batch up to 4 K)")
      ->type_name("M")
      ->default_str("");
  cmd->add_option("--pipeline-schedule", s.pipelineSchedule,
                  "With --partition: 1f1b (one forward, one backward: each stage holds at most K - stage "
                  "micro-batches) or gpipe (every forward, then every backward); the same weights either way")
      ->check(CLI::IsMember({"1f1b", "gpipe"}))
      ->capture_default_str();
  cmd->add_option("--cost-model", s.costModel,
                  "Cost table of the estimate printed at the start and checked at the end: a file written by "
                  "netc calibrate, a built-in one (cpu, h100), or none (default: the device's)")
      ->type_name("FILE|NAME|none");
  cmd->add_option("--progress", args->progress, "auto, bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", args->quiet, "Print only the final summary");
  cmd->callback([args, &exitCode] { exitCode = runTrain(*args); });
}

} // namespace netc::cli
