#include "hw/collective_layout.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace trainsim::hw {

namespace {

// The members by node, in GPU order, nodes in order.
std::vector<std::vector<int>> blocks_by_node(const ClusterSpec& cluster, const std::vector<int>& members) {
  std::map<int, std::vector<int>> by_node;
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  for (int g : sorted) by_node[cluster.node_of(g)].push_back(g);
  std::vector<std::vector<int>> blocks;
  for (auto& [n, block] : by_node) blocks.push_back(std::move(block));
  return blocks;
}

// Channels across nodes: one per NIC the members of the least busy node can drive, as NCCL's rings do.
int channels_of(const NodeSpec& node, const CollectiveGroup& group) {
  return group.nodes > 1 ? std::clamp(std::min(group.min_nics_per_node, node.nics_per_node), 1, 255) : 1;
}

// Where channel c leaves a node: the last member on the c-th of the NICs
// the node's members sit on (counted from the lowest, round again past the
// last), so that channels use different NICs wherever the members have them,
// and groups laid out alike on different GPUs of a node ({0, 4} and {1, 5})
// use their NICs alike.
int exit_of(const NodeSpec& node, const std::vector<int>& block, int c) {
  std::vector<int> nics;
  for (int g : block) nics.push_back(node.nic_of(g));
  std::sort(nics.begin(), nics.end());
  nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
  const int nic = nics[static_cast<std::size_t>(c) % nics.size()];
  for (int j = static_cast<int>(block.size()) - 1; j >= 0; --j) {
    if (node.nic_of(block[static_cast<std::size_t>(j)]) == nic) return j;
  }
  throw std::logic_error("exit_of: no member on a NIC its members sit on");
}

// A node's members as channel c passes them: entering at the member after
// the channel's exit and leaving through the exit.
std::vector<int> pass_through(const NodeSpec& node, const std::vector<int>& block, int c) {
  const int k = static_cast<int>(block.size());
  const int exit = exit_of(node, block, c);
  std::vector<int> order;
  for (int j = 1; j <= k; ++j) order.push_back(block[(exit + j) % k]);
  return order;
}

// Channel c's ring: each node's members in turn.
std::vector<int> channel_ring(const NodeSpec& node, const std::vector<std::vector<int>>& blocks, int c) {
  std::vector<int> ring;
  for (const auto& block : blocks) {
    const std::vector<int> order = pass_through(node, block, c);
    ring.insert(ring.end(), order.begin(), order.end());
  }
  return ring;
}

// Bus bandwidth without the oversubscription discount: for flows the up-links
// are links of their own, and contention on them slows the flows.
double unshared_bus(const NodeSpec& node, CollectiveGroup group) {
  group.nic_share = 1.0;
  return ring_bus_bytes_per_s(node, group);
}

// NCCL's model charges steps - network_steps NVLink latencies and
// network_steps network latencies after the base.
double hop_latency_us(const CollectivePlan& plan) {
  return (plan.steps - plan.network_steps) * plan.nvlink_step_us + plan.network_steps * plan.network_step_us;
}

// Ring steps over `rings`, each ring a collective of `ring_bytes` under
// `plan`, each crossing `crossings_per_ring` node boundaries. NCCL's model
// charges the network latency on network_steps steps; the chain of receives
// crosses a boundary steps x crossings / ranks times. Spreading the model's
// extra network latency over those crossings keeps the sum, so both fidelities
// agree when alone.
RingSteps ring_steps(const CollectivePlan& plan, std::vector<std::vector<int>> rings, double ring_bytes, double cap,
                     int crossings_per_ring) {
  RingSteps r;
  const int n = static_cast<int>(rings.front().size());
  r.rings = std::move(rings);
  r.steps = plan.steps;
  r.wire_bytes = ring_bytes / n / plan.bandwidth_share;
  r.cap = cap;
  r.nvlink_hop_us = r.network_hop_us = plan.nvlink_step_us;
  const double crossings = static_cast<double>(plan.steps) * crossings_per_ring / n;
  if (crossings > 0.0 && crossings_per_ring > 0) {
    r.network_hop_us += (plan.network_step_us - plan.nvlink_step_us) * plan.network_steps / crossings;
  }
  // A ring of n ranks runs 2(n - 1) steps and each step starts a flow at every
  // position: n^2 flows, each re-solving rates shared with the whole ring. Past
  // kMaxRingSteps, consecutive steps travel as one, larger chunk with their
  // hops' latencies summed. The chain of receives then takes what it took,
  // step for step (steps x (hop + chunk) is kept), and every position still
  // loads its links with the same bytes; what changes is only how finely a
  // ring's progress interleaves with the other traffic on its links.
  if (r.steps > kMaxRingSteps) {
    const int merged = (r.steps + kMaxRingSteps - 1) / kMaxRingSteps;  // steps a chunk carries
    const int steps = (r.steps + merged - 1) / merged;
    const double factor = static_cast<double>(r.steps) / steps;
    r.steps = steps;
    r.wire_bytes *= factor;
    r.nvlink_hop_us *= factor;
    r.network_hop_us *= factor;
  }
  return r;
}

// Fills each transfer's start time on an idle network and delays the phase's
// first sends by whatever the deepest path lacks of the model's latency
// (`hops_us` after the base), so that alone the pipeline takes what NCCL's
// model says.
void settle(CollectiveStage& stage, double base_us, double hops_us) {
  double deepest = 0.0;
  for (PipelinedTransfer& t : stage.transfers) {
    double ready = 0.0;
    for (int i : t.inputs) ready = std::max(ready, stage.transfers[i].start_us);
    t.start_us = ready + t.latency_us;
    deepest = std::max(deepest, t.start_us);
  }
  stage.start_us = base_us + std::max(0.0, hops_us - deepest);
}

// NCCL's tree all-reduce. Per channel, inside each node a chain from the
// channel's exit member (the node's rank in the tree) through the others, and
// across nodes a double binary tree over the nodes' exit members: tree 0 in
// heap order (node i's parent is (i - 1) / 2), tree 1 the same over the nodes
// in reverse, so that a node inner in one is mostly a leaf in the other. Each
// tree carries half the channel's share of the buffer, up (reduce) and down
// (broadcast). A node then sends and receives at most four such transfers per
// channel through its NIC (up and down in each tree), each capped at a
// quarter of the channel's bus bandwidth: every edge of the tree moves its
// bytes in the time the model gives the whole, 2 x bytes / (bus bandwidth x
// share).
CollectiveStage tree_stage(const ClusterSpec& cluster, double bytes, const std::vector<int>& members,
                           const CollectivePlan& plan) {
  const NodeSpec& node = cluster.node;
  const CollectiveGroup group = group_of(cluster, members);
  const auto blocks = blocks_by_node(cluster, members);
  const int m = static_cast<int>(blocks.size());
  const int channels = channels_of(node, group);
  const double share_bytes = bytes / (2.0 * channels) / plan.bandwidth_share;
  const double cap = unshared_bus(node, group) / (4.0 * channels);
  CollectiveStage stage;
  auto& out = stage.transfers;
  auto add = [&](int from, int to, std::vector<int> inputs) {
    const bool across = cluster.node_of(from) != cluster.node_of(to);
    out.push_back({from, to, share_bytes, cap, across ? plan.network_step_us : plan.nvlink_step_us, 0.0,
                   std::move(inputs)});
    return static_cast<int>(out.size() - 1);
  };
  for (int c = 0; c < channels; ++c) {
    // Each node's chain for this channel: its exit member first.
    std::vector<std::vector<int>> chains;
    for (const auto& block : blocks) {
      const int k = static_cast<int>(block.size());
      const int top = exit_of(node, block, c);
      std::vector<int> chain;
      for (int j = 0; j < k; ++j) chain.push_back(block[(top + j) % k]);
      chains.push_back(std::move(chain));
    }
    for (int t = 0; t < 2; ++t) {
      auto node_at = [&](int p) { return t == 0 ? p : m - 1 - p; };  // heap position -> node
      // Reduce, deepest heap positions first: up each chain, then to the parent.
      std::vector<std::vector<int>> into_top(m);  // per node: transfers arriving at its top
      for (int p = m - 1; p >= 0; --p) {
        const std::vector<int>& chain = chains[node_at(p)];
        int last = -1;
        for (int j = static_cast<int>(chain.size()) - 1; j >= 1; --j) {
          last = add(chain[j], chain[j - 1], last < 0 ? std::vector<int>{} : std::vector<int>{last});
        }
        std::vector<int>& in = into_top[node_at(p)];
        if (last >= 0) in.push_back(last);
        if (p > 0) {
          const int parent = node_at((p - 1) / 2);
          into_top[parent].push_back(add(chain[0], chains[parent][0], in));
        }
      }
      // Broadcast, root first: a node's top has the result once the reduce
      // reached the root (root) or its parent's transfer arrives.
      std::vector<std::vector<int>> result(m);
      result[node_at(0)] = into_top[node_at(0)];
      for (int p = 0; p < m; ++p) {
        const std::vector<int>& chain = chains[node_at(p)];
        const std::vector<int> have = result[node_at(p)];
        for (int child : {2 * p + 1, 2 * p + 2}) {
          if (child < m) result[node_at(child)] = {add(chain[0], chains[node_at(child)][0], have)};
        }
        std::vector<int> last = have;
        for (std::size_t j = 1; j < chain.size(); ++j) last = {add(chain[j - 1], chain[j], last)};
      }
    }
  }
  settle(stage, plan.base_us, hop_latency_us(plan));
  return stage;
}

// A broadcast as NCCL pipelines it: per channel a chain along the channel's
// ring from the root to the member before it, each transfer the channel's
// share of the buffer. The model charges n steps, nodes - 1 of them across the
// network; the chain has n - 1 hops, of which nodes - 1 cross nodes (nodes
// when the root is not where the ring enters its node: the chain then leaves
// the root's node and comes back to it). The model's latency is spread over
// the crossing hops (or, in one node, added to the start).
CollectiveStage broadcast_stage(const ClusterSpec& cluster, double bytes, const std::vector<int>& members,
                                const CollectivePlan& plan) {
  const NodeSpec& node = cluster.node;
  const CollectiveGroup group = group_of(cluster, members);
  const auto blocks = blocks_by_node(cluster, members);
  const int channels = channels_of(node, group);
  const int n = static_cast<int>(members.size());
  const double hops_us = hop_latency_us(plan);
  CollectiveStage stage;
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> ring = channel_ring(node, blocks, c);
    const int root = static_cast<int>(std::find(ring.begin(), ring.end(), members.front()) - ring.begin());
    std::vector<int> chain;
    for (int i = 0; i < n; ++i) chain.push_back(ring[(root + i) % n]);
    int crossing = 0;
    for (int i = 0; i + 1 < n; ++i) crossing += cluster.node_of(chain[i]) != cluster.node_of(chain[i + 1]);
    const double across_us = crossing > 0 ? (hops_us - (n - 1 - crossing) * plan.nvlink_step_us) / crossing : 0.0;
    int last = -1;
    for (int i = 0; i + 1 < n; ++i) {
      const bool across = cluster.node_of(chain[i]) != cluster.node_of(chain[i + 1]);
      stage.transfers.push_back({chain[i], chain[i + 1], bytes / channels / plan.bandwidth_share,
                                 unshared_bus(node, group) / channels, across ? across_us : plan.nvlink_step_us,
                                 0.0, last < 0 ? std::vector<int>{} : std::vector<int>{last}});
      last = static_cast<int>(stage.transfers.size() - 1);
    }
  }
  settle(stage, plan.base_us, hops_us);
  return stage;
}

