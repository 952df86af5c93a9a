// Launch.cpp -- the launch environment and the mpirun command (Launch.h).
// Open MPI sets OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} for every
// rank it starts. srun sets SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and
// SLURM_STEP_NUM_TASKS for each task of a job step, and
// SLURM_STEP_TASKS_PER_NODE as "2(x3),1" (2 tasks on each of the first three
// nodes, then 1); a batch script outside any step has SLURM_NTASKS and
// SLURM_PROCID=0 but no step variables, and is one process. A netc parent
// (`--gpus N`) sets NETC_RANK, NETC_SIZE, NETC_LOCAL_RANK, NETC_LOCAL_SIZE
// and NETC_NCCL_ID for each rank it starts, all on its own machine.
#include "runtime/comm/Launch.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

namespace netc::comm {

namespace {

const std::string *find(const Environment &env, const std::string &name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

/// Variable `name` as a decimal integer in [min, max].
Expected<int> number(const Environment &env, const std::string &name, int min, int max,
                     std::string_view hint) {
  const std::string *text = find(env, name);
  if (!text)
    return fail(fmt::format("{} is not set, though {}", name, hint));
  int value = 0;
  const char *first = text->data(), *last = first + text->size();
  auto [end, error] = std::from_chars(first, last, value);
  if (text->empty() || error != std::errc() || end != last || value < min || value > max)
    return fail(fmt::format("{} is '{}', not a number from {} to {} ({})", name, text->substr(0, 40), min,
                            max, hint));
  return value;
}

Status checkPlace(const LaunchInfo &info, std::string_view localVariables) {
  if (info.localSize > info.size || info.localRank >= info.localSize)
    return fail(
        fmt::format("{} say local rank {} of {} on this machine in a job of {} ranks, which do not fit "
                    "together",
                    localVariables, info.localRank, info.localSize, info.size));
  return Status::success();
}

Expected<LaunchInfo> fromOpenMpi(const Environment &env) {
  constexpr std::string_view hint = "Open MPI's mpirun sets it for every rank";
  LaunchInfo info;
  info.launcher = "mpirun";
  auto size = number(env, "OMPI_COMM_WORLD_SIZE", 1, kMaxRanks, hint);
  if (!size)
    return size.error();
  info.size = *size;
  auto rank = number(env, "OMPI_COMM_WORLD_RANK", 0, info.size - 1, hint);
  if (!rank)
    return rank.error();
  info.rank = *rank;
  auto localSize = number(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, info.size, hint);
  if (!localSize)
    return localSize.error();
  info.localSize = *localSize;
  auto localRank = number(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, info.localSize - 1, hint);
  if (!localRank)
    return localRank.error();
  info.localRank = *localRank;
  return info;
}

/// The tasks of node `node` in srun's "2(x3),1" notation.
Expected<int> tasksOnNode(const std::string &name, const std::string &text, int node) {
  auto bad = [&] {
    return fail(fmt::format("{} is '{}', not srun's list of tasks per node (e.g. '2(x3),1')", name,
                            text.substr(0, 60)));
  };
  int nodesSeen = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos)
      end = text.size();
    std::string_view item(text.data() + at, end - at);
    int tasks = 0, repeat = 1;
    auto parsed = std::from_chars(item.data(), item.data() + item.size(), tasks);
    if (parsed.ec != std::errc() || tasks < 1)
      return bad();
    std::string_view rest(parsed.ptr, item.data() + item.size() - parsed.ptr);
    if (!rest.empty()) {
      if (rest.size() < 4 || !rest.starts_with("(x") || rest.back() != ')')
        return bad();
      auto r = std::from_chars(rest.data() + 2, rest.data() + rest.size() - 1, repeat);
      if (r.ec != std::errc() || r.ptr != rest.data() + rest.size() - 1 || repeat < 1)
        return bad();
    }
    if (node < nodesSeen + repeat)
      return tasks;
    nodesSeen += repeat;
    at = end + 1;
    if (end == text.size())
      break;
  }
  return fail(fmt::format("{} is '{}', which lists {} node(s), but SLURM_NODEID is {}", name,
                          text.substr(0, 60), nodesSeen, node));
}

Expected<LaunchInfo> fromSlurm(const Environment &env) {
  constexpr std::string_view hint = "srun sets it for every task of a job step";
  LaunchInfo info;
  info.launcher = "srun";
  auto size = number(env, "SLURM_STEP_NUM_TASKS", 1, kMaxRanks, hint);
  if (!size)
    return size.error();
  info.size = *size;
  auto rank = number(env, "SLURM_PROCID", 0, info.size - 1, hint);
  if (!rank)
    return rank.error();
  info.rank = *rank;
  auto node = number(env, "SLURM_NODEID", 0, kMaxRanks, hint);
  if (!node)
    return node.error();
  const std::string perNodeName =
      find(env, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  const std::string *perNode = find(env, perNodeName);
  if (!perNode)
    return fail(fmt::format("SLURM_STEP_TASKS_PER_NODE is not set, though {}", hint));
  auto localSize = tasksOnNode(perNodeName, *perNode, *node);
  if (!localSize)
    return localSize.error();
  info.localSize = *localSize;
  auto localRank = number(env, "SLURM_LOCALID", 0, kMaxRanks, hint);
  if (!localRank)
    return localRank.error();
  info.localRank = *localRank;
  if (const std::string *pmix = find(env, "PMIX_RANK"); pmix && *pmix != std::to_string(info.rank))
    return fail(fmt::format("PMIX_RANK is '{}' but SLURM_PROCID is {}: the two launchers disagree on this "
                            "task's rank",
                            pmix->substr(0, 40), info.rank));
  info.pmix = find(env, "PMIX_RANK") != nullptr;
  return info;
}

Expected<LaunchInfo> fromNetcParent(const Environment &env) {
  constexpr std::string_view hint = "a netc started with --gpus sets it for every rank it starts";
  LaunchInfo info;
  info.launcher = "netc";
  auto size = number(env, kSizeVariable, 1, kMaxRanks, hint);
  if (!size)
    return size.error();
  auto rank = number(env, kRankVariable, 0, *size - 1, hint);
  if (!rank)
    return rank.error();
  auto localSize = number(env, kLocalSizeVariable, 1, *size, hint);
  if (!localSize)
    return localSize.error();
  auto localRank = number(env, kLocalRankVariable, 0, *localSize - 1, hint);
  if (!localRank)
    return localRank.error();
  const std::string *id = find(env, kJobIdVariable);
  if (!id || id->empty())
    return fail(fmt::format("{} is not set, though {}", kJobIdVariable, hint));
  if (id->size() > kMaxJobIdLength)
    return fail(fmt::format("{} has {} characters, more than the {} a job id may have", kJobIdVariable,
                            id->size(), kMaxJobIdLength));
  info.size = *size;
  info.rank = *rank;
  info.localSize = *localSize;
  info.localRank = *localRank;
  info.jobId = *id;
  return info;
}

/// NETC_LAUNCHER and NETC_JOB_STATUS, when a netc started the job.
Status readLauncher(const Environment &env, LaunchInfo &info) {
  if (const std::string *text = find(env, kLauncherVariable)) {
    const size_t colon = text->find(':');
    int pid = 0;
    uint64_t start = 0;
    const char *end = text->data() + text->size();
    auto [pidEnd, pidError] =
        std::from_chars(text->data(), text->data() + std::min(colon, text->size()), pid);
    bool ok =
        colon != std::string::npos && pidError == std::errc() && pid > 0 && pidEnd == text->data() + colon;
    if (ok) {
      auto [startEnd, startError] = std::from_chars(text->data() + colon + 1, end, start);
      ok = startError == std::errc() && startEnd == end;
    }
    if (!ok)
      return fail(fmt::format("{} is '{}', not PID:START (a netc that starts a job sets it for every rank)",
                              kLauncherVariable, text->substr(0, 40)));
    info.launcherPid = pid;
    info.launcherStart = start;
  }
  if (const std::string *file = find(env, kStatusFileVariable)) {
    if (file->empty() || file->size() > 4096 || file->front() != '/')
      return fail(fmt::format("{} is '{}', not an absolute path (a netc that starts a job sets it)",
                              kStatusFileVariable, file->substr(0, 60)));
    info.statusFile = *file;
  }
  return Status::success();
}

Expected<LaunchInfo> withLauncher(Expected<LaunchInfo> info, const Environment &env) {
  if (!info)
    return info;
  if (Status s = readLauncher(env, *info); !s)
    return Error{s.message()};
  return info;
}

} // namespace

std::string relaunchPrefix(const LaunchInfo &info) {
  if (info.size <= 1 || info.launcherPid != 0)
    return {};
  if (info.launcher == "mpirun")
    return fmt::format("mpirun -np {} ", info.size);
  if (info.launcher == "srun")
    return fmt::format("srun --mpi=pmix -n {} ", info.size);
  return {};
}

std::string launcherIdentity() {
  return fmt::format("{}:{}", ::getpid(), processStartTime(::getpid()));
}

bool processGone(int pid, uint64_t start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d", pid);
  struct stat info {};
  if (::stat(path, &info) != 0)
    return errno == ENOENT;
  const uint64_t now = processStartTime(pid);
  return now != 0 && now != start;
}

uint64_t processStartTime(int pid) {
  // Plain system calls: a rank's watcher thread calls this until the process
  // exits, so it touches no iostream or locale that exit tears down.
  if (pid <= 0)
    return 0;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char text[1024];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0)
    return 0;
  text[n] = '\0';
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // the fields are counted from the last ')', state being field 3.
  const char *at = std::strrchr(text, ')');
  if (!at)
    return 0;
  ++at;
  for (int field = 3; field <= 22; ++field) {
    while (*at == ' ')
      ++at;
    const char *end = at;
    while (*end != ' ' && *end != '\0')
      ++end;
    if (end == at)
      return 0;
    if (field == 22) { // starttime
      uint64_t start = 0;
      auto [last, error] = std::from_chars(at, end, start);
      return error == std::errc() && last == end ? start : 0;
    }
    at = end;
  }
  return 0;
}

