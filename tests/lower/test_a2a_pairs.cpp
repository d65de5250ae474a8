// options.moe_a2a_overlap's pairs on one rank: which forward runs beside
// which backward, for the orders 1F1B and DualPipeV give.
#include <doctest/doctest.h>

#include "lower/a2a_pairs.hpp"
#include "schedule/registry.hpp"
#include "schedule/schedule.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_a2a_pairs_test {

using namespace trainsim;
using schedule::Action;
using schedule::Op;

TEST_CASE("1F1B: each steady-state forward beside the backward after it") {
  // Rank 0 of 1F1B with pp 2, m 3: F0 F1 B0 F2 B1 B2. F1 pairs with B0,
  // F2 with B1; the warm-up F0 and the last B2 run alone.
  const std::vector<Action> rank = {{Op::kForward, 0, 0}, {Op::kForward, 0, 1},  {Op::kBackward, 0, 0},
                                    {Op::kForward, 0, 2}, {Op::kBackward, 0, 1}, {Op::kBackward, 0, 2}};
  CHECK(lower::a2a_partners(rank) == std::vector<int>{-1, 2, 1, 4, 3, -1});
}

TEST_CASE("one stage: a forward cannot run beside its own backward, so each backward takes the next forward") {
  const std::vector<Action> rank = {{Op::kForward, 0, 0}, {Op::kBackward, 0, 0}, {Op::kForward, 0, 1},
                                    {Op::kBackward, 0, 1}};
  CHECK(lower::a2a_partners(rank) == std::vector<int>{-1, 2, 1, -1});
}

TEST_CASE("a split backward's I or W breaks a pair; sends do not") {
  // F1 and B0 pair across a send; F3 and B2 would pair but for the I
  // between them (and B2 has nothing after it).
  const std::vector<Action> with_i = {{Op::kForward, 0, 1}, {Op::kSendF, 0, 1},    {Op::kBackward, 0, 0},
                                      {Op::kForward, 0, 3}, {Op::kInputGrad, 0, 1}, {Op::kBackward, 0, 2}};
  CHECK(lower::a2a_partners(with_i) == std::vector<int>{2, -1, 0, -1, -1, -1});
  // The same with a W between them.
  const std::vector<Action> with_w = {{Op::kForward, 0, 3}, {Op::kWeightGrad, 0, 1}, {Op::kBackward, 0, 2}};
  CHECK(lower::a2a_partners(with_w) == std::vector<int>{-1, -1, -1});
}

TEST_CASE("DualPipeV: the main phase pairs F0 with B1 and F1 with B0; phase 5 leaves B1 alone") {
  // Rank 0 of pp 2 (stages 0 and 3), m 4 (see schedule/dualpipe_v.hpp):
  // F0 F0 | F0 F1 | I1 W F1 | F0 B1 F1 B0 | B1 F1 B0 | B1 I0 | W I0 | W.
  const schedule::Schedule* s = schedule::find_schedule("dualpipev");
  REQUIRE(s != nullptr);
  const auto program = s->program(schedule::Shape::placed(s->placement(), 2, 2, 4));
  const std::vector<Action>& rank = program.ranks[0];
  REQUIRE(rank.size() == 19);
  const std::vector<int> p = lower::a2a_partners(rank);
  // Phase 4 (indices 7-10): F0 mb3 | B1 mb1, F1 mb2 | B0 mb0.
  CHECK(rank[7] == Action{Op::kForward, 0, 3});
  CHECK(p[7] == 8);
  CHECK(p[9] == 10);
  // Phase 5 (11-13): B1 mb2 alone, F1 mb3 | B0 mb1.
  CHECK(rank[11] == Action{Op::kBackward, 3, 2});
  CHECK(p[11] == -1);
  CHECK(p[12] == 13);
  // Warm-up and cool-down: nothing paired.
  for (int k : {0, 1, 2, 3, 4, 5, 6, 14, 15, 16, 17, 18}) CHECK(p[static_cast<std::size_t>(k)] == -1);
}

}  // namespace lower_a2a_pairs_test
