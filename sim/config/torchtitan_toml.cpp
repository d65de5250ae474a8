#include "config/torchtitan_toml.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "config/error.hpp"
#include "config/presets.hpp"

namespace trainsim::config {

namespace {

using nlohmann::json;

// TorchTitan's model name and flavor -> the preset of that model.
const std::map<std::pair<std::string, std::string>, std::string> kModels = {
    {{"llama3", "8B"}, "llama3.1-8b"},        {{"llama3", "70B"}, "llama3.1-70b"},
    {{"llama3", "405B"}, "llama3-405b"},      {{"deepseek_v3", "16B"}, "deepseek-v2-lite"},
    {{"deepseek_v3", "671B"}, "deepseek-v3"}};

// torch.distributed.pipelining's schedules -> trainsim's, and whether each runs several stages a rank.
struct Schedule {
  const char* name;
  bool multi;
};
const std::map<std::string, Schedule> kSchedules = {
    {"GPipe", {"gpipe", false}},          {"1F1B", {"1f1b", false}},       {"Interleaved1F1B", {"interleaved-1f1b", true}},
    {"LoopedBFS", {"breadth-first", true}}, {"ZBVZeroBubble", {"zb-v", true}}, {"DualPipeV", {"dualpipev", true}}};

// Sections with no bearing on a step's cost, and keys of the others so.
const std::set<std::string> kIgnoredSections = {"job", "profiling", "metrics", "optimizer", "lr_scheduler", "checkpoint",
                                                "validation", "comm", "fault_tolerance", "experimental", "debug",
                                                "memory_estimation"};
const std::set<std::string> kIgnoredKeys = {
    "model.hf_assets_path", "model.tokenizer_path", "model.print_after_conversion", "training.max_norm",
    "training.steps", "training.dataset", "training.dataset_path", "training.seed", "training.deterministic",
    "training.gc_freq", "training.gc_debug", "training.warmup_steps", "quantize.linear.float8.filter_fqns",
    "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", "float8.precompute_float8_dynamic_scale_for_fsdp",
    "float8.filter_fqns", "parallelism.context_parallel_load_balancer",
    // Read by a converter ("quantize.grouped_mm.float8") that, when on, is named not modelled.
    "quantize.grouped_mm.float8.fqns"};

class Job {
 public:
  Job(const toml::table& t, const std::string& file) : t_(t), file_(file) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", file_, key, what));
  }
  const toml::node* at(const std::string& key) {
    read_.insert(key);
    return t_.at_path(key).node();
  }
  bool has(const std::string& key) { return at(key) != nullptr; }
  long long integer(const std::string& key, long long fallback, long long min) {
    const toml::node* n = at(key);
    if (n == nullptr) return fallback;
    const auto v = n->value<long long>();
    if (!v || !n->is_integer() || *v < min) fail(key, fmt::format("expected a whole number of at least {}", min));
    return *v;
  }
  std::string text(const std::string& key, const std::string& fallback) {
    const toml::node* n = at(key);
    if (n == nullptr) return fallback;
    if (!n->is_string()) fail(key, "expected a string");
    return std::string(*n->value<std::string_view>());
  }
  bool flag(const std::string& key, bool fallback) {
    const toml::node* n = at(key);
    if (n == nullptr) return fallback;
    if (!n->is_boolean()) fail(key, "expected true or false");
    return *n->value<bool>();
  }
  std::vector<std::string> strings(const std::string& key) {
    const toml::node* n = at(key);
    std::vector<std::string> out;
    if (n == nullptr) return out;
    const toml::array* a = n->as_array();
    if (a == nullptr) fail(key, "expected a list of strings");
    for (const toml::node& e : *a) {
      if (!e.is_string()) fail(key, "expected a list of strings");
      out.emplace_back(*e.value<std::string_view>());
    }
    return out;
  }
  // Every key of the file not read, as section.key, sections and keys in alphabetical order.
  void unread(std::vector<std::string>& ignored, std::vector<std::string>& not_modelled) const {
    walk(t_, "", ignored, not_modelled);
  }

