// RunFiles.cpp -- checks on a run's output paths, metrics-file writes, and
// the naming, registration and clean-up of temporaries (see RunFiles.h). The
// registry of temporaries is the one piece of process-wide state here: a
// signal handler cannot be handed anything else.
#include "runtime/train/RunFiles.h"
#include "support/ErrnoText.h"

#include "support/PrintableText.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace netc::train {

namespace fs = std::filesystem;

namespace {

// ---- temporaries ----------------------------------------------------------

/// One registered temporary: state 0 free, 1 being filled, emptied or read
/// by a signal handler, 2 set.
struct Slot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
std::array<Slot, 8> gTemporaries;
static_assert(std::atomic<int>::is_always_lock_free, "the registry is read from a signal handler");

// ---- identities of output paths --------------------------------------------

/// What identifies a file: its absolute path with symbolic links resolved,
/// and its device and inode when it exists.
struct FileIdentity {
  std::string canonical;
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
};

FileIdentity identityOf(const std::string &path) {
  FileIdentity id;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  fs::path canonical = fs::weakly_canonical(absolute, ec);
  id.canonical = (ec ? absolute.lexically_normal() : canonical).string();
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    id.exists = true;
    id.device = info.st_dev;
    id.inode = info.st_ino;
  }
  return id;
}

bool sameFile(const FileIdentity &a, const FileIdentity &b) {
  return a.canonical == b.canonical || (a.exists && b.exists && a.device == b.device && a.inode == b.inode);
}

/// One output of the run, with how messages name it.
struct Output {
  std::string path;
  std::string role; // "--metrics", "the checkpoint", ...
  FileIdentity id;
};

/// Whether a regular file's first line is a JSON object with an "event" (a
/// line netc writes to metrics files); reads at most 64 KiB.
bool startsWithMetricsLine(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const size_t end = head.find('\n');
  if (end == std::string::npos && head.size() == 64 * 1024)
    return false;
  const nlohmann::json j = nlohmann::json::parse(head.substr(0, end), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("event");
}

const char *const kMetricsAdvice =
    "(check the folder exists and is writable, or choose another with --out / --metrics)";

/// Fails unless a metrics file can be created or appended to at `path`;
/// `outDir` (checked on its own) is created by the run before it is written.
Status checkWritableFile(const std::string &path, const std::string &outDir) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode))
      return fail(fmt::format("cannot write '{}': {} {}", path, errnoText(EISDIR), kMetricsAdvice));
    if (::access(path.c_str(), W_OK) != 0)
      return fail(fmt::format("cannot write '{}': {} {}", path, errnoText(errno), kMetricsAdvice));
    return Status::success();
  }
  if (errno != ENOENT)
    return fail(fmt::format("cannot write '{}': {} {}", path, errnoText(errno), kMetricsAdvice));
  fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!outDir.empty() && sameFile(identityOf(folder), identityOf(outDir)))
    return Status::success();
  if (::stat(folder.c_str(), &info) != 0)
    return fail(
        fmt::format("cannot write '{}': the folder '{}' does not exist {}", path, folder, kMetricsAdvice));
  if (!S_ISDIR(info.st_mode))
    return fail(fmt::format("cannot write '{}': {} {}", path, errnoText(ENOTDIR), kMetricsAdvice));
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return fail(fmt::format("cannot write '{}': the folder '{}' is not writable ({}) {}", path, folder,
                            errnoText(errno), kMetricsAdvice));
  return Status::success();
}

