#include "lower/gather_prefetch.hpp"

#include <algorithm>

namespace trainsim::lower {

std::size_t GatherPrefetch::add(core::TaskId first, core::TaskId last, double params, std::size_t item,
                                std::size_t expert_item) {
  const std::size_t i = gathers_.size();
  gathers_.push_back({.first = first, .last = last, .params = params, .item = item, .expert_item = expert_item});
  if (const auto j = waits_for(i)) {
    Gather& wanted = gathers_[*j];
    if (wanted.first_use) {
      edges_.emplace_back(*wanted.first_use, first);
      raise(i, wanted.first_use_point);
    } else if (wanted.first_waiting == kNone) {
      wanted.first_waiting = wanted.last_waiting = i;
    } else {
      gathers_[wanted.last_waiting].next_waiting = i;
      wanted.last_waiting = i;
    }
  }
  return i;
}

void GatherPrefetch::use(std::size_t j, core::TaskId part, std::size_t point) {
  Gather& g = gathers_[j];
  g.first_use = part;
  g.first_use_point = point;
  for (std::size_t i = g.first_waiting; i != kNone; i = gathers_[i].next_waiting) {
    edges_.emplace_back(part, gathers_[i].first);
    raise(i, point);
  }
  g.first_waiting = g.last_waiting = kNone;
}

std::optional<std::size_t> GatherPrefetch::prefetch_waits_for(std::size_t i) const {
  if (rules_.window <= 0.0) return i >= rules_.depth + 1 ? std::optional<std::size_t>(i - rules_.depth - 1) : std::nullopt;
  // Gathers j + 1 .. i - 1 queued before i; i runs once they fall below the window.
  double ahead = 0.0;
  for (std::size_t j = i; j-- > 1;) {
    ahead += gathers_[j].params;
    if (ahead >= rules_.window) return j - 1;
  }
  return std::nullopt;
}

std::optional<std::size_t> GatherPrefetch::live_waits_for(std::size_t i) const {
  if (rules_.live_limit <= 0.0) return std::nullopt;
  double live = 0.0;
  for (std::size_t j = i; j-- > 0;) {
    live += gathers_[j].params;
    if (live >= rules_.live_limit) return j;
  }
  return std::nullopt;
}

std::optional<std::size_t> GatherPrefetch::waits_for(std::size_t i) const {
  const auto a = prefetch_waits_for(i), b = live_waits_for(i);
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

void GatherPrefetch::raise(std::size_t i, std::size_t point) {
  const Gather& g = gathers_[i];
  if (g.item != kNoItem) queue_.raise(g.item, point, IssueHook::kBeforeNextPiece);
  if (g.expert_item != kNoItem) expert_queue_.raise(g.expert_item, point, IssueHook::kBeforeNextPiece);
}

}  // namespace trainsim::lower
