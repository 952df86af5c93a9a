// ModelState.h -- moving a loaded plan's trainable state in and out of a
// backend: random initialisation (docs/language.md §17: uniform diameter, or
// Xavier / He), and checkpoints -- parameters (named after layers and
// bundles), optimizer state and training position as a safetensors file,
// checked against the plan on load so that a checkpoint of another network
// or shape is refused with a message saying what differs.
#pragma once

#include "codegen/Plan.h"
#include "runtime/core/Backend.h"
#include "support/Status.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace netc::train {

struct SafetensorsFile;

enum class InitKind { Uniform, Xavier, He };
std::string_view initName(InitKind kind);
Expected<InitKind> parseInit(std::string_view name);

struct InitOptions {
  InitKind kind = InitKind::Uniform;
  float diameter = 0.1f; // D15: uniform in [-d/2, d/2]
  uint64_t seed = 0;
};

/// Writes initial values into every parameter of the loaded plan: given
/// `Weights`/`Biases` values verbatim, else random per `options` (Xavier and
/// He start biases at 0). Optimizer state starts at 0.
void initializeParameters(const plan::Plan &plan, runtime::Backend &backend, const InitOptions &options);

/// What a checkpoint holds besides the tensors.
struct CheckpointInfo {
  std::string network;                      // network name
  std::string sourceHash;                   // hash of the .net text
  std::string optimizer;                    // optimizer name ("" in a weights-only file)
  int64_t epoch = 0;                        // epochs completed
  int64_t step = 0;                         // updates done
  std::map<std::string, std::string> extra; // normalizer, shuffle state, task, options, metrics...
  /// loadCheckpoint: the file's tensors the plan used, or left (optimizer
  /// state loaded without it); a pipeline's stages add theirs up to find a
  /// tensor that no stage uses.
  int64_t tensorsClaimed = 0;
  int64_t tensorsInFile = 0;
};

/// Saves parameters (and optimizer state when `withOptimizerState`) of the
/// loaded plan with `info`, atomically.
Status saveCheckpoint(const std::string &path, const plan::Plan &plan, const runtime::Backend &backend,
                      const CheckpointInfo &info, bool withOptimizerState = true);

/// Fails unless the safetensors file read from `path` is a netc checkpoint
/// (its metadata has "format": "netc-checkpoint").
Status checkCheckpointFormat(const SafetensorsFile &file, const std::string &path);

/// Metadata `key` of the checkpoint read from `path` as an integer from
/// `min` to `max`: nothing when the key is absent, an error naming the
/// checkpoint, the key and the range when it holds anything else (never
/// clamped: "99999999999999999999" is refused, not read as 2^63 - 1).
Expected<std::optional<int64_t>> checkpointCount(const SafetensorsFile &file, const std::string &path,
                                                 std::string_view key, int64_t min, int64_t max);

/// Reads a checkpoint written by saveCheckpoint into the loaded plan's
/// parameters (and optimizer state when `withOptimizerState`), after checking
/// that every parameter is present with the plan's shape and no extra ones
/// are, and (with state) that it was written by `optimizer` with the same
/// state slots; returns its info. The first tensor that differs is named
/// with both shapes. Every value must be finite, and a weight at most
/// data::kMaxStoredMagnitude (1e30) in magnitude: the first that is not is
/// named with its tensor and index. Parameters named in `keepAsIs` are neither checked nor
/// loaded (`netc train --init-skip`): the backend keeps what it holds, and
/// the file's tensors of the same names may have any shape or be absent.
/// `stageOnly` (a pipeline stage's plan, which holds some of the network's
/// parameters): tensors the plan lacks are left, not refused; the caller
/// adds up the stages' CheckpointInfo::tensorsClaimed.
Expected<CheckpointInfo> loadCheckpoint(const std::string &path, const plan::Plan &plan,
                                        runtime::Backend &backend, bool withOptimizerState,
                                        std::string_view optimizer = {},
                                        const std::set<std::string> &keepAsIs = {}, bool stageOnly = false);

/// The metadata keys of stateTensors' order and of a split layer's parts' rows.
inline constexpr std::string_view kNetworkOrderKey = "network_order";
inline constexpr std::string_view kPartRowsKey = "part_rows";

/// The checkpoint tensors of the loaded plan's parameters (and optimizer
/// state when `withOptimizerState`, named for `optimizer`), with metadata
/// kNetworkOrderKey: each tensor's Parameter::networkIndex, by name (a
/// file's tensors come back in its own order). A split layer's part
/// (`--split`) gives its rows, and metadata kPartRowsKey gives each such
/// tensor's [first row, whole rows], by name;
/// `partsOnly` leaves the whole tensors out (every part of a stage but
/// the first holds copies of them).
Expected<SafetensorsFile> stateTensors(const plan::Plan &plan, const runtime::Backend &backend,
                                       bool withOptimizerState, std::string_view optimizer,
                                       bool partsOnly = false);
/// The tensors of pipeline stages' (and split layers' parts')
/// stateTensors in one file, in the whole network's order (as one
/// process's stateTensors gives them), each split tensor's parts joined
/// in row order; an error says when they do not tile its rows or a whole
/// tensor came twice.
Expected<SafetensorsFile> mergeStateTensors(std::vector<SafetensorsFile> parts);
/// Writes `file`'s tensors with `info` as a checkpoint, atomically.
Status writeCheckpoint(const std::string &path, SafetensorsFile file, const CheckpointInfo &info,
                       bool withOptimizerState);

/// A stable hash of a network's text (FNV-1a, 64-bit, hex).
std::string hashSource(std::string_view text);

} // namespace netc::train
