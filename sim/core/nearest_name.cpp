#include "core/nearest_name.hpp"

#include <algorithm>
#include <numeric>

namespace trainsim::core {

namespace {

// Levenshtein distance: insertions, deletions and substitutions, one row at a time.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string> nearest_name(std::string_view key, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const std::string& c : candidates) {
    // The distance is at least the difference in length: a long key (a
    // 20 MB one, say) is no typo of a short name and costs nothing to rule out.
    const std::size_t gap = key.size() > c.size() ? key.size() - c.size() : c.size() - key.size();
    if (gap >= best_distance) continue;
    const std::size_t d = edit_distance(key, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best || key.size() < 3) return best;
  // A name cut short is no typo: its edit distance is the missing tail.
  for (const std::string& c : candidates) {
    if (c.size() > key.size() && c.starts_with(key) && (!best || c.size() < best->size())) best = c;
  }
  return best;
}

}  // namespace trainsim::core
