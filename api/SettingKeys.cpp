// SettingKeys.cpp -- the keys of the C API's settings (SettingKeys.h): one
// table entry per key, each with a setter that parses the value (integers,
// finite numbers, booleans, names and lists) and checks it with the parsers
// of the CLI's flags (optimizer, schedule, init, normalizer: the public parse
// functions of include/netc/Training.h; backend: the runtime's registry).
#include "api/SettingKeys.h"

#include "api/Backends.h"
#include "runtime/core/Backend.h"
#include "support/ByteSize.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace netc::capi {

namespace {

// ---- parsing setting values ---------------------------------------------------

/// Empty when the value was accepted; otherwise what is wrong with it.
using Problem = std::string;

std::optional<int64_t> parseInteger(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

std::optional<double> parseNumber(std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<bool> parseBool(std::string_view text) {
  for (std::string_view yes : {"true", "1", "yes", "on"})
    if (text == yes)
      return true;
  for (std::string_view no : {"false", "0", "no", "off"})
    if (text == no)
      return false;
  return std::nullopt;
}

/// The items of a comma-separated list ("" holds none).
std::vector<std::string> commaList(std::string_view text) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= text.size() && !text.empty();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

template <class Int>
Problem setInteger(Int &field, std::string_view text, int64_t min, Int fallback,
                   int64_t max = std::numeric_limits<int64_t>::max()) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  auto value = parseInteger(text);
  if (!value || *value < min || *value > max || !std::in_range<Int>(*value))
    return max == std::numeric_limits<int64_t>::max()
               ? fmt::format("'{}' is not an integer of at least {}", text, min)
               : fmt::format("'{}' is not an integer from {} to {}", text, min, max);
  field = static_cast<Int>(*value);
  return {};
}

template <class Int>
Problem setOptionalInteger(std::optional<Int> &field, std::string_view text, int64_t min) {
  if (text.empty()) {
    field.reset();
    return {};
  }
  Int value{};
  if (Problem p = setInteger(value, text, min, Int{}); !p.empty())
    return p;
  field = value;
  return {};
}

Problem setFloat(float &field, std::string_view text, float fallback, bool positive = false) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  auto value = parseNumber(text);
  if (!value || (positive && !(*value > 0)))
    return fmt::format("'{}' is not a {}number", text, positive ? "positive " : "finite ");
  field = static_cast<float>(*value);
  return {};
}

/// A positive number of at most `max`; empty: the fallback.
Problem setPositiveNumber(double &field, std::string_view text, double fallback, double max,
                          std::string_view unit) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  auto value = parseNumber(text);
  if (!value || !(*value > 0) || *value > max)
    return fmt::format("'{}' is not a positive number of {} up to {}", text, unit, max);
  field = *value;
  return {};
}

/// Sets `field` from `parse` (a parse function of include/netc/Training.h);
/// empty: the fallback. `flag` is the prefix the parser's message names the
/// flag with where the C API's message names the key instead ("" for none).
template <class T>
Problem setParsed(T &field, std::string_view text, const T &fallback,
                  netc::Parsed<T> (*parse)(std::string_view), std::string_view flag = {}) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  netc::Parsed<T> value = parse(text);
  if (!value) {
    std::string_view message = value.error;
    if (!flag.empty() && message.starts_with(flag))
      message.remove_prefix(flag.size());
    return std::string(message);
  }
  field = *value;
  return {};
}

/// "sgd, adam, adadelta": the accepted optimizers.
std::string optimizerChoices() {
  std::string list;
  for (netc::Optimizer o : {netc::Optimizer::Sgd, netc::Optimizer::Adam, netc::Optimizer::AdaDelta})
    list += (list.empty() ? "" : ", ") + std::string(netc::optimizerName(o));
  return list;
}

Problem setBool(bool &field, std::string_view text, bool fallback) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  auto value = parseBool(text);
  if (!value)
    return fmt::format("'{}' is not a boolean (true, false, 1, 0, yes, no, on, off)", text);
  field = *value;
  return {};
}

