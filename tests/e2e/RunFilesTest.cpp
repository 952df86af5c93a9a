// RunFilesTest.cpp -- a user's run files are never lost or corrupted (issue
// 10, items 5-8 and 15): a folder that already holds a run is refused unless
// --resume continues it or --overwrite replaces it; outputs that are one file
// (directly or through a link) are refused before anything is written; write
// errors on metrics files and standard output are reported; temporaries of
// dead writers are removed and those of live ones kept; a run asked to stop
// saves a checkpoint that resumes bit-identically, mid-epoch included; and
// `netc train` interrupted by SIGINT says where it stopped and how to
// resume, exits with 130 and leaves no temporary behind.
#include "E2ESupport.h"

#include <cerrno>
#include <csignal>
#include <cstdio>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace netc::e2e {
namespace {

/// Every file name in `dir` that contains ".tmp-".
std::vector<std::string> temporariesIn(const std::string &dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().find(".tmp-") != std::string::npos)
      found.push_back(it->path().filename().string());
  return found;
}

/// A one-epoch run into `outDir`.
TrainSettings oneEpoch(const std::string &outDir) {
  TrainSettings s = quickSettings(outDir);
  s.epochs = 1;
  return s;
}

// ---- 5. a folder that holds a run ----

TEST(RunFolder, ARunIsNotReplacedWithoutOverwrite) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  TrainResult first = trainNetwork(seedNet(), oneEpoch(out));
  ASSERT_TRUE(first.ok()) << describe(first);
  const Bytes best = readBytes(out + "/best.safetensors");
  const std::string metrics = readText(out + "/metrics.jsonl");

  TrainSettings again = oneEpoch(out);
  again.seed = 99;
  TrainResult refused = trainNetwork(seedNet(), again);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error, "the output folder '" + out + "' already holds a run");
  EXPECT_CONTAINS(refused.error, "last.safetensors, best.safetensors, metrics.jsonl");
  EXPECT_CONTAINS(refused.error, "--resume " + out + "/last.safetensors");
  EXPECT_CONTAINS(refused.error, "--out");
  EXPECT_CONTAINS(refused.error, "--overwrite");
  EXPECT_EQ(readBytes(out + "/best.safetensors"), best);
  EXPECT_EQ(readText(out + "/metrics.jsonl"), metrics);

  // --overwrite replaces it: the metrics file holds the new run only.
  again.overwrite = true;
  TrainResult replaced = trainNetwork(seedNet(), again);
  ASSERT_TRUE(replaced.ok()) << describe(replaced);
  const auto lines = readJsonLines(out + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(readCheckpoint(out + "/last.safetensors").metadata.at("rng"),
            R"({"shuffle_seed": 99, "init_seed": 99})");
}

TEST(RunFolder, AnEmptyMetricsFileIsNoRun) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  std::filesystem::create_directories(out);
  writeText(out + "/metrics.jsonl", "");
  TrainResult r = trainNetwork(seedNet(), oneEpoch(out));
  EXPECT_TRUE(r.ok()) << describe(r);
}

TEST(RunFolder, ResumeContinuesItsOwnFolderAndTrimsLaterEpochs) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  ASSERT_TRUE(trainNetwork(seedNet(), oneEpoch(out)).ok());
  // A line for an epoch the checkpoint does not have (an older netc wrote
  // metrics before the checkpoint) is dropped on resume.
  const std::string metrics = out + "/metrics.jsonl";
  std::string text = readText(metrics);
  writeText(metrics, text + R"({"epoch":2,"event":"epoch","train_loss":9})" + "\n");
  TrainSettings s = quickSettings(out);
  s.resume = out + "/last.safetensors";
  TrainResult r = trainNetwork(seedNet(), s);
  ASSERT_TRUE(r.ok()) << describe(r);
  const auto lines = readJsonLines(metrics);
  ASSERT_EQ(lines.size(), 3u) << readText(metrics);
  EXPECT_EQ(lines[0]["epoch"], 1);
  EXPECT_EQ(lines[1]["epoch"], 2);
  EXPECT_NE(lines[1]["train_loss"], 9);
  EXPECT_EQ(lines[2]["event"], "end");

  // --overwrite with it would discard the run it continues.
  s.epochs = 3;
  s.overwrite = true;
  TrainResult refused = trainNetwork(seedNet(), s);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error, "--overwrite would discard the run in '" + out + "'");
}

