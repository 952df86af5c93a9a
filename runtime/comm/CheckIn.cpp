// CheckIn.cpp -- the check-in message and the stall verdict (CheckIn.h).
// A message is one line of text:
// "netc-check-in 2 ask|reply WAIT SEQUENCE STEP EPOCH NAME".
#include "runtime/comm/CheckIn.h"
#include "runtime/comm/Communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace netc::comm {

namespace {

constexpr std::string_view kCheckInPrefix = "netc-check-in 2 ";

/// A name from a peer, safe to print: control bytes become '?'.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return out;
}

bool readNumber(std::string_view &text, int64_t &value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || value < 0 || end == text.data() + text.size() || *end != ' ')
    return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
  return true;
}

} // namespace

std::string encodeCheckIn(const CheckIn &c) {
  const char *kind = !c.reply ? "ask" : c.inTurn ? "turn" : "reply";
  std::string text =
      fmt::format("{}{} {} {} {} {} ", kCheckInPrefix, kind, c.wait, c.sequence, c.step, c.epoch);
  const size_t room = kMaxCheckInBytes > text.size() ? kMaxCheckInBytes - text.size() : 0;
  text += std::string_view(c.what).substr(0, room);
  return text;
}

Expected<CheckIn> decodeCheckIn(std::string_view bytes) {
  auto bad = [&](std::string_view why) {
    return fail(
        fmt::format("a check-in message that is not netc's ({}): '{}'", why, printable(bytes.substr(0, 60))));
  };
  if (bytes.size() > kMaxCheckInBytes)
    return bad(fmt::format("{} bytes, at most {}", bytes.size(), kMaxCheckInBytes));
  if (!bytes.starts_with(kCheckInPrefix))
    return bad("no 'netc-check-in 2' header");
  bytes.remove_prefix(kCheckInPrefix.size());
  CheckIn c;
  if (bytes.starts_with("reply ")) {
    c.reply = true;
    bytes.remove_prefix(6);
  } else if (bytes.starts_with("turn ")) {
    c.reply = c.inTurn = true;
    bytes.remove_prefix(5);
  } else if (bytes.starts_with("ask ")) {
    bytes.remove_prefix(4);
  } else {
    return bad("neither an ask nor a reply");
  }
  if (!readNumber(bytes, c.wait) || !readNumber(bytes, c.sequence) || !readNumber(bytes, c.step) ||
      !readNumber(bytes, c.epoch))
    return bad("the wait, sequence, step and epoch are not four numbers");
  if (bytes.empty())
    return bad("no operation name");
  c.what = printable(bytes);
  return c;
}

std::string rankList(const std::vector<int> &ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ", ranks[i]);
  return out;
}

std::string stallMessage(const StallReport &r) {
  // The job's numbers of this communicator's ranks.
  auto job = [&](int p) { return r.jobRanks.empty() ? p : r.jobRanks[static_cast<size_t>(p)]; };
  // A rank's number in the job, and what it does there ("1 (stage 1)").
  auto named = [&](int p) {
    const size_t n = static_cast<size_t>(job(p));
    return n < r.roles.size() && !r.roles[n].empty() ? fmt::format("{} ({})", n, r.roles[n])
                                                     : std::to_string(n);
  };
  std::string message = fmt::format("{}{}: the {} {} did not complete within --comm-timeout {:g} s",
                                    rankName(job(r.rank), r.jobRanks.empty() ? r.size : r.jobSize),
                                    static_cast<size_t>(job(r.rank)) < r.roles.size() &&
                                            !r.roles[static_cast<size_t>(job(r.rank))].empty()
                                        ? fmt::format(" ({})", r.roles[static_cast<size_t>(job(r.rank))])
                                        : std::string(),
                                    r.what, r.position, r.timeoutSeconds);
  if (r.absentSeconds >= r.timeoutSeconds / 2)
    return message +
           fmt::format(": this rank itself did not run for {:.1f} s of it (it was stopped, e.g. by "
                       "SIGSTOP or a debugger, or starved of CPU), so the others gave up waiting for it",
                       r.absentSeconds);
  auto answer = [&](int peer) -> const std::optional<CheckIn> & {
    return r.heard[static_cast<size_t>(peer)];
  };
  auto ranks = [&](const std::vector<int> &list) {
    std::string names;
    for (size_t i = 0; i < list.size(); ++i)
      names += fmt::format("{}{}", i == 0 ? "" : i + 1 == list.size() ? " and " : ", ", named(list[i]));
    return fmt::format("{} {}", list.size() == 1 ? "rank" : "ranks", names);
  };
  std::vector<int> silent, with;
  // The ranks waiting elsewhere, grouped by where (in the order first met);
  // those waiting in turn in another communicator of the job, likewise.
  std::vector<std::pair<std::string, std::vector<int>>> elsewhere, inTurn;
  for (int p = 0; p < r.size; ++p) {
    if (p == r.rank || (r.peer >= 0 && p != r.peer))
      continue;
    if (!answer(p)) {
      silent.push_back(p);
      continue;
    }
    const CheckIn &c = *answer(p);
    if (!c.inTurn && c.sequence == r.sequence && c.what == r.what) {
      with.push_back(p);
      continue;
    }
    const std::string where = fmt::format("the {} ({})", c.what,
                                          c.step > 0 ? fmt::format("at step {}, epoch {}", c.step, c.epoch)
                                                     : std::string("before the first training step"));
    auto &groups = c.inTurn ? inTurn : elsewhere;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &e) { return e.first == where; });
    if (it == groups.end())
      groups.push_back({where, {p}});
    else
      it->second.push_back(p);
  }
  if (!silent.empty())
    message +=
        fmt::format(": {} did not answer. {} stopped (SIGSTOP or a debugger), hung, busy for longer than the "
                    "timeout, or on a machine or network that is down; raise --comm-timeout if a rank may "
                    "pause that long",
                    ranks(silent), silent.size() == 1 ? "It is" : "They are");
  for (const auto &[where, list] : elsewhere)
    message += fmt::format("{} {} {} waiting in {} instead", silent.empty() ? ":" : ";", ranks(list),
                           list.size() == 1 ? "is" : "are", where);
  if (!elsewhere.empty())
    message +=
        ": the ranks do not run the same steps (start every rank with the same netc, command and files)";
  for (const auto &[where, list] : inTurn)
    message += fmt::format("{} {} {} waiting in turn, in {} (see {} own message)",
                           silent.empty() && elsewhere.empty() ? ":" : ";", ranks(list),
                           list.size() == 1 ? "is" : "are", where, list.size() == 1 ? "its" : "their");
  const bool answeredFromIt = silent.empty() && elsewhere.empty() && inTurn.empty();
  if (r.peer < 0 && !with.empty() && !answeredFromIt)
    message += fmt::format("; {} {} waiting in it too", ranks(with), with.size() == 1 ? "was" : "were");
  if (answeredFromIt)
    message += r.peer >= 0
                   ? fmt::format(": rank {} answered, but the transfer did not complete (network or MPI "
                                 "trouble between the two)",
                                 named(r.peer))
                   : ": every rank answered from it, so the transport itself stalled (network or MPI "
                     "trouble)";
  return message;
}

} // namespace netc::comm
