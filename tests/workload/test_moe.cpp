// Mixture of experts: the parameters a MoE layer has, the ops that replace
// its MLP, where its experts live under expert parallelism, and what the
// busiest expert's load costs.
#include <doctest/doctest.h>

#include "hw/collective.hpp"
#include "workload/fp8.hpp"
#include "workload/moe.hpp"
#include "workload/op_build.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_moe_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::op_named;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_moe;

namespace {
// small_moe on one 8-GPU node, data-parallel over all of them, ep experts ranks.
Plan plan(int ep) {
  Plan p;
  p.dp = 8;
  p.ep = ep;
  p.global_batch = 8;
  p.zero_stage = 1;
  return p;
}
}  // namespace

TEST_CASE("a MoE layer's parameters: attention, router, every routed expert, norms") {
  const TransformerSpec m = small_moe();
  // Routed experts: 8 x 3 x 1024 x 2048 = 50,331,648.
  CHECK(m.expert_params_per_layer() == 50'331'648.0);
  // Attention 1024 x 3072 + 1024 x 1024 = 4,194,304; router 1024 x 8 = 8,192;
  // two RMSNorms 2,048.
  CHECK(m.params_per_layer() == 4'194'304.0 + 8'192.0 + 50'331'648.0 + 2'048.0);
  // The tensor list adds up to the same.
  double sum = 0.0;
  for (double n : m.layer_tensors(1)) sum += n;
  CHECK(sum == m.params_per_layer());
  // A shared expert of width 512 adds 3 x 1024 x 512 outside the routed experts.
  TransformerSpec shared = m;
  shared.moe.shared_experts = 1;
  shared.moe.shared_expert_ffn = 512;
  CHECK(shared.params_per_layer() - m.params_per_layer() == 1'572'864.0);
  CHECK(shared.expert_params_per_layer() == m.expert_params_per_layer());
}

TEST_CASE("the MoE block: router, top_k copies of each token to ep ranks and back, grouped expert GEMMs") {
  const TransformerSpec m = small_moe();
  MoeLayout layout;
  layout.ep = 4;
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout);
  // 1024 tokens, 2 copies each: 2048 expert inputs on a rank (balanced: a
  // rank receives as many copies as it sends), over its 8 / 4 = 2 experts.
  const Op& up = op_named(ops, "moe_experts_gate_up");
  CHECK(up.m == 2048);
  CHECK(up.k == 1024);
  CHECK(up.n == 4096);  // gate and up, 2 x 2048
  CHECK(up.gemm_groups == 2);
  CHECK(up.flops_forward == 2.0 * 2048 * 1024 * 4096);
  const Op& down = op_named(ops, "moe_experts_down");
  CHECK(down.m == 2048);
  CHECK(down.k == 2048);
  CHECK(down.n == 1024);
  CHECK(op_named(ops, "moe_router").n == 8);
  // Dispatch and combine each move the 2048 copies of 1024 values, 2 bytes
  // each, one all-to-all forward and one backward.
  for (const char* name : {"moe_dispatch", "moe_combine"}) {
    const Op& a2a = op_named(ops, name);
    CHECK(a2a.kind == OpKind::kEpDispatch);
    CHECK(a2a.ep_bytes == 2048.0 * 1024 * 2);
    CHECK(a2a.ep_forward == 1);
    CHECK(a2a.ep_input_grad == 1);
    CHECK(a2a.ep_exchange == EpExchange::kAllToAll);
  }
  // No MLP of a dense layer, no dispatch without expert parallelism.
  for (const Op& op : ops) CHECK(op.name != "mlp_gate_up");
  for (const Op& op : layer_ops(m, 1, 1)) CHECK(op.kind != OpKind::kEpDispatch);
  // The all-gather dispatcher gathers every rank's 1024 tokens whole: 4 x 1024 x 1024 x 2 bytes.
  layout.dispatcher = MoeDispatcher::kAllGather;
  const std::vector<Op> gathered = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout);
  CHECK(op_named(gathered, "moe_dispatch").ep_bytes == 4.0 * 1024 * 1024 * 2);
  CHECK(op_named(gathered, "moe_dispatch").ep_exchange == EpExchange::kGather);
  CHECK(op_named(gathered, "moe_combine").ep_exchange == EpExchange::kScatter);
}

