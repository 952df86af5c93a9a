// AotLibrary.cpp -- the C interface of a `netc build` library: its scratch
// size, its names, its header and its README (AotLibrary.h).
#include "codegen/AotLibrary.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

namespace netc::aot {

int64_t scratchBytes(const plan::Plan &plan) {
  const int64_t floats = (plan.memory.arenaPerSample + plan::alignElements(plan.featureCount)) * kLanes;
  return (floats * 4 + 63) / 64 * 64;
}

std::string cIdentifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) && u < 0x80)
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0])))
    out = "net_" + out;
  return out;
}

bool isCIdentifier(std::string_view prefix) {
  if (prefix.empty() || std::isdigit(static_cast<unsigned char>(prefix[0])))
    return false;
  for (char c : prefix) {
    const auto u = static_cast<unsigned char>(c);
    if (!(u < 0x80 && (std::isalnum(u) || c == '_')))
      return false;
  }
  return true;
}

namespace {

std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// The constant-name part of each input layer, unique ("PIC", "LEFT", ...).
std::vector<std::string> inputConstantNames(const Request &r) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    std::string n = upper(cIdentifier(r.inputs[i].name));
    if (n.empty() || used.count(n))
      n = fmt::format("{}{}", n.empty() ? "LAYER_" : n + "_", i);
    used.insert(n);
    names.push_back(n);
  }
  return names;
}

std::string commentSafe(std::string text) {
  for (size_t at = text.find("*/"); at != std::string::npos; at = text.find("*/", at))
    text.replace(at, 2, "* /");
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

/// NAME_RANK, NAME_DIM_i and NAME_SHAPE (a brace initialiser) of a layer's shape.
std::string shapeConstants(const std::string &name, const std::vector<int64_t> &shape) {
  std::string out = fmt::format("#define {}_RANK {}\n", name, shape.size());
  std::string list;
  for (size_t d = 0; d < shape.size(); ++d) {
    out += fmt::format("#define {}_DIM_{} {}\n", name, d, shape[d]);
    list += fmt::format("{}{}", d ? ", " : "", shape[d]);
  }
  return out + fmt::format("#define {}_SHAPE {{{}}}\n", name, list);
}

std::string normalizerSentence(const InputNormalizer &n) {
  switch (n.kind) {
  case InputNormalizer::Kind::None: return "none: the network reads the inputs as they are";
  case InputNormalizer::Kind::Affine:
    return fmt::format("{}: x' = (x - offset[f]) * scale[f] per feature, the values the checkpoint recorded",
                       n.description);
  case InputNormalizer::Kind::Divide: return fmt::format("{}: x' = x / {}", n.description, n.divisor);
  }
  return {};
}

} // namespace

std::string headerText(const Request &request) {
  // Names go into C comments: one holding "*/" (a file named so) must not end them.
  Request r = request;
  for (std::string *text : {&r.network, &r.outputName})
    *text = commentSafe(*text);
  for (InputLayer &input : r.inputs)
    input.name = commentSafe(input.name);
  const plan::Plan &p = *r.plan;
  const std::string P = upper(r.prefix), guard = P + "_H";
  std::string h;
  h += fmt::format("/* {}.h -- network '{}' compiled by netc build: inference only, no dependency but\n"
                   " * libc and libm. Generated; do not edit. */\n",
                   r.prefix, r.network);
  h += fmt::format("#ifndef {0}\n#define {0}\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n", guard);
  h += fmt::format("/* Floats per sample in `inputs`: the input layers' values, concatenated in their\n"
                   " * order of declaration (offsets and sizes below), sample after sample. */\n"
                   "#define {}_INPUT_SIZE {}\n",
                   P, p.featureCount);
  h += fmt::format("/* Floats per sample in `outputs`: the values of output layer '{}'{}. */\n"
                   "#define {}_OUTPUT_SIZE {}\n",
                   r.outputName, p.outputFunction == ir::Activation::Softmax ? " (class probabilities)" : "",
                   P, p.outputNodes);
  h += fmt::format("/* The input layers, in order. */\n#define {}_INPUT_COUNT {}\n", P, r.inputs.size());
  const std::vector<std::string> names = inputConstantNames(r);
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const std::string layer = fmt::format("{}_INPUT_{}", P, names[i]);
    h += fmt::format("/* input layer '{}' */\n#define {}_OFFSET {}\n#define {}_SIZE {}\n", r.inputs[i].name,
                     layer, r.inputs[i].offset, layer, r.inputs[i].size);
    h += shapeConstants(layer, r.inputs[i].shape);
  }
  h += fmt::format("/* the shape of output layer '{}' */\n", r.outputName);
  h += shapeConstants(P + "_OUTPUT", r.outputShape);
  h += fmt::format("/* Bytes of scratch one call uses: on the stack for {0}_infer and\n"
                   " * {0}_infer_normalized, or given (64-byte aligned) to the _with_scratch forms. */\n"
                   "#define {1}_SCRATCH_BYTES {2}\n\n",
                   r.prefix, P, scratchBytes(p));
  h += fmt::format(
      "/* Runs the network on `batch` samples: inputs[batch * {1}_INPUT_SIZE] as the data\n"
      " * files hold them, normalised inside as the checkpoint recorded, and\n"
      " * outputs[batch * {1}_OUTPUT_SIZE]. Thread-safe; allocates nothing. Returns 0, or -1\n"
      " * when batch is negative or a pointer is null (batch 0 does nothing).\n"
      " * The normaliser: {2}. */\n"
      "int {0}_infer(const float *inputs, float *outputs, int batch);\n"
      "/* The same on inputs already normalised (the network's own input values). */\n"
      "int {0}_infer_normalized(const float *inputs, float *outputs, int batch);\n"
      "/* The same two with the caller's scratch: {1}_SCRATCH_BYTES bytes, 64-byte aligned,\n"
      " * one buffer per thread at a time. */\n"
      "int {0}_infer_with_scratch(const float *inputs, float *outputs, int batch, void *scratch);\n"
      "int {0}_infer_normalized_with_scratch(const float *inputs, float *outputs, int batch, void "
      "*scratch);\n\n",
      r.prefix, P, normalizerSentence(r.normalizer));
  h += fmt::format("#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {} */\n", guard);
  return h;
}

