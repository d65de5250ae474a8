#include <doctest/doctest.h>

#include "workload/shard_unit.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_shard_unit_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::core::Time;

namespace {
constexpr auto kAuto = hw::CollectiveAlgorithm::kAuto;
Plan zero3(int dp) {
  Plan p;
  p.dp = dp;
  p.zero_stage = 3;
  return p;
}
}  // namespace

TEST_CASE("a unit gathers its 16-bit parameters and reduce-scatters its gradients") {
  // 1,000,000 parameters of one layer over 8 replicas: 2,000,000 bytes each way.
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = zero3(8);
  p.fsdp_copy_out = true;
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  const ShardUnitContext context{.plan = p, .node = c.node, .algorithm = kAuto, .groups = g};
  const ShardUnit u = shard_unit({.layers = 1, .moe_layers = 1, .params = 1e6, .regathered = 0.5}, context);
  CHECK(u.gather_bytes == 2e6);
  CHECK(u.gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2e6, g.shard, c.node));
  CHECK(u.grad_bytes == 2e6);
  CHECK(u.grad_scatter == hw::collective_time(hw::CollectiveKind::kReduceScatter, 2e6, g.shard, c.node));
  // Half of it gathered again after a recomputation: 1,000,000 bytes in half the time.
  CHECK(u.regather_bytes == 1e6);
  CHECK(u.regather == Time::seconds(u.gather.to_seconds() * 0.5));
  // FSDP2's copy out: 2,000,000 bytes read and written at 1.6 TB/s, 2.5 us.
  CHECK(u.copy_out == Time::seconds(2.5e-6));
  // No HSDP, no experts, nothing offloaded.
  CHECK(u.grad_replicate == Time::zero());
  CHECK(u.gather_expert_bytes == 0.0);
  CHECK(u.gather_host_copy == Time::zero());
  // Its shares of the stage's passes are the caller's.
  CHECK(u.forward_share == 0.0);
}

TEST_CASE("HSDP all-reduces a unit's gradient shard across the shard groups") {
  // Shards of 4 over 8 replicas: the 2,000,000 bytes of gradients
  // reduce-scatter in a group of 4, then each 500,000-byte shard is
  // all-reduced with its copy in the other group.
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = zero3(8);
  p.fsdp_shard_size = 4;
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  const ShardUnit u = shard_unit({.layers = 1, .moe_layers = 1, .params = 1e6},
                                 {.plan = p, .node = c.node, .algorithm = kAuto, .groups = g});
  CHECK(u.grad_scatter == hw::collective_time(hw::CollectiveKind::kReduceScatter, 2e6, g.shard, c.node));
  CHECK(u.grad_replicate == hw::collective_time(hw::CollectiveKind::kAllReduce, 5e5, g.replica, c.node));
}

TEST_CASE("FP8 gathers move a layer's linear weights at a byte a parameter") {
  // 400,000 of the unit's 1,000,000 parameters are linear weights: 2,000,000
  // bytes less 400,000.
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = zero3(8);
  p.precision = Precision::kFp8;
  p.fp8_param_gather = true;
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  const ShardUnit u = shard_unit({.layers = 1, .moe_layers = 1, .params = 1e6},
                                 {.plan = p, .node = c.node, .algorithm = kAuto, .groups = g, .linear_per_layer = 4e5});
  CHECK(u.gather_bytes == 1.6e6);
  CHECK(u.grad_bytes == 2e6);
}

}  // namespace workload_shard_unit_test
