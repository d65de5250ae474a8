// options.moe_a2a_overlap's pairs on one rank: which forward runs beside
// which backward, for the orders 1F1B and DualPipeV give.
#include <doctest/doctest.h>

#include <algorithm>

#include "lower/a2a_pairs.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
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

namespace {
// A schedule's program for pp x vp stages and m micro-batches with `extra`
// more warm-up forwards, its sends and receives added, and its dependencies
// with the pairs' waits.
struct Paired {
  schedule::Program program;
  std::vector<schedule::Dependency> deps, waits;
};
Paired paired(const char* name, int pp, int vp, int m, int extra) {
  const schedule::Schedule* s = schedule::find_schedule(name);
  REQUIRE(s != nullptr);
  schedule::Shape shape = schedule::Shape::placed(s->placement(), pp, vp, m);
  shape.extra_warmup = extra;
  Paired out;
  out.program = lower::with_paired_sends(schedule::with_communication(s->program(shape), shape));
  out.deps = schedule::dependencies(out.program, shape);
  out.waits = lower::a2a_pair_waits(out.program, out.deps);
  return out;
}
bool runs(const Paired& p) {
  std::vector<schedule::Dependency> all = p.deps;
  all.insert(all.end(), p.waits.begin(), p.waits.end());
  return schedule::acyclic(p.program, all);
}
// The index on `rank` of the compute action (op, stage, micro-batch).
int index_of(const schedule::Program& program, int rank, Action a) {
  const auto& actions = program.ranks[static_cast<std::size_t>(rank)];
  return static_cast<int>(std::find(actions.begin(), actions.end(), a) - actions.begin());
}
}  // namespace

TEST_CASE("a pair waits for both passes' inputs: 1F1B needs Megatron-Core's extra warm-up forward for that") {
  // pp 2, m 3 as the schedule gives it. Rank 0: F0 F1 B0 F2 B1 B2, pairs
  // (F1, B0) and (F2, B1); rank 1: F0 B0 F1 B1 F2 B2, pairs (B0, F1) and
  // (B1, F2). Rank 0's F1 would wait for B0's gradient, sent after rank 1's
  // B0, which would wait for F1's activation, sent after rank 0's F1: the
  // pair waits for itself.
  const Paired plain = paired("1f1b", 2, 1, 3, 0);
  CHECK_FALSE(runs(plain));
  // One more warm-up forward: rank 0 F0 F1 F2 B0 B1 B2, pair (F2, B0);
  // rank 1 F0 F1 B0 F2 B1 B2, pairs (F1, B0) and (F2, B1).
  const Paired extra = paired("1f1b", 2, 1, 3, 1);
  CHECK(runs(extra));
  const auto& rank0 = extra.program.ranks[0];
  const int f2 = index_of(extra.program, 0, {Op::kForward, 0, 2});
  CHECK(lower::a2a_partners(rank0)[static_cast<std::size_t>(f2)] == index_of(extra.program, 0, {Op::kBackward, 0, 0}));
  // Rank 0's F2 also waits for B0's gradient: the send of stage 1's B0, on
  // rank 1. Rank 1's pairs wait for nothing more: F1's input is rank 0's
  // warm-up send, which B0 needs anyway (after F0 on its rank), and F2's
  // comes to F2 itself.
  const int send_b0 = index_of(extra.program, 1, {Op::kSendB, 1, 0});
  CHECK(std::count_if(extra.waits.begin(), extra.waits.end(), [&](const schedule::Dependency& d) {
          return d.after == schedule::ActionRef{0, f2} && d.before == schedule::ActionRef{1, send_b0};
        }) == 1);
  // Rank 1's F1 (stage 1, the last: no send) pairs with B0, whose gradient
  // goes back to rank 0 after both; F2 with B1 likewise.
  const auto& rank1 = extra.program.ranks[1];
  const int b0 = index_of(extra.program, 1, {Op::kBackward, 1, 0});
  CHECK(rank1[static_cast<std::size_t>(b0) + 1] == Action{Op::kSendB, 1, 0});
  for (const schedule::Dependency& d : extra.waits) CHECK(d.after.rank == 0);
}

TEST_CASE("a pair's sends go out after both its passes, the forward's first") {
  // Rank 0 of interleaved 1F1B, pp 2, vp 2, m 4, one extra warm-up forward:
  // stages 0 and 2 on rank 0. Its first steady pair is F(stage 0, mb 3)
  // with B(stage 2, mb 0): F's activation and B's gradient both leave after
  // the pair, the activation first, and each send waits for the pair's end.
  const Paired p = paired("interleaved-1f1b", 2, 2, 4, 1);
  REQUIRE(runs(p));
  const auto& rank0 = p.program.ranks[0];
  const int f = index_of(p.program, 0, {Op::kForward, 0, 3});
  const int b = index_of(p.program, 0, {Op::kBackward, 2, 0});
  REQUIRE(lower::a2a_partners(rank0)[static_cast<std::size_t>(f)] == b);
  CHECK(b == f + 2);  // F, the receive of B's gradient, B
  CHECK(rank0[static_cast<std::size_t>(b) + 1] == Action{Op::kSendF, 0, 3});
  CHECK(rank0[static_cast<std::size_t>(b) + 2] == Action{Op::kSendB, 2, 0});
  const int send_f = b + 1;
  CHECK(std::count_if(p.waits.begin(), p.waits.end(), [&](const schedule::Dependency& d) {
          return d.before == schedule::ActionRef{0, b} && d.after == schedule::ActionRef{0, send_f};
        }) == 1);
  // Nothing else moved: the program has the same actions, and an unpaired
  // forward's send still follows it (the warm-up F(stage 0, mb 0)).
  const int f0 = index_of(p.program, 0, {Op::kForward, 0, 0});
  CHECK(rank0[static_cast<std::size_t>(f0) + 1] == Action{Op::kSendF, 0, 0});
}

TEST_CASE("interleaved 1F1B with the extra warm-up forward and DualPipe's pairs run without waiting for themselves") {
  CHECK(runs(paired("interleaved-1f1b", 4, 2, 8, 1)));
  CHECK(runs(paired("interleaved-1f1b", 2, 3, 4, 1)));
  CHECK(runs(paired("dualpipe", 4, 1, 8, 0)));
  CHECK(runs(paired("dualpipev", 2, 2, 8, 0)));
  // One stage: F0, then each forward beside the backward before it; every
  // input is the rank's own, so nothing more to wait for.
  const Paired one = paired("1f1b", 1, 1, 4, 1);
  CHECK(runs(one));
  CHECK(one.waits.empty());
}

}  // namespace lower_a2a_pairs_test
