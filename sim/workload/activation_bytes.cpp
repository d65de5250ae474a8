#include "workload/activation_bytes.hpp"

#include "workload/mla.hpp"

namespace trainsim::workload {

double layer_activation_bytes(const TransformerSpec& model, int microbatch, int tp, Recompute recompute,
                              bool sequence_parallel, Attention attention, Elementwise kernels, bool kv_repeat) {
  const double tokens = static_cast<double>(model.seq) * microbatch, h = model.hidden, t = tp;
  // Full recompute keeps the layer's input only: Table 2's 2sbh, which
  // sequence parallelism leaves split over the tensor ranks (a layer's input
  // is [s/t, b, h] there, in Megatron-LM and in TorchTitan's SequenceParallel).
  if (recompute == Recompute::kFull) return sequence_parallel && tp > 1 ? 2.0 * tokens * h / t : 2.0 * tokens * h;
  const bool gpt = model.arch == Arch::kGpt;
  const double f = model.ffn, kv = static_cast<double>(model.kv_heads) * model.head_dim(), q = model.q_dim();
  if (recompute == Recompute::kSelectiveOp) {
    // The checkpoint's input (2h, 1/tp of it with sequence parallelism) and
    // the kept matmuls' outputs (every other one, attention_matmuls), with
    // attention's, on 1/tp of the heads or columns unless said whole.
    // Llama: wq's (2q), wv's (2kv), attention's (2q). MLA with compressed
    // queries: wq_a's (2 q_lora) and wkv_a's (2 (kv_lora + rope)), whole,
    // attention's (2 heads x v_head_dim) and wo's (2h, whole before its
    // reduction); without: wq's (2 heads x (head_dim + rope)), wkv_b's
    // (2 heads x (head_dim + v_head_dim)) and attention's.
    const bool split = sequence_parallel && tp > 1;
    double attention_kept = (4.0 * q + 2.0 * kv) / t;
    if (model.mla.enabled()) {
      const MlaSpec& a = model.mla;
      const double heads = model.heads, d = model.head_dim(), r = a.qk_rope_head_dim, v = a.v_head_dim;
      attention_kept = a.q_lora_rank > 0
                           ? 2.0 * a.q_lora_rank + 2.0 * (a.kv_lora_rank + r) + 2.0 * heads * v / t + 2.0 * h
                           : (2.0 * heads * (d + r) + 2.0 * heads * (d + v) + 2.0 * heads * v) / t;
    }
    // The MLP's w1 or w3 (2f over tp), and its w2's (2h, whole before its
    // reduction) where kept; a MoE block's shared experts' w2 as well (the
    // rest of a MoE block in moe_activation_bytes_per_token).
    const bool has_down = f > 0.0 || (model.moe.enabled() && model.moe.shared_experts > 0);
    const bool down_kept = op_sac_keeps_matmul(attention_matmuls(model) + 3);
    const double mlp_kept = 2.0 * f / t + (has_down && down_kept ? 2.0 * h : 0.0);
    return tokens * ((split ? 2.0 * h / t : 2.0 * h) + attention_kept + mlp_kept);
  }
  // Bytes a token keeps, Table 2's terms with the MLP width and the K/V width
  // as the model has them. On every tensor rank: the two norms' inputs
  // (2h + 2h), the inputs of the QKV and up projections (2h + 2h) and, for
  // GPT, the two dropout masks (h + h).
  const bool eager = kernels == Elementwise::kEager && !gpt;
  const double replicated = (gpt ? 10.0 : 8.0) * h + (eager ? 8.0 * h : 0.0);
  // On 1/tp of the heads and MLP columns: Q (2q, q = heads x head_dim, h
  // unless the model says otherwise), K and V (2kv + 2kv), the output
  // projection's input (2q); GPT's MLP keeps GeLU's input and the down
  // projection's input (2f + 2f), SwiGLU its gate and up outputs (4f) and its
  // own output (2f). MLA: Q and K of heads x (head_dim + rope), V and the
  // output projection's input of heads x v_head_dim, and beside them, whole
  // on every tensor rank, its low-rank tensors.
  const double attention_split = model.mla.enabled() ? 4.0 * model.qk_width() + 4.0 * model.v_width()
                                                     : 4.0 * q + 4.0 * kv;
  // Eager: the rotary embedding's complex FP32 inputs (4q + 4kv; MLA's
  // rotary parts of the queries, 4 heads x rope) and silu's output (2f), and
  // MLA's two low-rank norms' FP32 copies (4 q_lora + 4 kv_lora, whole).
  // Copied K and V: attention keeps the expanded ones.
  const bool expanded = kv_copied(model, kv_repeat);
  const bool mla = model.mla.enabled();
  const double rotary_inputs = mla ? 4.0 * model.heads * model.mla.qk_rope_head_dim : 4.0 * q + 4.0 * kv;
  const double split = attention_split + (gpt ? 4.0 : 6.0) * f + (eager ? rotary_inputs + 2.0 * f : 0.0) +
                       (expanded ? 4.0 * q - 4.0 * kv : 0.0);
  const double lowrank = !mla    ? 0.0
                         : eager ? mla_lowrank_activation_bytes(model) + 4.0 * (model.mla.q_lora_rank + model.mla.kv_lora_rank)
                                 : mla_lowrank_activation_bytes(model);
  // Unfused attention keeps the scores' softmax output, dropout mask and
  // dropout output (2 + 1 + 2 bytes for each of a*s scores a token);
  // FlashAttention and selective recompute keep none of them.
  const double scores =
      recompute == Recompute::kNone && attention == Attention::kUnfused ? 5.0 * model.heads * model.seq : 0.0;
  const bool sp = sequence_parallel && tp > 1;
  return tokens * ((sp ? (replicated + split + scores) / t : replicated + (split + scores) / t) + lowrank);
}

double layer_kept_gemm_input_bytes(const TransformerSpec& model, int microbatch, int tp, Recompute recompute,
                                   bool sequence_parallel) {
  if (recompute == Recompute::kFull || recompute == Recompute::kSelectiveOp) return 0.0;  // I redoes what it needs
  const double tokens = static_cast<double>(model.seq) * microbatch, h = model.hidden, t = tp;
  const bool sp = sequence_parallel && tp > 1;
  // The QKV and up projections' inputs (2h + 2h a token), whole on every
  // tensor rank, or 1/tp of them with sequence parallelism (the rest is
  // gathered again); the output and down projections' inputs (2 x the
  // attention output's width + 2f) on 1/tp of the columns; MLA's up
  // projections' low-rank inputs (2 q_lora + 2 kv_lora) whole.
  const double lowrank = model.mla.enabled() ? 2.0 * model.mla.q_lora_rank + 2.0 * model.mla.kv_lora_rank : 0.0;
  return tokens * ((sp ? 4.0 * h / t : 4.0 * h) + (2.0 * model.v_width() + 2.0 * model.ffn) / t + lowrank);
}

}  // namespace trainsim::workload
