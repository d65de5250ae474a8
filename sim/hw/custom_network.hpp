// What a custom network (NetworkKind::kCustom) needs besides the Topology
// that builds it: the names of the nodes' vertices that its cables may join,
// the placeholders that repeat one cable entry over every node or NIC, and
// which GPUs the result leaves able to reach each other.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/topology.hpp"

namespace trainsim::hw {

// The vertex of a node that `name` stands for ("gpu3", "node0.nvswitch",
// "node0.nic1", spelled exactly as Topology::vertex_name spells it), or
// nothing when the name is none of this cluster's.
std::optional<Topology::Vertex> node_vertex(std::string_view name, const ClusterSpec& cluster);

// For messages: the node vertices' names in ranges ("gpu0 to gpu31,
// node0.nvswitch to node3.nvswitch, node0.nic0 to node3.nic7"), and the names
// of the first `max_nodes` nodes' vertices (candidates for "did you mean").
std::string node_vertex_ranges(const ClusterSpec& cluster);
std::vector<std::string> node_vertex_names(const ClusterSpec& cluster, int max_nodes);

// Placeholders let one entry stand for a cable (or switch) per node or per
// NIC: {n} is a node (0 to nodes - 1), {i} a NIC index within a node (0 to
// nics_per_node - 1); either may be divided or taken modulo a whole number,
// {n/2} or {i%4}, to name the switch a node or NIC goes to.
struct Filling {
  std::vector<std::string> texts;  // the texts with their placeholders filled
  int node = -1;                   // the value of n (-1: no {n} in the texts)
  int nic = -1;                    // the value of i (-1: no {i} in the texts)
};
// Every filling of `texts` (which share n and i), node outer and NIC inner,
// leaving out those that repeat an earlier one; texts without placeholders
// give one. Throws std::invalid_argument for a malformed placeholder, or when
// there would be more than `limit` fillings.
std::vector<Filling> fill_placeholders(const std::vector<std::string>& texts, int nodes, int nics_per_node,
                                       std::size_t limit);

// Which GPUs routes can join on a topology before any fault: paths that no
// GPU forwards (as Topology::route searches them). Every cable carries both
// ways, so reach is symmetric.
class GpuReach {
 public:
  explicit GpuReach(const Topology& topology);
  bool connected(int a, int b) const;

 private:
  std::vector<std::vector<std::size_t>> parts_;  // by GPU id: the sorted parts of the network it touches
  std::vector<std::pair<int, int>> direct_;      // sorted pairs of GPUs joined by a cable of their own
};

}  // namespace trainsim::hw
