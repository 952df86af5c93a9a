// CostTableChoice.cpp -- chooseCostTable (api/CostTableChoice.h): the named
// table, the built-in one where it describes this machine, else this
// machine's from the cache folder, measured by a quick calibration when
// the cache has none (or a broken one, or one measured beside other work
// while the machine is now quiet) and the caller may measure.
#include "api/CostTableChoice.h"

#include "api/Backends.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <system_error>

namespace netc::training {

namespace {

std::string joinDifferences(const std::vector<std::string> &differences) {
  return fmt::format("{}", fmt::join(differences, ", "));
}

bool onGpu(std::string_view device) {
  return device.substr(0, 4) == "cuda";
}

/// What to say of this machine's table measured while `busy` other tasks ran.
std::string busyNote(int busy) {
  return fmt::format("this machine's table was measured while {} other task(s) ran, so its estimate may be "
                     "slow; the first estimate that finds the machine quiet measures it again",
                     busy);
}

/// What to say of a table measured on another machine.
std::string foreignNote(std::string_view label, const std::vector<std::string> &differences) {
  return fmt::format("the cost table '{}' was measured on another machine ({}): its estimate may be far off",
                     label, joinDifferences(differences));
}

} // namespace

std::optional<std::filesystem::path> costTableCacheFolder() {
  namespace fs = std::filesystem;
  if (const char *dir = std::getenv("NETC_CACHE_DIR"))
    return *dir ? std::optional<fs::path>(fs::path(dir) / "cost-tables") : std::nullopt;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') // relative: ignored (XDG)
    return fs::path(xdg) / "netc" / "cost-tables";
  if (const char *home = std::getenv("HOME"); home && home[0] == '/')
    return fs::path(home) / ".cache" / "netc" / "cost-tables";
  return std::nullopt;
}

CalibrateSettings quickCalibration(const std::string &outPath, const CostTableRequest &request) {
  CalibrateSettings s;
  s.outPath = outPath;
  s.cpuIsa = request.cpuIsa;
  s.denseKernel = request.denseKernel;
  s.batches = {8, 128};
  s.iterations = 8;
  s.rounds = 1;
  s.overwrite = true;
  s.command = "netc calibrate --cache --quick";
  return s;
}

Expected<CostTableChoice> chooseCostTable(const CostTableRequest &request) {
  std::string spec = request.spec == "auto" ? std::string() : request.spec;
  const bool machineAsked = spec == kMachineCostTable;
  // A GPU's table: the named one or the built-in one (measuring needs the GPU: netc calibrate --device cuda).
  if (onGpu(request.device) && !machineAsked) {
    CostTableChoice choice;
    choice.label = spec.empty() ? kDefaultGpuCostTable : spec;
    auto table = cost::loadCostTable(choice.label);
    if (!table)
      return table.error();
    choice.table = std::move(*table);
    return choice;
  }
  const std::optional<cost::MachineDescription> here =
      describeHostMachine(request.cpuIsa, request.denseKernel);
  auto differencesFrom = [&](const cost::CostTable &table) {
    return table.machine && here ? cost::machineDifferences(*table.machine, *here)
                                 : std::vector<std::string>{};
  };
  if (!spec.empty() && !machineAsked) { // a file or a built-in name: that table, whatever it describes
    CostTableChoice choice;
    choice.label = spec;
    auto table = cost::loadCostTable(spec);
    if (!table)
      return table.error();
    choice.table = std::move(*table);
    if (const auto differences = differencesFrom(choice.table); !differences.empty())
      choice.note = foreignNote(choice.label, differences) +
                    "; --cost-model machine measures this machine's (once, in a few seconds)";
    return choice;
  }
  auto builtin = cost::loadCostTable(kDefaultCpuCostTable);
  if (!builtin)
    return builtin.error();
  // The built-in table stands for this machine only where it says it does.
  const std::vector<std::string> builtinDifferences =
      builtin->machine ? differencesFrom(*builtin) : std::vector<std::string>{"it records no machine"};
  if (!machineAsked && (builtinDifferences.empty() || !here)) {
    return CostTableChoice{std::move(*builtin), kDefaultCpuCostTable, "", ""};
  }
  // This machine's own table.
  auto fallBack = [&](std::string why) -> Expected<CostTableChoice> {
    if (machineAsked)
      return fail(fmt::format("{}: {}", kMachineCostTable, why));
    CostTableChoice choice{std::move(*builtin), kDefaultCpuCostTable, "", ""};
    choice.note = fmt::format("{}; {}", foreignNote(kDefaultCpuCostTable, builtinDifferences), why);
    return choice;
  };
  if (!here)
    return fallBack("this processor does not run the instruction set asked for");
  const std::optional<std::filesystem::path> folder = costTableCacheFolder();
  if (!folder)
    return fallBack("netc's cache is off (NETC_CACHE_DIR is empty, or no home folder is known), so this "
                    "machine's table is not kept; measure one with netc calibrate -o FILE and pass it "
                    "as --cost-model FILE");
  const std::string path = (*folder / cost::machineCacheFileName(*here)).string();
  std::string replaced; // why a cached file is measured again
  {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      auto cached = cost::readCostTable(path);
      const bool mine =
          cached && cached->machine && cost::machineDifferences(*cached->machine, *here).empty();
      const int busy = mine ? cached->machine->busyTasks : 0;
      // The machine's load is read only for a table measured beside other work.
      if (mine && (!request.mayMeasure || busy == 0 ||
                   !cost::measureAgainWhenQuiet(*cached->machine, hostOtherRunnableTasks())))
        return CostTableChoice{std::move(*cached), kMachineCostTable, path, busy > 0 ? busyNote(busy) : ""};
      replaced = mine ? fmt::format("the cached table {} was measured while {} other task(s) ran", path, busy)
                 : cached ? fmt::format("the cached table {} describes another machine", path)
                          : fmt::format("the cached table could not be read ({})", cached.message());
    }
  }
  if (!request.mayMeasure)
    return fallBack(
        replaced.empty()
            ? std::string("netc estimate, or a netc train of one process, measures this machine's "
                          "table once (a few seconds) and keeps it for later runs")
            : replaced + "; netc estimate measures it again");
  std::error_code ec;
  std::filesystem::create_directories(*folder, ec);
  if (ec)
    return fallBack(fmt::format("cannot make netc's cache folder {}: {}", folder->string(), ec.message()));
  const auto started = std::chrono::steady_clock::now();
  const CalibrateResult measured =
      calibrate(quickCalibration(path, request), request.progress, request.context);
  if (!measured.ok())
    return fallBack("measuring this machine's table failed: " + measured.error);
  auto table = cost::readCostTable(path);
  if (!table)
    return fallBack("the table just measured does not read back: " + table.message());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CostTableChoice choice{std::move(*table), kMachineCostTable, path, ""};
  choice.note = fmt::format(
      "measured this machine's cost table in {:.1f} s{}, and keeps it in {} for later runs{}", seconds,
      machineAsked || builtinDifferences.empty()
          ? std::string()
          : fmt::format(" (the built-in one describes another machine: {})",
                        joinDifferences(builtinDifferences)),
      path, replaced.empty() ? std::string() : fmt::format(" ({}: replaced)", replaced));
  if (choice.table.machine && choice.table.machine->busyTasks > 0)
    choice.note += "; " + busyNote(choice.table.machine->busyTasks);
  return choice;
}

} // namespace netc::training
