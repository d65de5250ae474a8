#include "hw/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "hw/calibration_profile.hpp"

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
  const NodeSpec& node = cluster.node;
  const int nics = std::max(1, node.nics_per_node);
  // The members as (node, NIC) pairs, sorted: each node's members, and within
  // it each NIC's, then lie together, counted in one pass (no map per group:
  // a data-parallel group of a large cluster has thousands of members, and
  // every collective of a plan asks for its group).
  std::vector<std::pair<int, int>> seats;
  seats.reserve(gpus.size());
  for (int gpu : gpus) {
    const int nic = node.gpus_per_node > 0 ? (gpu % node.gpus_per_node) * nics / node.gpus_per_node : 0;
    seats.emplace_back(cluster.node_of(gpu), nic);
  }
  std::sort(seats.begin(), seats.end());
  int nodes = 0;
  for (std::size_t i = 0; i < seats.size();) {
    std::size_t end_node = i;
    int node_nics = 0;
    while (end_node < seats.size() && seats[end_node].first == seats[i].first) ++end_node;
    const int on_node = static_cast<int>(end_node - i);
    for (std::size_t j = i; j < end_node;) {
      std::size_t end_nic = j;
      while (end_nic < end_node && seats[end_nic].second == seats[j].second) ++end_nic;
      const int on_nic = static_cast<int>(end_nic - j);
      ++node_nics;
      g.ranks_per_nic = std::max(g.ranks_per_nic, on_nic);
      // Each member on this NIC exchanges with every member off its node.
      g.nic_peers = std::max(g.nic_peers, on_nic * (g.ranks - on_node));
      j = end_nic;
    }
    g.min_nics_per_node = nodes == 0 ? node_nics : std::min(g.min_nics_per_node, node_nics);
    g.ranks_per_node = nodes == 0 ? std::max(1, on_node) : std::max(g.ranks_per_node, on_node);
    g.min_ranks_per_node = nodes == 0 ? on_node : std::min(g.min_ranks_per_node, on_node);
    ++nodes;
    i = end_node;
  }
  g.nodes = std::max(1, nodes);
  const NetworkSpec& net = cluster.network;
  // A custom network states no oversubscription: each NIC counts in full
  // (flow collectives show its contention).
  if (net.kind != NetworkKind::kFlat && net.kind != NetworkKind::kCustom && !seats.empty()) {
    const int first_leaf = seats.front().first / net.nodes_per_leaf;
    const int last_leaf = seats.back().first / net.nodes_per_leaf;
    if (first_leaf != last_leaf) g.nic_share = 1.0 / net.oversubscription;
  }
  return g;
}

double concurrent_nic_share(const ClusterSpec& cluster, const std::vector<std::vector<int>>& groups) {
  // Flat counters indexed by node and GPU rather than maps: a sweep costs this
  // for every stage of every plan, over groups of up to thousands of members.
  const NodeSpec& node = cluster.node;
  const int nics = std::max(1, node.nics_per_node);
  const int per_node = std::max(1, node.gpus_per_node);
  for (const std::vector<int>& gpus : groups) {
    for (int gpu : gpus) {
      if (gpu < 0 || gpu >= cluster.gpus()) {
        throw std::invalid_argument("GPU " + std::to_string(gpu) + " is outside the cluster (GPUs 0 to " +
                                    std::to_string(cluster.gpus() - 1) + ")");
      }
    }
  }
  // With a NIC per GPU, disjoint groups never want more NICs on a node than
  // they have members there, each on its own NIC.
  if (nics >= per_node) return 1.0;
  std::vector<int> members(cluster.nodes, 0);  // of the group at hand, per node
  std::vector<int> demand(cluster.nodes, 0);   // NICs wanted per node, over all groups
  std::vector<char> seated(static_cast<std::size_t>(cluster.nodes) * per_node, 0);  // GPUs of crossing groups
  std::vector<int> touched, demanded;
  for (const std::vector<int>& gpus : groups) {
    touched.clear();
    for (int gpu : gpus) {
      if (members[cluster.node_of(gpu)]++ == 0) touched.push_back(cluster.node_of(gpu));
    }
    if (touched.size() > 1) {
      // As many NICs as the group's rings drive (group_of's channels): at most
      // the NICs its own members sit on, so only other groups can crowd it.
      const int channels = group_of(cluster, gpus).min_nics_per_node;
      for (int n : touched) {
        if (demand[n] == 0) demanded.push_back(n);
        demand[n] += channels;
      }
      for (int gpu : gpus) seated[static_cast<std::size_t>(gpu)] = 1;
    }
    for (int n : touched) members[n] = 0;
  }
  double share = 1.0;
  for (int n : demanded) {
    // A GPU's NIC grows with its local index, so distinct NICs are counted in one pass.
    int offered = 0, last_nic = -1;
    for (int l = 0; l < per_node; ++l) {
      if (!seated[static_cast<std::size_t>(n) * per_node + l]) continue;
      const int nic = l * nics / per_node;
      if (nic != last_nic) ++offered;
      last_nic = nic;
    }
    share = std::min(share, static_cast<double>(offered) / demand[n]);
  }
  return share;
}

