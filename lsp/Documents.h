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

namespace netc::lsp {

/// An LSP position: 0-based line and UTF-16 column.
struct Position {
  int64_t line = 0;
  int64_t character = 0;
};

/// The byte offset of `position` in `text`: a column past the line's end
/// clamps to the end of the line, a line past the end to the end of text.
uint32_t offsetOf(std::string_view text, Position position);
/// The LSP position of a byte offset in `file`.
Position positionOf(const SourceFile &file, uint32_t offset);

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
