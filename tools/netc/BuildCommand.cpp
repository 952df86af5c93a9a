// BuildCommand.cpp -- `netc build FILE --weights CKPT -o OUT [--name NAME]
// [--target TRIPLE] [--cpu NAME]`: a trained network compiled through LLVM
// into a native inference library (a shared and a static library, the object,
// a C header and a README) that runs without netc (docs/codegen.md).
#include "CommandSupport.h"

#include "netc/Training.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <filesystem>

namespace netc::cli {

namespace {

struct BuildArgs {
  std::string file, weights;
  LibrarySettings library;
  bool quiet = false;
};

std::string sizeText(uintmax_t bytes) {
  return bytes >= 1 << 20 ? fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20))
                          : fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
}

int runBuild(const BuildArgs &args) {
  if (!readFileOrReport(args.file, args.library.maxSourceBytes))
    return kUsageError;
  LibraryResult result = buildLibrary(args.file, args.weights, args.library);
  if (!result.diagnostics.empty())
    std::fputs(result.diagnostics.c_str(), stderr);
  if (!result.ok()) {
    printError(result.error);
    return result.failure == FailureKind::Usage ? kUsageError : kInputError;
  }
  if (args.quiet)
    return kSuccess;
  std::printf("built %s for %s (cpu %s) in %.2f s:\n", result.prefix.c_str(),
              printableText(result.triple).c_str(), printableText(result.cpu).c_str(), result.compileSeconds);
  for (const std::string &file : result.files) {
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(file, ec);
    std::printf("  %-40s %s\n", printableText(file).c_str(), ec ? "" : sizeText(bytes).c_str());
  }
  return kSuccess;
}

} // namespace

void addBuildCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App *cmd = app.add_subcommand(
      "build", "Compile a trained network into a native inference library with a C header (needs LLVM)");
  cmd->add_option("file", args->file, "Net# file")->required();
  cmd->add_option("--weights", args->weights, "Checkpoint written by netc train")->required();
  cmd->add_option(
         "-o,--out", args->library.outDir,
         "Folder the library's files go to: a new or empty one, or one netc build made (its files are "
         "replaced)")
      ->required();
  cmd->add_flag("--overwrite", args->library.overwrite,
                "Build into an existing folder netc build did not make, replacing only the files it writes");
  cmd->add_option("--name", args->library.name,
                  "C prefix of the library's symbols (PREFIX_infer, PREFIX.h); default: the network's name");
  cmd->add_option("--target", args->library.target,
                  "Target triple, e.g. aarch64-linux-gnu (linked with ld.lld-19); default: this machine");
  cmd->add_option(
      "--cpu", args->library.cpu,
      "CPU to optimise for, e.g. x86-64-v3 or neoverse-n1; 'generic' for portable code; default: this "
      "machine's CPU (another target's: generic)");
  addMaxSourceSizeOption(*cmd, args->library.maxSourceBytes);
  cmd->add_flag("-q,--quiet", args->quiet, "Print nothing on success");
  cmd->callback([args, &exitCode] { exitCode = runBuild(*args); });
}

} // namespace netc::cli
