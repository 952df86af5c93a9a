// netc.h -- the embedded C++ API of netc: compile Net# text into a checked
// network, read its layers, shapes and counts, and get every diagnostic with
// its location. No ANTLR or compiler-internal types appear here.
//
//   netc::CompileResult r = netc::compile("input X [4]; output Y [2] from X all;");
//   if (r.network) for (const auto &layer : r.network->layers()) ...
//   else std::cerr << r.formatDiagnostics();
#pragma once

#include "netc/Types.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc {

/// A 1-based line and column (columns count bytes).
struct Position {
  uint32_t line = 1;
  uint32_t column = 1;
};
/// A half-open source range.
struct Range {
  Position start;
  Position end;
};

/// A diagnostic as the library reports it.
struct Message {
  struct Note {
    Range range;
    std::string message;
  };
  struct FixIt {
    Range range;
    std::string replacement;
  };
  Severity severity = Severity::Error;
  std::string code; ///< stable code, e.g. "NS0302"
  std::string message;
  std::string file;
  Range range;
  std::vector<Note> notes;
  std::vector<FixIt> fixits;
};

/// One connection bundle of a layer.
struct BundleInfo {
  std::string from; ///< source layer
  std::string kind; ///< "all", "where", "convolve", "max pool", "mean pool", "response norm"
  int64_t params = 0;
  int64_t flops = 0;
};

/// One layer with its resolved shape and counts.
struct LayerInfo {
  std::string name;
  std::string kind;           ///< "input", "hidden" or "output"
  std::vector<int64_t> shape; ///< resolved (an `auto` shape becomes [n])
  int64_t nodes = 0;
  std::optional<std::string> function; ///< none for inputs
  bool functionIsDefault = false;
  int64_t params = 0;          ///< before sharing
  int64_t flops = 0;           ///< forward FLOPs per sample
  int64_t activationBytes = 0; ///< float32 activations per sample
  std::vector<BundleInfo> bundles;
};

/// A compiled, checked network (read-only).
class Network {
public:
  struct Impl;
  explicit Network(std::shared_ptr<const Impl> impl);

  const std::string &name() const;
  const std::vector<LayerInfo> &layers() const;
  /// Unique trainable parameters after `share`.
  int64_t params() const;
  int64_t flops() const;
  /// The compiler's internal network (for netc's own runtime).
  const Impl &impl() const { return *impl_; }

private:
  std::shared_ptr<const Impl> impl_;
};

struct CompileResult {
  /// The network, when there were no errors.
  std::optional<Network> network;
  std::vector<Message> diagnostics;
  /// Compiler-style text of every diagnostic (with source lines).
  std::string formattedDiagnostics;

  bool ok() const { return network.has_value(); }
  size_t errorCount() const;
};

/// Compiles Net# source text; `name` is used in messages and as the network
/// name. A text longer than options.maxSourceBytes is not compiled: one
/// NS0001 error says so.
CompileResult compile(std::string_view source, std::string_view name = "<input>",
                      const CompileOptions &options = {});
/// Reads and compiles a file; an unreadable file is an error diagnostic.
CompileResult compileFile(const std::string &path, const CompileOptions &options = {});

/// The netc version string.
const char *version();

} // namespace netc
