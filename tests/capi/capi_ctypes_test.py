#!/usr/bin/env python3
"""capi_ctypes_test.py -- calls libnetc.so's C API (include/netc/netc_c.h)
from Python through ctypes, as a binding in another language would: checks a
bad network (diagnostic code and range), reads a good one's layers, refuses
an unknown training key, trains examples/mnist.net for one epoch on the
committed digits with an event callback, loads the checkpoint and predicts a
batch. Another BLAS is loaded into the process first, with its symbols global
(as numpy's is in a Python program): the run header must still name netc's
own dense kernels where the CPU has AVX2 or AVX-512. Exits 1 on the first
failed check.

Usage: capi_ctypes_test.py LIBNETC_SO SOURCE_DIR WORK_DIR
"""
import ctypes
import ctypes.util
import math
import sys

lib_path, source_dir, work_dir = sys.argv[1:4]
# The system's BLAS (libblas.so.3: Debian's alternatives pick an OpenBLAS or the reference BLAS),
# loaded before libnetc with its symbols global, so that its cblas_sgemm comes first.
other_blas = ctypes.util.find_library("blas")
if other_blas:
    ctypes.CDLL(other_blas, mode=ctypes.RTLD_GLOBAL)
    print("loaded first:", other_blas)
else:
    print("no system BLAS to load first (libblas.so.3 is not installed)")
netc = ctypes.CDLL(lib_path)

c_char_p, c_size_t, c_int, c_void_p = ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p
P = ctypes.POINTER


def declare(name, restype, *argtypes):
    function = getattr(netc, name)
    function.restype = restype
    function.argtypes = list(argtypes)


declare("netc_version", c_char_p)
declare("netc_last_error", c_char_p)
declare("netc_status_name", c_char_p, c_int)
declare("netc_compile", c_int, c_char_p, c_size_t, c_char_p, c_void_p, P(c_void_p))
declare("netc_compile_file", c_int, c_char_p, c_void_p, P(c_void_p))
declare("netc_compile_options_new", c_void_p)
declare("netc_compile_options_set", c_int, c_void_p, c_char_p, c_char_p)
declare("netc_compile_options_free", None, c_void_p)
declare("netc_compilation_free", None, c_void_p)
declare("netc_compilation_error_count", c_size_t, c_void_p)
declare("netc_compilation_diagnostic_count", c_size_t, c_void_p)
declare("netc_compilation_diagnostic", c_void_p, c_void_p, c_size_t)
declare("netc_compilation_formatted", c_char_p, c_void_p)
declare("netc_compilation_network", c_void_p, c_void_p)
declare("netc_diagnostic_code", c_char_p, c_void_p)
declare("netc_diagnostic_severity", c_int, c_void_p)
declare("netc_diagnostic_range", c_int, c_void_p, *[P(ctypes.c_uint32)] * 4)
declare("netc_network_name", c_char_p, c_void_p)
declare("netc_network_layer_count", c_size_t, c_void_p)
declare("netc_network_params", ctypes.c_int64, c_void_p)
declare("netc_network_layer", c_void_p, c_void_p, c_size_t)
declare("netc_layer_name", c_char_p, c_void_p)
declare("netc_layer_kind", c_char_p, c_void_p)
declare("netc_layer_function", c_char_p, c_void_p)
declare("netc_layer_shape", c_size_t, c_void_p, P(ctypes.c_int64), c_size_t)
declare("netc_layer_nodes", ctypes.c_int64, c_void_p)
declare("netc_layer_params", ctypes.c_int64, c_void_p)
declare("netc_train_settings_new", c_void_p)
declare("netc_train_settings_set", c_int, c_void_p, c_char_p, c_char_p)
declare("netc_train_settings_free", None, c_void_p)
CALLBACK = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)
declare("netc_train", c_int, c_char_p, c_void_p, CALLBACK, c_void_p, P(c_void_p))
declare("netc_train_event_get_kind", c_int, c_void_p)
declare("netc_train_event_value", c_int, c_void_p, c_char_p, P(ctypes.c_double))
declare("netc_train_event_text", c_char_p, c_void_p)
declare("netc_train_result_value", c_int, c_void_p, c_char_p, P(ctypes.c_double))
declare("netc_train_result_free", None, c_void_p)
declare("netc_model_load", c_int, c_char_p, c_char_p, P(c_void_p))
declare("netc_model_input_size", ctypes.c_int64, c_void_p)
declare("netc_model_output_size", ctypes.c_int64, c_void_p)
declare("netc_model_predict", c_int, c_void_p, P(ctypes.c_float), c_size_t, P(ctypes.c_float), c_size_t)
declare("netc_model_free", None, c_void_p)

