// InputFile.cpp -- non-blocking opens of user-named input files and the
// refusal of what is not a file (InputFile.h).
#include "support/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace netc {

namespace {

/// The file system of anonymous pipes (linux/magic.h PIPEFS_MAGIC): a pipe
/// from a shell, not a FIFO someone made with mkfifo.
constexpr long kPipeFsMagic = 0x50495045;

bool isAnonymousPipe(int fd) {
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 && static_cast<long>(fs.f_type) == kPipeFsMagic;
}

} // namespace

int openForReading(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return -1;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string fileKindText(mode_t mode) {
  if (S_ISREG(mode))
    return "";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "something other than a file";
}

int openInputFile(const std::string &path, std::string &error, bool allowPipe) {
  const int fd = openForReading(path);
  if (fd < 0) {
    const int openError = errno;
    struct stat info {};
    // A socket cannot be opened at all (ENXIO): say what it is instead.
    if (openError == ENXIO && ::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode))
      error = "it is a socket, not a file";
    else
      error = std::strerror(openError);
    return -1;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  const bool anonymousPipe = S_ISFIFO(info.st_mode) && isAnonymousPipe(fd);
  if (S_ISREG(info.st_mode) || (allowPipe && anonymousPipe))
    return fd;
  ::close(fd);
  if (S_ISDIR(info.st_mode))
    error = std::strerror(EISDIR); // as a plain open-and-read reports it
  else if (anonymousPipe)
    error = "it is a pipe, not a file";
  else if (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) || S_ISSOCK(info.st_mode))
    error = "it is " + fileKindText(info.st_mode) + ", not a file";
  else
    error = "it is not a regular file";
  return -1;
}

std::string inputFileProblem(const std::string &path, bool allowPipe) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode))
    return ""; // missing, unreadable or a folder: the caller's reader says so
  if (S_ISFIFO(info.st_mode)) {
    const int fd = openForReading(path);
    const bool pipe = fd >= 0 && isAnonymousPipe(fd);
    if (fd >= 0)
      ::close(fd);
    if (pipe)
      return allowPipe ? "" : path + ": it is a pipe, not a file";
  }
  if (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) || S_ISSOCK(info.st_mode))
    return path + ": it is " + fileKindText(info.st_mode) + ", not a file";
  return path + ": it is not a regular file";
}

} // namespace netc
