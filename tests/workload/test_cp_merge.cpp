// PyTorch's context parallelism: the traffic of its eager merges and FP32
// gradient accumulation, and how much of its exchange attention's blocks hide.
#include <doctest/doctest.h>

#include <stdexcept>

#include "hw/collective.hpp"
#include "workload/cp_merge.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_cp_merge_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;

namespace {
// small_gpt on one node of 8 GPUs, cp 2 x dp 4, by `algorithm` and `merge`:
// stage 0's costs.
StageCost costs_cp2(CpAlgorithm algorithm, CpMerge merge) {
  Plan p;
  p.cp = 2;
  p.dp = 4;
  p.global_batch = 4;
  p.cp_algorithm = algorithm;
  p.cp_merge = merge;
  return stage_costs(small_gpt(), p, small_cluster()).stages[0];
}
}  // namespace

TEST_CASE("PyTorch's merges: bytes per output and K/V value, by blocks") {
  // cp 2, 1e6 output values, 2e6 K/V values.
  // Forward: casts 12 x 1e6; one later block: merge 38 x 1e6 + concatenation
  // 4 x 2e6 = 46e6; 58e6 in all.
  // Backward: (10 + 10 x 2) x 1e6 + (3 + 25 x 2) x 2e6 = 30e6 + 106e6 = 136e6.
  const CpMergeTraffic two = pytorch_cp_merge_traffic(1e6, 2e6, 2);
  CHECK(two.forward_bytes == doctest::Approx(58e6));
  CHECK(two.backward_bytes == doctest::Approx(136e6));
  CHECK(two.kernels == 16);  // 11 x 1 + 5
  // cp 8: forward 12e6 + 7 x 46e6 = 334e6; backward 90e6 + 203 x 2e6 = 496e6.
  const CpMergeTraffic eight = pytorch_cp_merge_traffic(1e6, 2e6, 8);
  CHECK(eight.forward_bytes == doctest::Approx(334e6));
  CHECK(eight.backward_bytes == doctest::Approx(496e6));
  // Fewer K/V values than output ones (grouped heads not copied out): the
  // first rank, which joins halves of dQ, is busier backward. cp 2, o 2e6,
  // kv 1e6: the last (10 + 20) x 2e6 + 53 x 1e6 = 113e6, the first
  // (7 + 26) x 2e6 + (6 + 44) x 1e6 = 116e6.
  CHECK(pytorch_cp_merge_traffic(2e6, 1e6, 2).backward_bytes == doctest::Approx(116e6));
  CHECK_THROWS_AS(pytorch_cp_merge_traffic(1e6, 2e6, 1), std::invalid_argument);
}

TEST_CASE("PyTorch's exchange: the gather beside the first block, dK/dV a block behind") {
  CpExchangeTimes t;
  t.gather_s = 5.0;
  t.kv_step_s = 3.0;
  t.grad_step_s = 3.0;
  t.attention_s = 8.0;
  // All-gather, cp 2: a block is 4 s. Forward 5 - 4 = 1. Backward the gather
  // again (1), the first dK/dV under the second block (3 < 4: 0), the last
  // alone (3): 4.
  CHECK(pytorch_cp_exposed_seconds(CpAlgorithm::kAllGather, true, 2, t) == doctest::Approx(1.0));
  CHECK(pytorch_cp_exposed_seconds(CpAlgorithm::kAllGather, false, 2, t) == doctest::Approx(4.0));
  // Ring, cp 4: a block is 2 s. Forward three steps of 3 - 2 = 1: 3. Backward:
  // the first block's K/V step (1), two blocks carrying a K/V step and a
  // dK/dV (3 + 1 - 2 = 2 each, with grad_step_s 1), the last block's dK/dV
  // (1 < 2: 0), the last dK/dV alone (1): 1 + 4 + 0 + 1 = 6.
  t.grad_step_s = 1.0;
  CHECK(pytorch_cp_exposed_seconds(CpAlgorithm::kRing, true, 4, t) == doctest::Approx(3.0));
  CHECK(pytorch_cp_exposed_seconds(CpAlgorithm::kRing, false, 4, t) == doctest::Approx(6.0));
  CHECK_THROWS_AS(pytorch_cp_exposed_seconds(CpAlgorithm::kAllToAll, true, 2, t), std::invalid_argument);
}

TEST_CASE("a layer under PyTorch's context parallelism: one merge op after attention") {
  TransformerSpec half = small_gpt();
  half.seq = 512;  // one of 2 ranks' part
  LayerCode code;
  code.cp_pytorch_merge = true;
  const std::vector<Op> fused = layer_ops(half, 1, 1, false, Attention::kFlash, Elementwise::kFused, 2);
  const std::vector<Op> pytorch =
      layer_ops(half, 1, 1, false, Attention::kFlash, Elementwise::kFused, 2, MoeLayout{}, code);
  REQUIRE(pytorch.size() == fused.size() + 1);
  std::size_t at = 0;
  while (at < pytorch.size() && pytorch[at].kind != OpKind::kAttention) ++at;
  REQUIRE(at + 1 < pytorch.size());
  const Op& merge = pytorch[at + 1];
  CHECK(merge.name == "context_parallel_merge");
  // small_gpt: 1024 wide, no grouped heads: output 512 x 1024 values, K and V twice that.
  const CpMergeTraffic expected = pytorch_cp_merge_traffic(512.0 * 1024, 2.0 * 512 * 1024, 2);
  CHECK(merge.bytes_forward == doctest::Approx(expected.forward_bytes));
  CHECK(merge.bytes_input_grad == doctest::Approx(expected.backward_bytes));
  CHECK(merge.attention_core);
}

