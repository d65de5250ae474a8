// Eager element-wise kernels and per-op selective checkpointing, op by op.
#include <doctest/doctest.h>

#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_kernels_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::op_named;
using trainsim::workload::testing::small_cluster;

namespace {
// small_cluster with 3 us a kernel launch.
hw::ClusterSpec cluster() {
  hw::ClusterSpec c = small_cluster();
  c.node.gpu.kernel_overhead_us = 3.0;
  return c;
}

// A small Llama: h 1024, 4 K/V heads of 64 (kv 256), ffn 2816.
TransformerSpec small_llama() {
  TransformerSpec m;
  m.arch = Arch::kLlama;
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 4;
  m.ffn = 2816;
  m.seq = 1024;
  m.vocab = 32000;
  return m;
}

// One sequence in two pipeline stages: the loss on the second.
Plan two_stages() {
  Plan p;
  p.pp = 2;
  p.global_batch = 1;
  return p;
}

}  // namespace

TEST_CASE("eager kernels: RMSNorm through FP32, rotary embeddings, K/V copies, SwiGLU in two kernels") {
  const TransformerSpec m = small_llama();
  const double tokens = 1024, h = 1024, kv = 256, f = 2816;
  // As TorchTitan's Llama runs without torch.compile: op by op, K and V copied to every head.
  const std::vector<Op> eager = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kEager, 1, {}, {.kv_repeat = true});
  const std::vector<Op> fused = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused);
  // RMSNorm: 32 bytes a value forward in 8 kernels; backward 90, plus 6 for
  // each of the two GEMMs beyond the first that read the input norm (wk, wv).
  CHECK(op_named(eager, "input_norm").bytes_forward == 32 * tokens * h);
  CHECK(op_named(eager, "input_norm").bytes_input_grad == (90 + 12) * tokens * h);
  CHECK(op_named(eager, "input_norm").kernels == 8);
  CHECK(op_named(eager, "mlp_norm").bytes_input_grad == (90 + 6) * tokens * h);
  CHECK(op_named(fused, "input_norm").bytes_forward == 4 * tokens * h);  // read and write, 2 bytes each
  // Rotary embeddings: 20 bytes a value of Q and K; the grouped K and V
  // copied out to every head: read kv, write h, each, 2 bytes a value.
  CHECK(op_named(eager, "rotary_embedding").bytes_forward == 20 * tokens * (h + kv));
  CHECK(op_named(eager, "repeat_kv").bytes_forward == 4 * tokens * (h + kv));
  // SwiGLU: silu (read f, write f) then mul (read 2f, write f), 2 bytes a value.
  CHECK(op_named(eager, "swiglu").bytes_forward == 10 * tokens * f);
  // Fused, the rotation is one kernel reading and writing Q and K, 2 + 2
  // bytes a value each way; the grouped K and V are not copied.
  CHECK(op_named(fused, "rotary_embedding").bytes_forward == 4 * tokens * (h + kv));
  CHECK(op_named(fused, "rotary_embedding").bytes_input_grad == 4 * tokens * (h + kv));
  CHECK(op_named(fused, "rotary_embedding").kernels == 1);
  CHECK(eager.size() == fused.size() + 1);
  // An op's launch overhead is paid per kernel: 8 x 3 us for the norm.
  const hw::ClusterSpec c = cluster();
  const auto g = hw::group_of(c, {0});
  const Op& norm = op_named(eager, "input_norm");
  CHECK(op_time(norm, Pass::kForward, c.node, m.seq, g).compute_s ==
        doctest::Approx(32 * tokens * h / 1.6e12 + 8 * 3e-6));
  // Activations: each norm's FP32 input (4h twice), the rotary embedding's
  // complex inputs (4h + 4kv), the expanded K and V (4h - 4kv), silu's output (2f).
  CHECK(layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash, Elementwise::kEager, true) -
            layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash) ==
        doctest::Approx(tokens * (8 * h + 8 * h + 2 * f)));
  // GPT's kernels are the same either way.
  TransformerSpec gpt = m;
  gpt.arch = Arch::kGpt;
  gpt.kv_heads = 16;
  CHECK(layer_ops(gpt, 1, 1, false, Attention::kFlash, Elementwise::kEager).size() ==
        layer_ops(gpt, 1, 1, false, Attention::kFlash, Elementwise::kFused).size());
}

