// SpellingTest.cpp -- edit distance and did-you-mean suggestions.
#include "support/Spelling.h"

#include <gtest/gtest.h>

using netc::closestMatch;
using netc::editDistance;

TEST(Spelling, EditDistance) {
  EXPECT_EQ(editDistance("kitten", "sitting", 5), 3u);
  EXPECT_EQ(editDistance("", "abc", 5), 3u);
  EXPECT_EQ(editDistance("same", "same", 5), 0u);
  EXPECT_GT(editDistance("completely", "different", 2), 2u);
}

TEST(Spelling, CaseInsensitiveMatchWins) {
  EXPECT_EQ(closestMatch("Const", {"const", "input"}), "const");
  EXPECT_EQ(closestMatch("kernelshape", {"KernelShape", "InputShape"}), "KernelShape");
}

TEST(Spelling, MisspellingWithinTwo) {
  EXPECT_EQ(closestMatch("convole", {"all", "convolve", "where"}), "convolve");
  EXPECT_EQ(closestMatch("hiden", {"input", "hidden", "output"}), "hidden");
  EXPECT_FALSE(closestMatch("xyzzy", {"input", "hidden", "output"}).has_value());
}
