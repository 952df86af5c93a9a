// ThreadPolicyTest.cpp -- the CPU backend's thread choices on a busy machine
// (runtime/cpu/ThreadPolicy.h) as pure functions of recorded cases: netc's
// OpenMP wait policy only where the user set none, the run header's words
// for each policy, the other runnable tasks read from /proc/loadavg lines
// (or set by NETC_OTHER_TASKS),
// the threads `--threads 0` takes beside them, each op's thread count
// from its measured calls, and the whole-step check that keeps or drops
// the sharing as the machine's load changes.
#include "runtime/cpu/ThreadPolicy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <vector>

namespace netc::runtime::cpu {
namespace {

TEST(ThreadPolicy, NetcSetsTheSpinBoundOnlyWhereTheUserSetNone) {
  EXPECT_EQ(chooseWaitPolicy(nullptr, nullptr).setSpinCount, kNetcSpinCount);
  EXPECT_EQ(chooseWaitPolicy("active", nullptr).setSpinCount, "");
  EXPECT_EQ(chooseWaitPolicy("PASSIVE", nullptr).setSpinCount, "");
  EXPECT_EQ(chooseWaitPolicy(nullptr, "0").setSpinCount, "");
  EXPECT_EQ(chooseWaitPolicy(nullptr, "100").setSpinCount, "");
  EXPECT_EQ(chooseWaitPolicy(nullptr, "300000").setSpinCount, "");
  EXPECT_EQ(chooseWaitPolicy("", nullptr).setSpinCount, ""); // set, if empty: the user's
}

TEST(ThreadPolicy, TheHeaderNamesThePolicyInEffect) {
  EXPECT_EQ(describeWaitPolicy(nullptr, std::string(kNetcSpinCount).c_str()),
            "idle threads spin 10000 then sleep (netc's default)");
  EXPECT_EQ(describeWaitPolicy(nullptr, "0"), "idle threads sleep at once (GOMP_SPINCOUNT)");
  EXPECT_EQ(describeWaitPolicy("active", "0"), "idle threads sleep at once (GOMP_SPINCOUNT)");
  EXPECT_EQ(describeWaitPolicy(nullptr, "20000"), "idle threads spin 20000 then sleep (GOMP_SPINCOUNT)");
  EXPECT_EQ(describeWaitPolicy("passive", nullptr), "idle threads sleep at once (OMP_WAIT_POLICY=passive)");
  EXPECT_EQ(describeWaitPolicy("ACTIVE", nullptr), "idle threads spin (OMP_WAIT_POLICY=active)");
  EXPECT_EQ(describeWaitPolicy(nullptr, nullptr), "idle threads spin 300000 then sleep (libgomp's default)");
  EXPECT_EQ(describeWaitPolicy("sometimes", nullptr),
            "idle threads spin 300000 then sleep (libgomp's default)");
  // GOMP_SPINCOUNT wins over OMP_WAIT_POLICY in libgomp; netc's own value beside a policy is the user's.
  EXPECT_EQ(describeWaitPolicy("passive", "100"), "idle threads spin 100 then sleep (GOMP_SPINCOUNT)");
}

TEST(ThreadPolicy, OtherRunnableTasksComeFromLoadavg) {
  EXPECT_EQ(otherRunnableTasks("0.00 0.01 0.05 1/112 4242\n", 1), 0); // only the reader
  EXPECT_EQ(otherRunnableTasks("5.02 4.87 4.10 3/712 12345\n", 1), 2);
  EXPECT_EQ(otherRunnableTasks("1.00 1.00 1.00 17/2000 1", 1), 16);
  // The reader and one of its OpenMP threads still spinning: neither is another task.
  EXPECT_EQ(otherRunnableTasks("2.12 1.81 2.24 2/77 25824", 2), 0);
  EXPECT_EQ(otherRunnableTasks("2.12 1.81 2.24 3/77 25824", 0), 2); // the reader counts at least itself
  EXPECT_EQ(otherRunnableTasks("2.12 1.81 2.24 1/77 25824", 3), 0); // counted at another moment
  EXPECT_EQ(otherRunnableTasks("", 1), 0);
  EXPECT_EQ(otherRunnableTasks("0.1 0.2 0.3", 1), 0);
  EXPECT_EQ(otherRunnableTasks("0.1 0.2 0.3 x/12 5", 1), 0);
  EXPECT_EQ(otherRunnableTasks("0.1 0.2 0.3 0/12 5", 1), 0);
  EXPECT_EQ(otherRunnableTasks("0.1 0.2 0.3 99999999999999/12 5", 1), 0); // out of range
}

TEST(ThreadPolicy, OtherTasksCanBeSetInsteadOfRead) {
  EXPECT_FALSE(parseOtherTasks(nullptr).count);
  EXPECT_EQ(parseOtherTasks(nullptr).error, "");
  EXPECT_FALSE(parseOtherTasks("").count); // set empty: as unset
  EXPECT_EQ(parseOtherTasks("").error, "");
  EXPECT_EQ(parseOtherTasks("0").count, 0);
  EXPECT_EQ(parseOtherTasks("3").count, 3);
  EXPECT_EQ(parseOtherTasks("1048576").count, kMaxOtherTasks);
  const std::string expected = "NETC_OTHER_TASKS must be a whole number from 0 to 1048576 (the other tasks "
                               "netc assumes are running), got '{}'; unset it to read /proc/loadavg";
  for (const char *bad : {"-1", "1048577", "2.5", "two", " 1", "1 ", "99999999999999999999"}) {
    const OtherTasksSetting setting = parseOtherTasks(bad);
    EXPECT_FALSE(setting.count) << bad;
    EXPECT_EQ(setting.error, fmt::format(fmt::runtime(expected), bad)) << bad;
  }
  // A hostile value is shown escaped and cut short.
  const std::string longValue(500, 'x');
  EXPECT_LT(parseOtherTasks(longValue.c_str()).error.size(), 250u);
  EXPECT_EQ(parseOtherTasks("\x1b[31m").error.find('\x1b'), std::string::npos);
  // Seeded mutants of valid counts: each is a count in range or a short message with no control byte.
  std::mt19937 rng(32);
  const std::string bytes = std::string("0123456789+-. xe") + char(0x1b) + char(0x80) + char(0xff);
  for (int i = 0; i < 2000; ++i) {
    std::string text = std::to_string(rng() % 2000000);
    for (int edits = 1 + int(rng() % 3); edits > 0; --edits) {
      const size_t at = rng() % (text.size() + 1);
      const char byte = bytes[rng() % bytes.size()];
      if (rng() % 2 && at < text.size())
        text[at] = byte;
      else
        text.insert(at, 1, byte);
    }
    const OtherTasksSetting setting = parseOtherTasks(text.c_str());
    if (setting.count) {
      EXPECT_TRUE(*setting.count >= 0 && *setting.count <= kMaxOtherTasks) << text;
      EXPECT_EQ(setting.error, "") << text;
    } else {
      ASSERT_NE(setting.error, "") << text; // never empty: the text is not
      EXPECT_LT(setting.error.size(), 250u) << text;
      for (char c : setting.error)
        EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << text;
    }
  }
}

TEST(ThreadPolicy, AllCoresMeansTheCoresLeftFree) {
  EXPECT_EQ(chooseThreadCount(0, 2, 0), 2); // an idle 2-core machine
  EXPECT_EQ(chooseThreadCount(0, 2, 1), 1); // one competing CPU-bound process
  EXPECT_EQ(chooseThreadCount(0, 2, 5), 1); // load 5 on 2 cores: still one thread
  EXPECT_EQ(chooseThreadCount(0, 16, 3), 13);
  EXPECT_EQ(chooseThreadCount(0, 1, 0), 1);
  EXPECT_EQ(chooseThreadCount(2, 2, 5), 2); // an explicit count is kept
  EXPECT_EQ(chooseThreadCount(0, 8, -1), 8);
}

TEST(OpThreads, TwoThreadsAreKeptOnlyWhereTheyAreClearlyFaster) {
  // Recorded on the 2-vCPU Sapphire Rapids VM (µs per call): a dense product
  // that scales, and an update and a sigmoid gradient that slow down.
  const std::vector<double> denseOne{131, 129, 133, 130}, denseTwo{70, 68, 90, 67};
  EXPECT_EQ(fasterThreadCount(denseOne, denseTwo, 2), 2);
  const std::vector<double> updateOne{63, 61, 64, 66}, updateTwo{206, 190, 71, 240};
  EXPECT_EQ(fasterThreadCount(updateOne, updateTwo, 2), 1);
  // A median, not a mean: one slow call (a burst of load) does not decide.
  const std::vector<double> oneBurst{100, 100, 100, 900}, twoSteady{60, 60, 60, 60};
  EXPECT_EQ(fasterThreadCount(oneBurst, twoSteady, 2), 2);
  const std::vector<double> oneSteady{60, 60, 60, 60}, twoBurst{40, 40, 900, 900};
  EXPECT_EQ(fasterThreadCount(oneSteady, twoBurst, 2), 1);
  // Within the margin (5%): one thread, which leaves the core to the machine.
  const std::vector<double> near{100, 100, 100, 100}, slightly{96, 96, 96, 96}, clearly{94, 94, 94, 94};
  EXPECT_EQ(fasterThreadCount(near, slightly, 4), 1);
  EXPECT_EQ(fasterThreadCount(near, clearly, 4), 4);
  // Nothing measured, or one thread to begin with.
  EXPECT_EQ(fasterThreadCount({}, clearly, 2), 1);
  EXPECT_EQ(fasterThreadCount(near, clearly, 1), 1);
}

/// Feeds `check` steps of `micros` each, one every `micros` of the clock
/// from `now` (seconds), until `until`; returns the clock.
double runSteps(ShareCheck &check, double now, double micros, double until) {
  while (now < until) {
    now += micros * 1e-6;
    check.record(micros, now);
  }
  return now;
}

TEST(ShareCheck, WholeStepsKeepTheSharingOnlyWhileItPays) {
  // Recorded on the 2-vCPU Sapphire Rapids VM, seed network at batch 128
  // (µs per step): idle, shared 1,433 and alone 1,927; beside a competing
  // process, shared 5,146 (the spinning thread and the other task take
  // turns) and alone 1,966.
  ShareCheck check;
  EXPECT_FALSE(check.measuring());
  EXPECT_FALSE(check.alone());
  check.start(0, true);
  ASSERT_TRUE(check.measuring());
  EXPECT_FALSE(check.alone()); // the shared window first
  double now = 0;
  // Each window: one untimed step, then at least kWindowSeconds and kWindowSteps.
  while (!check.alone())
    check.record(1433, now += 1433e-6);
  EXPECT_TRUE(check.measuring());
  EXPECT_NEAR(check.sharedMicros(), 1433, 1e-9);
  while (check.measuring())
    check.record(1927, now += 1927e-6);
  EXPECT_EQ(check.checks(), 1);
  EXPECT_FALSE(check.alone()); // idle: the ops keep both threads
  EXPECT_NEAR(check.aloneMicros(), 1927, 1e-9);
  EXPECT_GE(now, 2 * ShareCheck::kWindowSeconds);
  // No check again before the interval...
  now = runSteps(check, now, 1433, now + ShareCheck::kIntervalSeconds - 0.01);
  EXPECT_FALSE(check.measuring());
  EXPECT_EQ(check.checks(), 1);
  // ...then the machine is busy: the next check runs every op on one thread.
  now = runSteps(check, now, 1433, now + 0.02);
  ASSERT_TRUE(check.measuring());
  while (!check.alone())
    check.record(5146, now += 5146e-6);
  while (check.measuring())
    check.record(1966, now += 1966e-6);
  EXPECT_EQ(check.checks(), 2);
  EXPECT_TRUE(check.alone());
  EXPECT_TRUE(check.chosenAlone());
  // Idle again at the check after: shared again.
  now = runSteps(check, now, 1966, now + ShareCheck::kIntervalSeconds + 0.01);
  ASSERT_TRUE(check.measuring());
  EXPECT_FALSE(check.alone());
  while (!check.alone())
    check.record(1433, now += 1433e-6);
  // In the alone window, calls that are not steps keep the last choice.
  EXPECT_TRUE(check.chosenAlone());
  while (check.measuring())
    check.record(1927, now += 1927e-6);
  EXPECT_FALSE(check.alone());
  EXPECT_FALSE(check.chosenAlone());
  EXPECT_EQ(check.checks(), 3);
}

TEST(ShareCheck, WithinTheMarginTheCoreIsLeftToTheMachine) {
  ShareCheck check;
  check.start(0, true);
  double now = 0;
  while (!check.alone())
    check.record(970, now += 970e-6);
  while (check.measuring())
    check.record(1000, now += 1000e-6);
  EXPECT_TRUE(check.alone()); // 3% faster shared is not enough (kOpTuningMargin)
}

TEST(ShareCheck, LongStepsTakeTheFewestStepsAndALongerInterval) {
  // Steps of 2 s: a window is kWindowSteps timed steps (after an untimed one),
  // and the next check waits 20 windows' time, not 5 s.
  ShareCheck check;
  check.start(0, true);
  double now = 0;
  int steps = 0;
  while (check.measuring()) {
    check.record(2e6, now += 2);
    ++steps;
  }
  EXPECT_EQ(steps, 2 * (1 + ShareCheck::kWindowSteps));
  now = runSteps(check, now, 2e6, now + ShareCheck::kIntervalWindows * 2 * ShareCheck::kWindowSteps * 2 - 2);
  EXPECT_FALSE(check.measuring());
  now = runSteps(check, now, 2e6, now + 2);
  EXPECT_TRUE(check.measuring());
}

TEST(ShareCheck, NothingSharedNothingChecked) {
  ShareCheck check;
  check.start(0, false);
  check.record(100, 10);
  check.record(100, 1000);
  EXPECT_FALSE(check.measuring());
  EXPECT_FALSE(check.alone());
  EXPECT_EQ(check.checks(), 0);
}

} // namespace
} // namespace netc::runtime::cpu
