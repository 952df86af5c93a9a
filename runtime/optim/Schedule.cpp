// Schedule.cpp -- learning-rate schedules: the keyword table derived from
// Schedules.def, the `--schedule` parser and printer, and the rate formulas
// (computed in double, returned as float).
#include "runtime/optim/Schedule.h"
#include "support/NumberText.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <numbers>
#include <vector>

namespace netc::optim {

namespace {

struct ScheduleInfo {
  std::string_view name;
  std::string_view forms;
};
const ScheduleInfo kSchedules[] = {
#define SCHEDULE(Id, Name, Forms) {Name, Forms},
#include "runtime/optim/Schedules.def"
#undef SCHEDULE
};

/// "constant, step[:EPOCHS[:GAMMA]] or cosine[:MIN_LR]".
std::string acceptedForms() {
  std::string forms;
  const size_t count = std::size(kSchedules);
  for (size_t i = 0; i < count; ++i) {
    if (i > 0)
      forms += i + 1 == count ? " or " : ", ";
    forms += kSchedules[i].forms;
  }
  return forms;
}

Error scheduleError(std::string_view text, std::string_view problem) {
  return fail("--schedule '" + std::string(text) + "': " + std::string(problem) + " (expected " +
              acceptedForms() + ")");
}

std::vector<std::string_view> splitColons(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos)
      return parts;
    start = colon + 1;
  }
}

/// The whole of `text` as a number, or nothing.
template <class T> std::optional<T> parseNumber(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

} // namespace

std::string_view scheduleName(ScheduleKind kind) {
  return kSchedules[static_cast<int>(kind)].name;
}

std::optional<ScheduleKind> parseScheduleKind(std::string_view name) {
  for (int i = 0; i < int(std::size(kSchedules)); ++i)
    if (kSchedules[i].name == name)
      return static_cast<ScheduleKind>(i);
  return std::nullopt;
}

Expected<Schedule> parseSchedule(std::string_view text, int64_t totalEpochs) {
  std::vector<std::string_view> parts = splitColons(text);
  std::optional<ScheduleKind> kind = parseScheduleKind(parts[0]);
  if (!kind)
    return scheduleError(text, "unknown schedule '" + std::string(parts[0]) + "'");
  Schedule schedule;
  schedule.kind = *kind;
  schedule.totalEpochs = totalEpochs;
  switch (*kind) {
  case ScheduleKind::Constant:
    if (parts.size() > 1)
      return scheduleError(text, "'constant' takes no arguments");
    break;
  case ScheduleKind::Step:
    if (parts.size() > 3)
      return scheduleError(text, "'step' takes at most EPOCHS and GAMMA");
    if (parts.size() > 1) {
      std::optional<int64_t> epochs = parseNumber<int64_t>(parts[1]);
      if (!epochs || *epochs < 1)
        return scheduleError(text, "EPOCHS must be a positive integer, got '" + std::string(parts[1]) + "'");
      schedule.stepEpochs = *epochs;
    }
    if (parts.size() > 2) {
      std::optional<float> gamma = parseNumber<float>(parts[2]);
      if (!gamma || !(*gamma > 0 && *gamma <= 1))
        return scheduleError(text, "GAMMA must be a number in (0, 1], got '" + std::string(parts[2]) + "'");
      schedule.gamma = *gamma;
    }
    break;
  case ScheduleKind::Cosine:
    if (parts.size() > 2)
      return scheduleError(text, "'cosine' takes at most MIN_LR");
    if (parts.size() > 1) {
      std::optional<float> minLr = parseNumber<float>(parts[1]);
      if (!minLr || !std::isfinite(*minLr) || !(*minLr >= 0))
        return scheduleError(text,
                             "MIN_LR must be a non-negative number, got '" + std::string(parts[1]) + "'");
      schedule.minLearningRate = *minLr;
    }
    break;
  }
  return schedule;
}

