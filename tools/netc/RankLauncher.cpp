// RankLauncher.cpp -- `--ranks N`, `--gpus N` and `--max-restarts N`
// (RankLauncher.h). mpirun runs in a session of its own, so the terminal's
// signals reach only this netc, which forwards them, and so every process of
// the job -- mpirun puts each rank in a process group of its own -- can be
// found (same session id) and ended. mpirun's standard error -- the ranks'
// too -- passes through a pipe, where the block by which mpirun reports a
// rank killed by a signal is recognised and mpirun's boilerplate about exit
// statuses (netc says the same in one line) is dropped.
#include "RankLauncher.h"
#include "CommandSupport.h"
#include "JobReport.h"

#include "api/Backends.h"
#include "api/DataParallel.h"
#include "runtime/comm/Launch.h"
#include "runtime/comm/LocalJob.h"
#include "runtime/comm/OpenCommunicator.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <poll.h>
#include <regex>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace netc::cli {

namespace {

using Clock = std::chrono::steady_clock;

/// How long a clean stop (SIGUSR1 to every rank: finish the step, save)
/// may take before the ranks are ended (SIGTERM, then SIGKILL).
constexpr double kStopGraceSeconds = 30;
/// How long ranks sent SIGTERM get before SIGKILL.
constexpr double kKillGraceSeconds = 10;
/// Local ranks per logical CPU `--ranks` starts at most.
constexpr int kRanksPerCpu = 4;

// ---- the launcher's signals ---------------------------------------------------------

std::atomic<int> gInterrupts{0};   // Ctrl-Cs
std::atomic<int> gTerminations{0}; // SIGTERMs and SIGHUPs
std::atomic<int> gTerminationSignal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

/// What the first Ctrl-C does, said when it comes: netc train saves its run;
/// bench and calibrate have none to save (set by settleLaunch).
constexpr const char *kTrainStopNote =
    "\nnetc: stopping every rank: each finishes its step and rank 0 saves the "
    "run (Ctrl-C again to end them at once)\n";
constexpr const char *kMeasureStopNote = "\nnetc: stopping every rank: the job ends without a result "
                                         "(Ctrl-C again to end them at once)\n";
std::atomic<const char *> gStopNote{kTrainStopNote};
static_assert(std::atomic<const char *>::is_always_lock_free, "used from a signal handler");

extern "C" void countLauncherSignal(int signal) {
  if (signal == SIGINT) {
    const int before = gInterrupts++;
    const char *note = before == 0   ? gStopNote.load()
                       : before == 1 ? "\nnetc: ending every rank now (Ctrl-C again to kill them)\n"
                                     : "\nnetc: killing every process of the job\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, note, std::strlen(note));
    return;
  }
  int expected = 0;
  gTerminationSignal.compare_exchange_strong(expected, signal);
  ++gTerminations;
}

/// Routes SIGINT, SIGTERM and SIGHUP to countLauncherSignal while it lives
/// (SIGHUP only where it is not ignored: under nohup the job goes on).
class LauncherSignals {
public:
  LauncherSignals() {
    gInterrupts = 0;
    gTerminations = 0;
    gTerminationSignal = 0;
    struct sigaction action {};
    action.sa_handler = countLauncherSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction current {};
      ::sigaction(kSignals[i], nullptr, &current);
      installed_[i] = !(kSignals[i] == SIGHUP && current.sa_handler == SIG_IGN);
      if (installed_[i])
        ::sigaction(kSignals[i], &action, &old_[i]);
    }
  }
  ~LauncherSignals() {
    for (size_t i = 0; i < std::size(kSignals); ++i)
      if (installed_[i])
        ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  LauncherSignals(const LauncherSignals &) = delete;
  LauncherSignals &operator=(const LauncherSignals &) = delete;

private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[std::size(kSignals)]{};
  bool installed_[std::size(kSignals)]{};
};

/// Whether the user asked the job to stop (Ctrl-C, SIGTERM, SIGHUP).
bool stopAsked() {
  return gInterrupts > 0 || gTerminations > 0;
}

/// The exit status of a job that ended as its launcher's signals asked.
int askedStatus() {
  return 128 + (gInterrupts > 0 ? SIGINT : gTerminationSignal.load());
}

// ---- the processes of a session ---------------------------------------------------------

/// The processes of session `sid` (field 6 of /proc/PID/stat), but this one.
std::vector<pid_t> sessionProcesses(pid_t sid) {
  std::vector<pid_t> found;
  DIR *proc = ::opendir("/proc");
  if (!proc)
    return found;
  while (const dirent *entry = ::readdir(proc)) {
    char *end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == ::getpid())
      continue;
    if (::getsid(static_cast<pid_t>(pid)) == sid)
      found.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return found;
}

void signalSession(pid_t sid, int signal) {
  for (pid_t pid : sessionProcesses(sid))
    ::kill(pid, signal);
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

// ---- mpirun's output ------------------------------------------------------------------

/// Passes mpirun's standard error through, line by line. mpirun frames its
/// own reports between lines of dashes; a report that a rank exited with a
/// non-zero status (netc's rank said why, and netc says which) is dropped,
/// and one of a rank killed by a signal is kept and recognised.
class MpirunOutput {
public:
  void take(const char *chunk, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] != '\n') {
        if (line_.size() < 8192)
          line_ += chunk[i];
        continue;
      }
      endLine();
    }
  }
  void finish() {
    if (!line_.empty())
      endLine();
    if (inBlock_)
      emit(block_);
  }
  const std::string &killedRank() const { return killedRank_; }

