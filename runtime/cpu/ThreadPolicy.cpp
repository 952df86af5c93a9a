// ThreadPolicy.cpp -- the wait policy and thread count choices of
// ThreadPolicy.h, and the readers of this machine's environment and load.
#include "runtime/cpu/ThreadPolicy.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace netc::runtime::cpu {

WaitPolicyChoice chooseWaitPolicy(const char *ompWaitPolicy, const char *gompSpinCount) {
  if (ompWaitPolicy || gompSpinCount)
    return {};
  return {std::string(kNetcSpinCount)};
}

std::string describeWaitPolicy(const char *ompWaitPolicy, const char *gompSpinCount) {
  if (gompSpinCount) {
    const std::string_view count = gompSpinCount;
    const std::string source =
        count == kNetcSpinCount && !ompWaitPolicy ? "netc's default" : "GOMP_SPINCOUNT";
    return count == "0" ? fmt::format("idle threads sleep at once ({})", source)
                        : fmt::format("idle threads spin {} then sleep ({})", count, source);
  }
  if (ompWaitPolicy) {
    std::string policy = ompWaitPolicy;
    std::transform(policy.begin(), policy.end(), policy.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (policy == "passive")
      return "idle threads sleep at once (OMP_WAIT_POLICY=passive)";
    if (policy == "active")
      return "idle threads spin (OMP_WAIT_POLICY=active)";
  }
  return "idle threads spin 300000 then sleep (libgomp's default)";
}

std::string hostWaitPolicy() {
  return describeWaitPolicy(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"));
}

int otherRunnableTasks(std::string_view loadavg, int ownRunning) {
  // "0.52 0.58 0.59 3/712 12345": the fourth field's first number.
  size_t at = 0;
  for (int field = 0; field < 3; ++field) {
    at = loadavg.find(' ', at);
    if (at == std::string_view::npos)
      return 0;
    ++at;
  }
  const size_t slash = loadavg.find('/', at);
  if (slash == std::string_view::npos)
    return 0;
  int running = 0;
  const auto [end, error] = std::from_chars(loadavg.data() + at, loadavg.data() + slash, running);
  if (error != std::errc() || end != loadavg.data() + slash || running < 1)
    return 0;
  return std::max(0, running - std::max(1, ownRunning));
}

namespace {
std::string fileText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}
} // namespace

OtherTasksSetting parseOtherTasks(const char *text) {
  if (!text || !*text)
    return {};
  const std::string_view value = text;
  int count = -1;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), count);
  if (error != std::errc() || end != value.data() + value.size() || count < 0 || count > kMaxOtherTasks)
    return {std::nullopt, fmt::format("NETC_OTHER_TASKS must be a whole number from 0 to {} (the other tasks "
                                      "netc assumes are running), got {}; unset it to read /proc/loadavg",
                                      kMaxOtherTasks, quotedExcerpt(value))};
  return {count, {}};
}

int hostOtherRunnableTasks() {
  if (const OtherTasksSetting setting = parseOtherTasks(std::getenv("NETC_OTHER_TASKS")); setting.count)
    return *setting.count;
  const std::string loadavg = fileText("/proc/loadavg");
  if (loadavg.empty())
    return 0;
  // This process's threads in state R: "tid (name) R ...", the name in parentheses.
  int ownRunning = 0;
  std::error_code error;
  for (const auto &task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::string stat = fileText(task.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R')
      ++ownRunning;
  }
  return otherRunnableTasks(loadavg, ownRunning);
}

int chooseThreadCount(int requested, int cores, int othersRunnable) {
  if (requested > 0)
    return requested;
  return std::max(1, cores - std::max(0, othersRunnable));
}

int fasterThreadCount(std::span<const double> oneThread, std::span<const double> allThreads, int threads) {
  if (threads <= 1 || oneThread.empty() || allThreads.empty())
    return 1;
  auto median = [](std::span<const double> values) {
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  };
  return median(allThreads) < (1 - kOpTuningMargin) * median(oneThread) ? threads : 1;
}

void ShareCheck::start(double nowSeconds, bool anyShared) {
  settledAt_ = nowSeconds;
  windowsMicros_ = 0;
  if (anyShared)
    beginWindow(Phase::Shared);
}

void ShareCheck::beginWindow(Phase phase) {
  phase_ = phase;
  warm_ = false;
  windowMicros_ = 0;
  windowSteps_ = 0;
}

void ShareCheck::record(double micros, double nowSeconds) {
  if (phase_ == Phase::Settled) {
    const double interval = std::max(kIntervalSeconds, kIntervalWindows * windowsMicros_ * 1e-6);
    if (nowSeconds - settledAt_ >= interval) {
      windowsMicros_ = 0;
      beginWindow(Phase::Shared);
    }
    return;
  }
  if (!measuring())
    return;
  if (!warm_) { // the first step after a change warms the caches for it
    warm_ = true;
    return;
  }
  windowMicros_ += micros;
  ++windowSteps_;
  if (windowSteps_ < kWindowSteps || windowMicros_ < kWindowSeconds * 1e6)
    return;
  windowsMicros_ += windowMicros_;
  const double mean = windowMicros_ / windowSteps_;
  if (phase_ == Phase::Shared) {
    sharedMean_ = mean;
    beginWindow(Phase::Alone);
    return;
  }
  aloneMean_ = mean;
  const double shared[] = {sharedMean_}, alone[] = {aloneMean_};
  alone_ = fasterThreadCount(alone, shared, 2) == 1;
  ++checks_;
  phase_ = Phase::Settled;
  settledAt_ = nowSeconds;
}

} // namespace netc::runtime::cpu
