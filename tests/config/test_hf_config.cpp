// model from a Hugging Face config.json: "model": {"hf": PATH, "seq": N}.
// The fixtures in hf/ are written from the public configs of those models
// (their Hugging Face repositories' config.json).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/hf_config.hpp"
#include "config/load.hpp"
#include "config/json_text.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_hf_config_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {

const std::string kDir = TRAINSIM_SOURCE_DIR "/tests/config";

json doc(const json& model) {
  json d = json::parse(R"({"cluster": {"node": "dgx-h100", "nodes": 1},
                           "parallel": {"tp": 1, "pp": 1, "dp": 8, "microbatch_size": 1, "global_batch": 8}})");
  d["model"] = model;
  return d;
}

workload::TransformerSpec from_hf(const std::string& fixture, int seq) {
  return load_document(doc({{"hf", "hf/" + fixture}, {"seq", seq}}), "hf.json", kDir).model;
}

workload::TransformerSpec preset(const std::string& name) { return load_document(doc(name), "p.json", ".").model; }

json fixture(const std::string& name) {
  const std::string file = kDir + "/hf/" + name;
  return parse_json(read_text(file, "fixture"), file);
}

}  // namespace

TEST_CASE("each Hugging Face config maps to the preset of the same model") {
  for (const char* name : {"llama2-7b", "llama3.1-8b", "mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3", "deepseek-v2-lite"}) {
    CAPTURE(name);
    const workload::TransformerSpec p = preset(name);
    const workload::TransformerSpec m = from_hf(std::string(name) + ".json", p.seq);
    CHECK(m.arch == p.arch);
    CHECK(m.layers == p.layers);
    CHECK(m.hidden == p.hidden);
    CHECK(m.heads == p.heads);
    CHECK(m.kv_heads == p.kv_heads);
    CHECK(m.head_dim() == p.head_dim());
    CHECK(m.qk_norm == p.qk_norm);
    CHECK(m.vocab == p.vocab);
    CHECK(m.seq == p.seq);
    CHECK(m.moe.experts == p.moe.experts);
    CHECK(m.moe.top_k == p.moe.top_k);
    CHECK(m.moe.expert_ffn == p.moe.expert_ffn);
    CHECK(m.moe.shared_experts == p.moe.shared_experts);
    CHECK(m.moe.shared_expert_ffn == p.moe.shared_expert_ffn);
    CHECK(m.moe.dense_layers == p.moe.dense_layers);
    CHECK(m.moe.layer_freq == p.moe.layer_freq);
    CHECK(m.moe.router == p.moe.router);
    CHECK(m.mla.q_lora_rank == p.mla.q_lora_rank);
    CHECK(m.mla.kv_lora_rank == p.mla.kv_lora_rank);
    CHECK(m.mla.qk_rope_head_dim == p.mla.qk_rope_head_dim);
    CHECK(m.mla.v_head_dim == p.mla.v_head_dim);
    if (!m.moe.enabled() || m.moe.has_dense_layers()) CHECK(m.ffn == p.ffn);
    CHECK(m.total_params() == p.total_params());
  }
}

