#include <doctest/doctest.h>

#include <vector>

#include "lower/wiring.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_wiring_test {

using namespace trainsim;
using schedule::ActionRef;
using schedule::Op;

TEST_CASE("wiring: a receive stands for its send, and reductions after a backward are left to the buckets") {
  // GPipe over 2 ranks, 1 micro-batch, with communication added:
  //   rank 0: 0F0 0SEND_F0 0RECV_B0 0B0 0REDUCE_GRAD OPTIMIZER   (indices 0..5)
  //   rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1REDUCE_GRAD OPTIMIZER   (indices 0..5)
  // check() gives 12 dependencies; the two from a B into its stage's
  // REDUCE_GRAD are wired bucket by bucket, leaving 10 edges. Rank 1's F
  // waits on 1RECV_F0, which stands for rank 0's SEND_F (0, 1); rank 0's B
  // on 0RECV_B0, which stands for rank 1's SEND_B (1, 3).
  const schedule::Schedule* plugin = schedule::find_schedule("gpipe");
  const schedule::Shape shape = schedule::Shape::placed(plugin->placement(), 2, 1, 1);
  const schedule::Program program = schedule::with_communication(plugin->program(shape), shape);
  REQUIRE(schedule::to_string(program.ranks[0]) == "0F0 0SEND_F0 0RECV_B0 0B0 0REDUCE_GRAD OPTIMIZER");
  REQUIRE(schedule::to_string(program.ranks[1]) == "1RECV_F0 1F0 1B0 1SEND_B0 1REDUCE_GRAD OPTIMIZER");
  const auto deps = schedule::check(program, shape);
  REQUIRE(deps.size() == 12);
  const lower::Wiring w = lower::wire(program, shape, deps);

  CHECK(w.edges.size() == 10);
  const auto has_edge = [&](ActionRef from, ActionRef to) {
    for (const auto& e : w.edges) {
      if (e.from == from && e.to == to) return true;
    }
    return false;
  };
  CHECK(has_edge({0, 1}, {1, 1}));  // rank 1's F after rank 0's SEND_F
  CHECK(has_edge({1, 3}, {0, 3}));  // rank 0's B after rank 1's SEND_B
  CHECK_FALSE(has_edge({0, 3}, {0, 4}));  // B -> REDUCE_GRAD: left to the buckets
  for (const auto& e : w.edges) {
    for (const ActionRef end : {e.from, e.to}) {
      const Op op = program.ranks[end.rank][end.index].op;
      CHECK((op != Op::kRecvF && op != Op::kRecvB));
    }
  }
  // Each send after what it sends: 0F0 -> 0SEND_F0, 1B0 -> 1SEND_B0.
  REQUIRE(w.into_sends.size() == 2);
  CHECK((w.into_sends[0].from == ActionRef{0, 0} && w.into_sends[0].to == ActionRef{0, 1}));
  CHECK((w.into_sends[1].from == ActionRef{1, 2} && w.into_sends[1].to == ActionRef{1, 3}));
  CHECK(w.rank_offset == std::vector<std::size_t>{0, 6, 12});
}

}  // namespace lower_wiring_test
