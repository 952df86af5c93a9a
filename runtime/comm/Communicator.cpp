// Communicator.cpp -- the parts of the Communicator interface every
// implementation shares: element sizes, the position named in messages, and
// length-prefixed messages with a size limit (a peer that sends a length
// beyond it is refused before anything is allocated).
#include "runtime/comm/Communicator.h"

#include <fmt/format.h>

#include <cstring>

namespace netc::comm {

size_t dataTypeSize(DataType type) {
  switch (type) {
  case DataType::F32: return 4;
  case DataType::F64: return 8;
  case DataType::I64: return 8;
  case DataType::U8: return 1;
  }
  return 1;
}

Expected<int64_t> Communicator::startSend(const void *, int64_t, int peer, std::string_view what) {
  return fail(fmt::format("{}: the {} to rank {} needs non-blocking transfers, which the '{}' communicator "
                          "does not have",
                          rankName(rank(), size()), what, peer, kind()));
}

Expected<int64_t> Communicator::startReceive(void *, int64_t, int peer, std::string_view what) {
  return fail(fmt::format("{}: the {} from rank {} needs non-blocking transfers, which the '{}' communicator "
                          "does not have",
                          rankName(rank(), size()), what, peer, kind()));
}

Expected<std::shared_ptr<Communicator>> Communicator::split(int, int, std::string_view what) {
  return fail(fmt::format("{}: the {} needs a communicator that can be split, which the '{}' communicator "
                          "cannot",
                          rankName(rank(), size()), what, kind()));
}

std::string Communicator::position() const {
  if (step_ <= 0)
    return "before the first training step";
  return fmt::format("at step {} (epoch {})", step_, epoch_);
}

std::string rankName(int rank, int size) {
  return fmt::format("rank {} of {}", rank, size);
}

Expected<std::vector<std::string>> allGatherMessages(Communicator &comm, std::string_view text,
                                                     std::string_view what, int64_t maxBytes) {
  // [length, rank] of the longest text (its rank, for the message).
  std::vector<int64_t> longest = {static_cast<int64_t>(text.size())};
  if (Status s = comm.allReduce(std::span<int64_t>(longest), ReduceOp::Max, what); !s)
    return Error{s.message()};
  const int64_t width = longest[0];
  if (width > maxBytes)
    return fail(
        fmt::format("{}: a rank has {} bytes to share in the {}, where at most {} are expected: the ranks "
                    "do not all run this version of netc",
                    rankName(comm.rank(), comm.size()), width, what, maxBytes));
  // Each entry: 8 bytes of length, then the text padded to `width`.
  const int64_t entry = width + 8;
  std::vector<char> mine(static_cast<size_t>(entry), '\0'), all(static_cast<size_t>(entry * comm.size()));
  const int64_t length = static_cast<int64_t>(text.size());
  std::memcpy(mine.data(), &length, 8);
  std::memcpy(mine.data() + 8, text.data(), text.size());
  if (Status s = comm.allGather(mine.data(), entry, all.data(), what); !s)
    return Error{s.message()};
  std::vector<std::string> texts;
  for (int r = 0; r < comm.size(); ++r) {
    const char *at = all.data() + static_cast<size_t>(r) * static_cast<size_t>(entry);
    int64_t n = 0;
    std::memcpy(&n, at, 8);
    if (n < 0 || n > width)
      return fail(fmt::format("{}: {} shared a text of {} bytes in the {}, which is not netc's format",
                              rankName(comm.rank(), comm.size()), rankName(r, comm.size()), n, what));
    texts.emplace_back(at + 8, static_cast<size_t>(n));
  }
  return texts;
}

} // namespace netc::comm
