// SourceFile.cpp -- line table construction, offset <-> line/column maps,
// and the bounded reading of a source file (readSourceText).
#include "support/SourceFile.h"

#include "support/ByteSize.h"
#include "support/InputFile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace netc {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n')
      lineStarts_.push_back(i + 1);
}

LineColumn SourceFile::lineColumn(uint32_t offset) const {
  offset = std::min(offset, size());
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - lineStarts_.begin());
  return {line, offset - lineStarts_[line - 1] + 1};
}

LineColumn SourceFile::lineColumnUtf16(uint32_t offset) const {
  offset = std::min(offset, size());
  LineColumn bytes = lineColumn(offset);
  uint32_t units = 0;
  for (uint32_t i = lineStarts_[bytes.line - 1]; i < offset; ++i) {
    auto c = static_cast<unsigned char>(text_[i]);
    if ((c & 0xC0) == 0x80)
      continue; // continuation byte
    units += (c >= 0xF0) ? 2 : 1;
  }
  return {bytes.line, units + 1};
}

uint32_t SourceFile::offsetOf(LineColumn position) const {
  if (position.line < 1)
    return 0;
  if (position.line > lineStarts_.size())
    return size();
  uint32_t start = lineStarts_[position.line - 1];
  uint32_t lineEnd = position.line < lineStarts_.size() ? lineStarts_[position.line] : size();
  uint32_t column = position.column < 1 ? 1 : position.column;
  return std::min(start + column - 1, lineEnd);
}

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line < 1 || line > lineStarts_.size())
    return {};
  uint32_t start = lineStarts_[line - 1];
  uint32_t end = line < lineStarts_.size() ? lineStarts_[line] : size();
  std::string_view text(text_.data() + start, end - start);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

std::string_view SourceFile::slice(SourceRange range) const {
  uint32_t begin = std::min(range.begin, size());
  uint32_t end = std::min(std::max(range.end, begin), size());
  return std::string_view(text_).substr(begin, end - begin);
}

std::string sourceTooLargeReason(uint64_t size, uint64_t maxBytes, bool atLeast) {
  return fmt::format("it is {}{}, more than the {} a Net# source file may have (raise the limit with "
                     "--max-source-size)",
                     atLeast ? "more than " : "", byteSizeText(size), byteSizeText(maxBytes));
}

std::optional<std::string> readSourceText(const std::string &path, uint64_t maxBytes, std::string &error) {
  auto tooLarge = [&](uint64_t size, bool atLeast) {
    error = sourceTooLargeReason(size, maxBytes, atLeast);
    return std::nullopt;
  };
  // A regular file or a shell's pipe (`cat x | netc check /dev/stdin`); a
  // FIFO, a device or a socket is refused without blocking on it.
  const int fd = openInputFile(path, error, /*allowPipe=*/true);
  if (fd < 0)
    return std::nullopt;
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > maxBytes)
    return tooLarge(static_cast<uint64_t>(info.st_size), false);
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    // Never more than maxBytes + 1 bytes in all: one past the limit is enough to refuse.
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof chunk, maxBytes + 1 - text.size()));
    const ssize_t got = ::read(fd, chunk, want);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      error = std::strerror(errno);
      return std::nullopt;
    }
    if (got == 0)
      break;
    if (text.size() + static_cast<size_t>(got) > maxBytes)
      return tooLarge(maxBytes, true);
    text.append(chunk, static_cast<size_t>(got));
  }
  return text;
}

} // namespace netc
