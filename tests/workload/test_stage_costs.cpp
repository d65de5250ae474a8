#include <doctest/doctest.h>

#include <cmath>

#include "hw/collective.hpp"
#include "hw/calibration_profile.hpp"
#include "hw/gpu_spec.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_stage_costs_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::core::Time;

namespace {
// The scatter-gather receiver's all-gather of small_gpt's activation for a
// micro-batch of one (1 x 1024 x 1024 x 2 bytes) in tensor group {0, 1}.
double activation_gather_s(const hw::ClusterSpec& c) {
  return hw::collective_time(hw::CollectiveKind::kAllGather, 1024.0 * 1024.0 * 2.0, hw::group_of(c, {0, 1}), c.node)
      .to_seconds();
}
// Two pipeline stages on one GPU each (tp 1, dp 1), micro-batches of one.
Plan two_stages(int global_batch) {
  Plan p;
  p.pp = 2;
  p.tp = 1;
  p.dp = 1;
  p.global_batch = global_batch;
  return p;
}
}  // namespace

TEST_CASE("throughput curves interpolate in log size and clamp at the ends") {
  const std::vector<hw::ThroughputPoint> curve = {{1024, 100}, {4096, 200}};
  CHECK(hw::interpolate_tflops(curve, 512) == 100);
  CHECK(hw::interpolate_tflops(curve, 8192) == 200);
  // 2048 is halfway between 1024 and 4096 in log scale: 150.
  CHECK(hw::interpolate_tflops(curve, 2048) == doctest::Approx(150).scale(0));
}

TEST_CASE("a GEMM is placed on the curve at the cube root of its volume, capped") {
  const hw::ClusterSpec c = small_cluster(1);
  // 1024 x 1024 x 1024: 100 TFLOP/s; 4096^3 would be 200 but the cap is 150.
  CHECK(gemm_flops_per_s(c.node.gpu, 1024, 1024, 1024) == doctest::Approx(100e12).scale(0));
  CHECK(gemm_flops_per_s(c.node.gpu, 4096, 4096, 4096) == doctest::Approx(150e12).scale(0));
  // 512 x 2048 x 1024 has the volume of 1024^3.
  CHECK(gemm_flops_per_s(c.node.gpu, 512, 2048, 1024) == doctest::Approx(100e12).scale(0));
}

TEST_CASE("an element-wise op is bound by HBM bandwidth") {
  const hw::ClusterSpec c = small_cluster(1);
  Op op;
  op.kind = OpKind::kElementwise;
  op.bytes_forward = 1.6e9;  // 1.6e9 B / 1.6e12 B/s = 1 ms
  const OpTiming t = op_time(op, Pass::kForward, c.node, 1024, hw::CollectiveGroup{});
  CHECK(t.compute_s == doctest::Approx(1e-3).scale(0));
}

TEST_CASE("model state is 16 bytes per parameter, split over tp and pp") {
  // 8 layers over pp = 2, tp = 2: stage 0 holds 4 layers + embedding, /2.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  const StageCosts costs = stage_costs(m, p, small_cluster(1));
  REQUIRE(costs.stages.size() == 2);
  const double stage0 = (4 * m.params_per_layer() + m.embedding_params()) / 2;
  CHECK(costs.stages[0].params == doctest::Approx(stage0).scale(0));
  CHECK(costs.stages[0].model_state_bytes == doctest::Approx(16 * stage0).scale(0).epsilon(1e-9));
  // Activations sent to the next stage: b s h * 2 bytes / tp = 1 * 1024 * 1024 * 2 / 2.
  CHECK(costs.stages[0].send_forward_bytes == doctest::Approx(1024.0 * 1024.0).scale(0));
  CHECK(costs.stages[1].send_forward_bytes == 0);
  CHECK(costs.stages[0].send_backward_bytes == 0);
}

TEST_CASE("pipeline sends: scatter-gather sends 1/tp and gathers, full sends it all, sequence parallelism neither") {
  // tp 2, pp 2, micro-batch 1: the activation is b s h x 2 bytes = 1024 x 1024 x 2 = 2 MiB.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.global_batch = 8;
  const hw::ClusterSpec c = small_cluster(1);
  const double activation = 1024.0 * 1024.0 * 2.0;
  // The gather: an all-gather of the whole activation in the stage's tensor group.
  const hw::CollectiveGroup tp_group = hw::group_of(c, {0, 1});
  const double gather = activation_gather_s(c);
  REQUIRE(gather > 0.0);

  p.send_split = PipelineSendSplit::kFull;
  const StageCosts full = stage_costs(m, p, c);
  p.send_split = PipelineSendSplit::kScatterGather;
  const StageCosts split = stage_costs(m, p, c);
  // Full: every tensor rank sends all 2 MiB; scatter-gather: its 1 MiB.
  CHECK(full.stages[0].send_forward_bytes == doctest::Approx(activation).scale(0));
  CHECK(full.stages[1].send_backward_bytes == doctest::Approx(activation).scale(0));
  CHECK(split.stages[0].send_forward_bytes == doctest::Approx(activation / 2).scale(0));
  CHECK(split.stages[1].send_backward_bytes == doctest::Approx(activation / 2).scale(0));
  // Stage 1 gathers what it receives in forward, stage 0 the gradient it
  // receives in backward; nothing else changes.
  const auto seconds = [](Time t) { return t.to_seconds(); };
  CHECK(seconds(split.stages[1].forward - full.stages[1].forward) == doctest::Approx(gather).epsilon(1e-9).scale(0));
  CHECK(seconds(split.stages[1].tp_comm_forward - full.stages[1].tp_comm_forward) ==
        doctest::Approx(gather).epsilon(1e-9).scale(0));
  CHECK(seconds(split.stages[0].input_grad - full.stages[0].input_grad) ==
        doctest::Approx(gather).epsilon(1e-9).scale(0));
  CHECK(seconds(split.stages[0].tp_comm_backward - full.stages[0].tp_comm_backward) ==
        doctest::Approx(gather).epsilon(1e-9).scale(0));
  CHECK(split.stages[0].forward == full.stages[0].forward);
  CHECK(split.stages[1].input_grad == full.stages[1].input_grad);
  CHECK(split.stages[0].weight_grad == full.stages[0].weight_grad);

  // Sequence parallelism: each rank holds and sends its 1/tp and gathers
  // nothing, either way. With pp 4 stage 1 holds 2 layers and nothing else,
  // so its forward is twice the layer's (compute plus its own tensor-parallel
  // collectives); without sequence parallelism the gather comes on top.
  p.pp = 4;
  const auto layer_forward_s = [&](bool sp) {
    double t = 0.0;
    for (const Op& op : layer_ops(m, 1, 2, sp)) {
      const OpTiming f = op_time(op, Pass::kForward, c.node, m.seq, tp_group);
      t += f.compute_s + f.tp_comm_s;
    }
    return t;
  };
  CHECK(seconds(stage_costs(m, p, c).stages[1].forward) ==
        doctest::Approx(2 * layer_forward_s(false) + gather).epsilon(1e-9).scale(0));
  p.sequence_parallel = true;
  for (const PipelineSendSplit mode : {PipelineSendSplit::kFull, PipelineSendSplit::kScatterGather}) {
    p.send_split = mode;
    const StageCosts sp = stage_costs(m, p, c);
    CHECK(sp.stages[0].send_forward_bytes == doctest::Approx(activation / 2).scale(0));
    CHECK(seconds(sp.stages[1].forward) == doctest::Approx(2 * layer_forward_s(true)).epsilon(1e-9).scale(0));
  }
}

