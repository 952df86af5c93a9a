// CostTable.cpp -- reading, checking and writing cost tables (CostTable.h),
// choosing a profile and a link, and the built-in tables, whose JSON
// (codegen/cost/*.json) codegen/CMakeLists.txt embeds at build time. Reading
// never throws: a syntax error names its line and column, and a field that
// is missing, misspelt, of the wrong type or out of range is named by path.
#include "codegen/CostTable.h"

#include "support/InputFile.h"
#include "support/NumberText.h"
#include "support/PrintableText.h"
#include "support/Spelling.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>
#include <unistd.h>
#include <utility>

namespace netc::cost {

/// The embedded text of every built-in table, by name (defined in the
/// BuiltinCostTables.cpp that codegen/CMakeLists.txt generates).
std::vector<std::pair<std::string_view, std::string_view>> builtinCostTableTexts();

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr size_t kMaxTableBytes = size_t(1) << 20;
/// A table nests five deep; deeper text is refused before it is parsed.
constexpr int kMaxDepth = 32;
constexpr int64_t kMaxThreads = 1024, kMaxDevicesPerNode = 65536;
constexpr int64_t kMaxMemoryBytes = int64_t(1) << 60;
constexpr double kMaxMicroseconds = 1e9, kMaxRate = 1e18, kMaxBytesPerSecond = 1e15;
constexpr size_t kMaxAllReducePoints = 64;

constexpr plan::OpKind kAllKinds[] = {
#define OP(Id, Name, Role, Backward) plan::OpKind::Id,
#include "codegen/Ops.def"
#undef OP
};

std::string join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

/// A JSON value as a message shows what it got: "a string", "-3", "null".
std::string describe(const Json &value) {
  switch (value.type()) {
  case Json::value_t::object: return "an object";
  case Json::value_t::array: return "an array";
  case Json::value_t::string: return "a string";
  case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
  case Json::value_t::null: return "null";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float: return value.dump();
  default: return "nothing";
  }
}

/// The 1-based line and column (in bytes) of byte `index` of `text`.
std::pair<size_t, size_t> lineColumn(std::string_view text, size_t index) {
  index = std::min(index, text.size());
  const std::string_view before = text.substr(0, index);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t newline = before.rfind('\n');
  return {line, newline == std::string_view::npos ? index + 1 : index - newline};
}

/// The index of the first bracket that nests deeper than kMaxDepth, if any
/// (outside strings; the JSON parser judges the rest).
std::optional<size_t> tooDeep(std::string_view text) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

/// nlohmann's message without its "[json.exception...]" id and position.
std::string shortReason(const std::string &what) {
  std::string_view reason = what;
  auto dropThrough = [&reason](std::string_view marker) { // the text up to and with `marker`
    if (const size_t at = reason.find(marker); at != std::string_view::npos)
      reason.remove_prefix(at + marker.size());
  };
  if (reason.starts_with("[json.exception."))
    dropThrough("] ");
  if (reason.starts_with("parse error"))
    dropThrough(": ");
  constexpr size_t kLimit = 200;
  std::string out;
  for (char c : reason.substr(0, kLimit)) // "last read: '...'" may quote bytes that are not UTF-8
    out += static_cast<unsigned char>(c) < 0x80 ? std::string(1, c)
                                                : fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
  return printableText(out) + (reason.size() > kLimit ? "..." : "");
}

/// Where the number of nlohmann's "number overflow parsing '1e999'" is, as
/// "line L, column C: " (empty if it cannot tell).
std::string overflowPosition(std::string_view text, std::string_view what) {
  constexpr std::string_view kMarker = "parsing '";
  const size_t start = what.find(kMarker);
  const size_t end = start == std::string_view::npos ? start : what.find('\'', start + kMarker.size());
  if (end == std::string_view::npos || end == start + kMarker.size())
    return {};
  const size_t at = text.find(what.substr(start + kMarker.size(), end - start - kMarker.size()));
  if (at == std::string_view::npos)
    return {};
  const auto [line, column] = lineColumn(text, at);
  return fmt::format("line {}, column {}: ", line, column);
}

/// Records the first key that appears twice in one object, with its path,
/// while nlohmann parses (it would keep the last silently).
class DuplicateKeys {
public:
  bool onEvent(Json::parse_event_t event, const Json &parsed) {
    using Event = Json::parse_event_t;
    switch (event) {
    case Event::object_start: frames_.push_back({childPath(), false, 0, {}, {}}); break;
    case Event::array_start: frames_.push_back({childPath(), true, 0, {}, {}}); break;
    case Event::object_end:
    case Event::array_end:
      if (!frames_.empty())
        frames_.pop_back();
      break;
    case Event::key: {
      if (frames_.empty() || !parsed.is_string())
        break;
      Frame &top = frames_.back();
      top.key = parsed.get<std::string>();
      if (!top.keys.insert(top.key).second && !duplicate_)
        duplicate_ = join(top.path, top.key);
      break;
    }
    case Event::value: childPath(); break;
    }
    return true;
  }
  const std::optional<std::string> &duplicate() const { return duplicate_; }

private:
  struct Frame {
    std::string path;
    bool array = false;
    size_t count = 0;
    std::string key;
    std::set<std::string, std::less<>> keys;
  };
  /// The path of the value that starts now (counting it in an array).
  std::string childPath() {
    if (frames_.empty())
      return {};
    Frame &top = frames_.back();
    return top.array ? fmt::format("{}[{}]", top.path, top.count++) : join(top.path, top.key);
  }
  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_;
};

/// Checks one parsed table field by field; the first problem is kept.
class Reader {
public:
  explicit Reader(std::string_view fileName) : fileName_(fileName) {}

