// ThreadPolicy.h -- how the CPU backend's threads behave on a machine that
// is not idle: how long an idle OpenMP thread spins before it sleeps (the
// wait policy, which libgomp reads from the environment once, when it is
// loaded), how many threads `--threads 0` takes when other tasks are
// running, and which ops share the threads (each op's first calls are timed
// on one thread and on all). All are pure functions of what they read, tested on recorded
// cases (tests/unit/ThreadPolicyTest.cpp); the command line applies the wait
// policy before libgomp starts (tools/netc/Main.cpp), and the run header
// says what was chosen.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace netc::runtime::cpu {

/// The spin bound netc gives libgomp when the user sets neither
/// OMP_WAIT_POLICY nor GOMP_SPINCOUNT: an idle thread spins this many
/// iterations before it sleeps. libgomp's own default, 300,000 iterations
/// (milliseconds), keeps idle threads on the cores, where a busy machine's
/// other tasks need them: measured on the seed network with 2 threads and
/// one competing process, 0 trains 5.2x faster than the default, 100 4.9x,
/// 1,000 3.1x, and on an idle machine 0 costs 9% (docs/performance.md).
inline constexpr std::string_view kNetcSpinCount = "0";

/// What to do about the OpenMP wait policy, given the environment's
/// OMP_WAIT_POLICY and GOMP_SPINCOUNT (null: unset).
struct WaitPolicyChoice {
  /// Set GOMP_SPINCOUNT to this before libgomp starts (empty: leave the
  /// environment alone, the user chose).
  std::string setSpinCount;
};
WaitPolicyChoice chooseWaitPolicy(const char *ompWaitPolicy, const char *gompSpinCount);

/// The run header's words for the wait policy in effect, from the same two
/// variables: "idle threads spin 1000 then sleep (netc's default)", ...
std::string describeWaitPolicy(const char *ompWaitPolicy, const char *gompSpinCount);
/// describeWaitPolicy of this process's environment.
std::string hostWaitPolicy();

/// The runnable tasks of the machine besides the caller's process, from the
/// fourth field of /proc/loadavg ("running/total", which counts the
/// caller's own running threads, `ownRunning`: the reader at least, and any
/// OpenMP thread still spinning); 0 when the text is not in that form.
int otherRunnableTasks(std::string_view loadavg, int ownRunning);
/// otherRunnableTasks of this machine's /proc/loadavg and this process's
/// running threads (/proc/self/task/*/stat); 0 where they are missing.
int hostOtherRunnableTasks();

/// The threads a backend runs: `requested` when positive; for 0 (all
/// cores), the cores the other runnable tasks leave free, at least one.
int chooseThreadCount(int requested, int cores, int othersRunnable);

/// Calls of an op timed at each thread count, one and all, before its
/// count is chosen (after kOpTuningWarmup untimed ones: first touches of
/// memory, a cold cache).
inline constexpr int kOpTuningSamples = 4, kOpTuningWarmup = 2;
/// The share by which `threads` threads must beat one to be kept: a second
/// thread that buys less leaves its core to the machine's other work.
inline constexpr double kOpTuningMargin = 0.05;

/// The thread count an op runs on, from its times (µs) on one thread and
/// on `threads` threads, the same number of calls each: `threads` where
/// their median is below one thread's by more than kOpTuningMargin, else 1.
/// Every kernel gives the same bits on any thread count, so the choice
/// changes the speed only (docs/performance.md).
int fasterThreadCount(std::span<const double> oneThread, std::span<const double> allThreads, int threads);

} // namespace netc::runtime::cpu
