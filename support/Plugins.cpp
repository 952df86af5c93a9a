// Plugins.cpp -- the plugin folders (Plugins.h).
#include "support/Plugins.h"

#include <dlfcn.h>
#include <filesystem>

namespace netc {

namespace {

/// The folder of the module (executable or shared library) holding this code.
std::string thisModuleDirectory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&pluginDirectories), &info) == 0 || !info.dli_fname)
    return {};
  std::error_code ec;
  auto path = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string() : path.parent_path().string();
}

} // namespace

std::vector<std::string> pluginDirectories() {
  std::vector<std::string> dirs;
  if (std::string here = thisModuleDirectory(); !here.empty()) {
    dirs.push_back((std::filesystem::path(here) / NETC_PLUGIN_DIR_FROM_BIN).lexically_normal().string());
    dirs.push_back((std::filesystem::path(here) / NETC_PLUGIN_DIR_FROM_LIB).lexically_normal().string());
  }
  for (const char *dir : {NETC_PLUGIN_BUILD_DIRS})
    dirs.emplace_back(dir);
  return dirs;
}

std::string findPlugin(const std::string &fileName) {
  for (const std::string &dir : pluginDirectories())
    if (std::error_code ec; std::filesystem::exists(std::filesystem::path(dir) / fileName, ec))
      return (std::filesystem::path(dir) / fileName).string();
  return {};
}

} // namespace netc