  bool failed() const { return error_.has_value(); }
  Error error() const { return Error{*error_}; }

  /// Records `message` about the field at `path` (the whole file when
  /// empty); returns false for `return fail(...)`.
  bool fail(std::string_view path, std::string_view message) {
    if (!error_)
      error_ = path.empty() ? fmt::format("{}: {}", fileName_, message)
                            : fmt::format("{}: {}: {}", fileName_, path, message);
    return false;
  }

  /// `value` is an object whose keys are all in `known`.
  bool object(const Json &value, std::string_view path, std::initializer_list<std::string_view> known) {
    if (!value.is_object())
      return fail(path, fmt::format("must be an object, got {}", describe(value)));
    for (const auto &item : value.items()) {
      const std::string &key = item.key();
      if (std::find(known.begin(), known.end(), key) != known.end())
        continue;
      std::string message = fmt::format("unknown key {}", quotedExcerpt(key));
      if (path.empty())
        message += " at the top level";
      if (std::optional<std::string> near = closestMatch(key, std::vector<std::string_view>(known)))
        message += fmt::format("; did you mean '{}'?", *near);
      else
        message += fmt::format("; the keys here are {}", keyList(known));
      return fail(path, message);
    }
    return true;
  }

  /// The member `key` of an object, or nullptr (and the error) if missing.
  const Json *field(const Json &object, std::string_view path, std::string_view key) {
    const auto found = object.find(key);
    if (found == object.end()) {
      fail(join(path, key), "missing");
      return nullptr;
    }
    return &*found;
  }

  /// A finite number in [0, max] (`positive`: in (0, max]).
  bool number(const Json &object, std::string_view path, std::string_view key, bool positive, double max,
              std::string_view maxText, double &out) {
    const Json *value = field(object, path, key);
    if (!value)
      return false;
    const std::string at = join(path, key);
    if (!value->is_number())
      return fail(at, fmt::format("must be a number, got {}", describe(*value)));
    const double x = value->get<double>();
    if (!std::isfinite(x))
      return fail(at, fmt::format("must be a finite number, got {}", describe(*value)));
    if (positive && !(x > 0))
      return fail(at, fmt::format("must be a positive number, got {}", describe(*value)));
    if (positive && x < 1) // every positive field is a rate: below 1 per second, no time is finite
      return fail(at, fmt::format("must be a rate of at least 1 per second, got {}", describe(*value)));
    if (!positive && x < 0)
      return fail(at, fmt::format("must be zero or more, got {}", describe(*value)));
    if (x > max)
      return fail(at, fmt::format("must be at most {}, got {}", maxText, describe(*value)));
    out = x;
    return true;
  }

