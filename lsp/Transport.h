// Transport.h -- LSP's base protocol over file descriptors: messages framed
// by a `Content-Length` header and a blank line, JSON bodies. Reading is
// bounded (header and body sizes) and survives malformed framing: a bad
// header block or an oversized message is reported at once, then the
// reader resynchronises on the next `Content-Length:` line, discarding the
// bytes before it in chunks, so the server answers with a protocol error
// instead of hanging, crashing or holding the body in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc::lsp {

/// The largest message body accepted by default, 16 MiB (bigger ones are
/// reported and skipped unread): four times the 4 MiB a document may have
/// (CompileOptions::maxSourceBytes), room for a document at that limit in a
/// didOpen or didChange even with many of its bytes escaped in JSON.
constexpr size_t kMaxMessageBytes = size_t{16} << 20;
/// The message limit for documents of at most `maxDocumentBytes`: 4 times
/// that, and never less than kMaxMessageBytes.
uint64_t maxMessageBytesFor(uint64_t maxDocumentBytes);
/// The largest header block accepted (also bounds each header line).
constexpr size_t kMaxHeaderBytes = size_t{16} << 10;

class MessageReader {
public:
  explicit MessageReader(int fd, uint64_t maxMessageBytes = kMaxMessageBytes)
      : fd_(fd), maxMessageBytes_(maxMessageBytes) {}

  /// Malformed: `error` says what was wrong; reading can go on (the next
  /// read skips to the next header). Unusable: the input ended inside the
  /// body of an oversized message being skipped; `error` says so and
  /// nothing more can be read.
  enum class Result { Message, EndOfInput, Malformed, Unusable };
  /// Blocks for the next message. Header lines end with CR LF (a bare LF is
  /// accepted too).
  Result read(std::string &body, std::string &error);
  /// Whether a message may be read without waiting up to `milliseconds`
  /// (buffered bytes, or the descriptor becomes readable / reaches its end).
  bool waitReadable(int milliseconds);

private:
  bool fill(); // reads more bytes (dropping consumed ones); false at the end of input
  /// Reports `problem` and makes the next read resynchronise.
  Result malformed(std::string &error, std::string problem);
  /// Reports a header block over kMaxHeaderBytes and skips its first line.
  Result headerTooLong(std::string &error);
  /// Discards input up to the next `Content-Length: N` line (Message: a
  /// header starts at start_).
  Result resynchronise(std::string &error);
  /// Whether a `Content-Length: N` line starts at buffer_[at]; nullopt when
  /// more bytes are needed to tell.
  std::optional<bool> lengthLineAt(size_t at) const;

  int fd_;
  uint64_t maxMessageBytes_;
  std::string buffer_;
  size_t start_ = 0; // first unread byte of buffer_
  bool ended_ = false;
  bool resynchronising_ = false;
  /// The declared size of the oversized message being skipped, if any, as
  /// the client wrote it (it may not fit in 64 bits).
  std::optional<std::string> skippedLength_;
};

/// Writes one framed message; false when the descriptor is closed.
bool writeMessage(int fd, std::string_view body);

} // namespace netc::lsp
