// Spelling.cpp -- bounded Levenshtein distance and did-you-mean lookup.
#include "support/Spelling.h"

#include <algorithm>
#include <cctype>

namespace netc {

size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  size_t lengthGap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (lengthGap > limit)
    return limit + 1;
  // Optimal string alignment: insertions, deletions, substitutions and
  // transpositions of adjacent letters ("tahn" -> "tanh") each cost 1.
  const size_t width = b.size() + 1;
  std::vector<size_t> previous2(width), previous(width), current(width);
  for (size_t j = 0; j < width; ++j)
    previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    size_t rowMin = current[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], previous2[j - 2] + 1);
      rowMin = std::min(rowMin, current[j]);
    }
    if (rowMin > limit)
      return limit + 1;
    previous2.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

static bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<std::string> closestMatch(std::string_view word,
                                        const std::vector<std::string_view> &candidates, size_t maxDistance) {
  for (std::string_view c : candidates)
    if (c != word && equalsIgnoringCase(c, word))
      return std::string(c);
  // Very short words are too easily "close" to anything.
  size_t limit = std::min(maxDistance, word.size() <= 2   ? size_t{0}
                                       : word.size() <= 4 ? size_t{1}
                                                          : maxDistance);
  std::optional<std::string> best;
  size_t bestDistance = limit + 1;
  for (std::string_view c : candidates) {
    if (c == word)
      continue;
    size_t d = editDistance(word, c, limit);
    if (d < bestDistance) {
      bestDistance = d;
      best = std::string(c);
    }
  }
  return best;
}

} // namespace netc
