// CApi.cpp -- the C API (include/netc/netc_c.h) over the C++ API (netc.h,
// Training.h): opaque handles that own the C++ results, key/value setters
// (the keys are in SettingKeys.cpp), a thread-local last-error message, and a
// boundary that catches every exception (std::bad_alloc included) and turns
// it into a status code.
#include "netc/netc_c.h"

#include "api/SettingKeys.h"
#include "netc/Training.h"
#include "netc/netc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// ---- the handles -----------------------------------------------------------

struct netc_compile_options {
  netc::CompileOptions options;
};

struct netc_diagnostic {
  netc::Message message;
};

struct netc_layer {
  const netc::LayerInfo *info = nullptr;
};

struct netc_network {
  explicit netc_network(netc::Network n) : network(std::move(n)) {
    for (const netc::LayerInfo &layer : network.layers())
      layers.push_back({&layer});
  }
  netc::Network network;
  std::vector<netc_layer> layers;
};

struct netc_compilation {
  std::vector<netc_diagnostic> diagnostics;
  std::string formatted;
  size_t errors = 0;
  std::optional<netc_network> network;
};

struct netc_model {
  netc::Model model;
};

struct netc_train_settings {
  netc::TrainSettings settings;
};

/// Named numbers (the keys are string literals), for events and results.
struct NamedValues {
  std::vector<std::pair<std::string_view, double>> values;
};

struct netc_train_event {
  netc_train_event_kind kind = NETC_TRAIN_EVENT_MESSAGE;
  NamedValues values;
  std::string text;
};

struct netc_train_result {
  NamedValues values;
  uint64_t seed = 0;
  std::string outDir;
};

namespace {

// ---- errors ------------------------------------------------------------------

thread_local std::string lastError;

void setError(std::string_view message) noexcept {
  try {
    lastError.assign(message);
  } catch (...) {
    lastError.clear(); // no memory for the message: the status says enough
  }
}

netc_status fail(netc_status status, std::string_view message) noexcept {
  setError(message);
  return status;
}

netc_status succeed() noexcept {
  lastError.clear();
  return NETC_OK;
}

/// Runs `body` (which returns a status) so that no exception leaves it.
template <class Body> netc_status guard(Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(NETC_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    setError("internal error: ");
    try {
      lastError += e.what();
    } catch (...) {
    }
    return NETC_ERROR_INTERNAL;
  } catch (...) {
    return fail(NETC_ERROR_INTERNAL, "internal error: an unknown exception");
  }
}

/// Runs an accessor that returns a value; `fallback` when it throws.
template <class T, class Body> T guardValue(T fallback, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    setError("internal error in an accessor");
    return fallback;
  }
}

netc_status nullArgument(const char *function, const char *argument) noexcept {
  try {
    return fail(NETC_ERROR_INVALID_ARGUMENT, fmt::format("{}: {} is NULL", function, argument));
  } catch (...) {
    return fail(NETC_ERROR_INVALID_ARGUMENT, "a required argument is NULL");
  }
}

/// Applies `value` to `key` with `set` (SettingKeys.h); the message names the key.
template <class Target>
netc_status setByKey(std::optional<std::string> (*set)(Target &, std::string_view, std::string_view),
                     const std::string &keys, const char *what, Target &target, const char *key,
                     const char *value) {
  if (!key || !value)
    return nullArgument(what, !key ? "key" : "value");
  std::optional<std::string> problem = set(target, key, value);
  if (!problem)
    return fail(NETC_ERROR_UNKNOWN_KEY,
                fmt::format("unknown {} '{}'; the accepted keys are {}", what, key, keys));
  if (!problem->empty())
    return fail(NETC_ERROR_BAD_VALUE, fmt::format("{} '{}': {}", what, key, *problem));
  return succeed();
}

// ---- named values ------------------------------------------------------------------

const std::string_view kProgressKeys[] = {
    "epoch",         "epochs", "batches_done", "batches_total",     "samples_done",
    "samples_total", "loss",   "accuracy",     "images_per_second", "eta_seconds"};
const std::string_view kEpochKeys[] = {"epoch",     "train_loss",    "train_accuracy",
                                       "test_loss", "test_accuracy", "images_per_second",
                                       "seconds",   "learning_rate", "best"};
