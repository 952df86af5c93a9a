// RankLauncher.h -- `--ranks N` and `--gpus N` of netc train, bench and
// calibrate: where this process stands in a job (the launcher's environment,
// the only place the CLI reads it), and, when N ranks are asked for outside
// any launcher, the job itself: this same command run N times through Open
// MPI's mpirun (runtime/comm/Launch.h builds the command), or, with a GPU per
// rank, started by netc itself and handed the NCCL id it made
// (runtime/comm/LocalJob.h). The netc that starts a job stays its owner:
//   - it refuses more local ranks than the machine can run;
//   - it forwards stops: the first Ctrl-C, SIGTERM or SIGHUP as a clean stop
//     (every rank finishes its step and rank 0 saves the run), a second
//     Ctrl-C as SIGTERM, a third -- or a clean stop that has not ended after
//     a grace period -- as SIGKILL to every process of the job;
//   - its ranks end when it is gone, killed too (a parent-death signal on
//     mpirun, and each rank watching it);
//   - it passes the ranks' output through, without mpirun's boilerplate, and
//     says which rank was killed;
//   - it checks that the job really ran (rank 0 reports to it, JobReport.h);
//   - with --max-restarts N (netc train), it restarts a job that lost a rank
//     from its last checkpoint, up to N times.
#pragma once

#include "netc/Training.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace netc::cli {

/// What the command line asks of the job (0: not given).
struct RankRequest {
  int ranks = 0;       // --ranks N
  int gpus = 0;        // --gpus N
  int maxRestarts = 0; // --max-restarts N (netc train)
  /// A pipeline's ranks (netc train --partition): on GPUs, more of them than
  /// the machine has GPUs share them, started by mpirun and joined through
  /// the host rather than refused (training::sharedGpus).
  bool shareGpus = false;
  /// What asked for the ranks when no flag did, for messages ("--partition 2").
  std::string impliedBy;
};

/// --ranks N and --gpus N into `request`.
void addRanksOption(CLI::App &app, RankRequest &request);
/// --max-restarts N into `request` (netc train).
void addRestartOption(CLI::App &app, RankRequest &request);

/// The most ranks `netc ... --ranks N` starts on a machine of `cpus`
/// logical CPUs (4 a CPU): a larger N is refused, naming the limit.
int maxLocalRanks(int cpus);

/// Settles this process's place for a command asked to run on `request`'s
/// ranks on `device` (--device) with `threads` threads each (0: the default). Returns
/// an exit status when this process has nothing more to do -- it started the
/// job and waited for it, or the request cannot be met (the message is
/// printed) -- and otherwise fills `launch` (one process, or this rank of a
/// job whose launcher started it; a rank whose launcher is a netc watches
/// it, and rank 0 reports to it).
std::optional<int> settleLaunch(const RankRequest &request, const std::string &device, int threads,
                                const std::vector<std::string> &commandLine, Launch &launch);

/// `commandLine` without --overwrite, --resume, --init-from and --init-skip
/// (with their values), plus --resume `checkpoint`: the arguments that
/// continue a run from it.
std::vector<std::string> resumeArguments(const std::vector<std::string> &commandLine,
                                         const std::string &checkpoint);
/// `word` as one shell word (single-quoted when it needs to be).
std::string shellWord(const std::string &word);

} // namespace netc::cli
