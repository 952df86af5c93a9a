// Training.h -- the embedded C++ API for training, evaluating and running
// Net# networks on netc's runtime (the CLI's train/eval/predict/bench are
// thin clients of these functions). No compiler or runtime internals appear
// here; errors come back as text with a kind that maps to the CLI's exit
// status.
//
//   netc::TrainSettings s;  s.dataDir = "data/mnist";  s.epochs = 10;
//   netc::TrainResult r = netc::trainNetwork("examples/mnist.net", s);
//   auto m = netc::Model::load("examples/mnist.net", "runs/mnist/best.safetensors");
//   std::vector<float> p = m.model->predict(pixels);   // 784 floats in, 10 probabilities out
#pragma once

#include "netc/netc.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netc {

/// The most CPU threads any setting accepts.
inline constexpr int kMaxThreads = 1024;

/// Why an operation failed: bad user input (the .net file, data, a
/// checkpoint, a flag value) or a usage error; maps to exit status 1 / 2.
enum class FailureKind { None, Input, Usage };

/// The update rule (`--optimizer`).
enum class Optimizer { Sgd, Adam, AdaDelta };

/// How the weights start (`--init`): uniform in ±diameter/2 (docs/language.md §17),
/// Xavier/Glorot uniform, or He uniform (for ReLU networks).
enum class InitKind { Uniform, Xavier, He };

/// A learning-rate schedule (`--schedule`) over the run's `--epochs`; the
/// fields a kind does not use are ignored.
struct Schedule {
  enum class Kind { Constant, Step, Cosine };
  Kind kind = Kind::Constant;
  int64_t stepEpochs = 30;   ///< Step: the rate is multiplied by gamma every stepEpochs epochs
  float gamma = 0.1f;        ///< Step: in (0, 1]
  float minLearningRate = 0; ///< Cosine: the rate reached at the last epoch
  bool operator==(const Schedule &) const = default;
};

/// A feature normalizer (`--normalize`), fitted on the training set.
struct Normalize {
  enum class Kind { None, MinMax, GlobalMinMax, Gaussian, Scale };
  Kind kind = Kind::MinMax;
  float divisor = 1; ///< Scale: x' = x / divisor (positive, finite)
  bool operator==(const Normalize &) const = default;
};

/// A setting parsed from its text: the value, or what is wrong with the
/// text, naming the flag as `netc train` does.
template <class T> struct Parsed {
  std::optional<T> value;
  std::string error; ///< empty when `value` is set
  explicit operator bool() const { return value.has_value(); }
  const T &operator*() const { return *value; }
  const T *operator->() const { return &*value; }
};

/// "sgd", "adam" or "adadelta" (`--optimizer`).
Parsed<Optimizer> parseOptimizer(std::string_view text);
/// "uniform", "xavier" or "he" (`--init`).
Parsed<InitKind> parseInit(std::string_view text);
/// "constant", "step[:EPOCHS[:GAMMA]]" (EPOCHS a positive integer, default 30;
/// GAMMA in (0, 1], default 0.1) or "cosine[:MIN_LR]" (MIN_LR >= 0, default 0).
Parsed<Schedule> parseSchedule(std::string_view text);
/// "none", "minmax", "global-minmax", "gaussian" or "scale:S" (`--normalize`).
Parsed<Normalize> parseNormalize(std::string_view text);

/// The spellings the parse functions read back.
std::string_view optimizerName(Optimizer optimizer);
std::string_view initName(InitKind init);
/// The shortest spelling: arguments equal to their defaults are left out
/// ("step:10", "cosine").
std::string scheduleText(const Schedule &schedule);
std::string normalizeText(const Normalize &normalize);

/// How the replicas of a data-parallel run stay together (`--sync`): every
/// step's gradients all-reduced (synchronous SGD, the default), or each
/// replica stepping on its own share and all of them averaged every `every`
/// steps and at each epoch's end (local SGD).
struct Sync {
  enum class Kind { AllReduce, LocalSgd };
  Kind kind = Kind::AllReduce;
  int64_t every = 1; ///< LocalSgd: steps between averages (at least 1)
  bool operator==(const Sync &) const = default;
};
/// "allreduce" or "local-sgd:H" (H a positive integer).
Parsed<Sync> parseSync(std::string_view text);
std::string syncText(const Sync &sync);

