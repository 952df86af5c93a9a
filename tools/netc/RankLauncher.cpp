// RankLauncher.cpp -- `--ranks N` (RankLauncher.h). The job runs in a
// process group of its own, so the terminal's Ctrl-C reaches only this netc,
// which turns the first one into SIGUSR1 for mpirun (forwarded to every
// rank: they stop together at the next step and rank 0 saves the run) and a
// second into SIGTERM (mpirun ends the ranks at once). mpirun's standard
// error -- the ranks' too -- passes through a pipe, where the line by which
// mpirun reports a rank killed by a signal is recognised.
#include "RankLauncher.h"
#include "CommandSupport.h"

#include "runtime/comm/Launch.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <regex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace netc::cli {

namespace {

std::atomic<pid_t> gJob{0};
std::atomic<int> gInterrupts{0};

extern "C" void forwardInterrupt(int) {
  const pid_t job = gJob;
  if (job <= 0)
    return;
  if (gInterrupts++ == 0) {
    static const char note[] = "\nnetc: stopping every rank: each finishes its step and rank 0 saves the run "
                               "(Ctrl-C again to end them at once)\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, note, sizeof note - 1);
    ::kill(job, SIGUSR1);
  } else {
    ::kill(job, SIGTERM);
  }
}

/// Where `name` is on PATH ("" when it is not).
std::string findOnPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return {};
}

std::string selfPath() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string("netc");
}

/// Runs `command` in its own process group with its standard error through
/// a pipe (passed on, and read for mpirun's report of a killed rank);
/// returns its exit status (128 + the signal when it was killed).
int runJob(const std::vector<std::string> &command) {
  int pipeEnds[2];
  if (::pipe2(pipeEnds, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "netc: error: cannot start mpirun: %s\n", std::strerror(errno));
    return kInputError;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "netc: error: cannot start mpirun: %s\n", std::strerror(errno));
    return kInputError;
  }
  if (child == 0) {
    ::setpgid(0, 0);
    ::dup2(pipeEnds[1], STDERR_FILENO);
    std::vector<char *> argv;
    for (const std::string &word : command)
      argv.push_back(const_cast<char *>(word.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    const std::string message =
        fmt::format("netc: error: cannot run {}: {}\n", command[0], std::strerror(errno));
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(127);
  }
  ::close(pipeEnds[1]);
  gJob = child;
  struct sigaction action {
  }, oldInterrupt{}, oldTerminate{};
  action.sa_handler = forwardInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &oldInterrupt);
  ::sigaction(SIGTERM, &action, &oldTerminate);
  // mpirun's report of a rank killed by a signal.
  static const std::regex killed(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  std::string line, killedRank;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(pipeEnds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, chunk, static_cast<size_t>(n));
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] != '\n') {
        if (line.size() < 4096)
          line += chunk[i];
        continue;
      }
      std::smatch m;
      // (Open MPI 4.1 prints PID 0 here.)
      if (killedRank.empty() && std::regex_search(line, m, killed))
        killedRank = fmt::format("rank {} ({}on {}) was killed by signal {} ({})", m[1].str(),
                                 m[2].str() == "0" ? std::string() : "pid " + m[2].str() + " ", m[3].str(),
                                 m[4].str(), m[5].str());
      line.clear();
    }
  }
  ::close(pipeEnds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &oldInterrupt, nullptr);
  ::sigaction(SIGTERM, &oldTerminate, nullptr);
  gJob = 0;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Stopped by the Ctrl-C forwarded as SIGUSR1: the status a Ctrl-C'd netc has.
  if (gInterrupts > 0 && code == 128 + SIGUSR1)
    code = 128 + SIGINT;
  if (!killedRank.empty())
    std::fprintf(
        stderr,
        "netc: error: %s, so mpirun ended the other ranks; the run continues from its last checkpoint "
        "with --resume\n",
        killedRank.c_str());
  return code;
}

} // namespace

CLI::Option *addRanksOption(CLI::App &app, int &ranks) {
  return app
      .add_option_function<std::string>(
          "--ranks",
          [&ranks](const std::string &text) { integerFlagProblem(text, 1, comm::kMaxRanks, ranks); },
          "Data-parallel processes on this machine, started through Open MPI's mpirun (--batch is per rank); "
          "under mpirun or srun it must equal the ranks they started")
      ->check([](const std::string &text) {
        int value = 0;
        return integerFlagProblem(text, 1, comm::kMaxRanks, value);
      })
      ->type_name("N");
}

std::optional<int> settleLaunch(int ranks, int threads, const std::vector<std::string> &commandLine,
                                Launch &launch) {
  LaunchResult found = launchFromEnvironment();
  if (!found.ok()) {
    std::fprintf(stderr, "netc: error: this process's launch environment: %s\n", found.error.c_str());
    return kUsageError;
  }
  launch = found.launch;
  if (ranks == 0 || (ranks == 1 && launch.size == 1))
    return std::nullopt;
  if (launch.size > 1) {
    if (launch.size == ranks)
      return std::nullopt; // a rank of the job (mpirun's or our own)
    std::fprintf(
        stderr,
        "netc: error: --ranks %d, but %s started %d ranks: leave --ranks out under a launcher, or give "
        "the number it starts\n",
        ranks, launch.launcher.c_str(), launch.size);
    return kUsageError;
  }
  const std::string mpirun = findOnPath("mpirun");
  if (mpirun.empty()) {
    std::fprintf(
        stderr,
        "netc: error: --ranks %d starts %d processes with Open MPI's mpirun, which is not on PATH: install "
        "it (Debian: apt install openmpi-bin), or start the ranks with your own launcher (mpirun -np %d "
        "netc ..., srun --mpi=pmix netc ...)\n",
        ranks, ranks, ranks);
    return kUsageError;
  }
  comm::LaunchRequest request;
  request.ranks = ranks;
  request.cores = comm::physicalCores();
  const int logical = std::max(1u, std::thread::hardware_concurrency());
  request.threadsPerRank = threads > 0 ? threads : std::max(1, logical / ranks);
  request.asRoot = ::geteuid() == 0;
  request.mpirun = mpirun;
  const std::vector<std::string> arguments(commandLine.begin() + (commandLine.empty() ? 0 : 1),
                                           commandLine.end());
  return runJob(comm::mpirunCommand(request, selfPath(), arguments));
}

} // namespace netc::cli