// ---- 6. outputs that are one file ----

TEST(RunOutputs, MetricsThatIsAnotherOutputIsRefusedBeforeAnythingIsWritten) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  for (const char *name : {"last.safetensors", "best.safetensors", "metrics.jsonl", "./metrics.jsonl"}) {
    SCOPED_TRACE(name);
    TrainSettings s = oneEpoch(out);
    s.metricsFile = out + "/" + name;
    TrainResult r = trainNetwork(seedNet(), s);
    ASSERT_FALSE(r.ok());
    EXPECT_CONTAINS(r.error, "--metrics '" + s.metricsFile + "' is the run's");
    EXPECT_CONTAINS(r.error, "choose another --metrics file");
    EXPECT_FALSE(std::filesystem::exists(out)) << "the refused run created " << out;
  }
  // Through a symbolic link to the run's metrics file.
  std::filesystem::create_directories(out);
  writeText(out + "/metrics.jsonl", "");
  std::filesystem::create_symlink(out + "/metrics.jsonl", tmp.file("link.jsonl"));
  TrainSettings s = oneEpoch(out);
  s.metricsFile = tmp.file("link.jsonl");
  TrainResult r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "is the run's metrics file '" + out + "/metrics.jsonl'");
  // Another name in the run's folder, which the run creates, is fine.
  s = oneEpoch(tmp.file("fresh"));
  s.metricsFile = s.outDir + "/extra.jsonl";
  r = trainNetwork(seedNet(), s);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(readText(s.metricsFile), readText(s.outDir + "/metrics.jsonl"));
}

TEST(RunOutputs, InputsAreNotOutputs) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  ASSERT_TRUE(trainNetwork(seedNet(), oneEpoch(out)).ok());
  // --metrics naming a file that is not netc metrics (here a copy of the
  // network) is refused and the file left alone.
  const std::string net = tmp.file("copy.net");
  writeText(net, readText(seedNet()));
  TrainSettings s = oneEpoch(tmp.file("other"));
  s.metricsFile = net;
  TrainResult r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "--metrics '" + net + "' holds something other than netc metrics");
  EXPECT_EQ(readText(net), readText(seedNet()));
  // --metrics naming the checkpoint --resume reads.
  s.metricsFile = out + "/best.safetensors";
  s.resume = out + "/best.safetensors";
  s.epochs = 2;
  r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "--metrics '" + s.metricsFile + "' is the checkpoint --resume reads");
  // --init-from a checkpoint the new run would replace.
  TrainSettings init = oneEpoch(out);
  init.initFrom = out + "/last.safetensors";
  init.overwrite = true;
  r = trainNetwork(seedNet(), init);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "--init-from '" + init.initFrom + "' is '" + out +
                               "/last.safetensors', which the new run replaces");
  // A --metrics file holding another run's metrics needs --overwrite.
  TrainSettings extra = oneEpoch(tmp.file("third"));
  extra.metricsFile = out + "/../run/metrics.jsonl";
  r = trainNetwork(seedNet(), extra);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "already holds the metrics of a run");
}

// ---- 15. unwritable outputs leave no trace ----

TEST(RunOutputs, AnUnwritableMetricsPathCreatesNoRunFolder) {
  TempFolder tmp;
  TrainSettings s = oneEpoch(tmp.file("run"));
  s.metricsFile = "/proc/x/y";
  TrainResult r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "cannot write '/proc/x/y': the folder '/proc/x' does not exist");
  EXPECT_FALSE(std::filesystem::exists(s.outDir));
  s.metricsFile = tmp.dir();
  r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "cannot write '" + tmp.dir() + "': Is a directory");
  EXPECT_FALSE(std::filesystem::exists(s.outDir));
}

