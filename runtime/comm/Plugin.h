// Plugin.h -- the contract between netc and its communicator plugins
// (runtime/comm/mpi): a shared library loaded with dlopen only when a run
// has more than one rank, so that netc itself never links libmpi and starts
// on machines without it. The plugin exports two C functions: its ABI
// version, which must equal kCommPluginAbi (a plugin from another build is
// refused instead of crashing), and a factory.
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/comm/Launch.h"

#include <string>

namespace netc::comm {

/// Bumped whenever Communicator, LaunchInfo or CommOptions change.
inline constexpr int kCommPluginAbi = 4;

/// The file name of the MPI plugin.
inline constexpr const char *kMpiPluginName = "libnetc-comm-mpi.so";

extern "C" {
/// Returns kCommPluginAbi of the build the plugin comes from.
using PluginAbiFunction = int (*)();
/// Joins the job `launch` describes; on failure returns null and sets `error`.
/// The communicator is the process's one: MPI is finalised at exit.
using CreateCommunicatorFunction = Communicator *(*)(const LaunchInfo *launch, const CommOptions *options,
                                                     std::string *error);
}
inline constexpr const char *kPluginAbiSymbol = "netc_comm_plugin_abi";
inline constexpr const char *kCreateCommunicatorSymbol = "netc_comm_plugin_create";

} // namespace netc::comm
