// What the plans of one sweep have in common, computed once and kept a while:
// a schedule's checked program for a pipeline shape (every ZeRO stage and
// recompute mode of a plan runs the same one), and the stage costs of plans
// that differ only in their schedule (those of one placement cost the same).
//
// A sweep enumerates the recompute modes and ZeRO stages innermost and the
// schedules just outside them, so the plans sharing an entry come close
// together: a few dozen entries, the least recently used given up first,
// serve them all, and a big program is not kept for the rest of the sweep.
// Safe to use from several threads; what it hands out is never changed.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedule/action.hpp"
#include "schedule/check.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::driver {

struct CheckedProgram {
  schedule::Program program;  // with communication (and ZeRO-3's sharding) added
  std::vector<schedule::Dependency> deps;
};

class PlanCache {
 public:
  // What makes a program: the schedule, its placement, pp, vp, micro-batches,
  // and ZeRO-3's sharding (sharded, reshard after forward, gradient sync
  // after the last backward only).
  using ProgramKey = std::tuple<std::string, int, int, int, int, bool, bool, bool>;

  explicit PlanCache(std::size_t programs = 16, std::size_t costs = 64) : program_room_(programs), cost_room_(costs) {}

  // The entry for `key`, made by `make` (outside the lock) when absent.
  std::shared_ptr<const CheckedProgram> program(const ProgramKey& key, const std::function<CheckedProgram()>& make);
  std::shared_ptr<const workload::StageCosts> costs(const std::string& key,
                                                    const std::function<workload::StageCosts()>& make);

 private:
  template <typename Key, typename Value>
  struct Lru {
    std::list<std::pair<Key, std::shared_ptr<const Value>>> entries;  // most recently used first
  };
  template <typename Key, typename Value, typename Make>
  std::shared_ptr<const Value> get(Lru<Key, Value>& lru, std::size_t room, const Key& key, const Make& make);

  std::mutex mutex_;
  std::size_t program_room_, cost_room_;
  Lru<ProgramKey, CheckedProgram> programs_;
  Lru<std::string, workload::StageCosts> costs_;
};

}  // namespace trainsim::driver