  /// An integer in [min, max] (an integral number such as 8e10 counts);
  /// `what` says what it must be.
  bool integer(const Json &object, std::string_view path, std::string_view key, int64_t min, int64_t max,
               std::string_view what, int64_t &out) {
    const Json *value = field(object, path, key);
    if (!value)
      return false;
    std::optional<int64_t> n;
    if (value->is_number_unsigned()) {
      const auto u = value->get<uint64_t>();
      if (u <= static_cast<uint64_t>(max))
        n = static_cast<int64_t>(u);
    } else if (value->is_number_integer()) {
      n = value->get<int64_t>();
    } else if (value->is_number_float()) {
      const double d = value->get<double>();
      if (d == std::floor(d) && d >= static_cast<double>(min) && d <= static_cast<double>(max))
        n = static_cast<int64_t>(d);
    }
    if (!n || *n < min || *n > max)
      return fail(join(path, key), fmt::format("must be {}, got {}", what, describe(*value)));
    out = *n;
    return true;
  }

  /// A string (not empty, when `nonEmpty`).
  bool string(const Json &object, std::string_view path, std::string_view key, bool nonEmpty,
              std::string &out) {
    const Json *value = field(object, path, key);
    if (!value)
      return false;
    if (!value->is_string() || (nonEmpty && value->get_ref<const std::string &>().empty()))
      return fail(join(path, key), fmt::format("must be a {}string, got {}", nonEmpty ? "non-empty " : "",
                                               value->is_string() ? "an empty one" : describe(*value)));
    out = value->get<std::string>();
    return true;
  }

private:
  static std::string keyList(std::initializer_list<std::string_view> known) {
    std::string list;
    for (std::string_view key : known)
      list += fmt::format("{}'{}'", list.empty() ? "" : ", ", key);
    return list;
  }