/// Fails unless `dir` is a writable folder or can be created as one.
Status checkOutputFolder(const std::string &dir) {
  auto refuse = [&](const std::string &why) {
    return fail(
        fmt::format("cannot create the output folder '{}': {} (choose another with --out)", dir, why));
  };
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      return refuse(errnoText(ENOTDIR));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      return fail(fmt::format("the output folder '{}' is not writable: {} (choose another with --out)", dir,
                              errnoText(errno)));
    return Status::success();
  }
  if (errno != ENOENT)
    return refuse(errnoText(errno));
  // The nearest existing ancestor must be a writable folder.
  std::error_code ec;
  fs::path ancestor = fs::absolute(dir, ec).lexically_normal();
  if (ec || ancestor.empty())
    return refuse(ec ? ec.message() : errnoText(ENOENT));
  for (;;) { // the root too: a folder right under '/' is checked against it
    if (::stat(ancestor.c_str(), &info) == 0)
      break;
    if (errno != ENOENT || !ancestor.has_relative_path())
      return refuse(errnoText(errno));
    ancestor = ancestor.parent_path();
  }
  if (!S_ISDIR(info.st_mode))
    return refuse(errnoText(ENOTDIR));
  if (::access(ancestor.c_str(), W_OK | X_OK) != 0)
    return refuse(fmt::format("'{}' is not writable ({})", ancestor.string(), errnoText(errno)));
  return Status::success();
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

} // namespace

std::string temporaryTemplate(const std::string &path) {
  return fmt::format("{}.tmp-{}-XXXXXX", path, ::getpid());
}

std::optional<pid_t> temporaryOwner(std::string_view fileName, std::string_view baseName) {
  const std::string prefix = std::string(baseName) + ".tmp-";
  if (fileName.size() <= prefix.size() || fileName.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  std::string_view rest = fileName.substr(prefix.size()); // <pid>-XXXXXX
  pid_t pid = 0;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  const char *last = rest.data() + rest.size();
  if (error != std::errc() || pid <= 0 || end == last || *end != '-' || last - end != 7)
    return std::nullopt;
  return pid;
}

std::vector<std::string> removeStaleTemporaries(const std::string &dir,
                                                const std::vector<std::string> &baseNames) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const std::string &base : baseNames) {
      auto owner = temporaryOwner(name, base);
      if (!owner || *owner == ::getpid())
        continue;
      if (::kill(*owner, 0) == 0 || errno != ESRCH)
        continue; // alive (or not ours to signal): its writer may still need it
      if (::unlink(it->path().c_str()) == 0)
        removed.push_back(it->path().string());
    }
  }
  return removed;
}

TemporaryRegistration::TemporaryRegistration(const std::string &path) {
  if (path.size() >= PATH_MAX)
    return;
  for (size_t i = 0; i < gTemporaries.size(); ++i) {
    int expected = 0;
    if (!gTemporaries[i].state.compare_exchange_strong(expected, 1))
      continue;
    std::memcpy(gTemporaries[i].path, path.c_str(), path.size() + 1);
    gTemporaries[i].state.store(2);
    slot_ = static_cast<int>(i);
    return;
  }
}

TemporaryRegistration::~TemporaryRegistration() {
  if (slot_ < 0)
    return;
  // Free the slot only if a signal handler has not claimed it meanwhile (it
  // is reading the path then, and the process is about to end).
  int expected = 2;
  if (gTemporaries[static_cast<size_t>(slot_)].state.compare_exchange_strong(expected, 1))
    gTemporaries[static_cast<size_t>(slot_)].state.store(0);
}

void removeRegisteredTemporaries() noexcept {
  for (Slot &slot : gTemporaries) {
    // Claim the slot before reading its path, so that no thread reuses it
    // while the path is read.
    int expected = 2;
    if (slot.state.compare_exchange_strong(expected, 1))
      (void)::unlink(slot.path);
  }
}

std::vector<std::string> runFilesIn(const std::string &dir) {
  std::vector<std::string> found;
  for (std::string_view name : {kLastCheckpointName, kBestCheckpointName, kMetricsName}) {
    struct stat info {};
    const std::string path = (fs::path(dir) / name).string();
    if (::stat(path.c_str(), &info) != 0)
      continue;
    if (name == kMetricsName && S_ISREG(info.st_mode) && info.st_size == 0)
      continue;
    found.emplace_back(name);
  }
  return found;
}