TEST_CASE("per-op checkpointing of a MoE block: the experts' grouped GEMMs and SwiGLU redone, the exchanges kept") {
  // TorchTitan's per-op save list keeps matmuls (every other one of a block)
  // and the all-to-alls' outputs, not grouped GEMMs: the experts' gate/up and
  // down and SwiGLU are redone before the backward, the exchanges are not;
  // the router's gate is recomputed by default (force_recompute_mm_shapes_by_fqns
  // ["moe.router.gate"]) and left out of the matmul count.
  const TransformerSpec m = small_moe();
  MoeLayout layout;
  layout.ep = 4;
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout);
  for (const char* name : {"moe_experts_gate_up", "moe_experts_swiglu", "moe_experts_down"}) {
    CAPTURE(name);
    CHECK(op_named(ops, name).op_sac_redo == 1.0);
  }
  CHECK(op_named(ops, "moe_router").op_sac_redo == 1.0);
  for (const char* name : {"moe_dispatch", "moe_combine"}) {
    CAPTURE(name);
    CHECK(op_named(ops, name).op_sac_redo == 0.0);
  }
  // Kept a routed token (h 1024, f 2048, 8 experts, top 2): the router's
  // FP32 scores, 4 x 8 = 32, and per copy its input and output, 2 x 1024 +
  // 2 x 1024, and unless redone the gate and up outputs and SwiGLU's, 4 x
  // 2048 + 2 x 2048: 32 + 2 x (4096 + 12288) = 32,800 kept whole. Under
  // per-op checkpointing top-k's outputs (FP32 scores and int64 indices, 12
  // bytes a chosen expert) for the router's: 12 x 2 + 2 x 4096 = 8,216.
  CHECK(moe_activation_bytes_per_token(m, layout) == 32800.0);
  CHECK(moe_activation_bytes_per_token(m, layout, true) == 8216.0);
  // A shared expert of 2048 (run after the routed ones, its matmuls the
  // block's 5th to 7th after attention's four): w1 kept, w3 redone, w2 kept;
  // the block keeps 6 x 2048 bytes a token of it, 2 x 2048 (w1's output)
  // under per-op checkpointing (w2's, 2h, counted with the attention block's).
  TransformerSpec shared = m;
  shared.moe.shared_experts = 1;
  shared.moe.shared_expert_ffn = 2048;
  const std::vector<Op> with_shared = layer_ops(shared, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout);
  CHECK(op_named(with_shared, "moe_shared_gate_up").op_sac_redo == 0.5);
  CHECK(op_named(with_shared, "moe_shared_down").op_sac_redo == 0.0);
  CHECK(moe_activation_bytes_per_token(shared, layout) == 32800.0 + 6 * 2048);
  CHECK(moe_activation_bytes_per_token(shared, layout, true) == 8216.0 + 2 * 2048);
  // A stage of 8 such layers on dp 8, ep 4 keeps at least 8 x 1024 tokens x
  // (32,800 - 8,216) bytes less than without checkpointing.
  Plan none = plan(4), op = plan(4);
  op.recompute = Recompute::kSelectiveOp;
  const hw::ClusterSpec c = small_cluster();
  const StageCost kept = stage_costs(m, none, c).stages[0], checkpointed = stage_costs(m, op, c).stages[0];
  CHECK(static_cast<double>(kept.activation_bytes - checkpointed.activation_bytes) >= 8.0 * 1024 * (32800 - 8216));
  // I grows by each op's redone share of its forward time (the experts'
  // grouped GEMMs and SwiGLU whole, the router's gate, attention's wk and wo,
  // the norms...),
  // on each of the 8 layers.
  const auto one = hw::group_of(c, {0});
  double redo = 0.0;
  for (const Op& o : ops) redo += o.op_sac_redo * op_time(o, Pass::kForward, c.node, m.seq, one).compute_s;
  double experts = 0.0;
  for (const char* name : {"moe_experts_gate_up", "moe_experts_swiglu", "moe_experts_down"}) {
    experts += op_time(op_named(ops, name), Pass::kForward, c.node, m.seq, one).compute_s;
  }
  CHECK(experts > 0.0);
  CHECK(checkpointed.input_grad.to_seconds() - kept.input_grad.to_seconds() == doctest::Approx(8 * redo).epsilon(1e-9));
}

