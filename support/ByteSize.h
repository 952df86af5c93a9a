// ByteSize.h -- sizes in bytes as people write and read them: "8GiB", "512M"
// or "1000000" for flags such as --max-memory and --max-source-size, and
// "4.9 GiB" in messages; and the machine's memory (or a container's limit),
// the default memory limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netc {

/// "123", "64K", "64KiB", "512M", "8G", "8GiB", "1T" (binary multiples;
/// "B" and "iB" optional, case-insensitive). Nothing on overflow, a
/// fraction, a sign or anything else.
std::optional<uint64_t> parseByteSize(std::string_view text);

/// 512 -> "512 B", 3174 -> "3.1 KiB", 5261334937 -> "4.9 GiB".
std::string byteSizeText(uint64_t bytes);

/// The memory this process may use: the machine's physical memory, or its
/// cgroup's limit (a container's) when that is lower; 1 GiB if neither can
/// be read. The default --max-memory.
uint64_t machineMemoryBytes();

} // namespace netc
