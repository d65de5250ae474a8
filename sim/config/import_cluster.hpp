// The cluster an imported run (Megatron-LM arguments, a TorchTitan job) is
// on: their own files name the GPUs a rank runs on, not the nodes; the
// command line gives those.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::config {

struct ImportCluster {
  std::string node;     // a node preset, e.g. "dgx-h100"
  int nodes = 0;        // how many
  std::string network;  // a network preset; empty for the node's default
  int nvlink_domain_nodes = 0;  // cluster.nvlink_domain_nodes (a Slurm segment); 0 for the node's domain
};

// Its GPUs (nodes x the preset's GPUs a node). Throws ConfigError
// "--cluster: unknown node preset ..." for a name with no preset.
long long gpus_of(const ImportCluster& cluster);

// Whether the node preset's GPU preset gives `key` (e.g. a curve some plans need).
bool node_gpu_has(const ImportCluster& cluster, const std::string& key);

// The config's "cluster" section.
nlohmann::json cluster_section(const ImportCluster& cluster);

}  // namespace trainsim::config