/// A byte size such as 8GiB or 512M (support/ByteSize.h); empty: the fallback.
Problem setByteSize(uint64_t &field, std::string_view text, uint64_t fallback) {
  if (text.empty()) {
    field = fallback;
    return {};
  }
  auto value = netc::parseByteSize(text);
  if (!value)
    return fmt::format("'{}' is not a size in bytes (e.g. 512M, 8GiB, 1000000)", text);
  field = *value;
  return {};
}

std::optional<netc::Task> parseTask(std::string_view text) {
  if (text.empty() || text == "auto")
    return netc::Task::Unspecified;
  if (text == "multiclass")
    return netc::Task::Multiclass;
  if (text == "binary")
    return netc::Task::Binary;
  if (text == "regression")
    return netc::Task::Regression;
  return std::nullopt;
}

Problem setTask(netc::Task &field, std::string_view text) {
  auto task = parseTask(text);
  if (!task)
    return fmt::format("'{}' is not one of auto, multiclass, binary, regression", text);
  field = *task;
  return {};
}

/// Splits "a, b,c" into names; an empty item is a problem.
Problem setNameList(std::vector<std::string> &field, std::string_view text) {
  std::vector<std::string> names;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (item.empty())
      return "an empty layer name in the comma-separated list";
    names.emplace_back(item);
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
    if (text.empty())
      return "an empty layer name in the comma-separated list";
  }
  field = std::move(names);
  return {};
}

// ---- the keys ------------------------------------------------------------------

/// One key of netc_train_settings_set: the `netc train` flag in snake_case.
struct TrainKey {
  std::string_view key;
  Problem (*set)(netc::TrainSettings &settings, std::string_view value);
};

const netc::TrainSettings kTrainDefaults{};