  std::string fileName_;
  std::optional<std::string> error_;
};

/// A link's optional "all_reduce" points: at most kMaxAllReducePoints, by
/// strictly increasing bytes.
bool readAllReducePoints(Reader &reader, const Json &link, const std::string &path, Link &out) {
  const auto found = link.find("all_reduce");
  if (found == link.end())
    return true;
  const std::string at = join(path, "all_reduce");
  if (!found->is_array())
    return reader.fail(at, fmt::format("must be an array of measured all-reduces ({{\"bytes\", "
                                       "\"ranks\", \"us\"}} each), got {}",
                                       describe(*found)));
  if (found->size() > kMaxAllReducePoints)
    return reader.fail(
        at, fmt::format("holds {} points; a link has at most {}", found->size(), kMaxAllReducePoints));
  for (size_t i = 0; i < found->size(); ++i) {
    const std::string entry = fmt::format("{}[{}]", at, i);
    const Json &value = (*found)[i];
    AllReducePoint point;
    int64_t bytes = 0, ranks = 0;
    if (!reader.object(value, entry, {"bytes", "ranks", "us"}) ||
        !reader.integer(value, entry, "bytes", 1, kMaxMemoryBytes, "a positive integer of bytes up to 2^60",
                        bytes) ||
        !reader.integer(value, entry, "ranks", 2, kMaxDevicesPerNode, "an integer from 2 to 65536", ranks) ||
        !reader.number(value, entry, "us", false, kMaxMicroseconds, "1e9", point.us))
      return false;
    if (!(point.us > 0))
      return reader.fail(join(entry, "us"), "must be a positive number of microseconds, got 0");
    point.bytes = static_cast<double>(bytes);
    point.ranks = static_cast<int>(ranks);
    if (!out.allReduces.empty() && point.bytes <= out.allReduces.back().bytes)
      return reader.fail(join(entry, "bytes"),
                         fmt::format("must be more than the point before ({} bytes): the points go by "
                                     "increasing size",
                                     out.allReduces.back().bytes));
    out.allReduces.push_back(point);
  }
  return true;
}

bool readLink(Reader &reader, const Json &links, std::string_view name, Link &link) {
  const std::string path = join("links", name);
  const Json *value = reader.field(links, "links", name);
  return value && reader.object(*value, path, {"alpha_us", "bytes_per_second", "source", "all_reduce"}) &&
         reader.number(*value, path, "alpha_us", false, kMaxMicroseconds, "1e9", link.alphaUs) &&
         reader.number(*value, path, "bytes_per_second", true, kMaxBytesPerSecond, "1e15 (1 PB/s)",
                       link.bytesPerSecond) &&
         reader.string(*value, path, "source", false, link.source) &&
         readAllReducePoints(reader, *value, path, link);
}

bool readOps(Reader &reader, const Json &ops, const std::string &path, ComputeProfile &profile) {
  if (!ops.is_object())
    return reader.fail(path, fmt::format("must be an object (an entry per op), got {}", describe(ops)));
  std::vector<std::string_view> names;
  for (plan::OpKind kind : kAllKinds)
    if (hasRate(kind))
      names.push_back(plan::opName(kind));
  for (const auto &item : ops.items()) {
    const std::string &key = item.key();
    if (std::find(names.begin(), names.end(), key) != names.end())
      continue;
    for (plan::OpKind kind : kAllKinds)
      if (plan::opName(kind) == key)
        return reader.fail(path, fmt::format("'{}' is a communication op, whose time the links give; "
                                             "it has no entry here",
                                             key));
    std::string message = fmt::format("unknown op {}", quotedExcerpt(key));
    if (std::optional<std::string> near = closestMatch(key, names))
      message += fmt::format("; did you mean '{}'?", *near);
    else
      message += " (the ops are those of codegen/Ops.def, e.g. 'dense')";
    return reader.fail(path, message);
  }
  for (plan::OpKind kind : kAllKinds) {
    if (!hasRate(kind))
      continue;
    const std::string_view name = plan::opName(kind);
    const auto entry = ops.find(name);
    if (entry == ops.end())
      return reader.fail(path, fmt::format("no entry for op '{}'", name));
    const std::string at = join(path, name);
    OpRate rate;
    if (!reader.object(*entry, at, {"overhead_us", "rate", "byte_rate"}) ||
        !reader.number(*entry, at, "overhead_us", false, kMaxMicroseconds, "1e9", rate.overheadUs) ||
        !reader.number(*entry, at, "rate", true, kMaxRate, "1e18", rate.rate) ||
        !reader.number(*entry, at, "byte_rate", false, kMaxRate, "1e18", rate.byteRate))
      return false;
    if (rate.byteRate > 0 && rate.byteRate < 1)
      return reader.fail(join(at, "byte_rate"),
                         fmt::format("must be 0 (no such term) or a rate of at least 1 "
                                     "byte per second, got {}",
                                     rate.byteRate));
    if (workMeasure(kind) == WorkMeasure::Bytes && rate.byteRate != 0)
      return reader.fail(join(at, "byte_rate"),
                         fmt::format("must be 0: the rate of '{}' is already in bytes per second", name));
    profile.ops[kind] = rate;
  }
  return true;
}

bool readProfile(Reader &reader, const Json &value, const std::string &path, ComputeProfile &profile) {
  int64_t threads = 0, ranks = 1;
  if (!reader.object(value, path, {"threads", "ranks", "step_overhead_us", "sample_overhead_us", "ops"}) ||
      !reader.integer(value, path, "threads", 0, kMaxThreads, "an integer from 0 (a device) to 1024",
                      threads) ||
      (value.contains("ranks") &&
       !reader.integer(value, path, "ranks", 1, kMaxThreads, "an integer from 1 to 1024", ranks)) ||
      !reader.number(value, path, "step_overhead_us", false, kMaxMicroseconds, "1e9",
                     profile.stepOverheadUs) ||
      !reader.number(value, path, "sample_overhead_us", false, kMaxMicroseconds, "1e9",
                     profile.sampleOverheadUs))
    return false;
  profile.threads = static_cast<int>(threads);
  profile.ranks = static_cast<int>(ranks);
  const Json *ops = reader.field(value, path, "ops");
  return ops && readOps(reader, *ops, join(path, "ops"), profile);
}

/// Checks the parsed `root` field by field into `table`.
bool readTable(Reader &reader, const Json &root, CostTable &table) {
  if (!root.is_object())
    return reader.fail("", fmt::format("must be a JSON object (a netc cost table), got {}", describe(root)));
  const auto format = root.find("netc_cost_table");
  if (format == root.end())
    return reader.fail("", fmt::format("not a netc cost table: it has no \"netc_cost_table\" key (a table "
                                       "starts with \"netc_cost_table\": {}; netc calibrate writes them)",
                                       kCostTableFormat));
  if (!format->is_number_integer())
    return reader.fail("netc_cost_table", fmt::format("must be the format number {}, got {}",
                                                      kCostTableFormat, describe(*format)));
  if (*format != kCostTableFormat)
    return reader.fail("netc_cost_table",
                       fmt::format("format {} is not one this netc reads (it reads format {}); measure the "
                                   "table again with this netc's `netc calibrate`",
                                   describe(*format), kCostTableFormat));
  int64_t memory = 0, devicesPerNode = 0;
  if (!reader.object(root, "",
                     {"netc_cost_table", "backend", "device", "source", "memory_bytes", "devices_per_node",
                      "profiles", "links", "storage", "machine"}) ||
      !reader.string(root, "", "backend", true, table.backend))
    return false;
  if (table.backend != "cpu" && table.backend != "cuda")
    return reader.fail("backend",
                       fmt::format("must be \"cpu\" or \"cuda\", got {}", quotedExcerpt(table.backend)));
  if (!reader.string(root, "", "device", true, table.device) ||
      !reader.string(root, "", "source", false, table.source) ||
      !reader.integer(root, "", "memory_bytes", 1, kMaxMemoryBytes, "a positive integer of bytes up to 2^60",
                      memory) ||
      !reader.integer(root, "", "devices_per_node", 1, kMaxDevicesPerNode, "an integer from 1 to 65536",
                      devicesPerNode))
    return false;
  table.memoryBytes = static_cast<uint64_t>(memory);
  table.devicesPerNode = static_cast<int>(devicesPerNode);

  const Json *profiles = reader.field(root, "", "profiles");
  if (!profiles)
    return false;
  if (!profiles->is_array())
    return reader.fail("profiles", fmt::format("must be an array of profiles, got {}", describe(*profiles)));
  if (profiles->empty())
    return reader.fail("profiles", "must hold at least one profile");
  for (size_t i = 0; i < profiles->size(); ++i) {
    const std::string path = fmt::format("profiles[{}]", i);
    ComputeProfile profile;
    if (!readProfile(reader, (*profiles)[i], path, profile))
      return false;
    for (size_t j = 0; j < table.profiles.size(); ++j)
      if (table.profiles[j].threads == profile.threads && table.profiles[j].ranks == profile.ranks)
        return reader.fail(
            join(path, "threads"),
            profile.ranks == 1
                ? fmt::format("{} again (profiles[{}] has it too); a thread count has one profile",
                              profile.threads, j)
                : fmt::format("{} with {} ranks again (profiles[{}] has them too); a thread "
                              "count has one profile per rank count",
                              profile.threads, profile.ranks, j));
    table.profiles.push_back(std::move(profile));
  }
  // A GPU's profile does not depend on the host's threads; a CPU's does.
  for (size_t i = 0; i < table.profiles.size(); ++i)
    if ((table.backend == "cuda") != (table.profiles[i].threads == 0))
      return reader.fail(join(fmt::format("profiles[{}]", i), "threads"),
                         table.backend == "cuda"
                             ? fmt::format("must be 0 in a \"cuda\" table (a GPU's profile), got {}",
                                           table.profiles[i].threads)
                             : std::string("must be 1 or more in a \"cpu\" table (0 is a GPU's profile)"));
  std::sort(table.profiles.begin(), table.profiles.end(),
            [](const ComputeProfile &a, const ComputeProfile &b) {
              return a.ranks != b.ranks ? a.ranks < b.ranks : a.threads < b.threads;
            });

  const Json *links = reader.field(root, "", "links");
  if (!links || !reader.object(*links, "links", {kIntraNode, kInterNode}))
    return false;
  for (std::string_view name : {kIntraNode, kInterNode}) {
    Link link;
    if (!readLink(reader, *links, name, link))
      return false;
    table.links.emplace(std::string(name), std::move(link));
  }
  if (const auto storage = root.find("storage"); storage != root.end()) {
    Storage s;
    if (!reader.object(*storage, "storage", {"overhead_us", "bytes_per_second", "source"}) ||
        !reader.number(*storage, "storage", "overhead_us", false, kMaxMicroseconds, "1e9", s.overheadUs) ||
        !reader.number(*storage, "storage", "bytes_per_second", true, kMaxBytesPerSecond, "1e15 (1 PB/s)",
                       s.bytesPerSecond) ||
        !reader.string(*storage, "storage", "source", false, s.source))
      return false;
    table.storage = std::move(s);
  }
  if (const auto machine = root.find("machine"); machine != root.end()) {
    MachineDescription m;
    int64_t cores = 0, busy = 0;
    constexpr std::string_view at = "machine";
    if (!reader.object(*machine, at,
                       {"cpu", "isa", "dense", "netc", "cores", "peak_gflops_per_core",
                        "peak_copy_gb_per_second", "busy_tasks"}) ||
        !reader.string(*machine, at, "cpu", true, m.cpu) ||
        !reader.string(*machine, at, "isa", false, m.isa) ||
        !reader.string(*machine, at, "dense", false, m.dense) ||
        !reader.string(*machine, at, "netc", true, m.netc) ||
        !reader.integer(*machine, at, "cores", 1, kMaxThreads, "an integer from 1 to 1024", cores) ||
        !reader.number(*machine, at, "peak_gflops_per_core", false, kMaxRate / 1e9, "1e9",
                       m.peakGflopsPerCore) ||
        !reader.number(*machine, at, "peak_copy_gb_per_second", false, kMaxBytesPerSecond / 1e9, "1e6",
                       m.peakCopyGbPerSecond) ||
        (machine->contains("busy_tasks") && // optional: tables before it have none
         !reader.integer(*machine, at, "busy_tasks", 0, 1 << 20, "an integer from 0 to 1048576", busy)))
      return false;
    m.cores = static_cast<int>(cores);
    m.busyTasks = static_cast<int>(busy);
    table.machine = std::move(m);
  }
  return true;
}

} // namespace

