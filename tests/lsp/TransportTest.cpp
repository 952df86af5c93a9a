// TransportTest.cpp -- LSP framing (lsp/Transport.h) over a pipe: well-formed
// messages in one or many writes, then every kind of bad framing -- no
// Content-Length, a non-numeric or negative one, an oversized body (skipped
// without being held in memory, whether or not the declared bytes arrive),
// an endless header, input ending inside a header or a body -- each reported
// as Malformed with a message, after which reading resynchronises on the
// next header; and the end of input inside a skipped body (Unusable).
#include "lsp/Transport.h"

#include <fmt/format.h>
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

TEST(Transport, OversizedLengthIsAnsweredAndTheNextHeaderIsFound) {
  // A client that declares 10^12 bytes and then goes on with ordinary
  // messages on the same stream: the error comes at once (before any body
  // byte is needed), the bytes up to the next header are dropped, and the
  // following messages are read.
  Feed feed("Content-Length: 1000000000000\r\n\r\n{\"partial\": [1, 2" + framed("{\"ok\":1}") +
            framed("{\"ok\":2}"));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "a message of 1000000000000 bytes is larger than the 16777216 bytes (16.0 MiB) allowed; "
                   "its body is skipped up to the next header");
  EXPECT_TRUE(body.empty());
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":1}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":2}");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, OversizedBodyThatArrivesIsSkippedInChunks) {
  // A genuine body over the limit (a JSON string of 'x's), then a message.
  const std::string big = "{\"x\":\"" + std::string(kMaxMessageBytes + 100000, 'x') + "\"}";
  Feed feed(framed(big) + framed("{\"after\":1}"));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_NE(error.find(fmt::format("a message of {} bytes is larger than", big.size())), std::string::npos)
      << error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"after\":1}");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, LengthWithTooManyDigitsIsOversized) {
  // The length is reported as the client wrote it, not as 2^64 - 1.
  Feed feed("Content-Length: 123456789012345678901234567890\r\n\r\n" + framed("{}"));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "a message of 123456789012345678901234567890 bytes is larger than the 16777216 bytes "
                   "(16.0 MiB) allowed; its body is skipped up to the next header");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{}");
}

TEST(Transport, VeryLongLengthIsShortenedAndNamedWhenTheStreamEnds) {
  // 300 digits: the first 20 and the count; the same text when the input
  // then ends inside the body being skipped.
  const std::string digits = "1" + std::string(299, '0');
  Feed feed("Content-Length: " + digits + "\r\n\r\nxyz");
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error,
            "a message of 10000000000000000000... (300 digits) bytes is larger than the 16777216 bytes "
            "(16.0 MiB) allowed; its body is skipped up to the next header");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Unusable);
  EXPECT_EQ(error, "the input ended inside the body of the 10000000000000000000... (300 digits)-byte message "
                   "being skipped; the stream is unusable");
}

TEST(Transport, TheLimitFollowsTheDocumentLimit) {
  // A server with 64 MiB documents (--max-source-size 64M) takes messages of
  // 256 MiB; a smaller document limit never lowers the 16 MiB default.
  EXPECT_EQ(maxMessageBytesFor(uint64_t{64} << 20), uint64_t{256} << 20);
  EXPECT_EQ(maxMessageBytesFor(1024), kMaxMessageBytes);
  EXPECT_EQ(maxMessageBytesFor(UINT64_MAX), UINT64_MAX);
  Feed feed("Content-Length: 2000\r\n\r\n" + std::string(2000, ' ') + framed("{}"));
  MessageReader reader(feed.fd(), 1000);
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "a message of 2000 bytes is larger than the 1000 bytes (1000 B) allowed; its body is "
                   "skipped up to the next header");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{}");
}

TEST(Transport, InputEndingInsideASkippedBodyMakesTheStreamUnusable) {
  // Declares 10^12 bytes, sends a little, ends: reported, then Unusable.
  Feed feed("Content-Length: 1000000000000\r\n\r\n" + std::string(100000, 'x'));
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Unusable);
  EXPECT_EQ(error, "the input ended inside the body of the 1000000000000-byte message being skipped; "
                   "the stream is unusable");
  EXPECT_TRUE(body.empty());
}

TEST(Transport, BodiesOfBadHeadersAreSkippedToTheNextHeader) {
  // A negative or non-numeric length, and a header without one, each followed
  // by the body the client meant: the body is not taken for a header.
  const std::string bytes = "Content-Length: -5\r\n\r\n{\"id\": 1, \"a\": \"b:c\"}" + framed("{\"ok\":1}") +
                            "Content-Length: 1e3\r\n\r\n{\"x\": 1}\r\n" + framed("{\"ok\":2}") +
                            "Content-Type: text/plain\r\n\r\n{\"y\": 2}" + framed("{\"ok\":3}");
  Feed feed(bytes);
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "Content-Length '-5' is not a number");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":1}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "Content-Length '1e3' is not a number");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":2}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
  EXPECT_EQ(error, "a message header has no Content-Length");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":3}");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, BareLineFeedsAndBlankLinesBetweenMessagesAreAccepted) {
  Feed feed("Content-Length: 2\n\n{}\r\n" + framed("{\"ok\":1}") + "\n\ncontent-length:3\nX-Other: y\n\n[1]");
  MessageReader reader(feed.fd());
  std::string body, error;
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "{\"ok\":1}");
  ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
  EXPECT_EQ(body, "[1]");
  EXPECT_EQ(reader.read(body, error), MessageReader::Result::EndOfInput);
}

TEST(Transport, EndlessHeaderLineIsCut) {
  // One header line that never ends, and many short lines that never end the
  // block: both cut at the limit, then the next message is read.
  std::string manyLines;
  while (manyLines.size() <= kMaxHeaderBytes)
    manyLines += "X-Filler: 1234567890\r\n";
  for (const std::string &header : {"X-Long: " + std::string(kMaxHeaderBytes + 5000, 'h'), manyLines}) {
    Feed feed(header + framed("{}"));
    MessageReader reader(feed.fd());
    std::string body, error;
    ASSERT_EQ(reader.read(body, error), MessageReader::Result::Malformed);
    EXPECT_EQ(error, fmt::format("a message header is longer than {} bytes", kMaxHeaderBytes));
    ASSERT_EQ(reader.read(body, error), MessageReader::Result::Message) << error;
    EXPECT_EQ(body, "{}");
  }
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