const std::string_view kResultKeys[] = {
    "epochs",     "steps",          "seconds",   "best_epoch",    "params", "train_samples", "test_samples",
    "train_loss", "train_accuracy", "test_loss", "test_accuracy", "rank",   "ranks",         "global_batch"};

netc_status lookup(const NamedValues &named, std::span<const std::string_view> known, const char *what,
                   const char *key, double *value) {
  if (!key || !value)
    return nullArgument(what, !key ? "key" : "value");
  for (const auto &[name, number] : named.values) {
    if (name == key) {
      *value = number;
      return succeed();
    }
  }
  for (std::string_view name : known)
    if (name == key)
      return fail(NETC_ERROR_UNAVAILABLE, fmt::format("{}: '{}' is not available for this run", what, key));
  std::string list;
  for (std::string_view name : known)
    list += (list.empty() ? "" : ", ") + std::string(name);
  return fail(NETC_ERROR_UNKNOWN_KEY, fmt::format("{}: unknown key '{}'; the keys are {}", what, key, list));
}

/// Turns training events into netc_train_event callbacks.
class CallbackListener final : public netc::TrainListener {
public:
  CallbackListener(netc_train_callback callback, void *user) : callback_(callback), user_(user) {}

  void onSetup(const std::vector<std::string> &lines) override {
    for (const std::string &line : lines)
      message(line);
  }
  void onHint(const std::string &hint) override { message(hint); }
  void onWarning(const std::string &warning) override { message("warning: " + warning); }
  void onProgress(const netc::TrainProgress &p) override {
    netc_train_event event;
    event.kind = NETC_TRAIN_EVENT_PROGRESS;
    event.values.values = {{"epoch", double(p.epoch)},
                           {"epochs", double(p.epochs)},
                           {"batches_done", double(p.batchesDone)},
                           {"batches_total", double(p.batchesTotal)},
                           {"samples_done", double(p.samplesDone)},
                           {"samples_total", double(p.samplesTotal)},
                           {"loss", p.loss},
                           {"accuracy", p.accuracy},
                           {"images_per_second", p.imagesPerSecond},
                           {"eta_seconds", p.etaSeconds}};
    callback_(&event, user_);
  }
  void onEpoch(const netc::EpochResult &e) override {
    netc_train_event event;
    event.kind = NETC_TRAIN_EVENT_EPOCH;
    auto &v = event.values.values;
    v = {{"epoch", double(e.epoch)},
         {"train_loss", e.trainLoss},
         {"images_per_second", e.imagesPerSecond},
         {"seconds", e.seconds},
         {"learning_rate", e.learningRate},
         {"best", e.best ? 1.0 : 0.0}};
    if (e.classification)
      v.push_back({"train_accuracy", e.trainAccuracy});
    if (e.testLoss)
      v.push_back({"test_loss", *e.testLoss});
    if (e.testAccuracy && e.classification)
      v.push_back({"test_accuracy", *e.testAccuracy});
    callback_(&event, user_);
  }

private:
  void message(const std::string &text) {
    netc_train_event event;
    event.kind = NETC_TRAIN_EVENT_MESSAGE;
    event.text = text;
    callback_(&event, user_);
  }
  netc_train_callback callback_;
  void *user_;
};

/// "diagnostics + error", as the CLI prints them.
std::string failureText(const std::string &diagnostics, const std::string &error) {
  return diagnostics.empty() ? error : diagnostics + error;
}

netc_status fillCompilation(netc::CompileResult result, netc_compilation **out) {
  auto compilation = std::make_unique<netc_compilation>();
  compilation->errors = result.errorCount();
  for (netc::Message &m : result.diagnostics)
    compilation->diagnostics.push_back({std::move(m)});
  compilation->formatted = std::move(result.formattedDiagnostics);
  if (result.network)
    compilation->network.emplace(std::move(*result.network));
  *out = compilation.release();
  return succeed();
}

} // namespace

// ---- status, errors, version -----------------------------------------------------------

