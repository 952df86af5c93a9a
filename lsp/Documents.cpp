// Documents.cpp -- the open-document store and the UTF-16 position
// conversions (a 4-byte UTF-8 sequence is two UTF-16 units, as in
// SourceFile::lineColumnUtf16; any other lead byte, valid or not, is one).
#include "lsp/Documents.h"

#include <fmt/format.h>

namespace netc::lsp {

uint32_t offsetOf(std::string_view text, Position position) {
  if (position.line < 0)
    return 0;
  size_t start = 0;
  for (int64_t line = 0; line < position.line; ++line) {
    const size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos)
      return static_cast<uint32_t>(text.size());
    start = newline + 1;
  }
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos)
    end = text.size();
  if (end > start && text[end - 1] == '\r')
    --end;
  int64_t units = 0;
  size_t i = start;
  while (i < end && units < position.character) {
    const auto c = static_cast<unsigned char>(text[i]);
    units += c >= 0xF0 ? 2 : 1;
    ++i;
    while (i < end && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80)
      ++i; // the rest of the character
  }
  return static_cast<uint32_t>(i);
}

Position positionOf(const SourceFile &file, uint32_t offset) {
  const LineColumn lc = file.lineColumnUtf16(offset);
  return {int64_t{lc.line} - 1, int64_t{lc.column} - 1};
}

void Documents::open(const std::string &uri, std::string text, int64_t version) {
  documents_[uri] = Document{std::move(text), version};
}

void Documents::close(const std::string &uri) {
  documents_.erase(uri);
}

const Document *Documents::find(const std::string &uri) const {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : &it->second;
}

Status Documents::edit(const std::string &uri, std::optional<std::pair<Position, Position>> range,
                       const std::string &text) {
  auto it = documents_.find(uri);
  if (it == documents_.end())
    return fail(fmt::format("document '{}' is not open", uri));
  std::string &current = it->second.text;
  if (!range) {
    current = text;
    return Status::success();
  }
  const uint32_t begin = offsetOf(current, range->first), end = offsetOf(current, range->second);
  if (begin > end)
    return fail(fmt::format("the edit's start ({}:{}) comes after its end ({}:{})", range->first.line,
                            range->first.character, range->second.line, range->second.character));
  current.replace(begin, end - begin, text);
  return Status::success();
}

void Documents::setVersion(const std::string &uri, int64_t version) {
  if (auto it = documents_.find(uri); it != documents_.end())
    it->second.version = version;
}

} // namespace netc::lsp