TEST(RunOutputs, AFolderRightUnderTheRootIsCheckedAgainstTheRoot) {
  // The nearest existing ancestor of /netc-e2e-PID/run is '/' itself (as for
  // `--out runs/x` with '/' as the working folder, a container's default).
  const std::string top = "/netc-e2e-" + std::to_string(::getpid());
  TrainSettings s = oneEpoch(top + "/run");
  TrainResult r = trainNetwork(seedNet(), s);
  const bool rootWritable = ::access("/", W_OK | X_OK) == 0;
  std::error_code ec;
  std::filesystem::remove_all(top, ec);
  if (rootWritable) {
    EXPECT_TRUE(r.ok()) << describe(r);
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_CONTAINS(r.error, "'/' is not writable");
  }
  EXPECT_EQ(r.error.find("Not a directory"), std::string::npos) << r.error;
}

// ---- 7. write errors ----

TEST(RunOutputs, AFullDiskForMetricsFailsTheRun) {
  if (!std::filesystem::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this machine";
  TempFolder tmp;
  TrainSettings s = oneEpoch(tmp.file("run"));
  s.metricsFile = "/dev/full";
  TrainResult r = trainNetwork(seedNet(), s);
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error, "cannot write to '/dev/full': No space left on device");
  // The checkpoint came first: it holds the epoch the metrics could not record.
  EXPECT_EQ(readCheckpoint(s.outDir + "/last.safetensors").metadata.at("epoch"), "1");
}

// ---- 8. temporaries ----

TEST(Temporaries, ThoseOfDeadWritersAreRemovedAndThoseOfLiveOnesKept) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  std::filesystem::create_directories(out);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string dead = "last.safetensors.tmp-" + std::to_string(child) + "-a1B2c3";
  const std::string live = "best.safetensors.tmp-1-d4E5f6"; // pid 1 is alive
  const std::string other = "notes.txt.tmp-" + std::to_string(child) + "-a1B2c3";
  for (const std::string &name : {dead, live, other})
    writeText(out + "/" + name, "partial");
  TrainResult r = trainNetwork(seedNet(), oneEpoch(out));
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_FALSE(std::filesystem::exists(out + "/" + dead));
  EXPECT_TRUE(std::filesystem::exists(out + "/" + live));
  EXPECT_TRUE(std::filesystem::exists(out + "/" + other)); // not a run file's
}

// ---- 8. a run asked to stop ----

/// Asks the run to stop after `steps` progress reports.
class StopAfter final : public TrainListener {
public:
  explicit StopAfter(int64_t steps) : left_(steps) {}
  void onProgress(const TrainProgress &) override { --left_; }
  bool stopRequested() override { return left_ <= 0; }

private:
  int64_t left_;
};

/// Resumes `s` (its `resume` set) to the end and expects the run that never
/// stopped, `straight` with result `whole`: the same tensors bit for bit, the
/// same second-epoch figures and step count.
void expectResumesAsStraight(const TrainSettings &s, const TrainSettings &straight,
                             const TrainResult &whole) {
  TrainResult resumed = trainNetwork(seedNet(), s);
  ASSERT_TRUE(resumed.ok()) << describe(resumed);
  EXPECT_EQ(compareTensors(readCheckpoint(straight.outDir + "/last.safetensors"),
                           readCheckpoint(s.outDir + "/last.safetensors")),
            "");
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.epochs[0].trainLoss, whole.epochs[1].trainLoss);
  EXPECT_EQ(resumed.epochs[0].trainAccuracy, whole.epochs[1].trainAccuracy);
  EXPECT_EQ(resumed.steps, whole.steps);
}

