/* netc_c.h -- the C API of netc, for callers in C and in other languages
 * (Python's ctypes, Rust, Go, ...). It wraps the C++ API (netc.h,
 * Training.h) behind opaque handles, status codes and message text: compile
 * or check a network and read its diagnostics, read a network's layers, load
 * a checkpoint and predict a batch, and train with settings given as
 * key/value strings, so that settings added later do not change the ABI.
 * No C++ exception crosses this interface. Link libnetc.so
 * (`target_link_libraries(app PRIVATE netc::netc)` or `pkg-config --libs netc`).
 *
 *   netc_compilation *c = NULL;
 *   netc_compile_file("examples/mnist.net", NULL, &c);
 *   if (netc_compilation_error_count(c) > 0) fputs(netc_compilation_formatted(c), stderr);
 *   netc_compilation_free(c);
 *
 * Conventions: every function that returns netc_status sets the calling
 * thread's last error message (netc_last_error) when it fails and clears it
 * when it succeeds. Strings returned by accessors belong to the handle they
 * came from and live as long as it does. Every *_free function accepts NULL.
 */
#ifndef NETC_NETC_C_H
#define NETC_NETC_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define NETC_C_API __attribute__((visibility("default")))
#else
#define NETC_C_API
#endif
/* No function of this API throws; C++ callers see that in the declarations. */
#ifdef __cplusplus
#define NETC_NOEXCEPT noexcept
#else
#define NETC_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, version ------------------------------------------ */

/** What a call did. Values are stable; new codes may be added. */
typedef enum netc_status {
  NETC_OK = 0,
  /** A NULL pointer, an index out of range, a buffer of the wrong size. */
  NETC_ERROR_INVALID_ARGUMENT = 1,
  /** A settings or metric key netc does not know (the message lists the known ones). */
  NETC_ERROR_UNKNOWN_KEY = 2,
  /** A settings value that does not parse or is out of range. */
  NETC_ERROR_BAD_VALUE = 3,
  /** Bad input: the .net file, the data, a checkpoint (`netc` exits 1). */
  NETC_ERROR_INPUT = 4,
  /** Settings a run refuses (`netc` exits 2). */
  NETC_ERROR_USAGE = 5,
  /** A known metric this result does not have (e.g. no test set). */
  NETC_ERROR_UNAVAILABLE = 6,
  NETC_ERROR_OUT_OF_MEMORY = 7,
  /** A bug in netc; the message says what happened. */
  NETC_ERROR_INTERNAL = 8
} netc_status;

/** The enumerator's name, e.g. "NETC_ERROR_USAGE" ("unknown status" otherwise). */
NETC_C_API const char *netc_status_name(netc_status status) NETC_NOEXCEPT;

/** The message of this thread's last failed call ("" after a success).
 * Valid until the next netc call on this thread. */
NETC_C_API const char *netc_last_error(void) NETC_NOEXCEPT;

/** The library's version, e.g. "0.1.0". */
NETC_C_API const char *netc_version(void) NETC_NOEXCEPT;

/* ---- compiling and checking ------------------------------------------- */

/** Compile options (the CLI's --input-size, --hidden-nodes, --task, --classes). */
typedef struct netc_compile_options netc_compile_options;
/** NULL when out of memory. */
NETC_C_API netc_compile_options *netc_compile_options_new(void) NETC_NOEXCEPT;
NETC_C_API void netc_compile_options_free(netc_compile_options *options) NETC_NOEXCEPT;
/** Keys: "input_size", "hidden_nodes", "classes", "max_errors",
 * "max_source_bytes" (integers; the last: the longest text netc_compile and
 * netc_compile_file take, 4 MiB by default, at most 2 GiB) and "task" (auto,
 * multiclass, binary, regression). An empty value restores the default. */
NETC_C_API netc_status netc_compile_options_set(netc_compile_options *options, const char *key,
                                                const char *value) NETC_NOEXCEPT;

