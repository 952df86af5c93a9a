// TrainingSteps.h -- the steps of trainNetwork (api/Training.cpp) that
// prepare a run, each a function that returns what it made or a Refusal: the
// settings checked once and turned into the runtime's types, the checkpoint a
// run starts from, the data, the network compiled for it, the training plan,
// the parameters --init-skip leaves fresh, and the normalised data. Nothing
// here writes a file, so a refused run leaves no trace; holdRunFolder takes
// the run's hold on its --out folder (a folder it had to create for that goes
// again if the run is refused).
#pragma once

#include "api/NetworkImpl.h"
#include "codegen/Codegen.h"
#include "netc/Training.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/Normalizer.h"
#include "runtime/optim/Optimizer.h"
#include "runtime/optim/Schedule.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/RunFiles.h"
#include "runtime/train/Safetensors.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace netc::training {

// ---- refusals -------------------------------------------------------------------------

/// Why a run cannot go on: a usage error (a flag's value, flags that
/// exclude each other) or bad input (files, data, the network).
struct Refusal {
  FailureKind kind = FailureKind::Input;
  std::string message;
};

/// A usage refusal (a flag's value, flags that exclude each other).
Refusal usage(std::string message);
/// An input refusal (files, data, the network).
Refusal input(std::string message);

/// What a step made, or why the run is refused.
template <class T> class Step {
public:
  Step(T value) : value_(std::move(value)) {}
  Step(Refusal refusal) : refusal_(std::move(refusal)) {}
  explicit operator bool() const { return value_.has_value(); }
  T &operator*() { return *value_; }
  T *operator->() { return &*value_; }
  Refusal &refusal() { return refusal_; }

private:
  std::optional<T> value_;
  Refusal refusal_;
};

/// "multiclass", "binary", "regression" or "unspecified".
std::string taskText(Task task);

/// A compiled network, or the formatted diagnostics.
struct Compiled {
  std::optional<Network> network;
  std::string diagnostics;
  std::string source;
  bool outputSizeMismatch = false; ///< NS0325: the output layer's size does not fit the task
};

/// Compiles the file at `netPath` with `options`; an error only when it cannot be read.
Expected<Compiled> compileForData(const std::string &netPath, const CompileOptions &options);

// ---- 1. the settings ------------------------------------------------------------------

/// The settings in the runtime's terms (checkSettings).
struct RunSettings {
  optim::OptimizerKind optimizer = optim::OptimizerKind::Sgd;
  /// The learning rate is --lr or the optimizer's default; applyTaskDefaults
  /// may change the default once the task is known.
  optim::Hyperparameters hyper;
  optim::Schedule schedule;
  train::InitKind init = train::InitKind::Uniform;
  std::optional<data::NormalizerSpec> normalizer; ///< --normalize, when given
};

/// Checks every setting before anything is read: the ranges of the numbers,
/// the typed values (an embedding program may set them by hand, so they are
/// checked as their flags' parsers would), and the flags that need or
/// exclude each other.
Step<RunSettings> checkSettings(const TrainSettings &s);

// ---- 2. the checkpoint a run starts from ----------------------------------------------

/// The checkpoint of --resume or --init-from (readStartCheckpoint).
struct StartPoint {
  std::string path; ///< "" for a fresh run
  std::optional<train::SafetensorsFile> file;
  std::optional<data::Normalizer> normalizer; ///< the one it records
};

/// Reads the checkpoint a run starts from (--resume or --init-from) before
/// anything else: a run that cannot start from it writes nothing. A resumed
/// run must keep the normalizer it was trained with.
Step<StartPoint> readStartCheckpoint(const TrainSettings &s, const RunSettings &run);

// ---- 3. the data ----------------------------------------------------------------------

/// The data sets of a run and the seed that split and shuffles them (loadData).
struct TrainingData {
  data::Dataset train;
  std::optional<data::Dataset> test;
  std::optional<data::Dataset> validation; ///< held out of train (--validation)
  uint64_t seed = 0;
  double validationFraction = 0;

  /// The sets there are: training, test, validation.
  std::vector<data::Dataset *> sets() {
    std::vector<data::Dataset *> all = {&train};
    if (test)
      all.push_back(&*test);
    if (validation)
      all.push_back(&*validation);
    return all;
  }
  /// What each epoch is evaluated on: the validation split, else the test set.
  const data::Dataset *evaluated() const { return validation ? &*validation : test ? &*test : nullptr; }
};

