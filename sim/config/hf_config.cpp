#include "config/hf_config.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "config/error.hpp"

namespace trainsim::config {

namespace {

using nlohmann::json;

enum class Family { kLlama, kMixtral, kQwen3Moe, kDeepseekV3, kGpt2, kGptNeoX };

struct Architecture {
  const char* name;
  Family family;
  bool qk_norm;  // Qwen3's RMSNorm of each head's query and key
};

const Architecture kArchitectures[] = {
    {"LlamaForCausalLM", Family::kLlama, false},     {"MistralForCausalLM", Family::kLlama, false},
    {"Qwen2ForCausalLM", Family::kLlama, false},     {"Qwen3ForCausalLM", Family::kLlama, true},
    {"MixtralForCausalLM", Family::kMixtral, false}, {"Qwen3MoeForCausalLM", Family::kQwen3Moe, true},
    {"DeepseekV3ForCausalLM", Family::kDeepseekV3, false}, {"DeepseekV2ForCausalLM", Family::kDeepseekV3, false},
    {"GPT2LMHeadModel", Family::kGpt2, false},
    {"GPTNeoXForCausalLM", Family::kGptNeoX, false},
};

// Fields that do not change what a training step costs as simulated: token
// ids, initialisation, norms' epsilon, rotary bases and scaling, dropout,
// dtypes and how the weights were saved, inference settings, loss
// coefficients, the routers' score normalisation.
const std::set<std::string, std::less<>> kNoCost = {
    "_name_or_path", "architectures", "model_type", "transformers_version", "torch_dtype", "dtype", "auto_map",
    "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range", "rms_norm_eps", "layer_norm_eps",
    "layer_norm_epsilon", "rope_theta", "rope_scaling", "rotary_emb_base", "max_position_embeddings", "n_positions",
    "n_ctx", "use_cache", "attention_dropout", "hidden_dropout", "attn_pdrop", "embd_pdrop", "resid_pdrop",
    "classifier_dropout", "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise",
    "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "topk_method", "ep_size",
    "quantization_config", "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type",
    "summary_use_proj", "task_specific_params", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "use_parallel_residual", "max_window_layers", "attention_bias", "mlp_bias"};

class Reader {
 public:
  Reader(const json& hf, const std::string& file) : hf_(hf), file_(file) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", file_, field, what));
  }
  bool has(const char* key) {
    read_.insert(key);
    return hf_.contains(key) && !hf_[key].is_null();
  }
  const json& at(const char* key) {
    read_.insert(key);
    return hf_[key];
  }
  int count(const char* key) {
    if (!has(key)) fail(key, "is missing (expected a positive integer)");
    return count_value(key, hf_[key]);
  }
  int count_or(const char* key, int fallback) { return has(key) ? count_value(key, hf_[key]) : fallback; }
  std::string text_or(const char* key, const std::string& fallback) {
    if (!has(key)) return fallback;
    if (!hf_[key].is_string()) fail(key, "expected a string, got " + hf_[key].dump());
    return hf_[key].get<std::string>();
  }
  bool flag_or(const char* key, bool fallback) {
    if (!has(key)) return fallback;
    if (!hf_[key].is_boolean()) fail(key, "expected true or false, got " + hf_[key].dump());
    return hf_[key].get<bool>();
  }
  // The fields neither read nor known to be free of cost, in file order.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [key, value] : hf_.items()) {
      if (!read_.count(key) && !kNoCost.count(key)) out.push_back(key);
    }
    return out;
  }
  const std::string& file() const { return file_; }

 private:
  int count_value(const char* key, const json& v) const {
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1'000'000'000) {
      fail(key, "expected a positive integer, got " + v.dump());
    }
    return static_cast<int>(v.get<long long>());
  }
  const json& hf_;
  std::string file_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace

const std::vector<std::string>& hf_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Architecture& a : kArchitectures) n.emplace_back(a.name);
    return n;
  }();
  return names;
}