TEST_CASE("DeepEP sends a token once to each other node that holds any of its experts") {
  // 8 experts, top 2, on 2 nodes of 4 experts each: the other node holds
  // none of a token's two with probability C(4,2) / C(8,2) = 6 / 28, so it
  // gets a copy with 22 / 28; the all-to-all sends 2 x 1/2 copies there.
  CHECK(deepep_network_share(8, 2, 2) == doctest::Approx(22.0 / 28.0));
  // Qwen3's 128 experts, top 8, over 4 nodes: 3 x (1 - C(96,8)/C(128,8))
  // nodes a token against 8 x 3/4 copies.
  double none = 1.0;
  for (int i = 0; i < 8; ++i) none *= (96.0 - i) / (128.0 - i);
  CHECK(deepep_network_share(128, 8, 4) == doctest::Approx(3.0 * (1.0 - none) / 6.0));
  CHECK(deepep_network_share(128, 8, 1) == 1.0);
  // Every expert on its own node (E = N): a copy an expert either way.
  CHECK(deepep_network_share(8, 2, 8) == doctest::Approx(1.0));
}

TEST_CASE("DeepEP's dispatch is cheaper than the all-to-all across nodes, the same within one") {
  TransformerSpec m = small_moe();
  m.moe.experts = 16;
  const hw::ClusterSpec two = small_cluster(2);
  auto cost = [&](int ep, MoeDispatcher d) {
    Plan p = plan(ep);
    p.dp = 16;
    p.global_batch = 16;
    p.moe_dispatcher = d;
    return stage_costs(m, p, two).stages[0].ep_comm_forward;
  };
  CHECK(cost(16, MoeDispatcher::kDeepEp) < cost(16, MoeDispatcher::kAllToAll));
  CHECK(cost(8, MoeDispatcher::kDeepEp) == cost(8, MoeDispatcher::kAllToAll));
}

TEST_CASE("model FLOPs count the active experts: top_k of them, not all") {
  TransformerSpec m = small_moe();
  const double two = model_flops(m, 1.0);
  m.moe.top_k = 4;
  const double four = model_flops(m, 1.0);
  // Two more expert visits a token: 2 x (3 GEMMs of 2 x 1024 x 2048) x 3
  // passes (F, I, W) x 1024 tokens x 8 layers.
  CHECK(four - two == doctest::Approx(2.0 * 3.0 * 2.0 * 1024 * 2048 * 3.0 * 1024 * 8).epsilon(1e-12));
}

TEST_CASE("a grouped GEMM runs each expert's GEMM at its own shape's rate") {
  const hw::ClusterSpec c = small_cluster();
  const Op grouped = build::grouped_gemm("g", 2048, 1024, 1024, 2);
  // Two weights of 1024 x 1024 read: (2048 + 2 x 1024 + 2048) x 1024 x 2 bytes.
  CHECK(grouped.bytes_forward == (2048.0 + 2 * 1024 + 2048) * 1024 * 2);
  // Two 1024-cubed GEMMs: small_cluster's 100 TFLOP/s at 1024, so
  // 2 x 2048 x 1024 x 1024 / 1e14 s; memory (those bytes at 1.6 TB/s,
  // 7.9 us) is below it.
  const double t = op_time(grouped, Pass::kForward, c.node, 1024, hw::CollectiveGroup{}).compute_s;
  CHECK(t == doctest::Approx(2.0 * 2048 * 1024 * 1024 / 1e14).epsilon(1e-12));
  // One GEMM of 2048 rows sits higher on the curve: faster.
  Op single = build::gemm("g", 2048, 1024, 1024);
  CHECK(op_time(single, Pass::kForward, c.node, 1024, hw::CollectiveGroup{}).compute_s < t);
}