NETC_OK, NETC_ERROR_INVALID_ARGUMENT, NETC_ERROR_UNKNOWN_KEY, NETC_ERROR_BAD_VALUE = 0, 1, 2, 3
NETC_TRAIN_EVENT_EPOCH = 1
NETC_TRAIN_EVENT_MESSAGE = 2


def check(condition, what):
    if not condition:
        print(f"capi_ctypes_test: FAILED: {what} (last error: {netc.netc_last_error().decode()})")
        sys.exit(1)


def compile_text(text, name, options=None):
    compilation = c_void_p()
    data = text.encode()
    check(netc.netc_compile(data, len(data), name.encode(), options, ctypes.byref(compilation)) == NETC_OK,
          "netc_compile")
    return compilation


print("netc", netc.netc_version().decode())
check(netc.netc_status_name(NETC_ERROR_BAD_VALUE) == b"NETC_ERROR_BAD_VALUE", "status name")

# check: a bad network's diagnostic, located.
bad = compile_text("input Data [5];\nhidden H [5] from Dta all;\noutput O [2] from H all;\n", "bad.net")
check(netc.netc_compilation_network(bad) is None, "no network for a bad file")
check(netc.netc_compilation_error_count(bad) == 1, "one error")
diagnostic = netc.netc_compilation_diagnostic(bad, 0)
check(netc.netc_diagnostic_code(diagnostic) == b"NS0302", "code NS0302")
check(netc.netc_diagnostic_severity(diagnostic) == 2, "severity error")
lines = [ctypes.c_uint32() for _ in range(4)]
check(netc.netc_diagnostic_range(diagnostic, *[ctypes.byref(v) for v in lines]) == NETC_OK, "range")
check([v.value for v in lines] == [2, 19, 2, 22], f"range 2:19-2:22, got {[v.value for v in lines]}")
check(b"did you mean 'Data'?" in netc.netc_compilation_formatted(bad), "formatted text with the fix")
netc.netc_compilation_free(bad)

# info: the seed network's layers.
options = netc.netc_compile_options_new()
check(netc.netc_compile_options_set(options, b"input_size", b"784") == NETC_OK, "input_size")
check(netc.netc_compile_options_set(options, b"input_sizes", b"784") == NETC_ERROR_UNKNOWN_KEY, "unknown key")
compilation = c_void_p()
net_path = f"{source_dir}/examples/mnist.net".encode()
check(netc.netc_compile_file(net_path, options, ctypes.byref(compilation)) == NETC_OK, "compile file")
netc.netc_compile_options_free(options)
network = netc.netc_compilation_network(compilation)
check(network is not None, "mnist.net compiles")
check(netc.netc_network_name(network) == b"mnist", "network name")
layers = []
for i in range(netc.netc_network_layer_count(network)):
    layer = netc.netc_network_layer(network, i)
    dims = (ctypes.c_int64 * 8)()
    rank = netc.netc_layer_shape(layer, dims, 8)
    function = netc.netc_layer_function(layer)
    layers.append((netc.netc_layer_name(layer).decode(), netc.netc_layer_kind(layer).decode(), list(dims[:rank]),
                   netc.netc_layer_nodes(layer), function.decode() if function else None, netc.netc_layer_params(layer)))
for layer in layers:
    print("  %-6s %-6s %-12s %5d %-8s %7d" % (layer[0], layer[1], layer[2], layer[3], layer[4], layer[5]))
check([l[0] for l in layers] == ["Pic", "Conv1", "Conv2", "Hid3", "Digit"], "layer names")
check(layers[1][2] == [5, 13, 13] and layers[1][3] == 845, "Conv1 shape")
check(layers[0][4] is None and layers[4][4] == "softmax", "functions")
check(netc.netc_network_params(network) == 127495, "parameters")
netc.netc_compilation_free(compilation)

