// The links of a cluster, registered in a FlowNetwork, and the route between
// any two GPUs: inside a node, the sender's NVLink port then the receiver's;
// across nodes, the NIC the sender uses then the NIC the receiver uses (the
// network between NICs is taken as non-blocking). With fewer NICs than GPUs in
// a node, neighbouring GPUs share a NIC: GPU l of a node uses NIC
// l * nics_per_node / gpus_per_node. Routes are built on first use and cached.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/flow_network.hpp"

namespace trainsim::hw {

class Topology {
 public:
  // Registers the links of `gpus` (the GPUs that take part) in `network`.
  Topology(const ClusterSpec& cluster, const std::vector<int>& gpus, FlowNetwork& network);

  // Route index for Task::route, from GPU `from` to GPU `to`.
  std::uint32_t route(int from, int to);

 private:
  struct Port {
    LinkId out, in;
  };
  std::pair<int, int> nic_of(int gpu) const;  // (node, NIC index)

  const ClusterSpec& cluster_;
  FlowNetwork& network_;
  std::map<int, Port> nvlink_;                // by GPU
  std::map<std::pair<int, int>, Port> nics_;  // by (node, NIC)
  std::map<std::pair<int, int>, std::uint32_t> routes_;
};

}  // namespace trainsim::hw
