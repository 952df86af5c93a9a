/* capi_test.c -- exercises every function of the C API (include/netc/netc_c.h)
 * from a program compiled as C and linked with libnetc.so: version and status
 * names, compile options, compiling good and bad text and files (each
 * diagnostic's code, severity, file and range), network and layer info,
 * every training key with good and bad values, a one-epoch run with the event
 * callback, the final metrics, loading the checkpoint and predicting a batch,
 * and the error paths (NULL arguments, unknown keys, missing files, wrong
 * buffer sizes, lengths no caller could own, random `target` and `cpu`
 * strings for netc_build_library). Prints one line per failed check and
 * exits 1 if any failed.
 *
 *   capi_test SOURCE_DIR [WORK_DIR]
 * Without WORK_DIR it skips the training run (and the model it writes).
 */
#include "netc/netc_c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                                                     \
  do {                                                                                                       \
    if (!(condition)) {                                                                                      \
      ++failures;                                                                                            \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #condition,          \
              netc_last_error());                                                                            \
    }                                                                                                        \
  } while (0)

/* The status is `expected` and the message mentions `text`. */
#define CHECK_FAILS(call, expected, text)                                                                    \
  do {                                                                                                       \
    netc_status status_ = (call);                                                                            \
    if (status_ != (expected) || !strstr(netc_last_error(), (text))) {                                       \
      ++failures;                                                                                            \
      fprintf(stderr, "%s:%d: %s gave %s (%s), expected %s mentioning '%s'\n", __FILE__, __LINE__, #call,    \
              netc_status_name(status_), netc_last_error(), #expected, (text));                              \
    }                                                                                                        \
  } while (0)

static void testVersionAndStatus(void) {
  CHECK(strlen(netc_version()) > 0);
#ifdef NETC_EXPECTED_VERSION
  CHECK(strcmp(netc_version(), NETC_EXPECTED_VERSION) == 0);
#endif
  CHECK(strcmp(netc_status_name(NETC_OK), "NETC_OK") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_INVALID_ARGUMENT), "NETC_ERROR_INVALID_ARGUMENT") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_UNKNOWN_KEY), "NETC_ERROR_UNKNOWN_KEY") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_BAD_VALUE), "NETC_ERROR_BAD_VALUE") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_INPUT), "NETC_ERROR_INPUT") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_USAGE), "NETC_ERROR_USAGE") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_UNAVAILABLE), "NETC_ERROR_UNAVAILABLE") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_OUT_OF_MEMORY), "NETC_ERROR_OUT_OF_MEMORY") == 0);
  CHECK(strcmp(netc_status_name(NETC_ERROR_INTERNAL), "NETC_ERROR_INTERNAL") == 0);
  CHECK(strcmp(netc_status_name((netc_status)99), "unknown status") == 0);
}

