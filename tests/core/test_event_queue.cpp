#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/event_queue.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace core_event_queue_test {

using trainsim::core::Event;
using trainsim::core::EventQueue;
using trainsim::core::Time;

TEST_CASE("events pop in time order") {
  EventQueue q;
  q.push(Time::ps(30), 0, 0, 3);
  q.push(Time::ps(10), 0, 0, 1);
  q.push(Time::ps(20), 0, 0, 2);
  CHECK(q.pop().token == 1);
  CHECK(q.pop().token == 2);
  CHECK(q.pop().token == 3);
  CHECK(q.empty());
}

TEST_CASE("equal times pop in the order they were scheduled") {
  EventQueue q;
  for (std::uint64_t i = 0; i < 100; ++i) q.push(Time::ps(5), 0, 0, i);
  for (std::uint64_t i = 0; i < 100; ++i) CHECK(q.pop().token == i);
}

TEST_CASE("with ties reversed, equal times pop last scheduled first, and times still in order") {
  // Queues made while reverse_ties is on: tokens 0..99 at 5 ps pop 99..0;
  // one at 3 ps scheduled last still comes first, one at 7 ps last.
  EventQueue::reverse_ties(true);
  EventQueue q;
  EventQueue::reverse_ties(false);
  for (std::uint64_t i = 0; i < 100; ++i) q.push(Time::ps(5), 0, 0, i);
  q.push(Time::ps(7), 0, 0, 200);
  q.push(Time::ps(3), 0, 0, 100);
  CHECK(q.pop().token == 100);
  for (std::uint64_t i = 0; i < 100; ++i) CHECK(q.pop().token == 99 - i);
  CHECK(q.pop().token == 200);
  EventQueue after;  // made with the order back to normal
  after.push(Time::ps(5), 0, 0, 1);
  after.push(Time::ps(5), 0, 0, 2);
  CHECK(after.pop().token == 1);
}

TEST_CASE("the heap agrees with a stable sort on (time, sequence)") {
  std::mt19937_64 rng(42);
  EventQueue q;
  std::vector<std::pair<std::int64_t, std::uint64_t>> expected;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    const std::int64_t t = static_cast<std::int64_t>(rng() % 200);  // many ties
    q.push(Time::ps(t), 0, 0, i);
    expected.emplace_back(t, i);
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [t, token] : expected) {
    const Event e = q.pop();
    REQUIRE(e.time.ps() == t);
    REQUIRE(e.token == token);
  }
}

TEST_CASE("interleaved pushes and pops stay ordered") {
  EventQueue q;
  std::mt19937_64 rng(7);
  Time now = Time::zero();
  for (int round = 0; round < 2000; ++round) {
    q.push(now + Time::ps(static_cast<std::int64_t>(rng() % 1000)), 0, 0, 0);
    if (round % 3 == 0) {
      const Event e = q.pop();
      CHECK(e.time >= now);
      now = e.time;
    }
  }
}

TEST_CASE("Time converts seconds to whole picoseconds") {
  CHECK(Time::seconds(1.5e-6).ps() == 1'500'000);
  CHECK(Time::microseconds(2.0).ps() == 2'000'000);
  CHECK(Time::seconds(-1.0).ps() == 0);  // durations never run backwards
  CHECK((Time::ps(3) + Time::ps(4)).ps() == 7);
}

}  // namespace core_event_queue_test
