#include "workload/stage_groups.hpp"

#include <cstddef>

#include "workload/expert_folding.hpp"

namespace trainsim::workload {

namespace {

// The slowest of `groups` at `kind` on a nominal buffer (every rank of a
// kind waits for it), its NIC share what it keeps while all of them run.
hw::CollectiveGroup slowest(const hw::ClusterSpec& cluster, const std::vector<std::vector<int>>& groups,
                            hw::CollectiveKind kind, hw::CollectiveAlgorithm algorithm) {
  hw::CollectiveGroup worst;
  double worst_s = -1.0;
  for (const std::vector<int>& members : groups) {
    const hw::CollectiveGroup g = hw::group_of(cluster, members);
    const double t_s = hw::collective_time(kind, 1e9, g, cluster.node, algorithm).to_seconds();
    if (t_s > worst_s) {
      worst_s = t_s;
      worst = g;
    }
  }
  worst.nic_share *= hw::concurrent_nic_share(cluster, groups);
  return worst;
}

// The first of `groups`, its NIC share what it keeps while all of them run.
hw::CollectiveGroup first_of(const hw::ClusterSpec& cluster, const std::vector<std::vector<int>>& groups) {
  hw::CollectiveGroup g = hw::group_of(cluster, groups.front());
  g.nic_share *= hw::concurrent_nic_share(cluster, groups);
  return g;
}

}  // namespace

StageGroups stage_groups(const hw::ClusterSpec& cluster, const Plan& plan, int rank, hw::CollectiveAlgorithm algorithm,
                         bool moe) {
  StageGroups out;
  std::vector<int> tp_gpus;
  for (int k = 0; k < plan.tp; ++k) tp_gpus.push_back(plan.gpu_of(rank, 0, k));
  out.tp = hw::group_of(cluster, tp_gpus);
  // Every tensor rank reduces its own shard over its data-parallel group, all
  // at once: groups whose members share a NIC split it.
  out.dp_members.resize(static_cast<std::size_t>(plan.tp));
  for (int k = 0; k < plan.tp; ++k) {
    for (int d = 0; d < plan.replicas(); ++d) out.dp_members[static_cast<std::size_t>(k)].push_back(plan.gpu_of(rank, d, k));
  }
  // MoE: the stage's GPUs in tp-cp-dp order, numbered j, in expert groups
  // as Megatron-Core folds them, every group of a kind running at once.
  if (moe) {
    std::vector<int> stage_gpus;
    for (int d = 0; d < plan.replicas(); ++d) {
      for (int k = 0; k < plan.tp; ++k) stage_gpus.push_back(plan.gpu_of(rank, d, k));
    }
    const std::size_t et = static_cast<std::size_t>(plan.etp), e = static_cast<std::size_t>(plan.ep);
    std::vector<std::vector<int>> ep_groups(stage_gpus.size() / e), etp_groups(stage_gpus.size() / et),
        edp_groups(e * et);
    const ExpertFolding folding{plan.etp, plan.ep};
    for (std::size_t j = 0; j < stage_gpus.size(); ++j) {
      const int at = static_cast<int>(j);
      ep_groups[static_cast<std::size_t>(folding.ep_group_of(at))].push_back(stage_gpus[j]);
      etp_groups[static_cast<std::size_t>(folding.etp_group_of(at))].push_back(stage_gpus[j]);
      edp_groups[static_cast<std::size_t>(folding.edp_group_of(at))].push_back(stage_gpus[j]);
    }
    out.ep = slowest(cluster, ep_groups, hw::CollectiveKind::kAllToAll, algorithm);
    out.etp = slowest(cluster, etp_groups, hw::CollectiveKind::kAllGather, algorithm);
    out.edp = slowest(cluster, edp_groups, hw::CollectiveKind::kReduceScatter, algorithm);
    out.expert_shard = out.edp;
    const auto m = static_cast<std::size_t>(plan.expert_shard_group_size());
    if (plan.zero_stage == 3 && plan.shard_replicas() > 1) {
      std::vector<std::vector<int>> shards, replicas;
      for (const std::vector<int>& g : edp_groups) {
        for (std::size_t first = 0; first < g.size(); first += m) shards.emplace_back(g.begin() + first, g.begin() + first + m);
        for (std::size_t k = 0; k < m; ++k) {
          replicas.emplace_back();
          for (std::size_t i = k; i < g.size(); i += m) replicas.back().push_back(g[i]);
        }
      }
      out.expert_shard = slowest(cluster, shards, hw::CollectiveKind::kReduceScatter, algorithm);
      out.expert_replica = slowest(cluster, replicas, hw::CollectiveKind::kAllReduce, algorithm);
    }
  }
  out.dp = first_of(cluster, out.dp_members);
  // Context parallelism: every tensor rank's cp group (replicas 0..cp-1 of
  // the first data-parallel rank) exchanges at once.
  if (plan.cp > 1) {
    std::vector<std::vector<int>> cp_groups(static_cast<std::size_t>(plan.tp));
    for (int k = 0; k < plan.tp; ++k) {
      for (int c = 0; c < plan.cp; ++c) cp_groups[static_cast<std::size_t>(k)].push_back(plan.gpu_of(rank, c, k));
    }
    out.cp = first_of(cluster, cp_groups);
  }
  // HSDP: gathers and scatters run in groups of fsdp_shard_size consecutive
  // replicas, the shards' all-reduce across the groups (one replica of
  // each); every tensor rank's groups at once.
  out.shard = out.replica = out.dp;
  const int shard = plan.shard_group_size(), copies = plan.shard_replicas();
  if (plan.zero_stage == 3 && plan.replicas() > 1 && copies > 1) {
    std::vector<std::vector<int>> shard_groups, replica_groups;
    for (const std::vector<int>& members : out.dp_members) {
      for (int g = 0; g < copies; ++g) shard_groups.emplace_back(members.begin() + g * shard, members.begin() + (g + 1) * shard);
      for (int j = 0; j < shard; ++j) {
        replica_groups.emplace_back();
        for (int g = 0; g < copies; ++g) replica_groups.back().push_back(members[static_cast<std::size_t>(g * shard + j)]);
      }
    }
    out.shard = first_of(cluster, shard_groups);
    out.replica = first_of(cluster, replica_groups);
  }
  return out;
}

}  // namespace trainsim::workload