/** One compilation: its diagnostics and, when there were no errors, the network. */
typedef struct netc_compilation netc_compilation;
/** One diagnostic of a compilation (owned by it). */
typedef struct netc_diagnostic netc_diagnostic;
/** The checked network of a compilation (owned by it). */
typedef struct netc_network netc_network;
/** One layer of a network (owned by the compilation). */
typedef struct netc_layer netc_layer;

/** Compiles `length` bytes of Net# text; `name` (NULL: "<input>") appears in
 * messages and names the network; `options` may be NULL. Errors in the text
 * are diagnostics, not a failure: the call returns NETC_OK with *out set, and
 * netc_compilation_error_count tells whether the network is usable. A
 * `length` over the "max_source_bytes" option (4 MiB by default) is
 * NETC_ERROR_INVALID_ARGUMENT, refused before any byte is read. */
NETC_C_API netc_status netc_compile(const char *source, size_t length, const char *name,
                                    const netc_compile_options *options,
                                    netc_compilation **out) NETC_NOEXCEPT;
/** Reads and compiles a file; an unreadable file is an error diagnostic (NS0001). */
NETC_C_API netc_status netc_compile_file(const char *path, const netc_compile_options *options,
                                         netc_compilation **out) NETC_NOEXCEPT;
NETC_C_API void netc_compilation_free(netc_compilation *compilation) NETC_NOEXCEPT;

NETC_C_API size_t netc_compilation_error_count(const netc_compilation *compilation) NETC_NOEXCEPT;
NETC_C_API size_t netc_compilation_diagnostic_count(const netc_compilation *compilation) NETC_NOEXCEPT;
/** Diagnostic `index` (sorted by position), or NULL when out of range. */
NETC_C_API const netc_diagnostic *netc_compilation_diagnostic(const netc_compilation *compilation,
                                                              size_t index) NETC_NOEXCEPT;
/** Every diagnostic as compiler-style text with source lines ("" when none). */
NETC_C_API const char *netc_compilation_formatted(const netc_compilation *compilation) NETC_NOEXCEPT;
/** The network, or NULL when the text had errors. */
NETC_C_API const netc_network *netc_compilation_network(const netc_compilation *compilation) NETC_NOEXCEPT;

typedef enum netc_severity {
  NETC_SEVERITY_NOTE = 0,
  NETC_SEVERITY_WARNING = 1,
  NETC_SEVERITY_ERROR = 2
} netc_severity;

NETC_C_API netc_severity netc_diagnostic_severity(const netc_diagnostic *diagnostic) NETC_NOEXCEPT;
/** The stable code, e.g. "NS0302" (docs/diagnostics.md). */
NETC_C_API const char *netc_diagnostic_code(const netc_diagnostic *diagnostic) NETC_NOEXCEPT;
NETC_C_API const char *netc_diagnostic_message(const netc_diagnostic *diagnostic) NETC_NOEXCEPT;
NETC_C_API const char *netc_diagnostic_file(const netc_diagnostic *diagnostic) NETC_NOEXCEPT;
/** The 1-based, half-open range [line:column, end_line:end_column) (columns
 * count bytes); any pointer may be NULL. */
NETC_C_API netc_status netc_diagnostic_range(const netc_diagnostic *diagnostic, uint32_t *line,
                                             uint32_t *column, uint32_t *end_line,
                                             uint32_t *end_column) NETC_NOEXCEPT;

/* ---- network info ------------------------------------------------------ */

NETC_C_API const char *netc_network_name(const netc_network *network) NETC_NOEXCEPT;
NETC_C_API size_t netc_network_layer_count(const netc_network *network) NETC_NOEXCEPT;
/** Unique trainable parameters (after `share`). */
NETC_C_API int64_t netc_network_params(const netc_network *network) NETC_NOEXCEPT;
/** Forward FLOPs per sample. */
NETC_C_API int64_t netc_network_flops(const netc_network *network) NETC_NOEXCEPT;
/** Layer `index` in declaration order, or NULL when out of range. */
NETC_C_API const netc_layer *netc_network_layer(const netc_network *network, size_t index) NETC_NOEXCEPT;