TEST_CASE("expert parallelism: each GPU holds experts / ep, reduced and sharded over the rest") {
  const TransformerSpec m = small_moe();
  const hw::ClusterSpec c = small_cluster();
  const StageCost e1 = stage_costs(m, plan(1), c).stages[0];
  const StageCost e4 = stage_costs(m, plan(4), c).stages[0];
  // 8 layers of 50,331,648 expert parameters: all on every GPU with ep 1, a quarter with ep 4.
  CHECK(e1.expert_params == 8.0 * 50'331'648);
  CHECK(e4.expert_params == 2.0 * 50'331'648);
  CHECK(e1.params - e1.expert_params == doctest::Approx(e4.params - e4.expert_params));
  // ZeRO-1, BF16 gradients (2 + 2 + 12/d bytes a parameter): dense over dp 8,
  // experts over edp = 8 / 4 = 2.
  const double dense = e4.params - e4.expert_params;
  CHECK(static_cast<double>(e4.model_state_bytes) ==
        doctest::Approx(dense * (4.0 + 12.0 / 8) + e4.expert_params * (4.0 + 12.0 / 2)).epsilon(1e-9));
  // Dispatch and combine appear with ep > 1 only, in forward and backward.
  CHECK(e1.ep_comm_forward == core::Time::zero());
  CHECK(e4.ep_comm_forward > core::Time::zero());
  CHECK(e4.ep_comm_backward > core::Time::zero());
  // The same expert FLOPs over 2 experts a GPU, not 8: each expert GEMM 4x taller, so faster.
  CHECK(e4.forward - e4.ep_comm_forward < e1.forward);
}

TEST_CASE("the busiest rank's load scales its experts' work and traffic; a capacity factor sets it") {
  const TransformerSpec m = small_moe();
  const hw::ClusterSpec c = small_cluster();
  Plan balanced = plan(4);
  Plan skewed = plan(4);
  skewed.moe_imbalance = 2.0;
  MoeLayout twice;
  twice.ep = 4;
  twice.load = 2.0;
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, twice);
  CHECK(op_named(ops, "moe_experts_gate_up").m == 4096);  // 2 x the 2048 copies
  CHECK(op_named(ops, "moe_dispatch").ep_bytes == 4096.0 * 1024 * 2);
  CHECK(stage_costs(m, skewed, c).stages[0].forward > stage_costs(m, balanced, c).stages[0].forward);
  // Padded to capacity 2: the same as a load of 2, whatever the imbalance says.
  TransformerSpec capped = m;
  capped.moe.capacity_factor = 2.0;
  CHECK(stage_costs(capped, balanced, c).stages[0].forward == stage_costs(m, skewed, c).stages[0].forward);
}

TEST_CASE("heads wider than hidden / heads: Qwen3's 64 heads of 128 on 4096") {
  TransformerSpec m;
  m.arch = Arch::kLlama;
  m.layers = 1;
  m.hidden = 4096;
  m.heads = 64;
  m.kv_heads = 4;
  m.head_dim_given = 128;
  m.ffn = 1;
  m.seq = 4096;
  m.vocab = 1;
  CHECK(m.q_dim() == 8192);
  const std::vector<Op> ops = layer_ops(m, 1, 1);
  // Q, K, V: 8192 + 2 x 4 x 128 columns; the output projection reads 8192.
  CHECK(op_named(ops, "qkv_proj").n == 8192 + 1024);
  CHECK(op_named(ops, "attention_out_proj").k == 8192);
  // Attention scores and sums over 64 x 128 = 8192 values a token: 4 x 4096^2 x 8192.
  CHECK(op_named(ops, "attention").flops_forward == 4.0 * 4096 * 4096 * 8192);
  // Parameters: 4096 x (8192 + 1024) + 8192 x 4096, and the MLP and norms.
  CHECK(m.params_per_layer() == 4096.0 * 9216 + 8192.0 * 4096 + 3.0 * 4096 + 2.0 * 4096);
  // QK-norm: one more element-wise op, and 2 x 128 weights.
  m.qk_norm = true;
  CHECK(op_named(layer_ops(m, 1, 1), "qk_norm").kind == OpKind::kElementwise);
  CHECK(m.params_per_layer() == 4096.0 * 9216 + 8192.0 * 4096 + 3.0 * 4096 + 2.0 * 4096 + 256.0);
}