static void testCompileOptions(void) {
  netc_compile_options *options = netc_compile_options_new();
  CHECK(options != NULL);
  CHECK(netc_compile_options_set(options, "input_size", "7") == NETC_OK);
  CHECK(strcmp(netc_last_error(), "") == 0);
  CHECK(netc_compile_options_set(options, "hidden_nodes", "3") == NETC_OK);
  CHECK(netc_compile_options_set(options, "task", "multiclass") == NETC_OK);
  CHECK(netc_compile_options_set(options, "classes", "4") == NETC_OK);
  CHECK(netc_compile_options_set(options, "max_errors", "0") == NETC_OK);
  CHECK_FAILS(netc_compile_options_set(options, "inputsize", "7"), NETC_ERROR_UNKNOWN_KEY, "input_size");
  CHECK_FAILS(netc_compile_options_set(options, "input_size", "seven"), NETC_ERROR_BAD_VALUE, "input_size");
  CHECK_FAILS(netc_compile_options_set(options, "task", "clustering"), NETC_ERROR_BAD_VALUE, "task");
  CHECK_FAILS(netc_compile_options_set(options, NULL, "1"), NETC_ERROR_INVALID_ARGUMENT, "key");
  CHECK_FAILS(netc_compile_options_set(NULL, "task", "auto"), NETC_ERROR_INVALID_ARGUMENT, "options");

  /* `auto` sizes resolve from the options: 7 inputs, 3 hidden nodes, 4 classes. */
  const char *source = "input X auto;\nhidden H auto from X all;\noutput Y auto from H all;\n";
  netc_compilation *compilation = NULL;
  CHECK(netc_compile(source, strlen(source), "sized", options, &compilation) == NETC_OK);
  const netc_network *network = netc_compilation_network(compilation);
  CHECK(network != NULL);
  CHECK(netc_layer_nodes(netc_network_layer(network, 0)) == 7);
  CHECK(netc_layer_nodes(netc_network_layer(network, 1)) == 3);
  CHECK(netc_layer_nodes(netc_network_layer(network, 2)) == 4);
  CHECK(netc_network_params(network) == 7 * 3 + 3 + 3 * 4 + 4);
  netc_compilation_free(compilation);

  /* An empty value restores the default: X auto without a size is an error. */
  CHECK(netc_compile_options_set(options, "input_size", "") == NETC_OK);
  CHECK(netc_compile(source, strlen(source), "unsized", options, &compilation) == NETC_OK);
  CHECK(netc_compilation_network(compilation) == NULL);
  CHECK(netc_compilation_error_count(compilation) > 0);
  netc_compilation_free(compilation);

  /* A length over the source limit (4 MiB by default; max_source_bytes) is
     refused before a byte is read: SIZE_MAX, a negative length converted. */
  compilation = NULL;
  CHECK_FAILS(netc_compile(source, (size_t)-1, "huge", NULL, &compilation), NETC_ERROR_INVALID_ARGUMENT,
              "more than the 4194304 bytes a Net# source may have; raise the limit with the compile option "
              "max_source_bytes");
  CHECK(compilation == NULL);
  CHECK_FAILS(netc_compile(source, (size_t)-5, "huge", options, &compilation), NETC_ERROR_INVALID_ARGUMENT,
              "max_source_bytes");
  CHECK(netc_compile_options_set(options, "max_source_bytes", "10") == NETC_OK);
  CHECK_FAILS(netc_compile(source, strlen(source), "long", options, &compilation),
              NETC_ERROR_INVALID_ARGUMENT, "a source of 66 bytes is more than the 10 bytes");
  CHECK_FAILS(netc_compile_options_set(options, "max_source_bytes", "0"), NETC_ERROR_BAD_VALUE,
              "max_source_bytes");
  CHECK_FAILS(netc_compile_options_set(options, "max_source_bytes", "2147483649"), NETC_ERROR_BAD_VALUE,
              "max_source_bytes");
  CHECK(netc_compile_options_set(options, "max_source_bytes", "") == NETC_OK);
  CHECK(netc_compile(source, strlen(source), "unsized", options, &compilation) == NETC_OK);
  netc_compilation_free(compilation);
  netc_compile_options_free(options);
  netc_compile_options_free(NULL);
}

static void testGoodNetwork(void) {
  const char *source = "input Picture [28, 28];\n"
                       "hidden C1 [5, 12, 12] from Picture convolve {\n"
                       "  InputShape = [28, 28]; KernelShape = [5, 5]; Stride = [2, 2]; MapCount = 5;\n"
                       "}\n"
                       "hidden H [100] from C1 all;\n"
                       "output Digit [10] softmax from H all;\n";
  netc_compilation *compilation = NULL;
  CHECK(netc_compile(source, strlen(source), "embedded.net", NULL, &compilation) == NETC_OK);
  CHECK(netc_compilation_error_count(compilation) == 0);
  CHECK(netc_compilation_diagnostic_count(compilation) == 0);
  CHECK(strcmp(netc_compilation_formatted(compilation), "") == 0);
  CHECK(netc_compilation_diagnostic(compilation, 0) == NULL);
  CHECK(strstr(netc_last_error(), "out of range") != NULL);

  const netc_network *network = netc_compilation_network(compilation);
  CHECK(network != NULL);
  CHECK(strcmp(netc_network_name(network), "embedded") == 0);
  CHECK(netc_network_layer_count(network) == 4);
  CHECK(netc_network_params(network) == 73240);
  CHECK(netc_network_flops(network) > 0);

  const netc_layer *input = netc_network_layer(network, 0);
  CHECK(strcmp(netc_layer_name(input), "Picture") == 0);
  CHECK(strcmp(netc_layer_kind(input), "input") == 0);
  CHECK(netc_layer_function(input) == NULL);
  CHECK(netc_layer_params(input) == 0);

  const netc_layer *conv = netc_network_layer(network, 1);
  int64_t dims[4] = {0, 0, 0, 0};
  CHECK(netc_layer_rank(conv) == 3);
  CHECK(netc_layer_shape(conv, dims, 4) == 3);
  CHECK(dims[0] == 5 && dims[1] == 12 && dims[2] == 12 && dims[3] == 0);
  CHECK(netc_layer_shape(conv, dims, 1) == 3); /* copies only what fits */
  CHECK(netc_layer_nodes(conv) == 720);
  CHECK(netc_layer_params(conv) == 130);
  CHECK(strcmp(netc_layer_kind(conv), "hidden") == 0);
  CHECK(strcmp(netc_layer_function(conv), "sigmoid") == 0);

  const netc_layer *output = netc_network_layer(network, 3);
  CHECK(strcmp(netc_layer_name(output), "Digit") == 0);
  CHECK(strcmp(netc_layer_kind(output), "output") == 0);
  CHECK(strcmp(netc_layer_function(output), "softmax") == 0);
  CHECK(netc_network_layer(network, 4) == NULL);
  CHECK(strstr(netc_last_error(), "out of range") != NULL);
  netc_compilation_free(compilation);
}

