// CheckCommand.cpp -- `netc check FILE... [--format text|json] [--verify]`:
// every parse, semantic and shape check; exit 0 without errors (warnings
// allowed), 1 with any, 2 for usage errors or unreadable files. --verify
// compares the diagnostics with `expected-*` comments in the file.
#include "CommandSupport.h"

#include "support/DiagnosticPrinter.h"
#include "support/DiagnosticVerifier.h"
#include "support/PrintableText.h"

#include <nlohmann/json.hpp>

namespace netc::cli {

namespace {

struct CheckArgs {
  std::vector<std::string> files;
  std::string format = "text";
  bool verify = false;
  CompileFlags compile;
  ColourFlag colour;
};

int runCheck(const CheckArgs &args) {
  int status = kSuccess;
  nlohmann::json all = nlohmann::json::array();
  for (const std::string &path : args.files) {
    std::string error;
    auto text = readFile(path, error, args.compile.maxSourceBytes);
    if (!text) {
      status = kUsageError;
      if (args.format == "json" && !args.verify) {
        all.push_back(
            {{"severity", "error"},
             {"code", std::string(diagInfo(DiagId::CannotReadFile).code)},
             {"message", unreadableMessage(path, error)},
             {"file", path},
             {"range", {{"start", {{"line", 1}, {"column", 1}}}, {"end", {{"line", 1}, {"column", 1}}}}},
             {"notes", nlohmann::json::array()},
             {"fixits", nlohmann::json::array()}});
      } else {
        reportUnreadable(path, error);
      }
      continue;
    }
    auto c = compileSource(SourceFile(path, std::move(*text)), args.compile.options());
    if (args.verify) {
      std::vector<std::string> problems = verifyDiagnostics(c->file, c->diags.sorted());
      for (const std::string &p : problems)
        std::fprintf(stderr, "%s: verify: %s\n", printableText(path).c_str(), printableText(p).c_str());
      if (!problems.empty() && status != kUsageError)
        status = kInputError;
      continue;
    }
    if (args.format == "json") {
      for (const Diagnostic &d : c->diags.sorted())
        all.push_back(diagnosticToJson(c->file, d));
    } else {
      printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
    }
    if (c->diags.hasErrors() && status != kUsageError)
      status = kInputError;
  }
  if (args.format == "json" && !args.verify)
    std::printf("%s\n", nlohmann::json{{"diagnostics", all}}
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  return status;
}

} // namespace

void addCheckCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App *cmd = app.add_subcommand("check", "Check Net# files and report every problem");
  cmd->add_option("files", args->files, "Net# files")->required();
  cmd->add_option("--format", args->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("--verify", args->verify,
                "Compare the diagnostics with the expected-* comments in each file (for tests)");
  args->compile.addTo(*cmd);
  args->colour.addTo(*cmd);
  cmd->callback([args, &exitCode] { exitCode = runCheck(*args); });
}

} // namespace netc::cli