/// How `--lr-scaling` scales the learning rate with the ranks of a
/// data-parallel run (whose global batch is ranks × `--batch`): not at all,
/// by the number of ranks (Goyal et al. 2017) or by its square root.
enum class LrScaling { None, Linear, Sqrt };
/// "none", "linear" or "sqrt".
Parsed<LrScaling> parseLrScaling(std::string_view text);
std::string_view lrScalingName(LrScaling scaling);

/// `--lr-warmup`: the learning rate rises linearly over the first `length`
/// epochs (or optimizer steps), from the unscaled rate when --lr-scaling
/// scales it (else from a small fraction) to the full rate.
struct LrWarmup {
  double length = 0; ///< 0: no warm-up
  bool steps = false;
  bool operator==(const LrWarmup &) const = default;
};
/// "N" or "Nepochs" (N > 0 epochs), or "Nsteps" (N >= 1 steps).
Parsed<LrWarmup> parseLrWarmup(std::string_view text);
std::string lrWarmupText(const LrWarmup &warmup);

/// This process's place among the ranks of a data-parallel job, as its
/// launcher (Open MPI's mpirun, Slurm's srun) says: one process by default.
struct Launch {
  int rank = 0, size = 1;           ///< among every rank of the job
  int localRank = 0, localSize = 1; ///< among the ranks of this machine
  std::string launcher;             ///< "" (one process), "mpirun", "srun" or "netc" (--gpus)
  /// The GPU job's NCCL id from a netc parent (NETC_NCCL_ID), else empty.
  std::string jobId;
  /// The netc that started the job itself (--ranks N, --gpus N), whose
  /// ranks end when it is gone (NETC_LAUNCHER): its pid and start time; 0: none.
  int launcherPid = 0;
  uint64_t launcherStart = 0;
  /// Where rank 0 tells that netc how the job went (NETC_JOB_STATUS), else empty.
  std::string statusFile{};
  /// Under srun: whether PMIx started the task (PMIX_RANK is set).
  bool pmix = false;
};
/// Reads this process's launch environment (NETC_RANK and the rest from a
/// netc parent, OMPI_COMM_WORLD_*, or srun's SLURM_PROCID and step
/// variables); `error` is set when they are malformed.
struct LaunchResult {
  Launch launch;
  std::string error;
  bool ok() const { return error.empty(); }
};
LaunchResult launchFromEnvironment();

/// `--deterministic` without a value, and the most chunks it takes.
inline constexpr int kDefaultDeterministicChunks = 8;
inline constexpr int kMaxDeterministicChunks = 1024;

/// The default `--comm-timeout`, in seconds, and the largest (a day).
inline constexpr double kDefaultCommTimeout = 60;
/// TrainSettings::partition's value for `--partition auto`.
inline constexpr int kAutoPartition = -1;
/// The most pipeline stages `--partition` takes.
inline constexpr int kMaxPipelineStages = 4096;
inline constexpr double kMaxCommTimeout = 86400;

/// The default `--bucket-mb`: the MiB of gradients a data-parallel run
/// all-reduces at once (docs/performance.md, "Gradient buckets").
inline constexpr double kDefaultBucketMb = 16;
/// The largest `--bucket-mb` (1 TiB).
inline constexpr double kMaxBucketMb = 1 << 20;