double Link::sendUs(double bytes) const {
  return alphaUs + bytes / bytesPerSecond * 1e6;
}

double Link::ringAllReduceUs(double bytes, int ranks) const {
  if (ranks <= 1)
    return 0;
  const double n = ranks;
  return 2 * (n - 1) * alphaUs + 2 * (n - 1) / n * bytes / bytesPerSecond * 1e6;
}

double Link::allReduceUs(double bytes, int ranks) const {
  const double line = ringAllReduceUs(bytes, ranks);
  if (allReduces.empty() || line <= 0)
    return line;
  auto ratio = [&](const AllReducePoint &p) {
    const double modelled = ringAllReduceUs(p.bytes, p.ranks);
    return modelled > 0 ? p.us / modelled : 1.0;
  };
  if (bytes <= allReduces.front().bytes)
    return line * ratio(allReduces.front());
  if (bytes >= allReduces.back().bytes)
    return line * ratio(allReduces.back());
  size_t i = 1;
  while (allReduces[i].bytes < bytes)
    ++i;
  const AllReducePoint &below = allReduces[i - 1], &above = allReduces[i];
  const double f = std::log(bytes / below.bytes) / std::log(above.bytes / below.bytes);
  return line * (ratio(below) + f * (ratio(above) - ratio(below)));
}