static void testDiagnostics(void) {
  /* NS0302: an unknown layer, at 2:19-2:22. */
  const char *source = "input Data [5];\nhidden H [5] from Dta all;\noutput O [2] from H all;\n";
  netc_compilation *compilation = NULL;
  CHECK(netc_compile(source, strlen(source), "bad.net", NULL, &compilation) == NETC_OK);
  CHECK(netc_compilation_network(compilation) == NULL);
  CHECK(netc_compilation_error_count(compilation) == 1);
  CHECK(netc_compilation_diagnostic_count(compilation) >= 1);
  const netc_diagnostic *diagnostic = netc_compilation_diagnostic(compilation, 0);
  CHECK(diagnostic != NULL);
  CHECK(strcmp(netc_diagnostic_code(diagnostic), "NS0302") == 0);
  CHECK(netc_diagnostic_severity(diagnostic) == NETC_SEVERITY_ERROR);
  CHECK(strstr(netc_diagnostic_message(diagnostic), "Dta") != NULL);
  CHECK(strcmp(netc_diagnostic_file(diagnostic), "bad.net") == 0);
  uint32_t line = 0, column = 0, endLine = 0, endColumn = 0;
  CHECK(netc_diagnostic_range(diagnostic, &line, &column, &endLine, &endColumn) == NETC_OK);
  CHECK(line == 2 && column == 19 && endLine == 2 && endColumn == 22);
  CHECK(netc_diagnostic_range(diagnostic, NULL, NULL, NULL, NULL) == NETC_OK);
  CHECK_FAILS(netc_diagnostic_range(NULL, &line, NULL, NULL, NULL), NETC_ERROR_INVALID_ARGUMENT,
              "diagnostic");
  CHECK(strstr(netc_compilation_formatted(compilation), "bad.net:2:19: error: unknown layer 'Dta'") != NULL);
  netc_compilation_free(compilation);
  netc_compilation_free(NULL);

  /* A warning (NS0312) is a diagnostic too, and the network is still there. */
  const char *warned = "input Data [10];\nhidden H [5] from Data all;\nhidden Unused [4] from H all;\n"
                       "output Out [2] from H all;\n";
  CHECK(netc_compile(warned, strlen(warned), NULL, NULL, &compilation) == NETC_OK);
  CHECK(netc_compilation_network(compilation) != NULL);
  CHECK(netc_compilation_error_count(compilation) == 0);
  CHECK(netc_compilation_diagnostic_count(compilation) == 1);
  diagnostic = netc_compilation_diagnostic(compilation, 0);
  CHECK(strcmp(netc_diagnostic_code(diagnostic), "NS0312") == 0);
  CHECK(netc_diagnostic_severity(diagnostic) == NETC_SEVERITY_WARNING);
  CHECK(strcmp(netc_diagnostic_file(diagnostic), "<input>") == 0);
  CHECK(netc_diagnostic_range(diagnostic, &line, &column, &endLine, &endColumn) == NETC_OK);
  CHECK(line == 3 && column == 8 && endLine == 3 && endColumn == 14);
  netc_compilation_free(compilation);

  CHECK_FAILS(netc_compile(NULL, 3, "x", NULL, &compilation), NETC_ERROR_INVALID_ARGUMENT, "source");
  CHECK(compilation == NULL);
  CHECK_FAILS(netc_compile("input X [1];", 12, "x", NULL, NULL), NETC_ERROR_INVALID_ARGUMENT, "out");
  CHECK_FAILS(netc_compile_file(NULL, NULL, &compilation), NETC_ERROR_INVALID_ARGUMENT, "path");
}