TEST_CASE("dense layers in a MoE model: DeepSeek's first k, and every n-th layer a MoE one") {
  TransformerSpec m = small_moe();
  m.ffn = 4096;
  m.moe.dense_layers = 2;
  // Layers 0-1 dense, 2-7 MoE.
  CHECK_FALSE(m.moe.is_moe_layer(1));
  CHECK(m.moe.is_moe_layer(2));
  CHECK(m.moe_layers_in(0, 8) == 6);
  CHECK(m.moe_layers_in(0, 4) == 2);
  // layer_freq 2: of the layers after the dense ones, those of even index
  // (counted from 0, as Hugging Face's DeepSeek counts): 2, 4, 6; with one
  // dense layer still 2, 4, 6, not 1, 3, 5, 7.
  TransformerSpec every_other = m;
  every_other.moe.layer_freq = 2;
  CHECK(every_other.moe_layers_in(0, 8) == 3);
  CHECK_FALSE(every_other.moe.is_moe_layer(3));
  every_other.moe.dense_layers = 1;
  CHECK(every_other.moe_layers_in(0, 8) == 3);
  CHECK_FALSE(every_other.moe.is_moe_layer(1));
  // Parameters: 6 MoE layers and 2 dense ones (attention 4,194,304 + SwiGLU
  // 3 x 1024 x 4096 + norms 2,048), with the embedding and the head.
  const double dense_layer = 4'194'304.0 + 3.0 * 1024 * 4096 + 2'048.0;
  CHECK(m.dense_part().params_per_layer() == dense_layer);
  CHECK(m.total_params() == 6 * m.params_per_layer() + 2 * dense_layer + m.embedding_params() + m.head_params());
  // Model FLOPs: 6 MoE layers and 2 dense ones. With A the all-MoE model and
  // D the all-dense one (same embedding and head), a MoE layer costs
  // (F(A) - F(D)) / 8 more than a dense one, so F = F(D) + 6 (F(A) - F(D)) / 8.
  const double all_moe = model_flops(small_moe(), 1.0), all_dense = model_flops(m.dense_part(), 1.0);
  CHECK(model_flops(m, 1.0) == doctest::Approx(all_dense + 6 * (all_moe - all_dense) / 8).epsilon(1e-12));
  // Two stages of 4 layers: the first holds both dense layers and 2 MoE ones,
  // the second 4 MoE; the first holds fewer routed experts.
  Plan p = plan(4);
  p.pp = 2;
  p.dp = 4;
  p.global_batch = 4;
  const StageCosts costs = stage_costs(m, p, small_cluster(1));
  // tp x dp = 4 GPUs a stage, ep 4: 2 experts a GPU a MoE layer.
  CHECK(costs.stages[0].expert_params == 2.0 * 2 * 3 * 1024 * 2048);
  CHECK(costs.stages[1].expert_params == 4.0 * 2 * 3 * 1024 * 2048);
}

TEST_CASE("FP8 with experts: the experts' grouped GEMMs in FP8 behind casts of every expert's weight; the router not") {
  const TransformerSpec m = small_moe();
  MoeLayout layout;
  layout.ep = 4;
  const std::vector<Op> ops =
      with_fp8(layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout), Fp8Recipe::kBlockwise, Fp8Library::kTransformerEngine);
  CHECK_FALSE(op_named(ops, "moe_router").fp8);
  for (const Op& op : ops) CHECK(op.name != "moe_router_fp8_cast");
  CHECK(op_named(ops, "moe_experts_gate_up").fp8);
  // Blockwise: 4 bytes a value of the input and of dY; the weights are cast
  // once an iteration, not here. 2048 copies x 1024 in, 2048 x 4096 out.
  const Op& cast = op_named(ops, "moe_experts_gate_up_fp8_cast");
  CHECK(cast.bytes_forward == 4.0 * 2048 * 1024);
  CHECK(cast.bytes_input_grad == 4.0 * 2048 * 4096);
  // Tensorwise casts the weights each micro-batch: both of the rank's 2
  // experts' 1024 x 4096 weights (an amax pass and a cast forward, 2 + 3
  // bytes a value, as torchao counts), beside 6 a value of the input.
  const std::vector<Op> tensorwise =
      with_fp8(layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout), Fp8Recipe::kTensorwise, Fp8Library::kTorchao);
  CHECK(op_named(tensorwise, "moe_experts_gate_up_fp8_cast").bytes_forward == 6.0 * 2048 * 1024 + 5.0 * 2 * 1024 * 4096);
}