/// Everything `netc train` can set. Defaults follow Azure ML Studio where it
/// had one (docs/training.md, Defaults): learning rate 0.1, 100 epochs, diameter 0.1,
/// momentum 0, min-max normalisation, shuffling, online SGD (batch 1).
/// trainNetwork checks every value before it reads anything; the messages
/// name the `netc train` flag.
struct TrainSettings {
  std::string dataDir;
  int64_t epochs = 100;
  /// Samples per step of each rank; 0: 1 (online SGD), or with `resume` the
  /// run's global batch divided among this run's ranks.
  int64_t batch = 0;
  /// Micro-batches of `batch` samples per optimizer step (`--accumulate`):
  /// equal to one batch of accumulate × batch samples.
  int64_t accumulate = 1;
  Optimizer optimizer = Optimizer::Sgd;
  std::optional<float> learningRate; ///< default: 0.1 (sgd), 0.001 (adam), 1 (adadelta)
  float momentum = 0;
  bool nesterov = false;
  float weightDecay = 0;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f; ///< Adam
  float decay = 0.95f, conditioning = 1e-6f;           ///< AdaDelta
  Schedule schedule;
  InitKind init = InitKind::Uniform;
  float initDiameter = 0.1f;
  std::optional<uint64_t> seed; ///< none: drawn from the clock (reported back)
  int threads = 0;              ///< 0: the cores other running tasks leave free; at most kMaxThreads
  /// Unset: minmax, or with `resume` / `initFrom` the normalizer recorded in
  /// the checkpoint.
  std::optional<Normalize> normalize;
  bool shuffle = true;
  /// Held out of training, evaluated each epoch when no test set; unset: 0,
  /// or a resumed run's own fraction (kept in its checkpoint).
  std::optional<double> validationFraction;
  std::string outDir; ///< default runs/<network name>
  /// Replace a run already in outDir (otherwise such a folder is refused).
  bool overwrite = false;
  std::string metricsFile; ///< extra JSON-lines metrics file
  std::string resume;      ///< checkpoint to continue from
  /// Checkpoint whose weights start a new run (epoch 0, fresh optimizer state).
  std::string initFrom;
  /// Layers left freshly initialised when starting from `initFrom`.
  std::vector<std::string> initSkip;
  Task task = Task::Unspecified; ///< default: from the labels
  int64_t hiddenNodes = 100;
  /// The kernels on the device (`--backend`): "cpu" or "cpu-reference" on
  /// the CPU, "cuda" on a GPU; empty: the device's own.
  std::string backend;
  /// The backend's variant: for "cpu" the fast kernels' instruction set
  /// ("avx512", "avx2", "baseline"); empty: the best the machine supports.
  /// `netc` fills it from --cpu-isa or $NETC_CPU_ISA.
  std::string cpuIsa;
  /// "cpu": the dense products' kernels, "netc" (its own, per instruction
  /// set), "openblas", or empty/"auto" (netc's where it has vector kernels);
  /// the run header names them. `netc` fills it from --dense-kernel or
  /// $NETC_DENSE_KERNEL.
  std::string denseKernel;
  /// Where to compute (`--device`): "auto" (a GPU when one is usable, else
  /// the CPU; the run header says which and why), "cpu", "cuda" or "cuda:N".
  std::string device = "auto";
  /// `--cuda-debug`: on a GPU, wait for each op and check it, so an error
  /// names the op and its layer. Slow.
  bool cudaDebug = false;
  /// `--cuda-graphs on|off`: on a GPU, capture each step (and each
  /// evaluation batch) once as a CUDA graph and replay it; off, issue its ops
  /// one by one (for debugging, and the benchmark's comparison).
  bool cudaGraphs = true;
  /// `--data-on-device`: on a GPU, load the training set into its memory once
  /// and gather each batch there from the epoch's order (uploaded once per
  /// epoch) instead of copying it in from the host; the same samples in the
  /// same order, so the same weights. A backend that cannot hold data (the
  /// CPU's, which trains from memory already) refuses it.
  bool dataOnDevice = false;
  /// `--precision`: "fp32" (FP32 means FP32), "tf32" (GPU tensor cores
  /// with TF32 inputs for matrix products and convolutions) or "bf16" (the
  /// CPU, with AVX512-BF16: bfloat16 factors for the dense and convolution
  /// products, FP32 sums).
  std::string precision = "fp32";
  /// Most bytes the planned memory (parameters, index tables, optimizer
  /// state, activations at the batch) may take; 0: the machine's memory.
  uint64_t maxMemory = 0;
  /// Read the loss and accuracy sums from the backend (and report progress
  /// and check for a diverged run) every this many steps; 0: the backend's
  /// choice (1 on the CPU).
  int64_t logEvery = 0;
  /// The MiB of gradients a data-parallel run all-reduces at once.
  double bucketMb = kDefaultBucketMb;
  /// This process's place in a data-parallel job (launchFromEnvironment()).
  Launch launch;
  /// How long any rank waits for the others before naming the missing one.
  double commTimeout = kDefaultCommTimeout;
  Sync sync;
  LrScaling lrScaling = LrScaling::None;
  LrWarmup lrWarmup;
  /// `--deterministic K`: each step's gradient is the sum of K chunks added
  /// in one fixed order, so the weights are the same bits on any
  /// power-of-two number of ranks that divides K (at the same global batch
  /// and threads per rank). K is a power of two up to kMaxDeterministicChunks;
  /// 0: off (the ranks' all-reduce: equal within float rounding).
  int deterministicChunks = 0;
  /// The cost table of the estimate the run prints at its start and checks
  /// at its end (netc/Estimate.h): a file or a built-in name; empty: the
  /// device's built-in table; "none": no estimate.
  std::string costModel;
  /// `--checkpoint-every STEPS`: also save last.safetensors (resumable
  /// mid-epoch, exactly) after every STEPS training steps, so that a stopped
  /// or restarted job loses little; 0: only at epoch ends. With `--sync
  /// local-sgd:H` a multiple of H.
  int64_t checkpointEvery = 0;
  /// The largest .net file read (`--max-source-size`), as CompileOptions's.
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes;
  /// `--partition K`: the job's ranks are K-stage pipelines (model
  /// parallelism; stages on consecutive ranks), as many as the ranks allow
  /// (data parallelism between them), cut where the cost model balances
  /// the stages (netc show --partition K shows the same cuts);
  /// kAutoPartition: K chosen by the cost model for the ranks; 0: none.
  int partition = 0;
  /// `--cut LAYER,...`: the pipeline's stages start at these layers instead.
  std::vector<std::string> cuts;
  /// `--micro-batches M`: the micro-batches `batch` is split into per step
  /// through a pipeline (M divides batch); 0: the largest divisor of batch
  /// up to 4 K.
  int64_t microBatches = 0;
  /// `--pipeline-schedule`: "1f1b" (one forward, one backward, with a flush)
  /// or "gpipe" (every forward, then every backward).
  std::string pipelineSchedule = "1f1b";
  /// `--split LAYER:S,...`: these fully connected layers' nodes are shared
  /// out among S ranks of their stage, each computing and holding its part
  /// (column parallelism; the same bits as one process). The split layers
  /// share one S and lie in one stage: a pipeline then has its stages + S - 1
  /// ranks (S with no --partition).
  std::vector<std::string> splits;
};

