#include <doctest/doctest.h>

#include "workload/stage_groups.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_stage_groups_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;

TEST_CASE("a stage's tensor, data and context groups sit where Megatron-LM's order puts them") {
  // Two nodes of 8; tp 2, dp 8: GPU = replica x 2 + tensor rank, so the
  // tensor group {0, 1} is inside node 0 and tensor rank 0's data-parallel
  // group {0, 2, ..., 14} has 4 members on each node.
  const hw::ClusterSpec c = small_cluster(2);
  Plan p;
  p.tp = 2;
  p.dp = 8;
  StageGroups g = stage_groups(c, p, 0, hw::CollectiveAlgorithm::kAuto, false);
  CHECK(g.tp.ranks == 2);
  CHECK(g.tp.nodes == 1);
  REQUIRE(g.dp_members.size() == 2);
  CHECK(g.dp_members[0] == std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK(g.dp_members[1] == std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(g.dp.ranks == 8);
  CHECK(g.dp.nodes == 2);
  CHECK(g.dp.ranks_per_node == 4);
  // Without ZeRO-3's HSDP the sharding and replica groups are dp's.
  CHECK(g.shard.ranks == 8);
  CHECK(g.replica.ranks == 8);
  // cp 2, dp 4: tensor rank 0's context group is replicas 0 and 1, GPUs 0 and 2.
  p.cp = 2;
  p.dp = 4;
  g = stage_groups(c, p, 0, hw::CollectiveAlgorithm::kAuto, false);
  CHECK(g.cp.ranks == 2);
  CHECK(g.cp.nodes == 1);
}

TEST_CASE("HSDP's shard groups are consecutive replicas, its replica groups one of each") {
  // tp 2, dp 8, shards of 4: tensor rank 0's shard groups {0, 2, 4, 6} (node
  // 0) and {8, 10, 12, 14} (node 1); its replica groups {0, 8}, {2, 10}, ...
  // one GPU on each node.
  const hw::ClusterSpec c = small_cluster(2);
  Plan p;
  p.tp = 2;
  p.dp = 8;
  p.zero_stage = 3;
  p.fsdp_shard_size = 4;
  const StageGroups g = stage_groups(c, p, 0, hw::CollectiveAlgorithm::kAuto, false);
  CHECK(g.shard.ranks == 4);
  CHECK(g.shard.nodes == 1);
  CHECK(g.replica.ranks == 2);
  CHECK(g.replica.nodes == 2);
}

TEST_CASE("a MoE stage's expert groups fold as etp x ep x edp over its GPUs") {
  // One node, tp 1, dp 8, ep 4, etp 1: GPU j is in expert-parallel group
  // j / 4 ({0..3}, {4..7}) and expert-data-parallel group j % 4 ({0, 4}, ...).
  const hw::ClusterSpec c = small_cluster(1);
  Plan p;
  p.tp = 1;
  p.dp = 8;
  p.ep = 4;
  const StageGroups g = stage_groups(c, p, 0, hw::CollectiveAlgorithm::kAuto, true);
  CHECK(g.ep.ranks == 4);
  CHECK(g.edp.ranks == 2);
  CHECK(g.etp.ranks == 1);
  CHECK(g.expert_shard.ranks == 2);  // no HSDP: the experts shard over edp
}

}  // namespace workload_stage_groups_test