TEST_CASE("no gather between neighbouring stages on one rank: the bend of zb-v's V, pp 1 with virtual stages") {
  // tp 2, pp 4, vp 2 under zb-v: stages 0..7 on ranks 0 1 2 3 3 2 1 0, one
  // layer each. Stage s gathers in F when stage s - 1 is on another rank (all
  // but stage 0 and stage 4, whose input comes from stage 3 on its own rank)
  // and in I when stage s + 1 is (all but stage 7 and stage 3).
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  const double gather = activation_gather_s(c);
  Plan p;
  p.tp = 2;
  p.pp = 4;
  p.vp = 2;
  p.schedule = "zb-v";
  p.global_batch = 8;
  p.send_split = PipelineSendSplit::kFull;
  const StageCosts full = stage_costs(m, p, c);
  p.send_split = PipelineSendSplit::kScatterGather;
  const StageCosts split = stage_costs(m, p, c);
  REQUIRE(split.stages.size() == 8);
  for (int s = 0; s < 8; ++s) {
    CAPTURE(s);
    const double f = (split.stages[s].forward - full.stages[s].forward).to_seconds();
    const double i = (split.stages[s].input_grad - full.stages[s].input_grad).to_seconds();
    if (s == 0 || s == 4) {
      CHECK(split.stages[s].forward == full.stages[s].forward);
    } else {
      CHECK(f == doctest::Approx(gather).epsilon(1e-9).scale(0));
    }
    if (s == 3 || s == 7) {
      CHECK(split.stages[s].input_grad == full.stages[s].input_grad);
    } else {
      CHECK(i == doctest::Approx(gather).epsilon(1e-9).scale(0));
    }
  }
  // pp 1, vp 2 (looped): both stages on the one rank, nothing gathered.
  p.pp = 1;
  p.schedule = "interleaved-1f1b";
  const StageCosts one = stage_costs(m, p, c);
  p.send_split = PipelineSendSplit::kFull;
  const StageCosts one_full = stage_costs(m, p, c);
  for (int s = 0; s < 2; ++s) {
    CHECK(one.stages[s].forward == one_full.stages[s].forward);
    CHECK(one.stages[s].input_grad == one_full.stages[s].input_grad);
  }
}

TEST_CASE("dualpipe: two pipelines of the same stages, each copy adding its gradients with the other") {
  // An untied 8-layer model on 8 GPUs, pp 4 x dp 2. Under 1F1B stages 0-3
  // hold 2 layers each (the embedding on 0, the head on 3). Under dualpipe
  // stages 0-3 are the same and stages 4-7 copies of them, on ranks 3 2 1 0:
  // stage 4 opens the second pipeline (the embedding, nothing to gather),
  // stage 7 closes it (the head, nothing to send).
  TransformerSpec m = small_gpt();
  m.arch = Arch::kLlama;
  const hw::ClusterSpec c = small_cluster(1);
  Plan p;
  p.pp = 4;
  p.dp = 2;
  p.global_batch = 16;
  p.recompute = Recompute::kFull;
  p.schedule = "1f1b";
  const StageCosts one = stage_costs(m, p, c);
  p.schedule = "dualpipe";
  const StageCosts two = stage_costs(m, p, c);
  REQUIRE(one.stages.size() == 4);
  REQUIRE(two.stages.size() == 8);
  for (int s = 0; s < 8; ++s) {
    CAPTURE(s);
    const StageCost& a = one.stages[s % 4];
    const StageCost& b = two.stages[s];
    CHECK(b.layers == 2);
    CHECK(b.forward == a.forward);
    CHECK(b.input_grad == a.input_grad);
    CHECK(b.params == a.params);
    CHECK(b.activation_bytes == a.activation_bytes);
    CHECK(b.send_forward_bytes == a.send_forward_bytes);
    CHECK(b.send_backward_bytes == a.send_backward_bytes);
    CHECK(a.copy_grad_bytes == 0.0);
    // ZeRO-0: each GPU keeps all of its stage's bf16 gradients, and adds
    // them with the GPU of its replica holding the copy (stage 0 on GPUs 0
    // and 1 with stage 4 on GPUs 6 and 7).
    CHECK(b.copy_grad_bytes == doctest::Approx(2.0 * b.params).scale(0));
    const int rank = s < 4 ? s : 7 - s, copy_rank = 3 - rank;
    CHECK(b.copy_grad_all_reduce == hw::collective_time(hw::CollectiveKind::kAllReduce, b.copy_grad_bytes,
                                                        hw::group_of(c, {2 * rank, 2 * copy_rank}), c.node));
  }
  // Each sequence runs through one copy: the FLOPs of an iteration, with
  // full recompute's redone forward, are those of one pipeline.
  CHECK(two.hardware_flops_per_iteration == one.hardware_flops_per_iteration);
  CHECK(two.model_flops_per_iteration == one.model_flops_per_iteration);
  // Under ZeRO-1 a GPU keeps its half of the reduced gradients: half to add.
  p.zero_stage = 1;
  const StageCosts sharded = stage_costs(m, p, c);
  CHECK(sharded.stages[1].copy_grad_bytes == doctest::Approx(sharded.stages[1].params).scale(0));
  // Tied embeddings (a GPT): each end rank holds a first stage and a last
  // one (rank 0 stages 0 and 7, rank 3 stages 3 and 4), so each ties its
  // output layer to the embedding beside it, and no first-last all-reduce
  // is needed (the copies' sum adds the embedding's gradients). Every last
  // stage holds vocab x hidden parameters fewer than under 1F1B.
  m.arch = Arch::kGpt;
  p.zero_stage = 0;
  p.schedule = "1f1b";
  const StageCosts tied_one = stage_costs(m, p, c);
  p.schedule = "dualpipe";
  const StageCosts tied_two = stage_costs(m, p, c);
  CHECK(tied_one.stages[0].embedding_grad_all_reduce > Time::zero());
  for (int s : {3, 7}) {
    CAPTURE(s);
    CHECK(tied_two.stages[s].params == doctest::Approx(tied_one.stages[3].params - 32000.0 * 1024.0).scale(0));
  }
  for (int s = 0; s < 8; ++s) CHECK(tied_two.stages[s].embedding_grad_all_reduce == Time::zero());
  CHECK(tied_two.stages[4].params == tied_one.stages[0].params);
}

