// Main.cpp -- the `netc` command: parses the command line and dispatches to
// a subcommand. Usage errors exit with 2 (printed by rank 0 alone when the
// process is a rank of a job). Standard output is shared by every
// subcommand, so whether it was written completely is checked once, here:
// a failed write or close (a full disk, `> /dev/full`) exits with 1. The
// commands that run kernels first give OpenMP netc's wait policy.
#include "CommandSupport.h"
#include "netc/netc.h"
#include "runtime/cpu/ThreadPolicy.h"

#include <climits>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

/// Flushes and closes standard output; when that or an earlier write
/// failed, says so on stderr and returns kInputError (unless the command
/// already failed), otherwise `exitCode`.
int finishStandardOutput(int exitCode) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  int error = errno;
  const bool written = flushed && std::ferror(stdout) == 0;
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  if (written && !closed)
    error = errno;
  if (written && closed)
    return exitCode;
  // An earlier failed write leaves no errno behind: say what is known.
  std::fprintf(stderr, "netc: error: cannot write to standard output: %s\n",
               error != 0 ? std::strerror(error) : "an earlier write failed");
  return exitCode == netc::cli::kSuccess ? netc::cli::kInputError : exitCode;
}

/// The commands that run kernels on OpenMP threads.
bool runsKernels(std::string_view command) {
  for (std::string_view name : {"train", "eval", "predict", "bench", "calibrate"})
    if (command == name)
      return true;
  return false;
}

/// Gives libgomp netc's wait policy (runtime/cpu/ThreadPolicy.h) unless the
/// user set one: libgomp reads it once, as it is loaded, so the process
/// runs itself again with it in the environment (the same process, file and
/// arguments: its pid, name and command line stay what launchers and
/// `pgrep netc` see). When that fails, it runs on under libgomp's default,
/// which the run header then names.
void settleWaitPolicy(int argc, char **argv) {
  if (argc < 2 || !runsKernels(argv[1]))
    return;
  const auto choice =
      netc::runtime::cpu::chooseWaitPolicy(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"));
  if (choice.setSpinCount.empty())
    return;
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || setenv("GOMP_SPINCOUNT", choice.setSpinCount.c_str(), 1) != 0)
    return;
  self[length] = '\0';
  execv(self, argv);
  unsetenv("GOMP_SPINCOUNT");
}

} // namespace

int main(int argc, char **argv) {
  if (const auto others = netc::runtime::cpu::parseOtherTasks(std::getenv("NETC_OTHER_TASKS"));
      !others.error.empty()) {
    std::fprintf(stderr, "netc: error: %s\n", others.error.c_str());
    return netc::cli::kUsageError;
  }
  settleWaitPolicy(argc, argv);
  CLI::App app{"netc -- a compiler and runner for Net#, the network language of Azure ML"};
  app.set_version_flag("--version", std::string("netc ") + netc::version());
  app.require_subcommand(1);
  int exitCode = netc::cli::kSuccess;
  const std::vector<std::string> commandLine(argv, argv + argc);
  netc::cli::addCheckCommand(app, exitCode);
  netc::cli::addShowCommand(app, exitCode);
  netc::cli::addFmtCommand(app, exitCode);
  netc::cli::addCompileCommand(app, exitCode);
  netc::cli::addBuildCommand(app, exitCode);
  netc::cli::addTrainCommand(app, exitCode, commandLine);
  netc::cli::addEvalCommand(app, exitCode);
  netc::cli::addPredictCommand(app, exitCode);
  netc::cli::addBenchCommand(app, exitCode, commandLine);
  netc::cli::addEstimateCommand(app, exitCode);
  netc::cli::addCalibrateCommand(app, exitCode, commandLine);
  netc::cli::addLspCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // A bad flag is the same on every rank of a job (mpirun, srun): said by rank 0 alone.
    const netc::LaunchResult launch = netc::launchFromEnvironment();
    const bool otherRank = launch.ok() && launch.launch.rank > 0 && e.get_exit_code() != 0;
    const int code = otherRank ? e.get_exit_code() : app.exit(e);
    exitCode = code == 0 ? 0 : netc::cli::agreedFailureStatus(!otherRank, netc::cli::kUsageError);
  }
  return finishStandardOutput(exitCode);
}