// Every field of netc::TrainSettings has exactly one key here; a field added
// to Training.h needs its key (and a line in docs/embedding.md).
constexpr TrainKey kTrainKeys[] = {
    {"data",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.dataDir = v;
       return {};
     }},
    {"epochs", [](netc::TrainSettings &s,
                  std::string_view v) { return setInteger(s.epochs, v, 1, kTrainDefaults.epochs); }},
    {"batch", [](netc::TrainSettings &s,
                 std::string_view v) { return setInteger(s.batch, v, 1, kTrainDefaults.batch); }},
    {"accumulate",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.accumulate, v, 1, kTrainDefaults.accumulate);
     }},
    {"optimizer",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       // The C API's message names the key (netc_train_settings_set adds it), not the flag.
       if (!setParsed(s.optimizer, v, kTrainDefaults.optimizer, netc::parseOptimizer).empty())
         return fmt::format("'{}' is not one of {}", v, optimizerChoices());
       return {};
     }},
    {"lr",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty()) {
         s.learningRate.reset();
         return {};
       }
       float rate = 0;
       if (Problem p = setFloat(rate, v, 0, true); !p.empty())
         return p;
       s.learningRate = rate;
       return {};
     }},
    {"momentum", [](netc::TrainSettings &s,
                    std::string_view v) { return setFloat(s.momentum, v, kTrainDefaults.momentum); }},
    {"nesterov", [](netc::TrainSettings &s,
                    std::string_view v) { return setBool(s.nesterov, v, kTrainDefaults.nesterov); }},
    {"weight_decay",
     [](netc::TrainSettings &s, std::string_view v) {
       return setFloat(s.weightDecay, v, kTrainDefaults.weightDecay);
     }},
    {"beta1",
     [](netc::TrainSettings &s, std::string_view v) { return setFloat(s.beta1, v, kTrainDefaults.beta1); }},
    {"beta2",
     [](netc::TrainSettings &s, std::string_view v) { return setFloat(s.beta2, v, kTrainDefaults.beta2); }},
    {"epsilon", [](netc::TrainSettings &s,
                   std::string_view v) { return setFloat(s.epsilon, v, kTrainDefaults.epsilon, true); }},
    {"decay",
     [](netc::TrainSettings &s, std::string_view v) { return setFloat(s.decay, v, kTrainDefaults.decay); }},
    {"conditioning",
     [](netc::TrainSettings &s, std::string_view v) {
       return setFloat(s.conditioning, v, kTrainDefaults.conditioning, true);
     }},
    {"schedule",
     [](netc::TrainSettings &s, std::string_view v) {
       return setParsed(s.schedule, v, kTrainDefaults.schedule, netc::parseSchedule);
     }},
    {"init",
     [](netc::TrainSettings &s, std::string_view v) {
       return setParsed(s.init, v, kTrainDefaults.init, netc::parseInit);
     }},
    {"init_diameter",
     [](netc::TrainSettings &s, std::string_view v) {
       return setFloat(s.initDiameter, v, kTrainDefaults.initDiameter, true);
     }},
    {"seed",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty()) {
         s.seed.reset();
         return {};
       }
       uint64_t seed = 0;
       auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), seed);
       if (error != std::errc() || end != v.data() + v.size())
         return fmt::format("'{}' is not an unsigned 64-bit integer", v);
       s.seed = seed;
       return {};
     }},
    {"threads", [](netc::TrainSettings &s,
                   std::string_view v) {
       return setInteger(s.threads, v, 0, kTrainDefaults.threads, netc::kMaxThreads);
     }},
    {"normalize",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty()) {
         s.normalize.reset();
         return {};
       }
       netc::Normalize normalize;
       if (Problem p = setParsed(normalize, v, normalize, netc::parseNormalize, "--normalize: "); !p.empty())
         return p;
       s.normalize = normalize;
       return {};
     }},
    {"shuffle", [](netc::TrainSettings &s,
                   std::string_view v) { return setBool(s.shuffle, v, kTrainDefaults.shuffle); }},
    {"validation",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty()) {
         s.validationFraction.reset();
         return {};
       }
       auto fraction = parseNumber(v);
       if (!fraction || *fraction < 0 || *fraction >= 1)
         return fmt::format("'{}' is not a fraction in [0, 1)", v);
       s.validationFraction = *fraction;
       return {};
     }},
    {"out",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.outDir = v;
       return {};
     }},
    {"overwrite", [](netc::TrainSettings &s,
                     std::string_view v) { return setBool(s.overwrite, v, kTrainDefaults.overwrite); }},
    {"metrics",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.metricsFile = v;
       return {};
     }},
    {"resume",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.resume = v;
       return {};
     }},
    {"init_from",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.initFrom = v;
       return {};
     }},
    {"init_skip", [](netc::TrainSettings &s, std::string_view v) { return setNameList(s.initSkip, v); }},
    {"task", [](netc::TrainSettings &s, std::string_view v) { return setTask(s.task, v); }},
    {"hidden_nodes",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.hiddenNodes, v, 1, kTrainDefaults.hiddenNodes);
     }},
    {"backend",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty()) { // the device's own
         s.backend = kTrainDefaults.backend;
         return {};
       }
       netc::registerBuiltinBackends();
       std::vector<std::string> names = netc::runtime::backendNames();
       if (std::find(names.begin(), names.end(), v) == names.end()) {
         std::string list;
         for (const std::string &name : names)
           list += (list.empty() ? "" : ", ") + name;
         return fmt::format("'{}' is not one of {}", v, list);
       }
       s.backend = v;
       return {};
     }},
    {"cpu_isa",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.cpuIsa = v;
       return {};
     }},
    {"dense_kernel",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       for (std::string_view name : netc::runtime::kDenseKernelNames)
         if (v == name || v.empty()) {
           s.denseKernel = v;
           return {};
         }
       return fmt::format("'{}' is not auto, netc or openblas", v);
     }},
    {"device",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty())
         v = kTrainDefaults.device;
       // The syntax only: whether the GPU is usable is the run's to say.
       auto choice = netc::chooseDevice(v, "", 0, [](int) { return std::optional<std::string>(); });
       if (!choice)
         return choice.message();
       s.device = v;
       return {};
     }},
    {"cuda_debug",
     [](netc::TrainSettings &s, std::string_view v) { return setBool(s.cudaDebug, v, kTrainDefaults.cudaDebug); }},
    {"cuda_graphs",
     [](netc::TrainSettings &s, std::string_view v) { return setBool(s.cudaGraphs, v, kTrainDefaults.cudaGraphs); }},
    {"data_on_device",
     [](netc::TrainSettings &s, std::string_view v) {
       return setBool(s.dataOnDevice, v, kTrainDefaults.dataOnDevice);
     }},
    {"precision",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v.empty())
         v = kTrainDefaults.precision;
       if (v != "fp32" && v != "tf32" && v != "bf16")
         return fmt::format("'{}' is not fp32, tf32 or bf16", v);
       s.precision = v;
       return {};
     }},
    {"max_memory", [](netc::TrainSettings &s, std::string_view v) { return setByteSize(s.maxMemory, v, 0); }},
    {"log_every",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.logEvery, v, 1, kTrainDefaults.logEvery);
     }},
    {"max_source_bytes",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.maxSourceBytes, v, 1, kTrainDefaults.maxSourceBytes,
                         static_cast<int64_t>(netc::kMaxSourceBytesLimit));
     }},
    {"checkpoint_every",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.checkpointEvery, v, 1, kTrainDefaults.checkpointEvery);
     }},
    {"bucket_mb",
     [](netc::TrainSettings &s, std::string_view v) {
       return setPositiveNumber(s.bucketMb, v, kTrainDefaults.bucketMb, netc::kMaxBucketMb, "MiB");
     }},
    {"launch",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       // "environment": this process's place as its launcher (mpirun, srun) says.
       if (v.empty() || v == "single") {
         s.launch = kTrainDefaults.launch;
         return {};
       }
       if (v != "environment")
         return fmt::format("'{}' is not single or environment", v);
       netc::LaunchResult launch = netc::launchFromEnvironment();
       if (!launch.ok())
         return launch.error;
       s.launch = launch.launch;
       return {};
     }},
    {"comm_timeout",
     [](netc::TrainSettings &s, std::string_view v) {
       return setPositiveNumber(s.commTimeout, v, kTrainDefaults.commTimeout, netc::kMaxCommTimeout, "seconds");
     }},
    {"sync",
     [](netc::TrainSettings &s, std::string_view v) {
       return setParsed(s.sync, v, kTrainDefaults.sync, netc::parseSync, "--sync ");
     }},
    {"lr_scaling",
     [](netc::TrainSettings &s, std::string_view v) {
       return setParsed(s.lrScaling, v, kTrainDefaults.lrScaling, netc::parseLrScaling, "--lr-scaling ");
     }},
    {"lr_warmup",
     [](netc::TrainSettings &s, std::string_view v) {
       return setParsed(s.lrWarmup, v, kTrainDefaults.lrWarmup, netc::parseLrWarmup, "--lr-warmup ");
     }},
    {"deterministic",
     [](netc::TrainSettings &s, std::string_view v) {
       // 0: off; a power of two of chunks is checked by netc_train with the ranks.
       return setInteger(s.deterministicChunks, v, 0, kTrainDefaults.deterministicChunks,
                         netc::kMaxDeterministicChunks);
     }},
    {"cost_model",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.costModel = v; // checked when the run starts (a file, a built-in name or none)
       return {};
     }},
    {"partition",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       if (v == "auto") {
         s.partition = netc::kAutoPartition;
         return {};
       }
       return setInteger(s.partition, v, 0, kTrainDefaults.partition, netc::kMaxPipelineStages);
     }},
    {"cut",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.cuts = commaList(v); // layers ("": none)
       return {};
     }},
    {"micro_batches",
     [](netc::TrainSettings &s, std::string_view v) {
       return setInteger(s.microBatches, v, 0, kTrainDefaults.microBatches, std::numeric_limits<int64_t>::max());
     }},
    {"pipeline_schedule",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.pipelineSchedule = v.empty() ? kTrainDefaults.pipelineSchedule : std::string(v);
       return {}; // checked with the other settings when the run starts
     }},
    {"split",
     [](netc::TrainSettings &s, std::string_view v) -> Problem {
       s.splits = commaList(v); // LAYER:S each ("": none), checked when the run starts
       return {};
     }},
};

