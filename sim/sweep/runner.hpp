// Runs a sweep's plans on a pool of threads, each plan the ordinary what-if
// pipeline (driver::simulate, driver::summarize) on the sweep's setting with
// the plan edited in.
//
// Pruning (with a top K): plans are taken in order of their lower bound
// (bound.hpp) in fixed-size batches; before a batch starts, any plan whose
// bound exceeds the K-th best iteration time of the batches before it cannot
// reach the top K and is skipped. The threshold moves only between batches,
// so what is pruned does not depend on the number of threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "lower/work_limits.hpp"
#include "sweep/result.hpp"
#include "sweep/space.hpp"

namespace trainsim::driver {
class PlanCache;  // driver/plan_cache.hpp
}

namespace trainsim::sweep {

struct RunOptions {
  int jobs = 1;
  std::optional<int> prune_top;  // prune for this top K
  std::size_t batch = 64;        // plans between threshold updates when pruning
  // Set (e.g. by a SIGINT handler) to stop starting plans; those not started
  // come back as Status::kNotRun.
  const std::atomic<bool>* stop = nullptr;
  // Called from one thread now and then while plans run: (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct Outcome {
  std::vector<Result> results;  // one per candidate, ranked
  std::size_t pruned = 0;
  std::size_t not_run = 0;
  bool interrupted = false;
};

Outcome run(const Spec& spec, const std::vector<Candidate>& plans, const RunOptions& options);

// Process-wide: keep freed memory for reuse instead of giving it back to the
// system, under jemalloc (the command line's allocator) and glibc's malloc
// alike. Each plan builds and drops a task graph; on the development VM a
// first-touch page fault costs some 14 us, so returning the pages and
// faulting them in again for the next plan cost 15% of a sweep under glibc,
// and 3-6% of the README sweep's wall time under jemalloc, whose freed pages
// go back after 10 s. Called by the command line and the benchmarks, not by
// run().
void keep_freed_memory();

// One plan, as the runner runs it (exposed for tests), refused past `limits`
// (lower::WorkTooLarge, reported as a failed plan); with `cache`, sharing
// programs and stage costs with the other plans of the sweep.
Result run_one(const Spec& spec, const Candidate& candidate, const lower::WorkLimits& limits = lower::machine_limits(),
               driver::PlanCache* cache = nullptr);

}  // namespace trainsim::sweep
