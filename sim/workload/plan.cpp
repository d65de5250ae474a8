#include "workload/plan.hpp"

#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::workload {

schedule::Placement Plan::placement() const {
  if (schedule::is_csv_name(schedule)) return csv_placement;
  const schedule::Schedule* s = schedule::find_schedule(schedule);
  return s == nullptr ? schedule::Placement::kLooped : s->placement();
}

}  // namespace trainsim::workload
