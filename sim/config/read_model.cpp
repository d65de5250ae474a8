// model: a transformer by shape, or a layer table (a CNN, for burst
// parallelism); and parallel.burst.
#include "config/sections.hpp"

namespace trainsim::config::detail {

// model.moe: the experts of a mixture-of-experts model (workload/moe_spec.hpp).
workload::MoeSpec read_moe(const json& doc, const Context& ctx) {
  const Section s(doc, "model.moe", ctx);
  workload::MoeSpec e;
  e.experts = s.positive_int("experts", 1'000'000);
  e.top_k = s.positive_int("top_k", 1'000'000);
  if (e.top_k > e.experts) {
    ctx.fail(s.path("top_k"), fmt::format("expected at most model.moe.experts = {} experts a token, got {}", e.experts, e.top_k),
             {"model.moe.experts"});
  }
  e.expert_ffn = s.positive_int("expert_ffn", kMaxModelDim);
  if (s.has("shared_experts")) {
    const json& v = s.required("shared_experts", "a count");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1'000'000) {
      ctx.fail(s.path("shared_experts"), "expected a count from 0 to 1000000, got " + show(v));
    }
    e.shared_experts = v.get<int>();
  }
  if (e.shared_experts > 0) {
    e.shared_expert_ffn = s.positive_int("shared_expert_ffn", kMaxModelDim);
  } else if (s.has("shared_expert_ffn")) {
    ctx.fail(s.path("shared_expert_ffn"), "applies only with model.moe.shared_experts > 0", {"model.moe.shared_experts"});
  }
  e.router = s.choice<workload::MoeRouter>("router", workload::MoeRouter::kSoftmax,
                                            {{"softmax", workload::MoeRouter::kSoftmax},
                                             {"sigmoid", workload::MoeRouter::kSigmoid}});
  if (s.has("capacity_factor")) e.capacity_factor = s.positive_number("capacity_factor", 0.01, 1e6);
  if (s.has("dense_layers")) {
    const json& v = s.required("dense_layers", "a count");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxModelDim) {
      ctx.fail(s.path("dense_layers"), "expected a count of layers from 0 up, got " + show(v));
    }
    e.dense_layers = v.get<int>();
  }
  e.layer_freq = s.positive_int_or("layer_freq", 1, kMaxModelDim);
  return e;
}

