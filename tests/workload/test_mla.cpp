// Multi-head Latent Attention (TransformerSpec::mla): its parameters, its
// ops, and what it keeps for the backward.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "workload/mla.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_mla_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::op_named;

namespace {
// A small DeepSeek-like attention: hidden 1024, 8 heads of 64 (+ 32 rotary
// for queries and keys, values of 64), q_lora 256, kv_lora 128; 1024 tokens.
TransformerSpec small_mla() {
  TransformerSpec m;
  m.arch = Arch::kLlama;
  m.layers = 2;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim_given = 64;
  m.ffn = 2048;
  m.seq = 1024;
  m.vocab = 32000;
  m.mla = {256, 128, 32, 64};
  return m;
}

}  // namespace

TEST_CASE("MLA's parameters: two down projections with their norms, two up projections, the output") {
  const TransformerSpec m = small_mla();
  // q: 1024 x 256 + 256 + 256 x 8 x (64 + 32); kv: 1024 x (128 + 32) + 128 +
  // 128 x 8 x (64 + 64); out: 8 x 64 x 1024. 1,278,336 in all.
  CHECK(mla_attention_params(m) == 1'278'336.0);
  // The layer: that, the SwiGLU MLP (3 x 1024 x 2048) and two RMSNorms.
  CHECK(m.params_per_layer() == 1'278'336.0 + 3.0 * 1024 * 2048 + 2.0 * 1024);
  double sum = 0.0;
  for (double n : m.layer_tensors(1)) sum += n;
  CHECK(sum == m.params_per_layer());
}

TEST_CASE("MLA's ops: the up projections and attention split over tp, the down projections whole") {
  const std::vector<Op> ops = layer_ops(small_mla(), 1, 2);
  CHECK(op_named(ops, "mla_q_down").n == 256);            // whole on every tensor rank
  CHECK(op_named(ops, "mla_q_up").n == 8 * 96 / 2);        // 4 of the 8 heads
  CHECK(op_named(ops, "mla_kv_down").n == 128 + 32);
  CHECK(op_named(ops, "mla_kv_up").n == 8 * 128 / 2);
  CHECK(op_named(ops, "attention_out_proj").k == 8 * 64 / 2);
  // QK^T over 96 values a head and the sum over 64: 2 x 1024^2 x 4 heads x 160.
  CHECK(op_named(ops, "attention").flops_forward == 2.0 * 1024 * 1024 * 4 * 160);
  for (const Op& op : ops) CHECK(op.name != "qkv_proj");
  // Attention runs by the plan's kernel: FlashAttention-2's by default, or cuDNN's.
  CHECK(op_named(ops, "attention").attention_kernel == Attention::kFlash);
  const std::vector<Op> cudnn = layer_ops(small_mla(), 1, 2, false, Attention::kCudnn);
  CHECK(op_named(cudnn, "attention").attention_kernel == Attention::kCudnn);
}

