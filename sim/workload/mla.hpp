// The attention block of Multi-head Latent Attention (TransformerSpec::mla),
// from the QKV projections to the output projection, as Megatron-Core's
// MLASelfAttention runs it without weight absorption (training):
//   q_down    h -> q_lora_rank (every tensor rank, on the whole sequence), then
//             its RMSNorm; q_up to heads x (head_dim + rope) on 1/tp of the heads
//             (q_lora_rank 0: one projection q, h -> heads x (head_dim + rope)
//             on 1/tp of the heads, as DeepSeek-V2-Lite has it);
//   kv_down   h -> kv_lora_rank + rope, its RMSNorm over kv_lora_rank; kv_up to
//             heads x (head_dim + v_head_dim) on 1/tp of the heads;
//   rope      rotary embeddings on the queries' and keys' rotary parts;
//   attention FlashAttention over query/key heads of head_dim + rope and
//             value heads of v_head_dim;
//   out       heads x v_head_dim -> h, row-parallel.
#pragma once

#include <vector>

#include "workload/transformer.hpp"

namespace trainsim::workload {

// Appends the block for `tokens` tokens (before the tensor split), its
// attention run by `kernel` (FlashAttention, or cuDNN's fused attention, as
// Transformer Engine runs MLA on Hopper); returns the index of its first GEMM
// (what a sequence-parallel all-gather feeds).
// `eager`: its norms and rotary embeddings as eager PyTorch runs them
// (Elementwise::kEager).
int append_mla_attention(std::vector<Op>& ops, const TransformerSpec& model, double tokens, int tp, int cp,
                         Attention kernel = Attention::kFlash, bool eager = false);

// The keys' and values' values a token, every head's (heads x (head_dim +
// rope) for the keys, heads x v_head_dim for the values): what context
// parallelism moves and gathers of them.
double mla_kv_values(const TransformerSpec& model);

// Parameters of the block (without the norm before it).
double mla_attention_params(const TransformerSpec& model);

// Bytes a token keeps for the backward that standard attention's formula
// does not count: the low-rank tensors, whole on every tensor rank (the
// down projections' outputs and the up projections' inputs: 2 q_lora +
// 2 q_lora + 2 (kv_lora + rope) + 2 kv_lora).
double mla_lowrank_activation_bytes(const TransformerSpec& model);

}  // namespace trainsim::workload