HfModel model_from_hf(const json& hf, const std::string& file) {
  if (!hf.is_object()) throw ConfigError(file + ": expected a JSON object (a Hugging Face config.json)");
  Reader r(hf, file);
  HfModel out;
  auto warn = [&](const std::string& field, const std::string& what) {
    out.warnings.push_back(fmt::format("{}: {}: {}", file, field, what));
  };
  std::string known;
  for (const std::string& n : hf_architectures()) known += (known.empty() ? "" : ", ") + n;
  if (!r.has("architectures") || !r.at("architectures").is_array() || r.at("architectures").size() != 1 ||
      !r.at("architectures")[0].is_string()) {
    r.fail("architectures", "expected one model class, e.g. [\"LlamaForCausalLM\"]; trainsim maps " + known);
  }
  const std::string name = r.at("architectures")[0].get<std::string>();
  const Architecture* arch = nullptr;
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) arch = &a;
  }
  if (arch == nullptr) r.fail("architectures", fmt::format("\"{}\" is not one trainsim maps; it maps {}", name, known));

  json& m = out.model;
  const std::string given_name = r.text_or("_name_or_path", "");
  // Its repository's name where the file keeps it, else the file's (or its folder's, for a config.json).
  std::string stem = std::filesystem::path(file).stem().string();
  if (stem == "config") stem = std::filesystem::path(file).parent_path().filename().string();
  m["name"] = !given_name.empty() ? given_name : stem.empty() ? name : stem + " (" + name + ")";
  m["source"] = fmt::format("Hugging Face config {} ({})", file, name);
  const Family f = arch->family;
  // GPT-2 and GPT-NeoX: LayerNorm, GeLU, biases: trainsim's gpt arch, which
  // ties the output layer to the input embedding and learns positions.
  auto gpt_like = [&](const char* layers, const char* hidden, const char* heads, const char* act_key,
                      const std::string& act_default, bool tied_default) {
    m["arch"] = "gpt";
    m["layers"] = r.count(layers);
    m["hidden"] = r.count(hidden);
    m["heads"] = r.count(heads);
    m["vocab"] = r.count("vocab_size");
    const std::string act = r.text_or(act_key, act_default);
    if (act.rfind("gelu", 0) != 0) r.fail(act_key, "expected a GeLU (the gpt arch's MLP), got \"" + act + "\"");
    if (!r.flag_or("tie_word_embeddings", tied_default)) {
      warn("tie_word_embeddings", "false: the gpt arch ties the output layer to the input embedding, so vocab x "
                                  "hidden fewer parameters are counted than the model has");
    }
  };
  if (f == Family::kGpt2) {
    gpt_like("n_layer", "n_embd", "n_head", "activation_function", "gelu_new", true);
    m["ffn"] = r.count_or("n_inner", 4 * m["hidden"].get<int>());  // null: 4 x n_embd
  } else if (f == Family::kGptNeoX) {
    gpt_like("num_hidden_layers", "hidden_size", "num_attention_heads", "hidden_act", "gelu", false);
    m["ffn"] = r.count("intermediate_size");
    if (r.has("rotary_pct")) {
      warn("rotary_pct", "rotary positions: the gpt arch adds learned position embeddings, seq x hidden parameters "
                         "the model does not have");
    }
  } else {
    // The llama family: RMSNorm, SwiGLU, rotary positions, untied embeddings.
    m["arch"] = "llama";
    m["layers"] = r.count("num_hidden_layers");
    const int h = r.count("hidden_size"), heads = r.count("num_attention_heads");
    m["hidden"] = h;
    m["heads"] = heads;
    const int kv = r.count_or("num_key_value_heads", heads);
    if (kv != heads) m["kv_heads"] = kv;
    m["vocab"] = r.count("vocab_size");
    const std::string act = r.text_or("hidden_act", "silu");
    if (act != "silu") r.fail("hidden_act", fmt::format("expected \"silu\" (SwiGLU, as the llama arch runs) for {}, got \"{}\"", name, act));
    if (r.flag_or("tie_word_embeddings", false)) {
      warn("tie_word_embeddings", "true: the llama arch keeps its own output layer, so vocab x hidden more "
                                  "parameters are counted than the model has");
    }
    auto is_true = [&](const char* key) { return hf.contains(key) && hf[key].is_boolean() && hf[key].get<bool>(); };
    if (is_true("attention_bias") || is_true("mlp_bias")) {
      warn("attention_bias", "biases are left out (the llama arch has none): their parameters and adds are not counted");
    }
    if (arch->qk_norm) m["qk_norm"] = true;
    // Sliding-window attention (Mistral's sliding_window; Qwen's when use_sliding_window).
    const bool mistral_style = name == "MistralForCausalLM" || f == Family::kMixtral;
    const bool windowed = mistral_style ? r.has("sliding_window") : r.flag_or("use_sliding_window", false);
    (void)r.has("sliding_window");
    if (windowed) {
      warn("sliding_window", fmt::format("{}: attention runs over the whole sequence (sliding windows are not "
                                         "modelled), the same for sequences up to the window",
                                         hf.value("sliding_window", json()).dump()));
    }
    if (f == Family::kDeepseekV3) {
      // Multi-head Latent Attention: every head its own key and value from the shared low-rank latent.
      // null: queries without compression (DeepSeek-V2-Lite), trainsim's 0.
      // Absent is no such statement (Hugging Face's class default is 1536).
      m["attention"] = "mla";
      if (!hf.contains("q_lora_rank")) {
        r.fail("q_lora_rank", "is missing (expected a positive integer, or null for queries without compression)");
      }
      m["q_lora_rank"] = r.has("q_lora_rank") ? r.count("q_lora_rank") : 0;
      m["kv_lora_rank"] = r.count("kv_lora_rank");
      m["qk_rope_head_dim"] = r.count("qk_rope_head_dim");
      m["v_head_dim"] = r.count("v_head_dim");
      m["head_dim"] = r.count("qk_nope_head_dim");
      if (kv != heads) r.fail("num_key_value_heads", fmt::format("expected {} (MLA gives every head its own key and value), got {}", heads, kv));
    } else if (r.has("head_dim")) {
      const int head_dim = r.count("head_dim");
      if (head_dim * heads != h) m["head_dim"] = head_dim;
    }
    json moe;
    if (f == Family::kLlama) {
      m["ffn"] = r.count("intermediate_size");
    } else if (f == Family::kMixtral) {
      moe["experts"] = r.count("num_local_experts");
      moe["top_k"] = r.count("num_experts_per_tok");
      moe["expert_ffn"] = r.count("intermediate_size");
      moe["router"] = "softmax";
    } else if (f == Family::kQwen3Moe) {
      moe["experts"] = r.count("num_experts");
      moe["top_k"] = r.count("num_experts_per_tok");
      moe["expert_ffn"] = r.count("moe_intermediate_size");
      moe["router"] = "softmax";
      (void)r.count("intermediate_size");  // a dense MLP's width: no layer has one
      if (r.count_or("decoder_sparse_step", 1) != 1) {
        r.fail("decoder_sparse_step", fmt::format("{}: every n-th layer counted from layer n - 1 is not modelled "
                                                  "(model.moe.layer_freq counts from layer 0); expected 1",
                                                  hf["decoder_sparse_step"].dump()));
      }
      if (r.has("mlp_only_layers") && !(r.at("mlp_only_layers").is_array() && r.at("mlp_only_layers").empty())) {
        r.fail("mlp_only_layers", fmt::format("{}: dense layers at chosen places are not modelled (model.moe."
                                              "dense_layers takes the first k); expected []",
                                              hf["mlp_only_layers"].dump()));
      }
    } else {  // DeepSeek-V3
      m["ffn"] = r.count("intermediate_size");  // its first_k_dense_replace dense layers
      moe["experts"] = r.count("n_routed_experts");
      moe["top_k"] = r.count("num_experts_per_tok");
      moe["expert_ffn"] = r.count("moe_intermediate_size");
      const int shared = r.has("n_shared_experts") ? r.count("n_shared_experts") : 0;
      if (shared > 0) {
        moe["shared_experts"] = shared;
        moe["shared_expert_ffn"] = moe["expert_ffn"];
      }
      const std::string scoring = r.text_or("scoring_func", "softmax");
      if (scoring != "sigmoid" && scoring != "softmax") r.fail("scoring_func", "expected \"sigmoid\" or \"softmax\", got \"" + scoring + "\"");
      moe["router"] = scoring;
      if (r.has("first_k_dense_replace")) {
        const json& k = r.at("first_k_dense_replace");
        if (!k.is_number_integer() || k.get<long long>() < 0 || k.get<long long>() > 1'000'000) {
          r.fail("first_k_dense_replace", "expected a whole number of dense layers, got " + k.dump());
        }
        moe["dense_layers"] = k.get<int>();
      }
      moe["layer_freq"] = r.count_or("moe_layer_freq", 1);
      if (r.count_or("num_nextn_predict_layers", 0) > 0) {
        warn("num_nextn_predict_layers", fmt::format("{}: the multi-token prediction module is not modelled (its "
                                                     "layers, their parameters and their work are left out)",
                                                     hf["num_nextn_predict_layers"].dump()));
      }
      const int groups = r.count_or("n_group", 1), reached = r.count_or("topk_group", groups);
      if (reached < groups) {
        warn("topk_group", fmt::format("{} of n_group {}: group-limited routing is not modelled (a token's experts "
                                       "fall anywhere, as with free top-k routing)",
                                       reached, groups));
      }
    }
    if (!moe.is_null()) m["moe"] = moe;
  }
  const std::vector<std::string> unread = r.unread();
  if (!unread.empty()) {
    std::string list;
    for (const std::string& k : unread) list += (list.empty() ? "" : ", ") + k;
    warn(unread.front(), "not read (no field trainsim maps for " + name + "): " + list);
  }
  return out;
}

}  // namespace trainsim::config