const ComputeProfile &CostTable::profileFor(int threads, std::string *note, int ranks) const {
  assert(!profiles.empty() && "a cost table has at least one profile");
  static const ComputeProfile kNone;
  if (note)
    note->clear();
  if (profiles.empty())
    return kNone;
  if (threads <= 0)
    threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The profiles measured with `ranks` computing at once, else those measured alone.
  std::vector<const ComputeProfile *> candidates;
  for (int wanted : {ranks, 1}) {
    for (const ComputeProfile &profile : profiles)
      if (profile.ranks == wanted)
        candidates.push_back(&profile);
    if (!candidates.empty())
      break;
  }
  if (candidates.empty())
    candidates.push_back(&profiles.front());
  std::string ranksNote = ranks > 1 && candidates.front()->ranks != ranks
                              ? fmt::format(" (measured alone: none with {} ranks computing at once)", ranks)
                              : std::string();
  for (const ComputeProfile *profile : candidates)
    if (profile->threads == threads ||
        profile->threads == 0) { // a device's: the host's threads do not matter
      if (note && !ranksNote.empty() && profile->threads != 0)
        *note = fmt::format("the cost table's {}-thread profile{}", threads, ranksNote);
      return *profile;
    }
  const ComputeProfile *chosen = candidates.front();
  for (const ComputeProfile *profile : candidates)
    if (profile->threads < threads)
      chosen = profile;
  if (note)
    *note = fmt::format("the cost table has no {}-thread profile; using its {}-thread one{}", threads,
                        chosen->threads, ranksNote);
  return *chosen;
}

