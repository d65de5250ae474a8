#include "lower/issue_queue.hpp"

#include <algorithm>
#include <tuple>

namespace trainsim::lower {

bool IssueQueue::before(const Item& a, const Item& b) {
  return std::tie(a.point, a.hook, a.seq, a.behind) < std::tie(b.point, b.hook, b.seq, b.behind);
}

std::size_t IssueQueue::add(core::TaskId id, std::size_t point, IssueHook hook) {
  items_.push_back({id, point, hook, items_.size(), 0});
  return items_.size() - 1;
}

void IssueQueue::raise(std::size_t item, std::size_t point, IssueHook hook) {
  Item& i = items_[item];
  if (std::tie(point, hook) > std::tie(i.point, i.hook)) {
    i.point = point;
    i.hook = hook;
    i.behind = 0;
  }
}

void IssueQueue::after(std::size_t item, std::size_t other) {
  Item& i = items_[item];
  const Item& o = items_[other];
  if (before(o, i)) return;
  i.point = o.point;
  i.hook = o.hook;
  i.seq = o.seq;
  i.behind = o.behind + 1;
}

void IssueQueue::chain(std::vector<std::pair<core::TaskId, core::TaskId>>& edges) {
  // Items come nearly in issue order (a prefetch raised past a few pieces
  // moves a few places): an insertion sort, stable, takes a pass; should
  // the moves pile up, a merge sort finishes (the prefix sorted so far
  // keeps equal items in the order added, so the outcome is the same).
  std::size_t moves = 0;
  const std::size_t budget = 8 * items_.size();
  for (std::size_t k = 1; k < items_.size() && moves <= budget; ++k) {
    const Item moving = items_[k];
    std::size_t j = k;
    for (; j > 0 && before(moving, items_[j - 1]); --j) items_[j] = items_[j - 1];
    items_[j] = moving;
    moves += k - j;
  }
  if (moves > budget) std::stable_sort(items_.begin(), items_.end(), before);
  for (std::size_t k = 1; k < items_.size(); ++k) edges.emplace_back(items_[k - 1].id, items_[k].id);
  items_.clear();
}

}  // namespace trainsim::lower
