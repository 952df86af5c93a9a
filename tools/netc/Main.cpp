// Main.cpp -- the `netc` command: parses the command line and dispatches to
// a subcommand. Usage errors exit with 2.
#include "CommandSupport.h"
#include "netc/netc.h"

int main(int argc, char **argv) {
  CLI::App app{"netc -- a compiler and runner for Net#, the network language of Azure ML"};
  app.set_version_flag("--version", std::string("netc ") + netc::version());
  app.require_subcommand(1);
  int exitCode = netc::cli::kSuccess;
  netc::cli::addCheckCommand(app, exitCode);
  netc::cli::addShowCommand(app, exitCode);
  netc::cli::addFmtCommand(app, exitCode);
  netc::cli::addCompileCommand(app, exitCode);
  netc::cli::addTrainCommand(app, exitCode);
  netc::cli::addEvalCommand(app, exitCode);
  netc::cli::addPredictCommand(app, exitCode);
  netc::cli::addBenchCommand(app, exitCode);
  netc::cli::addLspCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : netc::cli::kUsageError;
  }
  return exitCode;
}