extern "C" {

const char *netc_status_name(netc_status status) noexcept {
  switch (status) {
  case NETC_OK: return "NETC_OK";
  case NETC_ERROR_INVALID_ARGUMENT: return "NETC_ERROR_INVALID_ARGUMENT";
  case NETC_ERROR_UNKNOWN_KEY: return "NETC_ERROR_UNKNOWN_KEY";
  case NETC_ERROR_BAD_VALUE: return "NETC_ERROR_BAD_VALUE";
  case NETC_ERROR_INPUT: return "NETC_ERROR_INPUT";
  case NETC_ERROR_USAGE: return "NETC_ERROR_USAGE";
  case NETC_ERROR_UNAVAILABLE: return "NETC_ERROR_UNAVAILABLE";
  case NETC_ERROR_OUT_OF_MEMORY: return "NETC_ERROR_OUT_OF_MEMORY";
  case NETC_ERROR_INTERNAL: return "NETC_ERROR_INTERNAL";
  }
  return "unknown status";
}

const char *netc_last_error(void) noexcept {
  return lastError.c_str();
}

const char *netc_version(void) noexcept {
  return netc::version();
}

// ---- compiling and checking ----------------------------------------------------------

netc_compile_options *netc_compile_options_new(void) noexcept {
  return new (std::nothrow) netc_compile_options();
}

void netc_compile_options_free(netc_compile_options *options) noexcept {
  delete options;
}

netc_status netc_compile_options_set(netc_compile_options *options, const char *key,
                                     const char *value) noexcept {
  return guard([&] {
    if (!options)
      return nullArgument("netc_compile_options_set", "options");
    return setByKey(netc::capi::setCompileOption, netc::capi::compileOptionKeys(), "compile option",
                    options->options, key, value);
  });
}

netc_status netc_compile(const char *source, size_t length, const char *name,
                         const netc_compile_options *options, netc_compilation **out) noexcept {
  return guard([&] {
    if (!out)
      return nullArgument("netc_compile", "out");
    *out = nullptr;
    if (!source && length > 0)
      return nullArgument("netc_compile", "source");
    netc::CompileOptions compileOptions = options ? options->options : netc::CompileOptions{};
    // Refused before a byte is read: a length past the limit is a caller's
    // mistake (SIZE_MAX, a negative number converted), not a text to copy.
    if (length > compileOptions.maxSourceBytes)
      return fail(
          NETC_ERROR_INVALID_ARGUMENT,
          fmt::format("netc_compile: a source of {} bytes is more than the {} bytes a Net# source may "
                      "have; raise the limit with the compile option max_source_bytes (at most {})",
                      length, compileOptions.maxSourceBytes, netc::kMaxSourceBytesLimit));
    std::string_view text = source ? std::string_view(source, length) : std::string_view();
    return fillCompilation(netc::compile(text, name ? name : "<input>", compileOptions), out);
  });
}

netc_status netc_compile_file(const char *path, const netc_compile_options *options,
                              netc_compilation **out) noexcept {
  return guard([&] {
    if (!out)
      return nullArgument("netc_compile_file", "out");
    *out = nullptr;
    if (!path)
      return nullArgument("netc_compile_file", "path");
    netc::CompileOptions compileOptions = options ? options->options : netc::CompileOptions{};
    return fillCompilation(netc::compileFile(path, compileOptions), out);
  });
}

void netc_compilation_free(netc_compilation *compilation) noexcept {
  delete compilation;
}

size_t netc_compilation_error_count(const netc_compilation *compilation) noexcept {
  return compilation ? compilation->errors : 0;
}

size_t netc_compilation_diagnostic_count(const netc_compilation *compilation) noexcept {
  return compilation ? compilation->diagnostics.size() : 0;
}

const netc_diagnostic *netc_compilation_diagnostic(const netc_compilation *compilation,
                                                   size_t index) noexcept {
  return guardValue<const netc_diagnostic *>(nullptr, [&]() -> const netc_diagnostic * {
    if (!compilation || index >= compilation->diagnostics.size()) {
      setError(fmt::format("netc_compilation_diagnostic: index {} is out of range ({} diagnostics)", index,
                           compilation ? compilation->diagnostics.size() : 0));
      return nullptr;
    }
    return &compilation->diagnostics[index];
  });
}

const char *netc_compilation_formatted(const netc_compilation *compilation) noexcept {
  return compilation ? compilation->formatted.c_str() : "";
}

const netc_network *netc_compilation_network(const netc_compilation *compilation) noexcept {
  return compilation && compilation->network ? &*compilation->network : nullptr;
}

netc_severity netc_diagnostic_severity(const netc_diagnostic *diagnostic) noexcept {
  if (!diagnostic)
    return NETC_SEVERITY_ERROR;
  switch (diagnostic->message.severity) {
  case netc::Severity::Note: return NETC_SEVERITY_NOTE;
  case netc::Severity::Warning: return NETC_SEVERITY_WARNING;
  case netc::Severity::Error: return NETC_SEVERITY_ERROR;
  }
  return NETC_SEVERITY_ERROR;
}

const char *netc_diagnostic_code(const netc_diagnostic *diagnostic) noexcept {
  return diagnostic ? diagnostic->message.code.c_str() : "";
}

const char *netc_diagnostic_message(const netc_diagnostic *diagnostic) noexcept {
  return diagnostic ? diagnostic->message.message.c_str() : "";
}

const char *netc_diagnostic_file(const netc_diagnostic *diagnostic) noexcept {
  return diagnostic ? diagnostic->message.file.c_str() : "";
}

netc_status netc_diagnostic_range(const netc_diagnostic *diagnostic, uint32_t *line, uint32_t *column,
                                  uint32_t *end_line, uint32_t *end_column) noexcept {
  if (!diagnostic)
    return nullArgument("netc_diagnostic_range", "diagnostic");
  const netc::Range &range = diagnostic->message.range;
  if (line)
    *line = range.start.line;
  if (column)
    *column = range.start.column;
  if (end_line)
    *end_line = range.end.line;
  if (end_column)
    *end_column = range.end.column;
  return succeed();
}

// ---- network info ------------------------------------------------------------------

const char *netc_network_name(const netc_network *network) noexcept {
  return network ? network->network.name().c_str() : "";
}

size_t netc_network_layer_count(const netc_network *network) noexcept {
  return network ? network->layers.size() : 0;
}

int64_t netc_network_params(const netc_network *network) noexcept {
  return network ? network->network.params() : 0;
}

int64_t netc_network_flops(const netc_network *network) noexcept {
  return network ? network->network.flops() : 0;
}

const netc_layer *netc_network_layer(const netc_network *network, size_t index) noexcept {
  return guardValue<const netc_layer *>(nullptr, [&]() -> const netc_layer * {
    if (!network || index >= network->layers.size()) {
      setError(fmt::format("netc_network_layer: index {} is out of range ({} layers)", index,
                           network ? network->layers.size() : 0));
      return nullptr;
    }
    return &network->layers[index];
  });
}

const char *netc_layer_name(const netc_layer *layer) noexcept {
  return layer ? layer->info->name.c_str() : "";
}

const char *netc_layer_kind(const netc_layer *layer) noexcept {
  return layer ? layer->info->kind.c_str() : "";
}

const char *netc_layer_function(const netc_layer *layer) noexcept {
  return layer && layer->info->function ? layer->info->function->c_str() : nullptr;
}

size_t netc_layer_rank(const netc_layer *layer) noexcept {
  return layer ? layer->info->shape.size() : 0;
}

size_t netc_layer_shape(const netc_layer *layer, int64_t *dims, size_t capacity) noexcept {
  if (!layer)
    return 0;
  const std::vector<int64_t> &shape = layer->info->shape;
  for (size_t i = 0; dims && i < shape.size() && i < capacity; ++i)
    dims[i] = shape[i];
  return shape.size();
}

int64_t netc_layer_nodes(const netc_layer *layer) noexcept {
  return layer ? layer->info->nodes : 0;
}

int64_t netc_layer_params(const netc_layer *layer) noexcept {
  return layer ? layer->info->params : 0;
}

// ---- a trained model ---------------------------------------------------------------

netc_status netc_model_load(const char *net_path, const char *checkpoint_path, netc_model **out) noexcept {
  return guard([&] {
    if (!out)
      return nullArgument("netc_model_load", "out");
    *out = nullptr;
    if (!net_path || !checkpoint_path)
      return nullArgument("netc_model_load", !net_path ? "net_path" : "checkpoint_path");
    netc::ModelResult loaded = netc::Model::load(net_path, checkpoint_path);
    if (!loaded.model)
      return fail(loaded.failure == netc::FailureKind::Usage ? NETC_ERROR_USAGE : NETC_ERROR_INPUT,
                  failureText(loaded.diagnostics, loaded.error));
    *out = new netc_model{std::move(*loaded.model)};
    return succeed();
  });
}

void netc_model_free(netc_model *model) noexcept {
  delete model;
}

netc_status netc_build_library(const char *net_path, const char *checkpoint_path, const char *out_dir,
                               const char *name, const char *target, const char *cpu) noexcept {
  return guard([&] {
    if (!net_path || !checkpoint_path || !out_dir)
      return nullArgument("netc_build_library", !net_path          ? "net_path"
                                                : !checkpoint_path ? "checkpoint_path"
                                                                   : "out_dir");
    netc::LibrarySettings settings;
    settings.outDir = out_dir;
    settings.name = name ? name : "";
    settings.target = target ? target : "";
    settings.cpu = cpu ? cpu : "";
    netc::LibraryResult built = netc::buildLibrary(net_path, checkpoint_path, settings);
    if (!built.ok())
      return fail(built.failure == netc::FailureKind::Usage ? NETC_ERROR_USAGE : NETC_ERROR_INPUT,
                  failureText(built.diagnostics, built.error));
    return succeed();
  });
}

int64_t netc_model_input_size(const netc_model *model) noexcept {
  return model ? model->model.inputSize() : 0;
}

int64_t netc_model_output_size(const netc_model *model) noexcept {
  return model ? model->model.outputSize() : 0;
}

netc_status netc_model_predict(netc_model *model, const float *features, size_t feature_count, float *outputs,
                               size_t output_capacity) noexcept {
  return guard([&] {
    if (!model || !features || !outputs)
      return nullArgument("netc_model_predict", !model ? "model" : !features ? "features" : "outputs");
    const auto inputSize = static_cast<size_t>(model->model.inputSize());
    const auto outputSize = static_cast<size_t>(model->model.outputSize());
    // No array holds more than PTRDIFF_MAX bytes: a larger count is a
    // caller's mistake, refused before a value is read or written.
    constexpr size_t kMostFloats = static_cast<size_t>(PTRDIFF_MAX) / sizeof(float);
    if (feature_count > kMostFloats || output_capacity > kMostFloats)
      return fail(NETC_ERROR_INVALID_ARGUMENT,
                  fmt::format("netc_model_predict: {} {} is more than an array of floats can hold ({})",
                              feature_count > kMostFloats ? feature_count : output_capacity,
                              feature_count > kMostFloats ? "features" : "output values", kMostFloats));
    if (feature_count == 0 || feature_count % inputSize != 0)
      return fail(
          NETC_ERROR_INVALID_ARGUMENT,
          fmt::format("netc_model_predict: {} features is not a positive multiple of the input size {}",
                      feature_count, inputSize));
    if (outputSize > 0 && feature_count / inputSize > kMostFloats / outputSize)
      return fail(NETC_ERROR_INVALID_ARGUMENT,
                  fmt::format("netc_model_predict: {} samples would need more output values than an array of "
                              "floats can hold",
                              feature_count / inputSize));
    const size_t needed = feature_count / inputSize * outputSize;
    if (output_capacity < needed)
      return fail(NETC_ERROR_INVALID_ARGUMENT,
                  fmt::format("netc_model_predict: the output buffer holds {} values but {} samples need {}",
                              output_capacity, feature_count / inputSize, needed));
    // Inputs whose outputs are not finite (a feature far outside what the
    // normaliser saw) are an input error naming the layer, never NaN outputs.
    std::string problem;
    std::vector<float> result =
        model->model.predict(std::span<const float>(features, feature_count), problem);
    if (!problem.empty())
      return fail(NETC_ERROR_INPUT, "netc_model_predict: " + problem);
    if (result.size() != needed)
      return fail(NETC_ERROR_INTERNAL, fmt::format("netc_model_predict: the model returned {} values, not {}",
                                                   result.size(), needed));
    std::copy(result.begin(), result.end(), outputs);
    return succeed();
  });
}

// ---- training ------------------------------------------------------------------------

netc_train_settings *netc_train_settings_new(void) noexcept {
  return new (std::nothrow) netc_train_settings();
}

void netc_train_settings_free(netc_train_settings *settings) noexcept {
  delete settings;
}

netc_status netc_train_settings_set(netc_train_settings *settings, const char *key,
                                    const char *value) noexcept {
  return guard([&] {
    if (!settings)
      return nullArgument("netc_train_settings_set", "settings");
    return setByKey(netc::capi::setTrainSetting, netc::capi::trainSettingKeys(), "train setting",
                    settings->settings, key, value);
  });
}

const char *netc_train_settings_keys(void) noexcept {
  return guardValue<const char *>("", [] { return netc::capi::trainSettingKeys().c_str(); });
}

netc_train_event_kind netc_train_event_get_kind(const netc_train_event *event) noexcept {
  return event ? event->kind : NETC_TRAIN_EVENT_MESSAGE;
}

netc_status netc_train_event_value(const netc_train_event *event, const char *key, double *value) noexcept {
  return guard([&] {
    if (!event)
      return nullArgument("netc_train_event_value", "event");
    std::span<const std::string_view> known;
    if (event->kind == NETC_TRAIN_EVENT_PROGRESS)
      known = kProgressKeys;
    else if (event->kind == NETC_TRAIN_EVENT_EPOCH)
      known = kEpochKeys;
    return lookup(event->values, known, "netc_train_event_value", key, value);
  });
}

const char *netc_train_event_text(const netc_train_event *event) noexcept {
  return event ? event->text.c_str() : "";
}

netc_status netc_train(const char *net_path, const netc_train_settings *settings,
                       netc_train_callback callback, void *user, netc_train_result **out) noexcept {
  return guard([&] {
    if (!out)
      return nullArgument("netc_train", "out");
    *out = nullptr;
    if (!net_path || !settings)
      return nullArgument("netc_train", !net_path ? "net_path" : "settings");
    CallbackListener listener(callback, user);
    netc::TrainResult r = netc::trainNetwork(net_path, settings->settings, callback ? &listener : nullptr);
    if (!r.ok())
      return fail(r.failure == netc::FailureKind::Usage ? NETC_ERROR_USAGE : NETC_ERROR_INPUT,
                  failureText(r.diagnostics, r.error));
    auto result = std::make_unique<netc_train_result>();
    auto &v = result->values.values;
    v = {{"epochs", double(r.epochs.size())},
         {"steps", double(r.steps)},
         {"seconds", r.seconds},
         {"best_epoch", double(r.bestEpoch)},
         {"params", double(r.params)},
         {"train_samples", double(r.trainSamples)},
         {"test_samples", double(r.testSamples)},
         {"rank", double(r.rank)},
         {"ranks", double(r.ranks)},
         {"global_batch", double(r.globalBatch)}};
    if (!r.epochs.empty()) {
      v.push_back({"train_loss", r.epochs.back().trainLoss});
      if (r.epochs.back().classification)
        v.push_back({"train_accuracy", r.epochs.back().trainAccuracy});
    }
    if (r.finalTest) {
      v.push_back({"test_loss", r.finalTest->loss});
      if (r.finalTest->classification)
        v.push_back({"test_accuracy", r.finalTest->accuracy});
    }
    result->seed = r.seed;
    result->outDir = r.outDir;
    *out = result.release();
    return succeed();
  });
}

void netc_train_result_free(netc_train_result *result) noexcept {
  delete result;
}

netc_status netc_train_result_value(const netc_train_result *result, const char *key,
                                    double *value) noexcept {
  return guard([&] {
    if (!result)
      return nullArgument("netc_train_result_value", "result");
    return lookup(result->values, kResultKeys, "netc_train_result_value", key, value);
  });
}

uint64_t netc_train_result_seed(const netc_train_result *result) noexcept {
  return result ? result->seed : 0;
}

const char *netc_train_result_out_dir(const netc_train_result *result) noexcept {
  return result ? result->outDir.c_str() : "";
}

} // extern "C"
