// InputFileTest.cpp -- support/InputFile.h: what is not a regular file (a
// FIFO without a writer, a device, a socket, a folder) is refused at once
// with what it is, never waited on; a shell's pipe is read where allowed.
#include "support/InputFile.h"
#include "support/SourceFile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace netc {
namespace {

/// A fresh folder under the test's temporary directory.
std::string freshFolder(const std::string &name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("netc-inputfile-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

/// Should an open of `fifo` block after all (a regression), a writer comes
/// after 20 s and releases it, so the test fails instead of hanging; a test
/// that ends first sends it away.
class FifoUnblocker {
public:
  explicit FifoUnblocker(std::string fifo)
      : thread_([this, fifo = std::move(fifo)] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (done_.wait_for(lock, std::chrono::seconds(20), [this] { return finished_; }))
            return;
          const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
          if (fd >= 0)
            ::close(fd);
        }) {}
  ~FifoUnblocker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    done_.notify_one();
    thread_.join();
  }

private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  std::thread thread_;
};

TEST(InputFile, FifoWithoutWriterIsRefusedWithoutBlocking) {
  const std::string dir = freshFolder("fifo"), fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FifoUnblocker unblocker(fifo);
  std::string error;
  EXPECT_EQ(openInputFile(fifo, error), -1);
  EXPECT_EQ(error, "it is a FIFO (named pipe), not a file");
  EXPECT_EQ(openInputFile(fifo, error, /*allowPipe=*/true), -1); // a named FIFO is not a shell's pipe
  EXPECT_EQ(inputFileProblem(fifo), fifo + ": it is a FIFO (named pipe), not a file");
  EXPECT_FALSE(readSourceText(fifo, 1000, error));
  EXPECT_EQ(error, "it is a FIFO (named pipe), not a file");
  const int fd = openForReading(fifo); // opens at once; the caller checks the kind
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::filesystem::remove_all(dir);
}

TEST(InputFile, DevicesSocketsAndFoldersAreRefused) {
  std::string error;
  EXPECT_EQ(openInputFile("/dev/null", error), -1);
  EXPECT_EQ(error, "it is a character device, not a file");
  EXPECT_EQ(inputFileProblem("/dev/null"), "/dev/null: it is a character device, not a file");

  const std::string dir = freshFolder("socket"), socketPath = dir + "/s";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socketPath.size(), sizeof address.sun_path);
  std::copy(socketPath.begin(), socketPath.end(), address.sun_path);
  ASSERT_EQ(::bind(s, reinterpret_cast<const sockaddr *>(&address), sizeof address), 0);
  EXPECT_EQ(openInputFile(socketPath, error), -1);
  EXPECT_EQ(error, "it is a socket, not a file");
  EXPECT_EQ(inputFileProblem(socketPath), socketPath + ": it is a socket, not a file");
  ::close(s);

  // A folder keeps the system's words (and inputFileProblem leaves it, like
  // a missing file, to the reader's own message).
  EXPECT_EQ(openInputFile(dir, error), -1);
  EXPECT_EQ(error, "Is a directory");
  EXPECT_EQ(inputFileProblem(dir), "");
  EXPECT_EQ(inputFileProblem(dir + "/missing"), "");
  EXPECT_EQ(openInputFile(dir + "/missing", error), -1);
  EXPECT_EQ(error, "No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST(InputFile, RegularFilesAndAShellsPipeAreRead) {
  const std::string dir = freshFolder("regular"), file = dir + "/net.net";
  std::ofstream(file) << "input I [2];\n";
  std::string error;
  auto text = readSourceText(file, 1000, error);
  ASSERT_TRUE(text) << error;
  EXPECT_EQ(*text, "input I [2];\n");
  EXPECT_EQ(inputFileProblem(file), "");

  // An anonymous pipe, as `cat net.net | netc check /dev/stdin` gives one.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "input I [3];\n", 13), 13);
  ::close(fds[1]);
  const std::string viaProc = "/proc/self/fd/" + std::to_string(fds[0]);
  EXPECT_EQ(inputFileProblem(viaProc, /*allowPipe=*/true), "");
  EXPECT_EQ(inputFileProblem(viaProc), viaProc + ": it is a pipe, not a file");
  text = readSourceText(viaProc, 1000, error);
  ASSERT_TRUE(text) << error;
  EXPECT_EQ(*text, "input I [3];\n");
  ::close(fds[0]);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace netc
