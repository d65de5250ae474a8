// Context parallelism: what one of cp ranks computes and keeps, the exchange
// of keys and values by each algorithm, and the groups gradients reduce over.
#include <doctest/doctest.h>

#include "hw/collective.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_context_parallel_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;

namespace {
// small_gpt on one node of 8 GPUs: cp x dp = 8, one sequence a replica.
Plan plan(int cp, CpAlgorithm algorithm = CpAlgorithm::kRing) {
  Plan p;
  p.cp = cp;
  p.dp = 8 / cp;
  p.global_batch = 8 / cp;
  p.cp_algorithm = algorithm;
  return p;
}
}  // namespace

TEST_CASE("a context-parallel rank holds 1/cp of the tokens; its queries attend to all of them") {
  TransformerSpec half = small_gpt();
  half.seq = 512;  // one of 2 ranks' part of small_gpt's 1024 tokens
  const std::vector<Op> whole = layer_ops(small_gpt(), 1, 1);
  const std::vector<Op> part = layer_ops(half, 1, 1, false, Attention::kFlash, Elementwise::kFused, 2);
  REQUIRE(part.size() == whole.size() + 1);  // the exchange before attention
  double whole_attention = 0.0, part_attention = 0.0, whole_gemm = 0.0, part_gemm = 0.0;
  for (const Op& op : whole) (op.kind == OpKind::kAttention ? whole_attention : whole_gemm) += op.flops_forward;
  for (const Op& op : part) (op.kind == OpKind::kAttention ? part_attention : part_gemm) += op.flops_forward;
  // Attention: 512 queries x 1024 keys, half of 1024 x 1024; the rest is per token: half.
  CHECK(part_attention == doctest::Approx(whole_attention / 2));
  CHECK(part_gemm == doctest::Approx(whole_gemm / 2));
  // The exchange carries this rank's K and V: 2 x 512 tokens x 1024 x 2 bytes.
  std::size_t at = 0;
  while (at < part.size() && part[at].kind != OpKind::kCpExchange) ++at;
  REQUIRE(at < part.size());
  const Op& exchange = part[at];
  CHECK(exchange.cp_kv_bytes == doctest::Approx(2.0 * 512 * 1024 * 2));
  CHECK(part[static_cast<std::size_t>(exchange.attention_op)].kind == OpKind::kAttention);
}

TEST_CASE("cp ranks: half the activations and sends, gradients reduced over dp x cp") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster();
  const StageCost one = stage_costs(m, plan(1), c).stages[0];
  const StageCost two = stage_costs(m, plan(2), c).stages[0];
  // Every activation term is per token (FlashAttention keeps no scores).
  CHECK(static_cast<double>(two.activation_bytes) == doctest::Approx(one.activation_bytes / 2.0).epsilon(1e-9));
  // The same parameters, reduced over 8 ranks either way (dp 8, or dp 4 x cp 2).
  CHECK(two.params == one.params);
  CHECK(two.grad_bucket_reduce == one.grad_bucket_reduce);
  // The plan's order: context ranks right after tensor ranks.
  const Plan p = plan(2);
  CHECK(p.replicas() == 8);
  CHECK(p.gpus() == 8);
  CHECK(p.gpu_of(0, 1, 0) == 1);  // data-parallel rank 0, context rank 1
  CHECK(p.microbatches() == 1);
}

TEST_CASE("the exchange: the ring hides behind attention, all-gather and all-to-all do not") {
  const TransformerSpec m = small_gpt();
  hw::ClusterSpec c = small_cluster();
  const StageCost ring = stage_costs(m, plan(2, CpAlgorithm::kRing), c).stages[0];
  const StageCost gather = stage_costs(m, plan(2, CpAlgorithm::kAllGather), c).stages[0];
  const StageCost a2a = stage_costs(m, plan(2, CpAlgorithm::kAllToAll), c).stages[0];
  // All-gather: the K/V of both ranks, 2 x 1 MiB, gathered over NVLink before
  // attention, on each of the 8 layers (the reduce-scatter of their gradients backward).
  const hw::CollectiveGroup pair = hw::group_of(c, {0, 1});
  const double kv = 2.0 * 512 * 1024 * 2;
  const double gathered = hw::collective_time(hw::CollectiveKind::kAllGather, 2 * kv, pair, c.node).to_seconds();
  CHECK(gather.cp_comm_forward.to_seconds() == doctest::Approx(8 * gathered).epsilon(1e-9));
  CHECK(a2a.cp_comm_forward > core::Time::zero());
  // The ring's one step, the same block passed on, waits only for what
  // attention on the local block (half the layer's attention) does not cover.
  CHECK(ring.cp_comm_forward < gather.cp_comm_forward);
  // Slow the link until the step outlasts attention: then the excess shows.
  c.node.nvlink_bus_gb_per_s = 0.5;
  c.node.nvlink_gb_per_s = 0.5;
  const StageCost slow = stage_costs(m, plan(2, CpAlgorithm::kRing), c).stages[0];
  CHECK(slow.cp_comm_forward > core::Time::zero());
  CHECK(slow.forward > ring.forward);
}

TEST_CASE("FP8 casts before the linear GEMMs leave the ring's exchange pointing at attention") {
  const TransformerSpec m = small_gpt();
  hw::ClusterSpec c = small_cluster();
  c.node.gpu.peak_fp8_tflops = 624;
  c.node.gpu.gemm_fp8_tflops = {{1024, 200}, {4096, 400}};
  c.node.gpu.gemm_fp8_max_tflops = 300;
  // Slow links, so that the ring's steps outlast attention's blocks and show.
  c.node.nvlink_bus_gb_per_s = 0.5;
  c.node.nvlink_gb_per_s = 0.5;
  Plan bf16 = plan(2);
  Plan fp8 = plan(2);
  fp8.precision = Precision::kFp8;
  // Attention stays BF16 and the exchange moves the same bytes: the same
  // exposure, which a stale index (the exchange taken for attention) would raise.
  const StageCost a = stage_costs(m, bf16, c).stages[0];
  const StageCost b = stage_costs(m, fp8, c).stages[0];
  CHECK(b.cp_comm_forward == a.cp_comm_forward);
  CHECK(b.cp_comm_backward == a.cp_comm_backward);
}

}  // namespace workload_context_parallel_test