// All-to-all: every member sends bytes/n to every other at once, over NVLink
// inside its node and through its NIC across. Caps share the bus bandwidth
// evenly: a member's NVLink among its node peers, a NIC among the pairs it
// carries (the busier of the two ends). Alone, the slowest transfer then takes
// what plan_point_to_point charges. Send/recv: one transfer of the buffer.
CollectiveStage point_to_point_stage(const ClusterSpec& cluster, CollectiveKind kind, double bytes,
                                     const std::vector<int>& members, const CollectivePlan& plan) {
  const NodeSpec& node = cluster.node;
  const CollectiveGroup group = group_of(cluster, members);
  CollectiveStage stage;
  stage.start_us = plan.base_us;
  auto latency = [&](int from, int to) {
    return cluster.node_of(from) != cluster.node_of(to) ? plan.network_step_us : plan.nvlink_step_us;
  };
  if (kind == CollectiveKind::kSendRecv) {
    const int from = members[0], to = members[1];
    CollectiveGroup unshared = group;  // as unshared_bus: the up-links are links of their own here
    unshared.nic_share = 1.0;
    stage.transfers.push_back(
        {from, to, bytes / plan.bandwidth_share, send_recv_bytes_per_s(node, unshared), latency(from, to), 0.0, {}});
    settle(stage, plan.base_us, 0.0);
    return stage;
  }
  const int n = static_cast<int>(members.size());
  if (static_cast<double>(n) * (n - 1) >= static_cast<double>(1u << 30)) {
    throw std::logic_error("an all-to-all of " + std::to_string(n) + " ranks is too large to run as flows");
  }
  std::map<int, int> on_node;
  for (int g : members) ++on_node[cluster.node_of(g)];
  std::map<std::pair<int, int>, int> nic_pairs;  // (node, NIC) -> pairs through it, each way
  for (int g : members) nic_pairs[{cluster.node_of(g), node.nic_of(g)}] += n - on_node[cluster.node_of(g)];
  const double per_peer = bytes / n / plan.bandwidth_share;
  for (int from : members) {
    for (int to : members) {
      if (from == to) continue;
      const int a = cluster.node_of(from), b = cluster.node_of(to);
      const double cap =
          a == b ? node.nvlink_bus_gb_per_s * 1e9 / (on_node[a] - 1)
                 : node.nic_bus_gb_per_s * 1e9 /
                       std::max(nic_pairs[{a, node.nic_of(from)}], nic_pairs[{b, node.nic_of(to)}]);
      stage.transfers.push_back({from, to, per_peer, cap, latency(from, to), 0.0, {}});
    }
  }
  settle(stage, plan.base_us, 0.0);
  return stage;
}

