#include "core/event_queue.hpp"

#include <atomic>
#include <utility>

namespace trainsim::core {

namespace {
constexpr std::size_t kArity = 4;
// Read as each queue is made (one per simulation): set once, before any runs.
std::atomic<bool> ties_reversed{false};
}  // namespace

EventQueue::EventQueue() : tie_mask_(ties_reversed.load() ? ~std::uint64_t{0} : 0) {}

void EventQueue::reverse_ties(bool on) { ties_reversed.store(on); }

std::uint64_t EventQueue::push(Time time, std::uint32_t owner, std::uint32_t generation,
                               std::uint64_t token) {
  const std::uint64_t seq = next_sequence_++;
  heap_.push_back(Event{time, seq, owner, generation, token});
  sift_up(heap_.size() - 1);
  return seq;
}

Event EventQueue::pop() {
  Event top = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
  return top;
}

void EventQueue::sift_up(std::size_t i) {
  Event moving = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!before(moving, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = moving;
}

void EventQueue::sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  Event moving = heap_[i];
  while (true) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t last = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < last; ++c) {
      if (before(heap_[c], heap_[best])) best = c;
    }
    if (!before(heap_[best], moving)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = moving;
}

}  // namespace trainsim::core
