// Driver.cpp -- runs the pipeline stages for one source file.
#include "api/Driver.h"

#include "frontend/Sema.h"
#include "passes/Pipeline.h"

namespace netc {

std::string networkNameFor(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot != std::string_view::npos && dot > 0)
    base = base.substr(0, dot);
  return base.empty() ? std::string("network") : std::string(base);
}

std::unique_ptr<Compilation> compileSource(SourceFile source, const CompileOptions &options, Stage stage,
                                           std::string_view stopAfterPass) {
  auto c = std::make_unique<Compilation>(std::move(source));
  c->diags.setErrorLimit(options.maxErrors);
  c->parse = parseProgram(c->file, c->diags);
  const bool syntaxErrors = c->diags.hasErrors();
  c->network.fromIncompleteSource = syntaxErrors;
  // Past the error limit (NS0107) nothing more is reported: later stages are skipped.
  if (stage == Stage::Parse || c->diags.errorLimitReached())
    return c;
  c->network = analyzeProgram(c->parse.program, networkNameFor(c->file.name()), options, c->diags);
  c->network.fromIncompleteSource = syntaxErrors;
  if (stage == Stage::Sema || c->diags.errorLimitReached())
    return c;
  runPasses(c->network, options, c->diags, stopAfterPass);
  return c;
}

} // namespace netc
