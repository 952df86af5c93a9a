// TransportTest.cpp -- LSP framing (lsp/Transport.h) over a pipe: well-formed
// messages in one or many writes, then every kind of bad framing -- no
// Content-Length, a non-numeric one, an oversized body (skipped without
// being held in memory), an endless header, input ending inside a header or
// a body -- each reported as Malformed with a message, after which reading
// goes on with the next message.
#include "lsp/Transport.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace netc::lsp {
namespace {

/// A pipe whose write end a thread fills with `bytes` and then closes.
class Feed {
public:
  explicit Feed(std::string bytes) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    readFd_ = fds[0];
    writer_ = std::thread([fd = fds[1], bytes = std::move(bytes)] {
      size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, 7919));
        if (n <= 0)
          break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }
  ~Feed() {
    writer_.join();
    ::close(readFd_);
  }
  int fd() const { return readFd_; }

private:
  int readFd_ = -1;
  std::thread writer_;
};

std::string framed(const std::string &body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(Transport, ReadsFramedMessagesWhateverTheChunking) {
  std::string bytes;
  for (int i = 0; i < 50; ++i)
    bytes += framed("{\"id\":" + std::to_string(i) + ",\"x\":\"" +
                    std::string(static_cast<size_t>(i) * 97, 'a') + "\"}");
  bytes += "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length:  2 \r\n\r\n{}";
  Feed feed(bytes);
  MessageReader reader(feed.fd());
  std::string body, error;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
    EXPECT_EQ(body.rfind("{\"id\":" + std::to_string(i) + ",", 0), 0u);
  }
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{}");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, BadHeadersAreReportedAndSkipped) {
  const std::string bytes = "Content-Type: text/plain\r\n\r\n" + framed("{\"ok\":1}") +
                            "Content-Length: twelve\r\n\r\n" + framed("{\"ok\":2}") +
                            "garbage without colon\r\n\r\n" + framed("{\"ok\":3}");
  Feed feed(bytes);
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "a message header has no Content-Length");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message);
  EXPECT_EQ(body, "{\"ok\":1}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "Content-Length 'twelve' is not a number");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message);
  EXPECT_EQ(body, "{\"ok\":2}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_NE(error.find("malformed header line 'garbage without colon'"), std::string::npos) << error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message);
  EXPECT_EQ(body, "{\"ok\":3}");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, OversizedBodyIsSkippedNotStored) {
  // Declares 1 GiB, sends a little, ends: skipped, reported, no allocation of the size.
  Feed feed("Content-Length: 1073741824\r\n\r\n" + std::string(100000, 'x'));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_NE(error.find("a message of 1073741824 bytes is larger than the"), std::string::npos) << error;
  EXPECT_TRUE(body.empty());
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, EndlessHeaderIsCut) {
  Feed feed(std::string(kMaxHeaderBytes + 5000, 'h') + "\r\n\r\n" + framed("{}"));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_NE(error.find("a message header is longer than"), std::string::npos) << error;
  // Whatever follows is read on (here: the rest of the long line, then the message).
  MessageReader::Result r;
  do
    r = reader.read(body, error);
  while (r == MessageReader::Result::Malformed);
  EXPECT_EQ(r, MessageReader::Result::Message);
  EXPECT_EQ(body, "{}");
}

TEST(Transport, InputEndingInsideAMessageIsReported) {
  {
    Feed feed("Content-Length: 10\r\n\r\n{\"a\"");
    MessageReader reader(feed.fd());
    std::string body, error;
    ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
    EXPECT_EQ(error, "the input ended inside a message body (4 of 10 bytes)");
    EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
  }
  {
    Feed feed("Content-Len");
    MessageReader reader(feed.fd());
    std::string body, error;
    ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
    EXPECT_EQ(error, "the input ended inside a message header");
    EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
  }
}

TEST(Transport, WritesFramedMessages) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_TRUE(writeMessage(fds[1], "{\"x\":\"é\"}"));
  ::close(fds[1]);
  MessageReader reader(fds[0]);
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message);
  EXPECT_EQ(body, "{\"x\":\"é\"}");
  ::close(fds[0]);
}

} // namespace
} // namespace netc::lsp