TEST_CASE("grouped K and V copied to every query head (kv_repeat): 4q bytes a token more when fused, kept for autograd") {
  const TransformerSpec m = small_llama();  // h = q 1024, kv 256
  const double tokens = 1024, q = 1024, kv = 256;
  const std::vector<Op> native = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused);
  const std::vector<Op> copied = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, {}, {.kv_repeat = true});
  CHECK(copied.size() == native.size() + 1);
  // Fused: the rotation writes the expanded K (2q where it wrote 2kv) and V
  // is copied by a kernel of its own (read 2kv, write 2q): 4q in all.
  const Op& expand = op_named(copied, "repeat_kv");
  CHECK(expand.bytes_forward == 4 * q * tokens);
  CHECK(expand.bytes_input_grad == 4 * q * tokens);  // each group's gradients summed back
  CHECK(expand.kernels == 1);
  CHECK(expand.op_sac_redo == 1.0);  // an element-wise op, redone under per-op checkpointing
  // Attention keeps the expanded K and V: 2q + 2q instead of 2kv + 2kv.
  CHECK(layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash, Elementwise::kFused, true) -
            layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash) ==
        doctest::Approx(tokens * (4 * q - 4 * kv)));
  // Context parallelism all-gathers what attention is given: the copies,
  // 2 x 2q bytes a token against 2 x 2kv.
  const std::vector<Op> cp_copied = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 2, {}, {.kv_repeat = true});
  const std::vector<Op> cp_native = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 2);
  CHECK(op_named(cp_copied, "context_parallel_exchange").cp_kv_bytes == 4 * q * tokens);
  CHECK(op_named(cp_native, "context_parallel_exchange").cp_kv_bytes == 4 * kv * tokens);
  // A model without grouped heads copies nothing.
  TransformerSpec mha = m;
  mha.kv_heads = mha.heads;
  CHECK(layer_ops(mha, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, {}, {.kv_repeat = true}).size() ==
        layer_ops(mha, 1, 1, false, Attention::kFlash, Elementwise::kFused).size());
}

TEST_CASE("per-op selective checkpointing keeps every other matmul's output and attention's, redoes the rest") {
  const TransformerSpec m = small_llama();
  const hw::ClusterSpec c = cluster();
  const double tokens = 1024, h = 1024, kv = 256, f = 2816;
  // Kept: the input (2h), wq (2h), wv (2kv), attention (2h), w1 (2f), w2 (2h).
  CHECK(layer_activation_bytes(m, 1, 1, Recompute::kSelectiveOp) == tokens * (2 * h + 2 * h + 2 * kv + 2 * h + 2 * f + 2 * h));
  // Redone: every element-wise op, wk's share of QKV, w3's half of gate-up,
  // wo; not attention, not w2.
  const std::vector<Op> ops = layer_ops(m, 1, 1);
  CHECK(op_named(ops, "qkv_proj").op_sac_redo == doctest::Approx(kv / (h + 2 * kv)));
  CHECK(op_named(ops, "mlp_gate_up").op_sac_redo == 0.5);
  CHECK(op_named(ops, "attention_out_proj").op_sac_redo == 1.0);
  CHECK(op_named(ops, "attention").op_sac_redo == 0.0);
  CHECK(op_named(ops, "mlp_down").op_sac_redo == 0.0);
  CHECK(op_named(ops, "swiglu").op_sac_redo == 1.0);
  // I grows by those shares of their forward times, on every layer.
  Plan p;
  p.global_batch = 1;
  const StageCost none = stage_costs(m, p, c).stages[0];
  p.recompute = Recompute::kSelectiveOp;
  const StageCost op = stage_costs(m, p, c).stages[0];
  const auto g = hw::group_of(c, {0});
  double redo = 0.0;
  for (const Op& o : ops) redo += o.op_sac_redo * op_time(o, Pass::kForward, c.node, m.seq, g).compute_s;
  CHECK(op.input_grad.to_seconds() - none.input_grad.to_seconds() == doctest::Approx(4 * redo).epsilon(1e-9));
  CHECK(op.forward == none.forward);
}

