// LspCommand.cpp -- `netc lsp [--debounce-ms N]`: the Net# language server
// over stdio (lsp/Server.h). Editors start it; it exits after the client's
// `exit` notification or at the end of its input, with status 0 after
// `shutdown`, else 1 (and 1 when the input ends inside an oversized message
// being skipped: docs/cli.md).
#include "CommandSupport.h"

#include "lsp/Server.h"

#include <unistd.h>

namespace netc::cli {

void addLspCommand(CLI::App &app, int &exitCode) {
  auto debounce = std::make_shared<int>(5);
  CLI::App *cmd =
      app.add_subcommand("lsp", "Run the Net# language server (LSP over stdin/stdout) for editors");
  cmd->add_option("--debounce-ms", *debounce,
                  "Publish diagnostics once no message has arrived for this many milliseconds")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->callback([debounce, &exitCode] { exitCode = lsp::runServer(STDIN_FILENO, STDOUT_FILENO, *debounce); });
}

} // namespace netc::cli
