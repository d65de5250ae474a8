// ZeRO-3's gathers on one rank and what each waits for: FSDP's prefetch
// depth, DeepSpeed's prefetch bucket and live-parameter limit.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "lower/gather_prefetch.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_gather_prefetch_test {

using namespace trainsim;
using lower::GatherPrefetch;
using lower::IssueHook;
using Edges = std::vector<std::pair<core::TaskId, core::TaskId>>;
constexpr std::size_t kNoItem = GatherPrefetch::kNoItem;

// Gathers are tasks 10, 11, ...; compute parts 100, 101, ... (part k the
// rank's (k + 1)-th compute task).

TEST_CASE("FSDP's prefetch: gather i waits for the first use of gather i - depth - 1") {
  Edges edges;
  lower::IssueQueue queue, experts;
  GatherPrefetch p({.depth = 1}, edges, queue, experts);
  // Depth 1: gathers 0 and 1 start at once; gather 2 waits for unit 0's
  // first use, gather 3 for unit 1's.
  for (core::TaskId g = 10; g < 14; ++g) CHECK(p.add(g, g, 1.0, kNoItem, kNoItem) == g - 10);
  CHECK(edges.empty());  // no use made yet: 2 and 3 wait in lists
  p.use(0, 100, 1);
  CHECK(edges == Edges{{100, 12}});
  CHECK(p.first_use(0) == core::TaskId{100});
  CHECK_FALSE(p.first_use(1));
  p.use(1, 101, 2);
  CHECK(edges == Edges{{100, 12}, {101, 13}});
  // A gather added after the use it waits for follows that use at once.
  p.use(2, 102, 3);
  CHECK(p.add(14, 15, 1.0, kNoItem, kNoItem) == 4);
  CHECK(edges.back() == std::pair<core::TaskId, core::TaskId>{102, 14});
  CHECK(p.first_task(4) == 14);
  CHECK(p.last_task(4) == 15);
  CHECK(p.size() == 5);
}

TEST_CASE("DeepSpeed's prefetch bucket: gather i waits until the gathers ahead of it hold the window") {
  Edges edges;
  lower::IssueQueue queue, experts;
  // A window of 10 parameters over gathers of 4 each: gather i waits for the
  // first use of the last j whose successors j + 1 .. i - 1 hold 10 or more.
  // Gather 3: 2, 1 hold 8 < 10, none. Gather 4: 3, 2, 1 hold 12 >= 10 at
  // j + 1 = 1, so j = 0.
  GatherPrefetch p({.depth = 1, .window = 10.0}, edges, queue, experts);
  for (core::TaskId g = 10; g < 14; ++g) p.add(g, g, 4.0, kNoItem, kNoItem);
  p.use(0, 100, 1);
  CHECK(edges.empty());
  p.add(14, 14, 4.0, kNoItem, kNoItem);
  CHECK(edges == Edges{{100, 14}});
}

TEST_CASE("DeepSpeed's live-parameter limit: a gather waits until the units held before it fall below it") {
  Edges edges;
  lower::IssueQueue queue, experts;
  // Prefetch depth 8 (never binding here) and a limit of 6 parameters over
  // gathers of 4. Gather 1: unit 0 holds 4 < 6, no wait. Gather 2: units 1
  // and 0 hold 8 >= 6, so it waits for unit 0 to be given back, at the end
  // of its first use (then unit 1 alone holds 4).
  GatherPrefetch p({.depth = 8, .live_limit = 6.0}, edges, queue, experts);
  p.add(10, 10, 4.0, kNoItem, kNoItem);
  p.add(11, 11, 4.0, kNoItem, kNoItem);
  p.add(12, 12, 4.0, kNoItem, kNoItem);
  CHECK(edges.empty());
  p.use(1, 101, 1);
  CHECK(edges.empty());  // not the use it waits for
  p.use(0, 100, 2);
  CHECK(edges == Edges{{100, 12}});
}

TEST_CASE("a waiting gather is issued no earlier than its wait's first use, in both queues") {
  Edges edges;
  lower::IssueQueue queue, experts;
  GatherPrefetch p({.depth = 0}, edges, queue, experts);
  // Gathers 10 and 11, queued before any compute (point 0), 11 with an
  // experts' part (task 21). Depth 0: gather 1 waits for unit 0's first use,
  // compute task 100 issued as the first (point 1), so the host issues 11
  // (and 21) after it: 10 | 11 (21 alone in its queue).
  p.add(10, 10, 1.0, queue.add(10, 0, IssueHook::kBeforeNextPiece), kNoItem);
  p.add(11, 21, 1.0, queue.add(11, 0, IssueHook::kBeforeNextPiece), experts.add(21, 0, IssueHook::kBeforeNextPiece));
  queue.add(30, 0, IssueHook::kBeforeNextPiece);  // issued at point 0 after 11: raised, 11 falls behind it
  p.use(0, 100, 1);
  CHECK(edges == Edges{{100, 11}});
  Edges order;
  queue.chain(order);
  CHECK(order == Edges{{10, 30}, {30, 11}});
  CHECK(p.item(1) == 1);
  CHECK(p.expert_item(1) == 0);
}

}  // namespace lower_gather_prefetch_test