 private:
  void walk(const toml::table& t, const std::string& prefix, std::vector<std::string>& ignored,
            std::vector<std::string>& not_modelled) const {
    for (const auto& [k, v] : t) {
      const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const toml::table* sub = v.as_table()) {
        walk(*sub, key, ignored, not_modelled);
        continue;
      }
      if (read_.count(key)) continue;
      const std::string section = key.substr(0, key.find('.'));
      (kIgnoredSections.count(section) || kIgnoredKeys.count(key) ? ignored : not_modelled).push_back(key);
    }
  }
  const toml::table& t_;
  std::string file_;
  std::set<std::string> read_;
};

// TorchTitan's split of the layers over the stages (torchtitan
// distributed/pipeline_parallel.py generate_llm_fqn_per_model_part): the
// embedding and the output counted as `first_less` and `last_less` layers,
// the sum spread evenly with the first stages taking the remainder.
std::vector<int> torchtitan_split(int layers, int stages, int first_less, int last_less) {
  const int effective = layers + first_less + last_less;
  const int base = effective / stages, extra = effective % stages;
  std::vector<int> out;
  int left = layers;
  for (int s = 0; s < stages; ++s) {
    int n = base + (s < extra ? 1 : 0);
    if (s == 0) n -= first_less;
    if (s == stages - 1) n -= last_less;
    n = std::clamp(n, 0, left);
    out.push_back(n);
    left -= n;
  }
  return out;
}

}  // namespace

