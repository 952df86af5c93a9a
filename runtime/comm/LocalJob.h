// LocalJob.h -- netc's own launcher: a job of N ranks on this machine, one
// process per GPU (`netc train --gpus N`), started without mpirun because
// GPU machines often have no MPI. The parent starts N copies of a program,
// each with this process's environment plus the variables that say its
// place and the job's device communicator id (localRankEnvironment, read
// back by parseLaunchEnvironment); the parent itself computes nothing and
// waits. The ranks share a process group of their own, so the terminal's
// Ctrl-C reaches only the parent, which forwards it: the first as SIGUSR1
// (the ranks stop together at the next step and rank 0 saves the run), the
// second as SIGINT (a stopping rank ends at once), the third as SIGKILL; a
// stop that outlasts the grace period ends in SIGKILL too. When a rank fails, the others are sent SIGTERM,
// and SIGKILL if they have not ended after a grace period, so a job never
// outlives its first failure by more than that. A termination of the parent
// (SIGTERM, SIGHUP: the caller counts them) is forwarded as a clean stop
// (SIGUSR1), with SIGKILL after the grace period. Each rank gets SIGTERM
// when the parent is gone, however it ended (a parent-death signal).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace netc::comm {

struct LocalJobRequest {
  std::string program;                // an executable's path
  std::vector<std::string> arguments; // after the program's name
  int ranks = 1;
  std::string jobId; // NETC_NCCL_ID for every rank
  /// The devices of this machine (-1: not checked) and the first the job
  /// uses: rank r runs on device firstDevice + r, so the job needs
  /// firstDevice + ranks of them, or it is refused before anything starts.
  int devices = -1, firstDevice = 0;
  /// Ctrl-Cs the caller's signal handler has counted so far (null: none
  /// are forwarded); read while the job runs.
  const std::atomic<int> *interrupts = nullptr;
  /// SIGTERMs and SIGHUPs the caller's handler has counted (null: none).
  const std::atomic<int> *terminations = nullptr;
  /// Seconds the other ranks have to end after a failure before SIGKILL.
  double graceSeconds = 30;
};

struct LocalJobResult {
  /// 0 when every rank succeeded; else the first failure's: its exit
  /// status, or 128 + the signal that killed it; 130 when the ranks ended
  /// as a forwarded Ctrl-C asked, 143 as a termination asked.
  int status = 0;
  /// "rank 1 of 2 (pid 4242) exited with status 3" for the first failure
  /// (empty when none, or when the ranks only stopped as a Ctrl-C asked).
  std::string failure;
  /// A rank could not be started at all (fork or exec failed): why.
  std::string startError;
};

/// Runs the job and waits for every rank.
LocalJobResult runLocalJob(const LocalJobRequest &request);

} // namespace netc::comm
