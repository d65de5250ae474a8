// One process group's collectives on one GPU run one at a time, in the order
// the host issued them. PyTorch's ProcessGroupNCCL launches every collective
// of a group on that group's one internal NCCL stream, whatever stream the
// caller is on (pytorch/pytorch issues #64803 and #65299; PR #186335: FSDP2's
// all-gathers and reduce-scatters share the shard group's communicator by
// default, so they serialize on the wire); DeepSpeed's stage 3 and
// Megatron-Core's FSDP reduce and gather over the same group too. So a
// ZeRO-3 unit's reduce-scatter and the next unit's all-gather do not run
// side by side: each waits for the one issued before it.
//
// IssueQueue collects one rank's collectives of one group with the point at
// which the host issues each, and chains them in that order. A point is the
// number of the rank's compute tasks issued before it (0: before any),
// and, at one point, a post-hook's collective (a reduce-scatter after the
// piece that made its gradients) comes before a pre-hook's (a gather issued
// before the next piece runs), as FSDP's and DeepSpeed's hooks fire.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "core/task_graph.hpp"

namespace trainsim::lower {

enum class IssueHook { kAfterPiece, kBeforeNextPiece };

class IssueQueue {
 public:
  // Adds a collective issued at `point` by a hook of that kind; returns its
  // index, for raise() and after().
  std::size_t add(core::TaskId id, std::size_t point, IssueHook hook);
  // The host issues item no earlier than `point` (a prefetch that waits for
  // a piece to end).
  void raise(std::size_t item, std::size_t point, IssueHook hook);
  // The host issues item after `other` (it waits for `other` to end before
  // issuing more: DeepSpeed's blocking gradient copy).
  void after(std::size_t item, std::size_t other);
  // Edges from each collective to the next in issue order (ties keep the
  // order they were added in); empties the queue.
  void chain(std::vector<std::pair<core::TaskId, core::TaskId>>& edges);
  bool empty() const { return items_.empty(); }

 private:
  struct Item {
    core::TaskId id;
    std::size_t point;
    IssueHook hook;
    std::size_t seq;  // the order added; a later item raised after another takes that one's and sorts just after it
    int behind = 0;   // how many items it was placed just after
  };
  static bool before(const Item& a, const Item& b);
  std::vector<Item> items_;
};

}  // namespace trainsim::lower