private:
  static bool isRule(const std::string &line) {
    return line.size() >= 20 && line.find_first_not_of('-') == std::string::npos;
  }
  void endLine() {
    const std::string line = std::move(line_);
    line_.clear();
    if (!inBlock_) {
      if (line.starts_with("mpirun: Forwarding signal")) // netc forwarded it, and said why
        return;
      if (isRule(line)) {
        inBlock_ = true;
        block_ = line + "\n";
      } else {
        emit(line + "\n");
      }
      return;
    }
    block_ += line + "\n";
    if (!isRule(line))
      return;
    inBlock_ = false;
    // mpirun's report of a rank killed by a signal (Open MPI 4.1 prints PID 0).
    static const std::regex killed(
        R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+) \(([^)]*)\))");
    std::smatch m;
    if (killedRank_.empty() && std::regex_search(block_, m, killed))
      killedRank_ = fmt::format("rank {} ({}on {}) was killed by signal {} ({})", m[1].str(),
                                m[2].str() == "0" ? std::string() : "pid " + m[2].str() + " ", m[3].str(),
                                m[4].str(), m[5].str());
    const bool boilerplate = block_.find("Primary job  terminated normally") != std::string::npos ||
                             block_.find("exited with non-zero status") != std::string::npos ||
                             block_.find("exiting improperly") != std::string::npos;
    if (!boilerplate)
      emit(block_);
    block_.clear();
  }
  static void emit(const std::string &text) {
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
  }
  std::string line_, block_, killedRank_;
  bool inBlock_ = false;
};

// ---- one run of a job -----------------------------------------------------------------

/// How one run of a job ended.
struct JobRun {
  int status = 0;
  std::string failure;     ///< which rank failed and how (a killed rank), or ""
  bool rankKilled = false; ///< a rank died of a signal (not one the launcher sent)
  std::string startError;  ///< the job could not start at all
};

