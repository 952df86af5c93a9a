// RankLauncher.cpp -- `--ranks N` (RankLauncher.h). The job runs in a
// process group of its own, so the terminal's Ctrl-C reaches only this netc,
// which turns the first one into SIGUSR1 for mpirun (forwarded to every
// rank: they stop together at the next step and rank 0 saves the run) and a
// second into SIGTERM (mpirun ends the ranks at once). mpirun's standard
// error -- the ranks' too -- passes through a pipe, where the line by which
// mpirun reports a rank killed by a signal is recognised.
#include "RankLauncher.h"
#include "CommandSupport.h"

#include "api/Backends.h"
#include "runtime/comm/Launch.h"
#include "runtime/comm/LocalJob.h"
#include "runtime/comm/OpenCommunicator.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <regex>
#include <sys/wait.h>
#include <thread>
#include <tuple>
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

/// Routes SIGINT and SIGTERM to `handler` while it lives (the launcher's
/// parent process forwards them to the job).
class InterruptRoute {
public:
  explicit InterruptRoute(void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, &oldInterrupt_);
    ::sigaction(SIGTERM, &action, &oldTerminate_);
  }
  ~InterruptRoute() {
    ::sigaction(SIGINT, &oldInterrupt_, nullptr);
    ::sigaction(SIGTERM, &oldTerminate_, nullptr);
  }
  InterruptRoute(const InterruptRoute &) = delete;
  InterruptRoute &operator=(const InterruptRoute &) = delete;

private:
  struct sigaction oldInterrupt_ {
  }, oldTerminate_{};
};

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
  std::optional<InterruptRoute> route(std::in_place, forwardInterrupt);
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
  route.reset();
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

namespace {

std::atomic<int> gLocalInterrupts{0};

extern "C" void countInterrupt(int signal) {
  if (signal == SIGINT && gLocalInterrupts.load() == 0) {
    static const char note[] = "\nnetc: stopping every rank: each finishes its step and rank 0 saves the run "
                               "(Ctrl-C again to end them at once)\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, note, sizeof note - 1);
  }
  gLocalInterrupts += signal == SIGINT ? 1 : 2; // SIGTERM: end them at once
}

/// `--gpus N`: N copies of this command, one per GPU, joined by NCCL.
int runGpuJob(int gpus, const std::string &device, const std::vector<std::string> &commandLine) {
  registerBuiltinBackends();
  const comm::DeviceTransport *nccl = comm::findDeviceTransport("nccl");
  if (!nccl) {
    std::fprintf(stderr,
                 "netc: error: --gpus %d: this netc was built without CUDA; build it with the CUDA "
                 "toolkit, or run on the CPU with --ranks\n",
                 gpus);
    return kUsageError;
  }
  // The first GPU: --device cuda:N's N.
  auto first = chooseDevice(device.empty() || device == "auto" ? "cuda" : device, "cuda", 0,
                            [](int) { return std::optional<std::string>(); });
  if (!first) {
    std::fprintf(stderr, "netc: error: --gpus %d: %s\n", gpus, first.message().c_str());
    return kUsageError;
  }
  auto count = nccl->deviceCount();
  if (!count) {
    const std::string why = cudaProblem(first->device).value_or(count.message());
    std::fprintf(stderr, "netc: error: --gpus %d: %s\n", gpus, why.c_str());
    return kInputError;
  }
  auto id = nccl->newJobId();
  if (!id) {
    std::fprintf(stderr, "netc: error: --gpus %d: %s\n", gpus, id.message().c_str());
    return kInputError;
  }
  comm::LocalJobRequest job;
  job.program = selfPath();
  job.arguments.assign(commandLine.begin() + (commandLine.empty() ? 0 : 1), commandLine.end());
  job.ranks = gpus;
  job.jobId = *id;
  job.devices = *count;
  job.firstDevice = first->device;
  job.interrupts = &gLocalInterrupts;
  const comm::LocalJobResult result = [&] {
    InterruptRoute route(countInterrupt);
    return comm::runLocalJob(job);
  }();
  if (!result.startError.empty()) {
    std::fprintf(stderr, "netc: error: %s\n", result.startError.c_str());
    return result.status;
  }
  if (!result.failure.empty())
    std::fprintf(stderr,
                 "netc: error: %s, so netc ended the other ranks; the run continues from its last "
                 "checkpoint with --resume\n",
                 result.failure.c_str());
  return result.status;
}

} // namespace

std::optional<int> settleLaunch(const RankRequest &request, const std::string &device, int threads,
                                const std::vector<std::string> &commandLine, Launch &launch) {
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
  if (ranks == 0 || (ranks == 1 && launch.size == 1 && !gpuJob))
    return std::nullopt;
  if (launch.size > 1 || !launch.jobId.empty()) {
    if (launch.size == ranks)
      return std::nullopt; // a rank of the job (mpirun's, srun's or our own)
    std::fprintf(stderr,
                 "netc: error: %s %d, but %s started %d ranks: leave %s out under a launcher, or give "
                 "the number it starts\n",
                 flag, ranks, launch.launcher.c_str(), launch.size, flag);
    return kUsageError;
  }
  if (gpuJob)
    return runGpuJob(ranks, device, commandLine);
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
  const int logical = std::max(1u, std::thread::hardware_concurrency());
  job.threadsPerRank = threads > 0 ? threads : std::max(1, logical / ranks);
  job.asRoot = ::geteuid() == 0;
  job.mpirun = mpirun;
  const std::vector<std::string> arguments(commandLine.begin() + (commandLine.empty() ? 0 : 1),
                                           commandLine.end());
  return runJob(comm::mpirunCommand(job, selfPath(), arguments));
}

} // namespace netc::cli
