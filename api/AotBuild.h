// AotBuild.h -- the LLVM plugin seen from netc (docs/codegen.md): loading
// libnetc-llvm.so on demand (its absence, or libLLVM's, is a located
// message, never a failure to start), `netc build` (buildLibrary in
// include/netc/Training.h: AotBuild.cpp) and `netc compile --emit=llvm`.
#pragma once

#include "codegen/AotLibrary.h"
#include "ir/Network.h"
#include "support/Status.h"

#include <string>

namespace netc {

/// The generated IR of `plan` (an inference plan of `network`) without
/// weights (zeros) or normaliser, deterministic: `netc compile --emit=llvm`.
Expected<std::string> emitLlvmIr(const ir::Network &network, const plan::Plan &plan);

/// The request for `plan` of `network` (names, input layers), without
/// parameters, normaliser or target.
aot::Request aotRequest(const ir::Network &network, const plan::Plan &plan);

} // namespace netc