/// A file rank 0 reports into (JobReport.h), removed when it goes.
class StatusFile {
public:
  StatusFile() {
    const char *tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && tmp[0] == '/' ? tmp : "/tmp") + "/netc-job-XXXXXX";
    const int fd = ::mkostemp(path_.data(), O_CLOEXEC);
    if (fd < 0)
      path_.clear();
    else
      ::close(fd);
  }
  ~StatusFile() {
    if (!path_.empty())
      ::unlink(path_.c_str());
  }
  StatusFile(const StatusFile &) = delete;
  StatusFile &operator=(const StatusFile &) = delete;
  const std::string &path() const { return path_; }
  /// Empties it for the next run.
  void reset() const {
    if (!path_.empty())
      ::truncate(path_.c_str(), 0);
  }

private:
  std::string path_;
};

/// Runs `command` (mpirun ...) in a session of its own, its standard error
/// through a pipe, forwarding the launcher's signals, until it and every
/// process of its session have ended.
JobRun runMpirun(const std::vector<std::string> &command) {
  JobRun run;
  int pipeEnds[2];
  if (::pipe2(pipeEnds, O_CLOEXEC) != 0) {
    run.startError = fmt::format("cannot start mpirun: {}", std::strerror(errno));
    return run;
  }
  std::vector<char *> argv;
  for (const std::string &word : command)
    argv.push_back(const_cast<char *>(word.c_str()));
  argv.push_back(nullptr);
  const std::string cannotRun = fmt::format("netc: error: cannot run {}: ", command[0]);
  const pid_t launcher = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    run.startError = fmt::format("cannot start mpirun: {}", std::strerror(errno));
    ::close(pipeEnds[0]);
    ::close(pipeEnds[1]);
    return run;
  }
  if (child == 0) {
    ::setsid();
    // mpirun (and through it the ranks) ends with this netc, however it ends.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher)
      ::_exit(128 + SIGTERM);
    ::dup2(pipeEnds[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    const char *why = std::strerror(errno);
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, cannotRun.data(), cannotRun.size());
    written = ::write(STDERR_FILENO, why, std::strlen(why));
    written = ::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  ::close(pipeEnds[1]);
  MpirunOutput output;
  int forwardedInterrupts = 0, forwardedTerminations = 0;
  std::optional<Clock::time_point> stopDeadline, killDeadline;
  bool killed = false;
  auto sendKill = [&] {
    if (!killed)
      signalSession(child, SIGKILL);
    killed = true;
  };
  // Acts on the launcher's signals and the deadlines they set.
  auto forward = [&] {
    const auto now = Clock::now();
    for (const int interrupts = gInterrupts; forwardedInterrupts < interrupts; ++forwardedInterrupts) {
      if (forwardedInterrupts == 0 && forwardedTerminations == 0) {
        ::kill(child, SIGUSR1); // mpirun passes it on to every rank
        stopDeadline = now + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(kStopGraceSeconds));
      } else if (forwardedInterrupts <= 1) {
        // Every process of the job: a stopping rank ends at once on a second
        // SIGINT (removing what it was writing), mpirun ends too.
        signalSession(child, SIGINT);
        killDeadline = now + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(kKillGraceSeconds));
      } else {
        sendKill();
      }
    }
    if (const int terminations = gTerminations; terminations > forwardedTerminations) {
      if (forwardedTerminations == 0 && forwardedInterrupts == 0) {
        ::kill(child, SIGUSR1);
        stopDeadline = now + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(kStopGraceSeconds));
      }
      forwardedTerminations = terminations;
    }
    if (stopDeadline && now > *stopDeadline && !killDeadline) {
      static const char note[] = "netc: the ranks did not stop within 30 s; ending them\n";
      [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, note, sizeof note - 1);
      ::kill(child, SIGTERM);
      killDeadline =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kKillGraceSeconds));
    }
    if (killDeadline && now > *killDeadline)
      sendKill();
  };
  char chunk[4096];
  for (;;) {
    pollfd readable{pipeEnds[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, 50);
    const int pollError = errno; // forward() may change errno
    forward();
    if (ready < 0 && pollError != EINTR)
      break;
    if (ready <= 0)
      continue;
    const ssize_t n = ::read(pipeEnds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    output.take(chunk, static_cast<size_t>(n));
  }
  ::close(pipeEnds[0]);
  output.finish();
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child || (done < 0 && errno != EINTR))
      break;
    forward();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // What mpirun left behind (it was killed, or died): ended too, so no rank
  // outlives the job.
  if (!sessionProcesses(child).empty()) {
    signalSession(child, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!sessionProcesses(child).empty() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    signalSession(child, SIGKILL);
  }
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !stopAsked())
    run.startError = "mpirun could not be started (above)";
  run.rankKilled = !output.killedRank().empty() && !stopAsked();
  run.failure = output.killedRank();
  return run;
}