/// What a run estimated of itself before its first step (netc estimate's
/// figures for its settings), to compare with what it measures.
struct RunEstimate {
  std::string costTable; ///< the table's file or built-in name
  std::string note;      ///< an approximation made (another thread count's profile)
  double stepSeconds = 0, epochSeconds = 0, evaluationSeconds = 0, totalSeconds = 0;
  double checkpointSeconds = 0; ///< an epoch's checkpoint writes
  double finalTestSeconds = 0;  ///< the final test's share of totalSeconds
};

struct TrainProgress {
  int64_t epoch = 0, epochs = 0, samplesDone = 0, samplesTotal = 0, batchesDone = 0, batchesTotal = 0;
  double loss = 0, accuracy = 0, imagesPerSecond = 0, etaSeconds = 0;
};

struct EpochResult {
  int64_t epoch = 0;
  double trainLoss = 0, trainAccuracy = 0;
  std::optional<double> testLoss, testAccuracy;
  double imagesPerSecond = 0, seconds = 0, learningRate = 0;
  bool best = false;
  bool classification = true; ///< accuracies are meaningful (not a regression)
  bool validation = false;    ///< testLoss/testAccuracy are of the --validation split
};

/// Receives training events (all on the calling thread).
class TrainListener {
public:
  virtual ~TrainListener() = default;
  /// Before the first epoch: the resolved setup, one line per fact.
  virtual void onSetup(const std::vector<std::string> &) {}
  virtual void onProgress(const TrainProgress &) {}
  virtual void onEpoch(const EpochResult &) {}
  virtual void onHint(const std::string &) {}
  /// Before the setup, the first time a run's estimate measures this
  /// machine's cost table (a few seconds): `done` of `total` measurements.
  virtual void onCalibrating(int /*done*/, int /*total*/, const std::string & /*what*/) {}
  /// Something that makes the run slower than it could be, with the flag to
  /// change (e.g. dense products on generic code: BackendInfo::kernelWarning).
  virtual void onWarning(const std::string &) {}
  /// After the run's last.safetensors was written (at an epoch's end, every
  /// --checkpoint-every steps, at a stop), on the rank that writes it: its
  /// path and the training steps it holds.
  virtual void onCheckpoint(const std::string & /*path*/, int64_t /*step*/) {}
  /// Polled after every training step (on the training thread): returning
  /// true stops the run cleanly -- the step is finished, last.safetensors
  /// saved where the run stands (mid-epoch included, resumable exactly) and
  /// TrainResult::interrupted set. netc train returns true after Ctrl-C.
  virtual bool stopRequested() { return false; }
  /// Why this process asked to stop, once stopRequested returned true: a
  /// number the caller chooses (netc train: the signal), 0 for none. The
  /// ranks of a job agree on the largest: TrainResult::stopReason.
  virtual int stopReason() { return 0; }
};

