#include "workload/plan.hpp"

#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::workload {

schedule::Placement Plan::placement() const {
  if (schedule::is_csv_name(schedule)) return csv_placement;
  const schedule::Schedule* s = schedule::find_schedule(schedule);
  return s == nullptr ? schedule::Placement::kLooped : s->placement();
}

double grad_accumulation_bytes_per_param(GradAccumulation g) {
  switch (g) {
    case GradAccumulation::kFused: return 0.0;
    case GradAccumulation::kAdd: return 2.0 + 2.0 + 2.0;
    case GradAccumulation::kAddFp32: return 2.0 + 4.0 + 4.0;
    case GradAccumulation::kCastAddFp32: return (2.0 + 4.0) + (4.0 + 4.0 + 4.0);
  }
  return 0.0;
}

}  // namespace trainsim::workload