workload::TransformerSpec read_model(const json& doc, const Context& ctx) {
  const Section s(doc, "model", ctx);
  workload::TransformerSpec m;
  m.name = s.string_or("name", "custom model");
  m.arch = s.choice<workload::Arch>("arch", workload::Arch::kGpt,
                                     {{"gpt", workload::Arch::kGpt},
                                      {"llama", workload::Arch::kLlama},
                                      {"layers", workload::Arch::kGpt}});  // "layers": read_layer_table
  m.layers = s.positive_int("layers", kMaxModelDim);
  m.hidden = s.positive_int("hidden", kMaxModelDim);
  m.heads = s.positive_int("heads", kMaxModelDim);
  m.kv_heads = s.positive_int_or("kv_heads", m.heads, kMaxModelDim);
  m.head_dim_given = s.positive_int_or("head_dim", 0, kMaxModelDim);
  m.qk_norm = s.boolean_or("qk_norm", false);
  // Multi-head Latent Attention: its four widths, and the non-rotary head width.
  const bool mla = s.choice<bool>("attention", false, {{"standard", false}, {"mla", true}});
  const std::vector<std::string> mla_keys = {"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim"};
  if (mla) {
    // 0: queries without compression (DeepSeek-V2-Lite's q_lora_rank null).
    m.mla.q_lora_rank = s.count_or_zero("q_lora_rank", kMaxModelDim, "queries without compression");
    m.mla.kv_lora_rank = s.positive_int("kv_lora_rank", kMaxModelDim);
    m.mla.qk_rope_head_dim = s.positive_int("qk_rope_head_dim", kMaxModelDim);
    m.mla.v_head_dim = s.positive_int("v_head_dim", kMaxModelDim);
    if (m.head_dim_given == 0) {
      ctx.fail(s.path("head_dim"),
               "is missing: Multi-head Latent Attention needs each head's non-rotary query and key width "
               "(DeepSeek-V3's qk_nope_head_dim, 128)",
               {"model.attention"});
    }
    if (s.has("kv_heads") && m.kv_heads != m.heads) {
      ctx.fail(s.path("kv_heads"),
               fmt::format("Multi-head Latent Attention gives every head its own key and value (from the shared "
                           "low-rank kv_lora_rank); expected model.heads = {} or no kv_heads, got {}",
                           m.heads, m.kv_heads),
               {"model.attention", "model.heads"});
    }
    if (m.qk_norm) ctx.fail(s.path("qk_norm"), "applies to standard attention; MLA has its own norms", {"model.attention"});
    if (m.arch != workload::Arch::kLlama) {
      ctx.fail(s.path("attention"), "\"mla\" expects model.arch = \"llama\" (RMSNorm, no biases, as DeepSeek's models)",
               {"model.arch"});
    }
  } else {
    for (const std::string& key : mla_keys) {
      if (s.has(key)) ctx.fail(s.path(key), "applies only with model.attention = \"mla\"", {"model.attention"});
    }
  }
  if (s.has("moe")) {
    m.moe = read_moe(doc, ctx);
    if (m.arch != workload::Arch::kLlama) {
      ctx.fail(s.path("moe"), "expects model.arch = \"llama\" (experts are SwiGLU MLPs, as in Mixtral, Qwen3 and DeepSeek)",
               {"model.arch"});
    }
    if (m.moe.has_dense_layers()) {
      if (!s.has("ffn")) {
        ctx.fail(s.path("ffn"),
                 "is missing: the dense layers model.moe.dense_layers and layer_freq leave need their MLP width "
                 "(expected a positive integer)",
                 {"model.moe.dense_layers", "model.moe.layer_freq"});
      }
      m.ffn = s.positive_int("ffn", kMaxModelDim);  // the dense layers' MLP
    } else if (s.has("ffn")) {
      ctx.fail(s.path("ffn"),
               "every layer of this MoE model is a MoE layer (model.moe.dense_layers 0, layer_freq 1), so a dense "
               "MLP width has no use; give the experts' widths in model.moe (expert_ffn, shared_expert_ffn)",
               {"model.moe"});
    }
  } else {
    m.ffn = s.positive_int("ffn", kMaxModelDim);
  }
  if (!s.has("seq")) {
    if (const auto it = ctx.preset_of.find("model"); it != ctx.preset_of.end() && it->second.rfind("Hugging Face", 0) == 0) {
      ctx.fail("model.seq",
               "is missing: a Hugging Face config does not give the training sequence length "
               "(max_position_embeddings is how far the model can see); give it beside the reference, "
               "\"model\": {\"hf\": \"config.json\", \"seq\": 4096}, or --set model.seq=4096");
    }
  }
  m.seq = s.positive_int("seq", kMaxModelDim);
  m.vocab = s.positive_int("vocab", kMaxModelDim);
  if (m.moe.enabled() && m.moe_layers_in(0, m.layers) == 0) {
    ctx.fail(s.path("moe.dense_layers"),
             fmt::format("leaves no MoE layer among model.layers = {} (dense_layers {}, layer_freq {}); expected "
                         "fewer dense layers",
                         m.layers, m.moe.dense_layers, m.moe.layer_freq),
             {"model.layers", "model.moe.layer_freq"});
  }
  s.free_text("source");
  if (m.head_dim_given == 0 && m.hidden % m.heads != 0) {
    ctx.fail(s.path("heads"),
             fmt::format("model.hidden = {} must divide evenly into {} heads (or give model.head_dim)", m.hidden, m.heads),
             {"model.hidden"});
  }
  if (static_cast<double>(m.heads) * m.head_dim() > kMaxModelDim) {
    ctx.fail(s.path("head_dim"), fmt::format("model.heads x model.head_dim = {} x {} exceeds {}", m.heads, m.head_dim(),
                                             kMaxModelDim),
             {"model.heads"});
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    ctx.fail(s.path("kv_heads"), fmt::format("expected a divisor of model.heads = {}, got {}", m.heads, m.kv_heads),
             {"model.heads"});
  }
  return m;
}

// ---- Layer-table models and burst parallelism (workload/layer_table.hpp,
// workload/burst_spec.hpp) ----

bool is_layer_table(const json& doc, const std::string& path) {
  const json* v = &doc;
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object() || !v->contains(key)) return false;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v->is_object() && v->contains("arch") && (*v)["arch"] == "layers";
}

