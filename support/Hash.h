// Hash.h -- the one stable text hash netc writes into files (FNV-1a, 64-bit):
// a checkpoint's source hash and the file name of a cached cost table. Stable
// across runs, machines and versions; not for anything an attacker chooses.
#pragma once

#include <cstdint>
#include <string_view>

namespace netc {

/// FNV-1a over the bytes of `text`.
inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

} // namespace netc
