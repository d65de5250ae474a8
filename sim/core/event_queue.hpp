// The pending-event set: a binary implicit min-heap of small POD entries.
//
// Entries are ordered by (time, sequence); the sequence number is handed out when
// an event is scheduled, so events at equal times fire in the order they were
// scheduled and a run is reproducible bit for bit; reverse_ties() turns that
// order round (last scheduled first), for a check that no figure leans on it.
// Binary, not 4-ary: the heap holds a few dozen events (about one or two a
// pipeline rank), all in cache, so a pop's cost is its chain of 128-bit
// compares, one a level in a binary heap against three in a 4-ary one (ZeRO-3
// plans at pp 32, about 39 events pending on average, take 0.915 of their
// time with the binary heap, median of 6 paired runs; 8-ary took 1.05).
//
// Cancellation is lazy: an event carries the generation of its owner at the time
// it was scheduled, and the owner bumps its generation to invalidate it. The stale
// entry stays in the heap and is skipped when popped (see Engine).
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.hpp"

namespace trainsim::core {

struct Event {
  Time time;
  std::uint64_t sequence = 0;
  std::uint32_t owner = 0;       // which handler receives it
  std::uint32_t generation = 0;  // owner's generation when scheduled
  std::uint64_t token = 0;       // meaning chosen by the owner
};

class EventQueue {
 public:
  EventQueue();
  // Events at equal times fire last scheduled first in the queues made from
  // now on (`trainsim run/sweep --reverse-ties`); off by default.
  static void reverse_ties(bool on);

  // Schedules an event and returns the sequence number it was given.
  std::uint64_t push(Time time, std::uint32_t owner, std::uint32_t generation, std::uint64_t token);
  // Precondition: !empty().
  Event pop();
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  // (time, sequence) as one 128-bit number, made once when the event is
  // scheduled, so that each comparison is one wide compare: times are never
  // negative here. The sequence with every bit flipped (tie_mask_) sorts in
  // the reverse order.
  __extension__ using Order = unsigned __int128;
  struct Entry {
    Order order;
    std::uint32_t owner;
    std::uint32_t generation;
    std::uint64_t token;
  };

  std::vector<Entry> heap_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t tie_mask_ = 0;  // 0, or every bit set where ties are reversed
};

}  // namespace trainsim::core
