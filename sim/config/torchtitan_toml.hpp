// A TorchTitan job config (the TOML file its train.py reads with
// --job.config_file) as a trainsim config: the model by name and flavor, the
// parallel degrees, batch, activation checkpointing, torch.compile and Float8
// mapped as TorchTitan applies them.
//
//   [model] name, flavor               model: the preset of that model
//                                      (llama3 8B, 70B, 405B; deepseek_v3 16B,
//                                      671B), at [training] seq_len
//   [model] converters = ["float8"],   parallel.precision "fp8", fp8_recipe
//   [quantize.linear.float8] (or the     (recipe_name, default tensorwise),
//   older [float8])                      fp8_param_gather (enable_fsdp_float8_all_gather)
//   [training] local_batch_size,       microbatch_size (without pipelining),
//   global_batch_size                    global_batch (default local x dp)
//   [training] mixed_precision_param,  bf16; grad_dtype (float32 by default)
//   mixed_precision_reduce
//   [parallelism] data_parallel_shard_degree (-1: the GPUs left),
//   data_parallel_replicate_degree     dp, zero_stage 3 (FSDP2) and HSDP's
//                                        fsdp_shard_size; DDP when only replicated
//   tensor_parallel_degree,            tp with sequence parallelism;
//   enable_async_tensor_parallel         options.tp_comm_overlap "forward" (async TP pipelines the forward only)
//   pipeline_parallel_degree, _schedule, pp, schedule, vp (stages a rank: 1 for
//   _layers_per_stage, _microbatch_size,  single-stage schedules, else 2 unless
//   _first/last_stage_less_layers          given), stage_layers as TorchTitan splits them
//   fsdp_reshard_after_forward         reshard_after_forward ("default": on, off under pp)
//   (FSDP2, always)                    fsdp_copy_out true: gathered units copied out on the compute stream;
//                                      fsdp_param_shards "fp32": its shards are the FP32 weights
//   (its Llama attention, always)      kv_repeat true: K and V copied to every query head before SDPA
//   (its Llama, always)                separate_projections true; with tp > 1 sp_batch_first true
//   (pipeline_parallel_degree > 1)     fsdp_grad_sync "last-backward", as pipelining runs FSDP
//   context_parallel_degree, _rotate_method   cp, cp_algorithm; cp_merge "pytorch" (PyTorch's context_parallel)
//   expert_parallel_degree             ep
//   expert_tensor_parallel_degree      1 only (above 1: not modelled)
//   [activation_checkpoint] mode,      recompute none / full / selective-op
//   selective_ac_option ("op")
//   [compile] enable, components       elementwise "fused" when the model is compiled, loss
//   (or [training] compile: both)      "compiled" when the loss is ("pytorch", eager, otherwise)
//
// The loss is PyTorch's cross-entropy as TorchTitan's loss function runs
// it (with tensor parallelism, under loss_parallel on each rank's vocabulary
// shard; training.disable_loss_parallel, which gathers the whole logits, is
// listed as not modelled). Sections and keys with
// no bearing on a step's cost (job, metrics, profiling, optimizer, learning
// rate, checkpoints, validation, data) are listed as ignored; any other key
// as not modelled.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/import_cluster.hpp"

namespace trainsim::config {

struct TorchTitanImport {
  nlohmann::json config;
  std::vector<std::string> ignored;       // keys ("section.key") with no bearing on a step's cost
  std::vector<std::string> not_modelled;  // keys that may matter, not read
  std::vector<std::string> warnings;
};

// `text` as read from `file`; the cluster (node preset and count) the run is
// on. Throws ConfigError "FILE:LINE:COLUMN: what" on malformed TOML and
// "FILE: section.key: what was expected" on a job it cannot map.
TorchTitanImport config_from_torchtitan(const std::string& text, const std::string& file,
                                        const ImportCluster& cluster);

}  // namespace trainsim::config
