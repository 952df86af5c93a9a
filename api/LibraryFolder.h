// LibraryFolder.h -- where `netc build` puts a library's files (-o DIR) and
// how it keeps a user's files safe there. A folder netc build made carries a
// manifest (.netc-library: netc's version and the files of its last build);
// an existing folder without one is refused unless it is empty or
// --overwrite is given, and even then only the files netc writes are
// replaced, never anything else in the folder, and never something that is
// not a regular file. The files are made in a staging folder on the same
// filesystem as their destination (inside DIR when it exists, so a mount
// point or a symbolic link to another filesystem works) and moved in as a
// set: a new DIR is the staging folder renamed into place; an existing one
// is locked (flock) while each old file is set aside and each new one moved
// in, and a failure part-way puts the old files back. Two builds into one
// folder therefore leave one build's whole set, never a mix.
#pragma once

#include "support/Status.h"

#include <filesystem>
#include <string>
#include <vector>

namespace netc {

/// The manifest's file name in a folder netc build made.
inline constexpr const char *kLibraryManifestName = ".netc-library";

/// Checks `out` before anything is compiled: it is absent (its parent must
/// exist), an empty folder, a folder netc build made, or any folder with
/// `overwrite`. The message says what to do otherwise.
Status checkLibraryFolder(const std::filesystem::path &out, bool overwrite);

/// A fresh folder the library's files are written into: inside `out` when
/// it exists, else beside it. Removed (with anything left in it) when it
/// goes, unless it became `out` itself.
class LibraryStaging {
public:
  static Expected<LibraryStaging> create(const std::filesystem::path &out);
  LibraryStaging(LibraryStaging &&other) noexcept;
  LibraryStaging &operator=(LibraryStaging &&) = delete;
  ~LibraryStaging();
  const std::filesystem::path &path() const { return path_; }

  /// Moves the files `names` (written in path()) into `out` as one set, with
  /// the manifest; `overwrite` as checkLibraryFolder. `lockSeconds`: how
  /// long to wait for another build holding the folder.
  Status install(const std::filesystem::path &out, const std::vector<std::string> &names, bool overwrite,
                 double lockSeconds = 120);

private:
  explicit LibraryStaging(std::filesystem::path path) : path_(std::move(path)) {}
  Status installIntoExisting(const std::filesystem::path &out, const std::vector<std::string> &names,
                             bool overwrite, double lockSeconds);
  std::filesystem::path path_;
};

} // namespace netc
