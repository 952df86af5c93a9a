// MachineDescriptionTest.cpp -- whether a cost table describes this machine
// (codegen/CostTable.h: machineDifferences, machineCacheFileName) on recorded
// machine descriptions, and the processor's model name read from recorded
// /proc/cpuinfo texts (runtime/cpu/DenseKernelChoice.h).
#include "codegen/CostTable.h"
#include "runtime/cpu/DenseKernelChoice.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using netc::cost::machineCacheFileName;
using netc::cost::MachineDescription;
using netc::cost::machineDifferences;

// As netc calibrate recorded them (cores and peaks differ run to run and are not compared).
const MachineDescription kZen4Blas{
    "AMD EPYC 9B14", "avx512", "OpenBLAS 0.3.21 Haswell", "0.1.0", 2, 98.1, 41.0};
const MachineDescription kZen4{"AMD EPYC 9B14", "avx512", "netc avx512", "0.1.0", 2, 130.4, 40.2};
const MachineDescription kSapphireRapids{
    "Intel(R) Xeon(R) Processor", "avx512", "netc avx512", "0.1.0", 2, 240.2, 22.7};
const MachineDescription kHaswell{
    "Intel(R) Xeon(R) CPU E5-2673 v3 @ 2.40GHz", "avx2", "netc avx2", "0.1.0", 4, 70.0, 12.0};
const MachineDescription kQemu64{
    "QEMU Virtual CPU version 2.5+", "baseline", "OpenBLAS 0.3.21 Prescott", "0.1.0", 2, 8.0, 5.0};

TEST(MachineDescription, ATableDescribesTheMachineItWasMeasuredOn) {
  for (const MachineDescription &m : {kZen4Blas, kZen4, kSapphireRapids, kHaswell, kQemu64})
    EXPECT_TRUE(machineDifferences(m, m).empty()) << m.cpu;
  // More cores, other peaks: the same rates per thread count.
  MachineDescription bigger = kSapphireRapids;
  bigger.cores = 16;
  bigger.peakGflopsPerCore = 180;
  bigger.peakCopyGbPerSecond = 60;
  EXPECT_TRUE(machineDifferences(kSapphireRapids, bigger).empty());
}

TEST(MachineDescription, EachDifferenceIsNamedWithBothValues) {
  EXPECT_EQ(machineDifferences(kZen4, kSapphireRapids),
            (std::vector<std::string>{"CPU 'AMD EPYC 9B14' (here 'Intel(R) Xeon(R) Processor')"}));
  // The table committed before netc had its own dense kernels, on the machine it was measured on.
  EXPECT_EQ(machineDifferences(kZen4Blas, kZen4),
            (std::vector<std::string>{"dense kernels 'OpenBLAS 0.3.21 Haswell' (here 'netc avx512')"}));
  EXPECT_EQ(machineDifferences(kSapphireRapids, kHaswell),
            (std::vector<std::string>{
                "CPU 'Intel(R) Xeon(R) Processor' (here 'Intel(R) Xeon(R) CPU E5-2673 v3 @ "
                "2.40GHz')",
                "instruction set 'avx512' (here 'avx2')", "dense kernels 'netc avx512' (here 'netc avx2')"}));
  // The same processor on the generic kernels (--cpu-isa baseline), and under another netc.
  MachineDescription generic = kSapphireRapids;
  generic.isa = "baseline";
  generic.dense = "OpenBLAS 0.3.21 Prescott";
  generic.netc = "0.2.0";
  EXPECT_EQ(machineDifferences(kSapphireRapids, generic),
            (std::vector<std::string>{"instruction set 'avx512' (here 'baseline')",
                                      "dense kernels 'netc avx512' (here 'OpenBLAS 0.3.21 Prescott')",
                                      "netc '0.1.0' (here '0.2.0')"}));
}