# train: one epoch on the committed digits; the callback sees the epoch.
settings = netc.netc_train_settings_new()
out_dir = f"{work_dir}/ctypes-run"
for key, value in [("data", f"{source_dir}/tests/fixtures/mnist-slice"), ("epochs", "1"), ("batch", "32"),
                   ("lr", "0.1"), ("momentum", "0.9"), ("init", "xavier"), ("seed", "1"), ("threads", "1"),
                   ("out", out_dir), ("overwrite", "true")]:  # reused from one test run to the next
    check(netc.netc_train_settings_set(settings, key.encode(), value.encode()) == NETC_OK, f"set {key}")
check(netc.netc_train_settings_set(settings, b"learning_rate", b"0.1") == NETC_ERROR_UNKNOWN_KEY, "unknown key")
check(b"'learning_rate'" in netc.netc_last_error() and b"lr" in netc.netc_last_error(), "message lists the keys")
check(netc.netc_train_settings_set(settings, b"epochs", b"many") == NETC_ERROR_BAD_VALUE, "bad value")

epoch_losses = []
messages = []


def on_event(event, user):
    if netc.netc_train_event_get_kind(event) == NETC_TRAIN_EVENT_EPOCH:
        loss = ctypes.c_double()
        netc.netc_train_event_value(event, b"train_loss", ctypes.byref(loss))
        epoch_losses.append(loss.value)
    elif netc.netc_train_event_get_kind(event) == NETC_TRAIN_EVENT_MESSAGE:
        messages.append(netc.netc_train_event_text(event).decode())


callback = CALLBACK(on_event)
result = c_void_p()
check(netc.netc_train(net_path, settings, callback, None, ctypes.byref(result)) == NETC_OK, "train")
netc.netc_train_settings_free(settings)
metrics = {}
for key in ["epochs", "train_loss", "train_accuracy", "test_loss", "test_accuracy"]:
    value = ctypes.c_double()
    check(netc.netc_train_result_value(result, key.encode(), ctypes.byref(value)) == NETC_OK, f"metric {key}")
    metrics[key] = value.value
netc.netc_train_result_free(result)
print("trained:", ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
check(metrics["epochs"] == 1 and epoch_losses == [metrics["train_loss"]], "one epoch event with the final loss")
check(math.isfinite(metrics["test_loss"]), "finite test loss")
with open("/proc/cpuinfo") as cpuinfo:
    vector_cpu = any(line.startswith("flags") and " avx2" in line for line in cpuinfo)
header = [m for m in messages if m.startswith("training ")]
check(len(header) == 1, f"one training line in the run header: {messages}")
if vector_cpu:
    check("dense: netc avx" in header[0], f"netc's own dense kernels with another BLAS loaded: {header[0]}")
    check(not any(m.startswith("warning:") for m in messages), f"no kernel warning: {messages}")
    print("dense kernels with another BLAS loaded:", header[0][header[0].index("dense: "):])
else:
    print("the CPU has no AVX2: the dense kernels' name is not checked")

# predict: the checkpoint, a batch of two samples.
model = c_void_p()
check(netc.netc_model_load(net_path, f"{out_dir}/last.safetensors".encode(), ctypes.byref(model)) == NETC_OK,
      "load")
n_in, n_out = netc.netc_model_input_size(model), netc.netc_model_output_size(model)
check((n_in, n_out) == (784, 10), f"sizes 784 -> 10, got {n_in} -> {n_out}")
features = (ctypes.c_float * (2 * n_in))(*[float(i % 256) for i in range(2 * n_in)])
outputs = (ctypes.c_float * (2 * n_out))()
check(netc.netc_model_predict(model, features, 2 * n_in, outputs, 2 * n_out) == NETC_OK, "predict")
for sample in range(2):
    check(abs(sum(outputs[sample * n_out:(sample + 1) * n_out]) - 1) < 1e-4, "probabilities sum to 1")
check(netc.netc_model_predict(model, features, n_in + 1, outputs, 2 * n_out) == NETC_ERROR_INVALID_ARGUMENT,
      "wrong feature count refused")
netc.netc_model_free(model)
print("capi_ctypes_test: every check passed")