std::string formatSchedule(const Schedule &schedule) {
  std::string text(scheduleName(schedule.kind));
  switch (schedule.kind) {
  case ScheduleKind::Constant: break;
  case ScheduleKind::Step:
    text += ":" + std::to_string(schedule.stepEpochs) + ":" + shortestText(schedule.gamma);
    break;
  case ScheduleKind::Cosine: text += ":" + shortestText(schedule.minLearningRate); break;
  }
  return text;
}

float scheduledLearningRate(const Schedule &schedule, float baseLr, int64_t epoch, double epochFraction) {
  switch (schedule.kind) {
  case ScheduleKind::Constant: return baseLr;
  case ScheduleKind::Step: {
    const int64_t reductions = std::max<int64_t>(epoch, 0) / std::max<int64_t>(schedule.stepEpochs, 1);
    return float(double(baseLr) * std::pow(double(schedule.gamma), double(reductions)));
  }
  case ScheduleKind::Cosine: {
    const double total = double(std::max<int64_t>(schedule.totalEpochs, 1));
    const double t = std::clamp(double(epoch) + epochFraction, 0.0, total);
    const double minLr = schedule.minLearningRate;
    return float(minLr + (double(baseLr) - minLr) * (1 + std::cos(std::numbers::pi * t / total)) / 2);
  }
  }
  return baseLr;
}

std::string_view lrScalingName(LrScaling scaling) {
  switch (scaling) {
  case LrScaling::None: return "none";
  case LrScaling::Linear: return "linear";
  case LrScaling::Sqrt: return "sqrt";
  }
  return "none";
}

std::optional<LrScaling> parseLrScaling(std::string_view text) {
  for (LrScaling s : {LrScaling::None, LrScaling::Linear, LrScaling::Sqrt})
    if (text == lrScalingName(s))
      return s;
  return std::nullopt;
}

double lrScaleFactor(LrScaling scaling, int ranks) {
  switch (scaling) {
  case LrScaling::None: return 1;
  case LrScaling::Linear: return double(ranks);
  case LrScaling::Sqrt: return std::sqrt(double(ranks));
  }
  return 1;
}

Expected<Warmup> parseWarmup(std::string_view text) {
  auto bad = [&](std::string_view problem) {
    return fail("--lr-warmup '" + std::string(text) + "': " + std::string(problem) +
                " (expected N or Nepochs for N epochs, a positive number, or Nsteps for N optimizer steps)");
  };
  Warmup w;
  std::string_view number = text;
  if (number.ends_with("steps")) {
    w.steps = true;
    number.remove_suffix(5);
  } else if (number.ends_with("epochs")) {
    number.remove_suffix(6);
  }
  if (w.steps) {
    auto steps = parseNumber<int64_t>(number);
    if (!steps || *steps < 1)
      return bad("the number of steps is not a positive integer");
    w.length = double(*steps);
    return w;
  }
  auto epochs = parseNumber<double>(number);
  if (!epochs || !(*epochs > 0) || !std::isfinite(*epochs))
    return bad("the number of epochs is not a positive number");
  w.length = *epochs;
  return w;
}

std::string formatWarmup(const Warmup &warmup) {
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, warmup.length);
  return std::string(text, ec == std::errc() ? end : text) + (warmup.steps ? "steps" : "epochs");
}

int64_t warmupSteps(const Warmup &warmup, int64_t stepsPerEpoch) {
  if (!(warmup.length > 0))
    return 0;
  if (warmup.steps)
    return static_cast<int64_t>(warmup.length);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(warmup.length * double(stepsPerEpoch))));
}

double warmupFactor(int64_t steps, double scale, int64_t step) {
  if (steps <= 0 || step >= steps)
    return 1;
  const double t = double(std::max<int64_t>(step, 1)) / double(steps);
  const double start = scale > 1 ? 1 / scale : 0;
  return start + (1 - start) * t;
}

} // namespace netc::optim