/// Stops compiling when netc::TrainSettings gains or loses a field, until
/// kTrainKeys (and docs/embedding.md's table) follow: one name per field.
[[maybe_unused]] void everyTrainSettingHasAKey(const netc::TrainSettings &settings) {
  [[maybe_unused]] const auto &[data, epochs, batch, accumulate, optimizer, lr, momentum, nesterov,
                                weightDecay, beta1, beta2, epsilon, decay, conditioning, schedule, init,
                                initDiameter, seed, threads, normalize, shuffle, validation, out, overwrite,
                                metrics, resume, initFrom, initSkip, task, hiddenNodes, backend, cpuIsa,
                                denseKernel, device, cudaDebug, cudaGraphs, dataOnDevice, precision,
                                maxMemory, logEvery, bucketMb, launch, commTimeout, sync, lrScaling, lrWarmup,
                                deterministicChunks, costModel, checkpointEvery, maxSourceBytes, partition,
                                cuts, microBatches, pipelineSchedule, splits] = settings;
}
constexpr size_t kTrainSettingsFields = 55;
static_assert(std::size(kTrainKeys) == kTrainSettingsFields, "one key per field of netc::TrainSettings");

/// One key of netc_compile_options_set (the CLI's flags in snake_case).
struct CompileKey {
  std::string_view key;
  Problem (*set)(netc::CompileOptions &options, std::string_view value);
};