static void testFiles(const char *sourceDir) {
  char path[4096];
  netc_compilation *compilation = NULL;
  /* A missing file is a diagnostic (NS0001), not a failed call. */
  CHECK(netc_compile_file("/nonexistent/missing.net", NULL, &compilation) == NETC_OK);
  CHECK(netc_compilation_network(compilation) == NULL);
  CHECK(netc_compilation_error_count(compilation) == 1);
  CHECK(strcmp(netc_diagnostic_code(netc_compilation_diagnostic(compilation, 0)), "NS0001") == 0);
  CHECK(strstr(netc_compilation_formatted(compilation), "missing.net") != NULL);
  netc_compilation_free(compilation);

  snprintf(path, sizeof path, "%s/examples/mnist.net", sourceDir);
  netc_compile_options *options = netc_compile_options_new();
  CHECK(netc_compile_options_set(options, "input_size", "784") == NETC_OK);
  CHECK(netc_compile_file(path, options, &compilation) == NETC_OK);
  CHECK(netc_compilation_error_count(compilation) == 0);
  CHECK(strcmp(netc_network_name(netc_compilation_network(compilation)), "mnist") == 0);
  CHECK(netc_network_layer_count(netc_compilation_network(compilation)) == 5);
  netc_compilation_free(compilation);
  netc_compile_options_free(options);
}

/* Every key with a value it accepts: the defaults of `netc train`. */
static const char *const kGoodSettings[][2] = {
    {"data", "unset"},
    {"epochs", "100"},
    {"batch", "1"},
    {"optimizer", "adam"},
    {"lr", "0.001"},
    {"lr", ""},
    {"momentum", "0.5"},
    {"nesterov", "on"},
    {"nesterov", "false"},
    {"weight_decay", "0"},
    {"beta1", "0.9"},
    {"beta2", "0.999"},
    {"epsilon", "1e-8"},
    {"decay", "0.95"},
    {"conditioning", "1e-6"},
    {"schedule", "step:10:0.5"},
    {"schedule", "cosine"},
    {"init", "he"},
    {"init_diameter", "0.2"},
    {"seed", "18446744073709551615"},
    {"seed", ""},
    {"threads", "0"},
    {"normalize", "scale:255"},
    {"normalize", "gaussian"},
    {"normalize", ""},
    {"shuffle", "no"},
    {"shuffle", "yes"},
    {"validation", "0.25"},
    {"validation", ""},
    {"out", "runs/x"},
    {"metrics", "m.jsonl"},
    {"metrics", ""},
    {"resume", ""},
    {"init_from", "a.safetensors"},
    {"init_skip", "Conv1, Hid3"},
    {"init_from", ""},
    {"init_skip", ""},
    {"task", "regression"},
    {"task", "auto"},
    {"hidden_nodes", "20"},
    {"backend", "cpu"},
    {"accumulate", "4"},
    {"accumulate", ""},
    {"log_every", "10"},
    {"log_every", ""},
    {"bucket_mb", "0.5"},
    {"bucket_mb", ""},
    {"launch", "single"},
    {"launch", "environment"},
    {"launch", ""},
    {"comm_timeout", "5"},
    {"comm_timeout", ""},
    {"sync", "local-sgd:4"},
    {"sync", "allreduce"},
    {"lr_scaling", "sqrt"},
    {"lr_scaling", ""},
    {"lr_warmup", "300steps"},
    {"lr_warmup", ""},
    {"deterministic", "8"},
    {"deterministic", ""},
    {"cpu_isa", "baseline"},
    {"cpu_isa", ""},
    {"dense_kernel", "openblas"},
    {"dense_kernel", "netc"},
    {"dense_kernel", ""},
    {"device", "cuda:1"},
    {"device", "cpu"},
    {"device", ""},
    {"precision", "tf32"},
    {"precision", ""},
    {"cuda_debug", "true"},
    {"cuda_debug", ""},
    {"cuda_graphs", "false"},
    {"cuda_graphs", ""},
    {"data_on_device", "true"},
    {"data_on_device", ""},
    {"optimizer", ""},
    {"init", ""},
    {"schedule", ""},
};

