// Agreement.cpp -- the verdict every rank takes before training
// (Agreement.h). Outcomes travel as JSON; one a rank cannot read (not this
// netc's) is itself a failure naming that rank.
#include "runtime/comm/Agreement.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>

namespace netc::comm {

std::string encodeOutcome(const Outcome &o) {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto &[label, value] : o.fingerprint.fields)
    fields.push_back({label, value});
  return nlohmann::json{{"ok", o.ok},
                        {"kind", o.kind},
                        {"message", o.message},
                        {"fields", fields},
                        {"value", std::to_string(o.value)}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

struct Read {
  Outcome outcome;
  std::string problem; // not empty: the text is not an outcome
};

Read readOutcome(const std::string &text) {
  Read r;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto has = [&](const char *key, auto check) { return j.is_object() && j.contains(key) && check(j[key]); };
  if (!has("ok", [](const auto &v) { return v.is_boolean(); }) ||
      !has("kind", [](const auto &v) { return v.is_number_integer(); }) ||
      !has("message", [](const auto &v) { return v.is_string(); }) ||
      !has("fields", [](const auto &v) { return v.is_array(); }) ||
      !has("value", [](const auto &v) { return v.is_string(); })) {
    r.problem = "not netc's agreement message";
    return r;
  }
  r.outcome.ok = j["ok"].get<bool>();
  r.outcome.kind = j["kind"].get<int>();
  r.outcome.message = j["message"].get<std::string>();
  for (const auto &field : j["fields"]) {
    if (!field.is_array() || field.size() != 2 || !field[0].is_string() || !field[1].is_string()) {
      r.problem = "a fingerprint field that is not a [label, value] pair";
      return r;
    }
    r.outcome.fingerprint.add(field[0].get<std::string>(), field[1].get<std::string>());
  }
  const std::string value = j["value"].get<std::string>();
  char *end = nullptr;
  errno = 0;
  r.outcome.value = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-')
    r.problem = "a shared value that is not a number";
  return r;
}

} // namespace

Verdict decide(const std::vector<std::string> &outcomes) {
  const int size = static_cast<int>(outcomes.size());
  std::vector<Read> reads;
  for (const std::string &text : outcomes)
    reads.push_back(readOutcome(text));
  Verdict v;
  for (int r = 0; r < size; ++r) {
    const Read &read = reads[static_cast<size_t>(r)];
    if (!read.problem.empty()) {
      v = {false, kMismatchKind, r,
           fmt::format("{} sent {}: the ranks do not all run this version of netc", rankName(r, size),
                       read.problem)};
      return v;
    }
    if (!read.outcome.ok) {
      v = {false, read.outcome.kind, r,
           size > 1 ? fmt::format("{}: {}", rankName(r, size), read.outcome.message) : read.outcome.message};
      return v;
    }
  }
  const Fingerprint &root = reads[0].outcome.fingerprint;
  for (int r = 1; r < size; ++r) {
    const Fingerprint &mine = reads[static_cast<size_t>(r)].outcome.fingerprint;
    for (size_t i = 0; i < std::max(root.fields.size(), mine.fields.size()); ++i) {
      const bool inRoot = i < root.fields.size(), inMine = i < mine.fields.size();
      if (inRoot && inMine && root.fields[i] == mine.fields[i])
        continue;
      std::string difference;
      if (inRoot && inMine && root.fields[i].first == mine.fields[i].first)
        difference = fmt::format("its {} is {}, rank 0's is {}", root.fields[i].first, mine.fields[i].second,
                                 root.fields[i].second);
      else
        difference = fmt::format("it has {} where rank 0 has {}",
                                 inMine ? "'" + mine.fields[i].first + "'" : std::string("nothing"),
                                 inRoot ? "'" + root.fields[i].first + "'" : std::string("nothing"));
      v = {false, kMismatchKind, r,
           fmt::format(
               "{} differs from rank 0: {}; start every rank with the same netc, command, network file, "
               "data and checkpoint",
               rankName(r, size), difference)};
      return v;
    }
  }
  v.value = reads[0].outcome.value;
  return v;
}

Expected<Verdict> agree(Communicator &comm, const Outcome &mine, std::string_view what) {
  auto all = allGatherMessages(comm, encodeOutcome(mine), what);
  if (!all)
    return all.error();
  return decide(*all);
}

std::string hashBytes(const void *data, size_t bytes, uint64_t seed) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  const auto *p = static_cast<const unsigned char *>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * kPrime;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i)
    h = (h ^ p[i]) * kPrime;
  h ^= bytes;
  return fmt::format("{:016x}", h);
}

} // namespace netc::comm
