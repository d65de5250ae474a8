// ZeRO-3's parameter gathers on one rank, in the order the host issues them,
// and what each waits for before the host may issue it: the first use of an
// earlier gather's unit.
//
//   FSDP's prefetch (depth d): gather i waits for the first use of gather
//   i - d - 1, so unit u + d is gathered while unit u computes.
//   DeepSpeed's prefetch bucket (a window of parameters): gather i waits for
//   the first use of the last gather j whose successors j + 1 .. i - 1 hold
//   the window or more, so the next unit is always prefetched.
//   DeepSpeed's live-parameter limit: gather i waits until the units held
//   before it, j + 1 .. i - 1, fall below the limit, unit j given back at
//   the end of its first use; never longer than for the unit before's first
//   use (a unit is gathered when it is needed).
//
// Where both DeepSpeed rules apply the later first use counts. A wait becomes
// an edge from that first use to the gather's first task, and the gather's
// items in the sharding group's issue queues (IssueQueue) are raised to the
// point the first use was issued at; a gather whose first use to wait for is
// not made yet waits in a list until it is.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "core/task_graph.hpp"
#include "lower/issue_queue.hpp"

namespace trainsim::lower {

class GatherPrefetch {
 public:
  static constexpr std::size_t kNoItem = static_cast<std::size_t>(-1);

  struct Rules {
    std::size_t depth = 1;    // FSDP's prefetch (Plan::fsdp_prefetch)
    double window = 0.0;      // DeepSpeed's prefetch bucket, parameters (0: FSDP's rule)
    double live_limit = 0.0;  // DeepSpeed's live parameters (0: none)
  };

  // Edges go to `edges`; the gathers' items are raised in `queue` and
  // `expert_queue` (a MoE unit's experts' part).
  GatherPrefetch(Rules rules, std::vector<std::pair<core::TaskId, core::TaskId>>& edges, IssueQueue& queue,
                 IssueQueue& expert_queue)
      : rules_(rules), edges_(edges), queue_(queue), expert_queue_(expert_queue) {}

  // The next gather issued: `first` its first task, `last` its last (where it
  // runs as two), `params` the parameters it gathers, `item` and
  // `expert_item` its places in the queues (kNoItem: none). Returns its index.
  std::size_t add(core::TaskId first, core::TaskId last, double params, std::size_t item, std::size_t expert_item);
  // Gather i's unit is first used by compute task `part`, the rank's
  // `point`-th compute task issued: the gathers waiting for it follow it.
  void use(std::size_t i, core::TaskId part, std::size_t point);

  std::size_t size() const { return gathers_.size(); }
  core::TaskId first_task(std::size_t i) const { return gathers_[i].first; }
  core::TaskId last_task(std::size_t i) const { return gathers_[i].last; }
  const std::optional<core::TaskId>& first_use(std::size_t i) const { return gathers_[i].first_use; }
  std::size_t item(std::size_t i) const { return gathers_[i].item; }
  std::size_t expert_item(std::size_t i) const { return gathers_[i].expert_item; }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Gather {
    core::TaskId first, last;
    double params = 0.0;
    std::optional<core::TaskId> first_use{};
    std::size_t first_use_point = 0;
    std::size_t item = kNoItem, expert_item = kNoItem;
    // The gathers waiting for this one's first use, in the order they were
    // added: a list from first_waiting through each one's next_waiting
    // (a gather waits for one other at most).
    std::size_t first_waiting = kNone, last_waiting = kNone, next_waiting = kNone;
  };

  std::optional<std::size_t> waits_for(std::size_t i) const;
  std::optional<std::size_t> prefetch_waits_for(std::size_t i) const;
  std::optional<std::size_t> live_waits_for(std::size_t i) const;
  void raise(std::size_t i, std::size_t point);

  Rules rules_;
  std::vector<std::pair<core::TaskId, core::TaskId>>& edges_;
  IssueQueue& queue_;
  IssueQueue& expert_queue_;
  std::vector<Gather> gathers_;
};

}  // namespace trainsim::lower