TEST_CASE("activation memory per layer follows Korthikanti Table 2") {
  // s b h (10 + 24/t + 5 a s / (h t)) with s = 1024, b = 2, h = 1024, a = 16, t = 2:
  // 2^21 * (10 + 12 + 5 * 16 * 1024 / 2048) = 2^21 * 62 bytes.
  CHECK(layer_activation_bytes(small_gpt(), 2, 2) == doctest::Approx(2097152.0 * 62).scale(0));
}

TEST_CASE("costs grow with the work") {
  const TransformerSpec m = small_gpt();
  Plan p = two_stages(4);
  const auto one = stage_costs(m, p, small_cluster(1));
  p.microbatch_size = 2;
  const auto two = stage_costs(m, p, small_cluster(1));
  CHECK(two.stages[0].forward > one.stages[0].forward);
  // B = I + W, and W is non-zero for a stage of GEMMs.
  CHECK(one.stages[0].weight_grad.ps() > 0);
  CHECK(one.stages[0].backward() == one.stages[0].input_grad + one.stages[0].weight_grad);
}

TEST_CASE("a stage's layers are timed over its own tensor group, not the stage before's") {
  // Nodes of 6 GPUs, tp 4, pp 4: rank 1 holds GPUs 4-7 (two on node 0, two
  // on node 1), rank 2 GPUs 8-11 (all on node 1). Stages 1 and 2 hold two
  // layers each and neither the embedding nor the head, so only the tensor
  // group sets them apart: rank 1's collectives cross the NICs (24 GB/s),
  // rank 2's stay on NVLink (240 GB/s): a stage takes the layer times of
  // the stage before only where their groups are alike.
  hw::ClusterSpec c = small_cluster(3);
  c.node.gpus_per_node = 6;
  c.node.nics_per_node = 6;
  Plan p;
  p.tp = 4;
  p.pp = 4;
  p.dp = 1;
  p.global_batch = 4;
  p.sequence_parallel = true;  // no gather of what the stage before sent: the layers' collectives alone
  const StageCosts costs = stage_costs(small_gpt(), p, c);
  CHECK(costs.stages[1].tp_comm_forward > costs.stages[2].tp_comm_forward);
  CHECK(costs.stages[1].forward > costs.stages[2].forward);
  CHECK(costs.stages[2].tp_comm_forward > Time::zero());
}

TEST_CASE("activation memory per layer for each recompute and sequence-parallel choice (Korthikanti Table 2)") {
  // s = 1024, b = 2, h = 1024, a = 16, t = 2; sbh = 2^21.
  const TransformerSpec m = small_gpt();
  const double sbh = 2097152.0;
  // none:              sbh (10 + 24/2 + 5*16*1024/(1024*2)) = 62 sbh
  // none + SP:         sbh/2 (34 + 5*16*1024/1024) = 57 sbh
  // selective:         sbh (10 + 12) = 22 sbh
  // selective + SP:    34 sbh / 2 = 17 sbh
  // full:              2 sbh (Table 2's full-recompute row); with SP the kept
  //                    input is split over the 2 tensor ranks: sbh
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kNone, false) == doctest::Approx(62 * sbh).scale(0));
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kNone, true) == doctest::Approx(57 * sbh).scale(0));
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kSelective, false) == doctest::Approx(22 * sbh).scale(0));
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kSelective, true) == doctest::Approx(17 * sbh).scale(0));
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kFull, false) == doctest::Approx(2 * sbh).scale(0));
  CHECK(layer_activation_bytes(m, 2, 2, Recompute::kFull, true) == doctest::Approx(sbh).scale(0));
  // Sequence parallelism needs tp > 1 to split anything: with t = 1 both columns agree.
  CHECK(layer_activation_bytes(m, 2, 1, Recompute::kSelective, true) ==
        doctest::Approx(layer_activation_bytes(m, 2, 1, Recompute::kSelective, false)).scale(0));
}

TEST_CASE("activation memory follows the MLP width, grouped K/V heads and SwiGLU") {
  // LLaMA-like: h = 8, 2 heads (head dim 4), 1 K/V head (kv = 4), ffn 20,
  // seq 4, micro-batch 1 (4 tokens), tp 2, FlashAttention, no recompute.
  // A token keeps on every rank: norms' inputs 2h + 2h, QKV and up inputs
  // 2h + 2h (no dropout masks) = 8h = 64; split over tp: Q 2h + output
  // projection input 2h + K, V 4kv + SwiGLU 6f = 16 + 16 + 16 + 120 = 168.
  // tp 2: 64 + 168/2 = 148 a token, 592 bytes; with SP (64 + 168)/2 = 116, 464.
  TransformerSpec m;
  m.arch = Arch::kLlama;
  m.layers = 2;
  m.hidden = 8;
  m.heads = 2;
  m.kv_heads = 1;
  m.ffn = 20;
  m.seq = 4;
  m.vocab = 16;
  CHECK(layer_activation_bytes(m, 1, 2, Recompute::kNone, false, Attention::kFlash) == doctest::Approx(592.0).scale(0));
  CHECK(layer_activation_bytes(m, 1, 2, Recompute::kNone, true, Attention::kFlash) == doctest::Approx(464.0).scale(0));
  // GPT with ffn = 2h instead of 4h: the MLP's split 4f falls from 16h to
  // 8h, so small_gpt's 10 + 24/2 + 40 = 62 sbh becomes 10 + 16/2 + 40 = 58 sbh.
  TransformerSpec narrow = small_gpt();
  narrow.ffn = 2048;
  CHECK(layer_activation_bytes(narrow, 2, 2, Recompute::kNone, false) == doctest::Approx(58 * 2097152.0).scale(0));
}

TEST_CASE("the GEMM inputs W reads that a layer keeps anyway") {
  // small_gpt, micro-batch 2 (sbh = 2^21), tp 2: the QKV and up inputs
  // 2 sbh + 2 sbh whole, the output and down projections' 2 sbh / 2 and
  // 2 x 4 sbh / 2: 4 + 1 + 4 = 9 sbh. With SP the first two are 1/2: 2 + 5 = 7 sbh.
  // Full recompute keeps none of them.
  const TransformerSpec m = small_gpt();
  const double sbh = 2097152.0;
  CHECK(layer_kept_gemm_input_bytes(m, 2, 2, Recompute::kNone, false) == doctest::Approx(9 * sbh).scale(0));
  CHECK(layer_kept_gemm_input_bytes(m, 2, 2, Recompute::kSelective, true) == doctest::Approx(7 * sbh).scale(0));
  CHECK(layer_kept_gemm_input_bytes(m, 2, 2, Recompute::kFull, false) == 0.0);
  // Never more than the layer keeps, nor than W reads (X and dY of its GEMMs).
  CHECK(layer_kept_gemm_input_bytes(m, 2, 2) < layer_activation_bytes(m, 2, 2, Recompute::kSelective));
}

