// CostTable.h -- the per-backend constants of the cost model (docs/estimate.md):
// for each op kind of codegen/Ops.def an overhead and a rate (FLOP/s for the
// arithmetic ops, bytes/s for the others), per thread count; a step's and a
// sample's host overhead; and the links between devices as α + n/β. A table
// is a JSON file that `netc calibrate` measures and writes; the CPU table of
// this project's machine kind and one for an H100 from public figures are
// built into netc (codegen/cost/). Reading a table checks every field and
// names the one that is wrong; nothing here runs or measures anything.
#pragma once

#include "codegen/MachineDescription.h"
#include "codegen/Plan.h"
#include "support/Status.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc::cost {

/// The version of the file format this netc reads and writes.
inline constexpr int kCostTableFormat = 1;

/// What an op kind's time grows with: its arithmetic or the bytes it moves.
enum class WorkMeasure { Flops, Bytes };
/// The measure of `kind` (one definition: codegen/CostModel.cpp).
WorkMeasure workMeasure(plan::OpKind kind);
/// Whether the table has (and must have) a rate for `kind`: every op but the
/// communication ops, whose time the links give, and the ops priced as
/// another (rateKind).
bool hasRate(plan::OpKind kind);
/// The op whose rate prices `kind`: itself, or for concat-nodes (a copy of
/// a batch of nodes, new since tables were first calibrated) slice-input's.
plan::OpKind rateKind(plan::OpKind kind);

/// time = overheadUs + work / rate (+ bytes / byteRate), with work in FLOPs
/// or bytes (workMeasure). An arithmetic op's byteRate adds the time its
/// memory traffic takes beyond its arithmetic (a small batch's weights).
struct OpRate {
  double overheadUs = 0;
  double rate = 1;     ///< FLOP/s or bytes/s (> 0)
  double byteRate = 0; ///< arithmetic ops: bytes/s of their traffic (0: no such term); others 0
};

/// The compute constants at one thread count (0: a device, where the host's
/// threads do not matter).
struct ComputeProfile {
  int threads = 0;
  /// Ranks computing at once on the machine when it was measured (1: alone;
  /// more when data-parallel ranks share the machine's cores and memory).
  int ranks = 1;
  std::map<plan::OpKind, OpRate> ops; ///< every kind for which hasRate holds
  double stepOverheadUs = 0;          ///< host work per step beyond the ops
  double sampleOverheadUs = 0;        ///< host work per sample (gathering the batch)
};

/// One measured all-reduce: `bytes` over `ranks` ranks took `us`.
struct AllReducePoint {
  double bytes = 0;
  int ranks = 2;
  double us = 0;
};

/// A link between two devices: a message of n bytes takes alphaUs + n / bytesPerSecond.
struct Link {
  double alphaUs = 0;
  double bytesPerSecond = 1;
  std::string source; ///< "measured by netc calibrate ..." or where the figures come from
  /// Measured all-reduces by increasing size (optional). A library changes
  /// its algorithm with the size, so one line over all sizes misses some of
  /// them by 2x; these points correct the line where they were measured.
  std::vector<AllReducePoint> allReduces;
  /// Microseconds for n bytes point to point.
  double sendUs(double bytes) const;
  /// Microseconds of a ring all-reduce of n bytes over `ranks` ranks:
  /// 2(N-1) steps of α plus 2(N-1)/N · n / β (0 for one rank), times the
  /// measured-to-modelled ratio of the points, interpolated in log(bytes)
  /// and held at the ends (1 without points).
  double allReduceUs(double bytes, int ranks) const;
  /// The line alone, without the points' correction.
  double ringAllReduceUs(double bytes, int ranks) const;
};

inline constexpr std::string_view kIntraNode = "intra-node", kInterNode = "inter-node";

/// Writing a checkpoint of n bytes (write, fsync, rename, fsync of the
/// folder, as runtime/train does) takes overheadUs + n / bytesPerSecond.
struct Storage {
  double overheadUs = 0;
  double bytesPerSecond = 1;
  std::string source;
  double writeUs(double bytes) const { return overheadUs + bytes / bytesPerSecond * 1e6; }
};

struct CostTable {
  std::string backend;                            ///< the backend it was measured on: "cpu", "cuda"
  std::string device;                             ///< what it was measured on, in words
  std::string source;                             ///< how it was made (command and date, or public figures)
  uint64_t memoryBytes = 0;                       ///< memory per device
  int devicesPerNode = 1;                         ///< ranks that share the intra-node link
  std::vector<ComputeProfile> profiles;           ///< by increasing threads, at least one
  std::map<std::string, Link, std::less<>> links; ///< kIntraNode and kInterNode
  /// Checkpoint writes (optional: a table without it leaves them out).
  std::optional<Storage> storage;
  /// The machine it was measured on (optional: older tables and public figures have none).
  std::optional<MachineDescription> machine;

  /// The profile for `threads` (0: the machine's cores) with `ranks` ranks
  /// computing at once on the machine: among those measured so (else those
  /// measured alone), the one at that thread count, else the nearest below
  /// (or the smallest) -- `note` then says which was used.
  const ComputeProfile &profileFor(int threads, std::string *note = nullptr, int ranks = 1) const;
  /// The link between ranks of a job of `ranks`: intra-node up to
  /// devicesPerNode ranks, else inter-node.
  const Link &linkFor(int ranks) const;
};

/// Reads a table; `fileName` starts every message, which names the line of
/// a syntax error or the field (e.g. "profiles[1].ops.dense.rate") that is
/// missing, of the wrong type or out of range, and what it must be.
Expected<CostTable> parseCostTable(std::string_view text, std::string_view fileName);
/// The table as JSON text that parseCostTable reads back to the same values.
std::string costTableJson(const CostTable &table);
/// Reads and parses FILE (at most 1 MiB).
Expected<CostTable> readCostTable(const std::string &path);

/// The tables built into netc: "cpu" (this project's machine kind, measured
/// with netc calibrate) and "h100" (public figures); nothing for another name.
std::optional<CostTable> builtinCostTable(std::string_view name);
/// The names builtinCostTable knows.
std::vector<std::string> builtinCostTableNames();
/// The table `spec` names: a built-in name, else a file (a name that is
/// neither says which built-in names there are).
Expected<CostTable> loadCostTable(std::string_view spec);

} // namespace netc::cost
