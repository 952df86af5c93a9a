// RunFiles.h -- the files of a training run (the --out folder's
// last.safetensors, best.safetensors and metrics.jsonl, and --metrics files)
// and how netc keeps a user's files safe: every output path is checked before
// anything is created (a folder that already holds a run, outputs that are the
// same file, unwritable places), metrics lines are appended with every write
// and close checked, and temporaries carry their writer's process id
// ("last.safetensors.tmp-<pid>-XXXXXX") so that a later run removes only
// those whose writer is gone. Temporaries being written are also registered
// so that a signal handler can remove them before the process ends
// (docs/training.md, "Interrupting a run").
#pragma once

#include "support/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace netc::train {

/// The files a run writes into its --out folder.
inline constexpr std::string_view kLastCheckpointName = "last.safetensors";
inline constexpr std::string_view kBestCheckpointName = "best.safetensors";
inline constexpr std::string_view kMetricsName = "metrics.jsonl";

/// The mkstemp template of a temporary written next to `path` by this
/// process: "<path>.tmp-<pid>-XXXXXX".
std::string temporaryTemplate(const std::string &path);

/// The process id in `fileName` when it names a temporary of `baseName`
/// ("<baseName>.tmp-<pid>-XXXXXX"), else nullopt.
std::optional<pid_t> temporaryOwner(std::string_view fileName, std::string_view baseName);

/// Removes the temporaries of the files `baseNames` in folder `dir` whose
/// writing process no longer exists (kill(pid, 0) fails with ESRCH); those
/// of live processes, this one included, are left alone. Returns the paths
/// removed.
std::vector<std::string> removeStaleTemporaries(const std::string &dir,
                                                const std::vector<std::string> &baseNames);

/// Registers a temporary file being written, from construction to
/// destruction, for removeRegisteredTemporaries (a few at a time; paths over
/// PATH_MAX bytes are not registered).
class TemporaryRegistration {
public:
  explicit TemporaryRegistration(const std::string &path);
  ~TemporaryRegistration();
  TemporaryRegistration(const TemporaryRegistration &) = delete;
  TemporaryRegistration &operator=(const TemporaryRegistration &) = delete;

private:
  int slot_ = -1;
};

/// Unlinks every registered temporary. Async-signal-safe: for a signal
/// handler that ends the process at once (a second Ctrl-C).
void removeRegisteredTemporaries() noexcept;

/// The run files `dir` holds: last.safetensors, best.safetensors and a
/// non-empty metrics.jsonl (an empty one records nothing). Empty when the
/// folder does not exist.
std::vector<std::string> runFilesIn(const std::string &dir);

/// Everything a run will write and read, for checkRunOutputs.
struct RunOutputs {
  std::string outDir;                    ///< "" for none
  std::vector<std::string> metricsFiles; ///< extra metrics files
  std::string resumeFrom, initFrom;      ///< the checkpoint a run starts from
  bool overwrite = false;                ///< replace a run already in outDir
};

/// Checks the outputs before anything is created, so that a refused run
/// leaves no trace:
/// - outDir is or can be made a writable folder, and each metrics file can be
///   written: its folder exists and it is not a folder;
/// - a folder that already holds a run (runFilesIn) is refused unless the run
///   resumes from a checkpoint inside it (continuing that run) or
///   `overwrite`; an existing non-empty --metrics file likewise, and one that
///   holds anything but netc metrics lines always;
/// - no two outputs are the same file (compared after resolving symbolic
///   links, and by device and inode where they exist), no metrics file is
///   the checkpoint the run starts from, and --init-from is not a checkpoint
///   the new run replaces; --overwrite is refused with a --resume inside
///   outDir, whose checkpoints it would discard.
/// Messages name the path and the flag, and say what to do instead.
Status checkRunOutputs(const RunOutputs &outputs);

/// The lock file a run holds in its --out folder.
inline constexpr std::string_view kRunLockName = ".netc-run.lock";

/// A run's hold on its --out folder: an exclusive open-file-description
/// lock (fcntl F_OFD_SETLK) on the folder's .netc-run.lock, which the
/// kernel releases when the process ends however it ends, and which two
/// runs in one process (two threads of the C API) also exclude each other
/// by. The file holds the holder's pid, host and start time, so that a
/// second run is refused naming them. Until commit() -- the run is under
/// way -- the lock leaves no trace when it goes: a lock file it created is
/// removed, and so are the folders it created. After it, a folder the lock
/// created is still removed if nothing but the lock file is in it (a run
/// stopped before it wrote anything). A filesystem without these locks
/// (some network and FUSE mounts) is run on without one: warning() says so.
class RunFolderLock {
public:
  /// Takes the lock of folder `dir`, creating the folder (and its missing
  /// parents) when it does not exist; refused, naming the holder, while
  /// another run holds it.
  static Expected<RunFolderLock> take(const std::string &dir);
  RunFolderLock(RunFolderLock &&other) noexcept;
  RunFolderLock &operator=(RunFolderLock &&) = delete;
  ~RunFolderLock();
  /// The run is under way: its folder and lock file stay.
  void commit() { committed_ = true; }
  /// Why the folder could not be locked (the run goes on), or "".
  const std::string &warning() const { return warning_; }

private:
  RunFolderLock() = default;
  std::string dir_;
  int fd_ = -1;
  std::vector<std::string> createdFolders_; // outermost first
  bool createdFile_ = false, committed_ = false;
  std::string warning_;
};

/// Whether the file `path` is in folder `dir` (compared after resolving
/// symbolic links, and by device and inode).
bool isInFolder(const std::string &path, const std::string &dir);

/// Creates `path` empty, or empties it; checks the open and the close.
Status truncateFile(const std::string &path);

/// Appends `line` and a newline to `path`; checks the open, the write and the
/// close, and names the file and the error on failure.
Status appendLine(const std::string &path, const std::string &line);

/// Appends `line` (the metrics line of epoch `epoch`) to the metrics file
/// `path` unless it already has a line of that epoch (a run resumed from a
/// checkpoint written just before the process ended). A file that is not a
/// regular file is left alone.
Status restoreEpochLine(const std::string &path, int64_t epoch, const std::string &line);

/// Before a resumed run appends to a metrics file, drops what the
/// checkpoint's `epochsDone` does not include: an earlier run's "end" line
/// and any epoch after it (an interrupted run, or one resumed from an earlier
/// checkpoint), so the file never records an epoch the checkpoint lacks.
/// Lines that are not netc's JSON are kept. A file that is not a regular file
/// (/dev/null, a pipe) is left alone; the rewrite goes through a temporary
/// and keeps a symbolic link and the file's mode.
Status trimMetricsForResume(const std::string &path, int64_t epochsDone);

} // namespace netc::train
