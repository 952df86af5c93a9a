// TrainCommand.cpp -- `netc train FILE --data DIR [...]`: trains a network
// through the training API (include/netc/Training.h). On a terminal a live
// progress bar (epoch, batch, loss, accuracy, images/s, ETA) on stderr;
// otherwise a plain progress line every few seconds. One line per epoch and a
// final summary on stdout; `--quiet` prints only the summary. Every default
// is Azure ML Studio's where it had one, and `--help` says so.
#include "CommandSupport.h"
#include "ProgressPrinter.h"

#include "netc/Training.h"

#include <cstdio>
#include <unistd.h>

namespace netc::cli {

namespace {

struct TrainArgs {
  std::string file;
  TrainSettings settings;
  std::optional<float> learningRate;
  std::optional<uint64_t> seed;
  std::string task = "auto";
  std::string progress = "auto";
  bool quiet = false;
};

class TrainPrinter final : public TrainListener {
public:
  TrainPrinter(bool quiet, ProgressStyle style) : quiet_(quiet), progress_(style) {}
  void onSetup(const std::vector<std::string> &lines) override {
    if (quiet_)
      return;
    for (const std::string &line : lines)
      std::printf("%s\n", line.c_str());
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
  void onHint(const std::string &hint) override {
    progress_.clear();
    std::fprintf(stderr, "netc: hint: %s\n", hint.c_str());
  }

private:
  bool quiet_;
  ProgressPrinter progress_;
};

int runTrain(TrainArgs &args) {
  if (!readFileOrReport(args.file)) // NS0001, exit 2 like check/show/fmt/compile (docs/cli.md)
    return kUsageError;
  TrainSettings &s = args.settings;
  s.learningRate = args.learningRate;
  s.seed = args.seed;
  if (args.task != "auto") {
    s.task = args.task == "multiclass" ? Task::Multiclass
             : args.task == "binary"   ? Task::Binary
                                       : Task::Regression;
  }
  ProgressStyle style = parseProgressStyle(args.progress, stderr);
  TrainPrinter printer(args.quiet, style);
  TrainResult r = trainNetwork(args.file, s, &printer);
  if (!r.diagnostics.empty())
    std::fputs(r.diagnostics.c_str(), stderr);
  if (!r.ok()) {
    std::fprintf(stderr, "netc: error: %s\n", r.error.c_str());
    return r.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  std::printf("%s", trainSummary(r).c_str());
  return kSuccess;
}

} // namespace

void addTrainCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<TrainArgs>();
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
  cmd->add_option("--epochs", s.epochs, "Passes over the training data (Azure: 100 learning iterations)")
      ->capture_default_str();
  cmd->add_option("--batch", s.batch, "Samples per update (Azure/MicrosoftML: 1, online SGD)")
      ->capture_default_str();
  cmd->add_option("--lr", args->learningRate,
                  "Learning rate (default: Azure's 0.1 for sgd; 0.001 for adam; 1 for adadelta)");
  cmd->add_option("--momentum", s.momentum, "SGD momentum (Azure: 0)")->capture_default_str();
  cmd->add_flag("--nesterov", s.nesterov, "Nesterov momentum (needs --momentum > 0)");
  cmd->add_option("--weight-decay", s.weightDecay, "L2 weight decay")->capture_default_str();
  cmd->add_option("--optimizer", s.optimizer, "sgd, adam or adadelta (the original engine's adaDeltaSgd)")
      ->capture_default_str();
  cmd->add_option("--beta1", s.beta1, "Adam beta1")->capture_default_str();
  cmd->add_option("--beta2", s.beta2, "Adam beta2")->capture_default_str();
  cmd->add_option("--epsilon", s.epsilon, "Adam epsilon")->capture_default_str();
  cmd->add_option("--decay", s.decay, "AdaDelta decay (rho)")->capture_default_str();
  cmd->add_option("--conditioning", s.conditioning, "AdaDelta conditioning constant")->capture_default_str();
  cmd->add_option("--schedule", s.schedule,
                  "Learning-rate schedule: constant, step[:EPOCHS[:GAMMA]], cosine[:MIN_LR]")
      ->capture_default_str();
  cmd->add_option(
         "--init", s.init,
         "Initialisation: uniform (NETSHARP D15, in ±diameter/2), xavier or he (for deep or ReLU networks)")
      ->capture_default_str();
  cmd->add_option("--init-diameter", s.initDiameter,
                  "Initial weights diameter for --init uniform (Azure: 0.1)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed,
                  "Random seed for initialisation and shuffling (default: from the clock, "
                  "printed; Azure: blank)");
  cmd->add_option("--threads", s.threads, "CPU threads (0: all cores)")->capture_default_str();
  cmd->add_option("--normalize", s.normalize,
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
  cmd->add_option("--hidden-nodes", s.hiddenNodes, "Size of 'hidden H auto' layers (Azure: 100)")
      ->capture_default_str();
  cmd->add_option("--out", s.outDir,
                  "Folder for last.safetensors, best.safetensors and metrics.jsonl "
                  "(default: runs/<network name>)");
  cmd->add_option("--metrics", s.metricsFile, "Also write the metrics (JSON lines) to this file");
  cmd->add_option("--resume", s.resume,
                  "Continue a run from its checkpoint (e.g. runs/mnist/last.safetensors): its epoch, step, "
                  "optimizer state, data position, seed and normalizer");
  cmd->add_option("--init-from", s.initFrom,
                  "Start a new run (epoch 0, fresh optimizer state, this run's flags) from the weights of a "
                  "checkpoint of the same network; keeps its normalizer unless --normalize is given");
  cmd->add_option("--init-skip", s.initSkip,
                  "With --init-from: layers whose weights and biases start fresh instead (e.g. a new output "
                  "layer); several names, or a comma-separated list")
      ->delimiter(',');
  cmd->add_option("--backend", s.backend, "Execution backend")->capture_default_str();
  cmd->add_option("--progress", args->progress, "auto, bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", args->quiet, "Print only the final summary");
  cmd->callback([args, &exitCode] { exitCode = runTrain(*args); });
}

} // namespace netc::cli
