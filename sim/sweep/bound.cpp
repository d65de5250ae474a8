#include "sweep/bound.hpp"

#include <algorithm>
#include <vector>

#include "workload/stage_costs.hpp"

namespace trainsim::sweep {

double compute_per_microbatch_s(const config::Scenario& setting, const workload::Plan& plan) {
  const workload::StageCosts costs =
      workload::stage_costs(setting.model, plan, setting.cluster, setting.options.collective_algorithm);
  std::vector<double> per_rank(plan.pp, 0.0);
  for (int s = 0; s < plan.stages(); ++s) {
    const auto& c = costs.stages[s];
    per_rank[plan.rank_of_stage(s)] += (c.forward + c.input_grad + c.weight_grad).to_seconds();
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

double BoundCache::bound_s(int cluster, const config::Scenario& setting, const workload::Plan& plan) {
  // Everything the F, I and W durations depend on. (The data-parallel degree
  // does not enter them: it only shapes the gradient reduction.)
  const Key key{cluster,
                plan.tp,
                plan.pp,
                plan.vp,
                plan.microbatch_size,
                static_cast<int>(plan.recompute),
                plan.sequence_parallel,
                static_cast<int>(plan.attention)};
  double per_mb = 0.0;
  {
    std::lock_guard lock(mutex_);
    if (auto it = per_microbatch_.find(key); it != per_microbatch_.end()) per_mb = it->second;
  }
  if (per_mb == 0.0) {
    try {
      per_mb = compute_per_microbatch_s(setting, plan);
    } catch (const std::exception&) {
      return 0.0;  // a plan beyond the simulator's range: no bound, the run reports it
    }
    std::lock_guard lock(mutex_);
    per_microbatch_.emplace(key, per_mb);
  }
  return per_mb * plan.microbatches();
}

}  // namespace trainsim::sweep
