// FmtCommand.cpp -- `netc fmt FILE [-i] [--check]`: prints the canonical
// layout, rewrites the file in place (-i, atomically, through a symlink to
// its target, keeping the mode), or with --check exits 1 when the file is not
// formatted. A file with syntax errors is not formatted.
#include "CommandSupport.h"

#include "frontend/Formatter.h"
#include "support/PrintableText.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace netc::cli {

namespace {

struct FmtArgs {
  std::string file;
  bool inPlace = false;
  bool check = false;
  ColourFlag colour;
  uint64_t maxSourceBytes = CompileOptions{}.maxSourceBytes;
};

/// Replaces the contents of `path` atomically: through a symlink (the
/// link stays and its target changes), keeping the target's permission bits
/// and, where allowed, its owner. The new text goes to a temporary next to
/// the target, which then replaces it by rename; on any failure the file is
/// unchanged and the temporary removed.
int replaceFileContents(const std::string &path, const std::string &contents) {
  char *resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) {
    std::fprintf(stderr, "netc: error: cannot resolve '%s': %s\n", printableText(path).c_str(),
                 std::strerror(errno));
    return kInputError;
  }
  const std::string target = resolved;
  std::free(resolved);
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0) {
    std::fprintf(stderr, "netc: error: cannot read '%s': %s\n", printableText(target).c_str(),
                 std::strerror(errno));
    return kInputError;
  }
  std::string temporary = target + ".netc-fmt.tmp-XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    std::fprintf(stderr, "netc: error: cannot create a temporary file next to '%s': %s\n",
                 printableText(target).c_str(), std::strerror(errno));
    return kInputError;
  }
  auto failWith = [&](const char *what) {
    const int error = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    std::fprintf(stderr, "netc: error: cannot %s '%s': %s; '%s' is unchanged\n", what,
                 printableText(temporary).c_str(), std::strerror(error), printableText(path).c_str());
    return kInputError;
  };
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return failWith("write");
    written += static_cast<size_t>(n);
  }
  // The owner first: a chown clears the setuid and setgid bits, which the
  // chmod after it then restores.
  if (::fchown(fd, info.st_uid, info.st_gid) != 0 && errno != EPERM)
    return failWith("set the owner of");
  if (::fchmod(fd, info.st_mode & 07777) != 0)
    return failWith("set the permissions of");
  if (::fsync(fd) != 0)
    return failWith("write");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    std::fprintf(stderr, "netc: error: cannot write '%s': %s; '%s' is unchanged\n",
                 printableText(temporary).c_str(), std::strerror(error), printableText(path).c_str());
    return kInputError;
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    std::fprintf(stderr, "netc: error: cannot replace '%s': %s\n", printableText(target).c_str(),
                 std::strerror(error));
    return kInputError;
  }
  return kSuccess;
}

int runFmt(const FmtArgs &args) {
  auto text = readFileOrReport(args.file, args.maxSourceBytes);
  if (!text)
    return kUsageError;
  auto c = compileSource(SourceFile(args.file, *text), CompileOptions{}, Stage::Parse);
  if (c->diags.hasErrors()) {
    printDiagnostics(stderr, *c, args.colour.enabledFor(stderr));
    std::fprintf(stderr, "netc: '%s' was not formatted because it does not parse\n",
                 printableText(args.file).c_str());
    return kInputError;
  }
  std::string formatted = formatProgram(c->parse.program, c->file);
  if (args.check) {
    if (formatted == *text)
      return kSuccess;
    std::fprintf(stderr, "%s: not formatted (run 'netc fmt -i %s')\n", printableText(args.file).c_str(),
                 printableText(args.file).c_str());
    return kInputError;
  }
  if (!args.inPlace) {
    std::fwrite(formatted.data(), 1, formatted.size(), stdout);
    return kSuccess;
  }
  if (formatted == *text)
    return kSuccess;
  return replaceFileContents(args.file, formatted);
}

} // namespace

void addFmtCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<FmtArgs>();
  CLI::App *cmd = app.add_subcommand("fmt", "Print a Net# file in canonical layout");
  cmd->add_option("file", args->file, "Net# file")->required();
  auto *inPlace = cmd->add_flag("-i,--in-place", args->inPlace, "Rewrite the file in place");
  cmd->add_flag("--check", args->check, "Exit 1 when the file is not formatted; change nothing")
      ->excludes(inPlace);
  addMaxSourceSizeOption(*cmd, args->maxSourceBytes);
  args->colour.addTo(*cmd);
  cmd->callback([args, &exitCode] { exitCode = runFmt(*args); });
}

} // namespace netc::cli