/* A key, a value it refuses, and the text the message must contain. */
static const char *const kBadSettings[][3] = {
    {"epochs", "0", "epochs"},
    {"epochs", "ten", "'ten'"},
    {"batch", "-1", "batch"},
    {"lr", "-1", "lr"},
    {"lr", "nan", "lr"},
    {"momentum", "x", "momentum"},
    {"nesterov", "maybe", "boolean"},
    {"optimizer", "adamw", "adam"},
    {"schedule", "zigzag", "schedule"},
    {"init", "random", "init"},
    {"init_diameter", "0", "init_diameter"},
    {"seed", "-3", "seed"},
    {"threads", "-1", "threads"},
    {"threads", "1025", "from 0 to 1024"},
    {"normalize", "bogus", "normalize"},
    {"shuffle", "2", "shuffle"},
    {"validation", "1.5", "[0, 1)"},
    {"init_skip", "a,,b", "empty"},
    {"init_skip", "a,", "empty"},
    {"task", "clustering", "task"},
    {"hidden_nodes", "0", "hidden_nodes"},
    {"backend", "gpu9", "cpu"},
    {"device", "gpu", "'gpu' is not cpu, cuda, cuda:N"},
    {"device", "cuda:-1", "'cuda:-1' is not cpu, cuda, cuda:N"},
    {"precision", "fp16", "'fp16' is not fp32, tf32 or bf16"},
    {"dense_kernel", "mkl", "'mkl' is not auto, netc or openblas"},
    {"cuda_debug", "maybe", "boolean"},
    {"cuda_graphs", "sometimes", "boolean"},
    {"data_on_device", "maybe", "boolean"},
    {"epsilon", "0", "epsilon"},
    {"epochs", "1e3", "epochs"},
    {"accumulate", "0", "at least 1"},
    {"log_every", "0", "at least 1"},
    {"bucket_mb", "0", "positive"},
    {"bucket_mb", "2000000", "1048576"},
    {"launch", "cluster", "'cluster' is not single or environment"},
    {"comm_timeout", "0", "positive"},
    {"sync", "local-sgd:0", "local-sgd:H"},
    {"lr_scaling", "cubic", "linear"},
    {"lr_warmup", "0", "positive number"},
    {"deterministic", "2048", "from 0 to 1024"},
    {"optimizer", "adamw", "'adamw' is not one of sgd, adam, adadelta"},
    {"normalize", "zscore", "setting 'normalize': unknown normalizer 'zscore'"},
};

static void testTrainSettings(void) {
  netc_train_settings *settings = netc_train_settings_new();
  CHECK(settings != NULL);
  const char *keys = netc_train_settings_keys();
  CHECK(strstr(keys, "data, epochs, batch") == keys);
  CHECK(strstr(keys, "init_from") != NULL && strstr(keys, "init_skip") != NULL && strstr(keys, "normalize"));
  CHECK(strstr(keys, "cuda_graphs, data_on_device, precision") != NULL);
  for (size_t i = 0; i < sizeof kGoodSettings / sizeof kGoodSettings[0]; ++i) {
    netc_status status = netc_train_settings_set(settings, kGoodSettings[i][0], kGoodSettings[i][1]);
    if (status != NETC_OK) {
      ++failures;
      fprintf(stderr, "setting %s=%s failed: %s\n", kGoodSettings[i][0], kGoodSettings[i][1],
              netc_last_error());
    }
  }
  for (size_t i = 0; i < sizeof kBadSettings / sizeof kBadSettings[0]; ++i) {
    netc_status status = netc_train_settings_set(settings, kBadSettings[i][0], kBadSettings[i][1]);
    const char *message = netc_last_error();
    if (status != NETC_ERROR_BAD_VALUE || !strstr(message, kBadSettings[i][0]) ||
        !strstr(message, kBadSettings[i][2])) {
      ++failures;
      fprintf(stderr, "setting %s=%s gave %s (%s), expected NETC_ERROR_BAD_VALUE mentioning '%s'\n",
              kBadSettings[i][0], kBadSettings[i][1], netc_status_name(status), message, kBadSettings[i][2]);
    }
  }
  /* An unknown key: the message names it and lists the accepted keys. */
  CHECK_FAILS(netc_train_settings_set(settings, "epoch", "3"), NETC_ERROR_UNKNOWN_KEY, "'epoch'");
  CHECK(strstr(netc_last_error(), "hidden_nodes") != NULL);
  CHECK_FAILS(netc_train_settings_set(settings, "epochs", NULL), NETC_ERROR_INVALID_ARGUMENT, "value");
  CHECK_FAILS(netc_train_settings_set(NULL, "epochs", "1"), NETC_ERROR_INVALID_ARGUMENT, "settings");
  netc_train_settings_free(settings);
  netc_train_settings_free(NULL);
}

