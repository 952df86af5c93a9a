// OpenCommunicator.h -- the communicator of a run: the local one for a
// single process, the MPI plugin for a job of several ranks. The plugin is
// looked for next to the module netc runs from (the installed layout: the
// libdir's netc/ folder, found from bin/ or from libnetc.so) and then in the
// build tree; when it or MPI itself cannot be loaded the error says which
// and what to install, and a single process never needs either.
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/comm/Launch.h"

#include <memory>
#include <string>
#include <vector>

namespace netc::comm {

/// Joins the job `launch` describes (LaunchInfo{} for one process).
Expected<std::shared_ptr<Communicator>> openCommunicator(const LaunchInfo &launch,
                                                         const CommOptions &options);

/// The folders searched for a plugin, in order.
std::vector<std::string> pluginDirectories();

} // namespace netc::comm
