// Launch.h -- who this process is among the ranks of a job, and how netc
// starts a job of its own. parseLaunchEnvironment reads the variables Open
// MPI's mpirun (OMPI_COMM_WORLD_*), Slurm's srun (SLURM_PROCID,
// SLURM_STEP_NUM_TASKS, ...; PMIX_RANK under --mpi=pmix) or netc's own
// launcher of one process per GPU (NETC_RANK, NETC_SIZE, NETC_NCCL_ID, ...;
// localRankEnvironment) set for each rank: a
// pure function of the environment it is given, so it is tested on recorded
// environments; only the CLI edge hands it the real one. mpirunCommand is the
// command line `netc train --ranks N` runs: Open MPI's mpirun with N copies of
// this program, --allow-run-as-root as root, --oversubscribe beyond the cores.
// One launcher serves every device kind: a LaunchRequest asking for a device
// per rank (`--gpus N`, or `--ranks N` on `--device cuda`) is the same job
// with one GPU each, whose ranks netc starts itself (LocalJob.h): GPU
// machines need no MPI, and NCCL carries the job's data.
#pragma once

#include "support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace netc::comm {

/// This process's place in a job.
struct LaunchInfo {
  int rank = 0, size = 1;           // among every rank of the job
  int localRank = 0, localSize = 1; // among the ranks of this machine
  /// What started the ranks: "" (a single process), "mpirun", "srun" or
  /// "netc" (a netc parent process, one rank per GPU).
  std::string launcher;
  /// The job's device communicator id handed down by a netc parent (the
  /// NCCL unique id as text, NETC_NCCL_ID); empty otherwise.
  std::string jobId;
  /// A netc that started the job itself (`--ranks N` through mpirun, or
  /// `--gpus N`; NETC_LAUNCHER as "PID:START", START its start time in
  /// clock ticks since boot): its ranks end when it is gone. 0: none.
  int launcherPid = 0;
  uint64_t launcherStart = 0;
  /// Where rank 0 reports how the job went to that netc (NETC_JOB_STATUS).
  std::string statusFile{};
  /// Under srun: whether PMIx started the task (PMIX_RANK is set), which
  /// Debian's Open MPI needs to join the job.
  bool pmix = false;
  bool operator==(const LaunchInfo &) const = default;
};

using Environment = std::map<std::string, std::string>;

/// The most ranks a job may have (a larger size in the environment is refused).
inline constexpr int kMaxRanks = 1 << 20;

/// The variables a netc parent sets for each rank it starts.
inline constexpr const char *kRankVariable = "NETC_RANK";
inline constexpr const char *kSizeVariable = "NETC_SIZE";
inline constexpr const char *kLocalRankVariable = "NETC_LOCAL_RANK";
inline constexpr const char *kLocalSizeVariable = "NETC_LOCAL_SIZE";
inline constexpr const char *kJobIdVariable = "NETC_NCCL_ID";
/// The longest job id accepted from the environment (an NCCL id is 256 characters).
inline constexpr size_t kMaxJobIdLength = 4096;
/// Set by a netc that starts a job for every rank, whatever starts them.
inline constexpr const char *kLauncherVariable = "NETC_LAUNCHER";
inline constexpr const char *kStatusFileVariable = "NETC_JOB_STATUS";

/// What starts the ranks of the job `info` again, for the command that
/// continues its run: "mpirun -np N " or "srun --mpi=pmix -n N " for a job
/// the user's launcher started; "" for one process, or a job a netc started
/// (whose own arguments hold --ranks N or --gpus N).
std::string relaunchPrefix(const LaunchInfo &info);

/// "PID:START" for this process (NETC_LAUNCHER's value).
std::string launcherIdentity();
/// The start time of process `pid` (clock ticks since boot, /proc's), 0
/// when it does not exist or cannot be read.
uint64_t processStartTime(int pid);
/// Whether process `pid` that started at `start` is gone: its /proc entry
/// is missing, or names a later process (a reused pid). A failure to read it
/// (out of file descriptors) is not taken for gone.
bool processGone(int pid, uint64_t start);

/// The variables for rank `rank` of a `ranks`-rank job on this machine with
/// device communicator id `jobId` ("NAME=value" each).
std::vector<std::string> localRankEnvironment(int rank, int ranks, const std::string &jobId);

/// Where this process stands according to `env`: a netc parent's variables
/// when present, else Open MPI's, else those srun sets for each task of a job step, else a single
/// process (a Slurm batch script outside srun is one process too, whatever
/// its SLURM_NTASKS). An error names the variable and its value when they
/// are not numbers or do not fit together (a rank beyond the size, PMIX_RANK
/// differing from SLURM_PROCID, ...).
Expected<LaunchInfo> parseLaunchEnvironment(const Environment &env);

/// This process's environment (for the CLI edge).
Environment processEnvironment();

/// How `netc train --ranks N` starts its job.
struct LaunchRequest {
  int ranks = 1;
  /// Host threads of each rank (--threads); above 1 the ranks are not bound
  /// to one core each.
  int threadsPerRank = 1;
  /// One device per rank (`--gpus N`): each rank uses the device of its
  /// local rank, and netc starts the ranks itself (LocalJob.h), not mpirun.
  bool devicePerRank = false;
  bool asRoot = false; // mpirun refuses root without --allow-run-as-root
  int cores = 1;       // this machine's cores (physicalCores())
  std::string mpirun = "mpirun";
};

/// The command that runs `program` with `arguments` as `request.ranks` ranks
/// on this machine: mpirun -np N [--allow-run-as-root] [--oversubscribe]
/// [--bind-to none] --stdin none PROGRAM ARGUMENTS...
std::vector<std::string> mpirunCommand(const LaunchRequest &request, const std::string &program,
                                       const std::vector<std::string> &arguments);

/// The physical cores of this machine (Open MPI's slots): distinct
/// (package, core) pairs under `sysRoot`/devices/system/cpu, or the online
/// processors when the topology cannot be read.
int physicalCores(const std::string &sysRoot = "/sys");

} // namespace netc::comm