Status checkRunOutputs(const RunOutputs &o) {
  for (const std::string &path : o.metricsFiles)
    if (path.empty())
      return fail("--metrics is empty: name the file the metrics lines should go to");
  // No two outputs are one file.
  std::vector<Output> outputs;
  if (!o.outDir.empty())
    for (std::string_view name : {kLastCheckpointName, kBestCheckpointName, kMetricsName}) {
      const std::string path = (fs::path(o.outDir) / name).string();
      outputs.push_back(
          {path, name == kMetricsName ? "the run's metrics file" : "the run's checkpoint", identityOf(path)});
    }
  for (const std::string &path : o.metricsFiles)
    outputs.push_back({path, "--metrics", identityOf(path)});
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (sameFile(outputs[i].id, outputs[j].id)) {
        const Output &extra = outputs[j]; // a --metrics file (the run's own come first)
        if (extra.role != "--metrics")
          return fail(
              fmt::format("'{}' and '{}' are the same file (a symbolic or hard link); remove the link "
                          "or choose another --out",
                          outputs[i].path, extra.path));
        return fail(fmt::format("--metrics '{}' is {} '{}'{}; choose another --metrics file, or leave it out",
                                extra.path, outputs[i].role, outputs[i].path,
                                outputs[i].role == "the run's metrics file"
                                    ? ", which already gets every metrics line"
                                    : ", which the metrics lines would corrupt"));
      }

  // Where things go: every path writable, before anything is created.
  if (!o.outDir.empty())
    if (Status s = checkOutputFolder(o.outDir); !s)
      return s;
  for (const std::string &path : o.metricsFiles)
    if (Status s = checkWritableFile(path, o.outDir); !s)
      return s;

  // The checkpoint the run starts from is read, not written.
  const std::string &start = !o.resumeFrom.empty() ? o.resumeFrom : o.initFrom;
  const std::string startFlag = !o.resumeFrom.empty() ? "--resume" : "--init-from";
  if (!start.empty()) {
    const FileIdentity startId = identityOf(start);
    for (const Output &out : outputs) {
      if (!sameFile(startId, out.id))
        continue;
      if (out.role == "--metrics")
        return fail(fmt::format("--metrics '{}' is the checkpoint {} reads; choose another --metrics file",
                                out.path, startFlag));
      if (startFlag == "--init-from" && out.role == "the run's checkpoint")
        return fail(fmt::format("--init-from '{}' is '{}', which the new run replaces; copy it out of the "
                                "folder first, or choose another --out",
                                start, out.path));
    }
  }

  // A folder that holds a run is continued (--resume of a checkpoint in it)
  // or replaced (--overwrite), never silently.
  bool resumesInOutDir = false;
  if (!o.outDir.empty() && !o.resumeFrom.empty()) {
    const FileIdentity folder = identityOf(o.outDir);
    const FileIdentity resumeFolder =
        identityOf(fs::path(identityOf(o.resumeFrom).canonical).parent_path().string());
    resumesInOutDir = sameFile(folder, resumeFolder);
  }
  if (resumesInOutDir && o.overwrite)
    return fail(fmt::format("--overwrite would discard the run in '{}' that --resume {} continues; drop "
                            "--overwrite (a resumed run continues its folder's metrics and checkpoints)",
                            o.outDir, o.resumeFrom));
  const std::vector<std::string> present =
      o.outDir.empty() ? std::vector<std::string>{} : runFilesIn(o.outDir);
  if (!present.empty() && !resumesInOutDir && !o.overwrite) {
    const std::string last = (fs::path(o.outDir) / kLastCheckpointName).string();
    const bool hasLast = std::find(present.begin(), present.end(), kLastCheckpointName) != present.end();
    return fail(fmt::format("the output folder '{}' already holds a run ({}); {}choose another folder with "
                            "--out, or replace that run with --overwrite",
                            o.outDir, joinNames(present),
                            hasLast ? fmt::format("continue it with --resume {}, ", last) : std::string()));
  }
  for (const std::string &path : o.metricsFiles) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_size == 0)
      continue; // new, empty, or not a file (/dev/null)
    if (!startsWithMetricsLine(path))
      return fail(fmt::format("--metrics '{}' holds something other than netc metrics (its first line is not "
                              "a JSON object with an \"event\"); choose another --metrics file",
                              path));
    if (o.resumeFrom.empty() && !o.overwrite)
      return fail(fmt::format("--metrics '{}' already holds the metrics of a run; choose another --metrics "
                              "file, or replace it with --overwrite",
                              path));
  }
  return Status::success();
}