std::vector<std::string> localRankEnvironment(int rank, int ranks, const std::string &jobId) {
  return {fmt::format("{}={}", kRankVariable, rank), fmt::format("{}={}", kSizeVariable, ranks),
          fmt::format("{}={}", kLocalRankVariable, rank), fmt::format("{}={}", kLocalSizeVariable, ranks),
          fmt::format("{}={}", kJobIdVariable, jobId)};
}

namespace {

/// Where this process stands in its job, from its launcher's variables.
Expected<LaunchInfo> parseLaunchPlace(const Environment &env) {
  if (find(env, kRankVariable) || find(env, kSizeVariable)) {
    auto info = fromNetcParent(env);
    if (!info)
      return info;
    if (Status s = checkPlace(*info, fmt::format("{} and {}", kLocalRankVariable, kLocalSizeVariable)); !s)
      return Error{s.message()};
    return info;
  }
  if (find(env, "OMPI_COMM_WORLD_SIZE") || find(env, "OMPI_COMM_WORLD_RANK")) {
    auto info = fromOpenMpi(env);
    if (!info)
      return info;
    if (Status s = checkPlace(*info, "OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE"); !s)
      return Error{s.message()};
    return info;
  }
  // A task of a job step (srun): the step variables. SLURM_NTASKS alone is
  // also set in a batch script, which is one process.
  if (find(env, "SLURM_STEP_NUM_TASKS") && find(env, "SLURM_PROCID")) {
    auto info = fromSlurm(env);
    if (!info)
      return info;
    if (Status s = checkPlace(*info, "SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE"); !s)
      return Error{s.message()};
    return info;
  }
  return LaunchInfo{};
}

} // namespace

