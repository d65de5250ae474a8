#include "sweep/bound.hpp"

#include <algorithm>
#include <vector>

#include "workload/stage_costs.hpp"

namespace trainsim::sweep {

std::vector<RankWork> rank_work(const config::Scenario& setting, const workload::Plan& plan) {
  const workload::StageCosts costs =
      workload::stage_costs(setting.model, plan, setting.cluster, setting.options.collective_algorithm);
  std::vector<RankWork> work(plan.pp);
  std::vector<char> waited(plan.pp, 0);
  const int length = plan.stages() / plan.pipelines();
  double before = 0.0;  // F of the stages before s in its pipeline
  for (int s = 0; s < plan.stages(); ++s) {
    const auto& c = costs.stages[s];
    if (s % length == 0) before = 0.0;
    const int r = plan.rank_of_stage(s);
    RankWork& w = work[r];
    // A rank starts with the first of its stages that can start.
    w.wait_s = waited[r] ? std::min(w.wait_s, before) : before;
    waited[r] = 1;
    before += c.forward.to_seconds();
    // With the A2A overlap a MoE stage's dispatch and combine may hide
    // entirely: only its compute is sure to take time.
    const core::Time hideable = plan.overlap.moe_a2a ? c.ep_comm_forward + c.ep_comm_backward : core::Time::zero();
    // (DualPipe: each direction's stages see their half of the micro-batches.)
    w.per_microbatch_s += (c.forward + c.input_grad + c.weight_grad - hideable).to_seconds() / plan.pipelines();
  }
  return work;
}

double BoundCache::bound_s(int cluster, const config::Scenario& setting, const workload::Plan& plan) {
  // Everything the F, I and W durations depend on. (The data-parallel degree
  // enters them only through a MoE stage's expert groups, which it sets the
  // number of: it otherwise shapes only the gradient reduction. The
  // context-parallel degree does: each rank's share of the sequence.)
  const Key key{cluster,
                plan.tp,
                plan.pp,
                plan.vp,
                plan.microbatch_size,
                static_cast<int>(plan.recompute),
                plan.sequence_parallel,
                static_cast<int>(plan.attention),
                static_cast<int>(plan.grad_accumulation),
                static_cast<int>(plan.grad_dtype),
                static_cast<int>(plan.send_split),
                static_cast<int>(plan.placement()),
                plan.overlap.tp_comm,
                plan.cp,
                static_cast<int>(plan.cp_algorithm),
                static_cast<int>(plan.cp_merge),
                static_cast<int>(plan.precision),
                static_cast<int>(plan.fp8_recipe),
                static_cast<int>(plan.fp8_runtime()),
                plan.ep,
                static_cast<int>(plan.moe_dispatcher),
                plan.moe_imbalance,
                plan.recompute_modules,
                plan.offload_modules,
                plan.overlap.moe_a2a,
                plan.etp,
                plan.ep > 1 || plan.etp > 1 ? plan.dp : 0};
  std::vector<RankWork> work;
  {
    std::lock_guard lock(mutex_);
    if (auto it = work_.find(key); it != work_.end()) work = it->second;
  }
  if (work.empty()) {
    try {
      work = rank_work(setting, plan);
    } catch (const std::exception&) {
      return 0.0;  // a plan beyond the simulator's range: no bound, the run reports it
    }
    std::lock_guard lock(mutex_);
    work_.emplace(key, work);
  }
  double bound = 0.0;
  for (const RankWork& w : work) bound = std::max(bound, w.wait_s + w.per_microbatch_s * plan.microbatches());
  return bound;
}

}  // namespace trainsim::sweep