TEST_CASE("full recompute adds the layers' forward to I; selective adds the attention core's") {
  const TransformerSpec m = small_gpt();
  Plan p;
  p.pp = 2;
  p.tp = 2;
  p.dp = 1;
  p.global_batch = 4;
  const StageCosts none = stage_costs(m, p, small_cluster(1));
  p.recompute = Recompute::kFull;
  const StageCosts full = stage_costs(m, p, small_cluster(1));
  p.recompute = Recompute::kSelective;
  const StageCosts selective = stage_costs(m, p, small_cluster(1));
  // Stage 1 (last) holds 4 layers + the head; the head's forward is not redone,
  // so the extra I is 4 x (stage 1's F - head F) = F(stage 1) - F(head) ... computed
  // here from the op list directly.
  double layer_forward = 0.0, attention_forward = 0.0, layer_tp = 0.0;
  const auto tp_group = hw::group_of(small_cluster(1), {2, 3});  // stage 1's tensor group (GPUs 2, 3)
  for (const Op& op : layer_ops(m, 1, 2)) {
    const OpTiming t = op_time(op, Pass::kForward, small_cluster(1).node, m.seq, tp_group);
    layer_forward += t.compute_s + t.tp_comm_s;
    layer_tp += t.tp_comm_s;
    if (op.kind == OpKind::kAttention) attention_forward += t.compute_s;
  }
  REQUIRE(layer_tp > 0.0);  // tp 2: two all-reduces a layer forward
  CHECK((full.stages[1].input_grad - none.stages[1].input_grad).to_seconds() ==
        doctest::Approx(4 * layer_forward).scale(0).epsilon(1e-6));
  CHECK((selective.stages[1].input_grad - none.stages[1].input_grad).to_seconds() ==
        doctest::Approx(4 * attention_forward).scale(0).epsilon(1e-6));
  // The redone forward's all-reduces count as the backward's TP time too
  // (the attention core alone has none).
  CHECK((full.stages[1].tp_comm_backward - none.stages[1].tp_comm_backward).to_seconds() ==
        doctest::Approx(4 * layer_tp).scale(0).epsilon(1e-6));
  CHECK(selective.stages[1].tp_comm_backward == none.stages[1].tp_comm_backward);
  CHECK(full.stages[1].forward == none.stages[1].forward);
  CHECK(full.stages[1].weight_grad == none.stages[1].weight_grad);
}

TEST_CASE("hardware FLOPs count the recomputed forward; model FLOPs do not") {
  // Full recompute redoes each layer's forward once: per sequence, layers x
  // (layer forward FLOPs) on top of the model FLOPs. For GPT: 24 s h^2 (1 + s/(6h)) per layer.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.global_batch = 3;
  p.recompute = Recompute::kFull;
  const StageCosts c = stage_costs(m, p, small_cluster(1));
  const double s = m.seq, h = m.hidden;
  const double layer_forward = 24 * s * h * h * (1 + s / (6 * h));
  CHECK(c.hardware_flops_per_iteration - c.model_flops_per_iteration ==
        doctest::Approx(3 * m.layers * layer_forward).scale(0).epsilon(1e-9));
}

TEST_CASE("sequence parallelism turns each TP all-reduce into a reduce-scatter and an all-gather") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  const auto tp_group = hw::group_of(c, {0, 1, 2, 3});
  const double bytes = 1.0 * m.seq * m.hidden * kActivationBytes;
  const double expected =
      hw::collective_time(hw::CollectiveKind::kReduceScatter, bytes, tp_group, c.node).to_seconds() +
      hw::collective_time(hw::CollectiveKind::kAllGather, bytes, tp_group, c.node).to_seconds();
  int collectives = 0;
  for (const Op& op : layer_ops(m, 1, 4, true)) {
    if (op.kind == OpKind::kElementwise) {
      // Norms and residuals work on 1/4 of the tokens: forward bytes = 2 x s h / 4 x 2 B.
      if (op.name == "input_norm") CHECK(op.bytes_forward == doctest::Approx(2.0 * m.seq * m.hidden / 4 * 2).scale(0));
      continue;
    }
    if (op.kind != OpKind::kTpCollective) continue;
    ++collectives;
    CHECK(op_time(op, Pass::kForward, c.node, m.seq, tp_group).tp_comm_s == doctest::Approx(expected).scale(0));
  }
  CHECK(collectives == 2);
}

TEST_CASE("model state per GPU follows the ZeRO paper's formulas") {
  // ZeRO §5.1, 7.5B parameters on 64 replicas: 120 GB -> 31.4 GB -> 16.6 GB.
  const double psi = 7.5e9;
  CHECK(psi * model_state_bytes_per_param(0, 64) == doctest::Approx(120e9).scale(0));
  CHECK(psi * model_state_bytes_per_param(1, 64) == doctest::Approx(31.40625e9).scale(0));  // (4 + 12/64) psi
  CHECK(psi * model_state_bytes_per_param(2, 64) == doctest::Approx(16.640625e9).scale(0));  // (2 + 14/64) psi
  CHECK(psi * model_state_bytes_per_param(3, 64) == doctest::Approx(1.875e9).scale(0));  // 16/64 psi: the paper's 1.9 GB
}

TEST_CASE("gradients are reduced in buckets in backward order") {
  // One stage of small_gpt on tp = 1: params P, gradient bytes 2P. With
  // 25 MiB buckets: ceil(2P / 25 MiB) buckets, all 25 MiB but the last.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.dp = 2;
  p.global_batch = 2;
  const hw::ClusterSpec c = small_cluster(1);  // 8 GPUs: tp 1 x pp 1 x dp 2 leaves 6 idle; costs do not mind
  const StageCosts costs = stage_costs(m, p, c);
  const StageCost& s = costs.stages[0];
  const double grad_bytes = 2 * s.params;
  const auto expected = static_cast<std::size_t>(std::ceil(grad_bytes / (25 * 1048576.0)));
  REQUIRE(s.grad_bucket_share.size() == expected);
  REQUIRE(s.grad_bucket_reduce.size() == expected);
  double total = 0;
  for (double share : s.grad_bucket_share) total += share;
  CHECK(total == doctest::Approx(1.0).scale(0));
  CHECK(s.grad_bucket_share[0] == doctest::Approx(25 * 1048576.0 / grad_bytes).scale(0));
  // All-reduce for ZeRO-0; under ZeRO-1 a reduce-scatter, plus the parameter all-gather.
  const auto group = hw::group_of(c, {0, 1});
  CHECK(s.grad_bucket_reduce[0] ==
        hw::collective_time(hw::CollectiveKind::kAllReduce, 25 * 1048576.0, group, c.node));
  CHECK(s.param_all_gather == Time::zero());
  p.zero_stage = 1;
  const StageCost z = stage_costs(m, p, c).stages[0];
  CHECK(z.grad_bucket_reduce[0] ==
        hw::collective_time(hw::CollectiveKind::kReduceScatter, 25 * 1048576.0, group, c.node));
  CHECK(z.param_all_gather == hw::collective_time(hw::CollectiveKind::kAllGather, grad_bytes, group, c.node));
  // ZeRO-1 updates half the parameters on each of the 2 replicas.
  CHECK(z.optimizer_step < s.optimizer_step);
}