NETC_C_API const char *netc_layer_name(const netc_layer *layer) NETC_NOEXCEPT;
/** "input", "hidden" or "output". */
NETC_C_API const char *netc_layer_kind(const netc_layer *layer) NETC_NOEXCEPT;
/** The output function, e.g. "sigmoid"; NULL for an input layer. */
NETC_C_API const char *netc_layer_function(const netc_layer *layer) NETC_NOEXCEPT;
/** Number of dimensions of the resolved shape. */
NETC_C_API size_t netc_layer_rank(const netc_layer *layer) NETC_NOEXCEPT;
/** Copies min(rank, capacity) dimensions into `dims`; returns the rank. */
NETC_C_API size_t netc_layer_shape(const netc_layer *layer, int64_t *dims, size_t capacity) NETC_NOEXCEPT;
NETC_C_API int64_t netc_layer_nodes(const netc_layer *layer) NETC_NOEXCEPT;
/** Trainable parameters of the layer's bundles (before sharing). */
NETC_C_API int64_t netc_layer_params(const netc_layer *layer) NETC_NOEXCEPT;

/* ---- a trained model: load and predict ---------------------------------- */

typedef struct netc_model netc_model;

/** Compiles `net_path` with the sizes recorded in `checkpoint_path` and loads
 * its weights and normalizer. Fails with NETC_ERROR_INPUT or
 * NETC_ERROR_USAGE and a message (with the network's diagnostics). */
NETC_C_API netc_status netc_model_load(const char *net_path, const char *checkpoint_path,
                                       netc_model **out) NETC_NOEXCEPT;
NETC_C_API void netc_model_free(netc_model *model) NETC_NOEXCEPT;
/** `netc build`: compiles `net_path` with the weights and normalizer of
 * `checkpoint_path` into a native inference library in folder `out_dir`
 * (PREFIX.h, libPREFIX.so, libPREFIX.a, PREFIX.o, README.md; docs/codegen.md).
 * `name` (the symbols' prefix), `target` (an LLVM triple of x86_64, aarch64,
 * riscv64 or powerpc64le) and `cpu` may be NULL or "" for the defaults: the
 * network's name, this machine. `out_dir` must be new, empty or a folder
 * netc build made (any other is NETC_ERROR_USAGE: `netc build --overwrite`
 * writes into those). Needs netc's LLVM plugin (libnetc-llvm.so); fails with
 * NETC_ERROR_INPUT or NETC_ERROR_USAGE and a message, leaving no file of the
 * library behind. Nothing LLVM reports ends the calling process. */
NETC_C_API netc_status netc_build_library(const char *net_path, const char *checkpoint_path,
                                          const char *out_dir, const char *name, const char *target,
                                          const char *cpu) NETC_NOEXCEPT;
/** Features per sample (e.g. 784), or 0 for a NULL model. */
NETC_C_API int64_t netc_model_input_size(const netc_model *model) NETC_NOEXCEPT;
/** Outputs per sample (e.g. 10), or 0 for a NULL model. */
NETC_C_API int64_t netc_model_output_size(const netc_model *model) NETC_NOEXCEPT;
/** Runs a batch: `features` holds `feature_count` raw values (a positive
 * multiple of the input size; the checkpoint's normalizer is applied),
 * `outputs` has room for `output_capacity` values and receives
 * samples * output size of them (probabilities for a softmax output). A size
 * that does not fit is NETC_ERROR_INVALID_ARGUMENT; inputs whose outputs
 * would not be finite are NETC_ERROR_INPUT, naming the sample and feature or
 * the first layer that overflows. Calls on one model are serialised. */
NETC_C_API netc_status netc_model_predict(netc_model *model, const float *features, size_t feature_count,
                                          float *outputs, size_t output_capacity) NETC_NOEXCEPT;

/* ---- training ------------------------------------------------------------ */