/// `--gpus N`: N copies of this command, one per GPU, joined by NCCL.
JobRun runGpuJob(int gpus, const comm::DeviceTransport &nccl, int devices, int firstDevice,
                 const std::vector<std::string> &arguments) {
  JobRun run;
  auto id = nccl.newJobId();
  if (!id) {
    run.startError = fmt::format("--gpus {}: {}", gpus, id.message());
    run.status = kInputError;
    return run;
  }
  comm::LocalJobRequest job;
  job.program = selfPath();
  job.arguments = arguments;
  job.ranks = gpus;
  job.jobId = *id;
  job.devices = devices;
  job.firstDevice = firstDevice;
  job.interrupts = &gInterrupts;
  job.terminations = &gTerminations;
  job.graceSeconds = kStopGraceSeconds;
  const comm::LocalJobResult result = comm::runLocalJob(job);
  run.status = result.status;
  run.startError = result.startError;
  run.failure = result.failure;
  run.rankKilled = result.failure.find("killed by") != std::string::npos && !stopAsked();
  return run;
}

/// The arguments of this command without argv[0].
std::vector<std::string> argumentsOf(const std::vector<std::string> &commandLine) {
  return {commandLine.begin() + (commandLine.empty() ? 0 : 1), commandLine.end()};
}

