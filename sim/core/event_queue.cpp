#include "core/event_queue.hpp"

#include <atomic>
#include <stdexcept>
#include <utility>

namespace trainsim::core {

namespace {
constexpr std::size_t kArity = 4;
// Read as each queue is made (one per simulation): set once, before any runs.
std::atomic<bool> ties_reversed{false};
}  // namespace

EventQueue::EventQueue() : tie_mask_(ties_reversed.load() ? ~std::uint64_t{0} : 0) {}

void EventQueue::reverse_ties(bool on) { ties_reversed.store(on); }

// The sifts move a hole rather than the entry: the entry being placed stays
// in registers and is written once, where it lands (an entry written and at
// once read back would stall each load on its own stores).

inline void EventQueue::sift_up(std::size_t i, const Entry& entry) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(entry.order < heap_[parent].order)) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, entry);
}

inline void EventQueue::sift_down(std::size_t i, const Entry& entry) {
  const std::size_t n = heap_.size();
  while (true) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    if (first + kArity <= n) {
      // Four children: the earliest picked by selects, not branches
      // (which child wins is a coin toss to a branch predictor).
      const Entry* c = &heap_[first];
      const std::size_t a = c[1].order < c[0].order ? 1 : 0;
      const std::size_t b = c[3].order < c[2].order ? 3 : 2;
      best = first + (c[b].order < c[a].order ? b : a);
    } else {
      for (std::size_t c = first + 1; c < n; ++c) {
        if (heap_[c].order < heap_[best].order) best = c;
      }
    }
    if (!(heap_[best].order < entry.order)) break;
    place(i, heap_[best]);
    i = best;
  }
  place(i, entry);
}

std::uint64_t EventQueue::push(Time time, std::uint32_t owner, std::uint64_t token) {
  if (owner >= pending_.size()) {
    pending_.resize(owner + 1, 0);
    slot_.resize(owner + 1, 0);
  }
  ++pending_[owner];
  const std::uint64_t seq = next_sequence_++;
  const Order order = static_cast<Order>(static_cast<std::uint64_t>(time.ps())) << 64 | (seq ^ tie_mask_);
  heap_.emplace_back();
  sift_up(heap_.size() - 1, Entry{order, owner, token});
  return seq;
}

Event EventQueue::pop() {
  const Entry top = heap_.front();
  --pending_[top.owner];
  const Entry last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0, last);
  return Event{Time::ps(static_cast<std::int64_t>(top.order >> 64)), static_cast<std::uint64_t>(top.order) ^ tie_mask_,
               top.owner, top.token};
}

void EventQueue::cancel(std::uint32_t owner) {
  if (owner >= pending_.size() || pending_[owner] == 0) return;
  if (pending_[owner] > 1) throw std::logic_error("EventQueue::cancel: an owner with several pending events");
  --pending_[owner];
  const std::size_t i = slot_[owner];
  const Entry last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last entry
  // The last entry fills the hole: up if it is earlier than the hole's
  // parent, else down.
  if (i > 0 && last.order < heap_[(i - 1) / kArity].order) {
    sift_up(i, last);
  } else {
    sift_down(i, last);
  }
}

}  // namespace trainsim::core