TEST_CASE("one replica needs no gradient reduction") {
  const TransformerSpec m = small_gpt();
  Plan p;
  p.global_batch = 1;
  const StageCost s = stage_costs(m, p, small_cluster(1)).stages[0];
  REQUIRE(s.grad_bucket_reduce.size() == 1);
  CHECK(s.grad_bucket_reduce[0] == Time::zero());
}

TEST_CASE("the collective algorithm reaches every collective a stage is costed with") {
  // 16 GPUs on 2 nodes, tp 2 x dp 8: tensor groups {2d, 2d + 1} inside a
  // node, data-parallel group {0, 2, ..., 14}, 4 on each node, where a
  // hierarchical all-reduce applies; a forced tree applies to the tensor
  // all-reduces (a chain inside the node).
  const TransformerSpec m = small_gpt();
  Plan p;
  p.tp = 2;
  p.dp = 8;
  p.global_batch = 8;
  const hw::ClusterSpec c = small_cluster(2);
  const auto dp_group = hw::group_of(c, {0, 2, 4, 6, 8, 10, 12, 14});
  const auto tp_group = hw::group_of(c, {0, 1});
  using A = hw::CollectiveAlgorithm;
  const StageCost ring = stage_costs(m, p, c, A::kRing).stages[0];
  const StageCost hier = stage_costs(m, p, c, A::kHierarchical).stages[0];
  const StageCost tree = stage_costs(m, p, c, A::kTree).stages[0];
  const double bucket = 25 * 1048576.0;
  CHECK(ring.grad_bucket_reduce[0] == hw::collective_time(hw::CollectiveKind::kAllReduce, bucket, dp_group, c.node, A::kRing));
  CHECK(hier.grad_bucket_reduce[0] ==
        hw::collective_time(hw::CollectiveKind::kAllReduce, bucket, dp_group, c.node, A::kHierarchical));
  CHECK(hier.grad_bucket_reduce[0] != ring.grad_bucket_reduce[0]);
  // The tensor all-reduces in forward, each of s x h x 2 bytes: 2 per layer
  // and the embedding's (one stage holds it all): 2 x 8 + 1 = 17.
  const double tp_bytes = 1.0 * m.seq * m.hidden * kActivationBytes;
  const double tree_ar =
      hw::collective_time(hw::CollectiveKind::kAllReduce, tp_bytes, tp_group, c.node, A::kTree).to_seconds();
  const double ring_ar =
      hw::collective_time(hw::CollectiveKind::kAllReduce, tp_bytes, tp_group, c.node, A::kRing).to_seconds();
  REQUIRE(tree_ar != ring_ar);
  CHECK((tree.tp_comm_forward - ring.tp_comm_forward).to_seconds() ==
        doctest::Approx(17 * (tree_ar - ring_ar)).scale(0).epsilon(1e-6));
  // Auto is what NCCL's tuner picks, and the default.
  CHECK(stage_costs(m, p, c).stages[0].forward == stage_costs(m, p, c, A::kAuto).stages[0].forward);
}

TEST_CASE("what W holds after I is each weight GEMM's X and dY, plus the embedding's output gradient") {
  // small_gpt on pp 2, tp 1, micro-batch 1: 4 layers a stage, s = 1024, h = 1024.
  // Per layer, the weight GEMMs' X and dY (values): QKV s·h + s·3h, output
  // projection s·h + s·h, MLP up s·h + s·4h, MLP down s·4h + s·h = 16·s·h; the
  // bias gradients read those same dY and hold nothing more. The first stage
  // adds the embedding scatter-add's output gradient, s·h. Two bytes a value:
  //   stage 0: (4 · 16 + 1) · s·h · 2 = 130 · 1024 · 1024 bytes;
  //   stage 1: 4 · 16 · s·h · 2 = 128 · 1024 · 1024 bytes plus the output
  //   head's GEMM (X s·h and dY s·V).
  const TransformerSpec m = small_gpt();
  const auto costs = stage_costs(m, two_stages(2), small_cluster(1));
  const double sh = 1024.0 * 1024.0;
  CHECK(costs.stages[0].weight_grad_bytes == doctest::Approx(130 * sh).scale(0));
  CHECK(costs.stages[1].weight_grad_bytes == doctest::Approx(128 * sh + 2.0 * (sh + 1024.0 * 32000)).scale(0));
}

TEST_CASE("a first or last stage without layers runs only the embedding or the output head") {
  // small_gpt's 8 layers as 0 + 8 over pp 2 ... and 8 + 0: the empty stage holds
  // only the embedding (vocabulary x hidden + positions seq x hidden) or the head.
  const TransformerSpec m = small_gpt();
  Plan p = two_stages(2);
  p.stage_layers = {0, 8};
  const auto first_empty = stage_costs(m, p, small_cluster(1));
  CHECK(first_empty.stages[0].params == doctest::Approx(m.embedding_params()).scale(0));
  CHECK(first_empty.stages[0].forward.ps() > 0);
  CHECK(first_empty.stages[0].forward < first_empty.stages[1].forward);
  p.stage_layers = {8, 0};
  const auto last_empty = stage_costs(m, p, small_cluster(1));
  // The head's weight is the tied embedding's copy plus the final LayerNorm.
  CHECK(last_empty.stages[1].params == doctest::Approx(m.head_params()).scale(0));
  CHECK(last_empty.stages[1].forward.ps() > 0);
}

TEST_CASE("tensor ranks reducing their shards at once share the node's NICs") {
  // tp 8 inside each of 2 nodes, dp 2 across: 8 data-parallel groups
  // {l, 8 + l} reduce at once. With 4 NICs per node two groups share each NIC,
  // so each ring runs at half of one NIC's 24 GB/s. A 25 MiB bucket,
  // all-reduce over 2 ranks: bus bytes 2 x 1/2 x 26214400 = 26214400.
  // Simple: 8.4 + 2 x 14 = 36.4 us + 26214400 / 12e9 = 2.1845 ms -> 2.2209 ms
  // (LL128 at 0.7 of it and the tree are slower). With 8 NICs each group has
  // its own: 36.4 us + 26214400 / 24e9 = 1.1287 ms.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.tp = 8;
  p.dp = 2;
  p.global_batch = 2;
  hw::ClusterSpec c = small_cluster(2);
  CHECK(stage_costs(m, p, c).stages[0].grad_bucket_reduce[0].to_seconds() ==
        doctest::Approx(1.1287e-3).scale(0).epsilon(1e-3));
  c.node.nics_per_node = 4;
  CHECK(stage_costs(m, p, c).stages[0].grad_bucket_reduce[0].to_seconds() ==
        doctest::Approx(2.2209e-3).scale(0).epsilon(1e-3));
}

