// LocalJobTest.cpp -- netc's own launcher of one rank per GPU
// (runtime/comm/LocalJob.h) on the CPU: the variables a netc parent gives
// each rank and their parse (malformed ones refused, naming the variable),
// and real jobs of /bin/sh children with a fake device count -- each rank
// finds its place and the job's id in its environment, a job larger than
// the devices is refused before anything starts, a failing rank ends the
// others and is named, a forwarded Ctrl-C reaches every rank (and a stop it
// asked for is not a failure, one after it still is).
#include "runtime/comm/LocalJob.h"
#include "runtime/comm/Launch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

namespace netc::comm {
namespace {

namespace fs = std::filesystem;

/// A 256-hex-digit id, as an NCCL unique id's text.
std::string fakeId() {
  std::string id;
  for (int i = 0; i < 256; ++i)
    id += "0123456789abcdef"[(i * 7 + 3) % 16];
  return id;
}

Environment environmentOf(const std::vector<std::string> &assignments) {
  Environment env;
  for (const std::string &a : assignments)
    env[a.substr(0, a.find('='))] = a.substr(a.find('=') + 1);
  return env;
}

TEST(LocalJob, EachRanksVariablesParseBackToItsPlace) {
  for (int r = 0; r < 4; ++r) {
    auto info = parseLaunchEnvironment(environmentOf(localRankEnvironment(r, 4, fakeId())));
    ASSERT_TRUE(info) << info.message();
    EXPECT_EQ(*info, (LaunchInfo{r, 4, r, 4, "netc", fakeId()}));
  }
}

TEST(LocalJob, MalformedVariablesAreNamed) {
  auto refusal = [](const std::string &name, const std::string &value) {
    Environment env = environmentOf(localRankEnvironment(1, 2, fakeId()));
    if (value == "<unset>")
      env.erase(name);
    else
      env[name] = value;
    auto info = parseLaunchEnvironment(env);
    EXPECT_FALSE(info) << name << "=" << value << " accepted";
    return info ? std::string() : info.message();
  };
  EXPECT_NE(refusal("NETC_RANK", "2").find("NETC_RANK is '2', not a number from 0 to 1"), std::string::npos);
  EXPECT_NE(refusal("NETC_SIZE", "two").find("NETC_SIZE is 'two'"), std::string::npos);
  EXPECT_NE(refusal("NETC_LOCAL_SIZE", "3").find("NETC_LOCAL_SIZE is '3', not a number from 1 to 2"),
            std::string::npos);
  EXPECT_NE(refusal("NETC_LOCAL_RANK", "<unset>")
                .find("NETC_LOCAL_RANK is not set, though a netc started with "
                      "--gpus sets it"),
            std::string::npos);
  EXPECT_NE(refusal("NETC_NCCL_ID", "").find("NETC_NCCL_ID is not set"), std::string::npos);
  EXPECT_NE(refusal("NETC_NCCL_ID", std::string(5000, 'a')).find("NETC_NCCL_ID has 5000 characters"),
            std::string::npos);
}

TEST(LocalJob, NetcsVariablesWinOverAnOuterLauncher) {
  Environment env = environmentOf(localRankEnvironment(1, 2, fakeId()));
  env["SLURM_STEP_NUM_TASKS"] = "8";
  env["SLURM_PROCID"] = "5";
  auto info = parseLaunchEnvironment(env);
  ASSERT_TRUE(info) << info.message();
  EXPECT_EQ(info->launcher, "netc");
  EXPECT_EQ(info->rank, 1);
}

/// A folder of its own for one test's children to write into.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("netc-localjob-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

LocalJobRequest shell(const std::string &script, int ranks) {
  LocalJobRequest job;
  job.program = "/bin/sh";
  job.arguments = {"-c", script};
  job.ranks = ranks;
  job.jobId = fakeId();
  return job;
}

TEST(LocalJob, ChildrenGetTheirRankAndTheJobsId) {
  Scratch scratch;
  // Each child writes its netc variables; the test parses them back.
  LocalJobRequest job = shell("env | grep '^NETC_' > \"$0/rank$NETC_RANK\"", 3);
  job.arguments.push_back(scratch.dir.string());
  job.devices = 4; // a fake machine with four GPUs
  const LocalJobResult result = runLocalJob(job);
  ASSERT_EQ(result.status, 0) << result.failure << result.startError;
  for (int r = 0; r < 3; ++r) {
    std::ifstream in(scratch.dir / ("rank" + std::to_string(r)));
    ASSERT_TRUE(in) << "rank " << r << " wrote nothing";
    Environment env;
    for (std::string line; std::getline(in, line);)
      env[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
    auto info = parseLaunchEnvironment(env);
    ASSERT_TRUE(info) << info.message();
    EXPECT_EQ(*info, (LaunchInfo{r, 3, r, 3, "netc", fakeId()})) << "rank " << r;
  }
}

TEST(LocalJob, MoreRanksThanDevicesIsRefusedBeforeAnythingStarts) {
  Scratch scratch;
  LocalJobRequest job = shell("touch \"$0/started$NETC_RANK\"", 3);
  job.arguments.push_back(scratch.dir.string());
  job.devices = 2;
  LocalJobResult result = runLocalJob(job);
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.startError,
            "--gpus 3 runs rank r on GPU r, which needs 3 GPUs, but this machine has 2: use "
            "--gpus 2 or fewer");
  EXPECT_TRUE(fs::is_empty(scratch.dir));
  job.ranks = 2;
  job.firstDevice = 1; // --device cuda:1
  result = runLocalJob(job);
  EXPECT_EQ(result.startError, "--gpus 2 runs rank r on GPU 1 + r, which needs 3 GPUs, but this machine has "
                               "2: use --gpus 1 or fewer");
  job.devices = 0;
  EXPECT_EQ(runLocalJob(job).startError,
            "--gpus 2 runs rank r on GPU 1 + r, which needs 3 GPUs, but this machine has 0");
}

TEST(LocalJob, AFailingRankEndsTheOthersAndIsNamed) {
  Scratch scratch;
  // Rank 1 fails once rank 0 runs; rank 0 runs until a signal ends it.
  LocalJobRequest job =
      shell("if [ \"$NETC_RANK\" = 1 ]; then while [ ! -e \"$0/ready0\" ]; do sleep 0.05; done; "
            "exit 3; fi; trap 'touch \"$0/terminated0\"; exit 143' TERM; touch \"$0/ready0\"; "
            "while :; do sleep 0.05; done",
            2);
  job.arguments.push_back(scratch.dir.string());
  const LocalJobResult result = runLocalJob(job);
  EXPECT_EQ(result.status, 3);
  EXPECT_NE(result.failure.find("rank 1 of 2 (pid "), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find(") exited with status 3"), std::string::npos) << result.failure;
  EXPECT_TRUE(fs::exists(scratch.dir / "terminated0")) << "rank 0 was not sent SIGTERM";
}

TEST(LocalJob, ARankKilledBySignalIsNamed) {
  LocalJobRequest job = shell("if [ \"$NETC_RANK\" = 0 ]; then kill -KILL $$; fi; exec sleep 60", 2);
  const LocalJobResult result = runLocalJob(job);
  EXPECT_EQ(result.status, 128 + SIGKILL);
  EXPECT_NE(result.failure.find("rank 0 of 2"), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find("was killed by signal 9"), std::string::npos) << result.failure;
}

/// A two-rank job whose ranks wait for SIGUSR1, note it ("stoppedR") and
/// exit with the status `rank0` or `rank1` says; the test presses Ctrl-C
/// once both run.
LocalJobResult stoppedByCtrlC(const Scratch &scratch, int rank0, int rank1) {
  LocalJobRequest job = shell("code=$1; [ \"$NETC_RANK\" = 1 ] && code=$2; "
                              "trap 'touch \"$0/stopped$NETC_RANK\"; exit '$code USR1; "
                              "touch \"$0/ready$NETC_RANK\"; while :; do sleep 0.05; done",
                              2);
  job.arguments = {"-c", job.arguments[1], scratch.dir.string(), std::to_string(rank0),
                   std::to_string(rank1)};
  std::atomic<int> interrupts{0};
  job.interrupts = &interrupts;
  std::thread pressCtrlC([&] {
    for (int i = 0; i < 2000 && !(fs::exists(scratch.dir / "ready0") && fs::exists(scratch.dir / "ready1"));
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    interrupts = 1;
  });
  LocalJobResult result = runLocalJob(job);
  pressCtrlC.join();
  return result;
}

TEST(LocalJob, ACtrlCIsForwardedToEveryRankAsSigusr1) {
  Scratch scratch;
  const LocalJobResult result = stoppedByCtrlC(scratch, 0, 0); // a clean stop
  EXPECT_EQ(result.status, 0) << result.failure;
  EXPECT_TRUE(fs::exists(scratch.dir / "stopped0"));
  EXPECT_TRUE(fs::exists(scratch.dir / "stopped1"));
}

TEST(LocalJob, RanksStoppedByCtrlCEndLikeACtrlCdProcess) {
  Scratch scratch;
  // Rank 0 reports the interruption (130), the others end cleanly.
  const LocalJobResult result = stoppedByCtrlC(scratch, 130, 0);
  EXPECT_EQ(result.status, 130);
  EXPECT_EQ(result.failure, "");
}

TEST(LocalJob, AFailureAfterCtrlCIsStillNamed) {
  Scratch scratch;
  const LocalJobResult result = stoppedByCtrlC(scratch, 0, 3);
  EXPECT_EQ(result.status, 3);
  EXPECT_NE(result.failure.find("rank 1 of 2 (pid "), std::string::npos) << result.failure;
  EXPECT_NE(result.failure.find("exited with status 3"), std::string::npos) << result.failure;
}

TEST(LocalJob, ASecondCtrlCEndsRanksThatDoNotStop) {
  // Ranks that ignore the clean stop (a hung step, a slow save): the second
  // Ctrl-C reaches them as SIGINT and ends them, as it would a single process.
  Scratch scratch;
  LocalJobRequest job = shell("trap '' USR1; touch \"$0/ready$NETC_RANK\"; while :; do sleep 0.05; done", 2);
  job.arguments = {"-c", job.arguments[1], scratch.dir.string()};
  std::atomic<int> interrupts{0};
  job.interrupts = &interrupts;
  std::thread press([&] {
    for (int i = 0; i < 2000 && !(fs::exists(scratch.dir / "ready0") && fs::exists(scratch.dir / "ready1"));
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    interrupts = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    interrupts = 2;
  });
  const LocalJobResult result = runLocalJob(job);
  press.join();
  EXPECT_EQ(result.status, 130) << result.failure;
  EXPECT_EQ(result.failure, "");
}

TEST(LocalJob, ATerminationOfTheParentIsACleanStop) {
  // SIGTERM or SIGHUP to the netc that started the job: SIGUSR1 to every rank.
  Scratch scratch;
  LocalJobRequest job = shell("trap 'touch \"$0/stopped$NETC_RANK\"; exit 0' USR1; "
                              "touch \"$0/ready$NETC_RANK\"; while :; do sleep 0.05; done",
                              2);
  job.arguments = {"-c", job.arguments[1], scratch.dir.string()};
  std::atomic<int> terminations{0};
  job.terminations = &terminations;
  std::thread terminate([&] {
    for (int i = 0; i < 2000 && !(fs::exists(scratch.dir / "ready0") && fs::exists(scratch.dir / "ready1"));
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    terminations = 1;
  });
  const LocalJobResult result = runLocalJob(job);
  terminate.join();
  EXPECT_EQ(result.status, 0) << result.failure;
  EXPECT_TRUE(fs::exists(scratch.dir / "stopped0"));
  EXPECT_TRUE(fs::exists(scratch.dir / "stopped1"));
}

TEST(LocalJob, AProgramThatCannotRunFailsEveryRank) {
  LocalJobRequest job;
  job.program = "/nonexistent/netc";
  job.ranks = 2;
  job.jobId = fakeId();
  const LocalJobResult result = runLocalJob(job);
  EXPECT_EQ(result.status, 127);
}

} // namespace
} // namespace netc::comm
