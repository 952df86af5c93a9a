// Transport.cpp -- Content-Length framing over file descriptors (see
// Transport.h): header parsing with size limits, skipping of oversized or
// malformed messages, and whole writes.
#include "lsp/Transport.h"

#include <fmt/format.h>

#include <poll.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace netc::lsp {

bool MessageReader::fill() {
  if (ended_)
    return false;
  if (start_ > 0 && start_ == buffer_.size()) {
    buffer_.clear();
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

MessageReader::Result MessageReader::read(std::string &body, std::string &error) {
  // The header block: lines up to an empty line.
  size_t end;
  for (;;) {
    end = buffer_.find("\r\n\r\n", start_);
    if (end != std::string::npos)
      break;
    if (buffer_.size() - start_ > kMaxHeaderBytes) {
      error = fmt::format("a message header is longer than {} bytes", kMaxHeaderBytes);
      start_ = buffer_.size(); // drop it all and resynchronise on the next header
      return Result::Malformed;
    }
    if (!fill()) {
      if (start_ < buffer_.size() && buffer_.find_first_not_of(" \r\n\t", start_) != std::string::npos) {
        error = "the input ended inside a message header";
        start_ = buffer_.size();
        return Result::Malformed;
      }
      return Result::EndOfInput;
    }
  }
  if (end - start_ > kMaxHeaderBytes) {
    error = fmt::format("a message header is longer than {} bytes", kMaxHeaderBytes);
    start_ = end + 4;
    return Result::Malformed;
  }
  const std::string_view header(buffer_.data() + start_, end - start_);
  start_ = end + 4;
  std::optional<size_t> length;
  size_t lineStart = 0;
  while (lineStart <= header.size()) {
    size_t lineEnd = header.find("\r\n", lineStart);
    if (lineEnd == std::string_view::npos)
      lineEnd = header.size();
    const std::string_view line = header.substr(lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      error = fmt::format("malformed header line '{}' (expected 'Name: value')", line.substr(0, 80));
      return Result::Malformed;
    }
    std::string name(line.substr(0, colon));
    for (char &c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
      value.remove_suffix(1);
    if (name == "content-length") {
      size_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size()) {
        error = fmt::format("Content-Length '{}' is not a number", value.substr(0, 40));
        return Result::Malformed;
      }
      length = n;
    }
  }
  if (!length) {
    error = "a message header has no Content-Length";
    return Result::Malformed;
  }
  if (*length > kMaxMessageBytes) {
    // Skip the body without keeping it.
    size_t left = *length;
    while (left > 0) {
      if (start_ == buffer_.size() && !fill())
        break;
      const size_t take = std::min(left, buffer_.size() - start_);
      start_ += take;
      left -= take;
    }
    error = fmt::format("a message of {} bytes is larger than the {} allowed", *length, kMaxMessageBytes);
    return Result::Malformed;
  }
  while (buffer_.size() - start_ < *length)
    if (!fill()) {
      error = fmt::format("the input ended inside a message body ({} of {} bytes)", buffer_.size() - start_,
                          *length);
      start_ = buffer_.size();
      return Result::Malformed;
    }
  body.assign(buffer_, start_, *length);
  start_ += *length;
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
