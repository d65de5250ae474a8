#include "config/schema.hpp"

#include "core/nearest_name.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

namespace trainsim::config {

namespace {
const std::map<std::string, std::vector<std::string>, std::less<>>& sections() {
  // A model is a transformer by shape, or (arch "layers") a per-layer table.
  static const std::vector<std::string> model = {"name", "arch",  "layers", "hidden", "heads",
                                                 "kv_heads", "head_dim", "qk_norm", "attention", "q_lora_rank",
                                                 "kv_lora_rank", "qk_rope_head_dim", "v_head_dim", "ffn", "moe",
                                                 "seq", "vocab", "input_bytes_per_sample", "source"};
  static const std::map<std::string, std::vector<std::string>, std::less<>> s = {
      {"", {"description", "cluster", "model", "parallel", "options"}},
      {"cluster", {"node", "nodes", "nvlink_domain_nodes", "network", "calibration"}},
      {"cluster.network",
       {"name", "kind", "nodes_per_leaf", "oversubscription", "switch_latency_us", "nic_gbit_per_s", "nic_bus_gb_per_s",
        "switches", "links", "sources"}},
      {"cluster.node",
       {"name", "gpu", "gpus_per_node", "nvlink_gb_per_s", "nvlink_latency_us", "nvlink_bus_gb_per_s",
        "nvlink_sendrecv_gb_per_s", "nics_per_node", "nic_gbit_per_s", "nic_bus_gb_per_s", "nic_latency_us", "host_memory_gb",
        "host_memory_tb_per_s", "host_cores", "pcie_gb_per_s", "nvlink_domain_nodes", "sources"}},
      {"cluster.node.gpu",
       {"name", "peak_tflops", "memory_gb", "hbm_tb_per_s", "hbm_achievable_tb_per_s", "gemm_tflops",
        "gemm_max_tflops", "gemm_grid", "attention_tflops", "attention_v1_tflops", "attention_cudnn_tflops", "kernel_overhead_us", "peak_fp8_tflops", "peak_fp4_tflops", "power_w", "gemm_fp8_tflops", "gemm_fp8_max_tflops", "gemm_fp8_grid",
        "sustained_tensor_fraction",
        "sources"}},
      {"model", model},
      {"model.moe", {"experts", "top_k", "expert_ffn", "shared_experts", "shared_expert_ffn", "router", "capacity_factor",
                     "dense_layers", "layer_freq"}},
      {"parallel",
       {"tp", "pp", "dp", "cp", "cp_algorithm", "cp_merge", "vp", "microbatch_size", "global_batch", "schedule", "twobp_concat", "recompute", "recompute_layers", "recompute_modules", "offload_modules", "checkpoint_in_cpu",
        "sequence_parallel", "attention", "elementwise", "kv_repeat", "separate_projections", "sp_batch_first", "zero_stage", "distributed_optimizer", "fsdp_unit_layers",
        "fsdp_prefetch", "fsdp_prefetch_params", "fsdp_max_live_params", "fsdp_max_reuse_distance", "fsdp_persistence_threshold", "reshard_after_forward",
        "fsdp_grad_sync", "fsdp_copy_out", "fsdp_reduce_scatter_group", "fsdp_param_shards", "fsdp_shard_size", "offload", "offload_grad_copy", "loss", "grad_bucket_mib", "grad_accumulation", "precision", "grad_dtype", "optimizer_moment_dtype", "pipeline_send_split",
        "stage_layers", "fp8_recipe", "fp8_library", "fp8_param_gather", "ep", "etp", "moe_dispatcher", "burst"}},
      {"parallel.burst", {"amplification_limit", "layer_gpus", "interference", "background"}},
      {"parallel.burst.background", {"model", "batch"}},
      {"parallel.burst.background.model", model},
      {"options",
       {"strict_memory", "fidelity", "collectives", "collective_algorithm", "gpu_speed", "links", "comm_slowdown",
        "pipeline_sends", "cuda_context_mib", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
        "moe_imbalance", "moe_a2a_overlap"}},
  };
  return s;
}

}  // namespace

const std::vector<std::string>& zero3_plan_keys() {
  static const std::vector<std::string> keys = {
      "fsdp_unit_layers",     "fsdp_prefetch",   "reshard_after_forward",   "fsdp_shard_size",
      "fsdp_prefetch_params", "fsdp_persistence_threshold", "fsdp_max_live_params", "fsdp_max_reuse_distance",
      "fsdp_grad_sync",       "fsdp_copy_out",   "fsdp_reduce_scatter_group", "fsdp_param_shards"};
  return keys;
}

const std::vector<std::string>* section_keys(std::string_view section) {
  const auto it = sections().find(section);
  return it == sections().end() ? nullptr : &it->second;
}

bool is_section(std::string_view path) { return sections().find(path) != sections().end(); }

std::optional<std::string> closest(std::string_view key, const std::vector<std::string>& candidates) {
  return core::nearest_name(key, candidates);
}

std::string unknown_key_message(std::string_view key, const std::vector<std::string>& known) {
  std::string out = "unknown key";
  if (const auto near = closest(key, known)) out += " (did you mean \"" + *near + "\"?)";
  out += "; known keys here: ";
  for (std::size_t i = 0; i < known.size(); ++i) out += (i ? ", " : "") + known[i];
  return out;
}

}  // namespace trainsim::config
