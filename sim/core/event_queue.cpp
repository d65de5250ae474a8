#include "core/event_queue.hpp"

#include <atomic>
#include <utility>

namespace trainsim::core {

namespace {
constexpr std::size_t kArity = 2;
// Read as each queue is made (one per simulation): set once, before any runs.
std::atomic<bool> ties_reversed{false};
}  // namespace

EventQueue::EventQueue() : tie_mask_(ties_reversed.load() ? ~std::uint64_t{0} : 0) {}

void EventQueue::reverse_ties(bool on) { ties_reversed.store(on); }

// push and pop move a hole rather than the entry: the entry being placed
// stays in registers and is written once, where it lands (an entry written
// and at once read back would stall each load on its own stores).

std::uint64_t EventQueue::push(Time time, std::uint32_t owner, std::uint32_t generation,
                               std::uint64_t token) {
  const std::uint64_t seq = next_sequence_++;
  const Order order = static_cast<Order>(static_cast<std::uint64_t>(time.ps())) << 64 | (seq ^ tie_mask_);
  std::size_t i = heap_.size();
  heap_.emplace_back();
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(order < heap_[parent].order)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = Entry{order, owner, generation, token};
  return seq;
}

Event EventQueue::pop() {
  const Entry top = heap_.front();
  const Order order = heap_.back().order;
  const std::uint32_t owner = heap_.back().owner, generation = heap_.back().generation;
  const std::uint64_t token = heap_.back().token;
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n > 0) {
    // The last entry, from the root down to its place.
    std::size_t i = 0;
    while (true) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      // The earlier of two children (the only one, at the end).
      const std::size_t best = first + 1 < n && heap_[first + 1].order < heap_[first].order ? first + 1 : first;
      if (!(heap_[best].order < order)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = Entry{order, owner, generation, token};
  }
  return Event{Time::ps(static_cast<std::int64_t>(top.order >> 64)), static_cast<std::uint64_t>(top.order) ^ tie_mask_,
               top.owner, top.generation, top.token};
}

}  // namespace trainsim::core