typedef struct EventCounts {
  int progress, epochs, messages;
  double lastEpochLoss;
} EventCounts;

static void countEvent(const netc_train_event *event, void *user) {
  EventCounts *counts = (EventCounts *)user;
  double value = 0;
  switch (netc_train_event_get_kind(event)) {
  case NETC_TRAIN_EVENT_PROGRESS:
    ++counts->progress;
    if (netc_train_event_value(event, "batches_total", &value) != NETC_OK || value <= 0)
      ++failures;
    break;
  case NETC_TRAIN_EVENT_EPOCH:
    ++counts->epochs;
    if (netc_train_event_value(event, "train_loss", &counts->lastEpochLoss) != NETC_OK)
      ++failures;
    if (netc_train_event_value(event, "epoch", &value) != NETC_OK || value != counts->epochs)
      ++failures;
    if (netc_train_event_value(event, "no_such_value", &value) != NETC_ERROR_UNKNOWN_KEY)
      ++failures;
    if (strcmp(netc_train_event_text(event), "") != 0)
      ++failures;
    break;
  case NETC_TRAIN_EVENT_MESSAGE:
    ++counts->messages;
    if (strlen(netc_train_event_text(event)) == 0)
      ++failures;
    break;
  }
}

#ifdef NETC_TEST_HAVE_LLVM
/* Short random `target` and `cpu` strings (seeded: the same every run), as
   the fuzz and mutation runs do for text: netc_build_library always returns
   a status with a message, never NETC_ERROR_INTERNAL, and never ends the
   process, whatever LLVM makes of them. */
static void testHostileBuildStrings(const char *net, const char *checkpoint, const char *lib) {
  static const char kPlain[] = "abcdefghijklmnopqrstuvwxyz0123456789-_.+";
  static const char *const kArches[] = {"x86_64-", "aarch64-", "riscv64-", "powerpc64le-", "x86_64-linux-"};
  unsigned state = 12345u;
  for (int round = 0; round < 60; ++round) {
    /* Any bytes; printable ones only; a known architecture and then any
       printable text (past the triple check, into LLVM's parsing). */
    const int mode = round % 3;
    char strings[2][32];
    for (int which = 0; which < 2; ++which) {
      int at = 0;
      state = state * 1103515245u + 12345u;
      if (mode == 2 && which == 0) {
        const char *arch = kArches[(state >> 16) % (sizeof kArches / sizeof kArches[0])];
        at = (int)strlen(arch);
        memcpy(strings[which], arch, (size_t)at);
      }
      state = state * 1103515245u + 12345u;
      const int length = at + (int)((state >> 16) % 12) + (at == 0);
      for (; at < length; ++at) {
        state = state * 1103515245u + 12345u;
        const unsigned r = state >> 16;
        strings[which][at] =
            mode == 0 && (r & 1) ? (char)(1 + (r >> 1) % 255) : kPlain[(r >> 1) % (sizeof kPlain - 1)];
      }
      strings[which][at] = '\0';
    }
    /* The target alone, the CPU alone, then both. */
    const char *target = round % 5 == 1 ? NULL : strings[0];
    const char *cpu = round % 5 == 0 ? NULL : strings[1];
    const netc_status status = netc_build_library(net, checkpoint, lib, NULL, target, cpu);
    if (status != NETC_OK && (status == NETC_ERROR_INTERNAL || strlen(netc_last_error()) == 0)) {
      ++failures;
      fprintf(stderr, "%s:%d: round %d: netc_build_library gave %s (%s)\n", __FILE__, __LINE__, round,
              netc_status_name(status), netc_last_error());
    }
  }
}
#endif

