#include "config/megatron_args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "config/error.hpp"

namespace trainsim::config {

namespace {

using nlohmann::json;

// Flags (or prefixes, ending in '-') with no bearing on what a step costs.
const std::vector<std::string> kIgnored = {
    "--data-", "--split", "--mock-data", "--tokenizer-", "--vocab-file", "--merge-file", "--tiktoken-",
    "--num-workers", "--dataloader-type", "--save", "--load", "--ckpt-", "--log-", "--log", "--tensorboard-",
    "--wandb-", "--timing-log-", "--eval-", "--exit-", "--save-", "--train-iters", "--train-samples", "--lr", "--lr-",
    "--min-lr", "--decoupled-", "--weight-decay", "--clip-grad", "--adam-", "--sgd-", "--init-method-std",
    "--seed", "--attention-dropout", "--hidden-dropout", "--rotary-", "--position-embedding-type",
    "--max-position-embeddings", "--normalization", "--apply-layernorm-1p", "--disable-bias-linear",
    "--use-mcore-models", "--transformer-impl", "--manual-gc", "--empty-unused-memory-level",
    "--calculate-per-token-loss", "--cross-entropy-loss-fusion", "--moe-grouped-gemm", "--moe-aux-loss-coeff",
    "--moe-router-load-balancing-type", "--moe-z-loss-coeff", "--moe-router-dtype", "--moe-router-pre-softmax",
    "--moe-token-drop-policy", "--moe-pad-expert-input-to-capacity", "--moe-router-force-load-balancing",
    "--moe-permute-fusion", "--fp8-amax-", "--fp8-margin", "--distributed-timeout-minutes", "--distributed-backend",
    "--profile", "--profile-", "--no-", "--use-flash-attn", "--make-vocab-size-divisible-by", "--accumulate-allreduce-grads-in-fp32",
    "--bias-", "--masked-softmax-fusion", "--use-rotary-position-embeddings", "--num-dataset-builder-threads",
    "--rerun-mode", "--use-checkpoint-args", "--check-for-nan-in-loss-and-grad", "--bf16-", "--fp16-lm-cross-entropy",
    "--attention-softmax-in-fp32", "--kv-lora-rank-", "--mtp-", "--ddp-bucket-size", "--rotary-base"};

bool ignored(const std::string& flag) {
  for (const std::string& p : kIgnored) {
    if (p.back() == '-' ? flag.rfind(p, 0) == 0 : flag == p) return true;
  }
  return false;
}

class Args {
 public:
  Args(const std::vector<std::string>& argv, const std::string& where) : where_(where) {
    std::string current;
    for (const std::string& a : argv) {
      if (a.rfind("--", 0) == 0 && a.size() > 2) {
        std::string flag = a, value;
        const auto eq = a.find('=');
        if (eq != std::string::npos) {
          flag = a.substr(0, eq);
          value = a.substr(eq + 1);
        }
        std::vector<std::string> fresh;
        if (eq != std::string::npos) fresh.push_back(value);
        if (const auto it = values_.find(flag); it != values_.end()) earlier_[flag] = it->second;
        values_[flag] = fresh;
        if (std::find(order_.begin(), order_.end(), flag) == order_.end()) order_.push_back(flag);
        current = flag;
      } else if (!current.empty()) {
        values_[current].push_back(a);
      } else {
        fail(a, "expected a flag (--name), got a value before any flag");
      }
    }
  }
  [[noreturn]] void fail(const std::string& flag, const std::string& what) const {
    throw ConfigError(fmt::format("{}: {}: {}", where_, flag, what));
  }
  bool has(const std::string& flag) {
    read_.insert(flag);
    return values_.count(flag) > 0;
  }
  bool flag(const std::string& f) {
    if (!has(f)) return false;
    if (!values_[f].empty()) fail(f, "takes no value, got " + values_[f].front());
    return true;
  }
  std::string text(const std::string& f) {
    if (!has(f) || values_[f].size() != 1) fail(f, has(f) ? "expected one value" : "is missing");
    return values_[f].front();
  }
  std::vector<std::string> list(const std::string& f) {
    (void)has(f);
    return values_.count(f) ? values_[f] : std::vector<std::string>{};
  }
  long long integer(const std::string& f, long long min) {
    const std::string v = text(f);
    std::size_t end = 0;
    long long n = 0;
    try {
      n = std::stoll(v, &end);
    } catch (const std::exception&) {
      end = 0;
    }
    if (end != v.size() || n < min || n > 1'000'000'000) {
      fail(f, fmt::format("expected a whole number of at least {}, got \"{}\"", min, v));
    }
    return n;
  }
  long long integer_or(const std::string& f, long long fallback, long long min) {
    return has(f) ? integer(f, min) : fallback;
  }
  double number(const std::string& f) {
    const std::string v = text(f);
    std::size_t end = 0;
    double x = 0.0;
    try {
      x = std::stod(v, &end);
    } catch (const std::exception&) {
      end = 0;
    }
    if (end != v.size() || !(x > 0.0)) fail(f, "expected a positive number, got \"" + v + "\"");
    return x;
  }
  // The flags given but not read, in order.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const std::string& f : order_) {
      if (!read_.count(f)) out.push_back(f);
    }
    return out;
  }
  // Flags given twice with different values (a script's two branches, say).
  std::vector<std::string> repeated() const {
    std::vector<std::string> out;
    for (const auto& [flag, before] : earlier_) {
      if (before != values_.at(flag)) out.push_back(flag);
    }
    return out;
  }

