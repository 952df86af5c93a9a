// Pipeline.h -- the IR pass pipeline: every pass of Passes.def, in order.
#pragma once

#include "ir/CompileOptions.h"
#include "ir/Network.h"
#include "support/DiagnosticEngine.h"

#include <string_view>
#include <vector>

namespace netc {

/// Every pass has this signature: it reads and annotates the network and
/// reports problems; it never stops the pipeline (later passes skip pieces
/// that earlier ones marked invalid).
using PassFunction = void (*)(ir::Network &, const CompileOptions &, DiagnosticEngine &);

#define PASS(Function, Name, Description)                                                                    \
  void Function(ir::Network &network, const CompileOptions &options, DiagnosticEngine &diags);
#include "passes/Passes.def"
#undef PASS

struct PassInfo {
  PassFunction run;
  std::string_view name;
  std::string_view description;
};
const std::vector<PassInfo> &allPasses();

/// Runs the passes in order; with `stopAfter`, stops after the pass of that name.
void runPasses(ir::Network &network, const CompileOptions &options, DiagnosticEngine &diags,
               std::string_view stopAfter = {});

} // namespace netc
