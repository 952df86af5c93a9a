// OpenCommunicator.h -- the communicator of a run: the local one for a
// single process, the MPI plugin for a job of several ranks. The plugin is
// looked for next to the module netc runs from (the installed layout: the
// libdir's netc/ folder, found from bin/ or from libnetc.so) and then in the
// build tree; when it or MPI itself cannot be loaded the error says which
// and what to install, and a single process never needs either. A device
// transport (NCCL, registered by the CUDA backend's library) carries a
// GPU job's data: its ranks get the job's id from a netc parent, or rank 0
// makes one and the host communicator (MPI) carries it to the others.
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/comm/Launch.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace netc::comm {

/// Joins the job `launch` describes (LaunchInfo{} for one process).
Expected<std::shared_ptr<Communicator>> openCommunicator(const LaunchInfo &launch,
                                                         const CommOptions &options);

/// A communicator for device memory, registered by a device backend's library.
struct DeviceTransport {
  std::string name; // "nccl"
  /// A new job id (what a local job's parent hands to its ranks).
  std::function<Expected<std::string>()> newJobId;
  /// The devices of this machine (what a local job's parent checks --gpus against).
  std::function<Expected<int>()> deviceCount;
  /// Joins job `launch` of id `jobId` on device `device`; `bootstrap` (may
  /// be null) is the host communicator that carried the id, kept alive with it.
  std::function<Expected<std::shared_ptr<Communicator>>(const LaunchInfo &launch, const std::string &jobId,
                                                        int device, const CommOptions &options,
                                                        std::shared_ptr<Communicator> bootstrap)>
      join;
};
/// Registers `transport` (a second one of the same name replaces the first).
void registerDeviceTransport(DeviceTransport transport);
/// The transport registered as `name`, or null.
const DeviceTransport *findDeviceTransport(std::string_view name);

/// Joins job `launch` over device transport `name` on device `device`:
/// with launch.jobId (a netc parent's ranks) that id; else rank 0 makes
/// one and the host communicator of the job (openCommunicator) carries it
/// to every rank. An error names the transport and why it is missing.
Expected<std::shared_ptr<Communicator>> openDeviceCommunicator(const LaunchInfo &launch,
                                                               const CommOptions &options,
                                                               std::string_view name, int device);

} // namespace netc::comm
