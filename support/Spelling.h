// Spelling.h -- edit distance and did-you-mean suggestions, used for
// misspelled keywords, attributes, functions, layer and const names (D1).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netc {

/// Levenshtein distance, giving up (returning limit + 1) past `limit`.
size_t editDistance(std::string_view a, std::string_view b, size_t limit);

/// The closest candidate: an exact case-insensitive match first, else the
/// unique-best candidate within edit distance `maxDistance` (D1: 2). Ties
/// resolve to the first candidate in order. Nothing when none is close.
std::optional<std::string>
closestMatch(std::string_view word, const std::vector<std::string_view> &candidates, size_t maxDistance = 2);

} // namespace netc