 private:
  std::string where_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<std::string>> earlier_;
  std::set<std::string> read_;
};

}  // namespace

MegatronImport config_from_megatron(const std::vector<std::string>& argv, const ImportCluster& cluster,
                                    const std::string& where) {
  Args a(argv, where);
  MegatronImport out;
  auto warn = [&](const std::string& flag, const std::string& what) {
    out.warnings.push_back(fmt::format("{}: {}: {}", where, flag, what));
  };
  for (const std::string& f : a.repeated()) {
    if (!ignored(f)) warn(f, "given more than once with different values: the last one counts, as Megatron-LM reads it");
  }

  // The model.
  json m;
  m["name"] = "Megatron-LM model";
  const bool swiglu = a.flag("--swiglu");
  m["arch"] = swiglu ? "llama" : "gpt";
  const bool untied = a.flag("--untie-embeddings-and-output-weights");
  if (swiglu && !untied) {
    warn("--swiglu", "without --untie-embeddings-and-output-weights: the llama arch keeps its own output layer, so "
                     "vocab x hidden more parameters are counted than the model has");
  } else if (!swiglu && untied) {
    warn("--untie-embeddings-and-output-weights", "without --swiglu: the gpt arch ties the output layer to the "
                                                  "input embedding, so vocab x hidden fewer parameters are counted");
  }
  const long long layers = a.integer("--num-layers", 1), h = a.integer("--hidden-size", 1),
                  heads = a.integer("--num-attention-heads", 1);
  m["layers"] = layers;
  m["hidden"] = h;
  m["heads"] = heads;
  if (a.flag("--group-query-attention")) m["kv_heads"] = a.integer("--num-query-groups", 1);
  else if (a.has("--num-query-groups")) warn("--num-query-groups", "without --group-query-attention: not read, as Megatron-LM does");
  if (a.has("--kv-channels") && a.integer("--kv-channels", 1) * heads != h) m["head_dim"] = a.integer("--kv-channels", 1);
  // Megatron-LM's default MLP width: 4h, or with SwiGLU 2/3 of it rounded down to a multiple of 64.
  const long long ffn_default = swiglu ? (4 * h * 2 / 3) / 64 * 64 : 4 * h;
  const long long ffn = a.integer_or("--ffn-hidden-size", ffn_default, 1);
  m["seq"] = a.integer("--seq-length", 1);
  const long long tp = a.integer_or("--tensor-model-parallel-size", 1, 1);
  if (a.has("--padded-vocab-size")) {
    m["vocab"] = a.integer("--padded-vocab-size", 1);
  } else if (a.has("--vocab-size")) {
    // Padded to a multiple of --make-vocab-size-divisible-by (128) x tp, as Megatron-LM pads it.
    const long long step = a.integer_or("--make-vocab-size-divisible-by", 128, 1) * tp;
    m["vocab"] = (a.integer("--vocab-size", 1) + step - 1) / step * step;
  } else {
    a.fail("--vocab-size", "is missing: the vocabulary comes from the tokenizer files, which import does not read; "
                           "add --padded-vocab-size N (or --vocab-size N)");
  }
  if (a.flag("--qk-layernorm")) m["qk_norm"] = true;
  if (a.flag("--multi-latent-attention")) {
    m["attention"] = "mla";
    // Absent: queries without compression (Megatron-Core's q_lora_rank None), trainsim's 0.
    m["q_lora_rank"] = a.has("--q-lora-rank") ? a.integer("--q-lora-rank", 1) : 0;
    m["kv_lora_rank"] = a.integer("--kv-lora-rank", 1);
    m["qk_rope_head_dim"] = a.integer_or("--qk-pos-emb-head-dim", 64, 1);
    m["head_dim"] = a.integer_or("--qk-head-dim", 128, 1);
    m["v_head_dim"] = a.integer_or("--v-head-dim", 128, 1);
    m.erase("kv_heads");
  }
  const bool moe = a.has("--num-experts");
  bool dense_layers = !moe;
  if (moe) {
    json e;
    e["experts"] = a.integer("--num-experts", 1);
    e["top_k"] = a.integer_or("--moe-router-topk", 2, 1);
    e["expert_ffn"] = a.integer_or("--moe-ffn-hidden-size", ffn, 1);
    if (a.has("--moe-shared-expert-intermediate-size")) {
      e["shared_experts"] = 1;
      e["shared_expert_ffn"] = a.integer("--moe-shared-expert-intermediate-size", 1);
    }
    const std::string score = a.has("--moe-router-score-function") ? a.text("--moe-router-score-function") : "softmax";
    if (score != "softmax" && score != "sigmoid") a.fail("--moe-router-score-function", "expected softmax or sigmoid, got " + score);
    e["router"] = score;
    if (a.has("--moe-expert-capacity-factor")) e["capacity_factor"] = a.number("--moe-expert-capacity-factor");
    if (a.has("--moe-layer-freq")) {
      // An integer n (every n-th layer), or the pattern ([0]*k+[1]*m): the first k layers dense
      // (at most 9 digits each, so that they fit).
      const std::string freq = a.text("--moe-layer-freq").substr(0, 64);
      std::smatch match;
      if (std::regex_match(freq, match, std::regex(R"(\(?\[0\]\s*\*\s*(\d{1,9})\s*\+\s*\[1\]\s*\*\s*(\d{1,9})\)?)"))) {
        e["dense_layers"] = std::stoll(match[1]);
        if (std::stoll(match[1]) + std::stoll(match[2]) != layers) {
          a.fail("--moe-layer-freq", fmt::format("{} covers {} layers, --num-layers gives {}", freq,
                                                 std::stoll(match[1]) + std::stoll(match[2]), layers));
        }
        dense_layers = std::stoll(match[1]) > 0;
      } else if (std::regex_match(freq, std::regex(R"(\d{1,9})"))) {
        e["layer_freq"] = std::stoll(freq);
        dense_layers = std::stoll(freq) > 1;
      } else {
        a.fail("--moe-layer-freq", "\"" + freq + "\": expected n (every n-th layer a MoE one) or ([0]*k+[1]*m) (the first k "
                                   "dense); other patterns are not modelled");
      }
    }
    m["moe"] = e;
  } else {
    (void)a.has("--moe-ffn-hidden-size");
  }
  if (dense_layers) m["ffn"] = ffn;
  out.config["model"] = m;

  // The plan, over the cluster's GPUs.
  json p;
  const long long pp = a.integer_or("--pipeline-model-parallel-size", 1, 1),
                  cp = a.integer_or("--context-parallel-size", 1, 1);
  // Data parallelism takes the GPUs the model-parallel groups leave.
  const long long gpus = gpus_of(cluster);
  if (gpus <= 0 || gpus % (tp * cp * pp) != 0) {
    a.fail("--tensor-model-parallel-size", fmt::format("tp x cp x pp = {} x {} x {} does not divide the {} GPUs of {} "
                                                       "{} nodes",
                                                       tp, cp, pp, gpus, cluster.nodes, cluster.node));
  }
  p["tp"] = tp;
  p["dp"] = gpus / (tp * cp * pp);
  p["pp"] = pp;
  if (cp > 1) p["cp"] = cp;
  if (a.has("--num-layers-per-virtual-pipeline-stage") && a.has("--num-virtual-stages-per-pipeline-rank")) {
    a.fail("--num-virtual-stages-per-pipeline-rank", "with --num-layers-per-virtual-pipeline-stage: give one of them");
  }
  long long vp = 1;
  if (a.has("--num-layers-per-virtual-pipeline-stage")) {
    const long long n = a.integer("--num-layers-per-virtual-pipeline-stage", 1);
    if (layers % (pp * n) != 0) {
      a.fail("--num-layers-per-virtual-pipeline-stage", fmt::format("{} layers a virtual stage do not divide {} layers over "
                                                                    "pp = {}",
                                                                    n, layers, pp));
    }
    vp = layers / (pp * n);
  } else if (a.has("--num-virtual-stages-per-pipeline-rank")) {
    vp = a.integer("--num-virtual-stages-per-pipeline-rank", 1);
  }
  if (vp > 1) p["vp"] = vp;
  if (moe) {
    if (a.has("--expert-model-parallel-size")) p["ep"] = a.integer("--expert-model-parallel-size", 1);
    if (a.has("--expert-tensor-parallel-size")) p["etp"] = a.integer("--expert-tensor-parallel-size", 1);
    // Megatron-LM's dispatchers: alltoall, allgather, flex (DeepEP).
    const std::string dispatcher = a.has("--moe-token-dispatcher-type") ? a.text("--moe-token-dispatcher-type") : "allgather";
    const bool deepep = a.flag("--moe-enable-deepep") ||
                        (a.has("--moe-flex-dispatcher-backend") && a.text("--moe-flex-dispatcher-backend") == "deepep");
    if (dispatcher == "flex" || deepep) {
      p["moe_dispatcher"] = "deepep";
    } else if (dispatcher == "alltoall" || dispatcher == "allgather") {
      p["moe_dispatcher"] = dispatcher;
    } else {
      a.fail("--moe-token-dispatcher-type", "expected alltoall, allgather or flex, got " + dispatcher);
    }
  }
  if (a.flag("--sequence-parallel")) {
    if (tp > 1) {
      p["sequence_parallel"] = true;
    } else {
      warn("--sequence-parallel", "with --tensor-model-parallel-size 1: off, as Megatron-LM turns it off");
    }
  }
  p["microbatch_size"] = a.integer("--micro-batch-size", 1);
  // Megatron-LM's default: one micro-batch a data-parallel rank.
  p["global_batch"] = a.integer_or("--global-batch-size", p["microbatch_size"].get<long long>() * p["dp"].get<long long>(), 1);
  p["schedule"] = vp > 1 ? "interleaved-1f1b" : "1f1b";
  // Recomputation.
  if (a.flag("--recompute-activations")) p["recompute"] = "selective";
  if (a.has("--recompute-granularity")) {
    const std::string g = a.text("--recompute-granularity");
    if (g != "full" && g != "selective") a.fail("--recompute-granularity", "expected full or selective, got " + g);
    p["recompute"] = g;
    if (g == "full") {
      const std::string method = a.has("--recompute-method") ? a.text("--recompute-method") : "uniform";
      const long long n = a.integer_or("--recompute-num-layers", 1, 1);
      if (method == "block") {
        p["recompute_layers"] = n;  // the first n layers of each stage
      } else if (method != "uniform" || n != 1) {
        a.fail("--recompute-method", fmt::format("{} with --recompute-num-layers {}: only uniform over 1 layer (every layer "
                                                 "redone) and block (the first n of a stage) are modelled",
                                                 method, n));
      }
    }
  }
  if (a.has("--recompute-modules")) p["recompute_modules"] = a.list("--recompute-modules");
  // Fine-grained activation offloading: Megatron-Core offloads the listed
  // modules' inputs only with the switch on.
  if (a.flag("--fine-grained-activation-offloading")) {
    if (!a.has("--offload-modules")) {
      a.fail("--fine-grained-activation-offloading", "needs --offload-modules (the modules whose inputs go to the host)");
    }
    p["offload_modules"] = a.list("--offload-modules");
  }
  if (a.flag("--use-distributed-optimizer")) p["distributed_optimizer"] = true;
  // --create-all-gather-group gives the gathers a process group apart from
  // the reductions': under Megatron FSDP its reduce-scatters then run beside
  // its gathers; the distributed optimizer's gathers run on a stream of
  // their own here either way.
  const bool all_gather_group = a.flag("--create-all-gather-group");
  if (a.flag("--use-megatron-fsdp")) {
    p["zero_stage"] = 3;
    p.erase("distributed_optimizer");
    (void)a.has("--data-parallel-sharding-strategy");
    if (all_gather_group) p["fsdp_reduce_scatter_group"] = "separate";
  }
  // Precision.
  if (a.flag("--fp16") && a.flag("--bf16")) a.fail("--fp16", "with --bf16: give one of them");
  const bool fp16 = a.flag("--fp16"), bf16 = a.flag("--bf16");
  if (!fp16 && !bf16) {
    a.fail("--bf16", "is missing: trainsim simulates 16-bit training (--bf16 or --fp16, or FP8 beside one); "
                     "FP32 training is not modelled");
  }
  if (a.has("--fp8-format")) {
    p["precision"] = "fp8";
    const std::string recipe = a.has("--fp8-recipe") ? a.text("--fp8-recipe") : "delayed";
    if (recipe != "delayed" && recipe != "tensorwise" && recipe != "blockwise" && recipe != "mxfp8") {
      a.fail("--fp8-recipe", "expected delayed, tensorwise, blockwise or mxfp8, got " + recipe);
    }
    p["fp8_recipe"] = recipe;
    p["fp8_library"] = "transformer-engine";  // Megatron-Core's linear layers are Transformer Engine's
    (void)a.text("--fp8-format");
    if (a.flag("--fp8-param-gather")) {
      if (p.value("zero_stage", 0) == 3) {
        p["fp8_param_gather"] = true;
      } else {
        warn("--fp8-param-gather", "the distributed optimizer's parameter all-gather is simulated in BF16 (an FP8 "
                                   "gather is modelled under ZeRO-3 / Megatron FSDP only)");
      }
    }
  } else if (fp16) {
    p["precision"] = "fp16";
  }
  // Megatron-Core keeps FP32 main gradients and reduces them so unless told to reduce in BF16.
  p["grad_dtype"] = a.flag("--grad-reduce-in-bf16") ? "bf16" : "fp32";
  // The precision-aware optimizer keeps Adam's moments in the types given
  // (default FP32 each); one key holds both, so they must agree.
  if (a.flag("--use-precision-aware-optimizer")) {
    const std::string avg = a.has("--exp-avg-dtype") ? a.text("--exp-avg-dtype") : "fp32";
    const std::string avg_sq = a.has("--exp-avg-sq-dtype") ? a.text("--exp-avg-sq-dtype") : "fp32";
    if (avg != avg_sq) {
      a.fail("--exp-avg-dtype", fmt::format("{} with --exp-avg-sq-dtype {}: the two moments in different types are "
                                            "not modelled (parallel.optimizer_moment_dtype holds both)",
                                            avg, avg_sq));
    }
    if (avg != "fp32" && avg != "bf16" && avg != "fp16" && avg != "fp8") {
      a.fail("--exp-avg-dtype", fmt::format("\"{}\": expected fp32, fp16, bf16 or fp8", avg));
    }
    if (avg != "fp32") p["optimizer_moment_dtype"] = avg;
  }
  // Transformer Engine's backend choice (Megatron-LM's default, auto) takes
  // cuDNN's fused attention over FlashAttention on Hopper and newer: the
  // presets with cuDNN figures.
  const std::string backend = a.has("--attention-backend") ? a.text("--attention-backend") : "auto";
  const bool cudnn_figures = node_gpu_has(cluster, "attention_cudnn_tflops");
  if (backend == "unfused" || backend == "local") {
    p["attention"] = "unfused";
  } else if ((backend == "fused" || backend == "auto") && cudnn_figures) {
    p["attention"] = "cudnn";
  } else if (backend == "fused") {
    warn("--attention-backend", "fused: cuDNN's attention is timed at FlashAttention's figures, the GPU of --cluster " +
                                    cluster.node + " having no cuDNN ones");
  }
  out.config["parallel"] = p;
  json o = json::object();
  if (a.flag("--overlap-grad-reduce")) o["overlap_grad_reduce"] = true;
  if (a.flag("--overlap-param-gather")) o["overlap_param_gather"] = true;
  if (a.flag("--tp-comm-overlap")) o["tp_comm_overlap"] = true;
  if (a.flag("--overlap-moe-expert-parallel-comm")) o["moe_a2a_overlap"] = true;
  if (!o.empty()) out.config["options"] = o;

  out.config["cluster"] = cluster_section(cluster);
  out.config["description"] = fmt::format("Imported from Megatron-LM arguments ({})", where);
  for (const std::string& f : a.unread()) (ignored(f) ? out.ignored : out.not_modelled).push_back(f);
  return out;
}