TEST(Interrupt, AStopMidEpochSavesACheckpointThatResumesBitIdentically) {
  TempFolder tmp;
  TrainSettings straight = quickSettings(tmp.file("straight"));
  TrainResult whole = trainNetwork(seedNet(), straight);
  ASSERT_TRUE(whole.ok()) << describe(whole);

  // 500 samples in batches of 32: 16 steps an epoch; stop after 20 steps,
  // 4 steps (128 samples) into epoch 2.
  TrainSettings s = quickSettings(tmp.file("stopped"));
  StopAfter stop(20);
  TrainResult stopped = trainNetwork(seedNet(), s, &stop);
  ASSERT_TRUE(stopped.ok()) << describe(stopped);
  ASSERT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.stoppedEpoch, 2);
  EXPECT_EQ(stopped.stoppedSample, 128);
  EXPECT_EQ(stopped.epochSamples, 500);
  EXPECT_EQ(stopped.steps, 20);
  EXPECT_EQ(stopped.checkpoint, s.outDir + "/last.safetensors");
  const Checkpoint saved = readCheckpoint(stopped.checkpoint);
  EXPECT_EQ(saved.metadata.at("epoch"), "1");
  EXPECT_EQ(saved.metadata.at("data_position"), R"({"epoch": 1, "sample": 128})");
  // The metrics record epoch 1 only, and no "end".
  EXPECT_EQ(readJsonLines(s.outDir + "/metrics.jsonl").size(), 1u);
  EXPECT_TRUE(temporariesIn(s.outDir).empty());

  s.resume = stopped.checkpoint;
  // The rest of epoch 2 is the same steps only with the same global batch
  // and order: another is refused, naming what the checkpoint recorded.
  TrainSettings other = s;
  other.batch = 50;
  TrainResult refused = trainNetwork(seedNet(), other);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error,
                  "stopped in the middle of epoch 2, which it continues only with the global batch "
                  "and order it had: pass --batch 32 without --no-shuffle");
  other = s;
  other.shuffle = false;
  refused = trainNetwork(seedNet(), other);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error, "pass --batch 32 without --no-shuffle");

  expectResumesAsStraight(s, straight, whole);
}

TEST(Interrupt, AnAccumulatingRunStoppedMidEpochResumesBitIdentically) {
  TempFolder tmp;
  // --batch 16 --accumulate 2: optimizer steps of 32 samples, 16 an epoch.
  auto accumulating = [&](const std::string &name) {
    TrainSettings s = quickSettings(tmp.file(name));
    s.batch = 16;
    s.accumulate = 2;
    return s;
  };
  TrainSettings straight = accumulating("straight");
  TrainResult whole = trainNetwork(seedNet(), straight);
  ASSERT_TRUE(whole.ok()) << describe(whole);
  EXPECT_EQ(whole.steps, 2 * 16);

  TrainSettings s = accumulating("stopped");
  StopAfter stop(20); // 4 optimizer steps (128 samples) into epoch 2
  TrainResult stopped = trainNetwork(seedNet(), s, &stop);
  ASSERT_TRUE(stopped.ok()) << describe(stopped);
  ASSERT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.stoppedSample, 128);
  EXPECT_EQ(stopped.steps, 20);

  s.resume = stopped.checkpoint;
  TrainSettings other = s;
  other.accumulate = 1;
  TrainResult refused = trainNetwork(seedNet(), other);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.error, "pass --batch 16 --accumulate 2 without --no-shuffle");

  expectResumesAsStraight(s, straight, whole);
}

// ---- 8. netc train and SIGINT ----

#ifdef NETC_BINARY
struct Child {
  pid_t pid = -1;
  std::FILE *stdoutPipe = nullptr;
};

/// Starts `netc train ...` with stdout on a pipe and stderr into `errPath`.
Child startNetc(const std::vector<std::string> &args, const std::string &errPath) {
  int fds[2];
  if (pipe(fds) != 0)
    return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    int err = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char *> argv;
    std::string binary = NETC_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string &a : copy)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fdopen(fds[0], "r")};
}

/// Reads lines from the child's stdout until one starts with `prefix`.
bool waitForLine(std::FILE *out, const std::string &prefix) {
  char line[4096];
  while (std::fgets(line, sizeof line, out))
    if (std::string(line).starts_with(prefix))
      return true;
  return false;
}