double ring_bus_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group) {
  const double nvlink = node.nvlink_bus_gb_per_s * 1e9;
  if (group.nodes <= 1) return nvlink;
  // NCCL runs one ring per NIC it can use; each ring crosses every node
  // boundary once, so the NICs' sum bounds the bus bandwidth.
  const int nics = std::max(1, std::min(group.min_nics_per_node, node.nics_per_node));
  return std::min(nvlink, nics * node.nic_bus_gb_per_s * 1e9 * group.nic_share);
}

double send_recv_bytes_per_s(const NodeSpec& node, const CollectiveGroup& group) {
  const double ring = ring_bus_bytes_per_s(node, group);
  if (group.nodes > 1 || !(node.nvlink_sendrecv_gb_per_s > 0.0)) return ring;
  return std::min(ring, node.nvlink_sendrecv_gb_per_s * 1e9);
}

CollectivePlan plan_point_to_point(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                                   const NodeSpec& node) {
  CollectivePlan best;
  const int n = group.ranks;
  if (n <= 1 || !(bytes > 0.0)) return best;
  const bool send_recv = kind == CollectiveKind::kSendRecv;
  const double bus_bw = send_recv ? send_recv_bytes_per_s(node, group) : ring_bus_bytes_per_s(node, group);
  const double per_peer = bytes / n;  // all-to-all: what each rank sends each other rank
  best.seconds = std::numeric_limits<double>::infinity();
  for (const Protocol& p : kProtocols) {
    CollectivePlan plan;
    plan.point_to_point = true;
    plan.steps = 1;
    plan.network_steps = group.nodes > 1 ? 1 : 0;
    plan.base_us = p.base_us;
    plan.nvlink_step_us = p.nvlink_step_us;
    plan.network_step_us = p.network_step_us;
    plan.bandwidth_share = p.bandwidth_share;
    plan.bus_bytes_per_s = bus_bw;
    plan.bus_bytes = send_recv ? bytes : bytes * (n - 1) / n;
    if (send_recv) {
      const double latency_us = p.base_us + (group.nodes > 1 ? p.network_step_us : p.nvlink_step_us);
      plan.seconds = latency_us * 1e-6 + bytes / (bus_bw * p.bandwidth_share);
    } else {
      // Transfers inside a node and across nodes use different links (NVLink,
      // NICs) and run at once: the slower class decides.
      double slowest = 0.0;
      if (group.ranks_per_node > 1) {
        slowest = p.nvlink_step_us * 1e-6 + (group.ranks_per_node - 1) * per_peer /
                                                (node.nvlink_bus_gb_per_s * 1e9 * p.bandwidth_share);
      }
      if (group.nodes > 1) {
        slowest = std::max(slowest, p.network_step_us * 1e-6 +
                                        group.nic_peers * per_peer /
                                            (node.nic_bus_gb_per_s * 1e9 * group.nic_share * p.bandwidth_share));
      }
      plan.seconds = p.base_us * 1e-6 + slowest;
    }
    if (plan.seconds < best.seconds) best = plan;
  }
  return best;
}

