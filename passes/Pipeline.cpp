// Pipeline.cpp -- the table of contents of the middle end: the passes of
// Passes.def, run in order over the network IR.
#include "passes/Pipeline.h"

namespace netc {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
// NOLINTNEXTLINE(bugprone-macro-parentheses): the arguments are names, not expressions
#define PASS(Function, Name, Description) {&Function, Name, Description},
#include "passes/Passes.def"
#undef PASS
  };
  return passes;
}

void runPasses(ir::Network &network, const CompileOptions &options, DiagnosticEngine &diags,
               std::string_view stopAfter) {
  for (const PassInfo &pass : allPasses()) {
    pass.run(network, options, diags);
    if (pass.name == stopAfter)
      break;
  }
}

} // namespace netc
