// Backends.cpp -- the built-in backends, registered once per process.
#include "api/Backends.h"
#include "runtime/cpu/CpuBackend.h"

#include <mutex>

namespace netc {

void registerBuiltinBackends() {
  static std::once_flag once;
  std::call_once(once, [] { runtime::registerCpuBackend(); });
}

} // namespace netc
