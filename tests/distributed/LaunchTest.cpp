// LaunchTest.cpp -- where a process stands in a job (runtime/comm/Launch.h):
// the environments Open MPI and srun give each rank (recorded ones, in
// tests/fixtures/launch-env), malformed ones refused naming the variable,
// the mpirun command of `--ranks N`, and the core count from a fake sysfs.
#include "runtime/comm/Launch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace netc::comm {
namespace {

namespace fs = std::filesystem;

Environment readEnv(const std::string &name) {
  std::ifstream in(fs::path(NETC_SOURCE_DIR) / "tests/fixtures/launch-env" / name);
  EXPECT_TRUE(in) << name;
  Environment env;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    const size_t equals = line.find('=');
    env[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return env;
}

LaunchInfo parsed(const Environment &env) {
  auto info = parseLaunchEnvironment(env);
  EXPECT_TRUE(info) << info.message();
  return info ? *info : LaunchInfo{};
}

std::string refusal(const Environment &env) {
  auto info = parseLaunchEnvironment(env);
  EXPECT_FALSE(info) << "accepted";
  return info ? std::string() : info.message();
}

/// Rank `rank` of `size` (local `localRank` of `localSize`) as `launcher` started it.
LaunchInfo place(int rank, int size, int localRank, int localSize, const std::string &launcher) {
  LaunchInfo info;
  info.rank = rank;
  info.size = size;
  info.localRank = localRank;
  info.localSize = localSize;
  info.launcher = launcher;
  return info;
}

/// `info` as srun started it with PMIx (PMIX_RANK set) or without.
LaunchInfo viaPmix(LaunchInfo info, bool pmix) {
  info.pmix = pmix;
  return info;
}

TEST(Launch, OneProcessWithoutALauncher) {
  EXPECT_EQ(parsed({{"PATH", "/usr/bin"}, {"HOME", "/root"}}), LaunchInfo{});
}

TEST(Launch, OpenMpiRecordedRanks) {
  for (int r = 0; r < 3; ++r) {
    const LaunchInfo info = parsed(readEnv("openmpi-3ranks-rank" + std::to_string(r) + ".env"));
    EXPECT_EQ(info, place(r, 3, r, 3, "mpirun")) << "rank " << r;
  }
}

TEST(Launch, SlurmStepTasks) {
  EXPECT_EQ(parsed(readEnv("slurm-srun-pmix-2x2-rank3.env")), viaPmix(place(3, 4, 1, 2, "srun"), true));
  EXPECT_EQ(parsed(readEnv("slurm-srun-uneven-rank4.env")),
            viaPmix(place(4, 5, 1, 2, "srun"), readEnv("slurm-srun-uneven-rank4.env").contains("PMIX_RANK")));
}

TEST(Launch, SrunWithoutPmixIsSaid) {
  // Debian's Open MPI joins a Slurm job only through PMIx: a task srun
  // started without it (no PMIX_RANK) is marked, so that MPI's failure to
  // join can say `srun --mpi=pmix`.
  Environment env = readEnv("slurm-srun-pmix-2x2-rank3.env");
  env.erase("PMIX_RANK");
  EXPECT_FALSE(parsed(env).pmix);
}

TEST(Launch, TheNetcThatLaunchedTheJob) {
  // `--ranks N` through mpirun, `--gpus N` itself: every rank learns the
  // netc it must not outlive and the file its rank 0 reports into.
  Environment env = readEnv("openmpi-3ranks-rank1.env");
  env[kLauncherVariable] = "4242:123456789";
  env[kStatusFileVariable] = "/tmp/netc-job-abc123";
  const LaunchInfo info = parsed(env);
  EXPECT_EQ(info.launcherPid, 4242);
  EXPECT_EQ(info.launcherStart, 123456789u);
  EXPECT_EQ(info.statusFile, "/tmp/netc-job-abc123");
  EXPECT_EQ(info.rank, 1);
  // This process's own identity reads back (it is alive, so its start time is known).
  Environment self = {{kLauncherVariable, launcherIdentity()}};
  const LaunchInfo mine = parsed(self);
  EXPECT_EQ(mine.launcherPid, ::getpid());
  EXPECT_EQ(mine.launcherStart, processStartTime(::getpid()));
  EXPECT_GT(mine.launcherStart, 0u);
  EXPECT_EQ(processStartTime(0), 0u);
  // A rank stops when its launcher is gone: this process is not; a pid no
  // process has, or this pid with another start time (reused), is.
  EXPECT_FALSE(processGone(::getpid(), mine.launcherStart));
  EXPECT_TRUE(processGone(::getpid(), mine.launcherStart + 1));
  EXPECT_TRUE(processGone(1 << 30, 5));
}

TEST(Launch, TheCommandThatContinuesARunStartsItsRanksAgain) {
  // Continued as it was started: under the user's mpirun or srun with its
  // ranks; a netc launcher's own arguments already hold --ranks or --gpus.
  EXPECT_EQ(relaunchPrefix(place(0, 2, 0, 2, "mpirun")), "mpirun -np 2 ");
  EXPECT_EQ(relaunchPrefix(parsed(readEnv("slurm-srun-pmix-2x2-rank3.env"))), "srun --mpi=pmix -n 4 ");
  LaunchInfo ours = place(0, 2, 0, 2, "mpirun");
  ours.launcherPid = 4242;
  EXPECT_EQ(relaunchPrefix(ours), "");
  EXPECT_EQ(relaunchPrefix(LaunchInfo{}), "");
  EXPECT_EQ(relaunchPrefix(place(0, 2, 0, 2, "netc")), "");
}

TEST(Launch, MalformedLauncherVariablesAreNamed) {
  for (const char *value : {"", "abc", "42", "42:", ":7", "-1:5", "42:5x", "99999999999999999999:1"}) {
    Environment env = {{kLauncherVariable, value}};
    EXPECT_NE(refusal(env).find("NETC_LAUNCHER is '"), std::string::npos) << value;
  }
  for (const char *value : {"", "relative/path"}) {
    Environment env = {{kStatusFileVariable, value}};
    EXPECT_NE(refusal(env).find("NETC_JOB_STATUS is '"), std::string::npos) << value;
  }
}

TEST(Launch, ASlurmBatchScriptIsOneProcess) {
  // SLURM_NTASKS=4 and SLURM_PROCID=0, but no job step: the script itself.
  EXPECT_EQ(parsed(readEnv("slurm-batch-script.env")), LaunchInfo{});
}

TEST(Launch, OpenMpiWinsOverTheSlurmAllocationItRunsIn) {
  Environment env = readEnv("slurm-srun-pmix-2x2-rank3.env");
  for (const auto &[key, value] : readEnv("openmpi-3ranks-rank1.env"))
    env[key] = value;
  EXPECT_EQ(parsed(env), place(1, 3, 1, 3, "mpirun"));
}

TEST(Launch, MalformedOpenMpiVariablesAreNamed) {
  const Environment good = readEnv("openmpi-3ranks-rank1.env");
  auto with = [&](const std::string &key, const std::string &value) {
    Environment env = good;
    env[key] = value;
    return env;
  };
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_RANK", "3"))
                .find("OMPI_COMM_WORLD_RANK is '3', not a number from 0 to 2"),
            std::string::npos);
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_SIZE", "two")).find("OMPI_COMM_WORLD_SIZE is 'two'"),
            std::string::npos);
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_SIZE", "99999999999")).find("not a number from 1 to 1048576"),
            std::string::npos);
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_RANK", "-1")).find("OMPI_COMM_WORLD_RANK is '-1'"),
            std::string::npos);
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_RANK", " 1")).find("OMPI_COMM_WORLD_RANK is ' 1'"),
            std::string::npos);
  EXPECT_NE(refusal(with("OMPI_COMM_WORLD_LOCAL_SIZE", "4")).find("OMPI_COMM_WORLD_LOCAL_SIZE is '4'"),
            std::string::npos);
  Environment missing = good;
  missing.erase("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_NE(refusal(missing).find("OMPI_COMM_WORLD_LOCAL_RANK is not set, though Open MPI's mpirun sets it"),
            std::string::npos);
}