int finish(Child &child) {
  char buffer[4096];
  while (std::fread(buffer, 1, sizeof buffer, child.stdoutPipe) > 0) {
  }
  std::fclose(child.stdoutPipe);
  int status = 0;
  waitpid(child.pid, &status, 0);
  // Killed by a signal (no handler, or a crash): minus the signal, which no
  // test expects; netc's own handling exits with 128 + the signal.
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::vector<std::string> trainArgs(const std::string &out) {
  // Far more epochs than the test lets run: it ends only by the signal. No
  // estimate line in the metrics (quickSettings says why).
  return {"train",           seedNet(), "--data", sliceDir(), "--epochs",     "100000",
          "--batch",         "1",       "--lr",   "0.1",      "--momentum",   "0.9",
          "--init-diameter", "1",       "--seed", "5",        "--threads",    "1",
          "--progress",      "none",    "--out",  out,        "--cost-model", "none"};
}

TEST(Interrupt, CtrlCStopsNetcTrainCleanlyAndSaysHowToResume) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  Child child = startNetc(trainArgs(out), tmp.file("err.txt"));
  ASSERT_GT(child.pid, 0);
  // The setup lines come once training is about to start (and Ctrl-C is handled).
  ASSERT_TRUE(waitForLine(child.stdoutPipe, "training 100000 epochs")) << readText(tmp.file("err.txt"));
  ASSERT_EQ(kill(child.pid, SIGINT), 0);
  EXPECT_EQ(finish(child), 130);
  const std::string err = readText(tmp.file("err.txt"));
  EXPECT_CONTAINS(err, "netc: stopping: saving the run where it stands (Ctrl-C again to stop at once)");
  EXPECT_CONTAINS(err, "netc: interrupted in epoch 1 after ");
  EXPECT_CONTAINS(err, "; saved " + out + "/last.safetensors\n");
  const std::string prefix = "netc: continue with: ";
  const size_t at = err.find(prefix);
  ASSERT_NE(at, std::string::npos) << err;
  std::string command = err.substr(at + prefix.size(), err.find('\n', at) - at - prefix.size());
  EXPECT_TRUE(command.ends_with(" --resume " + out + "/last.safetensors")) << command;
  EXPECT_TRUE(temporariesIn(out).empty());
  EXPECT_TRUE(std::filesystem::exists(out + "/last.safetensors"));

  // The printed command resumes the run (here only to the end of epoch 1).
  const std::string epochs = " --epochs 100000 ";
  ASSERT_NE(command.find(epochs), std::string::npos) << command;
  command.replace(command.find(epochs), epochs.size(), " --epochs 1 ");
  ASSERT_EQ(std::system((command + " > " + tmp.file("resume.txt") + " 2>&1").c_str()), 0)
      << readText(tmp.file("resume.txt"));
  EXPECT_CONTAINS(readText(tmp.file("resume.txt")), "resumed from " + out + "/last.safetensors at epoch 0");
  const auto lines = readJsonLines(out + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["epoch"], 1);
  EXPECT_TRUE(temporariesIn(out).empty());
}

TEST(Interrupt, ASecondCtrlCStopsAtOnce) {
  TempFolder tmp;
  const std::string out = tmp.file("run");
  Child child = startNetc(trainArgs(out), tmp.file("err.txt"));
  ASSERT_GT(child.pid, 0);
  ASSERT_TRUE(waitForLine(child.stdoutPipe, "training 100000 epochs")) << readText(tmp.file("err.txt"));
  ASSERT_EQ(kill(child.pid, SIGINT), 0);
  ASSERT_EQ(kill(child.pid, SIGINT), 0);
  // Whether the second signal came before the first was acted on (netc
  // stops at once) or after (the first had already stopped it cleanly), netc
  // exits by itself with 130, says which, and leaves no temporary.
  EXPECT_EQ(finish(child), 130);
  const std::string err = readText(tmp.file("err.txt"));
  EXPECT_TRUE(err.find("netc: interrupted again: stopped at once, without saving") != std::string::npos ||
              err.find("netc: interrupted in epoch 1 after ") != std::string::npos)
      << err;
  EXPECT_TRUE(temporariesIn(out).empty());
}
#endif

} // namespace
} // namespace netc::e2e
