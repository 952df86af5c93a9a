// LocalJob.cpp -- starting and watching the ranks of a local job
// (LocalJob.h). The children are forked and exec'd with an environment
// built before the fork (nothing allocates between fork and exec); the
// parent polls each of them with waitpid(WNOHANG), which lets it forward the
// caller's Ctrl-Cs and end the others after a failure without a thread.
#include "runtime/comm/LocalJob.h"
#include "runtime/comm/Launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace netc::comm {

namespace {

/// This process's environment without the variables a rank is given, plus them.
std::vector<std::string> rankEnvironment(int rank, int ranks, const std::string &jobId) {
  std::vector<std::string> own = localRankEnvironment(rank, ranks, jobId);
  std::vector<std::string> env;
  for (char **entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    bool replaced = false;
    for (const std::string &mine : own)
      replaced = replaced || text.compare(0, mine.find('=') + 1, mine, 0, mine.find('=') + 1) == 0;
    if (!replaced)
      env.push_back(text);
  }
  env.insert(env.end(), own.begin(), own.end());
  return env;
}

std::vector<char *> pointers(std::vector<std::string> &words) {
  std::vector<char *> out;
  for (std::string &w : words)
    out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

std::string signalText(int signal) {
  const char *name = ::strsignal(signal);
  return fmt::format("signal {} ({})", signal, name ? name : "unknown");
}

} // namespace

LocalJobResult runLocalJob(const LocalJobRequest &request) {
  LocalJobResult result;
  const int n = request.ranks;
  if (request.devices >= 0 && request.firstDevice + n > request.devices) {
    result.startError =
        fmt::format("--gpus {} runs rank r on GPU {}r, which needs {} GPU{}, but this machine has {}{}", n,
                    request.firstDevice > 0 ? fmt::format("{} + ", request.firstDevice) : std::string(),
                    request.firstDevice + n, request.firstDevice + n == 1 ? "" : "s", request.devices,
                    request.devices > 0 ? fmt::format(": use --gpus {} or fewer",
                                                      std::max(0, request.devices - request.firstDevice))
                                        : "");
    result.status = 2;
    return result;
  }
  if (n < 1 || n > kMaxRanks) {
    result.startError = fmt::format("a job of {} ranks (1 to {})", n, kMaxRanks);
    result.status = 2;
    return result;
  }
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<bool> running(static_cast<size_t>(n), false);
  pid_t group = 0;
  auto signalAll = [&](int signal) {
    for (int r = 0; r < n; ++r)
      if (running[size_t(r)])
        ::kill(pids[size_t(r)], signal);
  };
  const pid_t parent = ::getpid();
  std::vector<std::string> argv = {request.program};
  argv.insert(argv.end(), request.arguments.begin(), request.arguments.end());
  std::vector<char *> argvPointers = pointers(argv);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env = rankEnvironment(r, n, request.jobId);
    std::vector<char *> envPointers = pointers(env);
    // Made before the fork: the parent has other threads (NCCL's, CUDA's),
    // so the child may only make async-signal-safe calls until exec.
    const std::string cannotRun =
        fmt::format("netc: error: cannot run {} as rank {} of {}: ", request.program, r, n);
    const pid_t child = ::fork();
    if (child < 0) {
      result.startError = fmt::format("cannot start rank {} of {}: {}", r, n, std::strerror(errno));
      break;
    }
    if (child == 0) {
      // Ended with the parent, however it ends: a SIGKILL'd netc leaves no
      // rank running headless (checked again in case it died before this).
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent)
        ::_exit(128 + SIGTERM);
      ::setpgid(0, group); // the first rank leads the job's group
      // The ranks read nothing; in a background group a read from the
      // terminal would stop them (as mpirun's --stdin none).
      if (const int null = ::open("/dev/null", O_RDONLY); null >= 0)
        ::dup2(null, STDIN_FILENO);
      ::execve(argvPointers[0], argvPointers.data(), envPointers.data());
      const char *why = errno == ENOENT   ? "no such file\n"
                        : errno == EACCES ? "permission denied\n"
                                          : "exec failed\n";
      char line[1024]; // one write: the ranks' lines do not interleave
      const size_t head = std::min(cannotRun.size(), sizeof line - 32), tail = std::strlen(why);
      std::memcpy(line, cannotRun.data(), head);
      std::memcpy(line + head, why, tail);
      [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line, head + tail);
      ::_exit(127);
    }
    ::setpgid(child, group); // also here: whichever runs first
    if (group == 0)
      group = child;
    pids[size_t(r)] = child;
    running[size_t(r)] = true;
  }
  if (!result.startError.empty()) { // end the ranks already started: the job cannot run
    signalAll(SIGTERM);
    result.status = 127;
  }
  int forwarded = 0, terminated = 0;
  bool ending = !result.startError.empty();
  auto endingSince = std::chrono::steady_clock::now();
  bool killed = false; // this parent sent SIGKILL
  for (int left = static_cast<int>(std::count(running.begin(), running.end(), true)); left > 0;) {
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (!running[size_t(r)])
        continue;
      const pid_t done = ::waitpid(pids[size_t(r)], &status, WNOHANG);
      const bool lost = done < 0 && errno == ECHILD; // reaped elsewhere: its status is gone
      if (done != pids[size_t(r)] && !lost)
        continue;
      running[size_t(r)] = false;
      --left;
      const int code = lost ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // After a forwarded stop, ending by it (128 + the signal from rank 0),
      // by a second Ctrl-C or by this parent's SIGKILL is the stop asked
      // for, not a failure (a SIGKILL this parent did not send is one).
      const bool asked =
          (forwarded > 0 || terminated > 0) && (code == 128 + SIGINT || code == 128 + SIGUSR1 ||
                                                code == 128 + SIGTERM || (code == 128 + SIGKILL && killed));
      if (code != 0 && result.status == 0) {
        result.status = asked ? 128 + (forwarded > 0 ? SIGINT : SIGTERM) : code;
        if (!asked)
          result.failure =
              lost ? fmt::format("rank {} of {} (pid {}) ended, its status unknown", r, n, pids[size_t(r)])
              : WIFEXITED(status)
                  ? fmt::format("rank {} of {} (pid {}) exited with status {}", r, n, pids[size_t(r)], code)
                  : fmt::format("rank {} of {} (pid {}) was killed by {}", r, n, pids[size_t(r)],
                                signalText(WTERMSIG(status)));
      }
      if (code != 0 && !ending) { // the others cannot go on without it
        ending = true;
        endingSince = std::chrono::steady_clock::now();
        signalAll(SIGTERM);
      }
    }
    // Ctrl-Cs: a clean stop (SIGUSR1), then at once (SIGINT: a stopping rank
    // ends on a second one), then SIGKILL; a stop that outlasts the grace
    // period ends in SIGKILL too.
    const int interrupts = request.interrupts ? request.interrupts->load() : 0;
    for (; forwarded < interrupts; ++forwarded) {
      if (forwarded == 0 && terminated == 0) {
        signalAll(SIGUSR1);
      } else if (forwarded <= 1) {
        signalAll(SIGINT);
      } else if (!killed) {
        signalAll(SIGKILL);
        killed = true;
      }
      if (!ending) {
        ending = true;
        endingSince = std::chrono::steady_clock::now();
      }
    }
    // A termination of the parent: a clean stop, then SIGKILL after the grace period.
    const int terminations = request.terminations ? request.terminations->load() : 0;
    if (terminations > terminated) {
      if (terminated == 0 && forwarded == 0)
        signalAll(SIGUSR1);
      terminated = terminations;
      if (!ending) {
        ending = true;
        endingSince = std::chrono::steady_clock::now();
      }
    }
    if (ending && !killed &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - endingSince).count() >
            request.graceSeconds) {
      signalAll(SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

} // namespace netc::comm