TEST_CASE("a separate gradient-accumulation kernel adds its bytes to W") {
  // One stage of small_gpt (tp 1) holds P parameters. "add" reads the new
  // 16-bit gradient and the sum and writes the sum: 2 + 2 + 2 = 6 P bytes into
  // a 16-bit buffer, 2 + 4 + 4 = 10 P into fp32; "cast-add" first writes the
  // gradient as fp32 and reads it back: 2 + 4 + 4 + 4 + 4 = 18 P (into a
  // 16-bit buffer the cast is no copy: 6 P). At the achievable 1.6 TB/s, added
  // to W of every micro-batch; F and I do not change.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.global_batch = 1;
  const hw::ClusterSpec c = small_cluster(1);
  const StageCost fused = stage_costs(m, p, c).stages[0];
  using A = GradAccumulation;
  using D = GradDtype;
  struct Row {
    A accumulation;
    D dtype;
    double bytes;
  };
  for (const Row& row : {Row{A::kAdd, D::kBf16, 6.0}, Row{A::kAdd, D::kFp32, 10.0}, Row{A::kCastAdd, D::kFp32, 18.0},
                         Row{A::kCastAdd, D::kFp16, 6.0}, Row{A::kFused, D::kFp32, 0.0}}) {
    p.grad_accumulation = row.accumulation;
    p.grad_dtype = row.dtype;
    const StageCost s = stage_costs(m, p, c).stages[0];
    CAPTURE(row.bytes);
    if (row.bytes == 0.0) {
      CHECK(s.weight_grad == fused.weight_grad);
    } else {
      CHECK((s.weight_grad - fused.weight_grad).to_seconds() ==
            doctest::Approx(fused.params * row.bytes / 1.6e12).scale(0).epsilon(1e-6));
    }
    CHECK(s.forward == fused.forward);
    CHECK(s.input_grad == fused.input_grad);
  }
}

TEST_CASE("fp32 gradients double what is reduced and add two bytes of state a parameter") {
  // small_gpt on tp 1, dp 2, ZeRO-1: gradients of P parameters are 2P bytes
  // in bf16 and 4P in fp32; the parameters ZeRO gathers stay 2P. Model state
  // per parameter: 2 + 2 + 12/2 = 10 against 2 + 4 + 12/2 = 12 (the record's
  // "bf16 param, fp32 grad: 6 + 12/d"). The step (bf16) moves 44 bytes per
  // updated parameter with 16-bit gradients and 38 with fp32 ones (no cast to
  // main gradients), on P/2 parameters, then zeroes all P gradients (2 or 4
  // bytes each): 22 + 2 = 24 against 19 + 4 = 23 bytes per parameter.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.dp = 2;
  p.global_batch = 2;
  p.zero_stage = 1;
  const hw::ClusterSpec c = small_cluster(1);
  const StageCost half = stage_costs(m, p, c).stages[0];
  p.grad_dtype = GradDtype::kFp32;
  const StageCost full = stage_costs(m, p, c).stages[0];
  CHECK(full.grad_bytes == doctest::Approx(2 * half.grad_bytes).scale(0));
  CHECK(full.param_bytes == doctest::Approx(half.param_bytes).scale(0));
  CHECK(half.param_bytes == doctest::Approx(half.grad_bytes).scale(0));
  CHECK(full.param_all_gather == half.param_all_gather);
  // Twice the bytes in 25 MiB buckets: twice the buckets (give or take the last).
  CHECK(full.grad_bucket_reduce.size() >= 2 * half.grad_bucket_reduce.size() - 1);
  CHECK(static_cast<double>(half.model_state_bytes) == doctest::Approx(10.0 * half.params).scale(0).epsilon(1e-9));
  CHECK(static_cast<double>(full.model_state_bytes) == doctest::Approx(12.0 * half.params).scale(0).epsilon(1e-9));
  CHECK(model_state_bytes_per_param(0, 1, 4.0) == 18.0);
  CHECK(model_state_bytes_per_param(3, 4, 4.0) == 18.0 / 4);
  // BF16 moments: K = 4 + 2 x 2 = 8, so 2 + 2 + 8 = 12 unsharded and
  // 2 + 2 + 8/8 = 5 under ZeRO-1 over 8; FP8 moments K = 6: 2 + 2 + 6 = 10.
  CHECK(model_state_bytes_per_param(0, 1, 2.0, 2.0) == 12.0);
  CHECK(model_state_bytes_per_param(1, 8, 2.0, 2.0) == 5.0);
  CHECK(model_state_bytes_per_param(0, 1, 2.0, 1.0) == 10.0);
  const double launch = c.node.gpu.kernel_overhead_us * 1e-6;
  CHECK(full.optimizer_step.to_seconds() - launch ==
        doctest::Approx((half.optimizer_step.to_seconds() - launch) * 23.0 / 24.0).scale(0).epsilon(1e-6));
}

TEST_CASE("PyTorch FSDP's FP32 shards: no 16-bit copy beside them, FP32 gradients, a step without the copy back") {
  // small_gpt on tp 1, dp 4, ZeRO-3, P parameters a GPU's stage. DeepSpeed's
  // 16-bit shard beside the FP32 master: (2 + g + 12)/4, 18/4 with FP32
  // gradients, 16/4 with 16-bit ones. PyTorch's FSDP keeps the FP32 shard as
  // the weight and its gradient in FP32 whatever is reduced: (0 + 4 + 12)/4
  // both ways. Its step reads and writes FP32 weights, gradients and moments
  // (16 + 12), takes the norm (4) and writes no 16-bit copy: 32 bytes an
  // updated parameter, against 38 (FP32 gradients) with the copy; P/4
  // updated, and no gradient zeroed (zero_grad sets them to None): 8 against
  // DeepSpeed's 9.5 + 1 (its P/4 FP32 gradients zeroed) = 10.5 bytes a
  // parameter of the stage. With 16-bit reductions the shard's step is the same.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.dp = 4;
  p.global_batch = 4;
  p.zero_stage = 3;
  p.grad_dtype = GradDtype::kFp32;
  const hw::ClusterSpec c = small_cluster(1);
  const StageCost deepspeed = stage_costs(m, p, c).stages[0];
  p.fsdp_fp32_shards = true;
  const StageCost fsdp = stage_costs(m, p, c).stages[0];
  const double params = deepspeed.params;
  CHECK(static_cast<double>(deepspeed.model_state_bytes) == doctest::Approx(18.0 / 4 * params).scale(0).epsilon(1e-9));
  CHECK(static_cast<double>(fsdp.model_state_bytes) == doctest::Approx(16.0 / 4 * params).scale(0).epsilon(1e-9));
  p.grad_dtype = GradDtype::kBf16;
  const StageCost fsdp_bf16 = stage_costs(m, p, c).stages[0];
  CHECK(fsdp_bf16.model_state_bytes == fsdp.model_state_bytes);
  CHECK(fsdp_bf16.optimizer_step == fsdp.optimizer_step);
  // What is reduced and gathered is what the reduction's and the model's types say.
  CHECK(fsdp.grad_bytes == deepspeed.grad_bytes);
  CHECK(fsdp.param_bytes == deepspeed.param_bytes);
  CHECK(model_state_bytes_per_param(3, 4, 4.0, 4.0, 0.0) == 4.0);
  CHECK(optimizer_bytes_per_param(4.0, Precision::kBf16, 4.0, false) == 32.0);
  const double launch = c.node.gpu.kernel_overhead_us * 1e-6;
  CHECK(fsdp.optimizer_step.to_seconds() - launch ==
        doctest::Approx((deepspeed.optimizer_step.to_seconds() - launch) * 8.0 / 10.5).scale(0).epsilon(1e-6));
}

