// InputFile.h -- opening a file the user named for reading (a .net file, a
// checkpoint, a cost table, a data file) without hanging on what is not a
// file: a FIFO with no writer blocks a plain open(O_RDONLY) forever, and a
// terminal or a device never ends. The open is non-blocking, the kind of
// file is checked on the open descriptor, and anything but a regular file
// (or, where the caller accepts it, the anonymous pipe a shell hands over as
// /dev/stdin or <(command)) is refused with a message saying what it is.
#pragma once

#include <string>
#include <sys/types.h>

namespace netc {

/// Opens `path` read-only (close-on-exec) without blocking on a FIFO that
/// has no writer: O_NONBLOCK for the open, cleared again afterwards so reads
/// block as usual. Returns the descriptor, or -1 with errno set. It does not
/// check what kind of file it opened (openInputFile does).
int openForReading(const std::string &path);

/// What a file of mode `mode` is when it is not a regular file: "a FIFO
/// (named pipe)", "a folder", "a symbolic link" (from lstat), "a character
/// device", "a block device", "a socket", "something other than a file"; ""
/// for a regular file.
std::string fileKindText(mode_t mode);

/// Opens `path` for reading when it is a regular file, or with `allowPipe`
/// an anonymous pipe (`cat x | netc check /dev/stdin`); otherwise -1 and
/// `error` says why, without the path: the system's reason ("No such file
/// or directory", "Is a directory") or "it is a FIFO (named pipe), not a
/// file" ("a pipe" for an anonymous one, "a character device", ...).
int openInputFile(const std::string &path, std::string &error, bool allowPipe = false);

/// For readers that then open the file themselves (std::ifstream), checked
/// with stat, without opening it: "PATH: it is a FIFO (named pipe), not a
/// file" and the like when `path` names a FIFO (but, with `allowPipe`, not
/// a shell's pipe), a device or a socket; "" otherwise, a missing file or a
/// folder included (the reader's own message names those).
std::string inputFileProblem(const std::string &path, bool allowPipe = false);

} // namespace netc
