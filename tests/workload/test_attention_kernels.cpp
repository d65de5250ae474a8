// parallel.attention "flash-v1": FlashAttention's first generation, the same
// fused work as FlashAttention-2 timed at the GPU's FlashAttention-1 figures.
#include <doctest/doctest.h>

#include "workload/op_cost.hpp"
#include "small_setups.hpp"

using namespace trainsim;
using namespace trainsim::workload;

TEST_CASE("flash-v1 attention does FlashAttention-2's work and holds its memory, marked for the v1 figures") {
  const TransformerSpec m = testing::small_gpt();
  const auto v2 = layer_ops(m, 2, 1, false, Attention::kFlash);
  const auto v1 = layer_ops(m, 2, 1, false, Attention::kFlashV1);
  REQUIRE(v1.size() == v2.size());
  const Op& a2 = testing::op_named(v2, "attention");
  const Op& a1 = testing::op_named(v1, "attention");
  CHECK_FALSE(a2.flash_v1);
  CHECK(a1.flash_v1);
  // b 2, s 1024, h 1024: 4 b s^2 h = 8.59e9 FLOPs forward, twice that for I.
  CHECK(a1.flops_forward == doctest::Approx(4.0 * 2 * 1024.0 * 1024.0 * 1024.0));
  CHECK(a1.flops_forward == a2.flops_forward);
  CHECK(a1.flops_input_grad == a2.flops_input_grad);
  CHECK(a1.bytes_forward == a2.bytes_forward);
  // No op of the layer is marked but attention.
  for (const Op& op : v1) CHECK(op.flash_v1 == (op.name == "attention"));
}

TEST_CASE("a flash-v1 attention op runs at the GPU's FlashAttention-1 curve, causal work counted as FlashAttention-2's") {
  hw::NodeSpec node = testing::small_cluster().node;
  node.gpu.attention_v1_tflops = {{1024, 60}, {4096, 80}};
  Op att;
  att.kind = OpKind::kAttention;
  att.flops_forward = 4.0 * 2048.0 * 2048.0 * 1024.0;  // b 1, s 2048, h 1024: 1.718e10
  att.flops_input_grad = 2.0 * att.flops_forward;
  // s 2048 sits halfway between 1024 and 4096 on a log scale: 60 + 20 / 2 = 70 TFLOP/s.
  // Forward: half the FLOPs (causal), 8.59e9 / 70e12 = 122.7 us; input grad 2.5 times that, 306.8 us.
  att.flash_v1 = true;
  const double f1 = op_time(att, Pass::kForward, node, 2048, hw::CollectiveGroup{}).compute_s;
  const double i1 = op_time(att, Pass::kInputGrad, node, 2048, hw::CollectiveGroup{}).compute_s;
  CHECK(f1 == doctest::Approx(0.5 * att.flops_forward / 70e12));
  CHECK(i1 == doctest::Approx(2.5 * 0.5 * att.flops_forward / 70e12));
  // The same op on FlashAttention-2's curve (160 TFLOP/s): 53.7 us, 70 / 160 of the v1 time.
  att.flash_v1 = false;
  const double f2 = op_time(att, Pass::kForward, node, 2048, hw::CollectiveGroup{}).compute_s;
  CHECK(f2 == doctest::Approx(0.5 * att.flops_forward / 160e12));
  CHECK(f2 / f1 == doctest::Approx(70.0 / 160.0));
}
