// LibraryFolder.cpp -- the output folder of `netc build` (LibraryFolder.h).
#include "api/LibraryFolder.h"

#include "netc/netc.h"
#include "support/ErrnoText.h"
#include "support/PrintableText.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace netc {

namespace fs = std::filesystem;

namespace {

std::string shown(const fs::path &path) {
  return printableText(path.string());
}

/// `out` without a trailing separator ("lib/" -> "lib"; "/" stays).
fs::path folderPath(const fs::path &out) {
  fs::path p = out;
  while (!p.has_filename() && p.has_relative_path())
    p = p.parent_path();
  return p;
}

bool isStagingName(const std::string &name) {
  return name.starts_with(".netc-build-");
}

/// What `folder` holds besides netc build's staging folders (at most
/// `limit` names), and whether it holds netc build's manifest.
struct FolderContents {
  std::vector<std::string> others;
  size_t otherCount = 0;
  bool manifest = false;
};

FolderContents contentsOf(const fs::path &folder, size_t limit = 3) {
  FolderContents contents;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kLibraryManifestName) {
      struct stat info {};
      contents.manifest = ::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode);
      continue;
    }
    if (isStagingName(name))
      continue;
    if (contents.others.size() < limit)
      contents.others.push_back(printableText(name));
    ++contents.otherCount;
  }
  return contents;
}

Status notNetcsFolder(const fs::path &out, const FolderContents &contents) {
  std::string names;
  for (const std::string &name : contents.others)
    names += (names.empty() ? "" : ", ") + name;
  if (contents.otherCount > contents.others.size())
    names += fmt::format(" and {} more", contents.otherCount - contents.others.size());
  return fail(
      fmt::format("-o {}: the folder exists and netc build did not make it (it holds {}); choose a new "
                  "or empty folder, or pass --overwrite to replace only the files netc build writes "
                  "(the header, the libraries, the object and README.md) and keep the rest",
                  shown(out), names));
}