static void testTrainAndPredict(const char *sourceDir, const char *workDir) {
  char net[4096], data[4096], out[4096], checkpoint[4200];
  snprintf(net, sizeof net, "%s/examples/mnist.net", sourceDir);
  snprintf(data, sizeof data, "%s/tests/fixtures/mnist-slice", sourceDir);
  snprintf(out, sizeof out, "%s/capi-run", workDir);
  snprintf(checkpoint, sizeof checkpoint, "%s/last.safetensors", out);

  netc_train_settings *settings = netc_train_settings_new();
  netc_train_result *result = NULL;
  CHECK(netc_train_settings_set(settings, "epochs", "1") == NETC_OK);
  CHECK(netc_train_settings_set(settings, "batch", "32") == NETC_OK);
  CHECK(netc_train_settings_set(settings, "seed", "7") == NETC_OK);
  CHECK(netc_train_settings_set(settings, "threads", "1") == NETC_OK);
  CHECK(netc_train_settings_set(settings, "init", "xavier") == NETC_OK);
  CHECK(netc_train_settings_set(settings, "out", out) == NETC_OK);
  /* The folder is reused from one test run to the next. */
  CHECK(netc_train_settings_set(settings, "overwrite", "true") == NETC_OK);

  /* Failures: no data folder, a missing network, NULL arguments. */
  CHECK(netc_train(net, settings, NULL, NULL, &result) != NETC_OK);
  CHECK(result == NULL && strstr(netc_last_error(), "data") != NULL);
  CHECK(netc_train_settings_set(settings, "data", "/nonexistent/data") == NETC_OK);
  CHECK_FAILS(netc_train(net, settings, NULL, NULL, &result), NETC_ERROR_INPUT, "/nonexistent/data");
  CHECK(netc_train_settings_set(settings, "data", data) == NETC_OK);
  CHECK_FAILS(netc_train("/nonexistent/missing.net", settings, NULL, NULL, &result), NETC_ERROR_INPUT,
              "missing.net");
  CHECK_FAILS(netc_train(net, NULL, NULL, NULL, &result), NETC_ERROR_INVALID_ARGUMENT, "settings");
  CHECK_FAILS(netc_train(net, settings, NULL, NULL, NULL), NETC_ERROR_INVALID_ARGUMENT, "out");

  EventCounts counts = {0, 0, 0, 0};
  CHECK(netc_train(net, settings, countEvent, &counts, &result) == NETC_OK);
  CHECK(result != NULL);
  CHECK(counts.epochs == 1 && counts.progress >= 1 && counts.messages >= 1);
  double value = 0;
  CHECK(netc_train_result_value(result, "epochs", &value) == NETC_OK && value == 1);
  CHECK(netc_train_result_value(result, "train_samples", &value) == NETC_OK && value == 500);
  CHECK(netc_train_result_value(result, "test_samples", &value) == NETC_OK && value == 100);
  CHECK(netc_train_result_value(result, "params", &value) == NETC_OK && value == 127495);
  CHECK(netc_train_result_value(result, "train_loss", &value) == NETC_OK && value == counts.lastEpochLoss);
  CHECK(netc_train_result_value(result, "test_accuracy", &value) == NETC_OK && value >= 0 && value <= 1);
  CHECK(netc_train_result_value(result, "steps", &value) == NETC_OK && value == 16);
  CHECK(netc_train_result_value(result, "ranks", &value) == NETC_OK && value == 1);
  CHECK(netc_train_result_value(result, "rank", &value) == NETC_OK && value == 0);
  CHECK(netc_train_result_value(result, "global_batch", &value) == NETC_OK && value == 32);
  CHECK_FAILS(netc_train_result_value(result, "accuracy", &value), NETC_ERROR_UNKNOWN_KEY, "test_accuracy");
  CHECK_FAILS(netc_train_result_value(result, "steps", NULL), NETC_ERROR_INVALID_ARGUMENT, "value");
  CHECK(netc_train_result_seed(result) == 7);
  CHECK(strcmp(netc_train_result_out_dir(result), out) == 0);
  netc_train_result_free(result);
  netc_train_result_free(NULL);
  netc_train_settings_free(settings);

  /* Load the checkpoint and predict a batch of two samples. */
  netc_model *model = NULL;
  CHECK_FAILS(netc_model_load(net, "/nonexistent/last.safetensors", &model), NETC_ERROR_INPUT,
              "/nonexistent/last.safetensors");
  CHECK(model == NULL);
  CHECK_FAILS(netc_model_load(NULL, checkpoint, &model), NETC_ERROR_INVALID_ARGUMENT, "net_path");
  CHECK(netc_model_load(net, checkpoint, &model) == NETC_OK);
  CHECK(netc_model_input_size(model) == 784);
  CHECK(netc_model_output_size(model) == 10);
  CHECK(netc_model_input_size(NULL) == 0 && netc_model_output_size(NULL) == 0);
  float *features = calloc(2 * 784, sizeof(float));
  float outputs[20];
  for (int i = 0; i < 784; ++i)
    features[784 + i] = (float)(i % 255);
  CHECK(netc_model_predict(model, features, 2 * 784, outputs, 20) == NETC_OK);
  for (int sample = 0; sample < 2; ++sample) {
    double sum = 0;
    for (int k = 0; k < 10; ++k)
      sum += outputs[sample * 10 + k];
    CHECK(fabs(sum - 1) < 1e-4); /* softmax probabilities */
  }
  CHECK_FAILS(netc_model_predict(model, features, 783, outputs, 20), NETC_ERROR_INVALID_ARGUMENT,
              "multiple of the input size 784");
  CHECK_FAILS(netc_model_predict(model, features, 0, outputs, 20), NETC_ERROR_INVALID_ARGUMENT, "784");
  CHECK_FAILS(netc_model_predict(model, features, 2 * 784, outputs, 19), NETC_ERROR_INVALID_ARGUMENT,
              "holds 19 values");
  CHECK_FAILS(netc_model_predict(model, NULL, 784, outputs, 20), NETC_ERROR_INVALID_ARGUMENT, "features");
  CHECK_FAILS(netc_model_predict(NULL, features, 784, outputs, 20), NETC_ERROR_INVALID_ARGUMENT, "model");
  /* Counts no array can hold are refused before a value is read or written. */
  CHECK_FAILS(netc_model_predict(model, features, (size_t)-1 / 784 * 784, outputs, 20),
              NETC_ERROR_INVALID_ARGUMENT, "features is more than an array of floats can hold");
  CHECK_FAILS(netc_model_predict(model, features, 784, outputs, (size_t)-1), NETC_ERROR_INVALID_ARGUMENT,
              "output values is more than an array of floats can hold");
  free(features);
  netc_model_free(model);
  netc_model_free(NULL);

  /* The same checkpoint as a native library (netc build). */
  char lib[4096];
  snprintf(lib, sizeof lib, "%s/capi-library", workDir);
  CHECK_FAILS(netc_build_library(net, checkpoint, NULL, NULL, NULL, NULL), NETC_ERROR_INVALID_ARGUMENT,
              "out_dir");
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, "9lives", NULL, NULL), NETC_ERROR_USAGE,
              "C identifier");
