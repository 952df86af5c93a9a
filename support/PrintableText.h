// PrintableText.h -- text from a user's file made safe to print in a
// message: control bytes (other than tab) and DEL become \xNN, so a raw ESC
// or BEL cannot act on the terminal and a NUL cannot cut the message.
#pragma once

#include <string>
#include <string_view>

namespace netc {

/// Whether `c` is printed escaped: a control byte other than tab, or DEL.
inline bool isControlByte(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7F;
}

/// `text` with every control byte written as \xNN (uppercase hex); other
/// bytes, UTF-8 included, as they are.
std::string printableText(std::string_view text);

/// The same for a message of several lines: its newlines are kept, every
/// other control byte escaped (a path or a field inside it cannot act on the
/// terminal).
std::string printableMessage(std::string_view text);

/// printableText of at most `limit` bytes of `text`, in single quotes,
/// with "..." after a cut: 'AMD EPYC 9B14', for a message.
std::string quotedExcerpt(std::string_view text, size_t limit = 60);

} // namespace netc
