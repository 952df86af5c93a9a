// RankLauncher.h -- `--ranks N` of netc train and netc bench: where this
// process stands in a job (the launcher's environment, the only place the
// CLI reads it), and, when N ranks are asked for outside any launcher, the
// job itself: this same command run N times through Open MPI's mpirun
// (runtime/comm/Launch.h builds the command). The job's ranks see N in the
// environment and run; the netc that started them forwards Ctrl-C as a
// clean stop (mpirun passes SIGUSR1 on to every rank), passes their output
// through and, when a rank was killed, says which. The CUDA backend's
// `--gpus N` is the same job with a device per rank.
#pragma once

#include "netc/Training.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace netc::cli {

/// --ranks N into `ranks` (0 when not given).
CLI::Option *addRanksOption(CLI::App &app, int &ranks);

/// Settles this process's place for a command asked to run on `ranks`
/// ranks (0: not asked) with `threads` threads each (0: the default). Returns
/// an exit status when this process has nothing more to do -- it started the
/// job and waited for it, or the request cannot be met (the message is
/// printed) -- and otherwise fills `launch` (one process, or this rank of a
/// job whose launcher started it).
std::optional<int> settleLaunch(int ranks, int threads, const std::vector<std::string> &commandLine,
                                Launch &launch);

} // namespace netc::cli