/// Loads the data folder and settles the seed (given, a resumed run's own,
/// or from the clock: the ranks of a job then take rank 0's) and the
/// validation fraction. A resumed run keeps its seed and validation
/// fraction, so that its split and shuffling are the first run's; another
/// fraction given with --resume is refused.
Step<TrainingData> loadData(const TrainSettings &s, const StartPoint &start);

/// Holds out the validation split (data.validationFraction, with data.seed).
std::optional<Refusal> splitValidationData(TrainingData &data);

// ---- 4. the network -------------------------------------------------------------------

/// The network compiled for the data (compileNetwork).
struct CompiledNetwork {
  Compiled compiled;      ///< its network is set
  CompileOptions options; ///< the task and sizes it was compiled with
  const ir::Network &net() const { return compiled.network->impl().network; }
};

/// Compiles the network with the data's feature count, task and class
/// count. Labels 0 and 1 with a wider output layer make a multiclass task;
/// an output layer wider than the labels' classes is kept (labels past it
/// are refused later, by buildTrainingPlan). `diagnostics` receives the
/// compiler's, whether or not it succeeds.
Step<CompiledNetwork> compileNetwork(const std::string &netPath, const TrainSettings &s,
                                     const TrainingData &data, std::string &diagnostics);

/// Defaults that depend on the task: Azure ML's Neural Network Regression
/// module's learning rate is 0.005 (docs/training.md, Defaults), for SGD without --lr.
void applyTaskDefaults(RunSettings &run, const TrainSettings &s, Task task);

// ---- 5. the plan ----------------------------------------------------------------------

/// The training plan and the classes of its output (buildTrainingPlan).
struct TrainingPlan {
  plan::Plan plan;
  bool classifies = false;
  int64_t classes = 0;     ///< of the output layer (0 for a regression)
  int64_t classesUsed = 0; ///< of them, those the labels use
};

/// The plan options of a run: the optimizer and its state, gradient
/// accumulation, the bucket size and, for several ranks or `dataParallel`,
/// the all-reduces of --sync.
plan::PlanOptions trainingPlanOptions(const TrainSettings &s, const RunSettings &run, int ranks = 1,
                                      bool dataParallel = false);
/// A pipeline stage's part of a training plan (api/Pipeline.h): the stage
/// of every layer, which stage to build, and the activation slots it keeps.
struct StagePart {
  std::vector<int> stageOf;
  int stage = 0;
  int activationSlots = 1;
  std::vector<int> splitParts = {}; ///< --split: PlanOptions::splitParts
  int part = 0;                     ///< this rank's part of its stage
};

/// Builds the training plan (with the optimizer's state, gradient
/// accumulation, the gradient buckets and, for several ranks or
/// `dataParallel` (NCCL, even on one GPU), the all-reduces of --sync),
/// checks that it fits the memory
/// limit at the batch, that the data has the network's feature count, and
/// that every label is a class of the output layer.
/// With `part`, the plan of one pipeline stage, its batch-sized memory
/// checked at --batch with its activation slots.
Step<TrainingPlan> buildTrainingPlan(const std::string &netPath, const TrainSettings &s,
                                     const RunSettings &run, const ir::Network &net, TrainingData &data,
                                     int ranks = 1, bool dataParallel = false,
                                     const StagePart *part = nullptr);

/// The parameters --init-skip leaves freshly initialised: those of the named
/// layers (their incoming bundles and biases). An unknown layer, or one
/// without parameters, is refused.
Step<std::set<std::string>> pickFreshParameters(const TrainSettings &s, const ir::Network &net,
                                                const plan::Plan &plan);

// ---- 6. normalisation -----------------------------------------------------------------

/// The normalizer applied to the data, and where it came from for the run
/// header (normalizeData).
struct Normalizing {
  data::Normalizer normalizer;
  std::string note; ///< " (recorded in CKPT)", ...
};

/// Rank 0's outputs, checked before anything is printed or written
/// (train::checkRunOutputs), and the run's hold on its --out folder `outDir`
/// (train::RunFolderLock): a second run into the folder, or --resume of the
/// run still training there, is refused naming the holder. An existing
/// folder is locked before it is checked, so the check sees no other run's
/// writes.
Step<train::RunFolderLock> holdRunFolder(const TrainSettings &s, const std::string &outDir);

/// Chooses the normalizer -- a resumed run's own; by default the one the
/// weights of --init-from were trained with; else --normalize (or minmax)
/// fitted on the training data -- and applies it to every data set.
Step<Normalizing> normalizeData(const TrainSettings &s, const RunSettings &run, const StartPoint &start,
                                TrainingData &data);

} // namespace netc::training