// ---- the run's hold on its folder --------------------------------------------

namespace {

/// "pid 1234 on vm since 2026-11-28 12:03:04" for this process.
std::string holderText() {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0)
    std::strcpy(host, "?");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char when[64] = "";
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("pid {} on {} since {}", ::getpid(), host, when);
}

} // namespace

Expected<RunFolderLock> RunFolderLock::take(const std::string &dir) {
  RunFolderLock lock;
  lock.dir_ = dir;
  // The folder and its missing parents, outermost first, each remembered.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path at = fs::absolute(dir, ec).lexically_normal(); !ec && !at.empty(); at = at.parent_path()) {
    struct stat info {};
    if (::stat(at.c_str(), &info) == 0)
      break;
    if (errno != ENOENT || !at.has_relative_path())
      break;
    missing.push_back(at);
    if (at == at.parent_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      lock.createdFolders_.push_back(it->string());
    } else if (errno != EEXIST) { // made by another run meanwhile: fine
      const int error = errno;
      return fail(fmt::format("cannot create the output folder '{}': {} (choose another with --out)", dir,
                              errnoText(error)));
    }
  }
  const std::string path = (fs::path(dir) / kRunLockName).string();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd >= 0)
    lock.createdFile_ = true;
  else if (errno == EEXIST)
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return fail(fmt::format("cannot lock the output folder '{}': {}: {} (choose another with --out)", dir,
                            path, errnoText(errno)));
  lock.fd_ = fd;
  struct flock request {};
  request.l_type = F_WRLCK;
  request.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &request) != 0) {
    const int error = errno;
    if (error != EAGAIN && error != EACCES) {
      // No such locks here (ENOLCK, EINVAL, ENOSYS, EOPNOTSUPP: some network
      // and FUSE filesystems): the run goes on, unguarded, and says so.
      lock.warning_ = fmt::format("the output folder '{}' cannot be locked ({}): a second run into it at the "
                                  "same time would not be refused",
                                  dir, errnoText(error));
      return lock;
    }
    std::string holder(256, '\0');
    const ssize_t n = ::pread(fd, holder.data(), holder.size(), 0);
    holder.resize(n > 0 ? static_cast<size_t>(n) : 0);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0'))
      holder.pop_back();
    lock.createdFile_ = false; // the holder's
    return fail(fmt::format("the output folder '{}' is in use by another run ({}); wait for it to end, or "
                            "choose another folder with --out",
                            dir, holder.empty() ? "its lock names no holder" : printableText(holder)));
  }
  const std::string text = holderText() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size())) {
    // The lock holds without the note; only the refusal of a second run loses the holder's name.
  }
  return lock;
}

RunFolderLock::RunFolderLock(RunFolderLock &&other) noexcept
    : dir_(std::move(other.dir_)), fd_(std::exchange(other.fd_, -1)),
      createdFolders_(std::move(other.createdFolders_)), createdFile_(other.createdFile_),
      committed_(other.committed_), warning_(std::move(other.warning_)) {}