TEST_CASE("MLA with uncompressed queries (q_lora_rank 0): one query projection over tp") {
  // DeepSeek-V2-Lite's shape of MLA: wq 1024 -> 8 x (64 + 32) in place of the
  // down projection, its norm and the up projection.
  TransformerSpec m = small_mla();
  m.mla.q_lora_rank = 0;
  // q: 1024 x 768; kv and out as before: 1024 x 160 + 128 + 128 x 1024 +
  // 512 x 1024 = 819,328; 1,605,760 in all.
  CHECK(mla_attention_params(m) == 1024.0 * 768 + 819'328.0);
  double sum = 0.0;
  for (double n : m.layer_tensors(2)) sum += n;
  // Per tensor rank of tp 2: the query projection and both up projections
  // and the output halved, the kv down projection and its norm whole.
  CHECK(sum == 1024.0 + 1024.0 * 768 / 2 + 1024.0 * 160 + 128 + 128.0 * 1024 / 2 + 512.0 * 1024 / 2 + 1024 +
                   3.0 * 1024 * 2048 / 2);
  const std::vector<Op> ops = layer_ops(m, 1, 2);
  CHECK(op_named(ops, "mla_q").n == 8 * 96 / 2);
  CHECK(op_named(ops, "mla_q").k == 1024);
  CHECK(op_named(ops, "mla_q").modules == kModuleMlaUpProj);  // in Megatron-Core's up-projection checkpoint
  for (const Op& op : ops) {
    CHECK(op.name != "mla_q_down");
    CHECK(op.name != "mla_q_norm");
    CHECK(op.name != "mla_q_up");
  }
  // Its activations lose the compressed queries' 4 x 256 bytes a token
  // (the down projection's output and its norm's): what kv's keep is left.
  CHECK(mla_lowrank_activation_bytes(m) == 2.0 * (128 + 32) + 2.0 * 128);
}

TEST_CASE("MLA under per-op checkpointing: every other matmul kept, the MLP's parity set by attention's count") {
  // TorchTitan keeps the outputs of a block's 1st, 3rd, 5th... matmul. With
  // compressed queries attention has five (wq_a S, wq_b R, wkv_a S, wkv_b R,
  // wo S), so the MLP's w1 is the 6th (R), w3 the 7th (S), w2 the 8th (R);
  // without, four (wq S, wkv_a R, wkv_b S, wo R) and w1 S, w3 R, w2 S, as
  // after Llama's wq, wk, wv, wo.
  const TransformerSpec compressed = small_mla();
  TransformerSpec direct = small_mla();
  direct.mla.q_lora_rank = 0;
  CHECK(attention_matmuls(compressed) == 5);
  CHECK(attention_matmuls(direct) == 4);
  const auto check_redo = [](const TransformerSpec& m, const std::vector<std::pair<const char*, double>>& expected) {
    const std::vector<Op> ops = layer_ops(m, 1, 1);
    for (const auto& entry : expected) {  // no structured binding: doctest's CAPTURE is a lambda
      const char* name = entry.first;
      CAPTURE(name);
      CHECK(op_named(ops, name).op_sac_redo == entry.second);
    }
  };
  check_redo(compressed, {{"mla_q_down", 0.0}, {"mla_q_up", 1.0}, {"mla_kv_down", 0.0}, {"mla_kv_up", 1.0},
                          {"attention_out_proj", 0.0}, {"mlp_gate_up", 0.5}, {"mlp_down", 1.0}});
  check_redo(direct, {{"mla_q", 0.0}, {"mla_kv_down", 1.0}, {"mla_kv_up", 0.0}, {"attention_out_proj", 1.0},
                      {"mlp_gate_up", 0.5}, {"mlp_down", 0.0}});
  // Kept a token (1024 tokens, tp 1): the checkpoint's input 2 x 1024, then
  // compressed: wq_a's 2 x 256, wkv_a's 2 x (128 + 32), attention's 2 x 8 x
  // 64, wo's 2 x 1024, the MLP's w3's 2 x 2048: 2048 + 512 + 320 + 1024 +
  // 2048 + 4096 = 10,048; direct: wq's 2 x 8 x 96, wkv_b's 2 x 8 x 128,
  // attention's 2 x 8 x 64, w1's 2 x 2048 and w2's 2 x 1024: 2048 + 1536 +
  // 2048 + 1024 + 4096 + 2048 = 12,800.
  const auto kept = [](const TransformerSpec& m) {
    return layer_activation_bytes(m, 1, 1, Recompute::kSelectiveOp, false, Attention::kFlash, Elementwise::kFused,
                                  false);
  };
  CHECK(kept(compressed) == 1024.0 * 10048);
  CHECK(kept(direct) == 1024.0 * 12800);
}

TEST_CASE("MLA's norms and rotary embeddings as eager PyTorch runs them") {
  // 1024 tokens, tp 1. The input norm is read by two GEMMs (wq_a and wkv_a),
  // so its backward adds one gradient: 90 + 6 bytes a value over 1024 x 1024.
  const TransformerSpec m = small_mla();
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kEager);
  CHECK(op_named(ops, "input_norm").bytes_input_grad == 96.0 * 1024 * 1024);
  // The low-rank norms eager too (8 kernels, 32 bytes a value over 1024 x
  // 256 and 1024 x 128), the queries' rotary parts (8 heads x 32) in complex
  // FP32, 20 bytes a value, 6 kernels.
  CHECK(op_named(ops, "mla_q_norm").kernels == 8);
  CHECK(op_named(ops, "mla_q_norm").bytes_forward == 32.0 * 1024 * 256);
  CHECK(op_named(ops, "mla_kv_norm").bytes_forward == 32.0 * 1024 * 128);
  CHECK(op_named(ops, "mla_rotary_embedding").bytes_forward == 20.0 * 1024 * 8 * 32);
  CHECK(op_named(ops, "mla_rotary_embedding").kernels == 6);
  // Kept a token beyond the fused kernels' (no recompute): the norms' FP32
  // copies, 8 x 1024, the rotary parts' complex inputs 4 x 8 x 32, silu's
  // output 2 x 2048, the low-rank norms' FP32 copies 4 x (256 + 128):
  // 8192 + 1024 + 4096 + 1536 = 14,848.
  const auto kept = [&](Elementwise e) {
    return layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash, e, false);
  };
  CHECK(kept(Elementwise::kEager) - kept(Elementwise::kFused) == 1024.0 * 14848);
}

