// RankLauncher.h -- `--ranks N` of netc train and netc bench: where this
// process stands in a job (the launcher's environment, the only place the
// CLI reads it), and, when N ranks are asked for outside any launcher, the
// job itself: this same command run N times through Open MPI's mpirun
// (runtime/comm/Launch.h builds the command). The job's ranks see N in the
// environment and run; the netc that started them forwards Ctrl-C as a
// clean stop (mpirun passes SIGUSR1 on to every rank), passes their output
// through and, when a rank was killed, says which. `--gpus N` (or --ranks N
// on --device cuda) is the same job with a GPU per rank: netc starts the
// ranks itself, without mpirun, and hands them the NCCL id it made
// (runtime/comm/LocalJob.h).
#pragma once

#include "netc/Training.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace netc::cli {

/// What the command line asks of the job (0: not given).
struct RankRequest {
  int ranks = 0; // --ranks N
  int gpus = 0;  // --gpus N
};

/// --ranks N and --gpus N into `request`.
void addRanksOption(CLI::App &app, RankRequest &request);

/// Settles this process's place for a command asked to run on `request`'s
/// ranks on `device` (--device) with `threads` threads each (0: the default). Returns
/// an exit status when this process has nothing more to do -- it started the
/// job and waited for it, or the request cannot be met (the message is
/// printed) -- and otherwise fills `launch` (one process, or this rank of a
/// job whose launcher started it).
std::optional<int> settleLaunch(const RankRequest &request, const std::string &device, int threads,
                                const std::vector<std::string> &commandLine, Launch &launch);

} // namespace netc::cli
