#include <doctest/doctest.h>

#include <stdexcept>

#include "workload/model_state_bytes.hpp"
#include "workload/stage_activations.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_stage_activations_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::core::Time;

TEST_CASE("a byte count rounds to the nearest byte and refuses what the tracker cannot hold") {
  CHECK(to_bytes(2.5) == 3);
  CHECK(to_bytes(1048576.0) == 1048576);
  CHECK_THROWS_AS(to_bytes(0x1p62), std::overflow_error);
}

TEST_CASE("a first stage recomputing every layer keeps their inputs and the embedding's dropout mask") {
  // small_gpt (s 1024, h 1024), micro-batch 1, tp 1: full recompute keeps
  // each layer's input, 2sbh = 2,097,152 bytes; the embedding's dropout mask
  // one byte a value, sbh = 1,048,576. 8 layers: 17 sbh = 17,825,792 bytes.
  // A layer recomputed holds for a while what it would have kept, 34 sbh
  // (Korthikanti et al.'s 10 + 24/t with FlashAttention), less what it keeps
  // anyway: 32 sbh = 33,554,432. No GEMM input is kept for W.
  const TransformerSpec model = small_gpt();
  const TransformerSpec dense = model.dense_part();
  Plan p;
  p.recompute = Recompute::kFull;
  const MoeLayout layout;
  StageCost c;
  const double kept = add_stage_activations(
      c, {.model = model,
          .local = model,
          .dense_model = dense,
          .plan = p,
          .moe_layout = layout,
          .layers = {.layers = 8, .redone = 8, .main = 8, .main_redone = 8, .first = true}});
  CHECK(c.activation_bytes == 17825792);
  CHECK(c.recompute_transient_bytes == 33554432);
  CHECK(kept == 0.0);
  CHECK(c.loss_forward_transient_bytes == 0);
}

TEST_CASE("the optimizer step streams its shard through HBM, or through the host's DRAM when offloaded") {
  hw::NodeSpec node = small_cluster(1).node;
  Plan p;
  p.zero_stage = 1;
  // BF16 gradients and FP32 moments: Adam's passes move 44 bytes a parameter.
  // 1,000,000 updated and 2,000,000 gradients of 2 bytes zeroed:
  // (44,000,000 + 4,000,000) / 1.6 TB/s = 30 us.
  CHECK(optimizer_step_time(p, node, 1e6, 2e6, 8e6, 2.0, 2.0, 4.0) == Time::seconds(30e-6));
  // Offloaded: 38 bytes a parameter with FP32 gradients, at 0.2 TB/s shared by
  // 8 GPUs (1,000,000 x 38 / 25 GB/s = 1.52 ms); the 2,000,000 bytes of
  // 16-bit weights back over PCIe at 25 GB/s (80 us); ZeRO-1's buffer of all
  // 8,000,000 gradients zeroed (16,000,000 bytes at 1.6 TB/s, 10 us).
  p.offload = Offload::kOptimizer;
  node.host_memory_tb_per_s = 0.2;
  node.pcie_gb_per_s = 25.0;
  CHECK(optimizer_step_time(p, node, 1e6, 2e6, 8e6, 2.0, 4.0, 4.0).to_seconds() ==
        doctest::Approx(1.52e-3 + 80e-6 + 10e-6).epsilon(1e-12));
}

TEST_CASE("a GPU's share of sharded parameters, and a copy over the host link") {
  // dp 8: 1,000,000 parameters sharded over 8 is 125,000. With ep 4 the
  // routed experts' 400,000 shard over 8 / 4 = 2 replicas of each expert:
  // 600,000 / 8 + 400,000 / 2 = 275,000.
  Plan p;
  p.dp = 8;
  p.zero_stage = 1;
  CHECK(sharded_share(p, 1e6, 0.0) == 125000.0);
  p.ep = 4;
  CHECK(sharded_share(p, 1e6, 4e5) == 275000.0);
  // Nothing crosses the host link without offloading; 2,000,000 bytes at 25 GB/s take 80 us.
  hw::NodeSpec node = small_cluster(1).node;
  node.pcie_gb_per_s = 25.0;
  CHECK(host_copy_seconds(p, node, 2e6) == 0.0);
  p.offload = Offload::kOptimizer;
  CHECK(host_copy_seconds(p, node, 2e6) == doctest::Approx(80e-6).epsilon(1e-12));
}

}  // namespace workload_stage_activations_test
