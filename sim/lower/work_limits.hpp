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
  double flow_steps = 0.0;  // flows started by collectives run as flows, all steps together
};

// What one copy of the pipeline makes (see Lowering).
struct PipelineWork {
  double tasks = 0.0;
  double flow_steps = 0.0;  // of every copy's collectives together: not multiplied by the copies
};

struct WorkEstimate {
  long long pipelines = 1;  // simulated copies of the pipeline
  long long gpus = 1;       // simulated GPUs: pipelines x pipeline ranks
  double tasks = 0.0;       // about (a double: no count can overflow it)
  double bytes = 0.0;       // memory the task graph, timeline and resources take, about
  double flow_steps = 0.0;  // about; each costs the flow network a start, a re-solve and an end
};

// `per_pipeline`: the work of one copy of `ranks` pipeline ranks (see
// Lowering); its tasks times `pipelines`. Flow collectives keep their flows
// besides (`flow_collectives`).
WorkEstimate work_estimate(long long pipelines, long long ranks, const PipelineWork& per_pipeline,
                           bool flow_collectives);

// The work is more than `limits` allows.
class WorkTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws WorkTooLarge when `work` exceeds a limit: "`what` takes about N
// tasks and X GiB of memory, more than ...; `instead`" (past the flow-step
// limit, what to use instead is analytic collectives).
void check_work(const WorkEstimate& work, const WorkLimits& limits, const std::string& what, const std::string& instead);

// What this machine holds: most of the memory it has available now
// (MemAvailable of /proc/meminfo, or the cgroup's memory.max when lower,
// else its physical memory), read once per process; and flow steps for
// about an hour (kMaxFlowSteps). No task limit.
WorkLimits machine_limits();

// Flow steps past which a run is refused by default: about an hour of
// simulation. Measured on the 2-core development machine, symmetric GPT 1.7B
// (tp 2, pp 4) with flow collectives: 1.16e6 steps in 0.27 s at dp 64,
// 1.88e7 in 3.45 s at dp 256, 3.0e8 in 53 s at dp 1024: 4.3 to 5.7 million
// a second.
inline constexpr double kMaxFlowSteps = 2e10;

}  // namespace trainsim::lower
