// ErrnoText.h -- the message for an errno value ("No such file or directory"),
// thread-safe where strerror is not: for the run files, checkpoints and
// library folders, which are written while other threads run.
#pragma once

#include <string>
#include <system_error>

namespace netc {

inline std::string errnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

} // namespace netc
