// One process group's queue on one GPU: collectives chained in the order
// the host issues them.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "lower/issue_queue.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_issue_queue_test {

using namespace trainsim;
using lower::IssueHook;
using Edges = std::vector<std::pair<core::TaskId, core::TaskId>>;

TEST_CASE("FSDP's backward: each unit's scatter, then the gather the next unit's pre-hook prefetches") {
  // Units 3, 2, 1, 0 run their backward as compute tasks 1..4 (points 1..4
  // once each has been issued). Prefetching one unit ahead, the gather of
  // unit 1 (task 11) waits for unit 3's backward to end (point 1), unit 0's
  // (task 10) for unit 2's (point 2); each unit's scatter (20 + unit) is
  // issued after its own backward. Gathers 13 and 12 are issued before any
  // compute (point 0). Added in the order lowering makes them: gathers, then
  // scatters.
  lower::IssueQueue q;
  q.add(13, 0, IssueHook::kBeforeNextPiece);
  q.add(12, 0, IssueHook::kBeforeNextPiece);
  const std::size_t g1 = q.add(11, 0, IssueHook::kBeforeNextPiece);
  const std::size_t g0 = q.add(10, 0, IssueHook::kBeforeNextPiece);
  q.raise(g1, 1, IssueHook::kBeforeNextPiece);
  q.raise(g0, 2, IssueHook::kBeforeNextPiece);
  q.add(23, 1, IssueHook::kAfterPiece);
  q.add(22, 2, IssueHook::kAfterPiece);
  q.add(21, 3, IssueHook::kAfterPiece);
  q.add(20, 4, IssueHook::kAfterPiece);
  // The host issues 13 12 | (after piece 1) 23 11 | (after piece 2) 22 10 | 21 | 20.
  Edges edges;
  q.chain(edges);
  CHECK(edges == Edges{{13, 12}, {12, 23}, {23, 11}, {11, 22}, {22, 10}, {10, 21}, {21, 20}});
  CHECK(q.empty());
}

TEST_CASE("a raise never moves a collective earlier, and one placed after another follows it at once") {
  lower::IssueQueue q;
  const std::size_t a = q.add(1, 3, IssueHook::kBeforeNextPiece);
  q.raise(a, 2, IssueHook::kBeforeNextPiece);  // earlier: no change
  const std::size_t s = q.add(2, 3, IssueHook::kAfterPiece);
  const std::size_t b = q.add(3, 1, IssueHook::kBeforeNextPiece);
  q.add(4, 3, IssueHook::kBeforeNextPiece);
  // b waits on the host for s to end (a blocking copy): after s, ahead of
  // the gathers issued at s's point (1 and 4), which the host issues later.
  q.after(b, s);
  Edges edges;
  q.chain(edges);
  CHECK(edges == Edges{{2, 3}, {3, 1}, {1, 4}});
}

TEST_CASE("collectives added far from their issue order still chain in it, ties in the order added") {
  // 100 gathers added at points 99, 98, ..., 0 (the reverse of issue
  // order: too many moves for the insertion pass, which hands over to a
  // merge sort), then 100 scatters at point 0 after a piece, issued
  // before the point-0 gathers (a post-hook first), in the order added.
  lower::IssueQueue q;
  for (core::TaskId i = 0; i < 100; ++i) q.add(1000 + i, 99 - i, IssueHook::kBeforeNextPiece);
  for (core::TaskId i = 0; i < 100; ++i) q.add(2000 + i, 0, IssueHook::kAfterPiece);
  Edges edges;
  q.chain(edges);
  // Scatters 2000..2099, then the gather at point 0 (1099), then 1098 ... 1000.
  Edges expected;
  std::vector<core::TaskId> order;
  for (core::TaskId i = 0; i < 100; ++i) order.push_back(2000 + i);
  for (core::TaskId i = 0; i < 100; ++i) order.push_back(1099 - i);
  for (std::size_t k = 1; k < order.size(); ++k) expected.emplace_back(order[k - 1], order[k]);
  CHECK(edges == expected);
}

}  // namespace lower_issue_queue_test
