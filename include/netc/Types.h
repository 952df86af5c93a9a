// Types.h -- small public types shared by the embedded API and the compiler
// itself: diagnostic severities, learning tasks and the compile options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace netc {

/// How serious a diagnostic is.
enum class Severity { Note, Warning, Error };

/// The learning task; it decides output defaults (D6), `auto` outputs (D10)
/// and losses (D16).
enum class Task { Unspecified, Multiclass, Binary, Regression };

/// What the host tells the compiler beyond the text: the task and data sizes
/// that resolve `auto` (D10), and limits that keep bad input from allocating
/// or looping without bound.
struct CompileOptions {
  /// Feature count of the data (resolves `input X auto` and checks inputs).
  std::optional<int64_t> inputSize;
  /// Size of `hidden H auto` layers (Azure's "Number of hidden nodes").
  int64_t hiddenNodes = 100;
  Task task = Task::Unspecified;
  /// Number of classes for a multiclass task (sizes `output O auto`).
  std::optional<int64_t> classCount;
  /// Most (source, destination) pairs a `where` predicate may be tested on.
  int64_t maxFilterPairs = int64_t{1} << 25;
  /// Most nodes in one layer.
  int64_t maxLayerNodes = int64_t{1} << 31;
  /// Most trainable parameters in the whole network.
  int64_t maxParams = int64_t{1} << 36;
  /// Stop after this many errors (0: report every error). The default keeps
  /// a file of garbage from producing millions of diagnostics.
  size_t maxErrors = 200;
  /// Largest source text compiled (compile, compileFile, the CLI, the
  /// language server): 4 MiB by default. Real Net# files are under 10 KB and
  /// the largest generated test network is 1.6 MB, while checking a file
  /// takes up to about 100 times its size in memory (docs/performance.md), so
  /// a larger text is refused unread (NS0001) unless the limit is raised.
  uint64_t maxSourceBytes = uint64_t{4} << 20;
};

/// The most --max-source-size may be: offsets into a source are 32-bit.
inline constexpr uint64_t kMaxSourceBytesLimit = uint64_t{2} << 30;

} // namespace netc
