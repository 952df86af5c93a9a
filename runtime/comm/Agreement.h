// Agreement.h -- the ranks of a job agree before they train: each brings
// whether its own preparation succeeded and a fingerprint of what it is
// about to train (the netc version, the network, the data, every setting
// that changes the steps), and every rank takes the same verdict: the first
// rank that failed, with its message; else the first rank whose fingerprint
// differs from rank 0's, naming the field and both values; else success,
// with rank 0's value (its seed). One all-gather carries it all, so a rank
// that failed locally still takes part and the job ends together instead of
// leaving the others to time out.
#pragma once

#include "runtime/comm/Communicator.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace netc::comm {

/// Named facts a job's ranks must share, in a fixed order (label, value).
struct Fingerprint {
  std::vector<std::pair<std::string, std::string>> fields;
  void add(std::string label, std::string value) { fields.emplace_back(std::move(label), std::move(value)); }
};

/// One rank's side of an agreement.
struct Outcome {
  bool ok = true;
  int kind = 0;        // the caller's failure kind (e.g. usage or input), kept in the verdict
  std::string message; // why it failed
  Fingerprint fingerprint;
  uint64_t value = 0; // shared from rank 0 (a seed)
};

struct Verdict {
  bool ok = true;
  int kind = 0;
  int rank = -1; // the rank the failure is about
  std::string message;
  uint64_t value = 0; // rank 0's
};

/// The kind of a verdict about fingerprints that differ.
inline constexpr int kMismatchKind = -1;

/// Every rank calls it with its outcome and gets the same verdict. An error
/// only when the exchange itself failed (a rank missing: Communicator).
Expected<Verdict> agree(Communicator &comm, const Outcome &mine, std::string_view what);

/// The verdict of these outcomes (one per rank, as agree's wire format): the
/// pure part of agree, for tests.
Verdict decide(const std::vector<std::string> &outcomes);

/// An outcome in agree's wire format (JSON).
std::string encodeOutcome(const Outcome &outcome);

/// A 64-bit hash of bytes, as 16 hex digits (FNV-1a over 8-byte words):
/// fast enough for a data set of gigabytes.
std::string hashBytes(const void *data, size_t bytes, uint64_t seed = 0);

} // namespace netc::comm