const Link &CostTable::linkFor(int ranks) const {
  const auto found = links.find(ranks <= devicesPerNode ? kIntraNode : kInterNode);
  assert(found != links.end() && "a cost table has both links");
  static const Link kNone;
  return found == links.end() ? kNone : found->second;
}

Expected<CostTable> parseCostTable(std::string_view text, std::string_view fileName) {
  if (text.size() > kMaxTableBytes)
    return fail(fmt::format("{}: {} bytes; a cost table is at most 1 MiB", fileName,
                            groupDigits(static_cast<int64_t>(text.size()))));
  if (std::optional<size_t> deep = tooDeep(text)) {
    const auto [line, column] = lineColumn(text, *deep);
    return fail(fmt::format("{}: line {}, column {}: nested more than {} deep; not a cost table", fileName,
                            line, column, kMaxDepth));
  }
  Json root;
  DuplicateKeys duplicates;
  try {
    root = Json::parse(text.begin(), text.end(), [&duplicates](int, Json::parse_event_t event, Json &parsed) {
      return duplicates.onEvent(event, parsed);
    });
  } catch (const Json::parse_error &e) {
    const auto [line, column] = lineColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    return fail(fmt::format("{}: line {}, column {}: not valid JSON: {}", fileName, line, column,
                            shortReason(e.what())));
  } catch (const Json::exception &e) {
    return fail(fmt::format("{}: {}not valid JSON: {}", fileName, overflowPosition(text, e.what()),
                            shortReason(e.what())));
  }
  if (duplicates.duplicate())
    return fail(fmt::format("{}: {}: appears twice; each key is written once", fileName,
                            printableText(*duplicates.duplicate())));
  Reader reader(fileName);
  CostTable table;
  try {
    if (!readTable(reader, root, table))
      return reader.error();
  } catch (const Json::exception &e) {
    return fail(fmt::format("{}: not a valid cost table: {}", fileName, shortReason(e.what())));
  }
  return table;
}