namespace {

// Shell words of a line: split at blanks outside quotes, quotes removed.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string w;
  bool any = false;
  char quote = 0;
  for (char ch : line) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        w += ch;
      }
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
      any = true;
    } else if (std::isspace(static_cast<unsigned char>(ch)) != 0) {
      if (any || !w.empty()) out.push_back(w);
      w.clear();
      any = false;
    } else {
      w += ch;
    }
  }
  if (any || !w.empty()) out.push_back(w);
  return out;
}

}  // namespace

std::vector<std::string> megatron_args_from_script(const std::string& text, const std::string& file) {
  // Logical lines: continuations joined, comments (a # at a word's start) dropped.
  std::vector<std::string> lines;
  std::string current;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1])) != 0)) {
        // Not inside quotes: count them before it.
        if (std::count(line.begin(), line.begin() + static_cast<long>(i), '"') % 2 == 0 &&
            std::count(line.begin(), line.begin() + static_cast<long>(i), '\'') % 2 == 0) {
          line.resize(i);
          break;
        }
      }
    }
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      current += line + " ";
      continue;
    }
    lines.push_back(current + line);
    current.clear();
    if (end == text.size()) break;
  }
  std::map<std::string, std::string> vars;
  std::map<std::string, std::vector<std::string>> arrays;
  // A script that expands past this (an array appended to itself line after
  // line doubles) is refused rather than filling the memory.
  constexpr std::size_t kMaxExpanded = 1 << 20;
  auto name_at = [](const std::string& s, std::size_t pos) {
    std::size_t end = pos;
    while (end < s.size() && (std::isalpha(static_cast<unsigned char>(s[end])) != 0 || s[end] == '_' ||
                              (end > pos && std::isdigit(static_cast<unsigned char>(s[end])) != 0))) {
      ++end;
    }
    return s.substr(pos, end - pos);
  };
  // $NAME, ${NAME}, ${NAME:-default}, ${NAME[@]} (an array's words, joined);
  // anything else after a $ is left as written, so that it shows in a message.
  auto expand = [&](const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      if (s[i] != '$') {
        out += s[i++];
        continue;
      }
      const bool braced = i + 1 < s.size() && s[i + 1] == '{';
      const std::size_t at = i + (braced ? 2 : 1);
      const std::string name = name_at(s, at);
      std::size_t next = at + name.size();
      std::string fallback;
      bool whole_array = false, has_fallback = false;
      if (braced) {
        if (s.compare(next, 3, "[@]") == 0) {
          whole_array = true;
          next += 3;
        } else if (s.compare(next, 2, ":-") == 0) {
          const std::size_t close = s.find('}', next + 2);
          if (close != std::string::npos) {
            fallback = s.substr(next + 2, close - next - 2);
            has_fallback = true;
            next = close;
          }
        }
      }
      const bool closed = !braced || (next < s.size() && s[next] == '}');
      if (name.empty() || !closed) {
        out += s[i++];
        continue;
      }
      if (braced) ++next;  // the closing brace
      if (whole_array) {
        std::string joined;
        for (const std::string& w : arrays[name]) joined += (joined.empty() ? "" : " ") + w;
        out += joined;
      } else if (const auto v = vars.find(name); v != vars.end() && !v->second.empty()) {
        out += v->second;
      } else if (has_fallback) {
        out += fallback;
      } else {
        out += s.substr(i, next - i);
      }
      if (out.size() > kMaxExpanded) throw ConfigError(file + ": the script's variables expand past 1 MiB");
      i = next;
    }
    return out;
  };
  std::optional<std::vector<std::string>> launch;  // the last line that runs pretrain_*.py with flags
  for (std::size_t i = 0; i < lines.size(); ++i) {
    // NAME=value, NAME=(words...) or NAME+=(words...), after blanks and an optional `export`.
    const std::string& line = lines[i];
    std::size_t pos = line.find_first_not_of(" \t");
    if (pos != std::string::npos && line.compare(pos, 7, "export ") == 0) pos = line.find_first_not_of(" \t", pos + 7);
    const std::string name = pos == std::string::npos ? "" : name_at(line, pos);
    const std::size_t after = pos + name.size();
    const bool append = !name.empty() && line.compare(after, 3, "+=(") == 0;
    if (!name.empty() && (append || line.compare(after, 2, "=(") == 0)) {
      // Its words up to the closing parenthesis, on this line or the next ones.
      std::string body = line.substr(after + (append ? 3 : 2));
      while (body.find(')') == std::string::npos && i + 1 < lines.size()) body += " " + lines[++i];
      body = body.substr(0, body.rfind(')'));
      std::vector<std::string>& arr = arrays[name];
      if (!append) arr.clear();
      for (const std::string& w : words(body)) {
        for (const std::string& part : words(expand(w))) arr.push_back(part);
      }
      if (arr.size() > kMaxExpanded) throw ConfigError(file + ": the script's arrays expand past 1 MiB");
      continue;
    }
    if (!name.empty() && line.compare(after, 1, "=") == 0) {
      const std::vector<std::string> value = words(line.substr(after + 1));
      vars[name] = value.empty() ? "" : expand(value.front());
      continue;
    }
    // The launch: the words after the pretrain_*.py script.
    std::vector<std::string> ws;
    for (const std::string& w : words(lines[i])) {
      for (const std::string& part : words(expand(w))) ws.push_back(part);
    }
    for (std::size_t k = 0; k + 1 < ws.size(); ++k) {
      const std::size_t slash = ws[k].rfind('/');
      const std::string base = slash == std::string::npos ? ws[k] : ws[k].substr(slash + 1);
      const bool script = base.rfind("pretrain_", 0) == 0 && base.size() > 3 && base.compare(base.size() - 3, 3, ".py") == 0;
      // (A test of the script's path, `[ -f pretrain_gpt.py ]`, passes it no flags.)
      if (script && ws[k + 1].rfind("--", 0) == 0) launch = {ws.begin() + static_cast<long>(k) + 1, ws.end()};
    }
  }
  if (launch) return *launch;
  throw ConfigError(file + ": no line runs a pretrain_*.py script (expected e.g. torchrun ... pretrain_gpt.py ARGS)");
}

}  // namespace trainsim::config