const netc::CompileOptions kCompileDefaults{};

const CompileKey kCompileKeys[] = {
    {"input_size",
     [](netc::CompileOptions &o, std::string_view v) { return setOptionalInteger(o.inputSize, v, 1); }},
    {"hidden_nodes",
     [](netc::CompileOptions &o, std::string_view v) {
       return setInteger(o.hiddenNodes, v, 1, kCompileDefaults.hiddenNodes);
     }},
    {"task", [](netc::CompileOptions &o, std::string_view v) { return setTask(o.task, v); }},
    {"classes",
     [](netc::CompileOptions &o, std::string_view v) { return setOptionalInteger(o.classCount, v, 1); }},
    {"max_errors",
     [](netc::CompileOptions &o, std::string_view v) {
       return setInteger(o.maxErrors, v, 0, kCompileDefaults.maxErrors);
     }},
    {"max_source_bytes",
     [](netc::CompileOptions &o, std::string_view v) {
       return setInteger(o.maxSourceBytes, v, 1, kCompileDefaults.maxSourceBytes,
                         static_cast<int64_t>(netc::kMaxSourceBytesLimit));
     }},
};

template <class Key> std::string keyList(std::span<const Key> keys) {
  std::string list;
  for (const Key &k : keys)
    list += (list.empty() ? "" : ", ") + std::string(k.key);
  return list;
}

template <class Key, class Target>
std::optional<std::string> setByKey(std::span<const Key> keys, Target &target, std::string_view key,
                                    std::string_view value) {
  for (const Key &k : keys)
    if (k.key == key)
      return k.set(target, value);
  return std::nullopt;
}

} // namespace

std::optional<std::string> setTrainSetting(TrainSettings &settings, std::string_view key,
                                           std::string_view value) {
  return setByKey(std::span<const TrainKey>(kTrainKeys), settings, key, value);
}

std::optional<std::string> setCompileOption(CompileOptions &options, std::string_view key,
                                            std::string_view value) {
  return setByKey(std::span<const CompileKey>(kCompileKeys), options, key, value);
}

const std::string &trainSettingKeys() {
  static const std::string keys = keyList(std::span<const TrainKey>(kTrainKeys));
  return keys;
}

const std::string &compileOptionKeys() {
  static const std::string keys = keyList(std::span<const CompileKey>(kCompileKeys));
  return keys;
}

} // namespace netc::capi
