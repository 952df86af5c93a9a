// ByteSizeTest.cpp -- sizes in bytes as flags take them (--max-memory,
// --max-source-size) and as messages print them (support/ByteSize.h): every
// accepted spelling, every refusal (overflow, signs, fractions, unknown
// units) and the printed forms.
#include "support/ByteSize.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using netc::byteSizeText;
using netc::parseByteSize;

TEST(ByteSize, AcceptsDecimalAndBinaryMultiples) {
  EXPECT_EQ(parseByteSize("0"), 0u);
  EXPECT_EQ(parseByteSize("1000000"), 1000000u);
  EXPECT_EQ(parseByteSize("64K"), 64u << 10);
  EXPECT_EQ(parseByteSize("64kib"), 64u << 10);
  EXPECT_EQ(parseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(parseByteSize("512MB"), uint64_t{512} << 20);
  EXPECT_EQ(parseByteSize("8GiB"), uint64_t{8} << 30);
  EXPECT_EQ(parseByteSize("1T"), uint64_t{1} << 40);
  EXPECT_EQ(parseByteSize("12B"), 12u);
  EXPECT_EQ(parseByteSize("16777215T"), uint64_t{16777215} << 40);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char *text : {"", "-1", "+5", "1.5G", "1e9", "G", "8XB", "8 G", "8iB", "0x10", "8GiBs", "max",
                           "18446744073709551616", "16777216T", "99999999999999999999999"})
    EXPECT_FALSE(parseByteSize(text)) << text;
}

TEST(ByteSize, PrintsWithOneDecimal) {
  EXPECT_EQ(byteSizeText(0), "0 B");
  EXPECT_EQ(byteSizeText(1023), "1023 B");
  EXPECT_EQ(byteSizeText(3174), "3.1 KiB");
  EXPECT_EQ(byteSizeText(uint64_t{64} << 20), "64.0 MiB");
  EXPECT_EQ(byteSizeText(5261334937), "4.9 GiB");
  EXPECT_EQ(byteSizeText(UINT64_MAX), "16.0 EiB");
}

TEST(ByteSize, TheMachineHasMemory) {
  EXPECT_GE(netc::machineMemoryBytes(), uint64_t{1} << 20);
}

} // namespace