workload::LayerTable read_layer_table(const json& doc, const std::string& path, const Context& ctx) {
  const Section s(doc, path, ctx);
  workload::LayerTable t;
  t.name = s.string_or("name", "custom model");
  s.choice<int>("arch", 0, {{"layers", 0}});
  s.free_text("source");
  for (const char* key : {"hidden", "heads", "kv_heads", "ffn", "seq", "vocab"}) {
    if (s.has(key)) ctx.fail(s.path(key), "not a key of a layer-table model (arch \"layers\"); remove it");
  }
  t.input_bytes_per_sample = s.positive_number("input_bytes_per_sample", 1.0, 1e12);
  const std::string expected =
      "a non-empty list of layers {name, flops_per_sample, params, output_bytes_per_sample[, gemms]}";
  const json& list = s.required("layers", expected);
  if (!list.is_array() || list.empty()) ctx.fail(s.path("layers"), "expected " + expected + ", got " + show(list));
  constexpr std::size_t kMaxLayers = 10'000;
  if (list.size() > kMaxLayers) {
    ctx.fail(s.path("layers"), fmt::format("expected at most {} layers, got {}", kMaxLayers, list.size()));
  }
  const std::vector<std::string> known = {"name", "flops_per_sample", "params", "output_bytes_per_sample", "gemms"};
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", s.path("layers"), i);
    const json& e = list[i];
    if (!e.is_object()) {
      ctx.fail(where, "expected a layer {name, flops_per_sample, params, output_bytes_per_sample}, got " + show(e));
    }
    for (const auto& [k, v] : e.items()) {
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      ctx.fail(where + "." + excerpt(k), unknown_key_message(k, known));
    }
    // A number in [min, max] (min 0 allows zero).
    auto number = [&](const std::string& key, double min, double max) {
      if (!e.contains(key)) {
        ctx.fail(where + "." + key, fmt::format("is missing (expected a number from {:g} to {:g})", min, max));
      }
      const json& v = e[key];
      if (!v.is_number() || !(v.get<double>() >= min) || v.get<double>() > max || (min > 0.0 && v.get<double>() == 0.0)) {
        ctx.fail(where + "." + key, fmt::format("expected a number from {:g} to {:g}, got {}", min, max, show(v)));
      }
      return v.get<double>();
    };
    workload::Layer l;
    if (!e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty()) {
      ctx.fail(where + ".name", "expected the layer's name (a non-empty string)");
    }
    l.name = e["name"].get<std::string>();
    l.flops_per_sample = number("flops_per_sample", 0.0, 1e15);
    l.params = number("params", 0.0, 1e13);
    l.output_bytes_per_sample = number("output_bytes_per_sample", 1.0, 1e12);
    if (e.contains("gemms")) {
      const json& g = e["gemms"];
      if (!g.is_array()) ctx.fail(where + ".gemms", "expected a list of [m_per_sample, n, k], got " + show(g));
      double flops = 0.0;
      for (std::size_t j = 0; j < g.size(); ++j) {
        const json& x = g[j];
        const bool ok = x.is_array() && x.size() == 3 &&
                        std::all_of(x.begin(), x.end(), [](const json& d) {
                          return d.is_number() && d.get<double>() >= 1.0 && d.get<double>() <= 1e9;
                        });
        if (!ok) {
          ctx.fail(fmt::format("{}.gemms[{}]", where, j), "expected [m_per_sample, n, k], each from 1 to 1e9, got " + show(x));
        }
        l.gemms.push_back({x[0].get<double>(), x[1].get<double>(), x[2].get<double>()});
        flops += l.gemms.back().flops_per_sample();
      }
      if (flops > l.flops_per_sample * (1.0 + 1e-9)) {
        ctx.fail(where + ".gemms", fmt::format("the GEMMs' FLOPs (2 m n k, summed: {:g}) exceed flops_per_sample = {:g}",
                                               flops, l.flops_per_sample));
      }
    }
    t.layers.push_back(std::move(l));
  }
  return t;
}

workload::BurstSpec read_burst(const json& doc, const Context& ctx) {
  workload::BurstSpec b;
  if (!doc.contains("parallel") || !doc["parallel"].is_object() || !doc["parallel"].contains("burst")) return b;
  const Section s(doc, "parallel.burst", ctx);
  if (s.has("amplification_limit")) b.amplification_limit = s.positive_number("amplification_limit", 1.0, 1e6);
  if (s.has("layer_gpus")) {
    const json& v = s.required("layer_gpus", "a list of GPU counts, one per layer");
    if (!v.is_array()) ctx.fail(s.path("layer_gpus"), "expected a list of GPU counts, one per layer, got " + show(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<long long>() < 1 || v[i].get<long long>() > kMaxGpus) {
        ctx.fail(fmt::format("{}[{}]", s.path("layer_gpus"), i), "expected a positive integer, got " + show(v[i]));
      }
      b.layer_gpus.push_back(v[i].get<int>());
    }
  }
  if (s.has("interference")) b.interference = s.non_negative_number("interference", 10.0);
  if (s.has("background")) {
    const Section bg(doc, "parallel.burst.background", ctx);
    const std::string path = bg.path("model");
    bg.required("model", "a layer-table model: a preset name such as \"resnet-50\", an object or a .json file");
    if (!is_layer_table(doc, path)) ctx.fail(path, "expected a layer-table model (arch \"layers\"), such as \"resnet-50\"");
    workload::BurstBackground background;
    background.model = read_layer_table(doc, path, ctx);
    background.batch = bg.positive_int("batch", kMaxCount);
    b.background = std::move(background);
  } else if (s.has("interference")) {
    ctx.fail(s.path("interference"), "applies only with parallel.burst.background (the job it slows the foreground for)");
  }
  return b;
}

}  // namespace trainsim::config::detail
