// Megatron-LM's command-line arguments (pretrain_gpt.py's) as a trainsim
// config: the model's shape, the parallel plan, precision and the overlap
// flags mapped to their keys, the GPUs from the cluster given beside them.
//
// Flags read: --num-layers, --hidden-size, --ffn-hidden-size,
// --num-attention-heads, --group-query-attention / --num-query-groups,
// --kv-channels, --seq-length, --padded-vocab-size / --vocab-size (padded as
// Megatron pads it), --swiglu, --untie-embeddings-and-output-weights,
// --qk-layernorm; --micro-batch-size, --global-batch-size;
// --tensor-model-parallel-size, --pipeline-model-parallel-size,
// --num-layers-per-virtual-pipeline-stage / --num-virtual-stages-per-pipeline-rank,
// --sequence-parallel, --context-parallel-size; --num-experts,
// --moe-router-topk, --moe-ffn-hidden-size, --moe-shared-expert-intermediate-size,
// --moe-layer-freq, --moe-router-score-function, --moe-expert-capacity-factor,
// --moe-token-dispatcher-type, --moe-enable-deepep / --moe-flex-dispatcher-backend,
// --expert-model-parallel-size, --expert-tensor-parallel-size,
// --multi-latent-attention and its widths; --recompute-granularity,
// --recompute-method, --recompute-num-layers, --recompute-modules,
// --recompute-activations; --use-distributed-optimizer, --overlap-grad-reduce,
// --overlap-param-gather, --tp-comm-overlap, --overlap-moe-expert-parallel-comm;
// --fp8-format, --fp8-recipe, --fp8-param-gather, --bf16, --fp16,
// --grad-reduce-in-bf16, --attention-backend.
// Flags with no bearing on a step's cost (paths, data, tokenizer, logging,
// learning rate and optimizer hyperparameters, initialisation, dropout,
// checkpoints) are listed as ignored; any other flag as not modelled.
// Nothing is dropped silently.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/import_cluster.hpp"

namespace trainsim::config {

struct MegatronImport {
  nlohmann::json config;
  std::vector<std::string> ignored;       // flags with no bearing on a step's cost
  std::vector<std::string> not_modelled;  // flags that may matter, not read
  std::vector<std::string> warnings;      // one line each, naming the flag
};

// `args`: what follows the training script's name (pretrain_gpt.py) on its
// command line. `where` names their origin in messages. Throws ConfigError
// "WHERE: --flag: what was expected".
MegatronImport config_from_megatron(const std::vector<std::string>& args, const ImportCluster& cluster,
                                    const std::string& where);

// The arguments a launch script passes to its pretrain_*.py: its lines
// joined where they end in a backslash, comments dropped, its variables
// (NAME=value, NAME=${NAME:-default}) and arrays (NAME=( ... ), NAME+=( ... ))
// expanded as written, top to bottom; conditions are not evaluated, so an
// array filled in either branch of an if holds both. Throws ConfigError
// naming the file when no pretrain_*.py line is found.
std::vector<std::string> megatron_args_from_script(const std::string& text, const std::string& file);

}  // namespace trainsim::config