// DeepEP's all-to-all (lay_out's across_share): per member, one transfer to
// each other node, to the member at its own place in that node's block
// (blocks_by_node), of across_share of what it sends that node's members;
// that member forwards each of them its part over NVLink (the transfer its
// input); and its own node's members their parts directly. Caps share the
// bus bandwidth evenly: a NIC among the node transfers through it (the
// busier end), a GPU's NVLink among the transfers it sends.
CollectiveStage forwarded_all_to_all_stage(const ClusterSpec& cluster, double bytes, const std::vector<int>& members,
                                           const CollectivePlan& plan, double across_share) {
  const NodeSpec& node = cluster.node;
  const auto blocks = blocks_by_node(cluster, members);
  const int n = static_cast<int>(members.size());
  const double per_peer = bytes / n / plan.bandwidth_share;
  CollectiveStage stage;
  stage.start_us = plan.base_us;
  // The member of block c a member at place i sends through: the one at
  // its place (a block without one: its first).
  auto via_of = [&](std::size_t c, std::size_t i) { return blocks[c][i < blocks[c].size() ? i : 0]; };
  // NVLink transfers each member sends (to its own block's others, and what
  // it forwards), and the node transfers through each NIC, each way.
  std::map<int, int> nvlink_sends;
  std::map<std::pair<int, int>, int> nic_sends, nic_receives;  // by (node, NIC)
  auto nic = [&](int gpu) { return std::make_pair(cluster.node_of(gpu), node.nic_of(gpu)); };
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    for (std::size_t i = 0; i < blocks[b].size(); ++i) {
      const int from = blocks[b][i];
      nvlink_sends[from] += static_cast<int>(blocks[b].size()) - 1;
      for (std::size_t c = 0; c < blocks.size(); ++c) {
        if (c == b) continue;
        const int via = via_of(c, i);
        ++nic_sends[nic(from)];
        ++nic_receives[nic(via)];
        nvlink_sends[via] += static_cast<int>(blocks[c].size()) - 1;
      }
    }
  }
  auto nvlink_cap = [&](int from) { return node.nvlink_bus_gb_per_s * 1e9 / std::max(1, nvlink_sends[from]); };
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    for (std::size_t i = 0; i < blocks[b].size(); ++i) {
      const int from = blocks[b][i];
      for (int to : blocks[b]) {
        if (to != from) stage.transfers.push_back({from, to, per_peer, nvlink_cap(from), plan.nvlink_step_us, 0.0, {}});
      }
      for (std::size_t c = 0; c < blocks.size(); ++c) {
        if (c == b) continue;
        const int via = via_of(c, i);
        const int busier = std::max(nic_sends[nic(from)], nic_receives[nic(via)]);
        const double cap = node.nic_bus_gb_per_s * 1e9 / std::max(1, busier);
        const int across = static_cast<int>(stage.transfers.size());
        stage.transfers.push_back({from, via, across_share * static_cast<double>(blocks[c].size()) * per_peer, cap,
                                   plan.network_step_us, 0.0, {}});
        for (int to : blocks[c]) {
          if (to != via) stage.transfers.push_back({via, to, per_peer, nvlink_cap(via), plan.nvlink_step_us, 0.0, {across}});
        }
      }
    }
  }
  settle(stage, plan.base_us, 0.0);
  return stage;
}

