#include "config/import_cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/error.hpp"
#include "config/presets.hpp"
#include "config/schema.hpp"

namespace trainsim::config {

long long gpus_of(const ImportCluster& cluster) {
  const auto node = find_preset("node", cluster.node);
  if (!node) {
    const auto known = preset_names("node");
    const auto near = closest(cluster.node, known);
    // The command's own option, not a line of the imported file.
    throw ConfigError(fmt::format("--cluster: unknown node preset \"{}\"{}; known presets: {}", cluster.node,
                                  near ? fmt::format(" (did you mean \"{}\"?)", *near) : "", fmt::join(known, ", ")));
  }
  return static_cast<long long>(cluster.nodes) * nlohmann::json::parse(*node).value("gpus_per_node", 0);
}

bool node_gpu_has(const ImportCluster& cluster, const std::string& key) {
  const auto node = find_preset("node", cluster.node);
  if (!node) return false;
  const nlohmann::json n = nlohmann::json::parse(*node);
  if (!n.contains("gpu") || !n["gpu"].is_string()) return false;
  const auto gpu = find_preset("gpu", n["gpu"].get<std::string>());
  return gpu && nlohmann::json::parse(*gpu).contains(key);
}

nlohmann::json cluster_section(const ImportCluster& cluster) {
  nlohmann::json c;
  c["node"] = cluster.node;
  c["nodes"] = cluster.nodes;
  if (!cluster.network.empty()) c["network"] = cluster.network;
  if (cluster.nvlink_domain_nodes > 0) c["nvlink_domain_nodes"] = cluster.nvlink_domain_nodes;
  return c;
}

}  // namespace trainsim::config
