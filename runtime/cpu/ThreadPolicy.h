// ThreadPolicy.h -- how the CPU backend's threads behave on a machine that
// is not idle: how long an idle OpenMP thread spins before it sleeps (the
// wait policy, which libgomp reads from the environment once, when it is
// loaded), how many threads `--threads 0` takes when other tasks are
// running, and which ops share the threads (each op's first calls are timed
// on one thread and on all; whole steps then check, now and then, that
// sharing still pays on a machine whose load changes). All are pure functions of what they read, tested on
// recorded cases (tests/unit/ThreadPolicyTest.cpp); the command line applies the wait policy before libgomp
// starts (tools/netc/Main.cpp), and the run header says what was chosen.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace netc::runtime::cpu {

/// The spin bound netc gives libgomp when the user sets neither
/// OMP_WAIT_POLICY nor GOMP_SPINCOUNT: an idle thread spins this many
/// iterations (about 100 us on the Sapphire Rapids VM it was measured on:
/// it bridged idle gaps of 80 us, 3,000 did not) before it sleeps, so
/// the next op of a step finds it awake. A sleeping thread takes 50-90 us
/// to wake on a cloud VM whose idle vCPU halts (docs/performance.md), more
/// than most ops take. libgomp's own default, 300,000 iterations
/// (milliseconds), also spins between steps. A spinning thread takes a core
/// that a busy machine's other tasks need: ShareCheck then runs every op on
/// one thread, and no thread spins.
inline constexpr std::string_view kNetcSpinCount = "10000";

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
/// NETC_OTHER_TASKS, where set to a valid count, is taken instead.
int hostOtherRunnableTasks();

/// NETC_OTHER_TASKS: the count of other runnable tasks netc assumes instead
/// of reading /proc/loadavg (which in a container counts the host's), for
/// `--threads 0` and for whether a cost table was measured beside other
/// work. `count` where `text` is a whole number from 0 to kMaxOtherTasks;
/// `error` says why not otherwise; neither where it is unset or empty.
struct OtherTasksSetting {
  std::optional<int> count;
  std::string error;
};
inline constexpr int kMaxOtherTasks = 1 << 20;
OtherTasksSetting parseOtherTasks(const char *text);

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

/// Whether sharing still pays, checked on whole steps: the ops that
/// fasterThreadCount gave all threads keep them only while a window of
/// steps with them shared runs faster than a window with every op on one
/// thread. An op's own calls, timed in turn, cannot see a competing task's
/// fair share of the cores: over a few milliseconds the two threads win,
/// over a second the spinning thread and the other task take turns on one
/// core and the step waits for both. The check runs again every
/// kShareCheckInterval seconds (or 20 windows' time, if longer), so a
/// machine that becomes busy or idle is followed. A pure state machine of
/// the recorded step times and the clock.
class ShareCheck {
public:
  /// Seconds of kernel time a window lasts, and its fewest steps (after
  /// one untimed step, which warms the caches for the new choice).
  static constexpr double kWindowSeconds = 0.1;
  static constexpr int kWindowSteps = 3;
  static constexpr double kIntervalSeconds = 5, kIntervalWindows = 20;

  /// Starts the first check (the ops' own tuning is over) at `nowSeconds`;
  /// no-op when nothing shares the threads.
  void start(double nowSeconds, bool anyShared);
  /// Whether the next step runs every op on one thread.
  bool alone() const { return phase_ == Phase::Alone || (phase_ == Phase::Settled && alone_); }
  /// What the last check chose (false before one): for calls that are not
  /// the step's (an op timed on its own), which a window must not switch.
  bool chosenAlone() const { return alone_; }
  /// Whether the next step's time is wanted (record() takes it then).
  bool measuring() const { return phase_ == Phase::Shared || phase_ == Phase::Alone; }
  /// After a step: its kernels' time in µs (read only while measuring) and the clock.
  void record(double micros, double nowSeconds);
  /// The mean step times (µs) of the last check's two windows (0 before one).
  double sharedMicros() const { return sharedMean_; }
  double aloneMicros() const { return aloneMean_; }
  int checks() const { return checks_; }

private:
  enum class Phase { Off, Shared, Alone, Settled };
  void beginWindow(Phase phase);
  Phase phase_ = Phase::Off;
  bool alone_ = false, warm_ = false;
  double windowMicros_ = 0, windowsMicros_ = 0, sharedMean_ = 0, aloneMean_ = 0, settledAt_ = 0;
  int windowSteps_ = 0, checks_ = 0;
};

} // namespace netc::runtime::cpu