struct EvaluationResult {
  int64_t samples = 0;
  double loss = 0, accuracy = 0;
  bool classification = true;
  std::vector<std::vector<int64_t>> confusion; ///< [actual][predicted]
  std::vector<double> classAccuracy;
  /// What was evaluated (the data set's files) and, for a CSV whose first row
  /// was taken as a header, why ("line 1 of test.csv is a header: field 2
  /// 'pixel0' is not a number"); "" when every row was data.
  std::string origin, headerNote;
};

struct TrainResult {
  FailureKind failure = FailureKind::None;
  std::string error;               ///< what went wrong and what to do
  std::string diagnostics;         ///< compiler diagnostics of the .net file, formatted
  std::vector<EpochResult> epochs; ///< this run's epochs
  uint64_t seed = 0;
  int bestEpoch = 0;
  double seconds = 0;
  int64_t steps = 0, trainSamples = 0, testSamples = 0, params = 0;
  std::optional<EvaluationResult> finalTest;
  std::string outDir;
  /// The run files outDir holds at the end (last.safetensors,
  /// best.safetensors, metrics.jsonl: those that exist), as paths.
  std::vector<std::string> savedFiles;
  /// Stopped by TrainListener::stopRequested before the last epoch ended:
  /// in epoch `stoppedEpoch` (1-based) after `stoppedSample` of its
  /// `epochSamples` samples; `checkpoint` holds that state ("" when the run
  /// had no output folder) and continues it with `resume`.
  bool interrupted = false;
  int64_t stoppedEpoch = 0, stoppedSample = 0, epochSamples = 0;
  /// The stop's TrainListener::stopReason, the largest over the ranks
  /// (every rank's, whichever rank was asked to stop).
  int stopReason = 0;
  std::string checkpoint;
  /// The job: this rank, the ranks, and the global batch of a step.
  int rank = 0, ranks = 1;
  int64_t globalBatch = 0;
  /// The run failed because the job lost a rank: one died, or stopped
  /// answering within --comm-timeout (the communicator failed). A launcher
  /// may restart such a job from its last checkpoint.
  bool lostRank = false;
  /// The error is the same on every rank (an agreed one: print it once);
  /// otherwise it is this rank's own (e.g. which rank it waited for).
  bool errorOnEveryRank = false;
  /// The estimate made at the start (none with costModel "none").
  std::optional<RunEstimate> estimate;
  /// The measured total to compare with estimate->totalSeconds: the epochs,
  /// their evaluations and the final test.
  double measuredTotalSeconds = 0;
  bool ok() const { return failure == FailureKind::None; }
};

/// Trains the network in `netPath` on `settings.dataDir` -- as one rank of a
/// data-parallel job when `settings.launch` says so (every rank calls it
/// with the same settings; only rank 0 writes files and reports progress).
TrainResult trainNetwork(const std::string &netPath, const TrainSettings &settings,
                         TrainListener *listener = nullptr);

/// Removes the temporary files that checkpoint and metrics writes of this
/// process have open now. Async-signal-safe: for a signal handler that ends
/// the process at once (netc train's second Ctrl-C); a later run removes the
/// temporaries of processes that are gone in any case.
void removeTrainingTemporaries() noexcept;