TEST_CASE("MLA with context parallelism: keys and values exchanged each at its own width") {
  // cp 2 on tp 2, 1024 tokens a rank: the keys (8 heads x (64 + 32)) and
  // values (8 x 64) of this rank's 4 heads, 1024 x 4 x 160 values, 2 bytes
  // each, 1,310,720 bytes; all-to-all moves its queries and output too, the
  // same widths. Attention runs this rank's queries against both parts' keys.
  const std::vector<Op> ops = layer_ops(small_mla(), 1, 2, false, Attention::kFlash, Elementwise::kFused, 2);
  const Op& exchange = op_named(ops, "context_parallel_exchange");
  CHECK(exchange.kind == OpKind::kCpExchange);
  CHECK(exchange.cp_kv_bytes == 1024.0 * 4 * 160 * 2);
  CHECK(exchange.cp_qo_bytes == 1024.0 * 4 * 160 * 2);
  CHECK(ops.at(static_cast<std::size_t>(exchange.attention_op)).name == "attention");
  CHECK(op_named(ops, "attention").flops_forward == 2.0 * 1024 * 2048 * 4 * 160);
  // Without context parallelism, no exchange.
  for (const Op& op : layer_ops(small_mla(), 1, 2)) CHECK(op.kind != OpKind::kCpExchange);
  // All-gather context parallelism keeps the other rank's keys and values for
  // attention's backward, on each of the 2 layers (no recompute): cp 2 x dp 4
  // on one node, 512 tokens a rank, 512 x 1,280 values x 2 bytes a layer,
  // 2,621,440 bytes more than the ring keeps.
  Plan p;
  p.cp = 2;
  p.dp = 4;
  p.global_batch = 4;
  auto activations = [&](CpAlgorithm algorithm) {
    p.cp_algorithm = algorithm;
    return stage_costs(small_mla(), p, testing::small_cluster(1)).stages[0].activation_bytes;
  };
  CHECK(activations(CpAlgorithm::kAllGather) - activations(CpAlgorithm::kRing) == 2 * 512 * 1280 * 2);
}

TEST_CASE("MLA keeps its low-rank tensors whole and Q, K, V on 1/tp of the heads; mla_up_proj drops the last") {
  const TransformerSpec m = small_mla();
  // Per token, beyond the norms' inputs and the MLP's: Q and K 2 x 768 each,
  // V and the attention output 2 x 512 each, over tp 2; the low-rank tensors
  // 2 x 256 + 2 x 256 + 2 x 160 + 2 x 128 whole.
  TransformerSpec no_mla = m;
  no_mla.mla = {};
  no_mla.head_dim_given = 0;  // standard attention of width h: Q, K, V, out of 1024 each
  const double with = layer_activation_bytes(m, 1, 2, Recompute::kNone, false, Attention::kFlash);
  const double without = layer_activation_bytes(no_mla, 1, 2, Recompute::kNone, false, Attention::kFlash);
  CHECK(with - without == doctest::Approx(1024.0 * ((4 * 768 + 4 * 512 - 4 * 1024 - 4 * 1024) / 2.0 + 1600)));
  // Recomputing the up projections: 1024 tokens x (4 x 768 + 2 x 512) / 2 fewer a layer.
  Plan p;
  p.dp = 4;
  p.tp = 2;
  p.global_batch = 4;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kModuleCoreAttn;
  const StageCost keep = stage_costs(m, p, testing::small_cluster()).stages[0];
  p.recompute_modules = kModuleCoreAttn | kModuleMlaUpProj;
  const StageCost redo = stage_costs(m, p, testing::small_cluster()).stages[0];
  CHECK(keep.activation_bytes - redo.activation_bytes == 2LL * 1024 * (4 * 768 + 2 * 512) / 2);
  CHECK(redo.input_grad > keep.input_grad);
}

}  // namespace workload_mla_test