TEST_CASE("the experts keep their GEMMs' inputs: in FP8 under Transformer Engine's recipes, and W does not take them twice") {
  // small_moe, one stage of 8 MoE layers, ep 4, no recompute: each layer's
  // experts see 1024 tokens x top 2 = 2048 copies. Widening every expert by
  // 1024 adds to a layer's kept activations the copies' gate/up outputs and
  // SwiGLU's output, 2048 x (4 + 2) x 1024 bytes; under blockwise FP8
  // SwiGLU's output (the second GEMM's input) is kept in one byte a value,
  // 2048 x 1 x 1024 fewer. What W already holds of its operands when I
  // starts grows by that input, 2048 x 2 x 1024 a layer in BF16, half in FP8.
  TransformerSpec m = small_moe();
  Plan p = plan(4);
  hw::ClusterSpec c = small_cluster(1);
  c.node.gpu.peak_fp8_tflops = 624;
  c.node.gpu.gemm_fp8_tflops = {{1024, 200}, {4096, 400}};
  auto stage = [&](int expert_ffn, Precision precision) {
    m.moe.expert_ffn = expert_ffn;
    p.precision = precision;
    p.fp8_recipe = Fp8Recipe::kBlockwise;
    return stage_costs(m, p, c).stages[0];
  };
  const double copies = 2048.0, layers = 8.0, wider = 1024.0;
  const StageCost bf16 = stage(2048, Precision::kBf16), bf16_wide = stage(3072, Precision::kBf16);
  const StageCost fp8 = stage(2048, Precision::kFp8), fp8_wide = stage(3072, Precision::kFp8);
  CHECK(bf16_wide.activation_bytes - bf16.activation_bytes == static_cast<std::int64_t>(layers * copies * 6.0 * wider));
  CHECK(fp8_wide.activation_bytes - fp8.activation_bytes == static_cast<std::int64_t>(layers * copies * 5.0 * wider));
  CHECK(bf16_wide.weight_grad_kept_bytes - bf16.weight_grad_kept_bytes ==
        static_cast<std::int64_t>(layers * copies * 2.0 * wider));
  CHECK(fp8_wide.weight_grad_kept_bytes - fp8.weight_grad_kept_bytes ==
        static_cast<std::int64_t>(layers * copies * 1.0 * wider));
}

TEST_CASE("ZeRO-3 with experts: a layer a unit, its experts gathered and scattered over edp, the rest over dp") {
  // small_moe on 8 GPUs, dp 8, ep 4: edp 8 / 4 = 2, the GPUs holding the
  // same experts (GPU j with j + 4). A layer on one GPU: attention 4 x 1024
  // x 1024 = 4,194,304, the router 1024 x 8 = 8,192, two norms 2,048 (all
  // sharded over dp 8), and its 2 of the 8 experts, 2 x 3 x 1024 x 2048 =
  // 12,582,912 (sharded over edp 2): 16,787,456 a unit.
  const TransformerSpec m = small_moe();
  Plan p = plan(4);
  p.zero_stage = 3;
  const hw::ClusterSpec c = small_cluster(1);
  const StageCost s = stage_costs(m, p, c).stages[0];
  REQUIRE(s.shard_units.size() == 10);  // the embedding, 8 layers, the head
  const ShardUnit& u = s.shard_units[1];
  CHECK(u.layers == 1);
  CHECK(u.params == 16787456.0);
  CHECK(u.gather_bytes == 2.0 * 16787456.0);
  // The gather: 2 x 4,204,544 bytes over dp's 8 GPUs, then 2 x 12,582,912
  // over the pair {0, 4}; the scatter the same in BF16 gradients.
  const hw::CollectiveGroup dp = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7}), edp = hw::group_of(c, {0, 4});
  CHECK(u.gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 4204544.0, dp, c.node) +
                        hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 12582912.0, edp, c.node));
  CHECK(u.grad_scatter == hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 4204544.0, dp, c.node) +
                              hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 12582912.0, edp, c.node));
  // The experts' part of each, for flow collectives to run on its own.
  CHECK(u.gather_expert_bytes == 2.0 * 12582912.0);
  CHECK(u.grad_expert_bytes == 2.0 * 12582912.0);
  CHECK(u.gather_experts == hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 12582912.0, edp, c.node));
  CHECK(u.grad_scatter_experts ==
        hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 12582912.0, edp, c.node));
  // A dense unit (the embedding) gathers over dp alone.
  CHECK(s.shard_units[0].gather_expert_bytes == 0.0);
  CHECK(s.shard_units[0].gather ==
        hw::collective_time(hw::CollectiveKind::kAllGather, s.shard_units[0].gather_bytes, dp, c.node));
}

