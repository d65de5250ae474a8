// How much a simulation will take, estimated from the program before any of
// it is built, and the limits past which it is refused at once (with what to
// do instead) rather than left to swap, be killed, or run for hours.
#pragma once

#include <stdexcept>
#include <string>


namespace trainsim::lower {

// 0 for no limit.
struct WorkLimits {
  long long tasks = 0;
  double bytes = 0.0;
};

struct WorkEstimate {
  long long pipelines = 1;  // simulated copies of the pipeline
  long long gpus = 1;       // simulated GPUs: pipelines x pipeline ranks
  double tasks = 0.0;       // about (a double: no count can overflow it)
  double bytes = 0.0;       // memory the task graph, timeline and resources take, about
};

// `tasks_per_pipeline`: the tasks of one copy of `ranks` pipeline ranks (see
// Lowering), times `pipelines`. Flow collectives keep their flows besides
// (`flow_collectives`).
WorkEstimate work_estimate(long long pipelines, long long ranks, double tasks_per_pipeline, bool flow_collectives);

// The work is more than `limits` allows.
class WorkTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws WorkTooLarge when `work` exceeds a limit: "`what` takes about N
// tasks and X GiB of memory, more than ...; `instead`".
void check_work(const WorkEstimate& work, const WorkLimits& limits, const std::string& what, const std::string& instead);

// What this machine's memory holds: most of what it has available now
// (MemAvailable of /proc/meminfo, else its physical memory), read once per
// process. No task limit.
WorkLimits machine_limits();

}  // namespace trainsim::lower
