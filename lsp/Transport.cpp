// Transport.cpp -- Content-Length framing over file descriptors (see
// Transport.h): header parsing with size limits, resynchronisation after
// oversized or malformed messages (skipped in chunks, never held whole), and
// whole writes.
#include "lsp/Transport.h"

#include "support/ByteSize.h"

#include <fmt/format.h>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>

namespace netc::lsp {

namespace {

constexpr std::string_view kLengthName = "content-length:";
/// How far past the name a resynchronising `Content-Length:` line may run
/// (blanks, digits, CR LF) before the candidate is dropped.
constexpr size_t kMaxLengthValueBytes = 64;

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool isBlank(char c) {
  return c == ' ' || c == '\t';
}

/// A Content-Length value as written, shortened when it is very long.
std::string lengthText(std::string_view digits) {
  constexpr size_t kShown = 40;
  if (digits.size() <= kShown)
    return std::string(digits);
  return fmt::format("{}... ({} digits)", digits.substr(0, kShown / 2), digits.size());
}

} // namespace

uint64_t maxMessageBytesFor(uint64_t maxDocumentBytes) {
  return std::max<uint64_t>(kMaxMessageBytes,
                            maxDocumentBytes > UINT64_MAX / 4 ? UINT64_MAX : 4 * maxDocumentBytes);
}

bool MessageReader::fill() {
  if (ended_)
    return false;
  // Drop what was consumed, so skipping a long stream keeps the buffer small.
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR)
      continue;
    ended_ = true;
    return false;
  }
}

bool MessageReader::waitReadable(int milliseconds) {
  if (start_ < buffer_.size() || ended_)
    return true;
  pollfd p{fd_, POLLIN, 0};
  const int r = ::poll(&p, 1, milliseconds);
  return r != 0; // readable, hung up, or an error that the next read reports
}

std::optional<bool> MessageReader::lengthLineAt(size_t at) const {
  size_t i = at;
  for (const char expected : kLengthName) {
    if (i == buffer_.size())
      return std::nullopt;
    if (lower(buffer_[i++]) != expected)
      return false;
  }
  const size_t limit = i + kMaxLengthValueBytes;
  while (i < buffer_.size() && i < limit && isBlank(buffer_[i]))
    ++i;
  const size_t digits = i;
  while (i < buffer_.size() && i < limit && std::isdigit(static_cast<unsigned char>(buffer_[i])))
    ++i;
  if (i < buffer_.size() && i < limit && i == digits)
    return false; // no digits
  while (i < buffer_.size() && i < limit && isBlank(buffer_[i]))
    ++i;
  if (i < buffer_.size() && i < limit && buffer_[i] == '\r')
    ++i;
  if (i >= limit)
    return false;
  if (i == buffer_.size())
    return std::nullopt;
  return buffer_[i] == '\n';
}

MessageReader::Result MessageReader::resynchronise(std::string &error) {
  size_t at = start_;
  for (;;) {
    while (at < buffer_.size() && lower(buffer_[at]) != kLengthName[0])
      ++at;
    if (at < buffer_.size()) {
      const std::optional<bool> found = lengthLineAt(at);
      if (found == true) {
        start_ = at;
        resynchronising_ = false;
        skippedLength_.reset();
        return Result::Message; // a header starts at start_
      }
      if (found == false) {
        ++at;
        continue;
      }
    }
    // Need more bytes: keep only the candidate (if any), drop the rest.
    start_ = at;
    if (!fill()) {
      start_ = buffer_.size();
      if (!skippedLength_)
        return Result::EndOfInput; // the malformed message was reported already
      error = fmt::format("the input ended inside the body of the {}-byte message being skipped; "
                          "the stream is unusable",
                          *skippedLength_);
      skippedLength_.reset();
      return Result::Unusable;
    }
    at = start_;
  }
}

MessageReader::Result MessageReader::malformed(std::string &error, std::string problem) {
  error = std::move(problem);
  resynchronising_ = true;
  return Result::Malformed;
}

MessageReader::Result MessageReader::headerTooLong(std::string &error) {
  // Drop the first line (at most the limit's worth of it) and resynchronise
  // on what follows, where the next header may already be.
  const size_t newline = buffer_.find('\n', start_);
  start_ = newline != std::string::npos && newline - start_ < kMaxHeaderBytes ? newline + 1
                                                                              : start_ + kMaxHeaderBytes;
  return malformed(error, fmt::format("a message header is longer than {} bytes", kMaxHeaderBytes));
}

