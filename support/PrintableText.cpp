// PrintableText.cpp -- escaping control bytes for messages (PrintableText.h).
#include "support/PrintableText.h"

#include <fmt/format.h>

namespace netc {

std::string printableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (isControlByte(static_cast<unsigned char>(c)))
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
    else
      out.push_back(c);
  }
  return out;
}

} // namespace netc
