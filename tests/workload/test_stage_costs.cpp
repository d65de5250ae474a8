#include <doctest/doctest.h>

#include "hw/gpu_spec.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"

using namespace trainsim;
using namespace trainsim::workload;

namespace {
hw::ClusterSpec cluster(int nodes) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  hw::NodeSpec& n = c.node;
  n.gpus_per_node = 8;
  n.nvlink_gb_per_s = 300;
  n.nvlink_bus_gb_per_s = 240;
  n.nics_per_node = 8;
  n.nic_gbit_per_s = 200;
  n.nic_bus_gb_per_s = 24;
  hw::GpuSpec& g = n.gpu;
  g.peak_tflops = 312;
  g.memory_gb = 80;
  g.hbm_tb_per_s = 2.039;
  g.hbm_achievable_tb_per_s = 1.6;
  g.gemm_tflops = {{1024, 100}, {4096, 200}};
  g.gemm_max_tflops = 150;
  g.attention_tflops = {{2048, 160}};
  return c;
}

TransformerSpec small_gpt() {
  TransformerSpec m;
  m.layers = 8;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4096;
  m.seq = 1024;
  m.vocab = 32000;
  return m;
}
}  // namespace

TEST_CASE("throughput curves interpolate in log size and clamp at the ends") {
  const std::vector<hw::ThroughputPoint> curve = {{1024, 100}, {4096, 200}};
  CHECK(hw::interpolate_tflops(curve, 512) == 100);
  CHECK(hw::interpolate_tflops(curve, 8192) == 200);
  // 2048 is halfway between 1024 and 4096 in log scale: 150.
  CHECK(hw::interpolate_tflops(curve, 2048) == doctest::Approx(150));
}

TEST_CASE("a GEMM is placed on the curve at the cube root of its volume, capped") {
  const hw::ClusterSpec c = cluster(1);
  // 1024 x 1024 x 1024: 100 TFLOP/s; 4096^3 would be 200 but the cap is 150.
  CHECK(gemm_flops_per_s(c.node.gpu, 1024, 1024, 1024) == doctest::Approx(100e12));
  CHECK(gemm_flops_per_s(c.node.gpu, 4096, 4096, 4096) == doctest::Approx(150e12));
  // 512 x 2048 x 1024 has the volume of 1024^3.
  CHECK(gemm_flops_per_s(c.node.gpu, 512, 2048, 1024) == doctest::Approx(100e12));
}

TEST_CASE("an element-wise op is bound by HBM bandwidth") {
  const hw::ClusterSpec c = cluster(1);
  Op op;
  op.kind = OpKind::kElementwise;
  op.bytes_forward = 1.6e9;  // 1.6e9 B / 1.6e12 B/s = 1 ms
  const OpTiming t = op_time(op, Pass::kForward, c.node, 1024, hw::CollectiveGroup{});
  CHECK(t.compute_s == doctest::Approx(1e-3));
}

TEST_CASE("model state is 16 bytes per parameter, split over tp and pp") {
  // 8 layers over pp = 2, tp = 2: stage 0 holds 4 layers + embedding, /2.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  const StageCosts costs = stage_costs(m, p, cluster(1));
  REQUIRE(costs.stages.size() == 2);
  const double stage0 = (4 * m.params_per_layer() + m.embedding_params()) / 2;
  CHECK(costs.stages[0].params == doctest::Approx(stage0));
  CHECK(costs.stages[0].model_state_bytes == doctest::Approx(16 * stage0).epsilon(1e-9));
  // Activations sent to the next stage: b s h * 2 bytes / tp = 1 * 1024 * 1024 * 2 / 2.
  CHECK(costs.stages[0].send_forward_bytes == doctest::Approx(1024.0 * 1024.0));
  CHECK(costs.stages[1].send_forward_bytes == 0);
  CHECK(costs.stages[0].send_backward_bytes == 0);
}

TEST_CASE("activation memory per layer follows Korthikanti Table 2") {
  // s b h (10 + 24/t + 5 a s / (h t)) with s = 1024, b = 2, h = 1024, a = 16, t = 2:
  // 2^21 * (10 + 12 + 5 * 16 * 1024 / 2048) = 2^21 * 62 bytes.
  CHECK(layer_activation_bytes(small_gpt(), 2, 2) == doctest::Approx(2097152.0 * 62));
}

TEST_CASE("costs grow with the work") {
  const TransformerSpec m = small_gpt();
  Plan p;
  p.pp = 2;
  p.tp = 1;
  p.dp = 1;
  p.global_batch = 4;
  const auto one = stage_costs(m, p, cluster(1));
  p.microbatch_size = 2;
  const auto two = stage_costs(m, p, cluster(1));
  CHECK(two.stages[0].forward > one.stages[0].forward);
  // B = I + W, and W is non-zero for a stage of GEMMs.
  CHECK(one.stages[0].weight_grad.ps() > 0);
  CHECK(one.stages[0].backward() == one.stages[0].input_grad + one.stages[0].weight_grad);
}