TEST_CASE("HSDP with experts: the experts shard over their edp group's part of a shard group, copied across groups") {
  // small_moe on 2 nodes of 8, dp 16, ep 4, ZeRO-3 in shard groups of 8
  // (one node each, 2 copies): edp 16 / 4 = 4 GPUs hold the same experts,
  // GPU 0's {0, 4, 8, 12}; its shard group's part {0, 4} shards them (2 of
  // them: Plan::expert_shard_group_size), {0, 8} hold copies of one shard.
  // A layer's unit: 4,204,544 dense parameters sharded over the node's 8,
  // 12,582,912 of experts over 2.
  const TransformerSpec m = small_moe();
  Plan p = plan(4);
  p.dp = 16;
  p.global_batch = 16;
  p.zero_stage = 3;
  p.fsdp_shard_size = 8;
  CHECK(p.expert_shard_group_size() == 2);
  const hw::ClusterSpec c = small_cluster(2);
  const StageCost s = stage_costs(m, p, c).stages[0];
  const ShardUnit& u = s.shard_units[1];
  CHECK(u.params == 16787456.0);
  const hw::CollectiveGroup node0 = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7}), shard = hw::group_of(c, {0, 4}),
                            across = hw::group_of(c, {0, 8});
  CHECK(u.gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 4204544.0, node0, c.node) +
                        hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 12582912.0, shard, c.node));
  CHECK(u.grad_scatter == hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 4204544.0, node0, c.node) +
                              hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 12582912.0, shard, c.node));
  // Each shard all-reduced with its copy on the other node: the dense one
  // (2 x 4,204,544 / 8 bytes), then the experts' (2 x 12,582,912 / 2).
  const core::Time experts = hw::collective_time(hw::CollectiveKind::kAllReduce, 12582912.0, across, c.node);
  CHECK(u.grad_replicate_experts == experts);
  CHECK(u.grad_replicate ==
        hw::collective_time(hw::CollectiveKind::kAllReduce, 2.0 * 4204544.0 / 8, across, c.node) + experts);
  // Model state (BF16 weights and gradients, Adam's 12 bytes; all sharded
  // under ZeRO-3): 16 bytes a parameter over 8 for the rest, over 2 for the experts.
  const double dense = s.params - s.expert_params;
  CHECK(static_cast<double>(s.model_state_bytes) ==
        doctest::Approx(dense * 16.0 / 8 + s.expert_params * 16.0 / 2).epsilon(1e-9));
}

