// BackendRegistry.cpp -- the name → factory table behind createBackend.
#include "runtime/core/Backend.h"

#include <map>
#include <mutex>

namespace netc::runtime {

namespace {
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, BackendFactory, std::less<>> &registry() {
  static std::map<std::string, BackendFactory, std::less<>> r;
  return r;
}
} // namespace

void registerBackend(std::string name, BackendFactory factory) {
  std::lock_guard lock(registryMutex());
  registry()[std::move(name)] = std::move(factory);
}

Expected<std::unique_ptr<Backend>> createBackend(std::string_view name, const BackendOptions &options) {
  std::lock_guard lock(registryMutex());
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto &[n, f] : registry())
      known += (known.empty() ? "" : ", ") + n;
    return fail("unknown backend '" + std::string(name) + "' (available: " + known + ")");
  }
  return it->second(options);
}

std::vector<std::string> backendNames() {
  std::lock_guard lock(registryMutex());
  std::vector<std::string> names;
  for (const auto &[n, f] : registry())
    names.push_back(n);
  return names;
}

} // namespace netc::runtime
