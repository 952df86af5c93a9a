// OpenCommunicator.cpp -- local or MPI (OpenCommunicator.h). The plugin is
// opened with RTLD_GLOBAL: Open MPI loads its own components with dlopen and
// they need libmpi's symbols in the global scope.
#include "runtime/comm/OpenCommunicator.h"
#include "runtime/comm/LocalCommunicator.h"
#include "runtime/comm/Plugin.h"
#include "support/Plugins.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dlfcn.h>
#include <filesystem>
#include <mutex>

namespace netc::comm {

Expected<std::shared_ptr<Communicator>> openCommunicator(const LaunchInfo &launch,
                                                         const CommOptions &options) {
  if (launch.size <= 1)
    return std::shared_ptr<Communicator>(makeLocalCommunicator(options));
  const std::string job = fmt::format("this process is {} ({})", rankName(launch.rank, launch.size),
                                      launch.launcher.empty() ? "a launcher" : launch.launcher);
  const std::string file = findPlugin(kMpiPluginName);
  if (file.empty())
    return fail(
        fmt::format("{}, which needs netc's MPI plugin {}; it is in none of {}: this netc was built "
                    "without MPI (install Open MPI's development files, e.g. Debian's libopenmpi-dev, "
                    "and build again); one process needs no MPI",
                    job, kMpiPluginName, fmt::join(pluginDirectories(), ", ")));
  ::dlerror();
  void *plugin = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!plugin) {
    const char *why = ::dlerror();
    return fail(
        fmt::format("{}, but MPI could not be loaded: {}. Install Open MPI on every machine of the job "
                    "(Debian: apt install openmpi-bin); one process needs no MPI",
                    job, why ? why : "unknown dlopen error"));
  }
  auto abi = reinterpret_cast<PluginAbiFunction>(::dlsym(plugin, kPluginAbiSymbol));
  auto create = reinterpret_cast<CreateCommunicatorFunction>(::dlsym(plugin, kCreateCommunicatorSymbol));
  if (!abi || !create || abi() != kCommPluginAbi)
    return fail(fmt::format("{} is not the MPI plugin of this netc (ABI {}, this netc needs {}); rebuild and "
                            "install netc and its plugin together",
                            file, abi ? std::to_string(abi()) : std::string("unknown"), kCommPluginAbi));
  std::string error;
  Communicator *comm = create(&launch, &options, &error);
  if (!comm)
    return fail(fmt::format("{}: {}", rankName(launch.rank, launch.size), error));
  // The plugin owns its one communicator for the life of the process.
  return std::shared_ptr<Communicator>(comm, [](Communicator *) {});
}

namespace {

std::mutex gTransportsMutex;
std::vector<std::unique_ptr<DeviceTransport>> &transports() {
  static std::vector<std::unique_ptr<DeviceTransport>> all;
  return all;
}

} // namespace

void registerDeviceTransport(DeviceTransport transport) {
  std::lock_guard lock(gTransportsMutex);
  for (auto &t : transports())
    if (t->name == transport.name) {
      *t = std::move(transport);
      return;
    }
  transports().push_back(std::make_unique<DeviceTransport>(std::move(transport)));
}

const DeviceTransport *findDeviceTransport(std::string_view name) {
  std::lock_guard lock(gTransportsMutex);
  for (auto &t : transports())
    if (t->name == name)
      return t.get();
  return nullptr;
}

Expected<std::shared_ptr<Communicator>> openDeviceCommunicator(const LaunchInfo &launch,
                                                               const CommOptions &options,
                                                               std::string_view name, int device) {
  const DeviceTransport *transport = findDeviceTransport(name);
  if (!transport)
    return fail(
        fmt::format("{}: this netc was built without CUDA, so it has no {} to carry a GPU job's data; "
                    "build it with the CUDA toolkit, or run the job on the CPU (--device cpu)",
                    rankName(launch.rank, launch.size), name));
  if (!launch.jobId.empty())
    return transport->join(launch, launch.jobId, device, options, nullptr);
  // Rank 0 makes the id; the host communicator carries it (or its failure).
  std::shared_ptr<Communicator> host;
  if (launch.size > 1) {
    auto opened = openCommunicator(launch, options);
    if (!opened)
      return opened.error();
    host = std::move(*opened);
  }
  std::string id, problem;
  if (launch.rank == 0) {
    auto made = transport->newJobId();
    if (made)
      id = std::move(*made);
    else
      problem = made.message();
  }
  if (host) {
    auto texts = allGatherMessages(
        *host, launch.rank == 0 ? (problem.empty() ? "id " + id : "error " + problem) : std::string(),
        fmt::format("handing out the {} id", name));
    if (!texts)
      return texts.error();
    const std::string &zero = (*texts)[0];
    if (zero.starts_with("error "))
      return fail(fmt::format("rank 0 could not start {}: {}", name, zero.substr(6)));
    id = zero.substr(3);
  } else if (!problem.empty()) {
    return fail(problem);
  }
  return transport->join(launch, id, device, options, std::move(host));
}

} // namespace netc::comm
