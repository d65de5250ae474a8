// What the plans of one sweep have in common, computed once and kept a while:
// a schedule's checked program for a pipeline shape (every ZeRO stage and
// recompute mode of a plan runs the same one; a schedule that places work
// by the stages' times, the same one where those times are the same), the stage costs of plans
// that differ only in their schedule (those of one placement cost the same),
// and the summaries of simulations that another plan would repeat: two
// schedules that lay out the same program for a shape (GPipe and
// breadth-first at one virtual stage, zb-1p and zb-2p where their orders
// coincide) simulate the same tasks with the same costs.
//
// A sweep enumerates the recompute modes and ZeRO stages innermost and the
// schedules just outside them, so the plans sharing an entry come close
// together: a few dozen entries, the least recently used given up first,
// serve them all, and a big program is not kept for the rest of the sweep.
// Safe to use from several threads; what it hands out is never changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lower/wiring.hpp"
#include "report/summary.hpp"
#include "schedule/action.hpp"
#include "schedule/check.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::driver {

struct CheckedProgram {
  schedule::Program program;  // with communication (and ZeRO-3's sharding) added
  // Its dependencies (schedule::check's, and the MoE overlap's pairs'
  // waits) as each plan's lowering wires them.
  lower::Wiring wiring;
  std::uint64_t digest = 0;  // digest_of(program): equal programs have equal digests
};

// A hash of every action of every rank, in order, so that programs that
// differ are told apart without comparing them action by action.
std::uint64_t digest_of(const schedule::Program& program);
// Whether two checked programs are the same program: one object, or equal
// digests and then equal actions (a digest only says they are likely equal).
inline bool same_program(const CheckedProgram& a, const CheckedProgram& b) {
  return &a == &b || (a.digest == b.digest && a.program.ranks == b.program.ranks);
}

class PlanCache {
 public:
  // What makes a program: the schedule, its placement, pp, vp, micro-batches,
  // ZeRO-3's sharding (sharded, reshard after forward, gradient sync after
  // the last backward only, each stage's units), options.moe_a2a_overlap
  // (one more warm-up forward, the pairs' waits among the dependencies),
  // and, for a schedule that places work by the stages' times (zb-1p, zb-2p,
  // zb-v), those times (Shape::times, four a stage; empty for the others):
  // plans whose stages take the same times (ZeRO 0, 1 and 2 of one plan) get
  // the same program.
  using ProgramKey =
      std::tuple<std::string, int, int, int, int, bool, bool, bool, bool, std::vector<int>, std::vector<double>>;

  explicit PlanCache(std::size_t programs = 16, std::size_t costs = 64, std::size_t summaries = 512)
      : program_room_(programs), cost_room_(costs), summary_room_(summaries) {}

  // The entry for `key`, made by `make` (outside the lock) when absent.
  std::shared_ptr<const CheckedProgram> program(const ProgramKey& key, const std::function<CheckedProgram()>& make);
  // An entry whose key is `key` but for the stages' times, holding a
  // program equal to `program` (of digest `digest`), or null: a schedule
  // that places work by the times often lays out the same program for
  // other times, already checked and wired.
  std::shared_ptr<const CheckedProgram> equal_program(const ProgramKey& key, const schedule::Program& program,
                                                      std::uint64_t digest);
  std::shared_ptr<const workload::StageCosts> costs(const std::string& key,
                                                    const std::function<workload::StageCosts()>& make);

  // The summary of a plan simulated before whose simulation this one would
  // repeat, or null: the same stage costs' key (the cluster setting and the
  // plan but its schedule, whose placement it names: so the same shape,
  // costs, cluster and options) and an equal checked program.
  std::shared_ptr<const report::Summary> same_simulation(const std::string& costs_key,
                                                         const std::shared_ptr<const CheckedProgram>& program);
  // Keeps `summary` for later plans that would repeat this simulation. The
  // programs it keeps alive are bounded (kSummaryProgramBytes), oldest given up first.
  void remember(const std::string& costs_key, std::shared_ptr<const CheckedProgram> program,
                const report::Summary& summary);
  static constexpr std::size_t kSummaryProgramBytes = std::size_t{16} << 20;  // actions and wiring

 private:
  template <typename Key, typename Value>
  struct Lru {
    std::list<std::pair<Key, std::shared_ptr<const Value>>> entries;  // most recently used first
  };
  template <typename Key, typename Value, typename Make>
  std::shared_ptr<const Value> get(Lru<Key, Value>& lru, std::size_t room, const Key& key, const Make& make);

  struct Simulated {
    std::string costs_key;
    std::shared_ptr<const CheckedProgram> program;
    std::shared_ptr<const report::Summary> summary;
    std::size_t bytes = 0;  // the program's actions and dependencies
  };

  std::mutex mutex_;
  std::size_t program_room_, cost_room_, summary_room_;
  Lru<ProgramKey, CheckedProgram> programs_;
  Lru<std::string, workload::StageCosts> costs_;
  std::list<Simulated> simulated_;  // newest first
  std::size_t simulated_bytes_ = 0;
};

}  // namespace trainsim::driver
