// parallel.attention "flash-v1" and "cudnn": the same fused work as
// FlashAttention-2, timed at the GPU's figures for that kernel.
#include <doctest/doctest.h>

#include "workload/op_cost.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_attention_kernels_test {

using namespace trainsim;
using namespace trainsim::workload;

TEST_CASE("every fused kernel does FlashAttention-2's work and holds its memory, marked with its kernel") {
  const TransformerSpec m = testing::small_gpt();
  const auto v2 = layer_ops(m, 2, 1, false, Attention::kFlash);
  const Op& a2 = testing::op_named(v2, "attention");
  CHECK(a2.attention_kernel == Attention::kFlash);
  // b 2, s 1024, h 1024: 4 b s^2 h = 8.59e9 FLOPs forward, twice that for I.
  CHECK(a2.flops_forward == doctest::Approx(4.0 * 2 * 1024.0 * 1024.0 * 1024.0));
  for (Attention kernel : {Attention::kFlashV1, Attention::kCudnn}) {
    const auto ops = layer_ops(m, 2, 1, false, kernel);
    REQUIRE(ops.size() == v2.size());
    const Op& a = testing::op_named(ops, "attention");
    CHECK(a.attention_kernel == kernel);
    CHECK(a.flops_forward == a2.flops_forward);
    CHECK(a.flops_input_grad == a2.flops_input_grad);
    CHECK(a.bytes_forward == a2.bytes_forward);
  }
}

TEST_CASE("an attention op runs at its kernel's curve, causal work counted as FlashAttention-2's") {
  hw::NodeSpec node = testing::small_cluster().node;  // FlashAttention-2: 160 TFLOP/s
  node.gpu.attention_v1_tflops = {{1024, 60}, {4096, 80}};
  node.gpu.attention_cudnn_tflops = {{2048, 256}};
  Op att;
  att.kind = OpKind::kAttention;
  att.flops_forward = 4.0 * 2048.0 * 2048.0 * 1024.0;  // b 1, s 2048, h 1024: 1.718e10
  att.flops_input_grad = 2.0 * att.flops_forward;
  auto seconds = [&](Attention kernel, Pass pass) {
    att.attention_kernel = kernel;
    return op_time(att, pass, node, 2048, hw::CollectiveGroup{}).compute_s;
  };
  // flash-v1: s 2048 sits halfway between 1024 and 4096 on a log scale, 60 + 20 / 2 = 70 TFLOP/s.
  // Forward: half the FLOPs (causal), 8.59e9 / 70e12 = 122.7 us; input grad 2.5 times that, 306.8 us.
  CHECK(seconds(Attention::kFlashV1, Pass::kForward) == doctest::Approx(0.5 * att.flops_forward / 70e12));
  CHECK(seconds(Attention::kFlashV1, Pass::kInputGrad) == doctest::Approx(2.5 * 0.5 * att.flops_forward / 70e12));
  // FlashAttention-2 at 160 TFLOP/s: 53.7 us; cuDNN at 256: 33.6 us, 160 / 256 of it.
  CHECK(seconds(Attention::kFlash, Pass::kForward) == doctest::Approx(0.5 * att.flops_forward / 160e12));
  CHECK(seconds(Attention::kCudnn, Pass::kForward) == doctest::Approx(0.5 * att.flops_forward / 256e12));
  CHECK(seconds(Attention::kCudnn, Pass::kForward) / seconds(Attention::kFlash, Pass::kForward) ==
        doctest::Approx(160.0 / 256.0));
}

}  // namespace workload_attention_kernels_test