struct ModelOptions {
  int threads = 0;
  int64_t batch = 128;                                       ///< samples per forward pass
  std::string backend;                                       ///< as TrainSettings::backend
  std::string cpuIsa;                                        ///< as TrainSettings::cpuIsa
  std::string denseKernel;                                   ///< as TrainSettings::denseKernel
  uint64_t maxMemory = 0;                                    ///< as TrainSettings::maxMemory
  std::string device = "auto";                               ///< as TrainSettings::device
  bool cudaDebug = false;                                    ///< as TrainSettings::cudaDebug
  bool cudaGraphs = true;                                    ///< as TrainSettings::cudaGraphs
  std::string precision = "fp32";                            ///< as TrainSettings::precision
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes; ///< as TrainSettings::maxSourceBytes
};

struct ModelResult;

/// A network with trained weights, ready to evaluate and predict.
class Model {
public:
  struct Impl;
  /// Compiles `netPath` with the sizes recorded in `checkpointPath` and loads its weights.
  static ModelResult load(const std::string &netPath, const std::string &checkpointPath,
                          const ModelOptions &options = {});
  int64_t inputSize() const;
  int64_t outputSize() const;
  bool classification() const;
  /// Output values (probabilities for a softmax output) of `count` samples of
  /// raw features (the checkpoint's normaliser is applied): count × inputSize in,
  /// count × outputSize out. Returns an empty vector when the size is wrong
  /// or the normaliser overflows; outputs may be NaN or infinite.
  std::vector<float> predict(std::span<const float> features) const;
  /// As predict, but a value that is not finite is an error: empty, with
  /// `error` naming the sample (0-based) and the feature whose normalised
  /// value overflows, or the first layer whose values became NaN or infinite.
  std::vector<float> predict(std::span<const float> features, std::string &error) const;
  /// Loss, accuracy and confusion matrix on a data folder's test set (or its
  /// training set when it has none; a folder with a test set only will do);
  /// `error` is set on failure, also when an output is NaN or infinite (the
  /// sample and the first such layer named).
  EvaluationResult evaluate(const std::string &dataDir, std::string &error) const;
  /// The shape of one input sample as the network reads it (e.g. [28, 28]).
  std::vector<int64_t> inputShape() const;

  explicit Model(std::shared_ptr<Impl> impl);
  /// The inside (api/ModelImpl.h), for netc's own code.
  const Impl &impl() const { return *impl_; }

private:
  std::shared_ptr<Impl> impl_;
};

struct ModelResult {
  std::optional<Model> model;
  FailureKind failure = FailureKind::None;
  std::string error;
  std::string diagnostics;
};

/// `netc build`: a trained network compiled through LLVM into a native
/// inference library (docs/codegen.md).
struct LibrarySettings {
  std::string outDir; ///< the folder the files go to (created; netc's files in it are replaced)
  /// Build into an existing folder that netc build did not make (only the
  /// files it writes are replaced); without it such a folder is refused.
  bool overwrite = false;
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes; ///< as TrainSettings::maxSourceBytes
  std::string name;   ///< the C prefix of every symbol; default: the network's name as a C identifier
  std::string target; ///< an LLVM target triple, e.g. aarch64-linux-gnu; default: this machine's
  std::string cpu;    ///< the CPU to optimise for; default: this machine's ("generic": portable)
};

struct LibraryResult {
  FailureKind failure = FailureKind::None;
  std::string error;
  std::string diagnostics;
  std::string prefix;             ///< the symbols' prefix (PREFIX_infer, ...)
  std::string triple, cpu;        ///< what the code was compiled for
  std::vector<std::string> files; ///< the files written, in outDir
  double compileSeconds = 0;      ///< emitting, optimising and linking (loading the weights excluded)
  bool ok() const { return failure == FailureKind::None; }
};

/// Compiles `netPath` with the weights and normaliser of `checkpointPath`
/// into PREFIX.h, libPREFIX.so, libPREFIX.a, PREFIX.o and README.md in
/// settings.outDir, moved in as one set with a manifest (.netc-library).
/// Needs netc's LLVM plugin (libnetc-llvm.so); on any failure no file of
/// the library is left behind and the folder is as it was.
LibraryResult buildLibrary(const std::string &netPath, const std::string &checkpointPath,
                           const LibrarySettings &settings);

