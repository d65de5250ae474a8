// Checks across sections: the plan against the model and the cluster (GPU
// count, divisibility, size limits) and a layer-table model's plan; FP8's
// and a MoE model's checks have files of their own (fp8_checks.cpp,
// moe_checks.cpp), as do a custom network's reach (network_reach.cpp) and a
// CSV schedule (csv_schedule_read.cpp).
#include "config/sections.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "hw/collective_runner.hpp"

namespace trainsim::config::detail {

namespace {
// The node's host figures (name as the config spells it, value) that `key`
// needs, or a one-line error naming those the node does not give.
void require_host_figures(const hw::NodeSpec& node, const std::string& key,
                          const std::vector<std::pair<std::string, double>>& figures, const Context& ctx) {
  std::vector<std::string> missing;
  for (const auto& [name, value] : figures) {
    if (value <= 0.0) missing.push_back(name);
  }
  if (!missing.empty()) {
    ctx.fail(key,
             fmt::format("the node \"{}\" does not give its host's {}; set cluster.node.{} (see docs/hardware.md)",
                         node.name, join(missing, ", "), missing.front()),
             {"cluster.node"});
  }
}

// A layer-table model runs data-parallel on every GPU, or under the burst
// schedule; the pipeline and transformer settings do not apply to it.
void check_layer_plan(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const int gpus = sc.cluster.gpus();
  const bool burst = p.schedule == "burst";
  const std::string why = "does not apply to a layer-table model (it runs data-parallel, or with parallel.schedule = \"burst\")";
  if (p.tp != 1) ctx.fail("parallel.tp", why);
  if (p.cp != 1) ctx.fail("parallel.cp", why);
  if (p.pp != 1) ctx.fail("parallel.pp", why);
  if (p.vp != 1) ctx.fail("parallel.vp", why);
  if (p.microbatch_size != 1) ctx.fail("parallel.microbatch_size", why + "; each GPU runs its samples as one batch");
  if (p.twobp_concat) ctx.fail("parallel.twobp_concat", why);
  if (p.recompute != workload::Recompute::kNone) ctx.fail("parallel.recompute", why);
  if (p.sequence_parallel) ctx.fail("parallel.sequence_parallel", why);
  if (p.distributed_optimizer) ctx.fail("parallel.distributed_optimizer", why);
  if (p.zero_stage != 0) ctx.fail("parallel.zero_stage", why);
  if (!p.stage_layers.empty()) ctx.fail("parallel.stage_layers", why);
  if (p.grad_bucket_mib != workload::Plan{}.grad_bucket_mib) {
    ctx.fail("parallel.grad_bucket_mib", why + "; each layer's gradients are one all-reduce");
  }
  if (p.grad_accumulation != workload::Plan{}.grad_accumulation) ctx.fail("parallel.grad_accumulation", why);
  if (p.precision != workload::Plan{}.precision) ctx.fail("parallel.precision", why);
  if (p.fp8_param_gather) ctx.fail("parallel.fp8_param_gather", why);
  if (p.grad_dtype != workload::Plan{}.grad_dtype) ctx.fail("parallel.grad_dtype", why);
  if (p.send_split != workload::Plan{}.send_split) ctx.fail("parallel.pipeline_send_split", why);
  if (p.elementwise != workload::Plan{}.elementwise) ctx.fail("parallel.elementwise", why);
  if (p.kv_repeat) ctx.fail("parallel.kv_repeat", why);
  if (p.separate_projections) ctx.fail("parallel.separate_projections", why);
  if (p.sp_batch_first) ctx.fail("parallel.sp_batch_first", why);
  if (p.loss != workload::Plan{}.loss) ctx.fail("parallel.loss", why);
  if (!p.overlap.grad_reduce) ctx.fail("options.overlap_grad_reduce", why + "; each layer's gradients are one all-reduce");
  if (p.overlap.param_gather) ctx.fail("options.overlap_param_gather", why);
  if (p.overlap.tp_comm) ctx.fail("options.tp_comm_overlap", why);
  if (p.offload != workload::Offload::kNone) ctx.fail("parallel.offload", why);
  if (sc.options.comm_slowdown > 0.0) {
    ctx.fail("options.comm_slowdown", "not modelled for a layer-table model (parallel.burst.interference slows the "
                                      "foreground for a background job)");
  }
  if (burst && p.dp != 1 && p.dp != gpus) {
    ctx.fail("parallel.dp", fmt::format("the burst schedule gives each layer its GPUs among all {}: expected {} or "
                                        "none, got {}", gpus, gpus, p.dp));
  }
  if (!burst && p.dp != gpus) {
    ctx.fail("parallel.dp", fmt::format("a layer-table model runs data-parallel on every GPU: expected {} "
                                        "(cluster.nodes = {} x gpus_per_node = {}), got {}",
                                        gpus, sc.cluster.nodes, sc.cluster.node.gpus_per_node, p.dp));
  }
  if (p.global_batch < (burst ? 1 : gpus)) {
    ctx.fail("parallel.global_batch", fmt::format("{} samples leave GPUs without any under data parallelism over {} "
                                                  "GPUs (the burst schedule can use fewer)", p.global_batch, gpus));
  }
  const auto& layers = sc.layer_model->layers;
  // Tasks grow with layers x GPUs; keep the graph to a size that simulates in seconds.
  constexpr long long kMaxLayerGpus = 2'500'000;
  if (static_cast<long long>(layers.size()) * gpus > kMaxLayerGpus) {
    ctx.fail("model.layers", fmt::format("{} layers x {} GPUs is more than the {} the simulator takes", layers.size(),
                                         gpus, kMaxLayerGpus));
  }
  const auto& given = sc.burst.layer_gpus;
  if (!given.empty()) {
    if (given.size() != layers.size()) {
      ctx.fail("parallel.burst.layer_gpus", fmt::format("expected one GPU count per layer ({} layers), got {}",
                                                        layers.size(), given.size()));
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (gpus % given[i] != 0 || given[i] > p.global_batch) {
        ctx.fail(fmt::format("parallel.burst.layer_gpus[{}]", i),
                 fmt::format("expected a divisor of the cluster's {} GPUs up to parallel.global_batch = {} (layer "
                             "\"{}\"), got {}", gpus, p.global_batch, layers[i].name, given[i]));
      }
    }
  }
}

}  // namespace

// Checks that need more than one section.
void check_consistency(const Scenario& sc, const Context& ctx) {
  const auto& p = sc.plan;
  const auto& m = sc.model;
  const int gpus = sc.cluster.gpus();
  if (sc.layer_model) {
    check_layer_plan(sc, ctx);
    return;
  }
  if (p.schedule == "burst") {
    ctx.fail("parallel.schedule", "\"burst\" needs a layer-table model (model.arch = \"layers\"; presets vgg-16, resnet-50)");
  }
  // Only these run a stage's W's of every micro-batch back to back (a CSV
  // schedule may): under any other the key would change nothing.
  if (p.twobp_concat && p.schedule != "2bp" && p.schedule != "gpipe-2bp" && p.schedule.rfind("csv:", 0) != 0) {
    ctx.fail("parallel.twobp_concat",
             "only read by the 2bp and gpipe-2bp schedules (or a CSV schedule), which defer every micro-batch's W "
             "to the end; got schedule \"" + p.schedule + "\"",
             {"parallel.schedule"});
  }
  check_moe(sc, ctx);
  // DualPipe's two copies of every stage: what the copies do under these is
  // not modelled yet.
  if (p.pipelines() > 1) {
    auto not_yet = [&](const std::string& path, const std::string& what, const std::vector<std::string>& related) {
      ctx.fail(path, what + " under \"" + p.schedule + "\" (two copies of every stage) is not modelled yet", related);
    };
    if (p.zero_stage == 3) not_yet("parallel.zero_stage", "ZeRO-3 / FSDP sharding", {"parallel.schedule"});
    if (p.offload != workload::Offload::kNone) not_yet("parallel.offload", "offloading", {"parallel.schedule"});
    if (p.twobp_concat) not_yet("parallel.twobp_concat", "2BP's concatenated weight passes", {"parallel.schedule"});
  }
  // Multi-head Latent Attention runs fused (FlashAttention-2's or cuDNN's
  // kernel) so far.
  if (m.mla.enabled()) {
    auto not_yet = [&](const std::string& path, const std::string& what, const std::vector<std::string>& related) {
      ctx.fail(path, what + " with Multi-head Latent Attention (model.attention \"mla\") is not modelled yet", related);
    };
    if (p.attention != workload::Attention::kFlash && p.attention != workload::Attention::kCudnn) {
      not_yet("parallel.attention", fmt::format("\"{}\" attention", workload::attention_name(p.attention)), {"model.attention"});
    }
    if (p.cp_pytorch_merge()) not_yet("parallel.cp_merge", "PyTorch's context-parallel merge (\"pytorch\")", {"model.attention"});
  }
  // Selective recompute's parts must exist in the model, and are
  // Megatron-Core's, whose element-wise kernels are fused.
  if (p.recompute == workload::Recompute::kSelective && p.recompute_modules != workload::kModuleCoreAttn) {
    const bool moe = m.moe.enabled();
    if (moe && !m.moe.has_dense_layers() && (p.recompute_modules & workload::kModuleMlp) != 0) {
      ctx.fail("parallel.recompute_modules", "\"mlp\" is a dense layer's MLP, and every layer of this MoE model has a "
                                             "MoE block instead; expected \"moe\" or \"moe_act\"",
               {"model.moe"});
    }
    if (!m.mla.enabled() && (p.recompute_modules & workload::kModuleMlaUpProj) != 0) {
      ctx.fail("parallel.recompute_modules", "\"mla_up_proj\" needs Multi-head Latent Attention (model.attention \"mla\")",
               {"model.attention"});
    }
    if (!moe && (p.recompute_modules & (workload::kModuleMoe | workload::kModuleMoeAct)) != 0) {
      ctx.fail("parallel.recompute_modules", "\"moe\" and \"moe_act\" need a MoE model (model.moe)", {"model.moe"});
    }
    if (p.elementwise == workload::Elementwise::kEager) {
      ctx.fail("parallel.recompute_modules",
               "Megatron-Core's recompute modules come with its fused element-wise kernels; expected "
               "parallel.elementwise \"fused\", got \"eager\"",
               {"parallel.elementwise"});
    }
  }
  // Gradients in the other 16-bit type than the weights' (a layer-table
  // model refuses both keys above instead).
  const bool fp16 = p.precision == workload::Precision::kFp16;
  if (p.grad_dtype == (fp16 ? workload::GradDtype::kBf16 : workload::GradDtype::kFp16)) {
    const char* under = fp16 ? "fp16" : p.precision == workload::Precision::kFp8 ? "fp8 (BF16 weights)" : "bf16";
    ctx.fail("parallel.grad_dtype", fmt::format("{} gradients under {} precision; expected \"{}\" or \"fp32\" (or set "
                                                "parallel.precision)",
                                                fp16 ? "bf16" : "fp16", under, fp16 ? "fp16" : "bf16"));
  }
  // tp x pp x dp, or with context parallelism tp x cp x pp x dp, fills the
  // cluster (a cp of 1 leaves the product as it is).
  if (core::checked_product({p.tp, p.cp, p.pp, p.dp}) != gpus) {
    const bool with_cp = p.cp > 1;
    const std::string factors = with_cp ? fmt::format("tp x cp x pp x dp = {} x {} x {} x {}", p.tp, p.cp, p.pp, p.dp)
                                        : fmt::format("tp x pp x dp = {} x {} x {}", p.tp, p.pp, p.dp);
    std::vector<std::string> keys = {"parallel.tp", "parallel.pp", "parallel.dp", "cluster.nodes",
                                     "cluster.node.gpus_per_node"};
    if (with_cp) keys.insert(keys.begin() + 1, "parallel.cp");
    // Where the other factors divide the GPUs, name the dp that fills them.
    const auto others = core::checked_product({p.tp, p.cp, p.pp});
    const std::string hint = others && *others > 0 && gpus % *others == 0
                                 ? fmt::format("; expected parallel.dp = {} for these GPUs", gpus / *others)
                                 : "";
    ctx.fail("parallel", fmt::format("{} = {}, but the cluster has {} GPUs (cluster.nodes = {} x "
                                     "cluster.node.gpus_per_node = {}){}",
                                     factors, core::product_text({p.tp, p.cp, p.pp, p.dp}), gpus, sc.cluster.nodes,
                                     sc.cluster.node.gpus_per_node, hint),
             keys);
  }
  // Context parallelism splits every sequence into cp parts (the ring into
  // 2 x cp chunks, two a rank, for causal load balancing), and Ulysses' heads.
  if (p.cp > 1) {
    const bool pytorch = p.cp_merge == workload::CpMerge::kPyTorch;
    const bool two_chunks = p.cp_algorithm == workload::CpAlgorithm::kRing || pytorch;
    const int parts = two_chunks ? 2 * p.cp : p.cp;
    if (m.seq % parts != 0) {
      ctx.fail("parallel.cp",
               fmt::format("model.seq = {} does not split into {} equal chunks ({}{}{})", m.seq, parts,
                           two_chunks ? "2 x cp = 2 x " : "cp = ", p.cp,
                           two_chunks ? ": each rank takes two, for causal load balancing" : ""),
               {"model.seq", pytorch ? "parallel.cp_merge" : "parallel.cp_algorithm"});
    }
    if (pytorch && p.cp_algorithm == workload::CpAlgorithm::kAllToAll) {
      ctx.fail("parallel.cp_merge",
               "\"pytorch\" is PyTorch's context_parallel, whose rotate methods are \"all-gather\" and \"ring\" "
               "(its alltoall); expected parallel.cp_algorithm \"all-gather\" or \"ring\", got \"all-to-all\"",
               {"parallel.cp_algorithm"});
    }
    if (p.attention == workload::Attention::kUnfused) {
      ctx.fail("parallel.cp", "context parallelism splits FlashAttention's fused kernel by blocks; expected "
                              "a fused parallel.attention (\"flash\", \"flash-v1\" or \"cudnn\"), got \"unfused\"",
               {"parallel.attention"});
    }
    if (p.cp_algorithm == workload::CpAlgorithm::kAllToAll &&
        (m.heads % (p.tp * p.cp) != 0 || m.kv_heads % (p.tp * p.cp) != 0)) {
      ctx.fail("parallel.cp",
               fmt::format("all-to-all context parallelism hands each rank heads / (tp x cp) heads: model.heads = {} "
                           "and model.kv_heads = {} must divide by tp x cp = {} x {}",
                           m.heads, m.kv_heads, p.tp, p.cp),
               {"model.heads", "model.kv_heads", "parallel.cp_algorithm"});
    }
  }
  // A data- or tensor-parallel group is one collective; refused here, before
  // any costing touches a group that size.
  for (const auto& [key, size] : {std::pair<const char*, int>{"parallel.dp", p.replicas()}, {"parallel.tp", p.tp}}) {
    if (static_cast<std::size_t>(size) > hw::kMaxCollectiveRanks) {
      ctx.fail(key, fmt::format("{} ranks in one collective group, more than the {} the simulator takes", size,
                                hw::kMaxCollectiveRanks));
    }
  }
  if (!p.stage_layers.empty()) {
    long long sum = 0;
    for (int l : p.stage_layers) sum += l;
    if (static_cast<long long>(p.stage_layers.size()) != static_cast<long long>(p.pp) * p.vp || sum != m.layers) {
      ctx.fail("parallel.stage_layers", fmt::format("expected pp x vp = {} x {} = {} entries adding up to "
                                                    "model.layers = {}, got {} adding up to {}",
                                                    p.pp, p.vp, static_cast<long long>(p.pp) * p.vp, m.layers,
                                                    p.stage_layers.size(), sum),
               {"parallel.pp", "parallel.vp", "model.layers"});
    }
  } else if (m.layers % (static_cast<long long>(p.pp) * p.vp) != 0) {
    ctx.fail(p.vp > 1 ? "parallel.vp" : "parallel.pp",
             p.vp > 1 ? fmt::format("model.layers = {} does not divide into pp x vp = {} x {} = {} stages (or give "
                                    "parallel.stage_layers)",
                                    m.layers, p.pp, p.vp, static_cast<long long>(p.pp) * p.vp)
                      : fmt::format("model.layers = {} does not divide into pp = {} stages (or give "
                                    "parallel.stage_layers)",
                                    m.layers, p.pp),
             {"model.layers", "parallel.pp", "parallel.vp"});
  }
  if (m.heads % p.tp != 0) {
    ctx.fail("parallel.tp", fmt::format("model.heads = {} does not divide across tp = {} ranks", m.heads, p.tp),
             {"model.heads"});
  }
  if (m.kv_heads % p.tp != 0) {
    ctx.fail("parallel.tp",
             fmt::format("model.kv_heads = {} does not divide across tp = {} ranks", m.kv_heads, p.tp),
             {"model.kv_heads", "model.heads"});
  }
  if (m.ffn % p.tp != 0) {
    ctx.fail("parallel.tp", fmt::format("model.ffn = {} does not divide across tp = {} ranks", m.ffn, p.tp),
             {"model.ffn"});
  }
  if (!p.overlap.grad_reduce && p.zero_stage == 3) {
    ctx.fail("options.overlap_grad_reduce",
             "ZeRO-3 (FSDP, DeepSpeed stage 3) reduce-scatters each unit's gradients as soon as its backward ends; "
             "expected true with zero_stage 3",
             {"parallel.zero_stage"});
  }
  if (p.recompute == workload::Recompute::kSelectiveOp && m.arch == workload::Arch::kGpt) {
    ctx.fail("parallel.recompute",
             "\"selective-op\" is TorchTitan's per-op checkpointing of a Llama block (its matmuls wq, wk, wv, wo, "
             "w1, w3, w2); expected a Llama-style model, or \"selective\" or \"full\" for a GPT",
             {"model.arch"});
  }
  if (p.elementwise == workload::Elementwise::kEager && m.arch == workload::Arch::kGpt) {
    ctx.fail("parallel.elementwise",
             "\"eager\" is modelled for Llama-style models (RMSNorm, rotary embeddings, SwiGLU); a GPT's LayerNorm "
             "and GeLU are single kernels in eager PyTorch too: expected \"fused\"",
             {"model.arch"});
  }
  check_fp8(sc, ctx);
  // FlashAttention-1's and cuDNN's kernels are timed at the GPU's own figures for them.
  const bool v1 = p.attention == workload::Attention::kFlashV1, cudnn = p.attention == workload::Attention::kCudnn;
  const hw::GpuSpec& gpu = sc.cluster.node.gpu;
  if ((v1 && gpu.attention_v1_tflops.empty()) || (cudnn && gpu.attention_cudnn_tflops.empty())) {
    ctx.fail("parallel.attention",
             fmt::format("\"{}\" times attention at the GPU's {} figures, and the GPU {} (cluster.node.gpu) has none "
                         "({}); expected \"flash\" or \"unfused\", or a GPU with them",
                         workload::attention_name(p.attention), v1 ? "FlashAttention-1" : "cuDNN attention", gpu.name,
                         v1 ? "attention_v1_tflops" : "attention_cudnn_tflops"),
             {"cluster.node.gpu"});
  }
  if (p.offload != workload::Offload::kNone) {
    const bool params = p.offload == workload::Offload::kOptimizerAndParams;
    if (params ? p.zero_stage != 3 : p.zero_stage == 0) {
      ctx.fail("parallel.offload",
               fmt::format("\"{}\" offloads {}; expected parallel.zero_stage {}, got {}",
                           params ? "optimizer+params" : "optimizer",
                           params ? "each replica's parameter shard, which only ZeRO-3 keeps"
                                  : "each replica's shard of the optimizer state, which ZeRO keeps",
                           params ? "3" : "1, 2 or 3", p.zero_stage),
               {"parallel.zero_stage"});
    }
    const hw::NodeSpec& node = sc.cluster.node;
    require_host_figures(node, "parallel.offload",
                         {{"host_memory_gb", node.host_memory_gb},
                          {"host_memory_tb_per_s", node.host_memory_tb_per_s},
                          {"pcie_gb_per_s", node.pcie_gb_per_s}},
                         ctx);
  }
  if (p.offload_modules != 0) {
    // Fine-grained activation offloading: the MoE block's saved inputs, which
    // must be kept (not recomputed) to be offloaded, over the node's host link.
    if (!m.moe.enabled()) {
      ctx.fail("parallel.offload_modules", "\"expert_fc1\" and \"moe_act\" are a MoE block's; expected a MoE model (model.moe)",
               {"model.moe"});
    }
    if (p.recompute == workload::Recompute::kFull || p.recompute == workload::Recompute::kSelectiveOp ||
        (p.recompute == workload::Recompute::kSelective && (p.recompute_modules & workload::kModuleMoe) != 0)) {
      ctx.fail("parallel.offload_modules",
               fmt::format("recompute \"{}\"{} keeps none of the MoE block's inputs for its backward, so none can be "
                           "offloaded; expected parallel.recompute \"none\" or \"selective\" without \"moe\"",
                           workload::recompute_name(p.recompute),
                           p.recompute == workload::Recompute::kSelective ? " with module \"moe\"" : ""),
               {"parallel.recompute", "parallel.recompute_modules"});
    }
    const hw::NodeSpec& node = sc.cluster.node;
    require_host_figures(node, "parallel.offload_modules",
                         {{"pcie_gb_per_s", node.pcie_gb_per_s}, {"host_memory_gb", node.host_memory_gb}}, ctx);
  }
  if (p.checkpoint_in_cpu) {
    // DeepSpeed's CPU checkpointing moves what full recompute keeps of a
    // layer, its input, over the node's host link into host memory.
    if (p.recompute != workload::Recompute::kFull) {
      ctx.fail("parallel.checkpoint_in_cpu",
               fmt::format("moves full recompute's checkpoints to the host, and recompute \"{}\" makes none; expected "
                           "parallel.recompute \"full\"",
                           workload::recompute_name(p.recompute)),
               {"parallel.recompute"});
    }
    const hw::NodeSpec& node = sc.cluster.node;
    require_host_figures(node, "parallel.checkpoint_in_cpu",
                         {{"pcie_gb_per_s", node.pcie_gb_per_s}, {"host_memory_gb", node.host_memory_gb}}, ctx);
  }
  if (p.recompute_layers > 0) {
    int most = 0;
    for (int st = 0; st < p.stages(); ++st) most = std::max(most, p.layers_of_stage(st, m.layers));
    if (p.recompute_layers > most) {
      ctx.fail("parallel.recompute_layers",
               fmt::format("{} layers, but no stage holds more than {}; expected at most that many a stage",
                           p.recompute_layers, most),
               {"parallel.pp", "parallel.vp", "model.layers"});
    }
  }
  if (p.zero_stage == 3 && p.fsdp_shard_size > 0 && p.replicas() % p.fsdp_shard_size != 0) {
    ctx.fail("parallel.fsdp_shard_size",
             p.cp > 1 ? fmt::format("{} does not divide dp x cp = {} x {} = {}, the ranks that shard the model; "
                                    "expected a group size that does",
                                    p.fsdp_shard_size, p.dp, p.cp, p.replicas())
                      : fmt::format("{} does not divide dp = {}; expected the size of a group of replicas that shard "
                                    "the model, with dp / fsdp_shard_size groups replicating it",
                                    p.fsdp_shard_size, p.dp),
             {"parallel.dp"});
  }
  if (p.overlap.param_gather && p.zero_stage != 1 && p.zero_stage != 2) {
    ctx.fail("options.overlap_param_gather",
             fmt::format("overlaps the all-gather of the parameters that ZeRO-1/2 or the distributed optimizer "
                         "updated in shards; expected parallel.distributed_optimizer = true or zero_stage 1 or 2, "
                         "got zero_stage = {}{}",
                         p.zero_stage, p.zero_stage == 3 ? " (ZeRO-3 gathers unit by unit already)" : ""),
             {"parallel.zero_stage", "parallel.distributed_optimizer"});
  }
  if (p.overlap.tp_comm && p.tp == 1) {
    ctx.fail("options.tp_comm_overlap", "there is no tensor-parallel communication to overlap with tp = 1",
             {"parallel.tp"});
  }
  // Transformer Engine's userbuffers and PyTorch's async TP pipeline the
  // all-gather and reduce-scatter that sequence parallelism runs (Megatron-LM
  // refuses --tp-comm-overlap without --sequence-parallel).
  if (p.overlap.tp_comm && !p.sequence_parallel) {
    ctx.fail("options.tp_comm_overlap",
             "overlaps the all-gathers and reduce-scatters of sequence parallelism; expected "
             "parallel.sequence_parallel = true",
             {"parallel.sequence_parallel"});
  }
  // ZeRO-3's knobs set on a plan of another stage (a sweep's fixed keys meet
  // each plan's ZeRO stage here; a config's are refused as they are read).
  if (p.zero_stage != 3) {
    const workload::Plan d;
    const std::pair<const char*, bool> knobs[] = {
        {"parallel.fsdp_unit_layers", p.fsdp_unit_layers != d.fsdp_unit_layers},
        {"parallel.fsdp_prefetch", p.fsdp_prefetch != d.fsdp_prefetch},
        {"parallel.fsdp_prefetch_params", p.fsdp_prefetch_params != d.fsdp_prefetch_params},
        {"parallel.fsdp_max_live_params", p.fsdp_max_live_params != d.fsdp_max_live_params},
        {"parallel.fsdp_persistence_threshold", p.fsdp_persistence_threshold != d.fsdp_persistence_threshold},
        {"parallel.fsdp_max_reuse_distance", p.fsdp_max_reuse_distance.has_value()},
        {"parallel.fsdp_copy_out", p.fsdp_copy_out != d.fsdp_copy_out},
        {"parallel.fsdp_param_shards", p.fsdp_fp32_shards != d.fsdp_fp32_shards},
        {"parallel.fsdp_reduce_scatter_group",
         p.fsdp_separate_reduce_scatter_group != d.fsdp_separate_reduce_scatter_group},
        {"parallel.fsdp_grad_sync", p.grad_sync_after_last_backward != d.grad_sync_after_last_backward},
        {"parallel.offload_grad_copy", p.offload_grad_copy == workload::OffloadGradCopy::kBlocking}};
    for (const auto& [key, set] : knobs) {
      if (set) {
        ctx.fail(key, fmt::format("applies only with parallel.zero_stage = 3 (parameters sharded unit by unit), got "
                                  "zero_stage = {}",
                                  p.zero_stage),
                 {"parallel.zero_stage"});
      }
    }
  }
  if (p.fsdp_fp32_shards && p.fsdp_persistence_threshold > 0.0) {
    ctx.fail("parallel.fsdp_param_shards",
             "\"fp32\" is PyTorch FSDP's, which shards every tensor; parallel.fsdp_persistence_threshold is "
             "DeepSpeed's; expected fsdp_persistence_threshold 0 or fsdp_param_shards \"16-bit\"",
             {"parallel.fsdp_persistence_threshold"});
  }
  // PyTorch FSDP's CPU offload moves its FP32 shards themselves to the host
  // and steps them there; the offload model is DeepSpeed's (a 16-bit shard
  // beside an FP32 master on the host).
  if (p.fsdp_fp32_shards && p.offload != workload::Offload::kNone) {
    ctx.fail("parallel.fsdp_param_shards",
             "\"fp32\" with offloading is not modelled (the offload model is DeepSpeed's: a 16-bit shard beside an "
             "FP32 master on the host); expected \"16-bit\" or parallel.offload \"none\"",
             {"parallel.offload"});
  }
  if (p.offload_grad_copy && p.offload == workload::Offload::kNone) {
    ctx.fail("parallel.offload_grad_copy",
             "says how offloaded gradients reach the host; expected parallel.offload \"optimizer\" or "
             "\"optimizer+params\", got \"none\"",
             {"parallel.offload"});
  }
  // DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (runtime/pipe/
  // engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline
  // parallelism"), so its stage 3's blocking copy never meets a pipeline.
  if (p.pp > 1 && p.blocking_grad_copy()) {
    ctx.fail("parallel.offload_grad_copy",
             fmt::format("\"blocking\" is DeepSpeed's stage 3 (the default where ZeRO-3 offloads the optimizer "
                         "alone), which DeepSpeed runs without pipeline parallelism (its pipeline engine refuses "
                         "ZeRO-2 and ZeRO-3); expected parallel.pp 1, got {}, or offload_grad_copy \"async\"",
                         p.pp),
             {"parallel.pp", "parallel.offload", "parallel.zero_stage"});
  }
  if (p.grad_sync_after_last_backward && p.blocking_grad_copy()) {
    ctx.fail("parallel.offload_grad_copy",
             "\"blocking\" (DeepSpeed's stage 3, the default with offload \"optimizer\") holds each backward "
             "back for its own scatters, and parallel.fsdp_grad_sync \"last-backward\" scatters after the last "
             "backward; expected \"async\" or fsdp_grad_sync \"each-backward\"",
             {"parallel.fsdp_grad_sync"});
  }
  if (p.fsdp_max_reuse_distance && p.recompute != workload::Recompute::kFull) {
    ctx.fail("parallel.fsdp_max_reuse_distance",
             "decides what a layer's recomputation gives back before its backward; expected parallel.recompute = "
             "\"full\" (layers recomputed whole)",
             {"parallel.recompute"});
  }
  if (p.zero_stage == 3) {
    // Units of whole layers: every stage's layers divide into them.
    for (int st = 0; st < p.stages(); ++st) {
      const int layers = p.layers_of_stage(st, m.layers);
      if (layers % p.fsdp_unit_layers != 0) {
        ctx.fail("parallel.fsdp_unit_layers",
                 fmt::format("stage {} holds {} layer{}, which do not divide into units of {}; expected a divisor "
                             "of every stage's layers",
                             st, layers, layers == 1 ? "" : "s", p.fsdp_unit_layers),
                 {"parallel.pp", "parallel.vp", "parallel.stage_layers", "model.layers"});
      }
    }
  }
  const long long per_step = static_cast<long long>(p.dp) * p.microbatch_size;
  if (p.global_batch % per_step != 0) {
    ctx.fail("parallel.global_batch",
             fmt::format("{} is not a multiple of dp x microbatch_size = {} x {} = {}", p.global_batch, p.dp,
                         p.microbatch_size, per_step),
             {"parallel.dp", "parallel.microbatch_size"});
  }
  // Each (stage, micro-batch) becomes a few tasks; keep the task graph to a
  // size that simulates in seconds and fits in memory.
  constexpr long long kMaxStageMicrobatches = 2'500'000;
  const long long microbatches = p.global_batch / per_step;
  const auto work = core::checked_product({p.pp, p.vp, microbatches});
  if (!work || *work > kMaxStageMicrobatches) {
    ctx.fail("parallel", fmt::format("pp x vp x micro-batches = {} x {} x {} = {} is more than the {} the simulator "
                                     "takes (raise parallel.microbatch_size or lower parallel.global_batch)",
                                     p.pp, p.vp, microbatches, core::product_text({p.pp, p.vp, microbatches}),
                                     kMaxStageMicrobatches),
             {"parallel.pp", "parallel.vp", "parallel.global_batch", "parallel.dp", "parallel.microbatch_size"});
  }
}

}  // namespace trainsim::config::detail
