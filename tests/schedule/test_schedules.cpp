#include <doctest/doctest.h>

#include <string>

#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"

using namespace trainsim::schedule;


TEST_CASE("the registry lists gpipe and 1f1b") {
  REQUIRE(find_schedule("gpipe") != nullptr);
  REQUIRE(find_schedule("1f1b") != nullptr);
  CHECK(find_schedule("nope") == nullptr);
  CHECK(all_schedules().size() >= 2);
}

TEST_CASE("GPipe: all forwards, then all backwards") {
  const Program p = find_schedule("gpipe")->program(Shape::linear(2, 3));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0B0 0B1 0B2");
  CHECK(to_string(p.ranks[1]) == "1F0 1F1 1F2 1B0 1B1 1B2");
}

TEST_CASE("1F1B: p - r - 1 warm-up forwards, then alternate, then drain") {
  // p = 4, m = 6. Rank 0 warms up with 3 forwards, rank 3 with none.
  const Program p = find_schedule("1f1b")->program(Shape::linear(4, 6));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5");
  CHECK(to_string(p.ranks[2]) == "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2B5");
  CHECK(to_string(p.ranks[3]) == "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5");
}

TEST_CASE("1F1B with fewer micro-batches than stages") {
  // m = 2 < p = 4: rank 0 can only warm up with 2 forwards, then drains.
  const Program p = find_schedule("1f1b")->program(Shape::linear(4, 2));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0B0 0B1");
}

TEST_CASE("every registered schedule passes the checks on assorted shapes") {
  for (const auto& s : all_schedules()) {
    for (int ranks : {1, 2, 3, 8}) {
      for (int m : {1, 2, 5, 16}) {
        const Shape shape = Shape::linear(ranks, m);
        CHECK_NOTHROW(check(with_communication(s->program(shape), shape), shape));
      }
    }
  }
}