CollectivePlan plan_ring(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node) {
  if (kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kSendRecv) {
    return plan_point_to_point(kind, bytes, group, node);
  }
  CollectivePlan best;
  const int n = group.ranks;
  if (n <= 1 || !(bytes > 0.0)) return best;
  // A ring over n ranks takes n - 1 steps (twice for an all-reduce), of which
  // nodes - 1 (twice) cross the network.
  // How the kinds map on NCCL's ring model (tuning.cc): an all-reduce takes
  // 2 (n - 1) steps and moves 2 (n - 1)/n of the buffer per rank; a
  // reduce-scatter or all-gather n - 1 steps and (n - 1)/n; a broadcast n
  // steps and the whole buffer.
  const bool broadcast = kind == CollectiveKind::kBroadcast;
  const int rounds = kind == CollectiveKind::kAllReduce ? 2 : 1;
  const double bus_bw = ring_bus_bytes_per_s(node, group);
  const bool one_per_node = group.ranks_per_node < 2;
  best.seconds = std::numeric_limits<double>::infinity();
  for (const Protocol& p : kProtocols) {
    CollectivePlan plan;
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

CollectivePlan plan_tree(double bytes, const CollectiveGroup& group, const NodeSpec& node) {
  CollectivePlan best;
  if (group.ranks <= 1 || !(bytes > 0.0)) return best;
  const double bus_bw = ring_bus_bytes_per_s(node, group);
  const int depth = log2_floor(group.nodes);
  best.seconds = std::numeric_limits<double>::infinity();
  for (const TreeProtocol& p : kTreeProtocols) {
    const double latency_us =
        p.base_us + 2.0 * ((group.ranks_per_node - 1) * p.nvlink_us + depth * p.network_us);
    const double share = kTreeBandwidth * (group.nodes > 1 ? p.share_nodes : p.share_one_node);
    const double seconds = latency_us * 1e-6 + bytes / (0.5 * bus_bw * share);
    if (seconds < best.seconds) {
      best.algorithm = CollectiveAlgorithm::kTree;
      // Up the chain of the deepest node and the tree over nodes, then down.
      best.steps = 2 * (group.ranks_per_node - 1 + depth);
      best.network_steps = 2 * depth;
      best.base_us = p.base_us;
      best.nvlink_step_us = p.nvlink_us;
      best.network_step_us = p.network_us;
      best.bandwidth_share = share;
      best.bus_bytes_per_s = bus_bw;
      best.bus_bytes = 2.0 * bytes;
      best.seconds = seconds;
    }
  }
  return best;
}

CollectivePlan plan_hierarchical(CollectiveKind kind, double bytes, const CollectiveGroup& group,
                                 const NodeSpec& node) {
  CollectivePlan plan;
  const int k = group.ranks_per_node, m = group.nodes;
  const bool reduces = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
                       kind == CollectiveKind::kAllGather;
  // One ring per local rank needs as many members on every node; with one
  // node, or one member per node, it would only be a ring with extra launches.
  if (!reduces || m < 2 || k < 2 || group.min_ranks_per_node != k || !(bytes > 0.0)) return plan;
  CollectiveGroup inside;
  inside.ranks = inside.ranks_per_node = inside.min_ranks_per_node = k;
  CollectiveGroup across;
  across.ranks = across.nodes = m;
  across.nic_share = group.nic_share;
  // The k rings across nodes run at once: rings of members sharing a NIC split it.
  NodeSpec shared = node;
  shared.nic_bus_gb_per_s = node.nic_bus_gb_per_s / group.ranks_per_nic;
  const double shard = bytes / k;  // what each local rank's ring across nodes carries
  using K = CollectiveKind;
  std::vector<CollectivePhase> phases;
  if (kind == K::kAllReduce) {
    phases = {{K::kReduceScatter, bytes, false, {}}, {K::kAllReduce, shard, true, {}}, {K::kAllGather, bytes, false, {}}};
  } else if (kind == K::kReduceScatter) {
    phases = {{K::kReduceScatter, bytes, false, {}}, {K::kReduceScatter, shard, true, {}}};
  } else {
    phases = {{K::kAllGather, shard, true, {}}, {K::kAllGather, bytes, false, {}}};
  }
  plan.algorithm = CollectiveAlgorithm::kHierarchical;
  for (CollectivePhase& ph : phases) {
    ph.plan = ph.across_nodes ? plan_ring(ph.kind, ph.bytes, across, shared) : plan_ring(ph.kind, ph.bytes, inside, node);
    plan.steps += ph.plan.steps;
    plan.network_steps += ph.plan.network_steps;
    plan.bus_bytes += ph.plan.bus_bytes;
    plan.seconds += ph.plan.seconds;
  }
  plan.base_us = phases.front().plan.base_us;
  plan.phases = std::move(phases);
  return plan;
}

CollectivePlan plan_collective(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node,
                               CollectiveAlgorithm algorithm) {
  CollectivePlan ring = plan_ring(kind, bytes, group, node);
  if (ring.point_to_point || ring.steps == 0) return ring;
  // NCCL measured on as many GPUs of one node (cluster.calibration) times the
  // collective itself, whatever algorithm NCCL chose there.
  if (const CalibrationProfile* p = node.gpu.calibration.get();
      p != nullptr && group.nodes == 1 && p->nccl_ranks == group.ranks && algorithm != CollectiveAlgorithm::kTree) {
    if (const CollectiveCurve* measured = p->collective(kind)) {
      ring.seconds = measured->seconds(bytes);
      return ring;
    }
  }
  switch (algorithm) {
    case CollectiveAlgorithm::kRing: return ring;
    case CollectiveAlgorithm::kTree:
      return kind == CollectiveKind::kAllReduce ? plan_tree(bytes, group, node) : ring;
    case CollectiveAlgorithm::kHierarchical: {
      CollectivePlan h = plan_hierarchical(kind, bytes, group, node);
      return h.steps > 0 ? h : ring;
    }
    case CollectiveAlgorithm::kAuto: break;
  }
  if (kind != CollectiveKind::kAllReduce) return ring;
  CollectivePlan tree = plan_tree(bytes, group, node);
  return tree.seconds < ring.seconds ? tree : ring;
}

core::Time collective_time(CollectiveKind kind, double bytes, const CollectiveGroup& group, const NodeSpec& node,
                           CollectiveAlgorithm algorithm) {
  return core::Time::seconds(plan_collective(kind, bytes, group, node, algorithm).seconds);
}

}  // namespace trainsim::hw