/// Holds an exclusive flock on a folder while it lives.
class FolderLock {
public:
  static Expected<FolderLock> take(const fs::path &folder, double seconds) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return fail(fmt::format("cannot open {}: {}", shown(folder), errnoText(errno)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
        const int error = errno;
        ::close(fd);
        return fail(
            error == EWOULDBLOCK
                ? fmt::format("{} is held by another netc build for more than {:g} s; try again when it "
                              "has finished",
                              shown(folder), seconds)
                : fmt::format("cannot lock {}: {}", shown(folder), errnoText(error)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return FolderLock(fd);
  }
  FolderLock(FolderLock &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FolderLock &operator=(FolderLock &&) = delete;
  ~FolderLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }

private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_;
};

} // namespace

Status checkLibraryFolder(const fs::path &outPath, bool overwrite) {
  const fs::path out = folderPath(outPath);
  struct stat info {};
  if (::stat(out.c_str(), &info) != 0) {
    if (errno != ENOENT)
      return fail(fmt::format("cannot write the library into {}: {}", shown(out), errnoText(errno)));
    return Status::success(); // made later, beside it (LibraryStaging::create says what is wrong there)
  }
  if (!S_ISDIR(info.st_mode))
    return fail(fmt::format(
        "-o {}: a file, not a folder; the library is several files and goes into a folder", shown(out)));
  const FolderContents contents = contentsOf(out);
  if (contents.manifest || contents.otherCount == 0 || overwrite)
    return Status::success();
  return notNetcsFolder(out, contents);
}

Expected<LibraryStaging> LibraryStaging::create(const fs::path &outPath) {
  const fs::path out = folderPath(outPath);
  struct stat info {};
  const bool exists = ::stat(out.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  // Inside an existing folder: the files then never cross a filesystem on
  // their way in (a mount point, a link to another disk).
  const fs::path parent = exists ? out : out.parent_path().empty() ? fs::path(".") : out.parent_path();
  std::string pattern = (parent / ".netc-build-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    const int error = errno;
    return fail(exists
                    ? fmt::format("cannot write the library into {}: {}", shown(out), errnoText(error))
                    : fmt::format("cannot write the library into {}: {} (-o names the folder it goes to; its "
                                  "parent must exist and be writable)",
                                  shown(out), errnoText(error)));
  }
  // mkdtemp's folder is private; a new library folder is as any new folder.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(pattern.c_str(), 0777 & ~mask);
  return LibraryStaging(fs::path(pattern));
}

LibraryStaging::LibraryStaging(LibraryStaging &&other) noexcept : path_(std::exchange(other.path_, {})) {}

LibraryStaging::~LibraryStaging() {
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

Status LibraryStaging::install(const fs::path &outPath, const std::vector<std::string> &names, bool overwrite,
                               double lockSeconds) {
  const fs::path out = folderPath(outPath);
  {
    std::ofstream manifest(path_ / kLibraryManifestName, std::ios::trunc);
    manifest << "netc build " << version()
             << ": these files of this folder were written by netc build, which replaces them when it builds "
                "into the folder again\n";
    for (const std::string &name : names)
      manifest << name << "\n";
    if (!manifest.flush())
      return fail(fmt::format("cannot write {}: {}", shown(path_ / kLibraryManifestName), errnoText(errno)));
  }
  if (path_.parent_path() != out) {
    // A new folder: the staging folder becomes it, whole.
    if (::rename(path_.c_str(), out.c_str()) == 0) {
      path_.clear();
      return Status::success();
    }
    if (errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR)
      return fail(fmt::format("cannot create {}: {}", shown(out), errnoText(errno)));
    // Another build made it meanwhile: replace its files as below.
  }
  return installIntoExisting(out, names, overwrite, lockSeconds);
}

Status LibraryStaging::installIntoExisting(const fs::path &out, const std::vector<std::string> &names,
                                           bool overwrite, double lockSeconds) {
  auto lock = FolderLock::take(out, lockSeconds);
  if (!lock)
    return lock.error();
  // Checked again under the lock: what the folder holds now.
  const FolderContents contents = contentsOf(out);
  if (!contents.manifest && contents.otherCount > 0 && !overwrite)
    return notNetcsFolder(out, contents);
  std::vector<std::string> all = names;
  all.emplace_back(kLibraryManifestName);
  for (const std::string &name : all) {
    struct stat info {};
    const fs::path target = out / name;
    if (::lstat(target.c_str(), &info) != 0) {
      if (errno == ENOENT)
        continue;
      return fail(fmt::format("cannot replace {}: {}", shown(target), errnoText(errno)));
    }
    if (!S_ISREG(info.st_mode))
      return fail(fmt::format("{} is {}, not a file netc build wrote; move it away or choose another -o",
                              shown(target),
                              S_ISDIR(info.st_mode)   ? "a folder"
                              : S_ISLNK(info.st_mode) ? "a symbolic link"
                                                      : "a special file"));
  }
  // Each old file is set aside, then the new one moved in; a failure puts
  // everything back as it was.
  const fs::path aside = path_ / ".replaced";
  if (::mkdir(aside.c_str(), 0700) != 0)
    return fail(fmt::format("cannot write into {}: {}", shown(path_), errnoText(errno)));
  struct Moved {
    std::string name;
    bool hadOld = false, movedIn = false;
  };
  std::vector<Moved> moved;
  int error = 0;
  std::string failedName;
  for (const std::string &name : all) {
    Moved m{name};
    const fs::path target = out / name;
    if (::rename(target.c_str(), (aside / name).c_str()) == 0)
      m.hadOld = true;
    else if (errno != ENOENT)
      error = errno;
    if (error == 0) {
      if (::rename((path_ / name).c_str(), target.c_str()) == 0)
        m.movedIn = true;
      else
        error = errno;
    }
    moved.push_back(m);
    if (error != 0) {
      failedName = name;
      break;
    }
  }
  if (error == 0)
    return Status::success();
  for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
    const fs::path target = out / it->name;
    if (it->movedIn)
      (void)::rename(target.c_str(), (path_ / it->name).c_str());
    if (it->hadOld)
      (void)::rename((aside / it->name).c_str(), target.c_str());
  }
  return fail(
      fmt::format("cannot write {}: {}; the folder is as it was", shown(out / failedName), errnoText(error)));
}

} // namespace netc