// Hierarchical: each phase a set of rings run at once, inside every node (the
// node's members in GPU order) or across nodes (one ring per local rank, the
// members of that local rank in node order, on that rank's NIC).
std::vector<CollectiveStage> hierarchical_stages(const ClusterSpec& cluster, const std::vector<int>& members,
                                                 const CollectivePlan& plan) {
  const NodeSpec& node = cluster.node;
  const CollectiveGroup group = group_of(cluster, members);
  const auto blocks = blocks_by_node(cluster, members);
  const int k = static_cast<int>(blocks.front().size());
  std::vector<CollectiveStage> stages;
  for (const CollectivePhase& ph : plan.phases) {
    CollectiveStage stage;
    stage.start_us = ph.plan.base_us;
    if (ph.across_nodes) {
      std::vector<std::vector<int>> rings(k);
      for (const auto& block : blocks) {
        for (int l = 0; l < k; ++l) rings[l].push_back(block[l]);
      }
      // As plan_hierarchical costs it: members sharing a NIC split it.
      CollectiveGroup across;
      across.ranks = across.nodes = static_cast<int>(blocks.size());
      NodeSpec shared = node;
      shared.nic_bus_gb_per_s = node.nic_bus_gb_per_s / group.ranks_per_nic;
      stage.ring = ring_steps(ph.plan, std::move(rings), ph.bytes, ring_bus_bytes_per_s(shared, across),
                              across.nodes);
    } else {
      stage.ring = ring_steps(ph.plan, blocks, ph.bytes, node.nvlink_bus_gb_per_s * 1e9, 0);
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace

std::vector<CollectiveStage> lay_out(const ClusterSpec& cluster, CollectiveKind kind, double bytes,
                                     const std::vector<int>& members, const CollectivePlan& plan, double across_share) {
  if (members.size() < 2 || plan.steps == 0) return {};
  if (plan.point_to_point && kind == CollectiveKind::kAllToAll && across_share < 1.0 &&
      group_of(cluster, members).nodes > 1) {
    return {forwarded_all_to_all_stage(cluster, bytes, members, plan, across_share)};
  }
  if (plan.point_to_point) return {point_to_point_stage(cluster, kind, bytes, members, plan)};
  if (plan.algorithm == CollectiveAlgorithm::kTree) return {tree_stage(cluster, bytes, members, plan)};
  if (plan.algorithm == CollectiveAlgorithm::kHierarchical) return hierarchical_stages(cluster, members, plan);
  if (kind == CollectiveKind::kBroadcast) return {broadcast_stage(cluster, bytes, members, plan)};
  // A ring spanning nodes runs as several channels, each over every member.
  const NodeSpec& node = cluster.node;
  const CollectiveGroup group = group_of(cluster, members);
  const auto blocks = blocks_by_node(cluster, members);
  const int channels = channels_of(node, group);
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < channels; ++c) rings.push_back(channel_ring(node, blocks, c));
  CollectiveStage stage;
  stage.start_us = plan.base_us;
  stage.ring = ring_steps(plan, std::move(rings), bytes / channels, unshared_bus(node, group) / channels,
                          group.nodes > 1 ? group.nodes : 0);
  return {stage};
}

}  // namespace trainsim::hw
