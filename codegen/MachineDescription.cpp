// MachineDescription.cpp -- the comparison and the cache file name of
// MachineDescription.h.
#include "codegen/MachineDescription.h"

#include "support/Hash.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

namespace netc::cost {

std::vector<std::string> machineDifferences(const MachineDescription &table, const MachineDescription &here) {
  std::vector<std::string> differences;
  auto compare = [&](std::string_view what, const std::string &a, const std::string &b) {
    if (a != b)
      differences.push_back(fmt::format("{} {} (here {})", what, quotedExcerpt(a), quotedExcerpt(b)));
  };
  compare("CPU", table.cpu, here.cpu);
  compare("instruction set", table.isa, here.isa);
  compare("dense kernels", table.dense, here.dense);
  compare("netc", table.netc, here.netc);
  return differences;
}

std::string machineCacheFileName(const MachineDescription &here) {
  // A separator no field holds keeps ("ab", "c") and ("a", "bc") apart.
  const std::string key = fmt::format("{}\n{}\n{}\n{}", here.cpu, here.isa, here.dense, here.netc);
  return fmt::format("cpu-{:016x}.json", fnv1a64(key));
}

bool measureAgainWhenQuiet(const MachineDescription &cached, int otherTasksNow) {
  return cached.busyTasks > 0 && otherTasksNow <= 0;
}

} // namespace netc::cost