TEST_CASE("PyTorch's all-gather hides behind the first block where the gather of Llama 3's cannot") {
  const StageCost fused = costs_cp2(CpAlgorithm::kAllGather, CpMerge::kFused);
  const StageCost pytorch = costs_cp2(CpAlgorithm::kAllGather, CpMerge::kPyTorch);
  CHECK(pytorch.cp_comm_forward < fused.cp_comm_forward);
  // The merges cost HBM time: more compute in each pass.
  CHECK(pytorch.forward - pytorch.cp_comm_forward > fused.forward - fused.cp_comm_forward);
  CHECK(pytorch.input_grad - pytorch.cp_comm_backward > fused.input_grad - fused.cp_comm_backward);
}

TEST_CASE("PyTorch's backward leaves its last dK/dV exposed, by either rotate method") {
  for (CpAlgorithm algorithm : {CpAlgorithm::kAllGather, CpAlgorithm::kRing}) {
    CAPTURE(static_cast<int>(algorithm));
    const StageCost pytorch = costs_cp2(algorithm, CpMerge::kPyTorch);
    // The last block's dK/dV (FP32: twice the K/V bytes) passed on with
    // nothing after it to hide behind: more than nothing on every layer.
    CHECK(pytorch.cp_comm_backward > core::Time::zero());
    const StageCost fused = costs_cp2(algorithm, CpMerge::kFused);
    if (algorithm == CpAlgorithm::kRing) CHECK(pytorch.cp_comm_backward > fused.cp_comm_backward);
  }
}

TEST_CASE("PyTorch's all-gather keeps no gathered K and V for the backward") {
  // small_gpt (8 layers, 1024 wide, no grouped heads), cp 2, nothing
  // recomputed: Llama 3's all-gather keeps the other rank's K and V on every
  // layer, 2 x 512 tokens x 1024 x 2 bytes = 2 MiB each, 16 MiB in all;
  // PyTorch's gathers them again in the backward.
  const StageCost fused = costs_cp2(CpAlgorithm::kAllGather, CpMerge::kFused);
  const StageCost pytorch = costs_cp2(CpAlgorithm::kAllGather, CpMerge::kPyTorch);
  CHECK(fused.activation_bytes - pytorch.activation_bytes == 8 * 2 * 512 * 1024 * 2);
}

TEST_CASE("what PyTorch's attention holds while it runs, beyond the activations") {
  // o 1e6, kv 2e6, cp 4. All-gather: every rank's K and V, 4 x 2 x 2e6 =
  // 16e6 bytes. Forward 16e6 + 4e6 (the concatenation) + 18e6 = 38e6;
  // backward 16e6 + 4e6 + (4e6 + 8e6) + (2e6 + 4e6) + 16e6 = 54e6, the larger.
  CHECK(pytorch_cp_transient_bytes(1e6, 2e6, 4, CpAlgorithm::kAllGather) == doctest::Approx(54e6));
  // Ring: two blocks' K and V, 8e6: backward 46e6.
  CHECK(pytorch_cp_transient_bytes(1e6, 2e6, 4, CpAlgorithm::kRing) == doctest::Approx(46e6));
  // Outputs far larger than K and V: the forward's merge decides. o 10e6,
  // kv 1e6, ring: forward 4e6 + 2e6 + 180e6 = 186e6, backward 4e6 + 2e6 +
  // 44e6 + 22e6 + 8e6 = 80e6.
  CHECK(pytorch_cp_transient_bytes(10e6, 1e6, 4, CpAlgorithm::kRing) == doctest::Approx(186e6));
  // small_gpt at cp 2 (all-gather): o = 512 x 1024 = 524,288 values, kv
  // twice that: backward 4,194,304 + 2,097,152 + 6,291,456 + 3,145,728 +
  // 8,388,608 = 24,117,248 bytes, above the forward's 15,728,640.
  CHECK(costs_cp2(CpAlgorithm::kAllGather, CpMerge::kPyTorch).attention_transient_bytes == 24'117'248);
  CHECK(costs_cp2(CpAlgorithm::kAllGather, CpMerge::kFused).attention_transient_bytes == 0);
}

TEST_CASE("Llama 3's all-gather keeps the copies of K and V that kv_repeat made, as it gathered them") {
  // small_gpt as a Llama with 16 heads of 64 and 4 K/V heads, cp 2, nothing
  // recomputed. Without copies a layer keeps the other rank's K and V,
  // 2 x 512 tokens x 256 x 2 bytes; with K and V copied out to every query
  // head first, 2 x 512 x 1024 x 2: 8 layers x 2 x 512 x 768 x 2 bytes more,
  // beside what the copies add to the activations themselves, the same
  // under PyTorch's merges, which keep no gathered K and V.
  TransformerSpec m = small_gpt();
  m.arch = Arch::kLlama;
  m.kv_heads = 4;
  const hw::ClusterSpec c = small_cluster();
  auto activations = [&](CpMerge merge, bool kv_repeat) {
    Plan p;
    p.cp = 2;
    p.dp = 4;
    p.global_batch = 4;
    p.cp_algorithm = CpAlgorithm::kAllGather;
    p.cp_merge = merge;
    p.kv_repeat = kv_repeat;
    return static_cast<double>(stage_costs(m, p, c).stages[0].activation_bytes);
  };
  const double copies_fused = activations(CpMerge::kFused, true) - activations(CpMerge::kFused, false);
  const double copies_pytorch = activations(CpMerge::kPyTorch, true) - activations(CpMerge::kPyTorch, false);
  CHECK(copies_fused - copies_pytorch == doctest::Approx(8.0 * 2 * 512 * 768 * 2));
}

}  // namespace workload_cp_merge_test