TEST_CASE("the loss's passing tensors: PyTorch's eager cross_entropy, alone and under loss_parallel") {
  // small_llama, one sequence of 1024 tokens, vocabulary 32000, two stages.
  // tp 1, 1024 x 32000 logits on the last stage: beside the kept FP32
  // output of log_softmax, the forward holds the 16-bit logits and their FP32
  // copy (2 + 4 = 6 bytes a logit), the backward nll_loss's gradient and
  // log_softmax's input gradient (4 + 4 = 8). Megatron's in-place loss holds
  // nothing more; other stages nothing.
  const TransformerSpec m = small_llama();
  const hw::ClusterSpec c = cluster();
  Plan p = two_stages();
  const StageCosts megatron = stage_costs(m, p, c);
  CHECK(megatron.stages[1].loss_forward_transient_bytes == 0);
  CHECK(megatron.stages[1].loss_backward_transient_bytes == 0);
  p.loss = LossKernel::kPyTorch;
  const StageCosts pytorch = stage_costs(m, p, c);
  CHECK(pytorch.stages[1].loss_forward_transient_bytes == 6LL * 1024 * 32000);
  CHECK(pytorch.stages[1].loss_backward_transient_bytes == 8LL * 1024 * 32000);
  CHECK(pytorch.stages[0].loss_forward_transient_bytes == 0);
  CHECK(pytorch.stages[0].loss_backward_transient_bytes == 0);
  // Both keep log_softmax's (or the softmax's) 4 bytes a logit.
  CHECK(pytorch.stages[1].activation_bytes == megatron.stages[1].activation_bytes);
  // tp 2, loss_parallel on a 16000-wide vocabulary shard: x - max beside the
  // copy in the forward (2 + 4 + 4 = 10 bytes a logit), and in the backward
  // the zero gradient, exp of the output and their sum (4 + 4 + 4 = 12).
  p.tp = 2;
  const StageCosts parallel = stage_costs(m, p, c);
  CHECK(parallel.stages[1].loss_forward_transient_bytes == 10LL * 1024 * 16000);
  CHECK(parallel.stages[1].loss_backward_transient_bytes == 12LL * 1024 * 16000);
}

TEST_CASE("the loss's passes, kernel by kernel, in bytes a logit") {
  // Megatron 38 forward, 14 backward; eager PyTorch 6 for the cast and 16
  // for log_softmax's three reads and a write, then backward 4 (zero
  // gradient) + 16 + 6 (the cast back); loss_parallel's eager ops 38 and
  // 4 + 8 + 12 + 8 + 6 = 38; compiled 4 and 4.
  CHECK(loss_passes(LossKernel::kVocabParallel, true).forward == 38.0);
  CHECK(loss_passes(LossKernel::kVocabParallel, true).backward == 14.0);
  CHECK(loss_passes(LossKernel::kPyTorch, false).forward == 22.0);
  CHECK(loss_passes(LossKernel::kPyTorch, false).backward == 26.0);
  CHECK(loss_passes(LossKernel::kPyTorch, true).forward == 38.0);
  CHECK(loss_passes(LossKernel::kPyTorch, true).backward == 38.0);
  CHECK(loss_passes(LossKernel::kCompiled, false).forward == 4.0);
  // head_ops takes them per logit of the shard: 1024 x 32000 at tp 1, half
  // that at tp 2.
  const TransformerSpec m = small_llama();
  const std::vector<Op> alone = head_ops(m, 1, 1, false, Elementwise::kFused, LossKernel::kPyTorch);
  CHECK(op_named(alone, "cross_entropy").bytes_forward == doctest::Approx(22.0 * 1024 * 32000).scale(0));
  CHECK(op_named(alone, "cross_entropy").bytes_input_grad == doctest::Approx(26.0 * 1024 * 32000).scale(0));
  const std::vector<Op> head = head_ops(m, 1, 2, false, Elementwise::kFused, LossKernel::kPyTorch);
  const Op& loss = op_named(head, "cross_entropy");
  CHECK(loss.bytes_forward == doctest::Approx(38.0 * 1024 * 16000).scale(0));
  CHECK(loss.bytes_input_grad == doctest::Approx(38.0 * 1024 * 16000).scale(0));
}

TEST_CASE("a compiled loss keeps the 16-bit logits, not an FP32 softmax, and holds nothing more") {
  // small_llama, one sequence of 1024 tokens, vocabulary 32000, tp 1, two
  // stages. Eager, the last stage keeps the FP32 softmax (4 bytes a logit);
  // compiled, the 16-bit logits (2): 2 x 1024 x 32000 bytes fewer kept, and
  // nothing held beside them (eager PyTorch's 6 x 1024 x 32000 forward, 8
  // backward). Its passes read the logits twice forward and read them and
  // write their gradient backward: 4 and 4 bytes a logit.
  const TransformerSpec m = small_llama();
  const hw::ClusterSpec c = cluster();
  Plan p = two_stages();
  p.loss = LossKernel::kPyTorch;
  const StageCosts eager = stage_costs(m, p, c);
  p.loss = LossKernel::kCompiled;
  const StageCosts compiled = stage_costs(m, p, c);
  CHECK(eager.stages[1].activation_bytes - compiled.stages[1].activation_bytes == 2LL * 1024 * 32000);
  CHECK(compiled.stages[1].loss_forward_transient_bytes == 0);
  CHECK(compiled.stages[1].loss_backward_transient_bytes == 0);
  CHECK(compiled.stages[0].activation_bytes == eager.stages[0].activation_bytes);
  const double logits = 1024.0 * 32000;
  const std::vector<Op> head = head_ops(m, 1, 1, false, Elementwise::kFused, LossKernel::kCompiled);
  const Op& loss = op_named(head, "cross_entropy");
  CHECK(loss.bytes_forward == doctest::Approx(4 * logits).scale(0));
  CHECK(loss.bytes_input_grad == doctest::Approx(4 * logits).scale(0));
  // Less time on the last stage for it: the eager loss's 22 + 26 bytes a
  // logit become 4 + 4.
  CHECK(compiled.stages[1].forward < eager.stages[1].forward);
  CHECK(compiled.stages[1].input_grad < eager.stages[1].input_grad);
  CHECK(compiled.stages[0].forward == eager.stages[0].forward);
}

