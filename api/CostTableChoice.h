// CostTableChoice.h -- which cost table an estimate reads (docs/estimate.md,
// "A table from another machine"): the one --cost-model names, else the
// built-in table where it describes this machine, else this machine's own,
// cached in netc's cache folder and measured there the first time (a quick
// netc calibrate of a few seconds). The choice says when the table it
// returns was measured on another machine.
#pragma once

#include "codegen/CostTable.h"
#include "netc/Estimate.h"
#include "support/Status.h"

#include <filesystem>
#include <optional>
#include <string>

namespace netc::training {

/// The --cost-model name of this machine's cached table.
inline constexpr const char *kMachineCostTable = "machine";

struct CostTableRequest {
  /// --cost-model: a file, a built-in name, "machine"; empty or "auto": the
  /// built-in table of the device where it describes this machine, else
  /// this machine's.
  std::string spec;
  std::string device = "cpu";      ///< the run's --device (cuda or cuda:N: the GPU table)
  std::string cpuIsa, denseKernel; ///< as --cpu-isa and --dense-kernel
  /// Measure this machine's table where no table describes it (one process
  /// alone on the machine; never several ranks, which would time each other).
  bool mayMeasure = false;
  CalibrateProgress progress = nullptr; ///< while measuring
  void *context = nullptr;
};

struct CostTableChoice {
  cost::CostTable table;
  std::string label; ///< its name in messages: a built-in name, "machine", a file
  std::string file;  ///< where this machine's table is kept ("machine"); else empty
  /// What the estimate's reader should know about the table, in a sentence:
  /// it was measured just now, or on another machine. Empty otherwise.
  std::string note;
};

/// netc's cache folder's table folder: $NETC_CACHE_DIR/cost-tables, else
/// $XDG_CACHE_HOME/netc/cost-tables, else ~/.cache/netc/cost-tables; none
/// where NETC_CACHE_DIR is set empty (the cache turned off) or no home is known.
std::optional<std::filesystem::path> costTableCacheFolder();

/// The quick calibration that measures a machine's table the first time:
/// every probe at batches 8 and 128, one round of 8 steps (a few seconds).
CalibrateSettings quickCalibration(const std::string &outPath, const CostTableRequest &request);

/// The table `request` asks for, as the file header describes. An error
/// only for a --cost-model that cannot be read (or "machine" where it
/// cannot be measured); a failed measurement falls back to the built-in
/// table, and the note says why.
Expected<CostTableChoice> chooseCostTable(const CostTableRequest &request);

} // namespace netc::training
