#include <doctest/doctest.h>

#include "workload/grad_buckets.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_grad_buckets_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::core::Time;

namespace {
constexpr auto kAuto = hw::CollectiveAlgorithm::kAuto;
// 1,310,720 parameters: 2,621,440 bytes of 16-bit gradients, 2.5 buckets of 1 MiB.
StageCost stage() {
  StageCost c;
  c.params = 1310720.0;
  return c;
}
Plan two_replicas(int zero_stage) {
  Plan p;
  p.dp = 2;
  p.zero_stage = zero_stage;
  p.grad_bucket_mib = 1.0;
  return p;
}
}  // namespace

TEST_CASE("gradients cut into buckets in backward order, each reduced on its own") {
  const hw::ClusterSpec c = small_cluster(1);
  const Plan p = two_replicas(0);
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  StageCost s = stage();
  add_grad_buckets(s, p, c.node, kAuto, g, 2.0);
  // Two full buckets of 1,048,576 bytes and the 524,288 left: 0.4, 0.4, 0.2.
  CHECK(s.grad_bytes == 2621440.0);
  CHECK(s.param_bytes == 2621440.0);
  CHECK(s.grad_reduce_kind == hw::CollectiveKind::kAllReduce);
  REQUIRE(s.grad_bucket_share.size() == 3);
  CHECK(s.grad_bucket_share[0] == doctest::Approx(0.4));
  CHECK(s.grad_bucket_share[2] == doctest::Approx(0.2));
  CHECK(s.grad_bucket_reduce[0] == hw::collective_time(hw::CollectiveKind::kAllReduce, 1048576.0, g.dp, c.node));
  CHECK(s.grad_bucket_reduce[2] == hw::collective_time(hw::CollectiveKind::kAllReduce, 524288.0, g.dp, c.node));
  // ZeRO-0 gathers nothing after the step; nothing goes to the host.
  CHECK(s.param_all_gather == Time::zero());
  CHECK(s.grad_bucket_host_copy.empty());
}

TEST_CASE("ZeRO-1 reduce-scatters the buckets and gathers the parameters after the step") {
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = two_replicas(1);
  p.overlap.param_gather = true;
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  StageCost s = stage();
  add_grad_buckets(s, p, c.node, kAuto, g, 2.0);
  CHECK(s.grad_reduce_kind == hw::CollectiveKind::kReduceScatter);
  CHECK(s.grad_bucket_reduce[1] == hw::collective_time(hw::CollectiveKind::kReduceScatter, 1048576.0, g.dp, c.node));
  CHECK(s.param_all_gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2621440.0, g.dp, c.node));
  // Bucket by bucket, the last-filled first: 0.2 of the 2,621,440 bytes, then 0.4 twice.
  REQUIRE(s.param_bucket_gather.size() == 3);
  CHECK(s.param_bucket_gather[0] == hw::collective_time(hw::CollectiveKind::kAllGather, 0.2 * 2621440.0, g.dp, c.node));
  CHECK(s.param_bucket_gather[2] == hw::collective_time(hw::CollectiveKind::kAllGather, 0.4 * 2621440.0, g.dp, c.node));
}

TEST_CASE("a stage with no replica reduces nothing, in one bucket") {
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = two_replicas(0);
  p.dp = 1;
  const StageGroups g = stage_groups(c, p, 0, kAuto, false);
  StageCost s = stage();
  add_grad_buckets(s, p, c.node, kAuto, g, 2.0);
  REQUIRE(s.grad_bucket_share.size() == 1);
  CHECK(s.grad_bucket_share[0] == 1.0);
  CHECK(s.grad_bucket_reduce[0] == Time::zero());
}

}  // namespace workload_grad_buckets_test