Expected<LaunchInfo> parseLaunchEnvironment(const Environment &env) {
  return withLauncher(parseLaunchPlace(env), env);
}

Environment processEnvironment() {
  Environment env;
  for (char **entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals != std::string_view::npos)
      env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return env;
}

std::vector<std::string> mpirunCommand(const LaunchRequest &request, const std::string &program,
                                       const std::vector<std::string> &arguments) {
  std::vector<std::string> command = {request.mpirun, "-np", std::to_string(request.ranks)};
  if (request.asRoot)
    command.push_back("--allow-run-as-root");
  if (request.ranks > request.cores)
    command.push_back("--oversubscribe");
  // Open MPI binds each of up to 2 ranks to one core: right for one thread
  // per rank, a bottleneck for several (and ignored when oversubscribed).
  if (request.threadsPerRank != 1)
    command.insert(command.end(), {"--bind-to", "none"});
  // Rank 0 reads nothing, and mpirun may run in a process group of its own
  // (see TrainCommand.cpp): it must not read the terminal.
  command.insert(command.end(), {"--stdin", "none"});
  command.push_back(program);
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

int physicalCores(const std::string &sysRoot) {
  namespace fs = std::filesystem;
  std::set<std::pair<std::string, std::string>> cores;
  std::error_code ec;
  const fs::path cpus = fs::path(sysRoot) / "devices/system/cpu";
  for (fs::directory_iterator it(cpus, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    std::ifstream package(it->path() / "topology/physical_package_id"), core(it->path() / "topology/core_id");
    std::string p, c;
    if (!(package >> p) || !(core >> c))
      continue;
    std::ifstream online(it->path() / "online");
    if (int up = 1; online >> up && up == 0)
      continue;
    cores.emplace(p, c);
  }
  if (!cores.empty())
    return static_cast<int>(cores.size());
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

} // namespace netc::comm