MessageReader::Result MessageReader::read(std::string &body, std::string &error) {
  if (resynchronising_) {
    const Result r = resynchronise(error);
    if (r != Result::Message)
      return r;
  }
  // The header block: lines (CR LF, or a bare LF) up to an empty line. Blank
  // lines before it are skipped. Offsets are relative to start_, which
  // fill() may move.
  size_t lineBegin = 0;
  size_t headerEnd = 0, bodyBegin = 0;
  for (;;) {
    const size_t newline = buffer_.find('\n', start_ + lineBegin);
    if (newline == std::string::npos) {
      if (buffer_.size() - start_ > kMaxHeaderBytes)
        return headerTooLong(error);
      if (!fill()) {
        if (start_ < buffer_.size() && buffer_.find_first_not_of(" \r\n\t", start_) != std::string::npos) {
          start_ = buffer_.size();
          error = "the input ended inside a message header";
          return Result::Malformed;
        }
        return Result::EndOfInput;
      }
      continue;
    }
    size_t lineEnd = newline;
    if (lineEnd > start_ + lineBegin && buffer_[lineEnd - 1] == '\r')
      --lineEnd;
    if (lineEnd == start_ + lineBegin) { // an empty line
      if (lineBegin == 0) {
        start_ = newline + 1; // blank lines between messages
        continue;
      }
      headerEnd = lineBegin;
      bodyBegin = newline + 1 - start_;
      break;
    }
    lineBegin = newline + 1 - start_;
    if (lineBegin > kMaxHeaderBytes)
      return headerTooLong(error);
  }
  const std::string header(buffer_, start_, headerEnd);
  start_ += bodyBegin;
  std::optional<uint64_t> length;
  std::string_view lengthDigits; // the value as written (in `header`)
  size_t lineStart = 0;
  while (lineStart < header.size()) {
    size_t lineEnd = header.find('\n', lineStart);
    if (lineEnd == std::string::npos)
      lineEnd = header.size();
    std::string_view line(header.data() + lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return malformed(
          error, fmt::format("malformed header line '{}' (expected 'Name: value')", line.substr(0, 80)));
    std::string name(line.substr(0, colon));
    for (char &c : name)
      c = lower(c);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && isBlank(value.front()))
      value.remove_prefix(1);
    while (!value.empty() && isBlank(value.back()))
      value.remove_suffix(1);
    if (name == "content-length") {
      uint64_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range && ptr == value.data() + value.size()) {
        n = UINT64_MAX; // more digits than fit: oversized (reported as written)
      } else if (ec != std::errc() || ptr != value.data() + value.size()) {
        return malformed(error, fmt::format("Content-Length '{}' is not a number", value.substr(0, 40)));
      }
      length = n;
      lengthDigits = value;
    }
  }
  if (!length)
    return malformed(error, "a message header has no Content-Length");
  if (*length > maxMessageBytes_) {
    // Answer now; the body is skipped (in chunks, never held) by scanning for
    // the next header -- a `Content-Length:` line, which valid JSON cannot
    // contain -- whether or not the declared size ever arrives.
    skippedLength_ = lengthText(lengthDigits);
    return malformed(error, fmt::format("a message of {} bytes is larger than the {} bytes ({}) allowed; "
                                        "its body is skipped up to the next header",
                                        *skippedLength_, maxMessageBytes_, byteSizeText(maxMessageBytes_)));
  }
  while (buffer_.size() - start_ < *length)
    if (!fill()) {
      error = fmt::format("the input ended inside a message body ({} of {} bytes)", buffer_.size() - start_,
                          *length);
      start_ = buffer_.size();
      return Result::Malformed;
    }
  body.assign(buffer_, start_, static_cast<size_t>(*length));
  start_ += static_cast<size_t>(*length);
  return Result::Message;
}

bool writeMessage(int fd, std::string_view body) {
  std::string framed = fmt::format("Content-Length: {}\r\n\r\n", body.size());
  framed.append(body);
  size_t done = 0;
  while (done < framed.size()) {
    const ssize_t n = ::write(fd, framed.data() + done, framed.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace netc::lsp