TorchTitanImport config_from_torchtitan(const std::string& text, const std::string& file, const ImportCluster& cluster) {
  toml::table table;
  try {
    table = toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}:{}: malformed TOML: {}", file, e.source().begin.line, e.source().begin.column,
                                  e.description()));
  }
  Job j(table, file);
  TorchTitanImport out;
  auto warn = [&](const std::string& key, const std::string& what) {
    out.warnings.push_back(fmt::format("{}: {}: {}", file, key, what));
  };

  // The model: its preset at the training sequence length.
  const std::string name = j.text("model.name", ""), flavor = j.text("model.flavor", "");
  const auto it = kModels.find({name, flavor});
  if (it == kModels.end()) {
    std::string known;
    for (const auto& [k, v] : kModels) known += (known.empty() ? "" : ", ") + k.first + " " + k.second;
    j.fail("model.flavor", fmt::format("{} {} has no trainsim preset; the mapped ones are {} (or write the config's "
                                       "model by hand, or from its Hugging Face config)",
                                       name.empty() ? "(no name)" : name, flavor.empty() ? "(no flavor)" : flavor, known));
  }
  json model = json::parse(*find_preset("model", it->second));
  const long long seq = j.integer("training.seq_len", 2048, 1);
  if (seq != model["seq"].get<long long>()) {
    model["name"] = fmt::format("{} at {} tokens", model["name"].get<std::string>(), seq);
    model["seq"] = seq;
  }
  const int layers = model["layers"].get<int>();

  // The GPUs: FSDP takes what tp, pp, cp and replication leave (shard degree -1).
  const long long gpus = gpus_of(cluster);
  const long long tp = j.integer("parallelism.tensor_parallel_degree", 1, 1),
                  pp = j.integer("parallelism.pipeline_parallel_degree", 1, 1),
                  cp = j.integer("parallelism.context_parallel_degree", 1, 1),
                  replicate = j.integer("parallelism.data_parallel_replicate_degree", 1, 1);
  long long shard = j.integer("parallelism.data_parallel_shard_degree", -1, -1);
  if (shard == 0) j.fail("parallelism.data_parallel_shard_degree", "expected -1 (the GPUs left) or at least 1");
  const long long others = tp * pp * cp * replicate;
  if (gpus <= 0 || gpus % others != 0) {
    j.fail("parallelism", fmt::format("tp x pp x cp x replicate = {} x {} x {} x {} does not divide the {} GPUs of {} {} "
                                      "nodes",
                                      tp, pp, cp, replicate, gpus, cluster.nodes, cluster.node));
  }
  if (shard == -1) shard = gpus / others;
  if (shard * others != gpus) {
    j.fail("parallelism.data_parallel_shard_degree",
           fmt::format("{} x tp x pp x cp x replicate ({}) = {} GPUs, the cluster has {}", shard, others, shard * others, gpus));
  }
  // trainsim's dp counts the data-parallel replicas; context parallelism's ranks join FSDP's sharding.
  const long long dp = shard * replicate;
  json p;
  p["tp"] = tp;
  p["pp"] = pp;
  p["dp"] = dp;
  if (cp > 1) {
    p["cp"] = cp;
    const std::string rotate = j.text("parallelism.context_parallel_rotate_method", "allgather");
    if (rotate != "allgather" && rotate != "alltoall") {
      j.fail("parallelism.context_parallel_rotate_method", "expected allgather or alltoall, got " + rotate);
    }
    p["cp_algorithm"] = rotate == "allgather" ? "all-gather" : "ring";
    p["cp_merge"] = "pytorch";  // TorchTitan's context parallelism is PyTorch's
  }
  if (shard * cp > 1) {
    p["zero_stage"] = 3;  // FSDP2's fully_shard
    p["fsdp_param_shards"] = "fp32";  // its sharded parameters stay FP32, gathered in BF16
    if (replicate > 1) p["fsdp_shard_size"] = shard * cp;
  }
  if (tp > 1) {
    // DTensor's SequenceParallel on TorchTitan's [b, s, h] activations.
    p["sequence_parallel"] = true;
    p["sp_batch_first"] = true;
  }
  // Its Llama's wq, wk, wv and w1, w3 are linear layers of their own.
  p["separate_projections"] = true;
  if (j.has("parallelism.expert_parallel_degree") && j.integer("parallelism.expert_parallel_degree", 1, 1) > 1) {
    p["ep"] = j.integer("parallelism.expert_parallel_degree", 1, 1);
  }
  // TorchTitan's expert tensor parallelism shards each expert over the
  // tensor-parallel ranks inside its EP mesh, which trainsim's etp (Megatron-
  // Core's folding) does not lay out the same way.
  if (j.integer("parallelism.expert_tensor_parallel_degree", 1, 1) > 1) {
    j.fail("parallelism.expert_tensor_parallel_degree", "above 1 is not modelled for TorchTitan jobs; expected 1");
  }
  // The batch: a rank's local batch, in pipeline micro-batches under pp.
  const long long local = j.has("training.local_batch_size") ? j.integer("training.local_batch_size", 8, 1)
                                                              : j.integer("training.batch_size", 8, 1);
  const long long global = j.integer("training.global_batch_size", -1, -1);
  p["global_batch"] = global > 0 ? global : local * dp;
  p["microbatch_size"] = local;
  if (pp > 1) {
    const std::string sched = j.text("parallelism.pipeline_parallel_schedule", "1F1B");
    const auto s = kSchedules.find(sched);
    if (s == kSchedules.end()) {
      j.fail("parallelism.pipeline_parallel_schedule",
             "\"" + sched + "\" is not modelled; trainsim runs GPipe, 1F1B, Interleaved1F1B, LoopedBFS, ZBVZeroBubble and "
                            "DualPipeV");
    }
    p["schedule"] = s->second.name;
    p["microbatch_size"] = j.integer("parallelism.pipeline_parallel_microbatch_size", 1, 1);
    const int first_less = static_cast<int>(j.integer("parallelism.pipeline_parallel_first_stage_less_layers", 1, 0));
    const int last_less = static_cast<int>(j.integer("parallelism.pipeline_parallel_last_stage_less_layers", 1, 0));
    long long stages = pp * (s->second.multi ? 2 : 1);
    if (j.has("parallelism.pipeline_parallel_layers_per_stage")) {
      const long long per = j.integer("parallelism.pipeline_parallel_layers_per_stage", 1, 1);
      stages = (layers + first_less + last_less + per - 1) / per;
      if (stages % pp != 0 || (s->second.multi ? stages / pp < 2 : stages != pp)) {
        j.fail("parallelism.pipeline_parallel_layers_per_stage",
               fmt::format("{} layers a stage make {} stages over pp {}, which {} does not run", per, stages, pp, sched));
      }
    }
    if (stages / pp > 1) p["vp"] = stages / pp;
    p["stage_layers"] = torchtitan_split(layers, static_cast<int>(stages), first_less, last_less);
  } else {
    p["schedule"] = "1f1b";
    (void)j.has("parallelism.pipeline_parallel_schedule");  // read: without a pipeline it names nothing that runs
  }
  const std::string reshard = j.text("parallelism.fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    j.fail("parallelism.fsdp_reshard_after_forward", "expected default, always or never, got " + reshard);
  }
  // TorchTitan's Llama attention copies grouped K and V out to every query
  // head (repeat_kv) before calling scaled_dot_product_attention.
  p["kv_repeat"] = true;
  if (p.value("zero_stage", 0) == 3) {
    p["reshard_after_forward"] = reshard == "always" || (reshard == "default" && pp == 1);
    // FSDP2 copies each gathered unit out of the all-gather's buffer into
    // its parameters' own tensors on the compute stream.
    p["fsdp_copy_out"] = true;
    // torch.distributed.pipelining runs an FSDP stage's backwards without
    // gradient sync and reduce-scatters after the last one.
    if (pp > 1) p["fsdp_grad_sync"] = "last-backward";
  }
  // Activation checkpointing.
  const std::string mode = j.text("activation_checkpoint.mode", "selective");
  if (mode == "full") {
    p["recompute"] = "full";
  } else if (mode == "selective") {
    const std::string option = j.text("activation_checkpoint.selective_ac_option", "2");
    if (option == "op") {
      p["recompute"] = "selective-op";
    } else {
      // A number n: every n-th block wholly checkpointed (TorchTitan's
      // layer-wise selective AC), as many blocks of a stage as that makes,
      // taken as its first ones (parallel.recompute_layers).
      long long n = 0;
      try {
        std::size_t used = 0;
        n = std::stoll(option, &used);
        if (used != option.size()) n = 0;
      } catch (const std::exception&) {
        n = 0;
      }
      if (n < 1) j.fail("activation_checkpoint.selective_ac_option", "\"" + option + "\": expected \"op\" or a whole number n >= 1");
      int most = layers;
      if (p.contains("stage_layers")) most = *std::max_element(p["stage_layers"].begin(), p["stage_layers"].end());
      if (most / n > 0) {
        p["recompute"] = "full";
        if (n > 1) p["recompute_layers"] = most / n;
      }
    }
  } else if (mode != "none") {
    j.fail("activation_checkpoint.mode", "expected none, selective or full, got " + mode);
  }
  // Precision: BF16 parameters, gradients reduced in FP32 unless said otherwise.
  const std::string param = j.text("training.mixed_precision_param", "bfloat16");
  if (param != "bfloat16") j.fail("training.mixed_precision_param", "\"" + param + "\": only bfloat16 is modelled");
  const std::string reduce = j.text("training.mixed_precision_reduce", "float32");
  if (reduce != "float32" && reduce != "bfloat16") j.fail("training.mixed_precision_reduce", "expected float32 or bfloat16");
  p["grad_dtype"] = reduce == "float32" ? "fp32" : "bf16";
  const std::vector<std::string> converters = j.strings("model.converters");
  auto converts = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (std::find(converters.begin(), converters.end(), name) != converters.end()) return true;
    }
    return false;
  };
  const bool float8 = converts({"float8", "quantize.linear.float8"}) || j.flag("float8.enable_float8_linear", false);
  const bool mx = converts({"mx", "quantize.linear.mx"});
  for (const std::string& c : converters) {
    if (c != "float8" && c != "quantize.linear.float8" && c != "mx" && c != "quantize.linear.mx") {
      warn("model.converters", "\"" + c + "\" is not modelled (the layers it converts stay BF16)");
    }
  }
  if (float8 && mx) j.fail("model.converters", "float8 and mx both convert the linear layers; expected one of them");
  if (mx) {
    // torchao's MX linear layers (Blackwell): the mxfp8 recipes, whatever kernel casts them.
    p["precision"] = "fp8";
    const std::string section = j.has("quantize.linear.mx.recipe_name") || !table.contains("mx") ? "quantize.linear.mx." : "mx.";
    const std::string recipe = j.text(section + "recipe_name", "mxfp8_cublas");
    if (recipe.rfind("mxfp8", 0) != 0) {
      j.fail(section + "recipe_name", "\"" + recipe + "\" is not modelled; expected an mxfp8 recipe (mxfp8, mxfp8_cublas, ...)");
    }
    p["fp8_recipe"] = "mxfp8";
    p["fp8_library"] = "torchao";
    for (const char* key : {"mxfp8_dim1_cast_kernel_choice", "filter_fqns"}) (void)j.has(section + key);
  }
  if (!float8) {
    // Settings of a converter that is off: read, nothing to do.
    for (const char* section : {"quantize.linear.float8.", "float8."}) {
      for (const char* key : {"recipe_name", "enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp",
                              "filter_fqns", "enable_float8_linear"}) {
        (void)j.has(std::string(section) + key);
      }
    }
  } else {
    p["precision"] = "fp8";
    const std::string section = j.has("quantize.linear.float8.recipe_name") || !table.contains("float8")
                                    ? "quantize.linear.float8."
                                    : "float8.";
    const std::string recipe = j.text(section + "recipe_name", "tensorwise");
    if (recipe != "tensorwise" && recipe != "rowwise") j.fail(section + "recipe_name", "\"" + recipe + "\" is not modelled; expected tensorwise or rowwise");
    p["fp8_recipe"] = recipe;
    p["fp8_library"] = "torchao";  // TorchTitan's Float8Linear
    if (j.flag(section + "enable_fsdp_float8_all_gather", false) && p.value("zero_stage", 0) == 3) p["fp8_param_gather"] = true;
  }
  // torch.compile: the model's element-wise ops fused between the matmuls.
  const bool compiled = j.flag("compile.enable", false) || j.flag("training.compile", false);
  const std::vector<std::string> components = j.has("compile.components") ? j.strings("compile.components")
                                                                           : std::vector<std::string>{"model", "loss"};
  auto compiles = [&](const char* component) {
    return compiled && std::find(components.begin(), components.end(), component) != components.end();
  };
  p["elementwise"] = compiles("model") ? "fused" : "eager";
  // The loss function is compiled with the model under training.compile too
  // (components/loss.py since April 2025), or as compile.components says.
  p["loss"] = compiles("loss") ? "compiled" : "pytorch";
  json o = json::object();
  if (j.flag("parallelism.enable_async_tensor_parallel", false)) {
    if (tp > 1) {
      // PyTorch's async TP pipelines the forward's collectives only.
      o["tp_comm_overlap"] = "forward";
    }
    if (!compiled) warn("parallelism.enable_async_tensor_parallel", "takes effect only with torch.compile, as TorchTitan "
                                                                    "applies it; simulated as asked");
  }
  out.config["description"] = fmt::format("Imported from the TorchTitan job {}", file);
  out.config["cluster"] = cluster_section(cluster);
  out.config["model"] = model;
  out.config["parallel"] = p;
  if (!o.empty()) out.config["options"] = o;
  j.unread(out.ignored, out.not_modelled);
  return out;
}

}  // namespace trainsim::config