TEST(Launch, MalformedSlurmVariablesAreNamed) {
  const Environment good = readEnv("slurm-srun-pmix-2x2-rank3.env");
  auto with = [&](const std::string &key, const std::string &value) {
    Environment env = good;
    env[key] = value;
    return env;
  };
  EXPECT_NE(refusal(with("PMIX_RANK", "2")).find("PMIX_RANK is '2' but SLURM_PROCID is 3"),
            std::string::npos);
  EXPECT_NE(refusal(with("SLURM_STEP_TASKS_PER_NODE", "2(x")).find("not srun's list of tasks per node"),
            std::string::npos);
  EXPECT_NE(
      refusal(with("SLURM_STEP_TASKS_PER_NODE", "2(x1)")).find("lists 1 node(s), but SLURM_NODEID is 1"),
      std::string::npos);
  EXPECT_NE(refusal(with("SLURM_STEP_TASKS_PER_NODE", "0,2")).find("not srun's list"), std::string::npos);
  EXPECT_NE(refusal(with("SLURM_LOCALID", "2")).find("do not fit together"), std::string::npos);
  EXPECT_NE(refusal(with("SLURM_PROCID", "4")).find("SLURM_PROCID is '4', not a number from 0 to 3"),
            std::string::npos);
  Environment missing = good;
  missing.erase("SLURM_NODEID");
  EXPECT_NE(refusal(missing).find("SLURM_NODEID is not set, though srun sets it"), std::string::npos);
}

TEST(Launch, MpirunCommandOfRanks) {
  LaunchRequest request;
  request.ranks = 2;
  request.cores = 2;
  request.mpirun = "/usr/bin/mpirun";
  EXPECT_EQ(mpirunCommand(request, "/opt/netc", {"train", "a.net", "--ranks", "2"}),
            (std::vector<std::string>{"/usr/bin/mpirun", "-np", "2", "--stdin", "none", "/opt/netc", "train",
                                      "a.net", "--ranks", "2"}));
  request.asRoot = true;
  request.ranks = 4;
  request.threadsPerRank = 2;
  EXPECT_EQ(mpirunCommand(request, "netc", {"bench"}),
            (std::vector<std::string>{"/usr/bin/mpirun", "-np", "4", "--allow-run-as-root", "--oversubscribe",
                                      "--bind-to", "none", "--stdin", "none", "netc", "bench"}));
}

TEST(Launch, PhysicalCoresCountDistinctCoresOfOnlineCpus) {
  const fs::path root = fs::path(::testing::TempDir()) / "netc-fake-sys";
  fs::remove_all(root);
  // 2 packages x 2 cores x 2 threads; cpu7 offline.
  for (int cpu = 0; cpu < 8; ++cpu) {
    const fs::path topology = root / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(topology);
    std::ofstream(topology / "physical_package_id") << cpu / 4 << "\n";
    std::ofstream(topology / "core_id") << (cpu / 2) % 2 << "\n";
  }
  std::ofstream(root / "devices/system/cpu/cpu7/online") << "0\n";
  fs::create_directories(root / "devices/system/cpu/cpufreq"); // not a cpu
  EXPECT_EQ(physicalCores(root.string()), 4);
  // Without a topology: the online processors.
  EXPECT_GE(physicalCores((root / "nowhere").string()), 1);
}

} // namespace
} // namespace netc::comm
