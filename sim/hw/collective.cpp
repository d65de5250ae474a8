#include "hw/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace trainsim::hw {

namespace {

// NCCL's ring model (NVIDIA/nccl src/graph/tuning.cc; constants also in
// HARDWARE-FACTS.md §4): per protocol a base latency, a latency per step over
// NVLink and per step over the network, in microseconds, and the share of the
// bus bandwidth the protocol reaches: LL 0.5; LL128 0.92, or 0.7 with a single
// rank per node; Simple all of it.
struct Protocol {
  double base_us;
  double nvlink_step_us;
  double network_step_us;
  double bandwidth_share;
  double bandwidth_share_one_per_node;
};
constexpr Protocol kProtocols[] = {
    {6.6, 0.6, 2.7, 0.5, 0.5},     // LL
    {14.0, 1.9, 4.0, 0.92, 0.7},   // LL128
    {8.4, 3.4, 14.0, 1.0, 1.0},    // Simple
};

// NCCL's tree latencies, same source and order (LL, LL128, Simple): base,
// per NVLink hop, per network hop.
struct TreeProtocol {
  double base_us;
  double nvlink_us;
  double network_us;
  double share_one_node;
  double share_nodes;
};
constexpr TreeProtocol kTreeProtocols[] = {
    {6.8, 0.6, 5.0, 1.0 / 3.8, 1.0 / 3.8},        // LL
    {14.0, 1.25, 8.5, 7.0 / 9.0, 120.0 / 128.0},  // LL128
    {8.4, 4.0, 14.0, 1.0, 1.0},                   // Simple
};
constexpr double kTreeBandwidth = 0.92;

int log2_floor(int n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

}  // namespace

CollectiveGroup group_of(const ClusterSpec& cluster, const std::vector<int>& gpus) {
  CollectiveGroup g;
  g.ranks = static_cast<int>(gpus.size());
  std::map<int, int> per_node;
  for (int gpu : gpus) ++per_node[cluster.node_of(gpu)];
  g.nodes = std::max<int>(1, static_cast<int>(per_node.size()));
  g.ranks_per_node = 1;
  g.min_ranks_per_node = per_node.empty() ? 1 : per_node.begin()->second;
  for (const auto& [node, count] : per_node) {
    g.ranks_per_node = std::max(g.ranks_per_node, count);
    g.min_ranks_per_node = std::min(g.min_ranks_per_node, count);
  }
  const NetworkSpec& net = cluster.network;
  // A custom network states no oversubscription: each NIC counts in full
  // (flow collectives show its contention).
  if (net.kind != NetworkKind::kFlat && net.kind != NetworkKind::kCustom && !per_node.empty()) {
    const int first_leaf = per_node.begin()->first / net.nodes_per_leaf;
    const int last_leaf = per_node.rbegin()->first / net.nodes_per_leaf;
    if (first_leaf != last_leaf) g.nic_share = 1.0 / net.oversubscription;
  }
  return g;
}

double ring_bus_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group) {
  const double nvlink = node.nvlink_bus_gb_per_s * 1e9;
  if (group.nodes <= 1) return nvlink;
  // NCCL runs one ring per NIC it can use; each ring crosses every node
  // boundary once, so the NICs' sum bounds the bus bandwidth.
  const int nics = std::max(1, std::min(group.min_ranks_per_node, node.nics_per_node));
  return std::min(nvlink, nics * node.nic_bus_gb_per_s * 1e9 * group.nic_share);
}

RingPlan plan_ring(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node) {
  RingPlan best;
  const int n = group.ranks;
  if (n <= 1 || !(bytes > 0.0)) return best;
  // A ring over n ranks takes n - 1 steps (twice for an all-reduce), of which
  // nodes - 1 (twice) cross the network.
  // How the kinds map on NCCL's ring model (tuning.cc): an all-reduce takes
  // 2 (n - 1) steps and moves 2 (n - 1)/n of the buffer per rank; a
  // reduce-scatter or all-gather n - 1 steps and (n - 1)/n; a broadcast n
  // steps and the whole buffer. An all-to-all and a send/recv are not rings:
  // NCCL runs them as concurrent point-to-point transfers, so they pay one
  // step's latency after the base and move (n - 1)/n of the buffer (all of it
  // for a send/recv).
  if (kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv) {
    const double bus_bw = ring_bus_bytes_per_s(node, group);
    const double moved = kind == CollectiveKind::kSendRecv ? bytes : bytes * (n - 1) / n;
    best.seconds = std::numeric_limits<double>::infinity();
    for (const Protocol& p : kProtocols) {
      RingPlan plan;
      plan.steps = 1;
      plan.network_steps = group.nodes > 1 ? 1 : 0;
      plan.base_us = p.base_us;
      plan.nvlink_step_us = p.nvlink_step_us;
      plan.network_step_us = p.network_step_us;
      plan.bandwidth_share = p.bandwidth_share;
      plan.bus_bytes_per_s = bus_bw;
      plan.bus_bytes = moved;
      const double latency_us = p.base_us + (group.nodes > 1 ? p.network_step_us : p.nvlink_step_us);
      plan.seconds = latency_us * 1e-6 + moved / (bus_bw * p.bandwidth_share);
      if (plan.seconds < best.seconds) best = plan;
    }
    best.point_to_point = true;
    return best;
  }
  const bool broadcast = kind == CollectiveKind::kBroadcast;
  const int rounds = kind == CollectiveKind::kAllReduce ? 2 : 1;
  const double bus_bw = ring_bus_bytes_per_s(node, group);
  const bool one_per_node = group.ranks_per_node < 2;
  best.seconds = std::numeric_limits<double>::infinity();
  for (const Protocol& p : kProtocols) {
    RingPlan plan;
    plan.steps = broadcast ? n : rounds * (n - 1);
    plan.network_steps = rounds * (group.nodes - 1);
    plan.base_us = p.base_us;
    plan.nvlink_step_us = p.nvlink_step_us;
    plan.network_step_us = p.network_step_us;
    plan.bandwidth_share = one_per_node ? p.bandwidth_share_one_per_node : p.bandwidth_share;
    plan.bus_bytes_per_s = bus_bw;
    plan.bus_bytes = broadcast ? bytes : bytes * rounds * (n - 1) / n;
    const double latency_us = p.base_us + (plan.steps - plan.network_steps) * p.nvlink_step_us +
                              plan.network_steps * p.network_step_us;
    plan.seconds = latency_us * 1e-6 + plan.bus_bytes / (bus_bw * plan.bandwidth_share);
    if (plan.seconds < best.seconds) best = plan;
  }
  return best;
}

RingPlan plan_collective(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node) {
  RingPlan best = plan_ring(kind, bytes, group, node);
  if (kind != CollectiveKind::kAllReduce || best.steps == 0) return best;
  const double bus_bw = ring_bus_bytes_per_s(node, group);
  for (const TreeProtocol& p : kTreeProtocols) {
    const double latency_us =
        p.base_us + 2.0 * ((group.ranks_per_node - 1) * p.nvlink_us + log2_floor(group.nodes) * p.network_us);
    const double share = kTreeBandwidth * (group.nodes > 1 ? p.share_nodes : p.share_one_node);
    const double seconds = latency_us * 1e-6 + bytes / (0.5 * bus_bw * share);
    if (seconds < best.seconds) {
      best.tree = true;
      best.base_us = latency_us;
      best.bandwidth_share = share;
      best.seconds = seconds;
    }
  }
  return best;
}

core::Time collective_time(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node) {
  return core::Time::seconds(plan_collective(kind, bytes, group, node).seconds);
}

}  // namespace trainsim::hw