TEST_CASE("the optimizer step moves what each pass of a mixed-precision Adam step moves") {
  // Per updated parameter: cast of 16-bit gradients to fp32 (2 + 4), fp16's
  // unscale and check (4 + 4), the norm (4), Adam (16 + 12), the 16-bit
  // weights written back (4 + 2).
  CHECK(optimizer_bytes_per_param(2.0, Precision::kFp16) == 6 + 8 + 4 + 28 + 6);
  CHECK(optimizer_bytes_per_param(2.0, Precision::kBf16) == 6 + 4 + 28 + 6);
  CHECK(optimizer_bytes_per_param(4.0, Precision::kFp16) == 8 + 4 + 28 + 6);
  CHECK(optimizer_bytes_per_param(4.0, Precision::kBf16) == 4 + 28 + 6);
  // BF16 moments (Transformer Engine's FusedAdam): Adam reads 4 + 4 + 2 + 2
  // and writes 4 + 2 + 2: 20 where FP32 moments take 28.
  CHECK(optimizer_bytes_per_param(4.0, Precision::kBf16, 2.0) == 4 + 20 + 6);
  // On a stage: P parameters, dp 2, fp16 gradients. ZeRO-1 updates P/2 and
  // zeroes all P gradients: 26 + 2 = 28 bytes per parameter; ZeRO-2 holds
  // only P/2 gradients: 26 + 1 = 27.
  const TransformerSpec m = small_gpt();
  Plan p;
  p.dp = 2;
  p.global_batch = 2;
  p.precision = Precision::kFp16;
  p.grad_dtype = GradDtype::kFp16;
  const hw::ClusterSpec c = small_cluster(1);
  const double launch = c.node.gpu.kernel_overhead_us * 1e-6;
  const double hbm = c.node.gpu.hbm_achievable_tb_per_s * 1e12;
  p.zero_stage = 1;
  const StageCost z1 = stage_costs(m, p, c).stages[0];
  CHECK(z1.optimizer_step.to_seconds() - launch == doctest::Approx(28.0 * z1.params / hbm).scale(0).epsilon(1e-6));
  p.zero_stage = 2;
  const StageCost z2 = stage_costs(m, p, c).stages[0];
  CHECK(z2.optimizer_step.to_seconds() - launch == doctest::Approx(27.0 * z2.params / hbm).scale(0).epsilon(1e-6));
}

TEST_CASE("fp32 gradients double the tied embedding's all-reduce; a concatenated W adds its gradient once") {
  // Two stages (pp 2): the first and last hold a copy of the tied embedding,
  // vocab x hidden = 32000 x 1024 values, all-reduced between them in the
  // gradient's type: 2 or 4 bytes a value.
  const TransformerSpec m = small_gpt();
  Plan p = two_stages(4);
  const hw::ClusterSpec c = small_cluster(1);
  CHECK(stage_costs(m, p, c).stages[0].embedding_grad_bytes == doctest::Approx(32000.0 * 1024 * 2).scale(0));
  p.grad_dtype = GradDtype::kFp32;
  CHECK(stage_costs(m, p, c).stages[0].embedding_grad_bytes == doctest::Approx(32000.0 * 1024 * 4).scale(0));
  // 2BP's concatenated W over all 4 micro-batches: one gradient, one add of
  // 2 + 4 + 4 = 10 bytes a parameter, where each per-micro-batch W adds its own.
  p.schedule = "2bp";
  p.twobp_concat = true;
  p.grad_accumulation = GradAccumulation::kFused;
  const StageCost fused = stage_costs(m, p, c).stages[0];
  p.grad_accumulation = GradAccumulation::kAdd;
  const StageCost added = stage_costs(m, p, c).stages[0];
  const double once = fused.params * 10.0 / 1.6e12;
  CHECK((added.weight_grad_concat - fused.weight_grad_concat).to_seconds() ==
        doctest::Approx(once).scale(0).epsilon(1e-6));
  CHECK((added.weight_grad - fused.weight_grad).to_seconds() == doctest::Approx(once).scale(0).epsilon(1e-6));
}

TEST_CASE("one layer's forward and backward: its ops, what recompute redoes, and the add of its gradients") {
  // small_gpt, tp 2, full recompute, a separate 16-bit "add" of the weight
  // gradients (6 bytes a parameter at the achievable 1.6 TB/s). Forward: the
  // layer's ops' forward with their all-reduces. Backward: their I and W, the
  // forward again (full recompute), and the add over the layer's
  // P / tp parameters.
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  Plan p;
  p.tp = 2;
  p.global_batch = 1;
  p.recompute = Recompute::kFull;
  p.grad_accumulation = GradAccumulation::kAdd;
  p.grad_dtype = GradDtype::kBf16;
  const StageCosts costs = stage_costs(m, p, c);
  const auto tp_group = hw::group_of(c, {0, 1});
  double forward = 0.0, backward = 0.0;
  for (const Op& op : layer_ops(m, 1, 2)) {
    const OpTiming f = op_time(op, Pass::kForward, c.node, m.seq, tp_group);
    const OpTiming i = op_time(op, Pass::kInputGrad, c.node, m.seq, tp_group);
    const OpTiming w = op_time(op, Pass::kWeightGrad, c.node, m.seq, tp_group);
    forward += f.compute_s + f.tp_comm_s;
    backward += i.compute_s + i.tp_comm_s + w.compute_s + w.tp_comm_s;
  }
  backward += forward + m.params_per_layer() / 2 * 6.0 / 1.6e12;
  CHECK(costs.layer_forward.to_seconds() == doctest::Approx(forward).scale(0).epsilon(1e-6));
  CHECK(costs.layer_backward.to_seconds() == doctest::Approx(backward).scale(0).epsilon(1e-6));

  // A stage of layers alone is that many layers: 8 layers on pp 4 put 2 on
  // stage 1, which has neither the embedding nor the output head. With tp 1,
  // or tp 2 under sequence parallelism (each rank sends its own part of the
  // sequence), exactly; with tp 2's scatter-gather sends the stage also
  // all-gathers what it receives, once each way: a cost of the stage, not of
  // a layer.
  Plan q = p;
  q.pp = 4;
  auto check_stage_1 = [&](const Plan& plan, double gather_s) {
    const StageCosts four = stage_costs(m, plan, c);
    CHECK(four.stages[1].forward.to_seconds() ==
          doctest::Approx(2 * four.layer_forward.to_seconds() + gather_s).scale(0).epsilon(1e-6));
    CHECK(four.stages[1].backward().to_seconds() ==
          doctest::Approx(2 * four.layer_backward.to_seconds() + gather_s).scale(0).epsilon(1e-6));
  };
  q.tp = 1;
  check_stage_1(q, 0.0);
  q.tp = 2;
  // Stage 1 runs on GPUs 2 and 3, which sit in one node as 0 and 1 do.
  check_stage_1(q, activation_gather_s(c));
  q.sequence_parallel = true;
  check_stage_1(q, 0.0);
}

