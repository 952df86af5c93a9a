// ByteSize.cpp -- parsing and printing byte sizes, and the machine's memory.
#include "support/ByteSize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unistd.h>

namespace netc {

std::optional<uint64_t> parseByteSize(std::string_view text) {
  size_t digits = 0;
  uint64_t value = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(text[digits] - '0'), &value))
      return std::nullopt;
    ++digits;
  }
  if (digits == 0)
    return std::nullopt;
  std::string unit;
  for (char c : text.substr(digits))
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!unit.empty()) {
    static constexpr std::string_view kPrefixes = "KMGT";
    size_t prefix = kPrefixes.find(unit[0]);
    std::string_view rest = std::string_view(unit).substr(prefix == std::string_view::npos ? 0 : 1);
    if (prefix != std::string_view::npos)
      shift = 10 * static_cast<int>(prefix + 1);
    if (!(rest.empty() || rest == "B" || (prefix != std::string_view::npos && rest == "IB")))
      return std::nullopt;
  }
  if (shift && value > (UINT64_MAX >> shift))
    return std::nullopt;
  return value << shift;
}

std::string byteSizeText(uint64_t bytes) {
  static constexpr const char *kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

namespace {

/// The memory limit of this process's cgroup (v2 memory.max, else v1
/// memory.limit_in_bytes), or nothing when there is none.
std::optional<uint64_t> cgroupMemoryLimit() {
  for (const char *path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::FILE *file = std::fopen(path, "r");
    if (!file)
      continue;
    char text[32] = {};
    const size_t got = std::fread(text, 1, sizeof text - 1, file);
    std::fclose(file);
    std::string_view value(text, got);
    while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    if (auto limit = parseByteSize(value); limit && *limit > 0)
      return limit; // "max" (no limit) does not parse
  }
  return std::nullopt;
}

} // namespace

uint64_t machineMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  uint64_t memory = pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize)
                                              : uint64_t{1} << 30;
  if (auto limit = cgroupMemoryLimit())
    memory = std::min(memory, *limit);
  return memory;
}

} // namespace netc
