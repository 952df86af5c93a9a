// CheckIn.h -- how a stalled operation finds the rank that is missing. A
// stalled all-reduce cannot say on its own which rank never joined it, so
// every wait is watched: once a rank has waited half of --comm-timeout (or
// hears that another rank has), it sends a check-in -- the collective it
// waits in, its name, the step -- to every other rank on a side channel,
// and every rank that is waiting answers with its own. At the timeout each
// waiting rank knows who answered; the ranks that did not are named as
// missing (stopped, hung, dead or unreachable), and ranks that answered from
// another operation are named with it (a job whose ranks disagree). A rank
// waiting in one communicator of the job answers the asks of the others
// too, from where it waits (in turn: a pipeline's ranks wait on each
// other through different communicators). These
// are the pure parts: the check-in message (read strictly: a peer's bytes
// are untrusted) and the verdict's text; the MPI communicator does the rest.
#pragma once

#include "support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc::comm {

struct CheckIn {
  bool reply = false;   // a reply to an ask (else an ask: who is there?)
  int64_t wait = 0;     // an ask: the asker's wait; a reply: the wait of the ask it answers
  int64_t sequence = 0; // the collective the sender waits for: the same count on every rank
  int64_t step = 0, epoch = 0;
  std::string what; // the operation the sender waits in
  /// A reply from a rank that waits in another communicator of the job (a
  /// pipeline's stages, a stage's copies: Communicator::split): alive, and
  /// waiting in turn for something else, not in another step.
  bool inTurn = false;
  bool operator==(const CheckIn &) const = default;
};

/// The longest check-in message (its name is cut to fit).
inline constexpr size_t kMaxCheckInBytes = 512;

std::string encodeCheckIn(const CheckIn &checkIn);
/// Reads what encodeCheckIn wrote; anything else is an error saying so.
Expected<CheckIn> decodeCheckIn(std::string_view bytes);

/// What a rank knows when its wait times out.
struct StallReport {
  int rank = 0, size = 1;
  std::string_view what; // the operation that did not complete
  std::string position;  // Communicator::position()
  double timeoutSeconds = 0;
  int64_t sequence = 0;
  /// The peer of a send or receive; -1 for a collective (every rank takes part).
  int peer = -1;
  /// Each rank's reply to this wait's ask (this rank's own entry unused).
  std::vector<std::optional<CheckIn>> heard;
  /// The longest time this rank itself did not run during the wait (it was
  /// stopped, or starved of CPU); from half the timeout on, the stall is its own.
  double absentSeconds = 0;
  /// A communicator split from a job's (Communicator::split): each of its
  /// ranks' rank in the job, and the job's size, which the message names
  /// (empty: the ranks are the job's own).
  std::vector<int> jobRanks = {};
  int jobSize = 0;
  /// Communicator::rankRoles: what each rank of the job does (may be empty).
  std::vector<std::string> roles = {};
};

/// The error of a timed-out wait: the operation, the step, the ranks that
/// did not answer (or the operations the others are in), and what to do.
std::string stallMessage(const StallReport &report);

/// "1", "1 and 3", "1, 3 and 4" ("ranks" before more than one is the caller's).
std::string rankList(const std::vector<int> &ranks);

} // namespace netc::comm
