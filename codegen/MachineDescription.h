// MachineDescription.h -- the machine a cost table was measured on (its
// CPU, instruction set, dense kernels and netc version), what differs
// between two such machines, and the file name a machine's own table is
// cached under. Pure functions, tested on recorded descriptions
// (tests/unit/MachineDescriptionTest.cpp); codegen/CostTable.h reads and
// writes the description as a table's "machine" object.
#pragma once

#include <string>
#include <vector>

namespace netc::cost {

/// The machine a table was measured on, as far as its rates depend on it
/// (docs/estimate.md, "A table from another machine"). Tables written by
/// netc calibrate hold it; a table without it describes no machine.
struct MachineDescription {
  std::string cpu;   ///< the processor's model name ("Intel(R) Xeon(R) Processor"), or the GPU's
  std::string isa;   ///< the fast kernels' instruction set: "avx512", "avx2", "baseline" ("" on a GPU)
  std::string dense; ///< the dense products' kernels, as the run header names them ("netc avx512")
  std::string netc;  ///< the version of netc that measured it (its kernels change between versions)
  int cores = 0;     ///< the machine's cores (shown, not compared: profiles are per thread count)
  /// The peak probe of netc bench --profile: one thread's multiply-adds in
  /// GFLOP/s and a copy through memory in GB/s (0: not measured). Shown.
  double peakGflopsPerCore = 0, peakCopyGbPerSecond = 0;
  /// Other tasks that were running while it was measured (the median over
  /// its measurements of the runnable tasks besides netc's): a table
  /// measured beside other work may be slower than the machine. Shown, not
  /// compared; 0 in tables that do not say.
  int busyTasks = 0;
};

/// What differs between the machine `table` describes and `here`, one
/// phrase each ("CPU 'AMD EPYC 9B14' (here 'Intel(R) Xeon(R) Processor')"):
/// the processor, the instruction set, the dense kernels and netc's version.
/// Empty when the table describes this machine. A pure function.
std::vector<std::string> machineDifferences(const MachineDescription &table, const MachineDescription &here);
/// The file name of the cached table of machine `here`: "cpu-" and 16 hex
/// digits of a hash of what machineDifferences compares, ".json".
std::string machineCacheFileName(const MachineDescription &here);
/// Whether netc's cached table of this machine, `cached`, is measured
/// again now that `otherTasksNow` other tasks run: when it was measured
/// beside other work and the machine is now quiet. A pure function.
bool measureAgainWhenQuiet(const MachineDescription &cached, int otherTasksNow);

} // namespace netc::cost
