// PrintableText.cpp -- escaping control bytes for messages (PrintableText.h).
#include "support/PrintableText.h"

#include <fmt/format.h>

namespace netc {

namespace {

std::string escaped(std::string_view text, bool keepNewlines) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (isControlByte(static_cast<unsigned char>(c)) && !(keepNewlines && c == '\n'))
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
    else
      out.push_back(c);
  }
  return out;
}

} // namespace

std::string printableText(std::string_view text) {
  return escaped(text, false);
}

std::string printableMessage(std::string_view text) {
  return escaped(text, true);
}

std::string quotedExcerpt(std::string_view text, size_t limit) {
  return fmt::format("'{}{}'", printableText(text.substr(0, limit)), text.size() > limit ? "..." : "");
}

} // namespace netc
