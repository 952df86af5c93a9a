// SettingValues.cpp -- the parse and spelling functions of the typed training
// settings (include/netc/Training.h) and their mapping to the runtime's types
// (SettingValues.h). Parsing goes through the runtime's parsers, so every
// message is the one `netc train` has always printed for the flag.
#include "api/SettingValues.h"

#include <fmt/format.h>

#include <charconv>

namespace netc {

namespace {

/// The shortest text that reads back as `value` (std::to_chars).
std::string shortest(float value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

Schedule::Kind fromRuntime(optim::ScheduleKind kind) {
  switch (kind) {
  case optim::ScheduleKind::Constant: return Schedule::Kind::Constant;
  case optim::ScheduleKind::Step: return Schedule::Kind::Step;
  case optim::ScheduleKind::Cosine: return Schedule::Kind::Cosine;
  }
  return Schedule::Kind::Constant;
}

Normalize::Kind fromRuntime(data::NormalizerKind kind) {
  switch (kind) {
  case data::NormalizerKind::None: return Normalize::Kind::None;
  case data::NormalizerKind::MinMax: return Normalize::Kind::MinMax;
  case data::NormalizerKind::GlobalMinMax: return Normalize::Kind::GlobalMinMax;
  case data::NormalizerKind::Gaussian: return Normalize::Kind::Gaussian;
  case data::NormalizerKind::Scale: return Normalize::Kind::Scale;
  }
  return Normalize::Kind::MinMax;
}

template <class T> Parsed<T> parsed(T value) {
  return {std::move(value), {}};
}

template <class T> Parsed<T> refused(std::string error) {
  return {std::nullopt, std::move(error)};
}

} // namespace

// ---- to the runtime's types ----------------------------------------------------------

optim::OptimizerKind toRuntime(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::Sgd: return optim::OptimizerKind::Sgd;
  case Optimizer::Adam: return optim::OptimizerKind::Adam;
  case Optimizer::AdaDelta: return optim::OptimizerKind::AdaDelta;
  }
  return optim::OptimizerKind::Sgd;
}

train::InitKind toRuntime(InitKind init) {
  switch (init) {
  case InitKind::Uniform: return train::InitKind::Uniform;
  case InitKind::Xavier: return train::InitKind::Xavier;
  case InitKind::He: return train::InitKind::He;
  }
  return train::InitKind::Uniform;
}

optim::Schedule toRuntime(const Schedule &schedule, int64_t totalEpochs) {
  optim::Schedule s;
  switch (schedule.kind) {
  case Schedule::Kind::Constant: s.kind = optim::ScheduleKind::Constant; break;
  case Schedule::Kind::Step: s.kind = optim::ScheduleKind::Step; break;
  case Schedule::Kind::Cosine: s.kind = optim::ScheduleKind::Cosine; break;
  }
  s.stepEpochs = schedule.stepEpochs;
  s.gamma = schedule.gamma;
  s.totalEpochs = totalEpochs;
  s.minLearningRate = schedule.minLearningRate;
  return s;
}

data::NormalizerSpec toRuntime(const Normalize &normalize) {
  switch (normalize.kind) {
  case Normalize::Kind::None: return {data::NormalizerKind::None};
  case Normalize::Kind::MinMax: return {data::NormalizerKind::MinMax};
  case Normalize::Kind::GlobalMinMax: return {data::NormalizerKind::GlobalMinMax};
  case Normalize::Kind::Gaussian: return {data::NormalizerKind::Gaussian};
  case Normalize::Kind::Scale: return {data::NormalizerKind::Scale, normalize.divisor};
  }
  return {};
}

// ---- parsing (include/netc/Training.h) -----------------------------------------------

Parsed<Optimizer> parseOptimizer(std::string_view text) {
  if (auto kind = optim::parseOptimizer(text))
    for (Optimizer o : {Optimizer::Sgd, Optimizer::Adam, Optimizer::AdaDelta})
      if (toRuntime(o) == *kind)
        return parsed(o);
  return refused<Optimizer>(
      fmt::format("--optimizer must be one of {}, got '{}'", optim::optimizerChoices(), text));
}

Parsed<InitKind> parseInit(std::string_view text) {
  auto init = train::parseInit(text);
  if (init)
    for (InitKind k : {InitKind::Uniform, InitKind::Xavier, InitKind::He})
      if (toRuntime(k) == *init)
        return parsed(k);
  return refused<InitKind>(init ? fmt::format("--init: '{}' has no public kind", text) : init.message());
}

Parsed<Schedule> parseSchedule(std::string_view text) {
  auto runtime = optim::parseSchedule(text, /*totalEpochs=*/1); // the run's epochs come later
  if (!runtime)
    return refused<Schedule>(runtime.message());
  Schedule s;
  s.kind = fromRuntime(runtime->kind);
  s.stepEpochs = runtime->stepEpochs;
  s.gamma = runtime->gamma;
  s.minLearningRate = runtime->minLearningRate;
  return parsed(s);
}

Parsed<Normalize> parseNormalize(std::string_view text) {
  auto spec = data::parseNormalizer(text);
  if (!spec)
    return refused<Normalize>("--normalize: " + spec.message());
  return parsed(Normalize{fromRuntime(spec->kind), spec->divisor});
}

// ---- spelling ------------------------------------------------------------------------

std::string_view optimizerName(Optimizer optimizer) {
  return optim::optimizerName(toRuntime(optimizer));
}

std::string_view initName(InitKind init) {
  return train::initName(toRuntime(init));
}

std::string scheduleText(const Schedule &schedule) {
  const Schedule defaults;
  switch (schedule.kind) {
  case Schedule::Kind::Constant: return "constant";
  case Schedule::Kind::Step: {
    std::string text = "step";
    if (schedule.stepEpochs != defaults.stepEpochs || schedule.gamma != defaults.gamma)
      text += ":" + std::to_string(schedule.stepEpochs);
    if (schedule.gamma != defaults.gamma)
      text += ":" + shortest(schedule.gamma);
    return text;
  }
  case Schedule::Kind::Cosine:
    return schedule.minLearningRate != defaults.minLearningRate
               ? "cosine:" + shortest(schedule.minLearningRate)
               : "cosine";
  }
  return "constant";
}

std::string normalizeText(const Normalize &normalize) {
  return data::normalizerText(toRuntime(normalize));
}

// ---- data parallelism ------------------------------------------------------------------

Parsed<Sync> parseSync(std::string_view text) {
  if (text == "allreduce")
    return parsed(Sync{});
  constexpr std::string_view prefix = "local-sgd:";
  if (text.starts_with(prefix)) {
    int64_t every = 0;
    std::string_view number = text.substr(prefix.size());
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), every);
    if (!number.empty() && ec == std::errc() && end == number.data() + number.size() && every >= 1)
      return parsed(Sync{Sync::Kind::LocalSgd, every});
  }
  return refused<Sync>(fmt::format("--sync '{}': expected allreduce (every step's gradients summed over the "
                                   "ranks) or local-sgd:H (the replicas averaged every H >= 1 steps)",
                                   text));
}