TEST_CASE("ZeRO-3 of a MoE model with dense layers: a dense layer's unit its own parameters and times, over dp alone") {
  // small_moe with its first 2 layers dense (SwiGLU 4096 wide), on 8 GPUs,
  // dp 8, ep 4. A dense layer on one GPU: attention 4,194,304, SwiGLU 3 x
  // 1024 x 4096 = 12,582,912, norms 2,048, all sharded over dp 8:
  // 16,779,264 a unit. A MoE layer's unit as in the case above, 16,787,456.
  TransformerSpec m = small_moe();
  m.ffn = 4096;
  m.moe.dense_layers = 2;
  Plan p = plan(4);
  p.zero_stage = 3;
  const hw::ClusterSpec c = small_cluster(1);
  const StageCost s = stage_costs(m, p, c).stages[0];
  REQUIRE(s.shard_units.size() == 10);  // the embedding, 2 dense layers, 6 MoE layers, the head
  const ShardUnit& dense = s.shard_units[1];
  const ShardUnit& moe = s.shard_units[3];
  CHECK(dense.layers == 1);
  CHECK(dense.params == 16779264.0);
  CHECK(moe.params == 16787456.0);
  // The dense unit's gather and scatter run over dp alone (no experts).
  const hw::CollectiveGroup dp = hw::group_of(c, {0, 1, 2, 3, 4, 5, 6, 7}), edp = hw::group_of(c, {0, 4});
  CHECK(dense.gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 16779264.0, dp, c.node));
  CHECK(dense.grad_scatter == hw::collective_time(hw::CollectiveKind::kReduceScatter, 2.0 * 16779264.0, dp, c.node));
  CHECK(moe.gather == hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 4204544.0, dp, c.node) +
                          hw::collective_time(hw::CollectiveKind::kAllGather, 2.0 * 12582912.0, edp, c.node));
  // The units hold the stage's parameters between them (no persistent ones).
  double params = 0.0;
  for (const ShardUnit& u : s.shard_units) params += u.params;
  CHECK(params == doctest::Approx(s.params).epsilon(1e-12));
  // Each unit's share of the forward is its own layer's time: the two dense
  // units the same share, the six MoE units another, and all ten add to 1.
  CHECK(s.shard_units[1].forward_share == s.shard_units[2].forward_share);
  CHECK(s.shard_units[3].forward_share == s.shard_units[8].forward_share);
  CHECK(s.shard_units[1].forward_share != s.shard_units[3].forward_share);
  double forward = 0.0;
  for (const ShardUnit& u : s.shard_units) forward += u.forward_share;
  CHECK(forward == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("the router stays whole on every tensor rank; the rest of a layer's dense weights split over tp") {
  const TransformerSpec m = small_moe();
  Plan p = plan(4);
  p.tp = 2;
  p.dp = 4;
  p.global_batch = 4;
  p.sequence_parallel = true;
  const StageCost c = stage_costs(m, p, small_cluster()).stages[0];
  // 8 layers: attention and norms (4,194,304 + 2,048) over 2, the router
  // (1024 x 8) whole; the embedding and head (32000 x 1024 each, the head's
  // norm 1024) over 2.
  const double dense = 8 * ((4'194'304.0 + 2'048.0) / 2 + 8'192.0) + (2 * 32000.0 * 1024 + 1024) / 2;
  CHECK(c.params - c.expert_params == doctest::Approx(dense).epsilon(1e-12));
}

TEST_CASE("every rank waits for the slowest expert-parallel group: ep 6 on 8-GPU nodes crosses nodes") {
  TransformerSpec m = small_moe();
  m.moe.experts = 24;
  const hw::ClusterSpec three = small_cluster(3);
  auto dispatch = [&](int ep) {
    Plan p = plan(ep);
    p.dp = 24;
    p.global_batch = 24;
    return stage_costs(m, p, three).stages[0].ep_comm_forward;
  };
  // ep 8 and ep 4 stay inside a node; of the ep 6 groups {0-5}, {6-11}, ...
  // the second spans two nodes, so every rank's dispatch goes at its pace.
  CHECK(dispatch(6) > dispatch(8));
  CHECK(dispatch(6) > dispatch(4));
}

TEST_CASE("expert tensor parallelism: each expert's width over etp GPUs, which gather their tokens") {
  const TransformerSpec m = small_moe();
  MoeLayout layout;
  layout.ep = 2;
  layout.etp = 2;
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, layout);
  // 2048 copies a rank, gathered over the 2 etp ranks: 4096 rows, on half of
  // each of the rank's 4 experts' width (gate and up 2 x 1024, down 1024).
  const Op& up = op_named(ops, "moe_experts_gate_up");
  CHECK(up.m == 4096);
  CHECK(up.n == 2048);
  CHECK(up.gemm_groups == 4);
  CHECK(op_named(ops, "moe_experts_down").k == 1024);
  // The same FLOPs a rank as without etp at twice the ep: 2 x 2048 x 1024 x 4096.
  CHECK(up.flops_forward == 2.0 * 2048 * 1024 * 4096);
  const Op& gather = op_named(ops, "moe_etp_gather");
  CHECK(gather.over_etp);
  CHECK(gather.ep_exchange == EpExchange::kGather);
  CHECK(gather.ep_bytes == 4096.0 * 1024 * 2);  // the gathered buffer
  CHECK(op_named(ops, "moe_etp_scatter").ep_exchange == EpExchange::kScatter);
  // On one 8-GPU node, dp 8: ep 2 x etp 2 leaves edp 2; a GPU holds 4 of
  // the 8 experts at half their width, 8 layers x 4 x 3 x 1024 x 2048 / 2.
  Plan p = plan(2);
  p.etp = 2;
  const StageCost c = stage_costs(m, p, small_cluster()).stages[0];
  CHECK(c.expert_params == 8.0 * 4 * 3 * 1024 * 2048 / 2);
  CHECK(p.expert_replicas() == 2);
  CHECK(c.ep_comm_forward > stage_costs(m, plan(4), small_cluster()).stages[0].ep_comm_forward);
}

}  // namespace workload_moe_test
