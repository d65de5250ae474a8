// A MoE model's experts against the plan and the cluster: expert parallelism,
// its groups, dispatchers and what is not modelled yet.
#include "config/sections.hpp"

#include <numeric>

namespace trainsim::config::detail {

// A MoE model's experts over its plan (workload/moe_spec.hpp, Plan::ep).
// The expert settings of a model without experts are refused where they are
// read (load.cpp); these are the checks across sections.
void check_moe(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const workload::MoeSpec& moe = sc.model.moe;
  if (!moe.enabled()) {
    if (p.ep > 1) ctx.fail("parallel.ep", "applies only to a MoE model (model.moe)", {"model.moe"});
    if (p.etp > 1) ctx.fail("parallel.etp", "applies only to a MoE model (model.moe)", {"model.moe"});
    return;
  }
  if (moe.expert_ffn % p.etp != 0) {
    ctx.fail("parallel.etp",
             fmt::format("expected a divisor of model.moe.expert_ffn = {} (each expert's width splits over etp), got {}",
                         moe.expert_ffn, p.etp),
             {"model.moe.expert_ffn"});
  }
  if (moe.experts % p.ep != 0) {
    ctx.fail("parallel.ep",
             fmt::format("expected a divisor of model.moe.experts = {} (each rank holds experts / ep), got {}",
                         moe.experts, p.ep),
             {"model.moe.experts"});
  }
  const long long stage_gpus = static_cast<long long>(p.tp) * p.cp * p.dp;
  if (stage_gpus % p.ep != 0) {
    ctx.fail("parallel.ep",
             fmt::format("expected a divisor of a pipeline stage's GPUs, tp x cp x dp = {} x {} x {} = {} (the MoE "
                         "layers run as ep x (tp x cp x dp / ep) over them), got {}",
                         p.tp, p.cp, p.dp, stage_gpus, p.ep),
             {"parallel.tp", "parallel.cp", "parallel.dp"});
  }
  if (stage_gpus % (static_cast<long long>(p.ep) * p.etp) != 0) {
    ctx.fail("parallel.etp",
             fmt::format("ep x etp = {} x {} must divide a pipeline stage's GPUs, tp x cp x dp = {} (the MoE layers "
                         "run as etp x ep x edp over them)",
                         p.ep, p.etp, stage_gpus),
             {"parallel.ep", "parallel.tp", "parallel.cp", "parallel.dp"});
  }
  if (p.moe_dispatcher != workload::MoeDispatcher::kAllToAll && p.ep == 1) {
    ctx.fail("parallel.moe_dispatcher", "there is no dispatch to run with parallel.ep = 1", {"parallel.ep"});
  }
  if (p.overlap.moe_a2a && p.ep == 1) {
    ctx.fail("options.moe_a2a_overlap", "there is no dispatch or combine to overlap with parallel.ep = 1",
             {"parallel.ep"});
  }
  if (p.tp > 1 && !p.sequence_parallel) {
    ctx.fail("parallel.sequence_parallel",
             fmt::format("a MoE model with tp = {} needs sequence parallelism (each tensor rank routes its own 1/tp of "
                         "the tokens, as Megatron-Core requires); expected true",
                         p.tp),
             {"parallel.tp", "model.moe"});
  }
  // Not modelled yet: say so rather than simulate something else.
  auto not_yet = [&](const std::string& path, const std::string& what, const std::vector<std::string>& related) {
    ctx.fail(path, what + " with a MoE model (model.moe) is not modelled yet", related);
  };
  // ZeRO-3 / FSDP: each unit's experts gathered and reduced over the
  // expert-data-parallel group, the rest over dp, timed analytically; a unit
  // is a layer (MoE or dense) or several.
  if (p.zero_stage == 3) {
    // HSDP: each shard group's GPUs hold whole expert-parallel groups, whose
    // experts shard over that group's part of edp.
    const long long shard_gpus = static_cast<long long>(p.fsdp_shard_size) * p.tp;
    if (p.fsdp_shard_size > 0 && p.fsdp_shard_size < p.replicas() && p.replicas() % p.fsdp_shard_size == 0 &&
        shard_gpus % (static_cast<long long>(p.ep) * p.etp) != 0) {
      const long long group = static_cast<long long>(p.ep) * p.etp;
      ctx.fail("parallel.fsdp_shard_size",
               fmt::format("with experts each shard group must hold whole expert-parallel groups, but fsdp_shard_size "
                           "x tp = {} x {} = {} GPUs is not a multiple of ep x etp = {} x {} = {}; expected a "
                           "multiple of {}",
                           p.fsdp_shard_size, p.tp, shard_gpus, p.ep, p.etp, group, group / std::gcd(group, static_cast<long long>(p.tp))),
               {"parallel.ep", "parallel.etp", "model.moe"});
    }
    if (p.fsdp_persistence_threshold > 0.0) {
      not_yet("parallel.fsdp_persistence_threshold", "ZeRO-3's persistent small tensors", {"model.moe"});
    }
    if (p.fsdp_max_reuse_distance) {
      not_yet("parallel.fsdp_max_reuse_distance", "DeepSpeed's second gather after recomputation", {"model.moe"});
    }
  }
  if (p.twobp_concat) not_yet("parallel.twobp_concat", "2BP's concatenated weight passes", {"model.moe"});
}

}  // namespace trainsim::config::detail