/// Runs the job, and with --max-restarts restarts it from its last
/// checkpoint when it lost a rank. `runOnce` runs it once with the given
/// arguments (after the program's name).
int superviseJob(const RankRequest &request, const std::vector<std::string> &commandLine,
                 const std::function<JobRun(const std::vector<std::string> &)> &runOnce) {
  StatusFile status;
  if (status.path().empty()) {
    std::fprintf(stderr, "netc: error: cannot create the job's status file in $TMPDIR or /tmp: %s\n",
                 std::strerror(errno));
    return kInputError;
  }
  ::setenv(comm::kLauncherVariable, comm::launcherIdentity().c_str(), 1);
  ::setenv(comm::kStatusFileVariable, status.path().c_str(), 1);
  const char *flag = request.gpus > 0 ? "--gpus" : "--ranks";
  const int ranks = request.gpus > 0 ? request.gpus : request.ranks;
  std::vector<std::string> arguments = argumentsOf(commandLine);
  // The run's last checkpoint over every attempt (a restarted attempt may
  // end before it writes one of its own).
  std::string checkpoint;
  int64_t checkpointStep = 0;
  LauncherSignals signals;
  for (int attempt = 0;; ++attempt) {
    status.reset();
    const JobRun run = runOnce(arguments);
    const JobReport report = readJobReport(status.path());
    if (!report.checkpoint.empty()) {
      checkpoint = report.checkpoint;
      checkpointStep = report.checkpointStep;
    }
    if (!run.startError.empty()) {
      printError(run.startError);
      return run.status != 0 ? run.status : kInputError;
    }
    // A stop that was asked for ends as it asked, unless rank 0 failed in it
    // (its message says how).
    const bool stopped = report.ended && report.endKind == kEndedStopped;
    if (stopAsked() || stopped) {
      if (run.status == 0)
        return kSuccess;
      if (report.ended && report.endKind == kEndedFailed)
        return run.status;
      return stopAsked() ? askedStatus() : report.endStatus;
    }
    if (run.status == 0) {
      if (report.started)
        return kSuccess;
      std::fprintf(stderr,
                   "netc: error: %s %d: the job's launcher exited 0, but rank 0 of the job never started "
                   "netc (it reported nothing to this netc): is '%s' Open MPI's mpirun, and does it run "
                   "its command? Nothing was trained\n",
                   flag, ranks, request.gpus > 0 ? "netc" : printableText(findOnPath("mpirun")).c_str());
      return kInputError;
    }
    // Lost a rank: one died of a signal, or rank 0 says the job lost one
    // (a rank stopped answering), or rank 0 itself vanished while training.
    // A failure rank 0 reported otherwise (bad data, divergence) would repeat.
    const bool lostRank = run.rankKilled || (report.ended && report.endKind == kEndedLostRank) ||
                          (report.training && !report.ended);
    const std::string cause = !run.failure.empty() ? run.failure
                              : report.ended
                                  ? "rank 0 lost a rank of the job (its message is above)"
                                  : "rank 0 ended without a word (it was killed, or its machine was lost)";
    if (!lostRank || attempt >= request.maxRestarts) {
      if (!run.failure.empty())
        std::fprintf(stderr, "netc: error: %s, so the other ranks were ended%s\n",
                     printableText(run.failure).c_str(),
                     checkpoint.empty()
                         ? ""
                         : fmt::format("; the run continues from its last checkpoint: {} (step {}) with "
                                       "--resume",
                                       printableText(checkpoint), checkpointStep)
                               .c_str());
      if (lostRank && request.maxRestarts > 0)
        std::fprintf(stderr, "netc: error: the job was restarted %d time(s) (--max-restarts %d); giving up\n",
                     attempt, request.maxRestarts);
      return run.status;
    }
    if (checkpoint.empty()) {
      std::fprintf(stderr, "netc: restart %d of %d: %s; no checkpoint was written yet: starting again\n",
                   attempt + 1, request.maxRestarts, printableText(cause).c_str());
    } else {
      std::fprintf(stderr, "netc: restart %d of %d: %s; continuing from %s (step %lld)\n", attempt + 1,
                   request.maxRestarts, printableText(cause).c_str(), printableText(checkpoint).c_str(),
                   static_cast<long long>(checkpointStep));
      std::vector<std::string> resumed = {commandLine.empty() ? std::string("netc") : commandLine[0]};
      resumed.insert(resumed.end(), arguments.begin(), arguments.end());
      arguments = argumentsOf(resumeArguments(resumed, checkpoint));
    }
  }
}

/// The launcher of this rank is gone: the rank stops (SIGTERM: a clean stop
/// for netc train). Checked every half second against the launcher's pid and
/// start time (a pid is reused).
void watchLauncher(const Launch &launch) {
  if (launch.launcherPid <= 0)
    return;
  std::thread([pid = launch.launcherPid, start = launch.launcherStart, rank = launch.rank,
               size = launch.size] {
    while (!comm::processGone(pid, start))
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::string note = fmt::format(
        "netc: rank {} of {}: the netc that started this job (pid {}) is gone: stopping\n", rank, size, pid);
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, note.data(), note.size());
    ::kill(::getpid(), SIGTERM);
  }).detach();
}

} // namespace

int maxLocalRanks(int cpus) {
  return kRanksPerCpu * std::max(1, cpus);
}