TEST_CASE("separate projections: each GEMM at its own width's rate, their input gradients summed") {
  const TransformerSpec m = small_llama();  // h 1024, kv 256, ffn 2816, 1024 tokens
  const hw::ClusterSpec c = cluster();
  const auto g = hw::group_of(c, {0});
  const double tokens = 1024, h = 1024;
  const LayerCode separate{.separate_projections = true};
  const std::vector<Op> ops = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kFused, 1, {}, separate);
  const Op& qkv = op_named(ops, "qkv_proj");
  CHECK(qkv.column_parts[0] == 1024);
  CHECK(qkv.column_parts[1] == 256);
  CHECK(qkv.column_parts[2] == 256);
  // wq is 1024 x 1024 x 1024 (size 1024: 100 TFLOP/s on the small curve), wk
  // and wv 1024 x 1024 x 256 (size 645, below the curve: 100 too): the fused
  // GEMM's 2 x 1024 x 1536 x 1024 FLOPs at 100 TFLOP/s, plus three 3 us
  // launches. Fused, the 1536-wide GEMM sits at size 1172, a faster rate.
  const double flops = 2.0 * 1024 * 1536 * 1024;
  CHECK(op_time(qkv, Pass::kForward, c.node, m.seq, g).compute_s == doctest::Approx(flops / 100e12 + 3 * 3e-6));
  const std::vector<Op> fused_ops = layer_ops(m, 1, 1);
  const Op& fused = op_named(fused_ops, "qkv_proj");
  CHECK(op_time(fused, Pass::kForward, c.node, m.seq, g).compute_s < flops / 100e12 + 3e-6);
  // Without tensor parallelism the sum folds into the norm's backward, which
  // reads the other two (or one) gradients: 2 x 2 bytes a value for Q, K, V,
  // 2 for gate and up; no forward, nothing redone.
  const Op& qkv_sum = op_named(ops, "qkv_grad_sum");
  CHECK(qkv_sum.bytes_input_grad == 4 * tokens * h);
  CHECK(qkv_sum.bytes_forward == 0);
  CHECK(qkv_sum.op_sac_redo == 0);
  CHECK(op_named(ops, "mlp_grad_sum").bytes_input_grad == 2 * tokens * h);
  // With tensor parallelism it is a kernel before the collective: read three
  // gradients, write the sum, 3 x 2 + 2 bytes a value of the whole h.
  const std::vector<Op> tp2 = layer_ops(m, 1, 2, true, Attention::kFlash, Elementwise::kFused, 1, {}, separate);
  CHECK(op_named(tp2, "qkv_grad_sum").bytes_input_grad == 8 * tokens * h);
  CHECK(op_named(tp2, "mlp_grad_sum").bytes_input_grad == 6 * tokens * h);
  CHECK(op_named(tp2, "attention_tp_collective").scatter_after_sum);
  // Eager PyTorch's norm already counts the adds (6 bytes each): no op of its own.
  const std::vector<Op> eager = layer_ops(m, 1, 1, false, Attention::kFlash, Elementwise::kEager, 1, {}, separate);
  for (const Op& op : eager) CHECK(op.name != "qkv_grad_sum");
}

