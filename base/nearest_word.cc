#include "base/nearest_word.h"

#include <algorithm>

namespace base {

std::string NearestWord(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = word.size() / 3 + 1;  // past this, not a typo
  for (const std::string& candidate : known) {
    // Levenshtein distance, one row at a time.
    std::vector<size_t> row(candidate.size() + 1);
    for (size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= candidate.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                           diagonal + (word[i - 1] == candidate[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[candidate.size()] < best_distance) {
      best_distance = row[candidate.size()];
      best = candidate;
    }
  }
  return best;
}

}  // namespace base
