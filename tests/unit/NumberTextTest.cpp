// NumberTextTest.cpp -- numbers as the tools print them (support/NumberText.h):
// thousands grouped, and measured quantities to three significant digits
// without the exponent form printf's %g falls into from 1000 up ("a step of
// 1e+03 ms").
#include "support/NumberText.h"

#include <string>

#include <gtest/gtest.h>

namespace netc {
namespace {

TEST(NumberText, GroupsThousands) {
  EXPECT_EQ(groupDigits(127495), "127,495");
  EXPECT_EQ(groupDigits(-1234), "-1,234");
  EXPECT_EQ(groupDigits(999), "999");
}

TEST(NumberText, ShortestTextReadsBackAsTheSameFloat) {
  EXPECT_EQ(shortestText(0.1f), "0.1");
  EXPECT_EQ(shortestText(1e-30f), "1e-30");
  EXPECT_EQ(shortestText(0.9f), "0.9");
  for (float value : {0.1f, 1.0f / 3.0f, 1e-30f, 3.4e38f, -2.5f})
    EXPECT_EQ(std::stof(shortestText(value)), value) << shortestText(value);
}

TEST(NumberText, ThreeDigitsNeverUsesTheExponentFormFromOneThousandUp) {
  EXPECT_EQ(threeDigits(0.012345), "0.0123");
  EXPECT_EQ(threeDigits(1.5), "1.5");
  EXPECT_EQ(threeDigits(99.94), "99.9");
  EXPECT_EQ(threeDigits(99.96), "100");
  EXPECT_EQ(threeDigits(999.7), "1000");
  EXPECT_EQ(threeDigits(1000), "1000");
  EXPECT_EQ(threeDigits(12345.6), "12346");
  EXPECT_EQ(threeDigits(-2500), "-2500");
  EXPECT_EQ(threeDigits(0), "0");
}

} // namespace
} // namespace netc
