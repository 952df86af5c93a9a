// Plugins.h -- where netc's plugins live, shared by every loader of one (the
// MPI communicator, runtime/comm; the LLVM code generator, api/AotBuild):
// next to an installed netc (the libdir's netc/ folder, found from bin/ and
// from libnetc.so's lib/), then the build tree that built this netc. The
// loaders open them with dlopen only when a command needs one, so netc
// starts where a plugin's libraries (libmpi, libLLVM) are absent.
#pragma once

#include <string>
#include <vector>

namespace netc {

/// The folders searched for a plugin, in order.
std::vector<std::string> pluginDirectories();

/// The path of plugin `fileName` in the first of pluginDirectories() holding
/// it; empty when none does.
std::string findPlugin(const std::string &fileName);

} // namespace netc
