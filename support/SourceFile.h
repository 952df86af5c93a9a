// SourceFile.h -- one Net# source text with its name and a line table, so
// byte offsets convert to 1-based line/column pairs (bytes or UTF-16 units).
#pragma once

#include "support/SourceRange.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc {

/// A 1-based line and column. Columns count bytes unless stated otherwise.
struct LineColumn {
  uint32_t line = 1;
  uint32_t column = 1;
  bool operator==(const LineColumn &) const = default;
};

/// An immutable source buffer plus its line-start table.
class SourceFile {
public:
  SourceFile(std::string name, std::string text);

  const std::string &name() const { return name_; }
  const std::string &text() const { return text_; }
  uint32_t size() const { return static_cast<uint32_t>(text_.size()); }

  /// Line and byte column (both 1-based) of a byte offset; offsets past the
  /// end clamp to the end of the text.
  LineColumn lineColumn(uint32_t offset) const;
  /// Line and column counted in UTF-16 code units (for LSP).
  LineColumn lineColumnUtf16(uint32_t offset) const;
  /// Byte offset of a 1-based line/byte column (clamped to the text).
  uint32_t offsetOf(LineColumn position) const;
  /// The text of a 1-based line, without its line terminator.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }
  std::string_view slice(SourceRange range) const;

private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

/// Reads a whole source file of at most `maxBytes` bytes; otherwise nothing,
/// and `error` says why: the system's reason, that it is not a file (a FIFO,
/// a device: InputFile.h; a shell's pipe is read), or that the file is
/// larger than the limit (with both sizes and the --max-source-size flag).
/// Never reads more than maxBytes + 1 bytes, so a huge file or an endless
/// pipe is refused without being loaded.
std::optional<std::string> readSourceText(const std::string &path, uint64_t maxBytes, std::string &error);

/// Why a source of `size` bytes (with `atLeast`: more than `size`) is
/// refused under the limit `maxBytes`: "it is 5.0 MiB, more than the 4.0 MiB
/// a Net# source file may have (raise the limit with --max-source-size)".
std::string sourceTooLargeReason(uint64_t size, uint64_t maxBytes, bool atLeast = false);

} // namespace netc