TEST_CASE("ZeRO-3 cuts a stage into units: the embedding, its layers n at a time, the output head") {
  // small_gpt (8 layers, tied embeddings) on pp 2 x dp 2: stage 0 holds the
  // embedding and layers 0-3, stage 1 layers 4-7 and its copy of the output
  // layer (its own: the ends are on different ranks).
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster(1);
  Plan p = two_stages(2);
  p.dp = 2;
  p.zero_stage = 3;
  const StageCosts costs = stage_costs(m, p, c);
  for (int unit_layers : {1, 2, 4}) {
    CAPTURE(unit_layers);
    p.fsdp_unit_layers = unit_layers;
    const StageCosts units = stage_costs(m, p, c);
    for (int st = 0; st < 2; ++st) {
      CAPTURE(st);
      const StageCost& s = units.stages[st];
      // 4 / n layer units, and one more for the embedding or the head.
      REQUIRE(s.shard_units.size() == static_cast<std::size_t>(4 / unit_layers + 1));
      const ShardUnit& end = st == 0 ? s.shard_units.front() : s.shard_units.back();
      CHECK(end.layers == 0);
      // 2 bytes a parameter: the embedding's (v + s) h (tokens and learned
      // positions); the head's v h and the final LayerNorm's 2h.
      CHECK(end.gather_bytes == (st == 0 ? (32000.0 + 1024) * 1024 * 2 : (32000.0 * 1024 + 2 * 1024) * 2));
      double bytes = 0.0, f = 0.0, i = 0.0, w = 0.0;
      for (const ShardUnit& u : s.shard_units) {
        bytes += u.gather_bytes;
        f += u.forward_share;
        i += u.input_grad_share;
        w += u.weight_grad_share;
        CHECK(u.gather == hw::collective_time(hw::CollectiveKind::kAllGather, u.gather_bytes,
                                              hw::group_of(c, {st, st + 2}), c.node));
        CHECK(u.grad_bytes == doctest::Approx(u.gather_bytes).scale(0));  // 16-bit gradients
      }
      // The units hold the stage's parameters, and share out its F, I and W.
      CHECK(bytes == doctest::Approx(s.param_bytes).scale(0).epsilon(1e-12));
      CHECK(f == doctest::Approx(1.0).scale(0).epsilon(1e-12));
      CHECK(i == doctest::Approx(1.0).scale(0).epsilon(1e-12));
      CHECK(w == doctest::Approx(1.0).scale(0).epsilon(1e-12));
      // A layer unit's share of F is its layers' part of the stage's.
      const ShardUnit& layer_unit = s.shard_units[st == 0 ? 1 : 0];
      CHECK(layer_unit.layers == unit_layers);
      CHECK(layer_unit.forward_share * s.forward.to_seconds() ==
            doctest::Approx(unit_layers * costs.layer_forward.to_seconds()).epsilon(1e-6));
    }
  }
  // Without ZeRO-3, or with one replica, nothing is sharded.
  p.zero_stage = 1;
  CHECK(!stage_costs(m, p, c).stages[0].sharded());
  p.zero_stage = 3;
  p.dp = 1;
  p.global_batch = 1;
  CHECK(!stage_costs(m, p, c).stages[0].sharded());
}

TEST_CASE("a GPU's shape grid times each GEMM at its own (m, n, k), not at its volume's size") {
  hw::GpuSpec g = small_cluster().node.gpu;  // curve: 100 TFLOP/s at 1024, 200 at 4096, capped at 150
  auto grid = std::make_shared<hw::GemmGrid>();
  grid->m = grid->n = grid->k = {1024, 4096};
  // Slow where k is small, whatever m and n: 60 at k 1024, 140 at k 4096.
  grid->tflops = {60, 140, 60, 140, 60, 140, 60, 140};
  g.gemm_grid = grid;
  // 4096 x 4096 x 1024 has the volume of a 2580^3 GEMM (the curve: about 152,
  // capped at 150); on the grid, its k of 1024 gives 60.
  CHECK(gemm_flops_per_s(g, 4096, 4096, 1024) == doctest::Approx(60e12));
  CHECK(gemm_flops_per_s(g, 4096, 4096, 4096) == doctest::Approx(140e12));
  // Half-way in log2 k (2048): half-way in TFLOP/s.
  CHECK(gemm_flops_per_s(g, 1024, 1024, 2048) == doctest::Approx(100e12));
}

TEST_CASE("an FP8 shape grid times FP8 GEMMs at their own (m, n, k), capped by the FP8 ceiling") {
  hw::GpuSpec g = small_cluster().node.gpu;
  g.gemm_fp8_tflops = {{1024, 300}, {4096, 300}};
  g.gemm_fp8_max_tflops = 250;
  // The curve: 300 everywhere, capped at 250.
  CHECK(gemm_flops_per_s(g, 4096, 4096, 256, true) == doctest::Approx(250e12));
  auto grid = std::make_shared<hw::GemmGrid>();
  grid->m = grid->n = grid->k = {1024, 4096};
  // FP8 gains little where k is small: 90 at k 1024, 280 at k 4096.
  grid->tflops = {90, 280, 90, 280, 90, 280, 90, 280};
  g.gemm_fp8_grid = grid;
  CHECK(gemm_flops_per_s(g, 4096, 4096, 1024, true) == doctest::Approx(90e12));
  CHECK(gemm_flops_per_s(g, 4096, 4096, 4096, true) == doctest::Approx(250e12));  // 280, capped at 250
  // BF16 GEMMs keep the BF16 curve: 4096^3 at 200, capped at 150.
  CHECK(gemm_flops_per_s(g, 4096, 4096, 4096) == doctest::Approx(150e12));
}

}  // namespace workload_stage_costs_test
