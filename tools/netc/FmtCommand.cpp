// FmtCommand.cpp -- `netc fmt FILE [-i] [--check]`: prints the canonical
// layout, rewrites the file in place (-i, atomically), or with --check exits 1
// when the file is not formatted. A file with syntax errors is not formatted.
#include "CommandSupport.h"

#include "frontend/Formatter.h"

#include <cstdio>
#include <fstream>

namespace netc::cli {

namespace {

struct FmtArgs {
  std::string file;
  bool inPlace = false;
  bool check = false;
  ColourFlag colour;
};

int runFmt(const FmtArgs &args) {
  auto text = readFileOrReport(args.file);
  if (!text)
    return kUsageError;
  auto c = compileSource(SourceFile(args.file, *text), CompileOptions{}, Stage::Parse);
  if (c->diags.hasErrors()) {
    printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
    std::fprintf(stderr, "netc: '%s' was not formatted because it does not parse\n", args.file.c_str());
    return kInputError;
  }
  std::string formatted = formatProgram(c->parse.program, c->file);
  if (args.check) {
    if (formatted == *text)
      return kSuccess;
    std::fprintf(stderr, "%s: not formatted (run 'netc fmt -i %s')\n", args.file.c_str(), args.file.c_str());
    return kInputError;
  }
  if (!args.inPlace) {
    std::fwrite(formatted.data(), 1, formatted.size(), stdout);
    return kSuccess;
  }
  if (formatted == *text)
    return kSuccess;
  std::string temporary = args.file + ".netc-fmt.tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << formatted;
    if (!out) {
      std::fprintf(stderr, "netc: error: cannot write '%s'\n", temporary.c_str());
      std::remove(temporary.c_str());
      return kInputError;
    }
  }
  if (std::rename(temporary.c_str(), args.file.c_str()) != 0) {
    std::fprintf(stderr, "netc: error: cannot replace '%s'\n", args.file.c_str());
    std::remove(temporary.c_str());
    return kInputError;
  }
  return kSuccess;
}

} // namespace

void addFmtCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<FmtArgs>();
  CLI::App *cmd = app.add_subcommand("fmt", "Print a Net# file in canonical layout");
  cmd->add_option("file", args->file, "Net# file")->required();
  auto *inPlace = cmd->add_flag("-i,--in-place", args->inPlace, "Rewrite the file in place");
  cmd->add_flag("--check", args->check, "Exit 1 when the file is not formatted; change nothing")
      ->excludes(inPlace);
  args->colour.addTo(*cmd);
  cmd->callback([args, &exitCode] { exitCode = runFmt(*args); });
}

} // namespace netc::cli
