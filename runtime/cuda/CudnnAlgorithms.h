// CudnnAlgorithms.h -- which cuDNN algorithm a convolution call uses, and
// the file that remembers it. cuDNN's cudnnFind* routines time every
// algorithm for a call's shapes; netc takes the fastest deterministic one
// whose math is allowed (FP32: no TF32), and keeps the choice on disk per
// device, cuDNN version, precision and shapes, so a later run on the same
// machine starts without measuring. Pure host code, tested on the CPU; the
// cache file is plain text, and a damaged one costs a new measurement,
// never a failure.
#pragma once

#include "support/Status.h"

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace netc::runtime::cuda {

/// One algorithm as cudnnFind* reports it (cudnnConvolution*AlgoPerf_t).
struct AlgorithmTrial {
  int algorithm = 0;
  bool ok = false; // its status was CUDNN_STATUS_SUCCESS
  float milliseconds = 0;
  size_t memory = 0; // workspace bytes
  bool deterministic = false;
  int mathType = 0;
};

/// The trial to use: the fastest that succeeded with an allowed math type
/// and at most `workspaceLimit` bytes of workspace, among the deterministic
/// ones if any is; none when nothing qualifies.
std::optional<size_t> pickTrial(std::span<const AlgorithmTrial> trials, std::span<const int> allowedMathTypes,
                                size_t workspaceLimit);

/// The most workspace netc lets one cuDNN call take (it is part of the
/// plan's one device block).
inline constexpr size_t kWorkspaceLimit = size_t{512} << 20;

/// A remembered choice.
struct CachedAlgorithm {
  int algorithm = 0;
  int mathType = 0;
};

/// The cache: key (pass, device, cuDNN version, precision, shapes; one line
/// without tabs) to choice. Its text: a header line, then
/// "key<TAB>algorithm<TAB>math type" per line.
struct AlgorithmCache {
  std::map<std::string, CachedAlgorithm> entries;
  bool changed = false; // entries were added since it was read
  /// The entries of `text`; malformed lines, and every line of a file with
  /// another header, are skipped.
  static AlgorithmCache parse(std::string_view text);
  std::string format() const;
};

/// Where the cache lives: $NETC_CACHE_DIR, else $XDG_CACHE_HOME/netc, else
/// $HOME/.cache/netc, with the file name cudnn-algorithms.tsv; empty when
/// none of them is set (nothing is remembered). Arguments: those variables
/// (null: unset).
std::string algorithmCachePath(const char *netcCacheDir, const char *xdgCacheHome, const char *home);

/// The cache at `path` (empty when the file is missing or unreadable).
AlgorithmCache readAlgorithmCache(const std::string &path);
/// Writes `cache` to `path` through a temporary file and a rename, creating
/// the folder; an error says why it could not.
Status writeAlgorithmCache(const std::string &path, const AlgorithmCache &cache);

} // namespace netc::runtime::cuda