struct BenchSettings {
  int64_t batch = 128;
  int threads = 0;
  int64_t warmup = 3, iterations = 20, repeats = 5;
  std::optional<int64_t> inputSize;
  std::string backend;            ///< as TrainSettings::backend
  std::string cpuIsa;             ///< as TrainSettings::cpuIsa
  std::string denseKernel;        ///< as TrainSettings::denseKernel
  std::string device = "auto";    ///< as TrainSettings::device
  bool cudaDebug = false;         ///< as TrainSettings::cudaDebug
  bool cudaGraphs = true;         ///< as TrainSettings::cudaGraphs
  std::string precision = "fp32"; ///< as TrainSettings::precision
  bool profile = false;           ///< also time each op of the training plan (BenchResult::profile)
  /// Keep the one random batch in the input slot instead of copying it in
  /// before every step (a device's figure without the host-to-device copy,
  /// as PyTorch's side of bench/compare_gpu.py keeps its batch on the GPU).
  bool residentInput = false;
  uint64_t maxMemory = 0; ///< as TrainSettings::maxMemory
  /// As one rank of a data-parallel job (every rank calls bench): each runs
  /// the data-parallel training step on its batch, and the figures are the job's.
  Launch launch;
  double commTimeout = kDefaultCommTimeout;
  double bucketMb = kDefaultBucketMb;                        ///< as TrainSettings::bucketMb
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes; ///< as TrainSettings::maxSourceBytes
};

/// One op of the training plan, timed on its own (`netc bench --profile`).
struct OpProfile {
  std::string section;     ///< forward, loss, backward or update
  std::string op;          ///< the op's name (codegen/Ops.def)
  std::string output;      ///< the buffer it writes
  double microseconds = 0; ///< median per step over the timed steps
  /// Its work per step, as the cost model counts it (codegen/CostModel.h):
  /// FLOPs of the ops it prices by FLOPs (0 for the copies and bias sums), bytes moved.
  double flops = 0, bytes = 0;
  /// Its products run in bf16 (--precision bf16): held to PeakRates::bf16Gflops.
  bool bf16 = false;
};

/// The device's peak rates the roofline of a profile compares ops with
/// (measured by a short probe; zero where the backend does not measure them).
struct PeakRates {
  double gflops = 0;        ///< multiply-adds per second (2 FLOPs each) on the run's threads
  double gflopsPerCore = 0; ///< the same on one thread
  double gbPerSecond = 0;   ///< a streaming copy's bytes per second (read + write), one thread
  /// The same within each cache level, smallest first: an op that moves at
  /// most `bytes` is held to that level's bandwidth.
  struct CacheCeiling {
    int64_t bytes = 0;
    double gbPerSecond = 0;
  };
  std::vector<CacheCeiling> caches;
  /// The multiply-adds per second of the bf16 products (VDPBF16PS) in a run
  /// of --precision bf16, on the run's threads and on one; 0 in other runs.
  double bf16Gflops = 0, bf16GflopsPerCore = 0;
};

struct BenchResult {
  FailureKind failure = FailureKind::None;
  std::string error, diagnostics;
  double trainImagesPerSecond = 0, inferImagesPerSecond = 0; ///< medians over repeats
  std::vector<double> trainRuns, inferRuns;
  int64_t batch = 0, params = 0;
  int threads = 0;
  double trainBytesPerBatch = 0, inferBytesPerBatch = 0;
  std::vector<OpProfile> profile; ///< in plan order; empty unless settings.profile
  PeakRates peak;                 ///< with a profile: the device's peak rates
  int rank = 0, ranks = 1;        ///< the job (figures are of all its ranks)
  std::string backend;            ///< the backend that ran ("cpu", "cuda", ...)
  std::string device;             ///< what it ran on ("host (avx2)", "NVIDIA H100 ... (cuda:0, ...)")
  std::string deviceNote;         ///< why --device auto chose it (empty for an explicit --device)
  std::string denseKernels;       ///< what runs the dense products ("netc avx512"; BackendInfo::denseKernels)
  std::string kernelWarning;      ///< non-empty: they run generic code on a CPU with wider vectors
  std::string threadNote;         ///< how the threads were chosen and wait (BackendInfo::threadNote)
  /// On a GPU: kernels and library calls per training step, and the device
  /// memory the training plan holds (0 on the CPU).
  int64_t launchesPerStep = 0, deviceBytes = 0;
};

/// Training and inference throughput of the compiled plan on random data.
BenchResult bench(const std::string &netPath, const BenchSettings &settings);

} // namespace netc
