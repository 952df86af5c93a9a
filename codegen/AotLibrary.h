// AotLibrary.h -- what `netc build` compiles (docs/codegen.md): an inference
// Plan with its trained parameters and the checkpoint's normaliser, named for
// C, and the C interface of the library made from it. The interface (entry
// points, constants, the scratch size) is defined here once, as text the
// header and the README are written from, so the LLVM emitter
// (codegen/llvm/) and the header can never disagree. Also the contract with
// the LLVM plugin (libnetc-llvm.so, loaded only by `netc build` and
// `netc compile --emit=llvm`): its ABI version and its entry points.
#pragma once

#include "codegen/Plan.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace netc::aot {

/// How raw inputs become the network's: none, x' = (x - offset[f]) * scale[f]
/// (min-max, Gaussian), or x' = x / divisor -- the checkpoint's normaliser.
struct InputNormalizer {
  enum class Kind { None, Affine, Divide };
  Kind kind = Kind::None;
  std::vector<float> offset, scale; ///< Affine: one per feature
  float divisor = 1;                ///< Divide
  std::string description;          ///< "minmax", "scale:255", ... for comments
};

/// An input layer: its values are inputs [offset, offset + size) of a sample.
struct InputLayer {
  std::string name;
  int64_t offset = 0, size = 0;
  std::vector<int64_t> shape;
};

/// Where the code runs.
struct Target {
  std::string triple; ///< "" : this machine's (LLVM's default target triple)
  std::string cpu;    ///< "" : this machine's CPU; "generic": portable code
};

/// Everything the emitter needs: the plan (inference only), the parameter
/// arena's values (empty: zeros, for `--emit=llvm` without weights), the
/// normaliser and the names.
struct Request {
  const plan::Plan *plan = nullptr;
  std::span<const float> parameters;
  InputNormalizer normalizer;
  std::string prefix;  ///< the C identifier prefix of every symbol, e.g. "mnist"
  std::string network; ///< the network's name, for comments
  std::vector<InputLayer> inputs;
  std::string outputName;
  std::vector<int64_t> outputShape;
  Target target;
};

/// The samples the library computes at once: each node's value is a vector
/// of this many lanes (one sample each); a remainder of the batch runs
/// sample by sample.
inline constexpr int64_t kLanes = 16;

/// The bytes of scratch one call needs (the activation arena and the
/// normalised inputs of kLanes samples), a multiple of 64.
int64_t scratchBytes(const plan::Plan &plan);

/// `name` as a C identifier prefix: lower case, [a-z0-9_], not starting
/// with a digit ("LeNet-5" -> "lenet_5"); empty when nothing is left.
std::string cIdentifier(std::string_view name);
/// Whether `prefix` is a usable C identifier prefix ([A-Za-z_][A-Za-z0-9_]*).
bool isCIdentifier(std::string_view prefix);

/// The C header of the library (PREFIX.h).
std::string headerText(const Request &request);
/// The README of the library for its user (README.md): the files, the
/// entry points, how to compile against it, the inputs' layout.
std::string readmeText(const Request &request, const std::string &libraryFile, const std::string &archiveFile,
                       const std::string &objectFile, const std::string &triple);

// ---- the LLVM plugin ----

/// Bumped whenever Request, Target, Output or the entry points below change.
inline constexpr int kLlvmPluginAbi = 2;
inline constexpr const char *kLlvmPluginName = "libnetc-llvm.so";

/// What the plugin made: an object file's bytes, or the IR as text.
struct Output {
  std::string bytes;       ///< the object (compileObject), or the IR text (emitIr)
  std::string triple, cpu; ///< what it was compiled for (compileObject)
  std::string error;       ///< set on failure
  bool usage = false;      ///< the failure is a bad flag (--target, --cpu), not bad input
};

extern "C" {
using LlvmPluginAbiFunction = int (*)();
/// The module's IR before optimisation, deterministic (`--emit=llvm`).
using LlvmEmitIrFunction = bool (*)(const Request *request, Output *output);
/// The module optimised for the target and compiled to a relocatable,
/// position-independent object.
using LlvmCompileObjectFunction = bool (*)(const Request *request, Output *output);
/// A static archive (ar) holding one member.
using LlvmArchiveFunction = bool (*)(const std::string *memberName, const std::string *object,
                                     Output *output);
}
inline constexpr const char *kLlvmAbiSymbol = "netc_llvm_plugin_abi";
inline constexpr const char *kLlvmEmitIrSymbol = "netc_llvm_emit_ir";
inline constexpr const char *kLlvmCompileObjectSymbol = "netc_llvm_compile_object";
inline constexpr const char *kLlvmArchiveSymbol = "netc_llvm_archive";

} // namespace netc::aot