std::string shellWord(const std::string &word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "-_./=:,+@%") == std::string::npos)
    return word;
  // A control byte (a path with a terminal escape) is written as \xNN in
  // bash's $'...' quoting: the command stays copyable and prints harmlessly.
  if (std::any_of(word.begin(), word.end(),
                  [](char c) { return isControlByte(static_cast<unsigned char>(c)); })) {
    std::string quoted = "$'";
    for (char c : word) {
      if (isControlByte(static_cast<unsigned char>(c)))
        quoted += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
      else if (c == '\'' || c == '\\')
        quoted += std::string("\\") + c;
      else
        quoted += c;
    }
    return quoted + "'";
  }
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::vector<std::string> resumeArguments(const std::vector<std::string> &commandLine,
                                         const std::string &checkpoint) {
  std::vector<std::string> out;
  bool skipValues = false; // after --init-skip: its values, up to the next flag
  for (size_t i = 0; i < commandLine.size(); ++i) {
    const std::string &word = commandLine[i];
    if (skipValues && !word.empty() && word[0] != '-')
      continue;
    skipValues = false;
    if (word == "--overwrite" || word.starts_with("--resume=") || word.starts_with("--init-from=") ||
        word.starts_with("--init-skip="))
      continue;
    if (word == "--resume" || word == "--init-from") {
      ++i; // and its value
      continue;
    }
    if (word == "--init-skip") {
      skipValues = true;
      continue;
    }
    out.push_back(word);
  }
  out.insert(out.end(), {"--resume", checkpoint});
  return out;
}

void addRanksOption(CLI::App &app, RankRequest &request) {
  for (auto [flag, into, help] :
       {std::tuple{
            "--ranks", &request.ranks,
            "Data-parallel processes on this machine, started through Open MPI's mpirun (on --device "
            "cuda: one per GPU, as --gpus; --batch is per rank); under mpirun or srun it must equal the "
            "ranks they started"},
        std::tuple{
            "--gpus", &request.gpus,
            "Data-parallel processes on this machine's GPUs, one per GPU from the one --device names, "
            "started by netc itself (no MPI needed) and joined by NCCL; --gpus 1 runs NCCL's path on one"}})
    app.add_option_function<std::string>(
           flag, [into](const std::string &text) { integerFlagProblem(text, 1, comm::kMaxRanks, *into); },
           help)
        ->check([](const std::string &text) {
          int value = 0;
          return integerFlagProblem(text, 1, comm::kMaxRanks, value);
        })
        ->type_name("N");
}

void addRestartOption(CLI::App &app, RankRequest &request) {
  addIntegerOption(app, "--max-restarts", request.maxRestarts, 0, 1000,
                   "With --ranks or --gpus: when a rank dies or stops answering, end the others and continue "
                   "the run from its last checkpoint, up to N times (see --checkpoint-every)")
      ->type_name("N");
}