#ifdef NETC_TEST_HAVE_LLVM
  /* Targets and CPUs on which LLVM would abort the calling process ("Cannot
     select", "64-bit code requested"): a status instead, and this process
     goes on. */
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, NULL, "amdgcn-amd-amdhsa", NULL), NETC_ERROR_USAGE,
              "not amdgcn");
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, NULL, "nvptx64-nvidia-cuda", NULL), NETC_ERROR_USAGE,
              "not nvptx64");
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, NULL, NULL, "i386"), NETC_ERROR_USAGE, "32-bit");
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, NULL, NULL, "gfx90a"), NETC_ERROR_USAGE,
              "not a CPU of x86_64");
  /* A folder netc did not make is not written into. */
  CHECK_FAILS(netc_build_library(net, checkpoint, workDir, NULL, NULL, NULL), NETC_ERROR_USAGE,
              "netc build did not make it");
  testHostileBuildStrings(net, checkpoint, lib);
  CHECK(netc_build_library(net, checkpoint, lib, "capi_digits", NULL, "") == NETC_OK);
  char header[4200];
  snprintf(header, sizeof header, "%s/capi_digits.h", lib);
  FILE *h = fopen(header, "r");
  CHECK(h != NULL);
  if (h)
    fclose(h);
#else
  CHECK_FAILS(netc_build_library(net, checkpoint, lib, NULL, NULL, NULL), NETC_ERROR_INPUT,
              "libnetc-llvm.so");
#endif
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: capi_test SOURCE_DIR [WORK_DIR]\n");
    return 2;
  }
  testVersionAndStatus();
  testCompileOptions();
  testGoodNetwork();
  testDiagnostics();
  testFiles(argv[1]);
  testTrainSettings();
  if (argc == 3)
    testTrainAndPredict(argv[1], argv[2]);
  if (failures) {
    fprintf(stderr, "capi_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: every check passed (netc %s)\n", netc_version());
  return 0;
}
