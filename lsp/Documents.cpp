// Documents.cpp -- the open-document store and the protocol's positions:
// lines ended by "\n", "\r\n" or "\r", columns in UTF-16 units (a 4-byte
// UTF-8 sequence is two, as in SourceFile::lineColumnUtf16; any other lead
// byte, valid or not, is one).
#include "lsp/Documents.h"

#include <fmt/format.h>

#include <algorithm>

namespace netc::lsp {

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (uint32_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r')
      continue;
    ends_.push_back(i);
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      ++i;
    starts_.push_back(i + 1);
  }
  ends_.push_back(static_cast<uint32_t>(text.size()));
}

uint32_t LineIndex::offsetOf(Position position) const {
  if (position.line < 0)
    return 0;
  if (position.line >= static_cast<int64_t>(starts_.size()))
    return static_cast<uint32_t>(text_.size());
  const uint32_t end = ends_[static_cast<size_t>(position.line)];
  uint32_t i = starts_[static_cast<size_t>(position.line)];
  int64_t units = 0;
  while (i < end && units < position.character) {
    const auto c = static_cast<unsigned char>(text_[i]);
    units += c >= 0xF0 ? 2 : 1;
    ++i;
    while (i < end && (static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80)
      ++i; // the rest of the character
  }
  return i;
}

Position LineIndex::positionOf(uint32_t offset) const {
  offset = std::min(offset, static_cast<uint32_t>(text_.size()));
  const size_t line =
      static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  const uint32_t end = std::min(offset, ends_[line]); // inside a "\r\n": at the line's end
  int64_t units = 0;
  for (uint32_t i = starts_[line]; i < end; ++i) {
    const auto c = static_cast<unsigned char>(text_[i]);
    if ((c & 0xC0) == 0x80)
      continue; // continuation byte
    units += c >= 0xF0 ? 2 : 1;
  }
  return {static_cast<int64_t>(line), units};
}

uint32_t offsetOf(std::string_view text, Position position) {
  return LineIndex(text).offsetOf(position);
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
