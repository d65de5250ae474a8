// model.attention "mla" and its widths: how they read, and the one-line
// errors of what does not fit Multi-head Latent Attention.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_mla_keys_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {
// DeepSeek-V3 on 8 DGX H100s, its experts over all 64 GPUs.
json base() {
  return json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 8},
    "model": "deepseek-v3",
    "parallel": {"tp": 1, "pp": 1, "dp": 64, "ep": 64, "microbatch_size": 1, "global_batch": 64}
  })");
}
std::string error_of(const std::vector<std::string>& overrides) { return testing::load_error(base(), overrides); }
}  // namespace

TEST_CASE("DeepSeek-V3's preset: MLA, 3 dense layers, 256 experts") {
  const Scenario s = load_document(base(), "test.json", ".", {});
  CHECK(s.model.mla.enabled());
  CHECK(s.model.mla.q_lora_rank == 1536);
  CHECK(s.model.mla.kv_lora_rank == 512);
  CHECK(s.model.head_dim() == 128);
  CHECK(s.model.qk_width() == 128.0 * (128 + 64));
  CHECK(s.model.v_width() == 128.0 * 128);
  CHECK(s.model.moe.dense_layers == 3);
  CHECK(s.model.moe_layers_in(0, 61) == 58);
  CHECK(s.model.ffn == 18432);
}

TEST_CASE("MLA without query compression (q_lora_rank 0), and under per-op checkpointing") {
  // DeepSeek-V2-Lite (TorchTitan's DeepSeek-V3 16B): queries straight from the hidden state.
  json lite = base();
  lite["model"] = "deepseek-v2-lite";
  const Scenario s = load_document(lite, "test.json", ".", {});
  CHECK(s.model.mla.enabled());
  CHECK(s.model.mla.q_lora_rank == 0);
  CHECK(s.model.moe.shared_experts == 2);
  // 0 reads as "none" on any MLA model; a negative width does not.
  CHECK(error_of({"model.q_lora_rank=0"}).empty());
  CHECK(error_of({"model.q_lora_rank=-1"}) ==
        "test.json: model.q_lora_rank: expected 0 (queries without compression) or an integer from 1 to 10000000, "
        "got -1 (from --set model.q_lora_rank=-1)");
  CHECK(error_of({"model.q_lora_rank=1.5"}) ==
        "test.json: model.q_lora_rank: expected 0 (queries without compression) or an integer from 1 to 10000000, "
        "got 1.5 (from --set model.q_lora_rank=1.5)");
  // TorchTitan's per-op checkpointing runs with MLA, compressed queries or not.
  CHECK(error_of({"parallel.recompute=selective-op"}).empty());
  CHECK(testing::load_error(lite, {"parallel.recompute=selective-op"}).empty());
}

TEST_CASE("MLA's keys: what it needs and what it refuses") {
  CHECK(error_of({"model.kv_heads=16"}) ==
        "test.json: model.kv_heads: Multi-head Latent Attention gives every head its own key and value (from the "
        "shared low-rank kv_lora_rank); expected model.heads = 128 or no kv_heads, got 16 (from --set "
        "model.kv_heads=16)");
  CHECK(error_of({"model.qk_norm=true"}) ==
        "test.json: model.qk_norm: applies to standard attention; MLA has its own norms (from --set model.qk_norm=true)");
  CHECK(error_of({"model.attention=standard"}) ==
        "test.json: model.q_lora_rank: applies only with model.attention = \"mla\" (from --set model.attention=standard)");
  json no_head_dim = base();
  no_head_dim["model"] = json::parse(R"({"arch": "llama", "layers": 2, "hidden": 1024, "heads": 8, "ffn": 2048,
      "seq": 1024, "vocab": 1000, "attention": "mla", "q_lora_rank": 256, "kv_lora_rank": 128,
      "qk_rope_head_dim": 32, "v_head_dim": 64})");
  no_head_dim["parallel"] = json::parse(R"({"dp": 64, "global_batch": 64})");
  CHECK(testing::load_error(no_head_dim) ==
        "test.json: model.head_dim: is missing: Multi-head Latent Attention needs each head's non-rotary query and key "
        "width (DeepSeek-V3's qk_nope_head_dim, 128)");
  json gpt = no_head_dim;
  gpt["model"]["arch"] = "gpt";
  gpt["model"]["head_dim"] = 64;
  CHECK(testing::load_error(gpt) ==
        "test.json: model.attention: \"mla\" expects model.arch = \"llama\" (RMSNorm, no biases, as DeepSeek's models)");
  CHECK(error_of({"parallel.attention=cudnn"}).empty());  // Transformer Engine's fused attention on Hopper
  CHECK(error_of({"parallel.attention=unfused"}) ==
        "test.json: parallel.attention: \"unfused\" attention with Multi-head Latent Attention (model.attention "
        "\"mla\") is not modelled yet (from --set parallel.attention=unfused)");
  CHECK(error_of({"parallel.attention=flash-v1"}) ==
        "test.json: parallel.attention: \"flash-v1\" attention with Multi-head Latent Attention (model.attention "
        "\"mla\") is not modelled yet (from --set parallel.attention=flash-v1)");
  CHECK(error_of({"parallel.cp=2", "parallel.dp=32", "parallel.ep=32", "parallel.global_batch=32"}).empty());
  CHECK(error_of({"parallel.cp=2", "parallel.dp=32", "parallel.ep=32", "parallel.global_batch=32",
                  "parallel.cp_merge=pytorch", "parallel.cp_algorithm=all-gather"}) ==
        "test.json: parallel.cp_merge: PyTorch's context-parallel merge (\"pytorch\") with Multi-head Latent Attention "
        "(model.attention \"mla\") is not modelled yet (from --set parallel.cp_merge=pytorch)");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "parallel.recompute=selective",
                  R"(parallel.recompute_modules=["mla_up_proj"])"}) ==
        "test.json: parallel.recompute_modules: \"mla_up_proj\" needs Multi-head Latent Attention (model.attention "
        "\"mla\") (from --set parallel.recompute_modules=[\"mla_up_proj\"])");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "model.q_lora_rank=5"}) ==
        "test.json: model.q_lora_rank: applies only with model.attention = \"mla\" (from --set model.q_lora_rank=5)");
}

}  // namespace config_mla_keys_test