std::string readmeText(const Request &r, const std::string &libraryFile, const std::string &archiveFile,
                       const std::string &objectFile, const std::string &triple) {
  const plan::Plan &p = *r.plan;
  const std::string P = upper(r.prefix);
  std::string t;
  t += fmt::format("# {}: network '{}' as a native library\n\n", r.prefix, r.network);
  t += fmt::format("Made by `netc build` for `{}`. Inference only; the weights are inside. The code needs "
                   "libc and libm, nothing of netc.\n\n",
                   triple);
  t += fmt::format("| file | what |\n|---|---|\n"
                   "| `{0}.h` | the C header: entry points and constants |\n"
                   "| `{1}` | the shared library |\n"
                   "| `{2}` | the static library |\n"
                   "| `{3}` | the object both are made of |\n\n",
                   r.prefix, libraryFile, archiveFile, objectFile);
  t += "## Calling it\n\n```c\n";
  t += fmt::format("#include \"{}.h\"\n\nfloat in[{}_INPUT_SIZE], out[{}_OUTPUT_SIZE];\n"
                   "/* ... fill in[] with one sample's raw inputs ... */\n"
                   "if ({}_infer(in, out, 1) != 0) {{ /* a null pointer or a negative batch */ }}\n```\n\n",
                   r.prefix, P, P, r.prefix);
  t += fmt::format("- `inputs` holds `batch` samples of {} floats each, sample after sample", p.featureCount);
  if (r.inputs.size() > 1) {
    t += ": the input layers' values concatenated in their order of declaration (";
    for (size_t i = 0; i < r.inputs.size(); ++i)
      t += fmt::format("{}`{}` at {}, {} values", i ? "; " : "", r.inputs[i].name, r.inputs[i].offset,
                       r.inputs[i].size);
    t += ")";
  }
  t += fmt::format(".\n- `outputs` receives {} floats per sample: output layer `{}`{}.\n", p.outputNodes,
                   r.outputName,
                   p.outputFunction == ir::Activation::Softmax ? ", the class probabilities" : "");
  t += fmt::format(
      "- `{}_infer` normalises the inputs first ({}); `{}_infer_normalized` takes the network's own "
      "input values.\n",
      r.prefix, normalizerSentence(r.normalizer), r.prefix);
  t += fmt::format(
      "- Both are thread-safe and allocate nothing: each call uses {}_SCRATCH_BYTES ({} bytes) of "
      "stack. Where the stack is small, the `_with_scratch` forms take that many bytes, 64-byte "
      "aligned, from the caller.\n\n",
      P, scratchBytes(p));
  t += "## Building against it\n\n```sh\n";
  t += fmt::format("cc -O2 app.c -I. -L. -l{0} -lm -Wl,-rpath,'$ORIGIN'   # shared\n"
                   "cc -O2 app.c -I. {1} -lm                          # static\n```\n",
                   r.prefix, archiveFile);
  return t;
}

} // namespace netc::aot
