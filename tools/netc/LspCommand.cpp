// LspCommand.cpp -- `netc lsp [--debounce-ms N] [--cost-model FILE|NAME|none]
// [--max-source-size SIZE]`: the Net# language server over stdio
// (lsp/Server.h); a document over the size limit gets one diagnostic saying
// so instead of being analysed. Editors start it; it
// exits after the client's `exit` notification or at the end of its input,
// with status 0 after `shutdown`, else 1 (and 1 when the input ends inside an
// oversized message being skipped: docs/cli.md). Layer hovers give a training
// time from the cost table (default: the built-in CPU one).
#include "CommandSupport.h"

#include "codegen/CostTable.h"
#include "lsp/Server.h"

#include <unistd.h>

namespace netc::cli {

void addLspCommand(CLI::App &app, int &exitCode) {
  auto debounce = std::make_shared<int>(5);
  auto costModel = std::make_shared<std::string>("auto");
  auto maxSourceBytes = std::make_shared<uint64_t>(CompileOptions{}.maxSourceBytes);
  CLI::App *cmd =
      app.add_subcommand("lsp", "Run the Net# language server (LSP over stdin/stdout) for editors");
  cmd->add_option("--debounce-ms", *debounce,
                  "Publish diagnostics once no message has arrived for this many milliseconds")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->add_option("--cost-model", *costModel,
                  "Cost table of the training times in layer hovers: a file written by netc calibrate, a "
                  "built-in one (cpu, h100), machine (this machine's, where netc has measured it), auto "
                  "(the built-in cpu table where it describes this machine, else machine where measured) or "
                  "none")
      ->type_name("FILE|NAME|none")
      ->capture_default_str();
  addMaxSourceSizeOption(*cmd, *maxSourceBytes);
  cmd->callback([debounce, costModel, maxSourceBytes, &exitCode] {
    lsp::ServerOptions options;
    options.maxDocumentBytes = *maxSourceBytes;
    if (*costModel != "none") {
      auto table = commandCostTable(*costModel);
      if (!table) {
        std::fprintf(stderr, "netc: error: --cost-model: %s\n", table.message().c_str());
        exitCode = kUsageError;
        return;
      }
      if (!table->note.empty()) // the server's stderr is the editor's log
        std::fprintf(stderr, "netc: note: %s\n", table->note.c_str());
      options.costTable = std::make_shared<const cost::CostTable>(std::move(table->table));
      options.costTableName = table->label;
    }
    exitCode = lsp::runServer(STDIN_FILENO, STDOUT_FILENO, *debounce, std::move(options));
  });
}

} // namespace netc::cli