RunFolderLock::~RunFolderLock() {
  if (fd_ < 0)
    return;
  const std::string lockFile = (fs::path(dir_) / kRunLockName).string();
  bool removeFolders = !committed_;
  if (committed_ && !createdFolders_.empty()) { // a run that wrote nothing: as if it never ran
    bool onlyLock = true;
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      onlyLock = onlyLock && it->path().filename() == kRunLockName;
    removeFolders = onlyLock && !ec;
  }
  // Unlinked while still held, so no other run locks the file being removed.
  if ((!committed_ && createdFile_) || (removeFolders && !createdFolders_.empty()))
    ::unlink(lockFile.c_str());
  if (removeFolders)
    for (auto it = createdFolders_.rbegin(); it != createdFolders_.rend(); ++it)
      ::rmdir(it->c_str()); // only if empty
  ::close(fd_);             // releases the lock
}

bool isInFolder(const std::string &path, const std::string &dir) {
  const FileIdentity folder = identityOf(dir);
  const FileIdentity parent = identityOf(fs::path(identityOf(path).canonical).parent_path().string());
  return sameFile(folder, parent);
}

Status truncateFile(const std::string &path) {
  std::FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    return fail(fmt::format("cannot write '{}': {}", path, errnoText(errno)));
  if (std::fclose(file) != 0)
    return fail(fmt::format("cannot write '{}': {}", path, errnoText(errno)));
  return Status::success();
}

Status appendLine(const std::string &path, const std::string &line) {
  std::FILE *file = std::fopen(path.c_str(), "a");
  if (!file)
    return fail(fmt::format("cannot write to '{}': {}", path, errnoText(errno)));
  int error = 0;
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size() || std::fputc('\n', file) == EOF ||
      std::fflush(file) != 0)
    error = errno;
  if (std::fclose(file) != 0 && error == 0)
    error = errno;
  if (error != 0)
    return fail(fmt::format("cannot write to '{}': {}", path, errnoText(error)));
  return Status::success();
}

Status restoreEpochLine(const std::string &path, int64_t epoch, const std::string &line) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    return Status::success();
  std::ifstream in(path);
  std::string existing;
  while (in && std::getline(in, existing)) {
    const nlohmann::json j = nlohmann::json::parse(existing, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.value("event", "") == "epoch" && j.contains("epoch") &&
        j["epoch"].is_number_integer() && j["epoch"].get<int64_t>() == epoch)
      return Status::success();
  }
  return appendLine(path, line);
}

Status trimMetricsForResume(const std::string &path, int64_t epochsDone) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return Status::success(); // nothing there yet, or /dev/null and the like
  std::ifstream in(path);
  if (!in)
    return fail(fmt::format("cannot read '{}': {}", path, errnoText(errno)));
  std::string kept, line;
  bool changed = false;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool drop =
        j.is_object() && j.contains("event") &&
        (j["event"] == "end" || (j["event"] == "epoch" && j.contains("epoch") &&
                                 j["epoch"].is_number_integer() && j["epoch"].get<int64_t>() > epochsDone));
    changed = changed || drop;
    if (!drop)
      kept += line + "\n";
  }
  in.close();
  if (!changed)
    return Status::success();
  // Rewrite the file a symbolic link points to, through a temporary.
  std::error_code ec;
  const fs::path target = fs::canonical(path, ec);
  if (ec)
    return fail(fmt::format("cannot resolve '{}': {}", path, ec.message()));
  std::string temporary = temporaryTemplate(target.string());
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0)
    return fail(fmt::format("cannot rewrite '{}': cannot create a temporary next to it ({})", path,
                            errnoText(errno)));
  TemporaryRegistration registration(temporary);
  int error = ::fchmod(fd, info.st_mode & 07777) != 0 ? errno : 0;
  std::FILE *file = ::fdopen(fd, "w");
  if (!file) {
    error = errno;
    ::close(fd);
  } else {
    if (error == 0 && (std::fwrite(kept.data(), 1, kept.size(), file) != kept.size() ||
                       std::fflush(file) != 0 || ::fsync(fd) != 0))
      error = errno;
    if (std::fclose(file) != 0 && error == 0)
      error = errno;
  }
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0)
    error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return fail(fmt::format("cannot rewrite '{}' for the resumed run: {}; the file is unchanged", path,
                            errnoText(error)));
  }
  return Status::success();
}

} // namespace netc::train
