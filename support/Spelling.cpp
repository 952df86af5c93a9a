// Spelling.cpp -- bounded Levenshtein distance and did-you-mean lookup.
#include "support/Spelling.h"

#include <algorithm>
#include <cctype>

namespace netc {

size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  size_t lengthGap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (lengthGap > limit)
    return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t rowMin = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
      rowMin = std::min(rowMin, row[j]);
    }
    if (rowMin > limit)
      return limit + 1;
  }
  return row[b.size()];
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