std::string syncText(const Sync &sync) {
  return sync.kind == Sync::Kind::AllReduce ? "allreduce" : fmt::format("local-sgd:{}", sync.every);
}

Parsed<LrScaling> parseLrScaling(std::string_view text) {
  if (auto scaling = optim::parseLrScaling(text))
    switch (*scaling) {
    case optim::LrScaling::None: return parsed(LrScaling::None);
    case optim::LrScaling::Linear: return parsed(LrScaling::Linear);
    case optim::LrScaling::Sqrt: return parsed(LrScaling::Sqrt);
    }
  return refused<LrScaling>(
      fmt::format("--lr-scaling '{}': expected none, linear (the learning rate times the "
                  "ranks) or sqrt (times their square root)",
                  text));
}

std::string_view lrScalingName(LrScaling scaling) {
  return optim::lrScalingName(toRuntime(scaling));
}

Parsed<LrWarmup> parseLrWarmup(std::string_view text) {
  auto warmup = optim::parseWarmup(text);
  if (!warmup)
    return refused<LrWarmup>(warmup.message());
  return parsed(LrWarmup{warmup->length, warmup->steps});
}

std::string lrWarmupText(const LrWarmup &warmup) {
  return optim::formatWarmup(toRuntime(warmup));
}

optim::LrScaling toRuntime(LrScaling scaling) {
  switch (scaling) {
  case LrScaling::None: return optim::LrScaling::None;
  case LrScaling::Linear: return optim::LrScaling::Linear;
  case LrScaling::Sqrt: return optim::LrScaling::Sqrt;
  }
  return optim::LrScaling::None;
}

optim::Warmup toRuntime(const LrWarmup &warmup) {
  return {warmup.length, warmup.steps};
}

} // namespace netc
