// One plan's outcome in a sweep, and the ranking's total order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/plan.hpp"

namespace trainsim::sweep {

// In ranking order: fitting plans first, then those that run out of memory,
// those the simulator could not run, those pruned, those never started
// (the sweep was interrupted).
enum class Status { kOk, kOom, kFailed, kPruned, kNotRun };
std::string status_name(Status s);
bool parse_status(const std::string& text, Status& out);

struct Result {
  std::size_t index = 0;  // in the canonical enumeration
  std::string key;        // canonical plan text (space.hpp)
  std::string cluster;    // the cluster's label
  workload::Plan plan;
  Status status = Status::kNotRun;
  double iteration_time_s = 0.0;
  double tokens_per_s = 0.0;
  double mfu = 0.0;
  double bubble_fraction = 0.0;
  std::int64_t peak_memory_bytes = 0;
  double bound_s = 0.0;  // the pruning bound (0 when not computed)
  std::string error;     // why a failed plan failed
};

// The total order of the ranking: status, then iteration time (for plans that
// ran), then the canonical key, so the order never depends on thread timing.
bool ranks_before(const Result& a, const Result& b);
void rank(std::vector<Result>& results);

// Fitting plans not dominated in (iteration time, peak memory): no other
// fitting plan is at least as good in both and better in one. Fastest first.
std::vector<const Result*> pareto_front(const std::vector<Result>& ranked);

}  // namespace trainsim::sweep