TEST_CASE("the other architectures' shapes, and what they cannot honour named") {
  // GPT-2 small: 12 layers of 768, 12 heads, ffn 4 x 768 (n_inner null), its
  // tied embedding; with learned positions for 1,024 tokens: 50,257 x 768 +
  // 1,024 x 768 = 39,383,808 embedding, 12 x 7,087,872 (12 h^2 + 13 h) =
  // 85,054,464 in layers, 1,536 final norm: 124,439,808, its published 124M.
  const workload::TransformerSpec gpt2 = from_hf("gpt2.json", 1024);
  CHECK(gpt2.arch == workload::Arch::kGpt);
  CHECK(gpt2.ffn == 3072);
  CHECK(gpt2.vocab == 50257);
  CHECK(gpt2.total_params() == 124439808.0);
  const HfModel neox = model_from_hf(fixture("gpt-neox-20b.json"), "gpt-neox-20b.json");
  CHECK(neox.model["arch"] == "gpt");
  CHECK(neox.model["ffn"] == 24576);
  REQUIRE(neox.warnings.size() == 2);
  CHECK(neox.warnings[0] ==
        "gpt-neox-20b.json: tie_word_embeddings: false: the gpt arch ties the output layer to the input embedding, "
        "so vocab x hidden fewer parameters are counted than the model has");
  const HfModel mistral = model_from_hf(fixture("mistral-7b-v0.1.json"), "m.json");
  REQUIRE(mistral.warnings.size() == 1);
  CHECK(mistral.warnings[0] ==
        "m.json: sliding_window: 4096: attention runs over the whole sequence (sliding windows are not modelled), "
        "the same for sequences up to the window");
  CHECK(mistral.model["kv_heads"] == 8);
  // Qwen2.5's sliding window is off (use_sliding_window false): nothing to say.
  const HfModel qwen2 = model_from_hf(fixture("qwen2.5-7b.json"), "q.json");
  CHECK(qwen2.warnings.empty());
  CHECK(qwen2.model["hidden"] == 3584);
  // Qwen3: QK-norm; its head_dim 128 is hidden / heads, so not repeated.
  const HfModel qwen3 = model_from_hf(fixture("qwen3-8b.json"), "q3.json");
  CHECK(qwen3.model["qk_norm"] == true);
  CHECK(!qwen3.model.contains("head_dim"));
  CHECK(qwen3.model["name"] == "q3 (Qwen3ForCausalLM)");
  // DeepSeek-V3: its multi-token prediction module and group-limited routing.
  const HfModel ds = model_from_hf(fixture("deepseek-v3.json"), "ds.json");
  REQUIRE(ds.warnings.size() == 2);
  CHECK(ds.model["q_lora_rank"] == 1536);
  // q_lora_rank null (DeepSeek-V2-Lite's): queries without compression, 0.
  json lite = fixture("deepseek-v3.json");
  lite["q_lora_rank"] = nullptr;
  CHECK(model_from_hf(lite, "lite.json").model["q_lora_rank"] == 0);
  lite.erase("q_lora_rank");
  try {
    (void)model_from_hf(lite, "lite.json");
    FAIL("a DeepSeek config without q_lora_rank was read");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "lite.json: q_lora_rank: is missing (expected a positive integer, or null for queries without compression)");
  }
  CHECK(ds.warnings[1] == "ds.json: topk_group: 4 of n_group 8: group-limited routing is not modelled (a token's "
                          "experts fall anywhere, as with free top-k routing)");
  // A llama-family model with a tied embedding, and a field no mapping reads.
  json tied = fixture("llama2-7b.json");
  tied["tie_word_embeddings"] = true;
  tied["frobnicate"] = 3;
  const HfModel t = model_from_hf(tied, "t.json");
  REQUIRE(t.warnings.size() == 2);
  CHECK(t.warnings[0] == "t.json: tie_word_embeddings: true: the llama arch keeps its own output layer, so vocab x "
                         "hidden more parameters are counted than the model has");
  CHECK(t.warnings[1] == "t.json: frobnicate: not read (no field trainsim maps for LlamaForCausalLM): frobnicate");
}

TEST_CASE("a Hugging Face config trainsim cannot map is an error naming the file and the field") {
  auto error = [](const json& hf) {
    try {
      (void)model_from_hf(hf, "c.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json llama = fixture("llama2-7b.json");
  llama["architectures"] = {"BertForMaskedLM"};
  CHECK(error(llama) ==
        "c.json: architectures: \"BertForMaskedLM\" is not one trainsim maps; it maps LlamaForCausalLM, "
        "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM, "
        "DeepseekV3ForCausalLM, DeepseekV2ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM");
  llama = fixture("llama2-7b.json");
  llama["hidden_act"] = "gelu";
  CHECK(error(llama) == "c.json: hidden_act: expected \"silu\" (SwiGLU, as the llama arch runs) for LlamaForCausalLM, "
                        "got \"gelu\"");
  llama = fixture("llama2-7b.json");
  llama.erase("num_hidden_layers");
  CHECK(error(llama) == "c.json: num_hidden_layers: is missing (expected a positive integer)");
  json qwen = fixture("qwen3-235b-a22b.json");
  qwen["mlp_only_layers"] = {0, 5};
  CHECK(error(qwen) == "c.json: mlp_only_layers: [0,5]: dense layers at chosen places are not modelled "
                       "(model.moe.dense_layers takes the first k); expected []");
  qwen = fixture("qwen3-235b-a22b.json");
  qwen["decoder_sparse_step"] = 2;
  CHECK(error(qwen) == "c.json: decoder_sparse_step: 2: every n-th layer counted from layer n - 1 is not modelled "
                       "(model.moe.layer_freq counts from layer 0); expected 1");
  CHECK(error(json::array()) == "c.json: expected a JSON object (a Hugging Face config.json)");
  // In a config: the sequence length is required beside the reference, and a
  // reference needs a path.
  CHECK(testing::load_error(doc("hf:hf/llama2-7b.json"), {}, "x.json", kDir) ==
        "x.json: model.seq: is missing: a Hugging Face config does not give the training sequence length "
        "(max_position_embeddings is how far the model can see); give it beside the reference, \"model\": {\"hf\": "
        "\"config.json\", \"seq\": 4096}, or --set model.seq=4096 (in Hugging Face config " + kDir +
            "/hf/llama2-7b.json)");
  CHECK(testing::load_error(doc("hf:hf/llama2-7b.json"), {"model.seq=4096"}, "x.json", kDir).empty());
  CHECK(testing::load_error(doc(json{{"hf", ""}, {"seq", 4096}}), {}, "x.json", kDir) ==
        "x.json: model.hf: expected the path of a Hugging Face config.json, got \"\"");
  // Keys beside the reference go over the mapped ones.
  const workload::TransformerSpec renamed =
      load_document(doc({{"hf", "hf/llama2-7b.json"}, {"seq", 2048}, {"name", "mine"}}), "x.json", kDir).model;
  CHECK(renamed.name == "mine");
  CHECK(renamed.seq == 2048);
}

}  // namespace config_hf_config_test
