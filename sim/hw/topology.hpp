// The links of a cluster, registered in a FlowNetwork, and the route between
// any two GPUs: inside a node, the sender's NVLink port then the receiver's;
// across nodes, the sender's NIC then the receiver's (the network between them
// is non-blocking). Routes are built on first use and cached per pair.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/flow_network.hpp"

namespace trainsim::hw {

class Topology {
 public:
  // Registers links for `gpus` (the GPUs that take part) in `network`.
  Topology(const ClusterSpec& cluster, const std::vector<int>& gpus, FlowNetwork& network);

  // Route index for Task::route, from GPU `from` to GPU `to`.
  std::uint32_t route(int from, int to);

 private:
  struct Ports {
    LinkId nvlink_out, nvlink_in, nic_out, nic_in;
  };
  const ClusterSpec& cluster_;
  FlowNetwork& network_;
  std::map<int, Ports> ports_;
  std::map<std::pair<int, int>, std::uint32_t> routes_;
};

}  // namespace trainsim::hw