std::optional<int> settleLaunch(const RankRequest &request, const std::string &device, int threads,
                                const std::vector<std::string> &commandLine, Launch &launch) {
  const bool trains = commandLine.size() > 1 && commandLine[1] == "train";
  gStopNote = trains ? kTrainStopNote : kMeasureStopNote;
  LaunchResult found = launchFromEnvironment();
  if (!found.ok()) {
    std::fprintf(stderr, "netc: error: this process's launch environment: %s\n", found.error.c_str());
    return kUsageError;
  }
  launch = found.launch;
  if (request.gpus > 0 && request.ranks > 0 && request.gpus != request.ranks) {
    std::fprintf(stderr,
                 "netc: error: --ranks %d and --gpus %d disagree: --gpus N is --ranks N with a GPU each\n",
                 request.ranks, request.gpus);
    return kUsageError;
  }
  const bool gpuJob = request.gpus > 0 || (request.ranks > 0 && device.starts_with("cuda"));
  const int ranks = request.gpus > 0 ? request.gpus : request.ranks;
  const char *flag = request.gpus > 0 ? "--gpus" : "--ranks";
  if (gpuJob && device == "cpu") {
    std::fprintf(stderr,
                 "netc: error: --gpus %d runs one rank per GPU, not on --device cpu: use --ranks %d for "
                 "CPU ranks\n",
                 ranks, ranks);
    return kUsageError;
  }
  const bool insideJob = launch.size > 1 || !launch.jobId.empty();
  if (request.maxRestarts > 0 &&
      (ranks == 0 || (ranks == 1 && !gpuJob) || (insideJob && launch.launcherPid == 0))) {
    std::fprintf(stderr,
                 "netc: error: --max-restarts %d: netc restarts only a job it starts itself (--ranks N, "
                 "--gpus N)%s\n",
                 request.maxRestarts,
                 insideJob ? "; under mpirun or srun let them restart it (Slurm: sbatch --requeue with "
                             "--signal=USR1@60, docs/distributed.md)"
                           : "");
    return kUsageError;
  }
  if (insideJob) {
    if (ranks != 0 && launch.size != ranks) {
      std::fprintf(stderr,
                   "netc: error: %s %d, but %s started %d ranks: leave %s out under a launcher, or give "
                   "the number it starts\n",
                   flag, ranks, launch.launcher.c_str(), launch.size, flag);
      return kUsageError;
    }
    // A rank of the job (mpirun's, srun's or our own).
    watchLauncher(launch);
    reportToLauncher(launch, "started");
    return std::nullopt;
  }
  if (ranks == 0 || (ranks == 1 && !gpuJob))
    return std::nullopt;
  if (gpuJob) {
    registerBuiltinBackends();
    const comm::DeviceTransport *nccl = comm::findDeviceTransport("nccl");
    // What asked for a GPU each, in messages.
    const std::string asked = request.gpus > 0 ? fmt::format("--gpus {}", ranks)
                              : !request.impliedBy.empty()
                                  ? fmt::format("{} on --device {}", request.impliedBy, device)
                                  : fmt::format("--ranks {} on --device {}", ranks, device);
    if (!nccl) {
      std::fprintf(stderr,
                   "netc: error: %s: this netc was built without CUDA; build it with the CUDA "
                   "toolkit, or run on the CPU with --ranks\n",
                   asked.c_str());
      return kUsageError;
    }
    // The first GPU: --device cuda:N's N.
    auto first = chooseDevice(device.empty() || device == "auto" ? "cuda" : device, "cuda", 0,
                              [](int) { return std::optional<std::string>(); });
    if (!first) {
      std::fprintf(stderr, "netc: error: %s: %s\n", asked.c_str(), first.message().c_str());
      return kUsageError;
    }
    auto count = nccl->deviceCount();
    if (!count) {
      const std::string why = cudaProblem(first->device).value_or(count.message());
      std::fprintf(stderr, "netc: error: %s: %s\n", asked.c_str(), why.c_str());
      return kInputError;
    }
    // A pipeline with more ranks than GPUs shares them: its ranks start as
    // CPU ranks do (mpirun) and talk through the host.
    if (!(request.shareGpus && request.gpus == 0 && training::gpusToShare(ranks, first->device, *count) > 0))
      return superviseJob(request, commandLine, [&](const std::vector<std::string> &arguments) {
        return runGpuJob(ranks, *nccl, *count, first->device, arguments);
      });
  }
  const int cpus = std::max(1u, std::thread::hardware_concurrency());
  if (ranks > maxLocalRanks(cpus)) {
    std::fprintf(stderr,
                 "netc: error: --ranks %d: more ranks than this machine can run: it has %d CPU(s), and netc "
                 "starts at most %d ranks on it (%d a CPU: each rank is a process with its own copy of the "
                 "network and the data); to start more on purpose, start them yourself (mpirun -np %d "
                 "--oversubscribe netc ..., srun --mpi=pmix -n %d netc ...)\n",
                 ranks, cpus, maxLocalRanks(cpus), kRanksPerCpu, ranks, ranks);
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
  comm::LaunchRequest job;
  job.ranks = ranks;
  job.cores = comm::physicalCores();
  job.threadsPerRank = threads > 0 ? threads : std::max(1, cpus / ranks);
  job.asRoot = ::geteuid() == 0;
  job.mpirun = mpirun;
  return superviseJob(request, commandLine, [&](const std::vector<std::string> &arguments) {
    return runMpirun(comm::mpirunCommand(job, selfPath(), arguments));
  });
}

} // namespace netc::cli
