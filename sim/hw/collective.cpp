#include "hw/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace trainsim::hw {

namespace {

// NCCL's ring latency constants in microseconds, from its tuning model
// (NVIDIA/nccl src/graph/tuning.cc, see HARDWARE-FACTS.md §4 "NCCL latency
// model"). `efficiency` is the share of each line that carries data, fixed by
// the protocol's wire format: LL sends 4 data bytes per 8-byte line with its
// flag, LL128 sends 120 data bytes per 128-byte line, Simple sends data only.
struct Protocol {
  double base_us;
  double nvlink_step_us;
  double network_step_us;
  double efficiency;
};
constexpr Protocol kProtocols[] = {
    {6.6, 0.6, 2.7, 0.5},             // LL
    {14.0, 1.9, 4.0, 120.0 / 128.0},  // LL128
    {8.4, 3.4, 14.0, 1.0},            // Simple
};

}  // namespace

CollectiveGroup group_of(const ClusterSpec& cluster, const std::vector<int>& gpus) {
  CollectiveGroup g;
  g.ranks = static_cast<int>(gpus.size());
  std::map<int, int> per_node;
  for (int gpu : gpus) ++per_node[cluster.node_of(gpu)];
  g.nodes = std::max<int>(1, static_cast<int>(per_node.size()));
  g.ranks_per_node = 1;
  for (const auto& [node, count] : per_node) g.ranks_per_node = std::max(g.ranks_per_node, count);
  return g;
}

double ring_bus_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group) {
  const double nvlink = node.nvlink_bus_gb_per_s * 1e9;
  if (group.nodes <= 1) return nvlink;
  // NCCL runs one ring per NIC it can use; each ring crosses every node
  // boundary once, so the NICs' sum bounds the bus bandwidth.
  const int nics = std::max(1, std::min(group.ranks_per_node, node.nics_per_node));
  return std::min(nvlink, nics * node.nic_bus_gb_per_s * 1e9);
}

core::Time collective_time(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                           const NodeSpec& node) {
  const int n = group.ranks;
  if (n <= 1 || !(bytes > 0.0)) return core::Time::zero();
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  const int steps = all_reduce ? 2 * (n - 1) : n - 1;
  const double bus_bytes = bytes * (all_reduce ? 2.0 : 1.0) * (n - 1) / n;
  const double bus_bw = ring_bus_bytes_per_s(node, group);
  double best = std::numeric_limits<double>::infinity();
  for (const Protocol& p : kProtocols) {
    const double step_us = group.nodes > 1 ? p.network_step_us : p.nvlink_step_us;
    const double t = (p.base_us + steps * step_us) * 1e-6 + bus_bytes / (bus_bw * p.efficiency);
    best = std::min(best, t);
  }
  return core::Time::seconds(best);
}

}  // namespace trainsim::hw
