// A Hugging Face model config (the config.json transformers saves beside the
// weights) as a trainsim model object: the shape fields of the common
// architectures, read from their public config schemas, mapped to model keys.
//
//   architectures                      arch (llama, or gpt for GPT-2 and GPT-NeoX)
//   num_hidden_layers, hidden_size,    layers, hidden, heads, kv_heads (default
//   num_attention_heads,                 heads), head_dim (where it differs from
//   num_key_value_heads, head_dim        hidden / heads), ffn, vocab
//   intermediate_size, vocab_size
//   Mixtral: num_local_experts,        moe.experts, moe.top_k, moe.expert_ffn
//   num_experts_per_tok, intermediate_size
//   Qwen3-MoE: num_experts, num_experts_per_tok, moe_intermediate_size,
//   decoder_sparse_step                moe.*, moe.layer_freq
//   DeepSeek-V3 (and V2): n_routed_experts, n_shared_experts, moe_intermediate_size,
//   first_k_dense_replace, moe_layer_freq, scoring_func; q_lora_rank,
//   kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim
//                                      moe.*, attention "mla" and its widths
//
// The training sequence length is not a model property (max_position_embeddings
// is how far the model can see): the caller gives model.seq beside the
// reference. A field the simulator cannot honour is an error (the wrong
// activation for the architecture, layers that are not expressible) or a
// warning naming it and what is simulated instead (a tied embedding on a
// llama-style model, sliding-window attention, multi-token prediction).
// Fields that do not change the cost of a step (token ids, norms' epsilon,
// rotary bases, dtypes) are read as such; any other field is named in a
// warning as not read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainsim::config {

struct HfModel {
  nlohmann::json model;               // the trainsim model object, without "seq"
  std::vector<std::string> warnings;  // each names the field, one line each
};

// `hf` as read from `file` (named in messages). Throws ConfigError
// "FILE: FIELD: what was expected" on a config it cannot map.
HfModel model_from_hf(const nlohmann::json& hf, const std::string& file);

// The architectures model_from_hf maps, in the order the error lists them.
const std::vector<std::string>& hf_architectures();

}  // namespace trainsim::config
