// JobReport.h -- what rank 0 of a job netc started itself (`--ranks N`,
// `--gpus N`) tells that netc, through a small file whose path the launcher
// hands down (NETC_JOB_STATUS): that it started, that training began, each
// checkpoint it wrote, and how it ended. The launcher reads it when the job is
// over, to tell a job that never ran (an `mpirun` that is not Open MPI's, or
// exits 0 without starting netc) from one that trained, and to restart a job
// that lost a rank from its last checkpoint (--max-restarts). One line per
// fact, appended with O_APPEND; the reader takes what it can parse and ignores
// the rest (the file is netc's own, written by a rank of the same binary).
#pragma once

#include "netc/Training.h"

#include <cstdint>
#include <string>

namespace netc::cli {

/// How rank 0 ended, in the "ended" line: a success, a stop that was asked
/// for, a loss of a rank (a restart may help), or a failure that a restart
/// would repeat (bad input, divergence).
inline constexpr const char *kEndedOk = "ok";
inline constexpr const char *kEndedStopped = "stopped";
inline constexpr const char *kEndedLostRank = "lost-rank";
inline constexpr const char *kEndedFailed = "failed";

/// Appends `line` to the job's status file when this process is rank 0 of a
/// job a netc started (launch.statusFile set); otherwise does nothing.
/// Failures are ignored: the report only adds to what the exit status says.
void reportToLauncher(const Launch &launch, const std::string &line);

/// What the launcher learns from the file.
struct JobReport {
  bool started = false;  ///< rank 0 ran netc ("started")
  bool training = false; ///< its first training step was under way ("training")
  bool ended = false;    ///< it reported its end ("ended STATUS KIND")
  int endStatus = 0;
  std::string endKind;        ///< kEndedOk, ...
  std::string checkpoint;     ///< the last checkpoint written ("checkpoint STEP PATH"), or ""
  int64_t checkpointStep = 0; ///< the training steps it holds
};

/// Reads the status file at `path` (a missing or empty file is a job whose
/// rank 0 never started).
JobReport readJobReport(const std::string &path);

} // namespace netc::cli
