// Transport.h -- LSP's base protocol over file descriptors: messages framed
// by a `Content-Length` header and a blank line, JSON bodies. Reading is
// bounded (header and body sizes) and survives malformed framing: a bad
// header block is reported and skipped, so the server can answer with a
// protocol error instead of hanging or crashing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace netc::lsp {

/// The largest message body accepted (bigger ones are skipped and reported).
constexpr size_t kMaxMessageBytes = size_t{64} << 20;
/// The largest header block accepted.
constexpr size_t kMaxHeaderBytes = size_t{16} << 10;

class MessageReader {
public:
  explicit MessageReader(int fd) : fd_(fd) {}

  enum class Result { Message, EndOfInput, Malformed };
  /// Blocks for the next message. Malformed: `error` says what was wrong;
  /// the offending bytes are consumed and reading can go on.
  Result read(std::string &body, std::string &error);
  /// Whether a message may be read without waiting up to `milliseconds`
  /// (buffered bytes, or the descriptor becomes readable / reaches its end).
  bool waitReadable(int milliseconds);

private:
  bool fill(); // reads more bytes; false at the end of input
  int fd_;
  std::string buffer_;
  size_t start_ = 0; // first unread byte of buffer_
  bool ended_ = false;
};

/// Writes one framed message; false when the descriptor is closed.
bool writeMessage(int fd, std::string_view body);

} // namespace netc::lsp