std::string costTableJson(const CostTable &table) {
  OrderedJson out;
  out["netc_cost_table"] = kCostTableFormat;
  out["backend"] = table.backend;
  out["device"] = table.device;
  out["source"] = table.source;
  out["memory_bytes"] = table.memoryBytes;
  out["devices_per_node"] = table.devicesPerNode;
  OrderedJson profiles = OrderedJson::array();
  for (const ComputeProfile &profile : table.profiles) {
    OrderedJson entry;
    entry["threads"] = profile.threads;
    entry["ranks"] = profile.ranks;
    entry["step_overhead_us"] = profile.stepOverheadUs;
    entry["sample_overhead_us"] = profile.sampleOverheadUs;
    OrderedJson ops = OrderedJson::object();
    for (plan::OpKind kind : kAllKinds) {
      const auto found = profile.ops.find(kind);
      if (found != profile.ops.end() && hasRate(kind))
        ops[std::string(plan::opName(kind))] = {{"overhead_us", found->second.overheadUs},
                                                {"rate", found->second.rate},
                                                {"byte_rate", found->second.byteRate}};
    }
    entry["ops"] = std::move(ops);
    profiles.push_back(std::move(entry));
  }
  out["profiles"] = std::move(profiles);
  OrderedJson links = OrderedJson::object();
  for (std::string_view name : {kIntraNode, kInterNode}) {
    const auto found = table.links.find(name);
    if (found == table.links.end())
      continue;
    OrderedJson link = {{"alpha_us", found->second.alphaUs},
                        {"bytes_per_second", found->second.bytesPerSecond},
                        {"source", found->second.source}};
    if (!found->second.allReduces.empty()) {
      OrderedJson points = OrderedJson::array();
      for (const AllReducePoint &point : found->second.allReduces)
        points.push_back(
            {{"bytes", static_cast<int64_t>(point.bytes)}, {"ranks", point.ranks}, {"us", point.us}});
      link["all_reduce"] = std::move(points);
    }
    links[std::string(name)] = std::move(link);
  }
  out["links"] = std::move(links);
  if (table.storage)
    out["storage"] = {{"overhead_us", table.storage->overheadUs},
                      {"bytes_per_second", table.storage->bytesPerSecond},
                      {"source", table.storage->source}};
  if (table.machine)
    out["machine"] = {{"cpu", table.machine->cpu},
                      {"isa", table.machine->isa},
                      {"dense", table.machine->dense},
                      {"netc", table.machine->netc},
                      {"cores", table.machine->cores},
                      {"peak_gflops_per_core", table.machine->peakGflopsPerCore},
                      {"peak_copy_gb_per_second", table.machine->peakCopyGbPerSecond},
                      {"busy_tasks", table.machine->busyTasks}};
  return out.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

Expected<CostTable> readCostTable(const std::string &path) {
  // A regular file or a shell's pipe; a FIFO or a device is refused without
  // blocking on it (support/InputFile.h).
  std::string why;
  const int fd = openInputFile(path, why, /*allowPipe=*/true);
  std::FILE *file = fd >= 0 ? ::fdopen(fd, "rb") : nullptr;
  if (!file) {
    if (fd >= 0) {
      why = std::strerror(errno);
      ::close(fd);
    }
    return fail(fmt::format("{}: cannot open the cost table: {}; give the path of a JSON file that `netc "
                            "calibrate` wrote",
                            path, why));
  }
  std::string text(kMaxTableBytes + 1, '\0');
  const size_t read = std::fread(text.data(), 1, text.size(), file);
  const int readError = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (readError)
    return fail(fmt::format("{}: cannot read the cost table: {}; give the path of a JSON file that `netc "
                            "calibrate` wrote",
                            path, std::strerror(readError)));
  if (read > kMaxTableBytes) {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(path, error);
    return fail(error || size <= kMaxTableBytes
                    ? fmt::format("{}: more than 1 MiB; a cost table is at most 1 MiB", path)
                    : fmt::format("{}: {} bytes; a cost table is at most 1 MiB", path,
                                  groupDigits(static_cast<int64_t>(size))));
  }
  text.resize(read);
  return parseCostTable(text, path);
}

std::optional<CostTable> builtinCostTable(std::string_view name) {
  for (const auto &[builtinName, text] : builtinCostTableTexts()) {
    if (builtinName != name)
      continue;
    Expected<CostTable> table = parseCostTable(text, fmt::format("built-in cost table '{}'", name));
    assert(table.ok() && "the built-in cost tables parse (CostTableTest checks them)");
    if (!table)
      return std::nullopt;
    return std::move(table).value();
  }
  return std::nullopt;
}

std::vector<std::string> builtinCostTableNames() {
  std::vector<std::string> names;
  for (const auto &entry : builtinCostTableTexts())
    names.emplace_back(entry.first);
  return names;
}

Expected<CostTable> loadCostTable(std::string_view spec) {
  if (std::optional<CostTable> table = builtinCostTable(spec))
    return std::move(*table);
  const std::string path(spec);
  std::error_code error;
  if (spec.find('/') != std::string_view::npos || spec.ends_with(".json") ||
      std::filesystem::exists(path, error))
    return readCostTable(path);
  const std::vector<std::string> names = builtinCostTableNames();
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == names.size() ? " and " : ", ", names[i]);
  std::string message = fmt::format("{}: no such cost table: the built-in ones are {}, and there is no file "
                                    "of that name (a table that `netc calibrate` wrote)",
                                    quotedExcerpt(spec), list);
  if (std::optional<std::string> near =
          closestMatch(spec, std::vector<std::string_view>(names.begin(), names.end())))
    message += fmt::format("; did you mean '{}'?", *near);
  return fail(message);
}

} // namespace netc::cost
