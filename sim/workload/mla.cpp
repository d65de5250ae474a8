#include "workload/mla.hpp"

#include "workload/op_build.hpp"

namespace trainsim::workload {

int append_mla_attention(std::vector<Op>& ops, const TransformerSpec& model, double tokens, int tp, int cp,
                         Attention kernel, bool eager) {
  const MlaSpec& a = model.mla;
  const double h = model.hidden, t = tp, heads = model.heads, d = model.head_dim(), r = a.qk_rope_head_dim;
  const double ql = a.q_lora_rank, kl = a.kv_lora_rank, v = a.v_head_dim;
  const double b_s = tokens;
  const int first = static_cast<int>(ops.size());
  const auto norm = [&](const char* name, double elements) {
    return eager ? build::eager_rms_norm(name, elements, 1) : build::elementwise(name, elements);
  };
  // Per-op checkpointing (TorchTitan) keeps every other matmul's output,
  // counted from the block's first: wq (or wq_a, wq_b), wkv_a, wkv_b, wo.
  int matmuls = 0;
  const auto matmul_redo = [&] { return op_sac_keeps_matmul(++matmuls) ? 0.0 : 1.0; };
  if (ql > 0) {
    ops.push_back(build::gemm("mla_q_down", tokens, h, ql));
    ops.back().op_sac_redo = matmul_redo();
    ops.push_back(norm("mla_q_norm", tokens * ql));
    ops.push_back(build::gemm("mla_q_up", tokens, ql, heads * (d + r) / t));
    ops.back().modules = kModuleMlaUpProj;
    ops.back().op_sac_redo = matmul_redo();
  } else {
    // Queries without compression (DeepSeek-V2-Lite): one projection, over
    // tp, inside Megatron-Core's up-projection checkpoint as its query up
    // projection is.
    ops.push_back(build::gemm("mla_q", tokens, h, heads * (d + r) / t));
    ops.back().modules = kModuleMlaUpProj;
    ops.back().op_sac_redo = matmul_redo();
  }
  ops.push_back(build::gemm("mla_kv_down", tokens, h, kl + r));
  ops.back().op_sac_redo = matmul_redo();
  ops.push_back(norm("mla_kv_norm", tokens * kl));
  ops.push_back(build::gemm("mla_kv_up", tokens, kl, heads * (d + v) / t));
  ops.back().modules = kModuleMlaUpProj;
  ops.back().op_sac_redo = matmul_redo();
  ops.push_back(eager ? build::eager_rotary_embedding("mla_rotary_embedding", tokens * heads * r / t)
                      : build::elementwise("mla_rotary_embedding", tokens * heads * r / t));
  ops.back().modules = kModuleMlaUpProj;
  if (cp > 1) {
    // Context parallelism: this rank's keys (head_dim + rope a head) and
    // values (v_head_dim a head), as the up projection makes them, for the
    // exchange the plan's algorithm runs, and for all-to-all its queries
    // (head_dim + rope) and output (v_head_dim); 2 bytes a value, each tensor
    // at its own width (Transformer Engine's context parallelism for MLA,
    // NVIDIA/TransformerEngine issue 1552 and PR 1729; a ring that pads the
    // values to the keys' width, as that issue proposes, is not modelled).
    Op exchange;
    exchange.name = "context_parallel_exchange";
    exchange.kind = OpKind::kCpExchange;
    exchange.cp_kv_bytes = tokens * mla_kv_values(model) / t * kActivationBytes;
    exchange.cp_qo_bytes = exchange.cp_kv_bytes;
    exchange.attention_op = static_cast<int>(ops.size()) + 1;
    exchange.attention_core = true;
    exchange.op_sac_redo = 0.0;  // attention's output is kept; its inputs need no second exchange
    ops.push_back(exchange);
  }
  // QK^T over head_dim + rope, the weighted sum over v_head_dim; with context
  // parallelism this rank's queries against all cp parts' keys.
  Op att;
  att.name = "attention";
  att.kind = OpKind::kAttention;
  const double s = model.seq;
  att.flops_forward = 2.0 * b_s * (s * cp) * heads * (d + r + v) / t;
  att.flops_input_grad = 2.0 * att.flops_forward;
  att.bytes_forward = tokens * heads * (2.0 * (d + r) + 2.0 * v) / t * kActivationBytes;  // read Q, K, V, write O
  att.bytes_input_grad = 2.0 * att.bytes_forward;
  att.attention_core = true;
  att.attention_kernel = kernel;
  att.op_sac_redo = 0.0;
  ops.push_back(att);
  return first;
}

double mla_kv_values(const TransformerSpec& model) {
  const MlaSpec& a = model.mla;
  return static_cast<double>(model.heads) * (model.head_dim() + a.qk_rope_head_dim + a.v_head_dim);
}

double mla_attention_params(const TransformerSpec& model) {
  const MlaSpec& a = model.mla;
  const double h = model.hidden, heads = model.heads, d = model.head_dim(), r = a.qk_rope_head_dim;
  const double ql = a.q_lora_rank, kl = a.kv_lora_rank, v = a.v_head_dim;
  const double queries = ql > 0 ? h * ql + ql + ql * heads * (d + r) : h * heads * (d + r);
  return queries + h * (kl + r) + kl + kl * heads * (d + v) + heads * v * h;
}

double mla_lowrank_activation_bytes(const TransformerSpec& model) {
  const MlaSpec& a = model.mla;
  return 4.0 * a.q_lora_rank + 2.0 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2.0 * a.kv_lora_rank;
}

}  // namespace trainsim::workload