TEST(MachineDescription, TextFromAFileIsShownSafely) {
  MachineDescription odd = kZen4;
  odd.cpu = std::string("EPYC\n\x1b[31m", 11) + std::string(100, 'x');
  const std::vector<std::string> differences = machineDifferences(odd, kZen4);
  ASSERT_EQ(differences.size(), 1u);
  EXPECT_EQ(differences[0].find('\n'), std::string::npos) << differences[0];
  EXPECT_EQ(differences[0].find('\x1b'), std::string::npos) << differences[0];
  EXPECT_LT(differences[0].size(), 120u) << differences[0];
}

TEST(MachineDescription, EachMachineHasItsOwnCacheFile) {
  // Stable across runs and versions of the compiler: a user's cache stays valid.
  EXPECT_EQ(machineCacheFileName(kSapphireRapids), "cpu-7d0e13655ebff00e.json");
  std::set<std::string> names;
  for (const MachineDescription &m : {kZen4Blas, kZen4, kSapphireRapids, kHaswell, kQemu64})
    names.insert(machineCacheFileName(m));
  EXPECT_EQ(names.size(), 5u);
  // What is not compared does not move the file.
  MachineDescription bigger = kSapphireRapids;
  bigger.cores = 64;
  bigger.peakGflopsPerCore = 1;
  EXPECT_EQ(machineCacheFileName(bigger), machineCacheFileName(kSapphireRapids));
  // Fields do not run into each other.
  MachineDescription a = kZen4, b = kZen4;
  a.cpu = "AB";
  a.isa = "C";
  b.cpu = "A";
  b.isa = "BC";
  EXPECT_NE(machineCacheFileName(a), machineCacheFileName(b));
}

TEST(MachineDescription, ATableMeasuredBesideOtherWorkIsMeasuredAgainOnlyWhenQuiet) {
  MachineDescription busy = kZen4;
  busy.busyTasks = 2;
  EXPECT_TRUE(measureAgainWhenQuiet(busy, 0));
  EXPECT_FALSE(measureAgainWhenQuiet(busy, 1)); // still busy: the next quiet estimate does
  EXPECT_FALSE(measureAgainWhenQuiet(busy, 5));
  EXPECT_FALSE(measureAgainWhenQuiet(kZen4, 0)); // measured on a quiet machine: kept
  EXPECT_FALSE(measureAgainWhenQuiet(kZen4, 3));
  // Not a difference of machine: the same file and no "another machine".
  EXPECT_TRUE(machineDifferences(busy, kZen4).empty());
  EXPECT_EQ(machineCacheFileName(busy), machineCacheFileName(kZen4));
}

TEST(MachineDescription, ModelNamesFromRecordedCpuinfo) {
  using netc::runtime::cpu::cpuModelFromCpuinfo;
  EXPECT_EQ(cpuModelFromCpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                                "model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 8\n\nprocessor\t: 1\n"
                                "model name\t: Intel(R) Xeon(R) Processor\n"),
            "Intel(R) Xeon(R) Processor");
  // Runs of spaces, and the trailing ones some firmware pads with.
  EXPECT_EQ(
      cpuModelFromCpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14 96-Core "
                          "Processor    \nflags\t\t: fpu vme\n"),
      "AMD EPYC 9B14 96-Core Processor");
  EXPECT_EQ(cpuModelFromCpuinfo("model name\t:   Intel(R) Xeon(R) CPU E5-2673  v3 @ 2.40GHz"),
            "Intel(R) Xeon(R) CPU E5-2673 v3 @ 2.40GHz");
  // AArch64 names no model: the part number.
  EXPECT_EQ(cpuModelFromCpuinfo("processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd\n"
                                "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\n"),
            "0xd0c");
  // "model" alone is not "model name"; an empty value is skipped.
  EXPECT_EQ(
      cpuModelFromCpuinfo("model\t\t: 143\nmodel name\t:\nmodel name\t: QEMU Virtual CPU version 2.5+\n"),
      "QEMU Virtual CPU version 2.5+");
  EXPECT_EQ(cpuModelFromCpuinfo(""), "");
  EXPECT_EQ(cpuModelFromCpuinfo("no colon here\n\n:\n"), "");
  EXPECT_FALSE(netc::runtime::cpu::hostCpuModel().empty());
}

} // namespace
