// Documents.h -- the open documents of an LSP session: text and version per
// URI, incremental edits applied at LSP positions (0-based lines, UTF-16
// code units, as the protocol requires), and the conversions between those
// positions and the compiler's byte offsets.
#pragma once

#include "support/SourceFile.h"
#include "support/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc::lsp {

/// An LSP position: 0-based line and UTF-16 column.
struct Position {
  int64_t line = 0;
  int64_t character = 0;
};

/// The lines of a text as the protocol counts them: "\n", "\r\n" and a lone
/// "\r" each end a line; columns count UTF-16 units (a 4-byte UTF-8
/// sequence is two, any other lead byte, valid or not, one).
class LineIndex {
public:
  explicit LineIndex(std::string_view text);
  /// The byte offset of `position`: a column past the line's end clamps to
  /// the end of the line (before its line break), a line past the last one
  /// to the end of the text.
  uint32_t offsetOf(Position position) const;
  /// The position of a byte offset (clamped to the text).
  Position positionOf(uint32_t offset) const;
  int64_t lineCount() const { return static_cast<int64_t>(starts_.size()); }
  /// The byte range of line `line`'s text, without its line break.
  uint32_t lineStart(int64_t line) const { return starts_[static_cast<size_t>(line)]; }
  uint32_t lineEnd(int64_t line) const { return ends_[static_cast<size_t>(line)]; }

private:
  std::string_view text_;
  std::vector<uint32_t> starts_; // first byte of each line
  std::vector<uint32_t> ends_;   // first byte of each line's break (or the text's end)
};

/// offsetOf through a LineIndex built for the call.
uint32_t offsetOf(std::string_view text, Position position);

struct Document {
  std::string text;
  int64_t version = 0;
};

class Documents {
public:
  void open(const std::string &uri, std::string text, int64_t version);
  void close(const std::string &uri);
  const Document *find(const std::string &uri) const;
  /// Replaces [start, end) (LSP positions) with `text`; the whole document
  /// when no range is given. Fails when `start` comes after `end`.
  Status edit(const std::string &uri, std::optional<std::pair<Position, Position>> range,
              const std::string &text);
  void setVersion(const std::string &uri, int64_t version);

private:
  std::map<std::string, Document> documents_;
};

} // namespace netc::lsp
