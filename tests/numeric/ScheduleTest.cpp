// ScheduleTest.cpp -- numeric tests of the learning-rate schedules in
// runtime/optim (docs/architecture.md §Tests): the rate at chosen epochs for constant, step and
// cosine schedules, the `--schedule` parser's defaults and round trip through
// formatSchedule, and its error messages, which name the flag and the accepted
// forms.
#include "runtime/optim/Schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace netc::optim {
namespace {

TEST(Schedule, ConstantAndStep) {
  const Schedule constant = *parseSchedule("constant", 100);
  EXPECT_FLOAT_EQ(scheduledLearningRate(constant, 0.1f, 57, 0.5), 0.1f);
  // step:30:0.1 from 0.1: epochs 0-29 -> 0.1, 30-59 -> 0.01, 60-89 -> 0.001.
  const Schedule step = *parseSchedule("step:30:0.1", 100);
  EXPECT_FLOAT_EQ(scheduledLearningRate(step, 0.1f, 0, 0), 0.1f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(step, 0.1f, 29, 0.99), 0.1f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(step, 0.1f, 30, 0), 0.01f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(step, 0.1f, 65, 0.5), 0.001f);
  // step:10:0.5 from 1: epoch 25 -> 1 * 0.5^2 = 0.25.
  EXPECT_FLOAT_EQ(scheduledLearningRate(*parseSchedule("step:10:0.5", 100), 1.0f, 25, 0), 0.25f);
}

TEST(Schedule, Cosine) {
  // T = 10, min 0: t = 0 -> base; t = 5 -> base/2; t = 2.5 -> base (1 + cos(pi/4))/2
  // = 0.8535534 base; t = 10 -> 0; past the end it stays at the minimum.
  const Schedule cosine = *parseSchedule("cosine", 10);
  EXPECT_FLOAT_EQ(scheduledLearningRate(cosine, 0.1f, 0, 0), 0.1f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(cosine, 0.1f, 5, 0), 0.05f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(cosine, 0.1f, 2, 0.5), 0.08535534f);
  EXPECT_NEAR(scheduledLearningRate(cosine, 0.1f, 10, 0), 0.0f, 1e-9);
  EXPECT_NEAR(scheduledLearningRate(cosine, 0.1f, 12, 0.5), 0.0f, 1e-9);
  // With a minimum of 0.01: t = 5 -> 0.01 + 0.09 / 2 = 0.055.
  const Schedule floor = *parseSchedule("cosine:0.01", 10);
  EXPECT_FLOAT_EQ(scheduledLearningRate(floor, 0.1f, 5, 0), 0.055f);
  EXPECT_FLOAT_EQ(scheduledLearningRate(floor, 0.1f, 10, 0), 0.01f);
}

TEST(Schedule, ParseDefaultsAndRoundTrip) {
  const Schedule step = *parseSchedule("step", 100);
  EXPECT_EQ(step.kind, ScheduleKind::Step);
  EXPECT_EQ(step.stepEpochs, 30);
  EXPECT_FLOAT_EQ(step.gamma, 0.1f);
  EXPECT_EQ(parseSchedule("step:7", 100)->stepEpochs, 7);
  EXPECT_EQ(parseSchedule("cosine", 42)->totalEpochs, 42);
  for (const char *text : {"constant", "step:30:0.1", "step:5:0.25", "cosine:0", "cosine:1e-05"})
    EXPECT_EQ(formatSchedule(*parseSchedule(text, 10)), text);
  EXPECT_EQ(scheduleName(ScheduleKind::Cosine), "cosine");
  EXPECT_EQ(parseScheduleKind("step"), ScheduleKind::Step);
}

TEST(Schedule, ParseErrorsNameTheFlag) {
  const std::string forms = " (expected constant, step[:EPOCHS[:GAMMA]] or cosine[:MIN_LR])";
  const std::pair<const char *, std::string> cases[] = {
      {"", "--schedule '': unknown schedule ''"},
      {"linear", "--schedule 'linear': unknown schedule 'linear'"},
      {"Step", "--schedule 'Step': unknown schedule 'Step'"},
      {"constant:3", "--schedule 'constant:3': 'constant' takes no arguments"},
      {"step:0", "--schedule 'step:0': EPOCHS must be a positive integer, got '0'"},
      {"step:x", "--schedule 'step:x': EPOCHS must be a positive integer, got 'x'"},
      {"step:", "--schedule 'step:': EPOCHS must be a positive integer, got ''"},
      {"step:3.5", "--schedule 'step:3.5': EPOCHS must be a positive integer, got '3.5'"},
      {"step:10:0", "--schedule 'step:10:0': GAMMA must be a number in (0, 1], got '0'"},
      {"step:10:1.5", "--schedule 'step:10:1.5': GAMMA must be a number in (0, 1], got '1.5'"},
      {"step:10:0.1x", "--schedule 'step:10:0.1x': GAMMA must be a number in (0, 1], got '0.1x'"},
      {"step:1:0.5:2", "--schedule 'step:1:0.5:2': 'step' takes at most EPOCHS and GAMMA"},
      {"cosine:-1", "--schedule 'cosine:-1': MIN_LR must be a non-negative number, got '-1'"},
      {"cosine:inf", "--schedule 'cosine:inf': MIN_LR must be a non-negative number, got 'inf'"},
      {"cosine:0:1", "--schedule 'cosine:0:1': 'cosine' takes at most MIN_LR"},
  };
  for (const auto &[text, message] : cases) {
    Expected<Schedule> parsed = parseSchedule(text, 10);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.message(), message + forms);
  }
}

} // namespace
} // namespace netc::optim
