#include "workload/shard_unit.hpp"

#include <utility>

#include "workload/transformer.hpp"

namespace trainsim::workload {

ShardUnit shard_unit(const ShardUnitHolding& holding, const ShardUnitContext& context) {
  const Plan& plan = context.plan;
  const hw::NodeSpec& node = context.node;
  const StageGroups& groups = context.groups;
  const double t = plan.tp, g = context.grad_bytes;
  const int shard = plan.shard_group_size(), copies = plan.shard_replicas();
  const int expert_shard = plan.expert_shard_group_size();
  const bool fp8 = plan.precision == Precision::kFp8;
  const bool offload_params = plan.offload == Offload::kOptimizerAndParams;
  // The experts' part over the expert-data-parallel group after the rest
  // over the sharding group: two collectives, one after the other. The
  // experts' part and its time (zero without experts) in `experts`.
  auto sharded_collective = [&](hw::CollectiveKind kind, double bytes, double per_param,
                                std::pair<double, core::Time>& experts) {
    const double expert_bytes = holding.moe_layers * context.expert_per_layer * per_param;
    experts = {0.0, core::Time{}};
    if (expert_bytes <= 0.0) return hw::collective_time(kind, bytes, groups.shard, node, context.algorithm);
    experts = {expert_bytes, expert_shard > 1
                                 ? hw::collective_time(kind, expert_bytes, groups.expert_shard, node, context.algorithm)
                                 : core::Time{}};
    return hw::collective_time(kind, bytes - expert_bytes, groups.shard, node, context.algorithm) + experts.second;
  };

  ShardUnit u;
  u.layers = holding.layers;
  u.params = holding.params;
  // With FP8 gathers a layer's linear weights move as one byte a parameter.
  const double fp8_gathered =
      fp8 && plan.fp8_param_gather
          ? holding.moe_layers * context.linear_per_layer +
                (holding.layers > holding.moe_layers
                     ? (holding.layers - holding.moe_layers) * context.dense_linear_params / t
                     : 0.0)
          : 0.0;
  u.gather_bytes = holding.params * kActivationBytes - fp8_gathered;
  const double unit_experts = holding.moe_layers * context.expert_per_layer;  // its routed experts' parameters
  // Offloaded parameters: the shard comes from the host first.
  std::pair<double, core::Time> experts;
  const double gathered_per_param = fp8 && plan.fp8_param_gather ? 1.0 : kActivationBytes;
  u.gather_host_copy = core::Time::seconds(
      offload_params ? host_copy_seconds(plan, node, sharded_share(plan, u.gather_bytes, unit_experts * gathered_per_param)) : 0.0);
  u.gather = sharded_collective(hw::CollectiveKind::kAllGather, u.gather_bytes, gathered_per_param, experts) +
             u.gather_host_copy;
  std::tie(u.gather_expert_bytes, u.gather_experts) = experts;
  // The second gather of a recomputed unit: that share of its bytes, as its gather moves them.
  u.regather_bytes = holding.regathered * u.gather_bytes;
  u.regather = core::Time::seconds(u.gather.to_seconds() * holding.regathered);
  if (plan.fsdp_copy_out && u.gather_bytes > 0.0) {
    u.copy_out = core::Time::seconds(2.0 * u.gather_bytes / (node.gpu.hbm_achievable_tb_per_s * 1e12) +
                                     node.gpu.kernel_overhead_us * 1e-6);
  }
  u.grad_bytes = holding.params * g;
  // Offloaded, the reduced gradient shard goes to the host once fully
  // reduced: after the scatter, or after HSDP's all-reduce. DeepSpeed's
  // stage 3 (Plan::grad_copy blocking) moves the 16-bit shard to its host
  // buffer and back after every backward, and after the last one of the
  // iteration also copies it as FP32 into the optimizer's gradient, one
  // after the other on its reduction stream.
  const bool deepspeed_copies = plan.blocking_grad_copy();
  const double copied_per_param = deepspeed_copies ? 2.0 * g : g;
  const core::Time to_host =
      core::Time::seconds(host_copy_seconds(plan, node, sharded_share(plan, holding.params * copied_per_param, unit_experts * copied_per_param)));
  u.grad_host_copy = to_host;
  if (deepspeed_copies) {
    u.grad_fp32_copy = core::Time::seconds(host_copy_seconds(plan, node, sharded_share(plan, holding.params * 4.0, unit_experts * 4.0)));
  }
  u.grad_scatter = sharded_collective(hw::CollectiveKind::kReduceScatter, u.grad_bytes, g, experts);
  std::tie(u.grad_expert_bytes, u.grad_scatter_experts) = experts;
  if (copies > 1) {
    // HSDP: the shards' all-reduce across the groups; a MoE unit's experts'
    // shard over its own copies after the rest's.
    if (u.grad_expert_bytes > 0.0) {
      u.grad_replicate_experts = hw::collective_time(hw::CollectiveKind::kAllReduce, u.grad_expert_bytes / expert_shard,
                                                     groups.expert_replica, node, context.algorithm);
    }
    u.grad_replicate = hw::collective_time(hw::CollectiveKind::kAllReduce,
                                           u.grad_expert_bytes > 0.0 ? (u.grad_bytes - u.grad_expert_bytes) / shard
                                                                     : u.grad_bytes / shard,
                                           groups.replica, node, context.algorithm) +
                       u.grad_replicate_experts + to_host;
  } else {
    u.grad_scatter += to_host;
  }
  return u;
}

}  // namespace trainsim::workload
