// A ZeRO-3 unit's collectives and copies (ShardUnit): the all-gather of its
// parameters before each use, the second gather of a unit DeepSpeed
// recomputes, FSDP2's copy out of the gather's buffer, the reduce-scatter of
// its gradients, HSDP's all-reduce of the shard across the shard groups,
// and the copies over the host link where the optimizer or the parameters
// are offloaded. A MoE unit's routed experts gather and scatter over their
// expert-data-parallel group after the rest over the sharding group.
#pragma once

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/plan.hpp"
#include "workload/stage_costs.hpp"
#include "workload/stage_groups.hpp"

namespace trainsim::workload {

// What a unit holds.
struct ShardUnitHolding {
  int layers = 0;           // transformer layers; 0 for the embedding or the head
  int moe_layers = 0;       // of them, those with a MoE block
  double params = 0.0;      // its parameters on one GPU, the persistent ones not counted
  double regathered = 0.0;  // the share of them its backward gathers twice (zero3_reuse.hpp)
};

// What a stage's units share.
struct ShardUnitContext {
  const Plan& plan;
  const hw::NodeSpec& node;
  hw::CollectiveAlgorithm algorithm;
  const StageGroups& groups;
  double expert_per_layer = 0.0;  // a MoE layer's routed experts' parameters on one GPU
  double linear_per_layer = 0.0;  // a MoE layer's linear weights on one GPU
  // A MoE model's dense layer's linear weights, all tensor ranks' (a rank
  // holds 1/tp of them).
  double dense_linear_params = 0.0;
  double grad_bytes = 2.0;  // a gradient value's
};

// The unit's gathers, scatters and copies; its shares of the stage's passes
// are the caller's (left at zero).
ShardUnit shard_unit(const ShardUnitHolding& holding, const ShardUnitContext& context);

}  // namespace trainsim::workload