TEST_CASE("separate projections: a narrow one is bound by the whole input it reads") {
  // h 1024 in 32 heads of 32, 4 K/V heads (kv 128); at tp 4 a rank's wq is
  // 256 columns wide, its wk and wv 32. One sequence of 1024 tokens.
  TransformerSpec m = small_llama();
  m.heads = 32;
  const hw::ClusterSpec c = cluster();  // 1.6 TB/s; 100 TFLOP/s up to size 1024; 3 us a launch
  const auto g = hw::group_of(c, {0, 1, 2, 3});
  const std::vector<Op> ops =
      layer_ops(m, 1, 4, false, Attention::kFlash, Elementwise::kFused, 1, {}, {.separate_projections = true});
  const Op& qkv = op_named(ops, "qkv_proj");
  // wq, 1024 x 1024 x 256: 2 x 1024 x 256 x 1024 = 536,870,912 FLOPs at 100
  // TFLOP/s, 5.369 us, above its (1024 x 1024 + 1024 x 256 + 1024 x 256) x 2
  // = 3,145,728 bytes at 1.6 TB/s, 1.966 us. wk and wv, 1024 x 1024 x 32:
  // 67,108,864 FLOPs, 0.671 us, below their (1024 x 1024 + 1024 x 32 +
  // 1024 x 32) x 2 = 2,228,224 bytes, 1.393 us. Plus three launches.
  const OpTiming f = op_time(qkv, Pass::kForward, c.node, m.seq, g);
  CHECK(f.compute_s == doctest::Approx(536870912 / 100e12 + 2 * 2228224 / 1.6e12 + 3 * 3e-6));
  CHECK(f.math_s == doctest::Approx(536870912 / 100e12));   // wq's time
  CHECK(f.memory_s == doctest::Approx(2 * 2228224 / 1.6e12));  // wk's and wv's
  CHECK(f.bytes == 3145728 + 2 * 2228224);
  // Fused it is one GEMM reading the input once: 2 x 1024 x 320 x 1024 FLOPs.
  const std::vector<Op> fused_ops = layer_ops(m, 1, 4);
  CHECK(op_time(op_named(fused_ops, "qkv_proj"), Pass::kForward, c.node, m.seq, g).compute_s ==
        doctest::Approx(2.0 * 1024 * 320 * 1024 / 100e12 + 3e-6));
}

TEST_CASE("a GEMM's bytes in each pass: its operands read at their precision, its BF16 result written") {
  // m 4, n 2, k 3: X 12 values, W 6, Y 8.
  CHECK(gemm_pass_bytes(4, 2, 3, Pass::kForward, false) == 2 * (12 + 6) + 2 * 8);   // X, W -> Y
  CHECK(gemm_pass_bytes(4, 2, 3, Pass::kForward, true) == 1 * (12 + 6) + 2 * 8);
  CHECK(gemm_pass_bytes(4, 2, 3, Pass::kInputGrad, true) == 1 * (8 + 6) + 2 * 12);  // dY, W -> dX
  CHECK(gemm_pass_bytes(4, 2, 3, Pass::kWeightGrad, true) == 1 * (12 + 8) + 2 * 6);  // X, dY -> dW
}

TEST_CASE("batch-first sequence parallelism: each gathered and scattered buffer copied once more") {
  const TransformerSpec m = small_llama();
  const hw::ClusterSpec c = small_cluster();  // no launch overhead
  const auto g = hw::group_of(c, {0, 1});
  const double bytes = 1024.0 * 1024 * 2;  // the whole [b, s, h] buffer: 1024 tokens x h 1024, 2 bytes
  const std::vector<Op> first = layer_ops(m, 1, 2, true, Attention::kFlash, Elementwise::kFused, 1, {},
                                          {.batch_first = true});
  const Op& collective = op_named(first, "attention_tp_collective");
  CHECK(collective.sp_copies);
  // Forward: the gathered buffer read and written, the scattered one too:
  // 4 x 2 MiB at 1.6 TB/s; the collectives' own time unchanged.
  const OpTiming f = op_time(collective, Pass::kForward, c.node, m.seq, g);
  CHECK(f.compute_s == doctest::Approx(4 * bytes / 1.6e12));
  const std::vector<Op> plain_ops = layer_ops(m, 1, 2, true);
  const Op& plain = op_named(plain_ops, "attention_tp_collective");
  CHECK(f.tp_comm_s == op_time(plain, Pass::kForward, c.node, m.seq, g).tp_comm_s);
  CHECK(op_time(plain, Pass::kForward, c.node, m.seq, g).compute_s == 0.0);
  CHECK(op_time(collective, Pass::kInputGrad, c.node, m.seq, g).compute_s == doctest::Approx(4 * bytes / 1.6e12));
  // With separate projections the backward's sum writes the scattered order:
  // only the gathered gradient is copied.
  const std::vector<Op> both = layer_ops(m, 1, 2, true, Attention::kFlash, Elementwise::kFused, 1, {},
                                         {.separate_projections = true, .batch_first = true});
  CHECK(op_time(op_named(both, "attention_tp_collective"), Pass::kInputGrad, c.node, m.seq, g).compute_s ==
        doctest::Approx(2 * bytes / 1.6e12));
}

}  // namespace workload_kernels_test
