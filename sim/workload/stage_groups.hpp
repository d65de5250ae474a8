// The collective groups one pipeline stage's GPUs communicate in, where
// their members sit (hw::CollectiveGroup), for the stage's costs.
//
// Groups of one kind run their collectives at once (every tensor rank
// reduces its own shard over its data-parallel group, every context or
// expert group exchanges together), so each group stands for all of its
// kind: its NIC share is what it keeps while the others run beside it.
#pragma once

#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/plan.hpp"

namespace trainsim::workload {

struct StageGroups {
  hw::CollectiveGroup tp;  // the stage's tensor group
  // Each tensor rank's data-parallel group (the GPUs), and the first of them
  // as all of them run at once.
  std::vector<std::vector<int>> dp_members;
  hw::CollectiveGroup dp;
  hw::CollectiveGroup cp;  // the first replica's context group (cp > 1)
  // A MoE model's groups as Megatron-Core folds them (expert_folding.hpp):
  // expert-parallel, expert-tensor-parallel, expert-data-parallel, each the
  // slowest of its kind (groups of a kind can sit differently: ep 6 on
  // 8-GPU nodes, one group inside a node, the next across two). ZeRO-3 with
  // HSDP shards the experts inside each edp group's part of a shard group
  // (expert_shard) and all-reduces the copies of one shard (expert_replica);
  // without HSDP expert_shard is edp.
  hw::CollectiveGroup ep, etp, edp, expert_shard, expert_replica;
  // ZeRO-3 with HSDP (Plan::shard_replicas() > 1): the groups of
  // fsdp_shard_size consecutive replicas that gather and scatter, and the
  // groups of one replica of each that all-reduce the shards; dp otherwise.
  hw::CollectiveGroup shard, replica;
};

// The groups of the stage on pipeline rank `rank`. The MoE groups are timed
// on a nominal buffer by `algorithm` to find each kind's slowest.
StageGroups stage_groups(const hw::ClusterSpec& cluster, const Plan& plan, int rank, hw::CollectiveAlgorithm algorithm,
                         bool moe);

}  // namespace trainsim::workload