/** Everything `netc train` can set, as key/value strings. */
typedef struct netc_train_settings netc_train_settings;
/** Azure ML Studio's defaults (docs/training.md); NULL when out of memory. */
NETC_C_API netc_train_settings *netc_train_settings_new(void) NETC_NOEXCEPT;
NETC_C_API void netc_train_settings_free(netc_train_settings *settings) NETC_NOEXCEPT;
/** Sets one setting; keys are the `netc train` flags in snake_case (see
 * netc_train_settings_keys and docs/embedding.md). An unknown key is
 * NETC_ERROR_UNKNOWN_KEY, a value that does not parse NETC_ERROR_BAD_VALUE;
 * the message names the key and what it accepts. Booleans accept
 * true/false/1/0/yes/no/on/off; "init_skip" takes a comma-separated list
 * that replaces the previous one; an empty value restores a key's default. */
NETC_C_API netc_status netc_train_settings_set(netc_train_settings *settings, const char *key,
                                               const char *value) NETC_NOEXCEPT;
/** The accepted keys, comma-separated. */
NETC_C_API const char *netc_train_settings_keys(void) NETC_NOEXCEPT;

/** A training event: progress within an epoch, an epoch's end, or a message. */
typedef struct netc_train_event netc_train_event;
typedef enum netc_train_event_kind {
  /** Within an epoch. Values: epoch, epochs, batches_done, batches_total,
   * samples_done, samples_total, loss, accuracy, images_per_second, eta_seconds. */
  NETC_TRAIN_EVENT_PROGRESS = 0,
  /** An epoch's end. Values: epoch, train_loss, train_accuracy, test_loss,
   * test_accuracy, images_per_second, seconds, learning_rate, best (1 or 0). */
  NETC_TRAIN_EVENT_EPOCH = 1,
  /** Text: a setup line or a hint. */
  NETC_TRAIN_EVENT_MESSAGE = 2
} netc_train_event_kind;
NETC_C_API netc_train_event_kind netc_train_event_get_kind(const netc_train_event *event) NETC_NOEXCEPT;
/** A value of the event by key (see netc_train_event_kind). */
NETC_C_API netc_status netc_train_event_value(const netc_train_event *event, const char *key,
                                              double *value) NETC_NOEXCEPT;
/** The message of a NETC_TRAIN_EVENT_MESSAGE event ("" for the others). */
NETC_C_API const char *netc_train_event_text(const netc_train_event *event) NETC_NOEXCEPT;
/** Called on the training thread; the event lives until the callback returns. */
typedef void (*netc_train_callback)(const netc_train_event *event, void *user);

/** The outcome of a training run. */
typedef struct netc_train_result netc_train_result;

/** Trains the network in `net_path` as `netc train` does; `callback` (may be
 * NULL) receives every event with `user`. On success *out holds the final
 * metrics; on failure it is NULL and the status is NETC_ERROR_INPUT or
 * NETC_ERROR_USAGE with a message (and the network's diagnostics). */
NETC_C_API netc_status netc_train(const char *net_path, const netc_train_settings *settings,
                                  netc_train_callback callback, void *user,
                                  netc_train_result **out) NETC_NOEXCEPT;
NETC_C_API void netc_train_result_free(netc_train_result *result) NETC_NOEXCEPT;
/** A final metric by key: epochs, steps, seconds, best_epoch, params,
 * train_samples, test_samples, train_loss and train_accuracy (the last
 * epoch's), test_loss and test_accuracy (the final evaluation on the test
 * set), rank, ranks and global_batch (the data-parallel job: this process's
 * rank, the ranks, and the samples of a step over all of them). A metric the
 * run does not have (no test set; accuracy of a regression) is
 * NETC_ERROR_UNAVAILABLE. */
NETC_C_API netc_status netc_train_result_value(const netc_train_result *result, const char *key,
                                               double *value) NETC_NOEXCEPT;
/** The seed the run used (also when it was drawn from the clock). */
NETC_C_API uint64_t netc_train_result_seed(const netc_train_result *result) NETC_NOEXCEPT;
/** The folder holding last.safetensors, best.safetensors and metrics.jsonl. */
NETC_C_API const char *netc_train_result_out_dir(const netc_train_result *result) NETC_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NETC_NETC_C_H */
